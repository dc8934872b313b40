"""Version gates on kb advice: gate_status(), `kb lint` on applies_to / gates, and `kb show`'s gate line."""
from __future__ import annotations

from pathlib import Path

import pytest

from envcheck.checks import known_codes
from envcheck.kb import show
from envcheck.kb.entries import load_kb, parse_entry
from envcheck.kb.gate import GateError, gate_status, parse_gate
from envcheck.kb.lint import lint_path

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("gate,versions,expect", [
    ({"torch_npu": ">=2.13.0"}, {"torch_npu": "2.12.0"}, False),
    ({"torch_npu": ">=2.13.0"}, {"torch_npu": "2.12.0.post2"}, False),
    ({"torch_npu": ">=2.13.0"}, {"torch_npu": "2.14.0"}, True),
    ({"torch_npu": ">=2.13.0"}, {}, None),
    ({"cann": "<9.0.0"}, {"cann": "8.5.0"}, True),
    ({"cann": "<9.0.0"}, {"cann": "9.0.0"}, False),
    ({"cann": ">=8.0.RC1,<8.1.RC1"}, {"cann": "8.0.0"}, True),
    ({"cann": ">=8.0.RC1,<8.1.RC1"}, {"cann": "8.1.RC1"}, False),
    ({"chip": "a1,i2"}, {"chip": "a1"}, True),
    ({"chip": "a1,i2"}, {"chip": "a2"}, False),
    ({"chip": "!a1"}, {"chip": "a3"}, True),
    ({"torch_npu": ">=2.14.0", "cann": ">=9.1.0"}, {"torch_npu": "2.14.0", "cann": "9.0.0"}, False),
    ({}, {"torch_npu": "2.1.0"}, True),
])
def test_gate_status(gate, versions, expect):
    applies, text = gate_status({"applies_to": gate}, versions)
    assert applies is expect
    if gate:
        assert text.startswith("needs ")


def test_gate_status_text_names_the_gate_and_the_probed_version():
    applies, text = gate_status({"what": "X", "applies_to": {"torch_npu": ">=2.13.0"}}, {"torch_npu": "2.12.0"})
    assert applies is False and "needs torch_npu >=2.13.0" in text and "2.12.0" in text and "does not apply" in text


@pytest.mark.parametrize("key,text", [("torch_npu", "=>2.1"), ("cann", ">=8.x"), ("chip", "A 2"), ("colour", ">=1"),
                                      ("torch", "~=2.*")])
def test_parse_gate_rejects_bad_syntax(key, text):
    with pytest.raises(GateError):
        parse_gate(key, text)


ENTRY = """---
id: {id}
title: "A gated entry"
title_zh: "带版本门控的条目"
category: performance
summary_zh: "现象：测试。解决：测试。"
symptoms: ["something"]
checks: []
applies_to: {applies}
gates:
  - what: "SOME_VARIABLE=1"
    applies_to: {gate}
tags: [test]
sources: ["https://example.invalid/source"]
---
## Symptom

s

## Cause

c

## Fix

f

## Verify

v
"""


def _write(tmp_path: Path, eid: str, applies: str, gate: str) -> Path:
    d = tmp_path / "performance"
    d.mkdir(parents=True, exist_ok=True)
    p = d / f"{eid}.md"
    p.write_text(ENTRY.format(id=eid, applies=applies, gate=gate), encoding="utf-8")
    return p


def test_lint_accepts_valid_gates_naming_matrix_versions(tmp_path):
    p = _write(tmp_path, "good-gate", '{torch_npu: ">=2.1", cann: ">=8.5.0", chip: "a2,a3"}', '{torch_npu: ">=2.13.0"}')
    assert lint_path(p, known_checks=[]) == []


@pytest.mark.parametrize("applies,gate,words", [
    ('{torch_npu: "=>2.1"}', '{torch_npu: ">=2.13.0"}', "is not '<op><version>'"),
    ('{cann: ">=8.7.0"}', '{torch_npu: ">=2.13.0"}', "'8.7.0' is not a version the matrix knows"),
    ('{chip: "a9"}', '{torch_npu: ">=2.13.0"}', "'a9' is not a version the matrix knows"),
    ('{torch_npu: ">=2.1"}', '{torch_npu: ">=2.99.0"}', "gates.0.applies_to.torch_npu"),
])
def test_lint_reports_bad_or_unknown_gates(tmp_path, applies, gate, words):
    p = _write(tmp_path, "bad-gate", applies, gate)
    msgs = [x.message for x in lint_path(p, known_checks=[])]
    assert any(words in m for m in msgs), msgs


def test_shipped_kb_gates_lint_clean():
    probs = [p for p in lint_path(REPO / "kb", known_codes())
             if "applies_to" in p.message or "matrix knows" in p.message]
    assert probs == []


def test_kb_show_prints_the_gate_and_whether_it_applies(tmp_path):
    e = parse_entry(_write(tmp_path, "show-gate", '{torch_npu: ">=2.1"}', '{torch_npu: ">=2.13.0"}'))
    plain = show.render(e)
    assert "gate: SOME_VARIABLE=1: needs torch_npu >=2.13.0" in plain
    probed = show.render(e, versions={"torch_npu": "2.12.0"})
    assert "needs torch_npu >=2.13.0" in probed and "does not apply" in probed
    doc = show.to_dict(e, versions={"torch_npu": "2.14.0"})
    assert [g["applies"] for g in doc["gates"]] == [True, True]


def test_shipped_fallback_entry_shows_its_gate():
    e = load_kb(REPO / "kb").get("cpu-fallback-silent")
    assert "needs torch_npu >=2.13.0" in show.render(e)
