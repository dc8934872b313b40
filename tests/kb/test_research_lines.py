"""Every error line quoted in shared/research is recognised, with the category the research gives it (issue 11).

tests/data/diagnose/research-lines.yaml lists the lines (verbatim, with the file and heading they are quoted
under). For each labelled line the real `diagnose` runs on three inputs: the line alone, the line between a few
neutral INFO lines with timestamps, and the same with a launcher prefix on every line (Ray workers, vLLM). The
top entry's category must be the labelled one in all three, and a labelled `entry` among the top 3; so in one of
ten paste styles (STYLES: quoted, coloured, HTML-escaped, a JSON log, ...), chosen by the line's position. Lines whose
meaning the research leaves open (`category: null`) are listed but not asserted. The long lines are also cut every
80 columns (a terminal paste), with a floor. `pytest -s` prints the coverage figures.
"""
from __future__ import annotations

import html
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from conftest import DATA

from envcheck.kb.diagnose import diagnose
from envcheck.kb.taxonomy import CATEGORIES

LINES_FILE = DATA / "diagnose" / "research-lines.yaml"
RESEARCH = Path(__file__).resolve().parents[3] / "shared" / "research"  # next to the checkout, as test_kb_content

BEFORE = [
    "2026-11-30 08:12:01,532 - INFO - Running with args: seed=42, output_dir=./out",
    "2026-11-30 08:12:01,533 - INFO - Process 4711 started on host node-3",
]
AFTER = [
    "2026-11-30 08:12:07,101 - INFO - Writing summary to ./out/summary.json",
]
PREFIX = "(RayWorkerWrapper pid=4711) "
WRAP = 80  # a terminal's hard wrap: pasted lines cut every 80 columns
WRAPPED_FLOOR = 1.0  # reached 124/124 (match.unwrap joins any cut at a terminal's exact width unless the
# next piece starts a new record; 119/124 before, when only lower-case or punctuation went on); may only be raised


# how else a line reaches a user's paste: quoted in an issue, coloured by the terminal, copied from a web page,
# from a container's JSON log, with Windows line ends, from journald, kubectl, torchrun --tee, pdsh, or with an
# RFC 3339 time in front. Each labelled line gets one of them (by its position), so every style is exercised once
# per ~10 lines at the cost of one more diagnosis per line.
STYLES: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("quoted", lambda x: "> " + x),
    ("coloured", lambda x: "\x1b[1;31m" + x + "\x1b[0m"),
    ("html", lambda x: html.escape(x)),
    ("json-log", lambda x: json.dumps({"log": x + "\n", "stream": "stderr", "time": "2026-11-30T08:12:01.5Z"})),
    ("crlf", lambda x: x + "\r"),
    ("journald", lambda x: "Nov 30 08:12:01 node-3 python3[4711]: " + x),
    ("kubectl", lambda x: "[pod/trainer-0/main] " + x),
    ("torchrun-tee", lambda x: "[default3]:" + x),
    ("pdsh", lambda x: "x.x.x.7: " + x),
    ("rfc3339", lambda x: "2026-11-30T08:12:01.532114Z " + x),
)


def styled(text: str, i: int) -> tuple[str, str]:
    name, f = STYLES[i % len(STYLES)]
    return name, "\n".join(f(x) for x in BEFORE + [text] + AFTER) + "\n"


def load_lines() -> list[dict]:
    d = yaml.safe_load(LINES_FILE.read_text(encoding="utf-8"))
    return list(d["lines"])


LINES = load_lines()
LABELLED = [e for e in LINES if e["category"]]


def variants(text: str) -> dict[str, str]:
    return {
        "alone": text + "\n",
        "context": "\n".join(BEFORE + [text] + AFTER) + "\n",
        "prefixed": "\n".join(PREFIX + ln for ln in BEFORE + [text] + AFTER) + "\n",
    }


def wrapped(text: str) -> str:
    return "\n".join(BEFORE + [text[i:i + WRAP] for i in range(0, len(text), WRAP)] + AFTER) + "\n"


def _id(e: dict) -> str:
    return (e.get("row") or e["file"].split("/")[-1]) + ":" + e["text"][:40]


@pytest.fixture(scope="module")
def tops() -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(text, variant) -> the top 3 (entry, category) of diagnose."""
    out: dict[tuple[str, str], list[tuple[str, str]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "input.log"
        for i, e in enumerate(LABELLED):
            log.write_text(styled(e["text"], i)[1], encoding="utf-8")
            r = diagnose([str(log)])
            out[(e["text"], "styled")] = [(m.id, m.category) for m in r.matches[:3]]
            for name, text in variants(e["text"]).items():
                log.write_text(text, encoding="utf-8")
                r = diagnose([str(log)])
                out[(e["text"], name)] = [(m.id, m.category) for m in r.matches[:3]]
            if len(e["text"]) > WRAP:
                log.write_text(wrapped(e["text"]), encoding="utf-8")
                r = diagnose([str(log)])
                out[(e["text"], "wrapped")] = [(m.id, m.category) for m in r.matches[:3]]
    return out


def test_the_file_is_well_formed():
    assert len(LINES) >= 150
    texts = [e["text"] for e in LINES]
    assert len(set(texts)) == len(texts), "duplicate lines"
    for e in LINES:
        assert set(e) <= {"text", "category", "entry", "file", "heading", "row", "note"}, e
        assert e["category"] is None or e["category"] in CATEGORIES, e
        assert e["file"] and e["heading"], e
        if e["category"] is None:
            assert e.get("note"), f"an unlabelled line says why: {e['text'][:60]}"


def test_lines_are_verbatim_from_the_research():
    if not RESEARCH.is_dir():
        pytest.skip("shared/research not available")
    for e in LINES:
        src = (RESEARCH / e["file"]).read_text(encoding="utf-8").replace("\\|", "|")
        assert e["text"] in src, f"not in {e['file']}: {e['text'][:80]}"


@pytest.mark.parametrize("e", LABELLED, ids=_id)
def test_top_entry_has_the_research_category(e, tops):
    for name in ("alone", "context", "prefixed"):
        got = tops[(e["text"], name)]
        assert got, f"{name}: nothing recognised in {e['text'][:100]!r}"
        assert got[0][1] == e["category"], f"{name}: top {got} for {e['text'][:100]!r} ({e.get('row')})"
        if e.get("entry"):
            assert e["entry"] in [g[0] for g in got], f"{name}: {e['entry']} not in top 3 {got}"


def test_coverage_figure(tops):
    n = len(LABELLED)
    for name in ("alone", "context", "prefixed"):
        ok = sum(1 for e in LABELLED if tops[(e["text"], name)] and tops[(e["text"], name)][0][1] == e["category"])
        with_entry = [e for e in LABELLED if e.get("entry")]
        ent = sum(1 for e in with_entry if e["entry"] in [g[0] for g in tops[(e["text"], name)]])
        print(f"\nresearch lines ({name}): top category right {ok}/{n} = {ok / n:.0%}; labelled entry in top 3 "
              f"{ent}/{len(with_entry)} ({len(LINES) - n} lines with an open meaning not asserted)")


def test_paste_styles(tops):
    """Each labelled line in one of the paste styles (STYLES, by position) keeps its category and entry."""
    missed = []
    for i, e in enumerate(LABELLED):
        got = tops[(e["text"], "styled")]
        if not got or got[0][1] != e["category"] or (e.get("entry") and e["entry"] not in [g[0] for g in got]):
            missed.append((styled(e["text"], i)[0], e["text"][:60], got[:1]))
    print(f"\nresearch lines in {len(STYLES)} paste styles: {len(LABELLED) - len(missed)}/{len(LABELLED)} kept their "
          f"category and entry; missed: {missed}")
    assert not missed


def test_hard_wrapped_lines(tops):
    """The long lines cut every 80 columns (a terminal paste) are still recognised, nearly all of them."""
    long = [e for e in LABELLED if len(e["text"]) > WRAP]
    missed = [(e.get("row"), e["text"][:60], tops[(e["text"], "wrapped")][:1]) for e in long
              if not tops[(e["text"], "wrapped")] or tops[(e["text"], "wrapped")][0][1] != e["category"]]
    ok = len(long) - len(missed)
    print(f"\nresearch lines hard-wrapped at {WRAP} columns: top category right {ok}/{len(long)}; missed: {missed}")
    assert len(long) >= 100
    assert ok / len(long) >= WRAPPED_FLOOR, missed
