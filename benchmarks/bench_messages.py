"""Time the message catalogue (envcheck/kb/messages.py): loading it, and looking up error lines.

Usage: python benchmarks/bench_messages.py [--lines 1000] [--runs 5]

Lines: half are instances of catalogue templates (placeholders filled, behind a log header), half are error
lines of other software (no template). diagnose looks up only the error lines the scan kept (at most
MESSAGE_LINES of them) and only when no specific kb pattern matched, so this is its whole added cost; the
line-by-line scan of a big log (benchmarks/bench_diagnose.py) does not call it.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from envcheck.kb import messages  # noqa: E402

OTHER = [
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "ValueError: too many values to unpack (expected 2)",
    "[ERROR] RUNTIME(1234,python):2025-01-01-00:00:00.000.000 [stream.cc:1093] 1234 GetError: report error",
    "ImportError: libhccl.so: cannot open shared object file: No such file or directory",
    "torch.distributed.DistStoreError: Socket Timeout",
    "KeyError: 'model.layers.0.self_attn.q_proj.weight'",
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    t = time.perf_counter()
    book = messages.load_messages()
    load = time.perf_counter() - t
    rnd = random.Random(11)
    lines = []
    for i in range(a.lines):
        if i % 2:
            lines.append(rnd.choice(OTHER))
        else:
            m = rnd.choice(book.messages)
            body = m.template.replace("{}", str(rnd.randint(0, 99999)))
            lines.append(f"[rank{i % 8}]: [ERROR] 2025-03-26-17:01:03 (PID:159, Device:0, RankID:-1) {body}")
    best = float("inf")
    found = 0
    for _ in range(a.runs):
        t = time.perf_counter()
        found = sum(1 for ln in lines if book.lookup(ln))
        best = min(best, time.perf_counter() - t)
    size = messages.MESSAGES_PATH.stat().st_size
    print(f"catalogue: {len(book)} templates, {size / 1e6:.2f} MB, {len(book.index)} index words, "
          f"largest bucket {max(len(v) for v in book.index.values())}; load {load * 1000:.0f} ms")
    print(f"lookup: {a.lines} lines in {best * 1000:.1f} ms ({best / a.lines * 1e6:.1f} us/line, best of {a.runs}); "
          f"{found} with a template")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
