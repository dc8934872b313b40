"""Wall time of `envcheck matrix check ...` as a cold subprocess (target: median under 0.3 s).

Also times the in-process pieces (import of envcheck.matrix, YAML load, judging one environment).
Run: .venv/bin/python benchmarks/bench_matrix.py [runs]
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ARGV = ["matrix", "check", "--cann", "8.0.RC2", "--driver", "24.1.rc2", "--torch", "2.1.0+cpu",
        "--torch-npu", "2.1.0.post6", "--python", "3.10.12", "--chip", "910B4", "--json"]


def cold(runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "envcheck", *ARGV], capture_output=True, cwd=str(REPO))
        times.append(time.perf_counter() - t)
        assert p.returncode == 0, p.stderr.decode()[-500:]
    return times


def baseline(runs: int) -> list[float]:
    """A bare interpreter start, for scale."""
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], capture_output=True)
        times.append(time.perf_counter() - t)
    return times


def warm() -> dict[str, float]:
    code = ("import time; t=time.perf_counter(); import envcheck.matrix as m; import envcheck.plan as plan; "
            "t1=time.perf_counter(); "
            "mx=m.load(); t2=time.perf_counter(); "
            "f=plan.hypothetical_facts(cann='8.0.RC2', torch='2.1.0', torch_npu='2.1.0.post6', python='3.10'); "
            "plan.judge(f, mx); t3=time.perf_counter(); print(t1-t, t2-t1, t3-t2)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(REPO)).stdout.split()
    return dict(zip(("import envcheck.matrix", "load matrix.yaml", "judge one environment"), map(float, out)))


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    cold(1)  # fill the OS file cache
    t = cold(runs)
    b = baseline(runs)
    print(f"envcheck matrix check (cold subprocess, {runs} runs): median {statistics.median(t):.3f} s, "
          f"min {min(t):.3f} s, max {max(t):.3f} s  (target < 0.300 s)")
    print(f"bare `python -c pass` for scale:              median {statistics.median(b):.3f} s")
    for name, secs in warm().items():
        print(f"  {name:<24} {secs * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
