"""Collective smoke tests to run INSIDE an initialised process group (a spawned rank or torchrun).

Public API (used by `envcheck smoke collective` and by the cluster checks under torchrun)::

    import torch.distributed as dist
    from envcheck.smoke.collective import run_collectives, aggregate
    dist.init_process_group(...)                              # hccl / nccl / gloo, already done
    mine = run_collectives("npu:0", sizes=[1 << 10, 1 << 20])  # this rank's checks and timings
    everyone = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, mine)                    # or write one JSON file per rank
    summary = aggregate(everyone)                             # correctness of EVERY rank, busbw

Correctness uses integer-valued float32 data so results are exact on every backend. Timings are
per rank; `aggregate` takes the slowest rank's time per (op, size) and derives algbw / busbw with
the nccl-tests factors (`envcheck.smoke.bandwidth`).
"""
from __future__ import annotations

import socket
import time
import traceback
from collections.abc import Iterable, Sequence
from typing import Any, Callable

from envcheck.smoke import bandwidth

CHECK_OPS = ("all_reduce", "all_gather", "broadcast", "reduce_scatter", "barrier")
SWEEP_OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast")
Progress = Callable[[str], None]


def run_collectives(device: Any = None, sizes: Sequence[int] | None = None,
                    ops: Sequence[str] = SWEEP_OPS, iters: int = 5, warmup: int = 1,
                    progress: Progress | None = None, hang_before: str | None = None) -> dict[str, Any]:
    """Run correctness checks then a size sweep in the current default process group.

    device: where tensors live ('npu:0', 'cuda:1', 'cpu' or a torch.device); default: cpu for gloo,
    else the current accelerator of the backend. sizes: sweep sizes in bytes (S as nccl-tests defines
    it; default 1 KiB..64 MiB doubling; [] skips the sweep). progress(phase) is called before each
    step, so a launcher can tell which rank is stuck where. `hang_before` is a test hook: sleep
    forever before that phase. Returns this rank's plain-dict result (JSON-serialisable):
    {rank, world, backend, device, host, checks: [{op, ok, error, note}], sweep: [row...]}.
    """
    import torch.distributed as dist

    dev = _torch_device(device, dist.get_backend())
    rank, world = dist.get_rank(), dist.get_world_size()
    step = _stepper(progress, hang_before)
    out: dict[str, Any] = {"rank": rank, "world": world, "backend": str(dist.get_backend()),
                           "device": str(dev), "host": socket.gethostname(), "checks": [], "sweep": []}
    for op in CHECK_OPS:
        step(op)
        out["checks"].append(_check(op, dev, rank, world))
    sizes = bandwidth.size_sweep() if sizes is None else list(sizes)
    for op in ops:
        for size in sizes:
            step(f"sweep {op} {bandwidth.human_size(size)}")
            out["sweep"].append(_timed(op, size, dev, rank, world, iters, warmup))
    step("done")
    return out


def aggregate(results: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Merge per-rank results: a check is ok only if it is ok on EVERY rank; sweep rows use the
    slowest rank's time. Returns {world, checks: [{op, ok, failed_ranks, errors, note}], sweep: [...]}.
    """
    results = [r for r in results if r]
    world = max((int(r["world"]) for r in results), default=0)
    checks: dict[str, dict[str, Any]] = {}
    for r in sorted(results, key=lambda r: r["rank"]):
        for c in r.get("checks", ()):
            agg = checks.setdefault(c["op"], {"op": c["op"], "ok": True, "failed_ranks": [], "errors": {},
                                              "note": c.get("note", "")})
            if not c["ok"]:
                agg["ok"] = False
                agg["failed_ranks"].append(r["rank"])
                agg["errors"][str(r["rank"])] = c.get("error", "")
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    for r in results:
        for row in r.get("sweep", ()):
            key = (row["op"], int(row["bytes"]))
            cur = rows.setdefault(key, dict(row, ok=True, ranks=0))
            cur["seconds"] = max(float(cur["seconds"]), float(row["seconds"]))
            cur["ok"] = bool(cur["ok"] and row.get("ok", False))
            cur["ranks"] += 1
    sweep = []
    for (op, nbytes), row in rows.items():
        row["algbw"] = bandwidth.algbw(nbytes, row["seconds"])
        row["busbw"] = bandwidth.busbw(op, nbytes, row["seconds"], world)
        sweep.append(row)
    return {"world": world, "checks": list(checks.values()), "sweep": sweep}


# ---- internals -------------------------------------------------------------------------------

def _torch_device(device: Any, backend: Any) -> Any:
    import torch

    if device is not None:
        return torch.device(device)
    if str(backend) == "gloo":
        return torch.device("cpu")
    kind = "npu" if str(backend) == "hccl" else "cuda"
    return torch.device(kind, getattr(torch, kind).current_device())


def _stepper(progress: Progress | None, hang_before: str | None) -> Progress:
    def step(phase: str) -> None:
        if hang_before and phase.startswith(hang_before):
            while True:  # test hook: a rank that never arrives
                time.sleep(3600)
        if progress:
            progress(phase)

    return step


def _sync(dev: Any) -> None:
    import torch

    if dev.type != "cpu":
        getattr(torch, dev.type).synchronize()


def _check(op: str, dev: Any, rank: int, world: int) -> dict[str, Any]:
    """One correctness check on this rank; exceptions become ok=False with the error text."""
    try:
        ok, note = _CHECKS[op](dev, rank, world)
        _sync(dev)
        return {"op": op, "ok": bool(ok), "error": "" if ok else "wrong result", "note": note}
    except Exception as exc:  # the error text is the evidence; keep going
        return {"op": op, "ok": False, "error": "".join(traceback.format_exception_only(type(exc), exc)).strip(),
                "note": ""}


def _count(nbytes: int, world: int) -> int:
    """float32 elements of S bytes, rounded down to a multiple of world (at least world)."""
    return max(world, (nbytes // 4) // world * world)


def _run(op: str, dev: Any, rank: int, world: int, count: int) -> tuple[Callable[[], None], Callable[[], bool], str]:
    """(launch, verify, note) for one collective over `count` float32 elements of S."""
    import torch
    import torch.distributed as dist

    note = ""
    if op == "all_reduce":
        t = torch.full((count,), float(rank + 1), device=dev)
        want = world * (world + 1) / 2

        def launch() -> None:
            t.fill_(float(rank + 1))
            dist.all_reduce(t)

        return launch, lambda: bool((t == want).all()), note
    if op == "all_gather":
        n = count // world
        src = torch.full((n,), float(rank), device=dev)
        outs = [torch.empty(n, device=dev) for _ in range(world)]
        return (lambda: dist.all_gather(outs, src),
                lambda: all(bool((o == i).all()) for i, o in enumerate(outs)), note)
    if op == "broadcast":
        t = torch.empty(count, device=dev)
        want_t = torch.arange(count, device=dev, dtype=t.dtype)  # exact in float32 below 2**24

        def launch() -> None:
            t.copy_(want_t) if rank == 0 else t.zero_()
            dist.broadcast(t, src=0)

        return launch, lambda: bool((t == want_t).all()), note
    if op == "reduce_scatter":
        n = count // world
        inp = torch.cat([torch.full((n,), float(rank * world + j), device=dev) for j in range(world)])
        out = torch.empty(n, device=dev)
        want = world * (world - 1) / 2 * world + world * rank
        launch = _reduce_scatter(inp, out, rank, world)
        note = getattr(launch, "note", "")
        return launch, lambda: bool((out == want).all()), note
    raise ValueError(f"unknown collective {op!r}")


def _reduce_scatter(inp: Any, out: Any, rank: int, world: int) -> Callable[[], None]:
    """Native reduce_scatter; on a backend without it (older gloo) an exact emulation via
    all_reduce + taking this rank's chunk, marked with a note so the table says so."""
    import torch.distributed as dist

    chunks = list(inp.chunk(world))

    def native() -> None:
        dist.reduce_scatter(out, chunks)

    if str(dist.get_backend()) != "gloo" or _gloo_has_reduce_scatter(out, chunks):
        return native

    def emulated() -> None:
        full = inp.clone()
        dist.all_reduce(full)
        out.copy_(full.chunk(world)[rank])

    emulated.note = "emulated: this gloo has no reduce_scatter; all_reduce + own chunk"  # type: ignore[attr-defined]
    return emulated


_GLOO_RS: dict[str, bool] = {}


def _gloo_has_reduce_scatter(out: Any, chunks: list) -> bool:
    """Probe once per process; every rank probes at the same point, so the attempt stays collective."""
    import torch.distributed as dist

    if "ok" not in _GLOO_RS:
        try:
            dist.reduce_scatter(out, chunks)
            _GLOO_RS["ok"] = True
        except RuntimeError:
            _GLOO_RS["ok"] = False
    return _GLOO_RS["ok"]


def _check_barrier(dev: Any, rank: int, world: int) -> tuple[bool, str]:
    import torch.distributed as dist

    dist.barrier()
    return True, ""


def _check_op(op: str) -> Callable[[Any, int, int], tuple[bool, str]]:
    def run(dev: Any, rank: int, world: int) -> tuple[bool, str]:
        launch, verify, note = _run(op, dev, rank, world, 1024 * world)
        launch()
        _sync(dev)
        return verify(), note

    return run


_CHECKS = {op: _check_op(op) for op in CHECK_OPS if op != "barrier"}
_CHECKS["barrier"] = _check_barrier


def _timed(op: str, size: int, dev: Any, rank: int, world: int, iters: int, warmup: int) -> dict[str, Any]:
    """One sweep row: a verified warm-up run, then `iters` timed runs (synchronised, barrier first)."""
    import torch.distributed as dist

    count = _count(size, world)
    nbytes = count * 4
    launch, verify, note = _run(op, dev, rank, world, count)
    ok = True
    for _ in range(max(1, warmup)):
        launch()
        _sync(dev)
        ok = ok and verify()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(max(1, iters)):
        launch()
    _sync(dev)
    seconds = (time.perf_counter() - t0) / max(1, iters)
    return {"op": op, "bytes": nbytes, "seconds": seconds, "algbw": bandwidth.algbw(nbytes, seconds),
            "busbw": bandwidth.busbw(op, nbytes, seconds, world), "ok": ok, "note": note}
