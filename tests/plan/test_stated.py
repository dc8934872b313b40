"""envcheck.plan.stated: the versions a paste states, judged against the matrix, as `versions` matches."""
from __future__ import annotations

import json
import subprocess
import sys

from envcheck.kb.claims import stated_versions
from envcheck.kb.diagnose import CONFIDENCES, diagnose
from envcheck.plan.stated import diagnose_report, judge_claims

MISMATCH = "torch 2.12.0\ntorch_npu 2.8.0.post1\nImportError: undefined symbol\n"


def _paste(tmp_path, text: str) -> str:
    p = tmp_path / "paste.log"
    p.write_text(text, encoding="utf-8")
    return str(p)


def test_a_mismatched_torch_pair_names_the_entry():
    (v,) = judge_claims(stated_versions("torch 2.12.0\ntorch_npu 2.8.0.post1\n"))
    assert (v.entry, v.code, v.strong) == ("torch-npu-torch-mismatch", "EC101", True)
    assert [(c.component, c.line) for c in v.claims] == [("torch", 1), ("torch_npu", 2)]
    assert v.message.startswith("torch 2.12.0 with torch_npu 2.8.0.post1: ")
    assert "needs torch 2.8.0" in v.message


def test_a_consistent_stack_and_lone_versions_say_nothing():
    assert judge_claims(stated_versions("torch 2.8.0\ntorch_npu 2.8.0.post1\n")) == []
    assert judge_claims(stated_versions("torch==2.1.0\ntorch-npu==2.1.0.post3\npython 3.10\n")) == []
    assert judge_claims(stated_versions("torch 2.1.0\n")) == []  # nothing to pair it with
    assert judge_claims(stated_versions("python 3.11\n")) == []
    assert judge_claims(stated_versions("npu: 910_93\nCANN 8.0.RC1\n")) == []  # only "unknown chip": no verdict


def test_an_ambiguous_component_is_not_judged():
    text = "torch 2.8.0\ntorch_npu 2.8.0.post1\n$ pip install sglang\ntorch 2.12.0+cpu (auto-upgraded)\n"
    assert stated_versions(text)["torch"].ambiguous
    assert judge_claims(stated_versions(text)) == []


def test_python_outside_torch_npu_range():
    # InternLM/lmdeploy#3274 (tests/data/field-corpus/e-019.yaml, dev)
    (v,) = judge_claims(stated_versions("环境版本：\npython： 3.11\npytorch：2.1.0\ntorch-npu：2.1.0\n"))
    assert (v.entry, v.code, v.strong) == ("python-unsupported", "EC103", True)
    assert {c.component for c in v.claims} == {"python", "torch_npu"}


def test_torch_npu_for_another_cann():
    (v,) = judge_claims(stated_versions("CANN 8.0.RC1\ntorch_npu 2.6.0\n"))
    assert (v.entry, v.code, v.strong) == ("torch-npu-cann-mismatch", "EC102", True)


def test_a_warning_is_weak_and_ranks_last(tmp_path):
    (v,) = judge_claims(stated_versions("CANN 9.9.0\ntorch_npu 2.9.0\n"))
    assert (v.code, v.strong) == ("EC102", False)
    assert "newer than the matrix" in v.message
    r = diagnose_report([_paste(tmp_path, "CANN 9.9.0\ntorch_npu 2.9.0\nRuntimeError: NPU out of memory\n")])
    assert r.matches[-1].confidence == "versions" and r.matches[-1].severity == "warning"
    assert r.matches[0].id != r.matches[-1].id


def test_a_mindspore_paired_with_another_cann_is_strong(tmp_path):
    # EC107 only warns (MindSpore's own start-up check does), but the sources pair this MindSpore with another
    # CANN: as evidence of a cause it is a definite mismatch, like a failing EC102
    (v,) = judge_claims(stated_versions("CANN 8.0.RC1\nmindspore 2.5.0\n"))
    assert (v.entry, v.code, v.strong) == ("mindspore-cann-mismatch", "EC107", True)
    assert "paired with CANN 8.0.0, not CANN 8.0.RC1" in v.message
    # MindSpore 2.0.0 sits in CANN 6.3.RC1's row (MS-DOCS r2.0); the packages named as one label
    text = ("mindspore=2.0.0，Ascend-cann-nnae/nnrt/toolkit=5.0.4。\n"
            "Load dynamic library: libmindspore_ascend.so.2 failed. libfoo.so: cannot open shared object file\n")
    r = diagnose_report([_paste(tmp_path, text)])
    assert (r.matches[0].id, r.matches[0].confidence) == ("mindspore-cann-mismatch", "versions")
    assert "paired with CANN 6.3.RC1, not CANN 5.0.4" in r.matches[0].reason
    # only a disputed or unknown pairing stays silent (MindSpore 2.3.0 with 8.0.RC1: sources disagree)
    assert judge_claims(stated_versions("CANN 8.0.RC1\nmindspore 2.3.0\n")) == []


def test_diagnose_report_adds_a_versions_match(tmp_path):
    r = diagnose_report([_paste(tmp_path, MISMATCH)])
    m = r.matches[0]
    assert (m.id, m.confidence, m.severity) == ("torch-npu-torch-mismatch", "versions", "error")
    assert [(h["line"], h["text"]) for h in m.lines] == [(1, "torch 2.12.0"), (2, "torch_npu 2.8.0.post1")]
    assert "needs torch 2.8.0" in m.reason
    assert "versions" in CONFIDENCES
    assert r.exit_code == 1


def test_a_pattern_match_outranks_a_stated_mismatch(tmp_path):
    text = "torch 2.12.0\ntorch_npu 2.8.0.post1\nRuntimeError: NPU out of memory. Tried to allocate 5.03 GiB\n"
    r = diagnose_report([_paste(tmp_path, text)])
    confs = [m.confidence for m in r.matches]
    assert confs[0] in ("matched", "code") and "versions" in confs
    assert confs.index("versions") < min([i for i, c in enumerate(confs) if c == "likely"] or [len(confs)])


def test_the_kb_layer_alone_does_not_judge_versions(tmp_path):
    assert all(m.confidence != "versions" for m in diagnose([_paste(tmp_path, MISMATCH)]).matches)


def test_cli_names_the_entry_with_confidence_versions():
    p = subprocess.run([sys.executable, "-m", "envcheck", "diagnose", "-"], input=MISMATCH, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 1, p.stderr
    first = p.stdout.splitlines()[2]
    assert first.startswith(" 1. torch-npu-torch-mismatch  [version-mismatch]") and first.endswith("(versions)")
    assert "1 by the stated versions" in p.stdout.splitlines()[0]
    assert "why: torch 2.12.0 with torch_npu 2.8.0.post1: " in p.stdout
    assert "<stdin>:2: torch_npu 2.8.0.post1" in p.stdout


def test_cli_json_carries_the_versions_match():
    p = subprocess.run([sys.executable, "-m", "envcheck", "diagnose", "--format", "json", "-"], input=MISMATCH,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stderr
    d = json.loads(p.stdout)
    m = d["matches"][0]
    assert (m["id"], m["confidence"]) == ("torch-npu-torch-mismatch", "versions")
    assert "needs torch 2.8.0" in m["reason"]
    assert [h["line"] for h in m["lines"]] == [1, 2]


def test_markdown_and_junit_show_the_layer_and_why(tmp_path):
    log = _paste(tmp_path, MISMATCH)
    md = subprocess.run([sys.executable, "-m", "envcheck", "diagnose", "--format", "markdown", log],
                        capture_output=True, text=True, timeout=120).stdout
    assert "| 1 | `torch-npu-torch-mismatch`:" in md and "| version-mismatch | versions | 2 |" in md
    assert "**Why:** torch 2.12.0 with torch_npu 2.8.0.post1: " in md
    xml = subprocess.run([sys.executable, "-m", "envcheck", "diagnose", "--format", "junit", log],
                         capture_output=True, text=True, timeout=120).stdout
    assert "kb: torch-npu-torch-mismatch (confidence: versions)" in xml and ">why: torch 2.12.0" in xml


def test_a_judge_that_fails_is_a_note_not_the_end(tmp_path):
    def broken(claims):
        raise ValueError("matrix.yaml: bad")

    r = diagnose([_paste(tmp_path, MISMATCH)], judge_versions=broken)
    assert any("stated versions could not be judged (ValueError: matrix.yaml: bad)" in n for n in r.notes)
    assert r.matches and all(m.confidence != "versions" for m in r.matches)
