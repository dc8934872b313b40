"""Numbers from issues 13 and 14: time to the report's first line, whole-run time, redaction throughput.

- first line: `envcheck --no-smoke` and `envcheck` (default smoke) on this machine, read from a pty as a
  user's terminal would (issue 13: first line < 1 s; the audit saw 13-17 s of silence);
- redaction: `redact_value` on 10k / 20k / 40k / 1M characters of adversarial text (issue 14: the old
  URL-password pattern took 0.9 / 3.6 / 15.9 s on 10k / 20k / 40k, i.e. quadratic).

Run: .venv/bin/python benchmarks/bench_report.py [runs]
"""
from __future__ import annotations

import os
import pty
import select
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def first_line(argv: list[str], timeout: float = 300.0) -> tuple[float, float]:
    """(seconds to the first line on a pty, seconds to exit)."""
    master, slave = pty.openpty()
    env = dict(os.environ, COLUMNS="100", PYTHONPATH=str(REPO))
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "envcheck", *argv], stdout=slave, stderr=slave,
                            stdin=subprocess.DEVNULL, env=env, cwd=str(REPO))
    os.close(slave)
    first = None
    buf = b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.05)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                chunk = b""
            if not chunk and proc.poll() is not None:
                break
            buf += chunk
            if first is None and b"\n" in buf:
                first = time.perf_counter() - t0
        elif proc.poll() is not None:
            break
        if time.perf_counter() - t0 > timeout:
            proc.kill()
            break
    proc.wait()
    os.close(master)
    total = time.perf_counter() - t0
    return (first if first is not None else total), total


def redaction() -> dict[int, float]:
    from envcheck.redact import redact_value

    out = {}
    for n in (10_000, 20_000, 40_000, 1_000_000):
        texts = ["x" * n, ("aB3:" * n)[:n], ("a@b:c/ " * n)[:n], ("https://" * n)[:n]]
        t0 = time.perf_counter()
        for text in texts:
            redact_value(text)
        out[n] = time.perf_counter() - t0
    return out


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    for argv in (["--no-smoke"], []):
        got = [first_line(argv) for _ in range(runs)]
        f = statistics.median(x for x, _ in got)
        t = statistics.median(y for _, y in got)
        print(f"envcheck {' '.join(argv) or '(default)'}: first line {f:.2f} s, whole run {t:.2f} s "
              f"(median of {runs}; target: first line < 1 s)")
    sys.path.insert(0, str(REPO))
    for n, s in redaction().items():
        print(f"redact_value on 4 adversarial texts of {n:>9,} chars: {s:.3f} s")


if __name__ == "__main__":
    main()
