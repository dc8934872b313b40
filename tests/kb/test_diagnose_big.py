"""A 100 MB generated log with needles at known lines: every needle found at the right line."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from conftest import DATA, REPO

FIXTURE_KB = str(DATA / "diagnose" / "kb")
BLOCK_LINES = [
    "[INFO] RUNTIME(2082291,python3):2024-07-04-14:14:25.036.721 [stars_engine.cc:1321]2082291 "
    "ProcLogicCqReport:[INIT][DEFAULT]Task run ok, device_id=0, stream_id=2, task_id=7",
    "[INFO] HCCL(137309,python3):2025-12-24-16:19:45.416.014 [hccl_comm.cc:813] [137400][Wait] link ok rank[3]",
    "[2025-01-01 10:00:00,123] INFO step 1200: loss=2.3456 lr=1.0e-04 grad_norm=1.23 step_time=0.512s",
    "[DEBUG] GE(946748,main):2025-05-19-15:59:07.739.753 [host_cpu_engine.cc:288]947062 LoadLib: path ok",
    "[W compiler_depend.ts:51] Warning: The HCCL execution timeout is 1800s (function ProcessGroupHCCL)",
]
NEEDLES = {
    "fx-libs-missing": "ImportError: libhccl.so: cannot open shared object file: No such file or directory",
    "fx-npu-oom": "torch.OutOfMemoryError: NPU out of memory. Tried to allocate 72.00 MiB (NPU 0; 61.27 GiB total)",
    "fx-socket-timeout": "[ERROR] HCCL(137309,all_reduce_test):2025-12-24-16:19:45.416.014 "
                         "[hccl_socket_manager.cc:813] "
                         "[137400][Wait][LinkEstablish]wait socket establish timeout, role[0] rank[0] timeout[120 s]",
    "fx-cpu-fallback": "[W compiler_depend.ts:51] Warning: CAUTION: The operator 'torchvision::nms' is not currently "
                       "supported on the NPU backend and will fall back to run on the CPU. This may have performance "
                       "implications. (function npu_cpu_fallback)",
}
# peak RSS of the scanning child alone: a fresh parent whose only child is envcheck
MEASURE = textwrap.dedent("""
    import resource, subprocess, sys
    p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE)
    sys.stderr.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) + "\\n")
    sys.stdout.buffer.write(p.stdout)
    sys.exit(p.returncode)
""")


def write_log(path, target_bytes: int) -> dict[str, list[int]]:
    """Repeat a 1 MiB block of realistic lines; plant needles at chosen lines. Returns id -> lines."""
    unit = "\n".join(BLOCK_LINES) + "\n"
    block = unit * ((1 << 20) // len(unit))
    per_block = block.count("\n")
    blocks = max(1, target_bytes // len(block))
    total = blocks * per_block
    # the line that straddles the first 8 MiB read (the matcher's CHUNK), after the needle on line 1
    # shifted what follows; the socket needle is longer than any block line, so it crosses the edge
    edge = (8 << 20) - (len(NEEDLES["fx-libs-missing"]) - len(BLOCK_LINES[0]))
    straddle = edge // len(block) * per_block + block[:edge % len(block)].count("\n") + 1
    plan = {
        "fx-libs-missing": [1, total // 2],
        "fx-socket-timeout": [straddle],
        "fx-npu-oom": [per_block * 3 + 7, total - 1],
        "fx-cpu-fallback": [total],  # the very last line, no trailing newline
    }
    at = {line: NEEDLES[eid] for eid, lines in plan.items() for line in lines}
    data = block.encode()
    with open(path, "wb") as fh:
        for b in range(blocks):
            first, last = b * per_block + 1, (b + 1) * per_block
            hits = {n - first: t for n, t in at.items() if first <= n <= last}
            if not hits:
                fh.write(data)
                continue
            lines = block.split("\n")[:-1]
            for i, t in hits.items():
                lines[i] = t
            text = "\n".join(lines) + ("\n" if b < blocks - 1 else "")
            fh.write(text.encode())
    return plan


@pytest.mark.slow
def test_every_needle_found_at_its_line_in_100mb(tmp_path):
    log = tmp_path / "big.log"
    plan = write_log(log, 100 << 20)
    assert log.stat().st_size > 95 << 20
    with open(log, "rb") as fh:  # the planted line really crosses the 8 MiB read boundary
        fh.seek((8 << 20) - 300)
        around = fh.read(600)
    line = around[:300].rsplit(b"\n", 1)[1] + around[300:].split(b"\n", 1)[0]
    assert line.decode() == NEEDLES["fx-socket-timeout"]
    p = subprocess.run([sys.executable, "-c", MEASURE, sys.executable, "-m", "envcheck", "diagnose",
                        "--kb", FIXTURE_KB, "--json", "--max-hits", "10", str(log)],
                       capture_output=True, timeout=300, cwd=str(REPO))
    assert p.returncode == 1, p.stderr.decode()[-2000:]
    d = json.loads(p.stdout)
    found = {m["id"]: [h["line"] for h in m["lines"]] for m in d["matches"]}
    assert found == plan
    for m in d["matches"]:
        assert all(h["text"] == NEEDLES[m["id"]] for h in m["lines"])
    assert not d["stats"]["budget_exceeded"] and d["notes"] == []
    rss_mb = int(p.stderr.decode().strip().splitlines()[-1]) / 1024
    assert rss_mb < 200, f"peak RSS {rss_mb:.0f} MB"  # bounded memory, not a timing
