"""Renderers turn a result into a string; the output path (`render`) redacts once, then formats.

FORMATS maps a format name to its module. A format module has ``render(report, **kw)`` for a
check Report and ``render_diagnose(result, **kw)`` for a DiagnoseResult. A new format is one
module plus one line here (the CLI's --format choices come from this table).
"""
from __future__ import annotations

from types import ModuleType
from typing import Any, Union

from envcheck.kb.diagnose import DiagnoseResult
from envcheck.model import Report
from envcheck.redact import scrub
from envcheck.render import json as _json
from envcheck.render import junit as _junit
from envcheck.render import markdown as _markdown
from envcheck.render import text as _text

FORMATS: dict[str, ModuleType] = {
    "text": _text,
    "json": _json,
    "junit": _junit,
    "markdown": _markdown,
}

Result = Union[Report, DiagnoseResult]


def redacted(result: Result) -> Result:
    """The same result with every string passed through the redaction (by key and by value)."""
    if isinstance(result, DiagnoseResult):
        return DiagnoseResult.from_dict(scrub(result.to_dict()))
    doc = scrub(result.to_dict())
    return Report.from_dict(doc)


def render(result: Result, fmt: str, **kw: Any) -> str:
    """Format `result` as `fmt` (a FORMATS key), after redacting it."""
    mod = FORMATS[fmt]
    clean = redacted(result)
    if isinstance(clean, DiagnoseResult):
        return str(mod.render_diagnose(clean, **kw))
    return str(mod.render(clean, **kw))
