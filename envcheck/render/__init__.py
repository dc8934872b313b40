"""Renderers turn a Report into a string: text (flutter-doctor style), JSON, JUnit XML."""
from __future__ import annotations

from typing import Callable

from envcheck.model import Report
from envcheck.render import json as _json
from envcheck.render import junit as _junit
from envcheck.render import text as _text

RENDERERS: dict[str, Callable[..., str]] = {
    "text": _text.render,
    "json": _json.render,
    "junit": _junit.render,
}


def render(report: Report, fmt: str, **kw: object) -> str:
    return RENDERERS[fmt](report, **kw)
