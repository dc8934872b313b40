"""Check cases as data: tests/checks/cases/<CODE>/<case>.yaml, one folder per check code.

Each case gives the facts (sections as in `envcheck probe --json`), optional check options, and what
the check must report: the worst status, and a text the findings must contain. Adding a check is one
function + one tuple line + one kb entry + one case folder (kb/CONTRIBUTING.md).
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from envcheck.checks import by_id
from envcheck.checks.registry import Context
from envcheck.checks.runner import run_check
from envcheck.model import Facts, Status

CASES = Path(__file__).resolve().parent / "cases"
FILES = sorted(CASES.glob("*/*.yaml"))


def test_every_case_folder_names_a_registered_check():
    folders = {p.name for p in CASES.iterdir() if p.is_dir()}
    assert folders and folders <= set(by_id())


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_case(path: Path):
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    check = by_id()[path.parent.name]
    ctx = Context(facts=Facts.from_dict(doc.get("facts") or {}), options=doc.get("options") or {})
    found = run_check(check, ctx)
    assert all(f.code == check.code for f in found), "a check reports only its own code"
    worst = max(found, key=lambda f: f.status.severity)
    expect = doc["expect"]
    assert worst.status is Status(expect["worst"]), [(f.status.value, f.title) for f in found]
    if expect.get("text"):
        text = "\n".join(f"{f.title}\n{f.detail}" for f in found)
        assert expect["text"] in text, text
