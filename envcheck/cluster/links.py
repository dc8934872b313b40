"""Pairwise send/recv between node leaders (or between ranks on one node): the slowest or dead link.

Runs inside the process group. Every rank walks the same list of pairs in the same order; only the
two ranks of a pair act, so pairs run one after another. The lower rank sends a buffer and waits for
it to come back (a round trip); a wait longer than the timeout marks the link dead.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

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
            _wait(dist.isend(buf, peer), td)
            _wait(dist.irecv(buf, peer), td)
        else:
            _wait(dist.irecv(buf, peer), td)
            _wait(dist.isend(buf, peer), td)
    except RuntimeError:
        return False
    return True


def _wait(work: Any, td: timedelta) -> None:
    """Wait for one point-to-point op; torch returns None instead of a handle when this rank is not in the group."""
    if work is None:
        raise RuntimeError("this rank is not in the process group: nothing was sent or received")
    work.wait(td)


@dataclass(frozen=True)
class LinkRow:
    """One tested pair: its key ``a-b``, a readable label, the best round trip and the bandwidth it implies."""

    pair: str
    link: str
    ms: float | None
    gbps: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def link_rows(times: Mapping[str, float | None], todo: Sequence[tuple[int, int]], nbytes: int,
              names: Mapping[int, str]) -> list[LinkRow]:
    """One row per pair in `todo`; a pair with no time (timed out or never reported) has ms = gbps = None."""
    rows = []
    for a, b in todo:
        key = f"{a}-{b}"
        seconds = times.get(key)
        rows.append(LinkRow(pair=key, link=f"{names.get(a, f'rank {a}')} <-> {names.get(b, f'rank {b}')}",
                            ms=None if seconds is None else round(seconds * 1000, 3),
                            gbps=round(2 * nbytes / seconds / 1e9, 3) if seconds else None))
    return rows


def judge(results: Sequence[Mapping[str, float | None]], todo: Sequence[tuple[int, int]], nbytes: int,
          names: Mapping[int, str], timeout: float) -> Finding:
    """EC506 from everyone's pair timings: a dead link fails, one much slower than the median warns."""
    times: dict[str, float | None] = {}
    for r in results:
        times.update(r or {})
    rows = link_rows(times, todo, nbytes, names)
    data = {"bytes": nbytes, "links": [r.to_dict() for r in rows]}
    evidence = [ev(r.link, "no answer" if r.ms is None else f"{r.ms} ms round trip, {r.gbps} GB/s") for r in rows]

    def mk(st: Status, title: str, **kw: Any) -> Finding:
        return finding("EC506", st, title, evidence=tuple(evidence), data=data, **kw)

    if not rows:
        return mk(Status.SKIP, "only one rank: no links to test")
    dead = [r.link for r in rows if r.ms is None]
    if dead:
        return mk(Status.FAIL, "dead link(s): " + "; ".join(dead) + f" (no round trip within {timeout:g} s)",
                  fix="check the NIC HCCL uses on both nodes (HCCL_SOCKET_IFNAME / HCCL_IF_IP), firewalls, "
                      "and `hccn_tool -i N -link -g` / `-net_health -g`")
    timed = [(r.link, r.ms) for r in rows if r.ms is not None]
    slow_link, slow_ms = max(timed, key=lambda lm: lm[1])
    med = statistics.median(ms for _, ms in timed)
    title = f"slowest link: {slow_link} {slow_ms:.2f} ms round trip for {nbytes} bytes (median {med:.2f} ms)"
    if len(rows) > 2 and slow_ms > 4 * med and slow_ms - med > 5:
        return mk(Status.WARN, title + ": much slower than the others")
    return mk(Status.OK, title)
