"""Measure envcheck.preflight() and `envcheck cluster` on this machine (gloo, 127.0.0.1).

Prints: preflight() time inside each rank for 2 and 4 ranks (the call itself, after `import torch`),
the wall time of the whole launch, how fast a wrong WORLD_SIZE is reported (timeout 5 s; torch's
own env:// rendezvous would wait for its 30-minute default), and `envcheck cluster` under torchrun.
Run: .venv/bin/python benchmarks/bench_preflight.py
"""
from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPT = """
import json, sys, time
import torch, envcheck
t0 = time.perf_counter()
try:
    envcheck.preflight(timeout=float(sys.argv[1]), device="cpu")
    ok = True
except envcheck.PreflightError as exc:
    ok = False
print(json.dumps({"ok": ok, "seconds": time.perf_counter() - t0}))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(n: int, world: int, timeout: float) -> tuple[list[dict], float]:
    port = free_port()
    t0 = time.perf_counter()
    procs = []
    for r in range(n):
        env = dict(os.environ, WORLD_SIZE=str(world), RANK=str(r), LOCAL_RANK=str(r), LOCAL_WORLD_SIZE=str(n),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), PYTHONWARNINGS="ignore", GLOO_SOCKET_IFNAME="lo")
        procs.append(subprocess.Popen([sys.executable, "-c", SCRIPT, str(timeout)], env=env, cwd=str(REPO),
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
    outs = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
    return outs, time.perf_counter() - t0


def cluster(nproc: int) -> float:
    argv = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}", "--master-addr=127.0.0.1",
            f"--master-port={free_port()}", "-m", "envcheck", "cluster", "--device", "cpu", "--json",
            "--sizes", "1K,64K,1M", "--link-bytes", "64K"]
    t0 = time.perf_counter()
    p = subprocess.run(argv, cwd=str(REPO), capture_output=True, text=True,
                       env=dict(os.environ, PYTHONWARNINGS="ignore", GLOO_SOCKET_IFNAME="lo"))
    assert p.returncode == 0, p.stderr[-2000:]
    return time.perf_counter() - t0


def main() -> None:
    print(f"machine: {os.cpu_count()} CPU(s), python {sys.version.split()[0]}")
    for n in (2, 4):
        runs = [launch(n, n, 30.0) for _ in range(3)]
        calls = [o["seconds"] for outs, _ in runs for o in outs]
        walls = [w for _, w in runs]
        assert all(o["ok"] for outs, _ in runs for o in outs)
        print(f"preflight() {n} ranks: call median {statistics.median(calls):.2f} s (max {max(calls):.2f} s); "
              f"launch wall median {statistics.median(walls):.2f} s incl. interpreter + torch import")
    outs, wall = launch(2, 3, 5.0)
    assert not any(o["ok"] for o in outs)
    print(f"wrong WORLD_SIZE (3 declared, 2 launched, timeout 5 s): reported after "
          f"{max(o['seconds'] for o in outs):.2f} s in the ranks, {wall:.2f} s wall")
    for n in (2, 4):
        print(f"envcheck cluster, torchrun --nproc-per-node {n}: {cluster(n):.2f} s wall")


if __name__ == "__main__":
    main()
