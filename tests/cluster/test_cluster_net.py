"""Cross-node device network: pure judging, compare on probe snapshots, and a 2-node torchrun simulation."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest
from conftest import DATA, REPO

from envcheck.cluster import netcheck

ROOTS = DATA / "roots"
HOST = socket.gethostname()


def node(tls, ips, env=None, host="10.10.1.11"):
    return {"netdev": {"devices": [{"id": i, "ip": ip, "tls_switch": tls} for i, ip in enumerate(ips)]},
            "system": {"interfaces": {"lo": ["127.0.0.1"], "eth0": [host]}}, "env": env or {}}


def test_plan_pairs_same_index_devices_and_host_addresses():
    nodes = [("a", node(0, ["1.0.0.1", "1.0.0.2"])), ("b", node(0, ["2.0.0.1", "2.0.0.2"], host="10.10.1.12"))]
    todo = netcheck.plan("a", nodes)
    assert [(t["kind"], t.get("device"), t["address"]) for t in todo] == [
        ("device", 0, "2.0.0.1"), ("device", 1, "2.0.0.2"), ("host", None, "10.10.1.12")]


def test_reach_names_the_unreachable_pair():
    res = [{"kind": "device", "from": "a", "device": 3, "to": "b", "address": "2.0.0.4", "ok": False, "detail": "x"},
           {"kind": "host", "from": "a", "to": "b", "address": "10.1.1.1", "ok": True, "detail": "y"}]
    [f] = netcheck.reach_findings(res)
    assert f.status.value == "fail" and "a device 3 -> b 2.0.0.4" in f.title
    [f] = netcheck.reach_findings([])
    assert f.status.value == "skip"


def test_tls_and_env_drift_redacted():
    secret = "hf_" + "a1B2" * 8
    a = node(0, ["1.0.0.1"], {"HCCL_CONNECT_TIMEOUT": "1200", "LD_LIBRARY_PATH": "/x:/y", "ASCEND_TOKEN": secret})
    b = node(1, ["2.0.0.1"], {"HCCL_CONNECT_TIMEOUT": "120", "LD_LIBRARY_PATH": "/x:/z", "ASCEND_TOKEN": "other"})
    fs = netcheck.findings([("a", a), ("b", b), ("c", a)])
    by = {(f.code, f.data.get("variable")): f for f in fs}
    assert by[("EC631", None)].status.value == "fail" and "b has tls switch 1" in by[("EC631", None)].title
    assert by[("EC632", "HCCL_CONNECT_TIMEOUT")].status.value == "fail"
    assert by[("EC632", "LD_LIBRARY_PATH[1]")].status.value == "warn"
    assert secret not in json.dumps([f.to_dict() for f in fs])


def test_compare_accepts_probe_snapshots(tmp_path, envcheck_proc):
    paths = []
    for r in ("net-healthy", "net-node-b"):
        out = envcheck_proc("probe", "--json", "--root", ROOTS / r, env={"PATH": "/usr/bin:/bin"})
        assert out.rc == 0, out.err
        p = tmp_path / f"{r}.json"
        p.write_text(out.out)
        paths.append(p)
    res = envcheck_proc("compare", "--json", *paths)
    codes = {(f["code"], f["status"]) for f in res.json()["findings"]}
    assert ("EC631", "fail") in codes


@pytest.mark.slow
def test_two_nodes_report_unreachable_pair_and_tls_mismatch():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    def argv(rank, root):
        return [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=1", "--nnodes=2",
                f"--node-rank={rank}", "--master-addr=127.0.0.1", f"--master-port={port}", "-m", "envcheck",
                "cluster", "--device", "cpu", "--json", "--root", str(ROOTS / root), "--sizes", "", "--no-links",
                "--timeout", "30"]

    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo", PYTHONWARNINGS="ignore", PYTHONPATH=str(REPO))
    env.pop("RANK_TABLE_FILE", None)
    n1 = subprocess.Popen(argv(1, "net-node-b"), env=env, cwd=str(REPO), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    try:
        p0 = subprocess.run(argv(0, "net-healthy"), check=False, env=env, cwd=str(REPO), capture_output=True, text=True,
                            timeout=120)
        n1.communicate(timeout=60)
    finally:
        n1.kill()
    assert p0.returncode == 1, p0.stderr[-3000:]
    found = {f["code"]: f for f in json.loads(p0.stdout)["findings"] if f["code"] in ("EC630", "EC631")}
    assert found["EC630"]["status"] == "fail"
    assert found["EC630"]["title"] == (f"1 of 18 address(es) unreachable: "
                                       f"node0@{HOST} device 3 -> node1@{HOST} 10.86.2.83")
    assert found["EC631"]["status"] == "fail" and f"node1@{HOST} has tls switch 1" in found["EC631"]["title"]
