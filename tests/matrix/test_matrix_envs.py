"""Table-driven: realistic wrong environments, each with the rule (check code) and verdict expected.

Every other rule must not fail for the same environment (the issue: never a false fail).
"""
from __future__ import annotations

import pytest

from envcheck.matrix import load
from envcheck.model import Status
from envcheck.plan import hypothetical_facts, judge

MX = load()
K910B = [{"name": "Ascend-cann-kernels-910b", "version": "8.0.RC1", "source": "opp_kernel/version.info"}]

# (id, environment, {code: expected worst status}, words the first rule's finding must contain)
CASES = [
    # torch <-> torch_npu (EC101)
    ("torch-2.1-npu-2.2", dict(cann="8.0.RC1", torch="2.1.0", torch_npu="2.2.0"),
     {"EC101": "fail"}, "needs torch 2.2.0"),
    ("torch-2.3.1-npu-2.1.0.post6", dict(cann="8.0.RC2", torch="2.3.1+cpu", torch_npu="2.1.0.post6"),
     {"EC101": "fail"}, "2.1.0"),
    ("torch-patch-differs", dict(cann="8.0.0", torch="2.4.1", torch_npu="2.4.0.post2"), {"EC101": "fail"}, "2.4.0"),
    ("latest-torch-old-npu", dict(cann="9.1.0", torch="2.13.0+cpu", torch_npu="2.12.0"), {"EC101": "fail"}, "2.12.0"),
    ("torch-1.11-npu-2.1", dict(cann="8.0.RC2", torch="1.11.0", torch_npu="2.1.0.post6"), {"EC101": "fail"}, ""),
    ("cuda-torch", dict(cann="8.0.RC1", torch="2.1.0+cu121", torch_npu="2.1.0.post3"), {"EC101": "warn"}, "CUDA"),
    ("torch-source-prerelease", dict(torch="2.13.0a0+git1234567", torch_npu="2.13.0"),
     {"EC101": "warn"}, "pre-release"),
    # torch_npu <-> CANN (EC102)
    ("field-claim-7.0.RC1-post6", dict(cann="7.0.RC1", torch="2.1.0", torch_npu="2.1.0.post6"),
     {"EC102": "fail"}, "CANN 8.0.RC2"),
    ("field-claim-8.0.RC1-2.3.1", dict(cann="8.0.RC1", torch="2.3.1", torch_npu="2.3.1"),
     {"EC102": "fail"}, "CANN 8.0.RC2"),
    ("npu-for-newer-cann", dict(cann="8.0.RC1", torch="2.4.0", torch_npu="2.4.0"), {"EC102": "fail"}, "8.0.RC3"),
    ("pta-6.0.rc2-no-window", dict(cann="8.0.RC3", torch="2.1.0", torch_npu="2.1.0.post6"),
     {"EC102": "fail"}, "8.0.RC2"),
    ("pta-window-8.2", dict(cann="8.2.RC1", torch="2.1.0", torch_npu="2.1.0.post10"),
     {"EC102": "warn"}, "stated compatible"),
    ("pta-window-8.3", dict(cann="8.3.RC1", torch="2.4.0", torch_npu="2.4.0.post2"),
     {"EC102": "warn"}, "stated compatible"),
    ("outside-window", dict(cann="8.0.RC1", torch="2.1.0", torch_npu="2.1.0.post10"), {"EC102": "fail"}, "8.0.0"),
    ("old-npu-new-cann", dict(cann="9.0.0", torch="2.1.0", torch_npu="2.1.0.post17"), {"EC102": "fail"}, "8.3.RC1"),
    ("9.0-build-on-8.5", dict(cann="8.5.0", torch="2.9.0", torch_npu="2.9.0.post2"),
     {"EC102": "warn"}, "per the window"),  # W1 (field update 2026-11)
    ("untabled-post-on-pypi", dict(cann="9.1.0", torch="2.7.1", torch_npu="2.7.1.post10"),
     {"EC102": "warn"}, "per the window"),  # W2
    ("untabled-line-wrong-cann", dict(cann="8.0.RC1", torch="2.7.1", torch_npu="2.7.1.post10"),
     {"EC102": "fail"}, "9.1.1"),  # W2
    ("future-torch-npu", dict(cann="9.1.0", torch="2.14.0", torch_npu="2.14.0"),
     {"EC102": "warn"}, "newer than the matrix"),  # W7
    ("future-cann", dict(cann="9.3.0", torch="2.12.0", torch_npu="2.12.0"), {"EC102": "warn"}, "newer than the matrix"),
    ("disputed-d1", dict(cann="8.0.RC1", torch="2.1.0", torch_npu="2.1.0.post4"), {"EC102": "warn"}, "d1"),
    ("resolved-d2", dict(cann="9.0.0", torch="2.10.0", torch_npu="2.10.0"), {"EC102": "ok"}, "9.0.0"),  # W4
    ("superseded-d3", dict(cann="9.1.0", torch="2.9.0", torch_npu="2.9.0.post3"), {"EC102": "warn"}, "d3"),
    ("deployer-only-d5", dict(cann="8.2.RC1", torch="2.4.0", torch_npu="2.4.0.post3"), {"EC102": "warn"}, "d5"),
    ("cann-without-builds", dict(cann="8.5.2", torch="2.9.0", torch_npu="2.9.0"),
     {"EC102": "warn"}, "no torch_npu build"),
    # Python (EC103)
    ("py311-post6", dict(cann="8.0.RC2", torch="2.1.0", torch_npu="2.1.0.post6", python="3.11.9"),
     {"EC103": "fail"}, "3.11"),
    ("py312-8.0.RC1", dict(cann="8.0.RC1", torch="2.2.0", torch_npu="2.2.0", python="3.12.3"),
     {"EC103": "fail"}, "3.12"),
    ("py314-tabled-no-wheel", dict(cann="9.1.0", torch="2.12.0", torch_npu="2.12.0", python="3.14.0"),
     {"EC103": "fail"}, "3.14"),  # W5
    ("py312-wheel-not-tabled", dict(cann="8.5.0", torch="2.6.0", torch_npu="2.6.0.post5", python="3.12.1"),
     {"EC103": "warn"}, "no table"),
    ("py39-too-old", dict(cann="9.1.0", torch="2.10.0", torch_npu="2.10.0.post4", python="3.9.18"),
     {"EC103": "fail"}, "3.9"),
    ("py374-below-floor", dict(cann="7.0.RC1", torch="1.11.0", torch_npu="1.11.0.post4", python="3.7.4"),
     {"EC103": "fail"}, "3.7"),
    ("py3119-above-cann", dict(cann="8.3.RC1", torch="2.1.0", torch_npu="2.1.0.post17", python="3.11.9"),
     {"EC103": "warn"}, "CANN 8.3.RC1"),
    ("py313-2.9.0-no-wheel", dict(cann="8.5.0", torch="2.9.0", torch_npu="2.9.0", python="3.13.1"),
     {"EC103": "warn"}, "no cp313 wheel"),
    ("x86-wheel-gap", dict(cann="9.1.0", torch="2.10.0", torch_npu="2.10.0.post6", python="3.12.4", arch="x86_64"),
     {"EC103": "fail", "EC102": "warn"}, "3.12"),
    ("mindspore-python", dict(cann="8.0.RC1", mindspore="2.3.0rc2", python="3.10.14"), {"EC103": "fail"}, "MindSpore"),
    # driver / firmware (EC104)
    ("driver-too-old", dict(cann="8.0.RC1", driver="23.0.rc3"), {"EC104": "fail"}, "older"),
    ("driver-24-on-8.5", dict(cann="8.5.0", driver="24.1.0"), {"EC104": "fail"}, "older"),
    ("driver-unsupported-9.1", dict(cann="9.1.0", driver="25.0.rc1.1"), {"EC104": "fail"}, "unsupported"),
    ("driver-unsupported-9.2", dict(cann="9.2.0", driver="25.2.0"), {"EC104": "fail"}, "unsupported"),
    ("driver-rc2-on-8.0.RC3", dict(cann="8.0.RC3", driver="24.1.rc2"), {"EC104": "fail"}, "24.1.RC3"),
    ("driver-too-new-for-8.0.0", dict(cann="8.0.0", driver="26.0.rc1"), {"EC104": "fail"}, "newer"),
    ("driver-compatible-mindie", dict(cann="8.2.RC1", driver="24.1.rc3"), {"EC104": "warn"}, "compatible"),
    ("driver-compatible-grid", dict(cann="9.0.0", driver="25.3.rc1"), {"EC104": "warn"}, "compatible"),
    ("driver-msdk-d13", dict(cann="8.0.0", driver="25.2.0"), {"EC104": "warn"}, "compatible"),
    ("driver-newer-than-matrix", dict(cann="8.1.RC1", driver="27.0.0"), {"EC104": "warn"}, "newer than the matrix"),
    ("driver-thin-sources-d9", dict(cann="7.0.0", driver="23.0.rc3"), {"EC104": "warn"}, "too thin"),
    ("a5-driver-numbering", dict(cann="9.1.0", driver="1.0.rc1", chip="Ascend950DT"), {"EC104": "warn"}, "too thin"),
    ("firmware-too-old", dict(cann="8.0.0", driver="24.1.0", firmware="7.3.0.1.231"), {"EC104": "warn"}, "7.5.0.2.220"),
    # chip (EC105)
    ("a3-on-8.0.RC1", dict(cann="8.0.RC1", chip="Ascend910"), {"EC105": "fail"}, "8.0.RC3"),
    ("a2-on-6.3.RC1", dict(cann="6.3.RC1", chip="910B4"), {"EC105": "ok"}, "910B"),  # W12: "since 6.3.RC2" unverified
    ("950-on-8.5", dict(cann="8.5.0", chip="Ascend950DT"), {"EC105": "fail"}, "9.0.0"),
    ("a3-soc-on-8.0.RC2", dict(cann="8.0.RC2", chip="Ascend910_9392"), {"EC105": "fail"}, "8.0.RC3"),
    ("unknown-chip", dict(cann="8.0.RC1", chip="Ascend999X"), {"EC105": "warn"}, "Ascend999X"),
    # kernels (EC106)
    ("kernels-older-release", dict(cann="8.0.RC1", chip="910B4",
                                   kernels=[{"name": "Ascend-cann-kernels-910b", "version": "7.0.0", "source": "k"}]),
     {"EC106": "fail"}, "7.0.0"),
    ("ops-inside-window", dict(cann="9.0.0", chip="910B4",
                               kernels=[{"name": "910b-ops", "version": "8.5.0", "source": "k"}]),
     {"EC106": "warn"}, "window"),
    ("ops-below-minimum", dict(cann="9.0.0", chip="910B4",
                               kernels=[{"name": "910b-ops", "version": "8.3.RC1", "source": "k"}]),
     {"EC106": "fail"}, "8.3.RC1"),
    ("kernels-for-other-chip", dict(cann="8.0.RC1", chip="910B4",
                                    kernels=[{"name": "Ascend-cann-kernels-910", "version": "8.0.RC1", "source": "k"}]),
     {"EC106": "fail"}, "another chip"),
    # MindSpore (EC107, warn only)
    ("mindspore-other-cann", dict(cann="8.0.RC1", mindspore="2.5.0"), {"EC107": "warn"}, "8.0.0"),
    ("mindspore-unpaired", dict(cann="8.5.0", mindspore="2.8.0"), {"EC107": "warn"}, "no source pairs"),
    ("mindspore-d12", dict(cann="8.0.RC2", mindspore="2.3.0"), {"EC107": "warn"}, "d12"),
    ("mindspore-d6", dict(cann="8.2.RC1", mindspore="2.6.0"), {"EC107": "warn"}, "d6"),
    ("mindspore-on-310p", dict(cann="8.5.0", mindspore="2.7.2", chip="310P3"), {"EC107": "ok"}, "2.7.2"),  # W12
]


@pytest.mark.parametrize("env,expect,words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_wrong_environment(env, expect, words):
    found = judge(hypothetical_facts(**env), MX)
    worst: dict[str, Status] = {}
    for f in found:
        if f.code not in worst or f.status.severity > worst[f.code].severity:
            worst[f.code] = f.status
    for code, status in expect.items():
        assert worst[code].value == status, [(f.code, f.status.value, f.title) for f in found if f.code == code]
        hit = [f for f in found if f.code == code and f.status.value == status]
        if code == next(iter(expect)):  # the words belong to the first (main) rule of the case
            assert any(words in f.title + f.detail for f in hit), [f.title for f in hit]
        if status == "fail":
            assert all(f.fix for f in hit), "a failing rule must carry the exact fix"
        assert all(e.source and e.text for f in hit for e in f.evidence)
    for f in found:
        if f.code not in expect:
            assert f.status not in (Status.FAIL, Status.ERROR), (f.code, f.title)


def test_case_count():
    assert len(CASES) >= 40


def test_fails_cite_a_source_url():
    env = dict(cann="7.0.RC1", torch="2.1.0", torch_npu="2.1.0.post6")
    f = next(f for f in judge(hypothetical_facts(**env), MX) if f.code == "EC102")
    assert f.status == Status.FAIL
    assert any(e.text.startswith("https://") for e in f.evidence)
    assert any(e.source.startswith("matrix.yaml:") for e in f.evidence)
    assert f.data["rule"] and "2.1.0rc1" in f.fix


def test_absent_components_skip_with_a_reason():
    found = judge(hypothetical_facts(), MX)
    assert {f.status for f in found} == {Status.SKIP}
    assert all(f.title for f in found)


def test_kernels_for_two_chips_and_presence_only_entries():
    both = [{"name": "Ascend-cann-kernels-910", "version": "8.0.RC1", "source": "k"},
            {"name": "Ascend-cann-kernels-910b", "version": "8.0.RC1", "source": "k"}]
    found = [f for f in judge(hypothetical_facts(cann="8.0.RC1", chip="910B4", kernels=both), MX) if f.code == "EC106"]
    assert [f.status for f in found] == [Status.OK] and "910b" in found[0].title
    bare = [{"name": "ascend910b", "version": None, "source": "opp/.../kernel/ascend910b"}]
    found = [f for f in judge(hypothetical_facts(cann="8.2.RC1", chip="910B4", kernels=bare), MX) if f.code == "EC106"]
    assert [f.status for f in found] == [Status.SKIP] and "no version" in found[0].title
    internal = [{"name": "opp_kernel", "version": "8.2.0.0.201", "source": "opp_kernel/version.info"}]
    found = [f for f in judge(hypothetical_facts(cann="8.2.RC1", kernels=internal), MX) if f.code == "EC106"]
    assert [f.status for f in found] == [Status.OK]
    found = [f for f in judge(hypothetical_facts(cann="8.3.RC1", kernels=internal), MX) if f.code == "EC106"]
    assert [f.status for f in found] == [Status.FAIL]
