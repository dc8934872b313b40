"""Known defects of single releases (matrix.yaml `advisories`, check EC108): the data, the check and what
`envcheck diagnose` makes of a pasted report that states an affected release."""
from __future__ import annotations

from pathlib import Path

import pytest

from envcheck.checks import judge_compat
from envcheck.kb.entries import load_kb
from envcheck.matrix import MatrixError, load, parse_text
from envcheck.model import Status
from envcheck.plan import hypothetical_facts
from envcheck.plan.stated import diagnose_report
from envcheck.resources import matrix_path

REPO = Path(__file__).resolve().parents[2]
MX = load()
KB = load_kb(REPO / "kb")

SHIPPED = matrix_path().read_text(encoding="utf-8")


def _with(block: str) -> str:
    """The shipped matrix with its advisories replaced by `block` (YAML list items)."""
    head, rest = SHIPPED.split("\nadvisories:\n", 1)
    return head + "\nadvisories:\n" + block + "\ncann:\n" + rest.split("\ncann:\n", 1)[1]


def _adv(**kw: str) -> str:
    item = {"id": "k1", "package": "torch_npu", "versions": '["2.8.0"]', "title": "leaks", "fixed_in": '"2.8.0.post1"',
            "kb": "torch-npu-2-8-0-host-memory-leak", "sources": "[VA-6299]", **kw}
    lines = [f"    {k}: {v}" for k, v in item.items() if v != "<absent>"]
    return _with("  -" + "\n".join(lines)[3:] + "\n")


def test_every_shipped_advisory_is_cited_and_links_an_entry_that_names_the_check():
    assert MX.advisories, "matrix.yaml has no advisories"
    for a in MX.advisories:
        assert a.sources and all(MX.url(s).startswith("https://") for s in a.sources), a.id
        entry = KB.get(a.kb)
        assert entry is not None, (a.id, a.kb)
        assert "EC108" in entry.checks, (a.id, a.kb)
        assert not a.affects(a.fixed_in)


def test_a_well_formed_advisory_loads():
    (a,) = parse_text(_adv()).advisories
    assert (a.package, a.versions, a.fixed_in) == ("torch_npu", ("2.8.0",), "2.8.0.post1")


@pytest.mark.parametrize("change,message", [
    ({"package": "tensorflow"}, "package: expected one of"),
    ({"versions": '["two.eight"]'}, "versions"),
    ({"versions": "[]"}, "name at least one affected release"),
    ({"fixed_in": '"2.8.0"'}, "is itself listed as affected"),
    ({"sources": "[NOPE]"}, "NOPE"),
    ({"sources": "[]"}, "cite at least one source"),
    ({"kb": "<absent>"}, "kb"),
    ({"package": "cann", "versions": '["8.0.RC1"]', "fixed_in": '"not-a-version"'}, "fixed_in"),
])
def test_a_malformed_advisory_is_a_matrix_error_with_its_line(change, message):
    with pytest.raises(MatrixError) as exc:
        parse_text(_adv(**change))
    assert message in str(exc.value) and exc.value.line > 1


def test_affected_releases_compare_exactly_but_ignore_a_local_label():
    (a,) = parse_text(_adv()).advisories
    assert a.affects("2.8.0") and a.affects("2.8.0+cpu")
    assert not a.affects("2.8.0.post1") and not a.affects("2.8.0rc1") and not a.affects("junk")
    (c,) = parse_text(_adv(package="cann", versions='["8.0.RC1"]', fixed_in='"8.0.0"')).advisories
    assert c.affects("8.0.rc1") and not c.affects("8.0.0")


def _ec108(**versions: str) -> list:
    facts = hypothetical_facts(**versions)
    return [f for f in judge_compat(facts, MX) if f.code == "EC108"]


def test_an_affected_torch_npu_warns_with_the_fixed_build_and_its_entry():
    (f,) = _ec108(torch="2.8.0", torch_npu="2.8.0")
    assert f.status is Status.WARN
    assert "torch_npu 2.8.0 has a known defect" in f.title and "fixed in 2.8.0.post1" in f.title
    assert f.fix == "pip install 'torch-npu==2.8.0.post1'"
    assert f.kb == ("torch-npu-2-8-0-host-memory-leak",)
    assert any("vllm-ascend/issues/6299" in e.text for e in f.evidence)


def test_a_fixed_build_or_nothing_installed_does_not_warn():
    (f,) = _ec108(torch="2.8.0", torch_npu="2.8.0.post1", cann="8.3.RC1")
    assert f.status is Status.OK and "torch_npu 2.8.0.post1" in f.title and "CANN 8.3.RC1" in f.title
    (f,) = _ec108()
    assert f.status is Status.SKIP


def test_a_cann_advisory_names_the_release_to_install():
    mx = parse_text(_adv(package="cann", versions='["8.3.RC1"]', fixed_in='"8.5.0"'))
    found = [f for f in judge_compat(hypothetical_facts(cann="8.3.RC1"), mx) if f.code == "EC108"]
    assert [f.status for f in found] == [Status.WARN]
    assert found[0].fix.startswith("install CANN 8.5.0")


def _paste(tmp_path: Path, text: str) -> str:
    p = tmp_path / "report.txt"
    p.write_text(text, encoding="utf-8")
    return str(p)


def test_diagnose_puts_a_stated_defect_first_when_the_symptom_agrees(tmp_path):
    text = "torch 2.8.0\ntorch_npu 2.8.0\nthe RES of every worker keeps growing until the OOM killer ends it\n"
    m = diagnose_report([_paste(tmp_path, text)]).matches
    assert (m[0].id, m[0].confidence, m[0].severity) == ("torch-npu-2-8-0-host-memory-leak", "versions", "error")
    assert "known defect" in m[0].reason and m[0].lines[0]["text"] == "torch_npu 2.8.0"


def test_diagnose_keeps_a_stated_defect_as_a_last_note_when_the_failure_is_another(tmp_path):
    text = "torch 2.8.0\ntorch_npu 2.8.0\nRuntimeError: HCCL timeout after 1800 s waiting for the peers\n"
    m = diagnose_report([_paste(tmp_path, text)]).matches
    assert m[0].category != "out-of-memory"
    assert (m[-1].id, m[-1].confidence, m[-1].severity) == ("torch-npu-2-8-0-host-memory-leak", "versions",
                                                            "warning")
