"""Time `envcheck diagnose` against `grep -E -f <all kb patterns>` on a generated 500 MB log.

Usage: python benchmarks/bench_diagnose.py [--mb 500] [--runs 3] [--keep] [--docker]

The log mixes realistic CANN plog lines, MindSpore/torch_npu stdout and training-step lines, with
sparse needles (the kb's own pattern examples) at known lines. Both tools read the same file from
a warm page cache; the best of --runs wall times is compared. Peak RSS of `envcheck diagnose` is
measured in a fresh parent whose only child is envcheck (getrusage RUSAGE_CHILDREN).
The file lives under benchmarks/out/ and is deleted afterwards unless --keep is given.
--docker writes the same lines as a container's json-file log (one `{"log":...,"stream":...,"time":...}` record a
line), which diagnose decodes before matching and grep reads as it is.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from envcheck.kb.entries import load_kb  # noqa: E402

MEASURE = textwrap.dedent("""
    import resource, subprocess, sys, time
    t = time.perf_counter()
    p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE)
    wall = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    sys.stderr.write(f"{wall} {rss}\\n")
    sys.stdout.buffer.write(p.stdout)
    sys.exit(p.returncode)
""")

MODULES = ["RUNTIME", "HCCL", "GE", "ASCENDCL", "DRV", "PROFILING", "TEFUSION", "HCCP"]
FILES = ["stars_engine.cc", "hccl_comm.cc", "graph_manager.cc", "acl_rt.cpp", "npu_driver.cc", "stream.cc"]


def plog_line(rng: random.Random, i: int) -> str:
    mod = rng.choice(MODULES)
    lvl = rng.choice(["INFO", "INFO", "INFO", "DEBUG", "DEBUG", "WARNING", "EVENT"])
    pid = 2000000 + rng.randrange(5000)
    ts = f"2025-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}-{rng.randrange(24):02d}:" \
         f"{rng.randrange(60):02d}:{rng.randrange(60):02d}.{rng.randrange(1000):03d}.{rng.randrange(1000):03d}"
    src = f"{rng.choice(FILES)}:{rng.randrange(50, 3000)}"
    what = rng.choice([
        f"Task run ok, device_id={rng.randrange(8)}, stream_id={rng.randrange(64)}, task_id={i % 65536}",
        f"[Wait][LinkEstablish] link ok, role[{rng.randrange(2)}] rank[{rng.randrange(64)}]",
        f"aclrtMalloc size={rng.randrange(1, 1 << 30)} ok",
        f"rtStreamSynchronize: stream_id={rng.randrange(64)} done in {rng.random():.6f} s",
        f"LoadLib: path = /usr/local/Ascend/ascend-toolkit/8.0.RC3/opp/built-in/op_impl/lib{rng.randrange(99)}.so ok",
    ])
    return f"[{lvl}] {mod}({pid},python3):{ts} [{src}]{pid} {what}"


def stdout_line(rng: random.Random, i: int) -> str:
    return rng.choice([
        f"[2025-01-01 10:{rng.randrange(60):02d}:{rng.randrange(60):02d},{rng.randrange(1000):03d}] INFO "
        f"step {i}: loss={rng.uniform(1, 9):.4f} lr={rng.uniform(1e-5, 1e-3):.2e} grad_norm={rng.uniform(0, 5):.3f} "
        f"step_time={rng.uniform(0.3, 0.9):.3f}s tokens/s={rng.randrange(10000, 90000)}",
        f"[WARNING] ME({rng.randrange(99999)}:281473041023008,MainProcess):2024-12-06-12:23:11.112.000 "
        f"[mindspore/train/callback.py:{rng.randrange(999)}] epoch {i % 100} step {i} loss {rng.random():.5f}",
        f"[rank{rng.randrange(8)}]: iteration {i} | consumed samples {i * 32} | elapsed time per iteration (ms): "
        f"{rng.uniform(300, 900):.1f} | learning rate: {rng.uniform(1e-5, 1e-3):.3E}",
    ])


def needles(kb) -> list[tuple[str, str]]:
    out = []
    for e in kb.entries:
        for p in e.patterns:
            out.extend((e.id, x) for x in p.examples if "\n" not in x)
    return out


def docker_record(line: str) -> str:
    """`line` as docker's json-file log driver writes it (compact JSON, the newline kept in the text)."""
    return json.dumps({"log": line + "\n", "stream": "stdout", "time": "2025-01-01T10:00:00.000000000Z"},
                      separators=(",", ":"), ensure_ascii=False)


def generate(path: Path, mb: int, kb, seed: int = 7, docker: bool = False) -> tuple[int, list[tuple[int, str]]]:
    """Write the log; returns (lines, [(line, entry id)]) of the planted needles."""
    rng = random.Random(seed)
    lines = [plog_line(rng, i) if rng.random() < 0.7 else stdout_line(rng, i) for i in range(40000)]
    if docker:
        lines = [docker_record(x) for x in lines]
    block = ("\n".join(lines) + "\n").encode()
    per_block = len(lines)
    blocks = max(1, (mb << 20) // len(block))
    pool = needles(kb)
    planted: list[tuple[int, str]] = []
    with open(path, "wb") as fh:
        for b in range(blocks):
            if b % 3 == 1 and pool:  # sparse: a couple of needles every few blocks
                body = list(lines)
                for _ in range(2):
                    k = rng.randrange(per_block)
                    eid, text = rng.choice(pool)
                    body[k] = docker_record(text) if docker else text
                    planted.append((b * per_block + k + 1, eid))
                fh.write(("\n".join(body) + "\n").encode())
            else:
                fh.write(block)
    return blocks * per_block, planted


def best_of(runs: int, argv: list[str]) -> tuple[float, int, bytes]:
    best, rss, out = float("inf"), 0, b""
    for _ in range(runs):
        p = subprocess.run([sys.executable, "-c", MEASURE, *argv], capture_output=True, cwd=str(REPO))
        wall, r = p.stderr.decode().strip().splitlines()[-1].split()
        if float(wall) < best:
            best, out = float(wall), p.stdout
        rss = max(rss, int(r))
    return best, rss, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=500)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--kb", default=None, help="kb directory (default: the repository's kb/)")
    ap.add_argument("--docker", action="store_true", help="write the log as docker json-file records")
    args = ap.parse_args()
    kb = load_kb(args.kb)
    pats = [p.regex for e in kb.entries for p in e.patterns if p.regex]
    out_dir = REPO / "benchmarks" / "out"
    out_dir.mkdir(parents=True, exist_ok=True)
    log, pfile = out_dir / "diagnose-bench.log", out_dir / "kb-patterns.txt"
    pfile.write_text("\n".join(pats) + "\n", encoding="utf-8")
    try:
        t = time.perf_counter()
        total, planted = generate(log, args.mb, kb, docker=args.docker)
        size = log.stat().st_size
        kind = " of docker JSON records" if args.docker else ""
        print(f"log: {size / 1e6:.0f} MB{kind}, {total:,} lines, {len(planted)} needles "
              f"(generated in {time.perf_counter() - t:.1f} s); kb: {len(kb.entries)} entries, {len(pats)} patterns")
        subprocess.run(["cat", str(log)], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
        g_wall, _, g_out = best_of(args.runs, ["grep", "-E", "-f", str(pfile), str(log)])
        ec = [sys.executable, "-m", "envcheck", "diagnose", "--json", "--max-hits", "1000"]
        if args.kb:
            ec += ["--kb", args.kb]
        e_wall, e_rss, e_out = best_of(args.runs, ec + [str(log)])
        d = json.loads(e_out)
        found = {(h["line"], m["id"]) for m in d["matches"] for h in m["lines"]}
        missed = [p for p in planted if p not in found]
        g_lines = len(g_out.splitlines())
        print(f"grep -E -f patterns: {g_wall:.2f} s wall ({g_lines:,} matching lines)")
        print(f"envcheck diagnose:   {e_wall:.2f} s wall, peak RSS {e_rss / 1024:.0f} MB, engine {d['engine']}, "
              f"{sum(m['hits'] for m in d['matches']):,} entry hits in {len(d['matches'])} entries, "
              f"{len(planted) - len(missed)}/{len(planted)} needles found at their line")
        print(f"ratio envcheck/grep: {e_wall / g_wall:.2f}x (target <= 2x); peak RSS target < 200 MB; "
              f"cpus: {os.cpu_count()}")
        return 0 if not missed else 1
    finally:
        if not args.keep:
            log.unlink(missing_ok=True)
            pfile.unlink(missing_ok=True)
            shutil.rmtree(out_dir, ignore_errors=True) if not any(out_dir.iterdir()) else None


if __name__ == "__main__":
    raise SystemExit(main())
