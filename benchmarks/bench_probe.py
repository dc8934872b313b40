"""Time `envcheck probe --json` against `python -m torch.utils.collect_env` (wall clock, median of N runs).

Run: python benchmarks/bench_probe.py [--runs 5]
Prints each median, the ratio, and how many facts each reports: for envcheck the non-empty leaf
values of its facts JSON, for collect_env the `key: value` lines whose value is known (not
"N/A" / "Could not collect" / "None"). Both run as fresh processes, as a user would run them.
Targets (issue 2): probe < 0.5 s and at least 5x faster than collect_env.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
UNKNOWN = {"", "n/a", "could not collect", "none", "false", "no"}


def timed(argv: list[str], env: dict) -> tuple[float, str]:
    t0 = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=str(REPO))
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({p.returncode}): {p.stderr[-500:]}")
    return dt, p.stdout


def leaves(obj) -> int:
    if isinstance(obj, dict):
        return sum(leaves(v) for v in obj.values())
    if isinstance(obj, list):
        return sum(leaves(v) for v in obj)
    return 0 if obj is None or obj == "" else 1


def without_lscpu(text: str) -> str:
    """collect_env's output minus the verbatim `lscpu` block (CPU: ... up to the next blank line)."""
    out, skipping = [], False
    for line in text.splitlines():
        if line.strip() == "CPU:":
            skipping = True
        elif skipping and not line.strip():
            skipping = False
        if not skipping:
            out.append(line)
    return "\n".join(out)


def collect_env_facts(text: str) -> int:
    n = 0
    for line in text.splitlines():
        if ":" in line:
            key, _, val = line.partition(":")
            if key.strip() and val.strip().lower() not in UNKNOWN:
                n += 1
        elif line.startswith("[pip3] ") or line.startswith("[conda] "):
            n += 1
    return n


def median_run(argv: list[str], env: dict, runs: int) -> tuple[float, str]:
    times, out = [], ""
    for _ in range(runs):
        dt, out = timed(argv, env)
        times.append(dt)
    return statistics.median(times), out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    env = dict(os.environ)
    py = sys.executable
    probe_t, probe_out = median_run([py, "-m", "envcheck", "probe", "--json"], env, args.runs)
    ce_t, ce_out = median_run([py, "-m", "torch.utils.collect_env"], env, args.runs)
    # What the same probe reports on an Ascend machine: the 910B fixture tree plus a recorded npu-smi.
    fx_env = dict(env, PATH=f"{REPO / 'tests/data/npu-smi/bin'}:{env.get('PATH', '')}", NPU_SMI_FIXTURE="910b4")
    fx_t, fx_out = median_run([py, "-m", "envcheck", "probe", "--json", "--root",
                               str(REPO / "tests/data/roots/root-910b-8.2")], fx_env, args.runs)
    n_probe = leaves(json.loads(probe_out)["facts"])
    n_fx = leaves(json.loads(fx_out)["facts"])
    n_ce = collect_env_facts(ce_out)
    print(f"runs per command: {args.runs} (median wall time, fresh process each)")
    print(f"envcheck probe --json            {probe_t:6.3f} s   {n_probe:4d} facts (this machine)")
    print(f"envcheck probe --json --root 910B {fx_t:6.3f} s   {n_fx:4d} facts (fixture + npu-smi recording)")
    print(f"python -m torch.utils.collect_env {ce_t:6.3f} s   {n_ce:4d} facts "
          f"({collect_env_facts(without_lscpu(ce_out))} without its verbatim lscpu dump)")
    print(f"ratio collect_env / probe: {ce_t / probe_t:.1f}x   "
          f"(targets: probe < 0.5 s: {'met' if probe_t < 0.5 else 'MISSED'}; "
          f">= 5x: {'met' if ce_t / probe_t >= 5 else 'MISSED'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
