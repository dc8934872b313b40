"""envcheck.preflight(): the launch variables (pure), then real multi-process runs on gloo over 127.0.0.1."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time

import pytest
from conftest import REPO

from envcheck.checks import launchenv as envvars

# ---- the launch variables, judged without a process group ----------------------------------

GOOD = {"WORLD_SIZE": "8", "RANK": "5", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4",
        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}


def issues(env, devices=None, require=True):
    return [(i.code, i.variable) for i in envvars.check_env(env, devices, require)]


def test_good_launch_has_no_issues():
    assert issues(GOOD, devices=[0, 1, 2, 3]) == []


@pytest.mark.parametrize("change,expected", [
    ({"WORLD_SIZE": None}, ("EC501", "WORLD_SIZE")),
    ({"WORLD_SIZE": "eight"}, ("EC501", "WORLD_SIZE")),
    ({"WORLD_SIZE": "0"}, ("EC501", "WORLD_SIZE")),
    ({"RANK": "8"}, ("EC502", "RANK")),
    ({"RANK": None}, ("EC502", "RANK")),
    ({"LOCAL_RANK": "4"}, ("EC502", "LOCAL_RANK")),
    ({"LOCAL_WORLD_SIZE": "16"}, ("EC501", "LOCAL_WORLD_SIZE")),
    ({"MASTER_ADDR": None}, ("EC508", "MASTER_ADDR")),
    ({"MASTER_PORT": "70000"}, ("EC508", "MASTER_PORT")),
    ({"ASCEND_RT_VISIBLE_DEVICES": "0,1,9,10"}, ("EC503", "ASCEND_RT_VISIBLE_DEVICES")),
    ({"ASCEND_RT_VISIBLE_DEVICES": "0,1"}, ("EC503", "LOCAL_WORLD_SIZE")),
    ({"ASCEND_RT_VISIBLE_DEVICES": "0,0,1,2"}, ("EC503", "ASCEND_RT_VISIBLE_DEVICES")),
    ({"ASCEND_RT_VISIBLE_DEVICES": "npu0"}, ("EC503", "ASCEND_RT_VISIBLE_DEVICES")),
])
def test_each_bad_variable_is_named(change, expected):
    env = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    assert expected in issues(env, devices=[0, 1, 2, 3])


def test_more_local_ranks_than_npus():
    found = envvars.check_env(GOOD, devices=[0, 1])
    assert [(i.code, i.variable) for i in found] == [("EC503", "LOCAL_WORLD_SIZE")]
    assert "LOCAL_WORLD_SIZE=4 ranks on this node but only 2 device(s)" in found[0].message


def test_world_not_a_multiple_of_local_is_a_warning():
    found = envvars.check_env({**GOOD, "WORLD_SIZE": "6"}, None)
    assert [(i.code, i.severity) for i in found] == [("EC501", "warn")]


def test_checks_skip_outside_a_launch():
    from envcheck.checks.distributed import CHECKS
    from envcheck.checks.registry import Context
    from envcheck.checks.runner import run_check
    from envcheck.model import Facts, Status

    for chk in CHECKS:
        if chk.default:
            assert {f.status for f in run_check(chk, Context(Facts(env={})))} == {Status.SKIP}, chk.code


def test_env_checks_in_a_single_process_run():
    from envcheck.checks.distributed import devices_per_node_fit, rank_numbering_valid
    from envcheck.checks.registry import Context
    from envcheck.checks.runner import run_check
    from envcheck.model import Facts, Status

    facts = Facts(env={**GOOD, "RANK": "9"}, npu={"available": True, "devices": [{"id": 0}, {"id": 1}]})
    [f] = run_check(rank_numbering_valid, Context(facts))
    assert f.status is Status.FAIL and "RANK=9" in f.title
    [f] = run_check(devices_per_node_fit, Context(facts))
    assert f.status is Status.FAIL and "only 2 device(s)" in f.title


# ---- real ranks: a training-like script calling preflight() -----------------------------------

SCRIPT = textwrap.dedent("""
    import json, sys, time
    import torch.distributed  # import cost is not the preflight's
    import envcheck
    t0 = time.monotonic()
    mode = sys.argv[1]
    try:
        if mode == "after-init":
            import torch.distributed as dist
            dist.init_process_group("gloo", init_method="env://")
        report = envcheck.preflight(timeout=float(sys.argv[2]), device="cpu")
        print(json.dumps({"ok": True, "verdict": report.to_dict()["verdict"],
                          "codes": {f.code: f.status.value for f in report.findings}}))
        if mode in ("strict", "after-init"):
            envcheck.preflight(timeout=float(sys.argv[2]), device="cpu", strict=True)
            print(json.dumps({"strict": "passed"}))
    except envcheck.PreflightError as exc:
        print(json.dumps({"ok": False, "error": str(exc), "code": exc.code, "ranks": exc.ranks,
                          "seconds": time.monotonic() - t0}))
        sys.exit(3)
""")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(tmp_path, ranks, world, mode="plain", timeout=4.0, extra=None, limit=90):
    """Start one process per entry of `ranks` (its RANK) by hand, as a launcher with a bug would."""
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    port = free_port()
    procs = []
    t0 = time.monotonic()
    for i, rank in enumerate(ranks):
        env = dict(os.environ, WORLD_SIZE=str(world), RANK=str(rank), LOCAL_RANK=str(i),
                   LOCAL_WORLD_SIZE=str(len(ranks)), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   PYTHONWARNINGS="ignore", GLOO_SOCKET_IFNAME="lo", **(extra or {}))
        procs.append(subprocess.Popen([sys.executable, str(script), mode, str(timeout)], env=env, cwd=str(REPO),
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    results = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise
        lines = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
        results.append({"rc": p.returncode, "lines": lines, "err": err})
    return results, time.monotonic() - t0


@pytest.mark.slow
def test_two_ranks_pass(tmp_path):
    results, _ = launch(tmp_path, [0, 1], 2)
    for r in results:
        assert r["rc"] == 0, r["err"][-2000:]
        doc = r["lines"][0]
        assert doc["ok"] and doc["codes"]["EC411"] == "ok" and doc["codes"]["EC501"] == "ok"


@pytest.mark.slow
def test_wrong_world_size_fails_fast_naming_it(tmp_path):
    results, wall = launch(tmp_path, [0, 1], 3, timeout=3.0)
    for r in results:
        assert r["rc"] == 3, r["err"][-2000:]
        err = r["lines"][-1]
        assert err["code"] == "EC501"
        assert "WORLD_SIZE=3 but only 2 process(es) joined within 3 s" in err["error"]
        assert "missing rank(s) 2" in err["error"]
        # the roll call's deadline (3 s) plus slack for a loaded CI box, not torch's 30-minute timeout
        assert err["seconds"] < 3 + 20
    assert wall < 60


@pytest.mark.slow
def test_rank_used_twice_is_named(tmp_path):
    results, _ = launch(tmp_path, [0, 1, 1], 3, timeout=4.0)
    errors = [r["lines"][-1] for r in results]
    assert all(e.get("code") == "EC502" for e in errors), errors
    assert "RANK 1 is used by more than one process and rank(s) 2 by none" in errors[0]["error"]


@pytest.mark.slow
def test_sleeping_rank_is_named_within_the_timeout(tmp_path):
    results, _ = launch(tmp_path, [0, 1, 2], 3, timeout=3.0,
                        extra={"ENVCHECK_TEST_SLEEP_RANK": "2", "ENVCHECK_TEST_SLEEP_SECONDS": "6"})
    for r in results[:2]:
        err = r["lines"][-1]
        assert err["code"] == "EC507" and err["ranks"] == [2]
        assert "rank 2 (host" in err["error"] and "did not reach the 'facts' stage within 3 s" in err["error"]
        assert err["seconds"] < 3 + 20


def test_rank_outside_world_fails_before_any_rendezvous(tmp_path):
    results, wall = launch(tmp_path, [5], 2, timeout=30.0)
    err = results[0]["lines"][-1]
    assert err["code"] == "EC502" and "RANK=5 is outside 0..WORLD_SIZE-1" in err["error"]
    assert err["seconds"] < 20  # no rendezvous at all, although the timeout is 30 s


@pytest.mark.slow
def test_after_init_and_strict(tmp_path):
    """Called after init_process_group; a warning (rank table not completed) raises only with strict."""
    table = {"version": "1.0", "server_count": "1", "status": "initializing",
             "server_list": [{"server_id": "127.0.0.1", "host_nic_ip": "reserve",
                              "device": [{"device_id": "0", "device_ip": "10.0.0.1", "rank_id": "0"}]}]}
    path = tmp_path / "rt.json"
    path.write_text(json.dumps(table))
    results, _ = launch(tmp_path, [0], 1, mode="after-init", extra={"RANK_TABLE_FILE": str(path)})
    r = results[0]
    first, second = r["lines"]
    assert first["ok"] and first["codes"]["EC505"] == "warn" and first["verdict"] == "warn"
    assert r["rc"] == 3 and second["code"] == "EC505" and "initializing" in second["error"]


def test_preflight_is_callable_from_the_package_whatever_was_imported_first():
    code = ("import envcheck.cluster.preflight as m, envcheck; "
            "assert envcheck.preflight is m.preflight and envcheck.PreflightError is m.PreflightError; "
            "import sys; assert 'torch' not in sys.modules; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(REPO))
    assert out.stdout.strip() == "ok", out.stderr
