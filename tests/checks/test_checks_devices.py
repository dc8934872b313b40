"""EC3xx CANN / driver / device checks and EC001-EC003, on fixture trees and the npu-smi stand-in."""
from __future__ import annotations

import pytest
from conftest import DATA

from envcheck.checks import devices as D
from envcheck.checks import system as S
from envcheck.checks.registry import Context
from envcheck.model import Facts, Status
from envcheck.probe import collect

ROOTS = DATA / "roots"
STUB_BIN = DATA / "npu-smi" / "bin"


def probe(tree: str, smi: str | None = None, **env: str) -> Facts:
    base = {"PATH": f"{STUB_BIN}:/usr/bin:/bin" if smi else "/nonexistent-bin"}
    if smi:
        base["NPU_SMI_FIXTURE"] = smi
    base.update(env)
    return collect(root=str(ROOTS / tree), environ=base, timeout=5)


def run(check, facts: Facts):
    return list(check.run(Context(facts=facts)))


def status(check, facts: Facts) -> Status:
    return max((f.status for f in run(check, facts)), key=lambda s: s.severity)


def test_root_910b_is_all_ok():
    f = probe("root-910b-8.2", smi="910b4")
    for chk in D.CHECKS + S.CHECKS:
        assert status(chk, f) is Status.OK, chk.code
    cann = run(D.cann_found, f)[0]
    assert cann.title.startswith("CANN 8.2.RC1 at /usr/local/Ascend/ascend-toolkit/latest (classic, latest)")
    assert "NNAL atb 8.2.RC1" in cann.title and "also installed: 8.1.RC1" in cann.title
    assert run(D.driver_found, f)[0].title == "driver 25.0.rc1.1, firmware 7.7.0.1.231"
    assert run(D.npu_visible, f)[0].title == "8 × 910B4"


def test_a3_chip_count_names_cards():
    f = probe("root-910b-8.2", smi="a3")
    assert run(D.npu_visible, f)[0].title == "16 × Ascend910 on 8 cards"
    # version.info says 25.0.rc1.1 but this npu-smi reports 25.2.1: reboot pending / foreign mount
    # (issue 13: EC303 names a missing driver; the disagreement is EC310's, with its own slug)
    assert run(D.driver_found, f)[0].status is Status.OK
    d = run(D.driver_agrees, f)[0]
    assert d.status is Status.WARN and d.title == "driver files say 25.0.rc1.1 but npu-smi runs 25.2.1"


def test_cann_not_found_on_empty_root(tmp_path):
    f = collect(root=str(tmp_path), environ={"PATH": ""})
    assert status(D.cann_found, f) is Status.FAIL
    assert status(D.driver_found, f) is Status.FAIL
    # no driver at all: npu-smi / device checks skip instead of piling up failures
    for chk in (D.npu_smi_present, D.npu_smi_works, D.npu_visible, D.npus_healthy, D.npus_idle):
        assert status(chk, f) is Status.SKIP, chk.code


def test_mixed_components_and_no_driver():
    f = probe("cann-no-driver")
    mixed = run(D.components_consistent, f)[0]
    assert mixed.status is Status.FAIL and "compiler 8.0.RC3 vs 8.1.RC1" in mixed.title
    assert status(D.driver_found, f) is Status.FAIL
    assert status(D.npu_visible, f) is Status.SKIP


def test_new_85_is_consistent():
    f = probe("new-8.5")
    assert status(D.components_consistent, f) is Status.OK
    assert "(8.5+, latest)" in run(D.cann_found, f)[0].title


def test_broken_tree_reports_ec308_and_ec001():
    f = probe("broken", ASCEND_HOME_PATH="/usr/local/Ascend/nonexistent")
    e308 = run(D.version_files_readable, f)[0]
    assert e308.status is Status.FAIL and len(e308.evidence) == 7
    assert any(e.source.endswith("8.2.RC1/version.cfg") and "UTF-8" in e.text for e in e308.evidence)
    assert any("compiler/version.info" in e.source and "directory" in e.text for e in e308.evidence)
    e001 = run(S.probe_complete, f)[0]
    assert e001.status is Status.ERROR and "symlink loop" in e001.title
    drv = run(D.driver_found, f)[0]
    assert drv.status is Status.FAIL and "unreadable" in drv.title


def test_driver_without_npu_smi_or_devices():
    f = probe("new-8.5")
    assert status(D.npu_smi_present, f) is Status.FAIL  # driver installed, npu-smi not on PATH
    assert "davinci0..7" in run(D.npu_visible, f)[0].title  # /dev fallback count
    facts = Facts(driver={"present": True, "version": "25.0.rc1.1"}, npu={"devices": [], "dev_davinci": []})
    assert status(D.npu_visible, facts) is Status.FAIL


@pytest.mark.parametrize("mode, text", [("fail-8005", "DCMI module could not initialise"),
                                       ("fail-8020", "in use by another container")])
def test_npu_smi_failures(mode, text):
    f = probe("root-910b-8.2", smi=mode)
    res = run(D.npu_smi_works, f)[0]
    assert res.status is Status.FAIL and text in res.detail and res.data["rc"] == 255
    assert "ret is -80" in res.title
    assert status(D.npus_healthy, f) is Status.SKIP
    assert "davinci0..7" in run(D.npu_visible, f)[0].title


def test_npu_smi_hang_is_a_finding():
    f = collect(root=str(ROOTS / "root-910b-8.2"), environ={"PATH": f"{STUB_BIN}:/usr/bin:/bin",
                                                            "NPU_SMI_FIXTURE": "hang"}, timeout=0.5)
    res = run(D.npu_smi_works, f)[0]
    assert res.status is Status.FAIL and "did not answer" in res.title and res.data["timed_out"]


def test_unhealthy_and_busy():
    f = probe("root-910b-8.2", smi="910b4-unhealthy")
    res = run(D.npus_healthy, f)[0]
    assert res.status is Status.FAIL and "NPU 5: Alarm" in res.title and "NPU 6: Warning" in res.title
    warn_only = Facts(npu={"devices": [{"id": 1, "health": "Warning"}, {"id": 2, "health": "OK"}]})
    assert status(D.npus_healthy, warn_only) is Status.WARN
    busy = run(D.npus_idle, probe("root-910b-8.2", smi="910b4-busy"))[0]
    assert busy.status is Status.WARN and "pid 2034561" in busy.title
    hidden = Facts(npu={"devices": [{"id": 0, "hbm_used_mb": 60000, "hbm_total_mb": 65536}], "processes": []})
    assert "no visible process" in run(D.npus_idle, hidden)[0].title


def test_system_summary_and_packages():
    f = probe("root-910b-8.2")
    s = run(S.system_summary, f)[0]
    assert s.title.startswith("Ubuntu 22.04.4 LTS, ") and "Python " in s.title and "glibc" in s.title
    f.python = {"packages": {"torch": "2.1.0", "torch-npu": "2.1.0.post3"}, "executable": "/x/python"}
    assert run(S.python_packages, f)[0].title == "torch 2.1.0, torch_npu 2.1.0.post3"
    f.python = {"packages": {}, "executable": "/x/python"}
    assert run(S.python_packages, f)[0].status is Status.SKIP
