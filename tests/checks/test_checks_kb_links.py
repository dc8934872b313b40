"""Issue 13: every kb link names the failure it annotates. One fixture per failing code (a fixture tree,
or the root-910b-8.2 facts changed in one place); the first linked entry is checked against the failure."""
from __future__ import annotations

import copy

import pytest
from test_checks_root_causes import ENVIRONMENTS, judge, probe, session, standing

from envcheck.checks import by_id
from envcheck.kb.entries import load_kb
from envcheck.kb.link import OUTCOME_ENTRIES
from envcheck.model import Facts, Status
from envcheck.smoke.suite import SuiteResult


def _base() -> Facts:
    f = probe("root-910b-8.2", "910b4", {})
    f.netdev = {}
    return f


BASE = _base()


def changed(packages=None, py=None, cann=None, env=None) -> Facts:
    f = copy.deepcopy(BASE)
    python, cann_section = f.python.to_dict(), f.cann.to_dict()  # sections are frozen: edit copies
    if packages:
        python["packages"].update(packages)
    if py:
        python["version"] = py
    if cann:
        cann_section["installs"][cann_section["active"]]["version"] = cann
    f.python, f.cann = python, cann_section
    if env:
        f.env.update(env)
    return f


DIST = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
# code -> (how to make it fail, the entry its first kb link must be)
SYNTHETIC = {
    "EC101": (lambda: changed(packages={"torch": "2.5.1", "torch-npu": "2.6.0"}), "torch-npu-torch-mismatch"),
    "EC102": (lambda: changed(packages={"torch": "2.1.0", "torch-npu": "2.1.0.post3"}), "torch-npu-cann-mismatch"),
    "EC103": (lambda: changed(packages={"torch": "2.6.0", "torch-npu": "2.6.0"}, py="3.7.9"), "python-unsupported"),
    "EC107": (lambda: changed(packages={"mindspore": "2.2.0"}), "mindspore-cann-mismatch"),
    "EC108": (lambda: changed(packages={"torch": "2.8.0", "torch-npu": "2.8.0"}), "torch-npu-2-8-0-host-memory-leak"),
    "EC202": (lambda: changed(env={"ASCEND_RT_VISIBLE_DEVICES": "9"}), "visible-devices-invalid"),
    "EC205": (lambda: changed(env={"HCCL_SOCKET_IFNAME": "nonexist0"}), "hccl-nic-invalid"),
    "EC206": (lambda: changed(env={"RANK_SIZE": "2", "RANK_ID": "5"}), "dist-env-missing"),
    "EC501": (lambda: changed(env={"WORLD_SIZE": "abc", "RANK": "0", **DIST}), "hccl-world-size-mismatch"),
    "EC502": (lambda: changed(env={"WORLD_SIZE": "2", "RANK": "7", **DIST}), "rank-numbering-invalid"),
    "EC503": (lambda: changed(env={"WORLD_SIZE": "32", "RANK": "0", "LOCAL_WORLD_SIZE": "16", "LOCAL_RANK": "0",
                                   **DIST}), "devices-per-node-mismatch"),
    "EC508": (lambda: changed(env={"WORLD_SIZE": "2", "RANK": "0"}), "dist-env-missing"),
    "EC607": (lambda: changed(env={"HCCL_IF_IP": "10.10.1.11", "HCCL_SOCKET_IFNAME": "lo"}), "hccl-nic-conflict"),
    "EC622": (lambda: changed(env={"ASCEND_VISIBLE_DEVICES": "0-3"}), "container-devices-missing"),
}
# what the fixture trees make fail, and the entry each failure must link first
FROM_TREES = {
    "EC001": "probe-incomplete", "EC104": "driver-too-old-for-cann", "EC106": "kernels-toolkit-mismatch",
    "EC201": "cann-env-not-loaded", "EC203": "shm-too-small", "EC301": "cann-not-installed",
    "EC302": "cann-components-mixed", "EC303": "npu-driver-not-installed", "EC304": "npu-driver-not-installed",
    "EC305": "npu-smi-failed", "EC306": "npu-unhealthy", "EC307": "npu-device-busy", "EC308": "probe-incomplete",
    "EC309": "no-npu-visible", "EC601": "device-nic-link-unstable", "EC602": "device-nic-link-unstable",
    "EC603": "device-nic-link-unstable", "EC604": "device-ip-invalid", "EC605": "device-nic-link-unstable",
    "EC606": "device-tls-inconsistent", "EC610": "host-tuning-not-recommended",
    "EC611": "host-tuning-not-recommended", "EC612": "host-tuning-not-recommended",
    "EC620": "container-devices-missing", "EC621": "container-driver-partial-mount",
    "EC310": None,  # the driver files disagree with the running driver: no entry describes it, so no link
}


def _links_fit(f) -> None:
    """Every entry a finding links names its code (or is the outcome the finding names)."""
    kb = load_kb()
    for eid in f.kb:
        e = kb.get(eid)
        assert e is not None, eid
        if eid in OUTCOME_ENTRIES:
            assert f.failure == eid, (f.code, f.title, eid)
        elif f.failure == f.slug:
            assert f.code in e.checks or not f.kb.index(eid) == 0, (f.code, eid)


def _tree_failures() -> dict[str, list]:
    out: dict[str, list] = {}
    for tree, smi, env in ENVIRONMENTS:
        for f in standing(judge(probe(tree, smi, env))):
            out.setdefault(f.code, []).append(f)
    return out


TREE_FAILURES = _tree_failures()


@pytest.mark.parametrize("code", sorted(FROM_TREES))
def test_fixture_tree_failures_link_their_entry(code):
    found = TREE_FAILURES.get(code)
    assert found, f"no fixture tree makes {code} fail any more"
    for f in found:
        assert (f.kb[0] if f.kb else None) == FROM_TREES[code], (f.code, f.title, f.kb)
        _links_fit(f)


@pytest.mark.parametrize("code", sorted(SYNTHETIC))
def test_each_failure_links_the_entry_that_names_it(code):
    make, want = SYNTHETIC[code]
    found = [f for f in standing(judge(make())) if f.code == code]
    assert found, f"the fixture for {code} does not make it fail"
    for f in found:
        assert f.kb and f.kb[0] == want, (f.title, f.kb)
        _links_fit(f)


def test_every_failing_default_check_has_a_fixture():
    covered = set(FROM_TREES) | set(SYNTHETIC) | {"EC401", "EC402", "EC403"}
    failable = {c.code for c in by_id().values() if c.failable and c.default}
    # EC105 needs a chip older than every CANN the matrix tables (none shipped); EC404-EC413 run only in
    # `envcheck smoke` on a device (tests/smoke); EC505 has its own fixtures (tests/checks/test_ranktable.py)
    assert failable - covered <= {"EC105", "EC505"}, sorted(failable - covered)


def test_driver_disagreement_never_links_driver_not_installed():
    for f in TREE_FAILURES["EC310"]:
        assert "npu-driver-not-installed" not in f.kb and f.failure == "driver-version-disagrees"


def test_torch_npu_newer_than_the_matrix_links_that_and_never_a_downgrade():
    f = next(f for f in standing(judge(changed(packages={"torch": "2.13.0", "torch-npu": "2.13.0"})))
             if f.code == "EC102")
    assert f.kb == ("version-newer-than-matrix",) and f.failure == "version-newer-than-matrix"
    assert "pip install" not in f.fix
    mismatch = next(f for f in standing(judge(changed(packages={"torch": "2.1.0", "torch-npu": "2.1.0.post3"})))
                    if f.code == "EC102")
    assert "version-newer-than-matrix" not in mismatch.kb  # an outcome entry only where it is that outcome


def test_torch_npu_import_failure_links_cann_env_not_loaded():
    f = changed(packages={"torch-npu": "2.13.0"})
    report = judge(f, session(torch_npu_fails=True))
    stand = [x for x in standing(report) if x.code == "EC201"]
    assert stand and stand[0].kb[0] == "cann-env-not-loaded"
    # with the cause gone (not run), EC401 stands and names the same entry
    from envcheck.checks import runner, to_run
    from envcheck.checks.registry import Context

    ctx = Context(facts=f, options={"smoke": "quick"}, smoke=session(torch_npu_fails=True))
    r2 = runner.run(to_run("quick", ignore=["EC201", "EC301"]), ctx)
    ec401 = next(x for x in r2.findings if x.code == "EC401")
    assert ec401.status is Status.FAIL and ec401.kb[0] == "cann-env-not-loaded"


def test_smoke_on_npu_without_torch_npu_is_not_an_operator_failure():
    s = session(torch_npu_fails=False)
    s.device = "npu"
    s.level = "ops"
    s._cache["suite"] = SuiteResult(device="npu", fatal="ModuleNotFoundError: No module named 'torch_npu'",
                                    fatal_traceback="Traceback ...\nModuleNotFoundError: No module named 'torch_npu'")
    from envcheck.checks import runner
    from envcheck.checks.registry import Context
    from envcheck.checks.smoke import planned_checks

    ctx = Context(facts=Facts(python={"executable": "/venv/bin/python"}), options={"smoke": "ops", "device": "npu"},
                  smoke=s)
    report = runner.run(planned_checks("ops"), ctx, command="smoke ops")
    fails = [f for f in report.findings if f.status is Status.FAIL]
    assert [(f.code, f.failure) for f in fails] == [("EC402", "torch-npu-not-installed")]
    assert not fails[0].kb or all(not k.startswith("op-") for k in fails[0].kb)
    ec403 = next(f for f in report.findings if f.code == "EC403")
    assert ec403.because == "EC402" and ec403.kb == ()
    assert "matrix suggest --torch 2.13.0" in fails[0].fix
