"""Measure the smoke suites on this machine (plain script: python benchmarks/bench_smoke.py).

Prints:
- wall time of `envcheck smoke --device cpu` (the whole op suite + parity run, as a real child;
  target < 20 s), and the part of it that is child start-up: the importability probe's
  `import torch` and the worker's start (import torch + device set-up), each paid once;
- wall time of `envcheck smoke collective --device cpu --nproc 2` (gloo, default 1 KiB..64 MiB sweep)
  and the all_reduce busbw at the largest size.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def envcheck(*argv: str) -> tuple[float, dict]:
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "envcheck", *argv, "--json"], cwd=REPO, capture_output=True,
                         text=True, timeout=900)
    wall = time.monotonic() - t0
    if out.returncode not in (0, 1):
        raise SystemExit(f"envcheck {' '.join(argv)} failed ({out.returncode}):\n{out.stderr}")
    return wall, json.loads(out.stdout)


def finding(doc: dict, code: str) -> dict:
    return next(f for f in doc["findings"] if f["code"] == code)


def bare_import_torch() -> float:
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-c", "import torch"], capture_output=True, timeout=300, check=True)
    return time.monotonic() - t0


def main() -> int:
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    print(f"bare `python -c 'import torch'`:                 {bare_import_torch():6.2f} s")
    wall, doc = envcheck("smoke", "--device", "cpu")
    ops = finding(doc, "EC403")
    outcomes = ops["data"].get("outcomes", [])
    in_cases = sum(o["seconds"] for o in outcomes)
    parity = finding(doc, "EC407")
    startup = ops["data"].get("startup_seconds", [])
    torch_import = finding(doc, "EC401")["title"]
    print(f"`envcheck smoke --device cpu` wall:               {wall:6.2f} s  (target < 20 s; "
          f"{len(outcomes)} op tests {ops['status']}, parity {parity['status']})")
    print(f"  importability probe: {torch_import}")
    print(f"  worker start-up (import torch + device), once:  {sum(startup):6.2f} s  ({len(startup)} worker)")
    print(f"  time inside the op cases:                       {in_cases:6.2f} s")
    wall, doc = envcheck("smoke", "collective", "--device", "cpu", "--nproc", "2")
    bw = finding(doc, "EC413")
    rows = [r for r in bw["data"]["rows"] if r["op"] == "all_reduce"]
    big = max(rows, key=lambda r: r["bytes"])
    print(f"`envcheck smoke collective --nproc 2` (gloo) wall: {wall:6.2f} s  ({len(bw['data']['rows'])} sweep rows, "
          f"1K..64M x 4 collectives; {bw['status']})")
    print(f"  all_reduce 64M: {big['seconds'] * 1e3:.1f} ms, algbw {big['algbw']:.2f} GB/s, "
          f"busbw {big['busbw']:.2f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
