"""`envcheck cluster` under real torchrun runs (gloo, 127.0.0.1), plus the pure judging code."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import jsonschema
import pytest
from conftest import DATA, REPO

from envcheck.cluster import gather, links
from envcheck.model import Facts, Status
from envcheck.resources import schema_path

ROOTS = DATA / "roots"
HOST = socket.gethostname()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(*args, env=None, nproc=1, nnodes=1, node_rank=0, port=None):
    """argv and env for `torchrun ... -m envcheck cluster ARGS` on the loopback address."""
    argv = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}", f"--nnodes={nnodes}",
            f"--node-rank={node_rank}", "--master-addr=127.0.0.1", f"--master-port={port or free_port()}",
            "-m", "envcheck", "cluster", "--device", "cpu", *map(str, args)]
    full = dict(os.environ, GLOO_SOCKET_IFNAME="lo", PYTHONWARNINGS="ignore", **(env or {}))
    full.pop("RANK_TABLE_FILE", None)
    return argv, full


def run(argv, env, timeout=120):
    t0 = time.monotonic()
    p = subprocess.run(argv, env=env, cwd=str(REPO), capture_output=True, text=True, timeout=timeout)
    return p, time.monotonic() - t0


def by_code(doc):
    out: dict[str, list] = {}
    for f in doc["findings"]:
        out.setdefault(f["code"], []).append(f)
    return out


@pytest.mark.slow
def test_four_ranks_json_report():
    argv, env = torchrun("--json", "--sizes", "1K,4K", "--link-bytes", "4K", "--timeout", "30", nproc=4)
    p, _ = run(argv, env)
    assert p.returncode == 0, p.stderr[-3000:]
    doc = json.loads(p.stdout)  # rank 0 alone writes, and writes one document
    jsonschema.validate(doc, json.loads(schema_path("report").read_text()))
    assert doc["command"] == "cluster" and doc["verdict"] in ("ok", "warn")
    found = by_code(doc)
    assert {"EC501", "EC502", "EC503", "EC504", "EC506", "EC507", "EC411"} <= set(found)
    assert found["EC501"][0]["title"].startswith("4 rank(s) joined on 1 node(s)")
    sweep = next(f for f in found["EC411"] if "sweep" in f["data"])["data"]
    assert sweep["world"] == 4 and {(r["op"], r["bytes"]) for r in sweep["sweep"]} >= {("all_reduce", 1024)}
    assert all(c["ok"] for c in sweep["checks"])
    pairs = found["EC506"][0]["data"]["links"]
    assert len(pairs) == 6 and all(r["ms"] is not None for r in pairs)  # one node: every pair of ranks
    assert found["EC507"][0]["title"].startswith("slowest rank: rank ")


@pytest.mark.slow
def test_two_nodes_with_different_roots_name_the_odd_node():
    port = free_port()
    a0, e0 = torchrun("--json", "--root", ROOTS / "root-910b-8.2", "--sizes", "1K", "--link-bytes", "4K",
                      "--timeout", "30", nnodes=2, node_rank=0, port=port)
    a1, e1 = torchrun("--json", "--root", ROOTS / "new-8.5", "--sizes", "1K", "--link-bytes", "4K",
                      "--timeout", "30", nnodes=2, node_rank=1, port=port)
    n1 = subprocess.Popen(a1, env=e1, cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        p0, _ = run(a0, e0)
        out1, _ = n1.communicate(timeout=60)
    finally:
        n1.kill()
    assert p0.returncode == 1, p0.stderr[-3000:]
    assert out1 == ""  # only rank 0 (on node 0) reports
    found = by_code(json.loads(p0.stdout))
    drift = {f["data"]["field"]: f for f in found["EC504"] if f["status"] != "ok"}
    assert drift["CANN"]["status"] == "fail"
    assert drift["CANN"]["data"]["odd"] == [f"node1@{HOST}"]
    assert f"node1@{HOST} has 8.5.0 (majority: 8.2.RC1)" in drift["CANN"]["title"]
    [link] = found["EC506"][0]["data"]["links"]
    assert link["link"] == f"rank 0 (node0@{HOST}) <-> rank 1 (node1@{HOST})"


@pytest.mark.slow
def test_sleeping_rank_is_named_within_the_timeout():
    argv, env = torchrun("--json", "--sizes", "", "--no-links", "--timeout", "4", nproc=3,
                         env={"ENVCHECK_TEST_SLEEP_RANK": "1", "ENVCHECK_TEST_SLEEP_SECONDS": "300"})
    p, wall = run(argv, env, timeout=200)
    assert p.returncode != 0
    doc = json.loads(p.stdout)
    [f] = doc["findings"]
    assert f["code"] == "EC507" and f["status"] == "fail"
    assert f"rank 1 (host {HOST}" in f["title"] and "within 4 s" in f["title"]
    assert wall < 90  # start-up of three ranks + the 4 s deadline, not the sleeper's 300 s


def test_cluster_outside_torchrun_is_a_usage_error(cli, monkeypatch):
    for v in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR"):
        monkeypatch.delenv(v, raising=False)
    r = cli("cluster")
    assert r.rc == 2 and "torchrun" in r.err and len(r.err.splitlines()) == 1


# ---- pure parts ---------------------------------------------------------------------------

def payload(rank, node_rank, local, cann="8.2.RC1", npus=8):
    facts = Facts(cann={"installs": [{"version": cann}], "active": 0}, npu={"count": npus})
    who = {"host": "h", "node_rank": node_rank, "local_rank": local, "pid": 100 + rank}
    return gather.payload(rank, who, {}, facts, [], "cpu")


def test_analyse_names_uneven_nodes_and_drift():
    ps = [payload(0, 0, 0), payload(1, 0, 1), payload(2, 1, 0, cann="8.0.0", npus=4)]
    found = gather.analyse(ps, 3, verdicts=False)
    fails = {f.title for f in found if f.status is Status.FAIL}
    assert fails == {"nodes run different numbers of ranks: node1@h runs 1 (majority: 2)",
                     "nodes have different numbers of NPUs: node1@h has 4 (majority: 8)",
                     "CANN differs across nodes: node1@h has 8.0.0 (majority: 8.2.RC1)"}


def test_analyse_flags_duplicate_local_rank_and_split_blocks():
    ps = [payload(0, 0, 0), payload(1, 1, 0), payload(2, 0, 0), payload(3, 1, 1)]
    found = gather.analyse(ps, 4, verdicts=False)
    ec502 = [f for f in found if f.code == "EC502"]
    assert any(f.status is Status.FAIL and "node0@h: LOCAL_RANK [0]" in f.title for f in ec502)
    assert any(f.status is Status.WARN and "not one contiguous block" in f.title for f in ec502)


def test_links_units_are_node_leaders():
    ps = [payload(0, 0, 0), payload(1, 0, 1), payload(2, 1, 0), payload(3, 1, 1)]
    assert links.units(ps) == [0, 2]
    assert links.pairs([0, 2, 4]) == [(0, 2), (0, 4), (2, 4)]


def test_dead_link_fails_and_names_the_pair():
    names = {0: "rank 0 (node0@a)", 2: "rank 2 (node1@b)", 4: "rank 4 (node2@c)"}
    todo = [(0, 2), (0, 4), (2, 4)]
    f = links.judge([{"0-2": 0.001, "0-4": None}, {"2-4": 0.001}], todo, 4096, names, 5.0)
    assert f.status is Status.FAIL and f.title.startswith("dead link(s): rank 0 (node0@a) <-> rank 4 (node2@c)")


def test_slow_link_warns():
    names = {i: f"rank {i}" for i in range(4)}
    todo = links.pairs([0, 1, 2, 3])
    times = {f"{a}-{b}": 0.001 for a, b in todo}
    times["1-3"] = 0.5
    f = links.judge([times], todo, 4096, names, 5.0)
    assert f.status is Status.WARN and "slowest link: rank 1 <-> rank 3" in f.title


@pytest.mark.slow
def test_rank_that_never_answers_gives_dead_links_named():
    argv, env = torchrun("--json", "--sizes", "", "--link-bytes", "4K", "--timeout", "3", nproc=3,
                         env={"ENVCHECK_TEST_SKIP_LINKS_RANK": "2"})
    p, _ = run(argv, env)
    assert p.returncode == 1, p.stderr[-3000:]
    [f] = by_code(json.loads(p.stdout))["EC506"]
    assert f["status"] == "fail"
    assert f["title"] == (f"dead link(s): rank 0 (node0@{HOST}) <-> rank 2 (node0@{HOST}); "
                          f"rank 1 (node0@{HOST}) <-> rank 2 (node0@{HOST}) (no round trip within 3 s)")
    ok = [r for r in f["data"]["links"] if r["pair"] == "0-1"]
    assert ok[0]["ms"] is not None


def test_cluster_rejects_a_bad_timeout(cli, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "1")
    r = cli("cluster", "--timeout", "0")
    assert r.rc == 2 and "--timeout" in r.err
    r = cli("cluster", "--sizes", "lots")
    assert r.rc == 2 and "--sizes" in r.err
