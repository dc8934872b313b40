"""Pairwise send/recv between node leaders (or between ranks on one node): the slowest or dead link.

Runs inside the process group. Every rank walks the same list of pairs in the same order; only the
two ranks of a pair act, so pairs run one after another. The lower rank sends a buffer and waits for
it to come back (a round trip); a wait longer than the timeout marks the link dead.
"""
from __future__ import annotations

import statistics
import time
from datetime import timedelta
from typing import Any, Mapping, Sequence

from envcheck.checks import finding
from envcheck.model import Finding, Status, ev


def units(payloads: Sequence[Mapping[str, Any]]) -> list[int]:
    """Ranks to test: the lowest rank of each node when there are several nodes, else every rank."""
    leaders: dict[str, int] = {}
    for p in sorted(payloads, key=lambda p: p["rank"]):
        leaders.setdefault(p["node"], p["rank"])
    return sorted(leaders.values()) if len(leaders) > 1 else sorted(p["rank"] for p in payloads)


def pairs(ranks: Sequence[int]) -> list[tuple[int, int]]:
    return [(a, b) for i, a in enumerate(ranks) for b in ranks[i + 1:]]


def run_pairs(rank: int, todo: Sequence[tuple[int, int]], nbytes: int, device: Any, timeout: float,
              iters: int = 3) -> dict[str, float | None]:
    """This rank's share of the pass: {'a-b': best round-trip seconds, or None if it timed out}."""
    import torch

    buf = torch.ones(max(1, nbytes // 4), dtype=torch.float32, device=device)
    out: dict[str, float | None] = {}
    for a, b in todo:
        if rank not in (a, b):
            continue
        peer = b if rank == a else a
        best: float | None = None
        for _ in range(iters):
            t0 = time.perf_counter()
            ok = _exchange(buf, peer, first=(rank == a), timeout=timeout)
            if not ok:
                best = None
                break
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
        if rank == a:
            out[f"{a}-{b}"] = best
    return out


def _exchange(buf: Any, peer: int, first: bool, timeout: float) -> bool:
    import torch.distributed as dist

    td = timedelta(seconds=timeout)
    try:
        if first:
            dist.isend(buf, peer).wait(td)
            dist.irecv(buf, peer).wait(td)
        else:
            dist.irecv(buf, peer).wait(td)
            dist.isend(buf, peer).wait(td)
    except RuntimeError:
        return False
    return True


def judge(results: Sequence[Mapping[str, float | None]], todo: Sequence[tuple[int, int]], nbytes: int,
          names: Mapping[int, str], timeout: float) -> Finding:
    """EC506 from everyone's pair timings: a dead link fails, one much slower than the median warns."""
    times: dict[str, float | None] = {}
    for r in results:
        times.update(r or {})
    label = lambda key: " <-> ".join(names.get(int(x), f"rank {x}") for x in key.split("-"))  # noqa: E731
    rows = [{"pair": f"{a}-{b}", "link": label(f"{a}-{b}"),
             "ms": None if times.get(f"{a}-{b}") is None else round(times[f"{a}-{b}"] * 1000, 3),  # type: ignore[operator]
             "gbps": None if not times.get(f"{a}-{b}") else round(2 * nbytes / times[f"{a}-{b}"] / 1e9, 3)}  # type: ignore[operator]
            for a, b in todo]
    data = {"bytes": nbytes, "links": rows}
    evidence = [ev(r["link"], "no answer" if r["ms"] is None else f"{r['ms']} ms round trip, {r['gbps']} GB/s")
                for r in rows]
    def mk(st: Status, title: str, **kw: Any) -> Finding:
        return finding("EC506", st, title, evidence=tuple(evidence), data=data, **kw)

    if not rows:
        return mk(Status.SKIP, "only one rank: no links to test")
    dead = [r for r in rows if r["ms"] is None]
    if dead:
        return mk(Status.FAIL, "dead link(s): " + "; ".join(r["link"] for r in dead)
                  + f" (no round trip within {timeout:g} s)",
                  fix="check the NIC HCCL uses on both nodes (HCCL_SOCKET_IFNAME / HCCL_IF_IP), firewalls, "
                      "and `hccn_tool -i N -link -g` / `-net_health -g`")
    slow = max(rows, key=lambda r: r["ms"])
    med = statistics.median(r["ms"] for r in rows)
    title = f"slowest link: {slow['link']} {slow['ms']:.2f} ms round trip for {nbytes} bytes (median {med:.2f} ms)"
    if len(rows) > 2 and slow["ms"] > 4 * med and slow["ms"] - med > 5:
        return mk(Status.WARN, title + ": much slower than the others")
    return mk(Status.OK, title)
