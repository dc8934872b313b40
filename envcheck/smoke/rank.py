"""One rank of `envcheck smoke collective`: init the process group, run the collectives, report.

Run by the launcher as ``python -m envcheck.smoke.rank --out DIR ...`` with RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR and MASTER_PORT in the environment (env:// rendezvous). Progress and the
result go to ``DIR/rank<R>.jsonl`` one JSON object a line, so the launcher can name a rank that
stops making progress. Test hook: ENVCHECK_SMOKE_TEST_HANG_RANK=R makes rank R sleep forever
before the phase in ENVCHECK_SMOKE_TEST_HANG_AT (default: all_reduce).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import socket
import sys
import time
import traceback
from typing import Any


class Log:
    """Append-only JSON lines, flushed and fsync-free (the launcher polls the file)."""

    def __init__(self, path: str) -> None:
        self.fh = open(path, "a", encoding="utf-8")

    def write(self, **obj: Any) -> None:
        obj.setdefault("t", time.time())
        self.fh.write(json.dumps(obj) + "\n")
        self.fh.flush()


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="envcheck.smoke.rank")
    p.add_argument("--out", required=True)
    p.add_argument("--device", default="cpu", help="npu | cuda | cpu (index = LOCAL_RANK)")
    p.add_argument("--sizes", default="", help="comma-separated byte sizes ('' = no sweep)")
    p.add_argument("--ops", default="all_reduce,all_gather,reduce_scatter,broadcast")
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--timeout", type=float, default=60.0, help="init_process_group timeout (s)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    rank = int(os.environ["RANK"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    log = Log(os.path.join(args.out, f"rank{rank}.jsonl"))
    log.write(phase="start", pid=os.getpid(), host=socket.gethostname())
    hang = os.environ.get("ENVCHECK_SMOKE_TEST_HANG_RANK")
    hang_at = os.environ.get("ENVCHECK_SMOKE_TEST_HANG_AT", "all_reduce") if hang == str(rank) else None
    try:
        result = _run(args, rank, local, log, hang_at)
    except BaseException as exc:  # report, then exit non-zero: the launcher names this rank
        log.write(phase="error", error="".join(traceback.format_exception_only(type(exc), exc)).strip(),
                  traceback=traceback.format_exc(limit=8))
        return 1
    log.write(phase="result", result=result)
    return 0


def _run(args: argparse.Namespace, rank: int, local: int, log: Log, hang_at: str | None) -> dict:
    from envcheck.smoke.devices import resolve

    if hang_at == "init":
        while True:
            time.sleep(3600)
    log.write(phase="import")
    adapter = resolve(args.device, index=local if args.device != "cpu" else 0)
    log.write(phase="init", device=str(adapter))
    import torch.distributed as dist

    dist.init_process_group(adapter.backend, init_method="env://",
                            timeout=datetime.timedelta(seconds=args.timeout))
    log.write(phase="initialised", backend=str(dist.get_backend()))
    try:
        from envcheck.smoke.collective import run_collectives

        sizes = [int(s) for s in args.sizes.split(",") if s]
        return run_collectives(adapter.torch_device, sizes=sizes, ops=[o for o in args.ops.split(",") if o],
                               iters=args.iters, progress=lambda ph: log.write(phase=ph),
                               hang_before=hang_at)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
