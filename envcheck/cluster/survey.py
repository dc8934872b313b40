"""The cluster survey every rank runs under `envcheck cluster` after the preflight: a reference
workload, a collective sweep, pairwise links and device-NIC reachability; rank 0 judges (EC411,
EC506, EC507, EC630). Results travel over the store, not the process group: after a dead link the
group may be unusable, the store is not.
"""
from __future__ import annotations

import os
import statistics
import time
from typing import Any

from envcheck.model import Finding

LINK_TIMEOUT = 10.0  # seconds one pair may take before the link counts as dead
SKIP_LINKS_RANK = "ENVCHECK_TEST_SKIP_LINKS_RANK"
SLOW_FACTOR, SLOW_MARGIN_S = 3.0, 0.05
"""A rank is slow when its reference workload takes more than 3x the median and 50 ms more."""


def survey(session: Any, sizes: list[int], link_bytes: int, timeout: float) -> list[Finding]:
    """Sweep, links, reachability and the slowest rank; every rank takes part, rank 0 judges (the
    findings are returned on rank 0 only)."""
    from envcheck.cluster import links
    from envcheck.cluster.preflight import stage
    from envcheck.smoke.collective import aggregate, run_collectives

    dev, roll = session.device.torch_device, session.roll
    stage(roll, "sweep")
    mine: dict[str, Any] = {"compute_s": compute(dev), "sweep": None}
    if sizes:
        mine["sweep"] = run_collectives(dev, sizes=sizes, ops=("all_reduce", "all_gather"), iters=3)
    names = {p["rank"]: f"rank {p['rank']} ({p['node']})" for p in session.payloads}
    todo = links.pairs(links.units(session.payloads)) if link_bytes else []
    link_timeout = min(timeout, LINK_TIMEOUT)
    stage(roll, "links")
    skip = os.environ.get(SKIP_LINKS_RANK) == str(session.rank)  # test hook: a rank that never answers
    mine["links"] = {} if skip else links.run_pairs(session.rank, todo, link_bytes, dev, link_timeout)
    mine["net"], net_budget = reach(session)
    roll.publish("cluster", mine)
    # a rank may spend up to link_timeout on each of its pairs (and its node's pings) before it gets here
    stage(roll, "report", timeout + link_timeout * len(todo) + net_budget)
    if session.rank != 0:
        return []
    everyone = roll.collect("cluster")
    out = []
    if sizes:
        out.append(sweep_finding(aggregate([e["sweep"] for e in everyone]), names))
    if todo:
        out.append(links.judge([e["links"] for e in everyone], todo, link_bytes, names, link_timeout))
    out.append(slowest(session, [e["compute_s"] for e in everyone], names))
    from envcheck.cluster.netcheck import reach_findings

    out += reach_findings([r for e in everyone for r in (e.get("net") or [])])
    return out


def reach(session: Any) -> tuple[list, float]:
    """EC630 pings: the first rank of each node pings its peers' device and host IPs (bounded fan-out)."""
    from envcheck.cluster import netcheck

    me = next((p for p in session.payloads if p["rank"] == session.rank), None)
    if me is None or min(p["rank"] for p in session.payloads if p["node"] == me["node"]) != session.rank:
        return [], 0.0
    nodes: dict[str, dict[str, Any]] = {}
    for p in sorted(session.payloads, key=lambda p: p["rank"]):
        nodes.setdefault(p["node"], p["facts"])
    todo = netcheck.plan(me["node"], list(nodes.items()))
    facts = me["facts"]
    budget = netcheck.PING_TIMEOUT * (-(-len(todo) // netcheck.MAX_PARALLEL))
    tool = (facts.get("netdev") or {}).get("tool")
    return netcheck.run_pings(todo, tool, netcheck.find_ping(facts.get("root") or "/", os.environ), os.environ), budget


def compute(dev: Any) -> float:
    """A fixed small matmul workload: the same on every rank, so its time ranks the ranks."""
    import torch

    a = torch.ones(128, 128, device=dev)
    t0 = time.perf_counter()
    for _ in range(20):
        a = (a @ a) / 128.0
    float(a[0, 0].item())
    return time.perf_counter() - t0


def sweep_finding(agg: dict, names: dict) -> Any:
    from envcheck.cluster.gather import finding
    from envcheck.model import Status, ev
    from envcheck.smoke.bandwidth import average_busbw, format_table

    bad = [c for c in agg["checks"] if not c["ok"]]
    table = format_table(sorted(agg["sweep"], key=lambda r: (r["op"], r["bytes"])))
    data = {"world": agg["world"], "checks": agg["checks"], "sweep": agg["sweep"]}
    if bad:
        c = bad[0]
        who = ", ".join(names.get(int(r), f"rank {r}") for r in c["failed_ranks"])
        return finding("EC411", Status.FAIL, f"{c['op']} gave a wrong result or failed on {who}", detail=table,
                       evidence=[ev(f"rank {r}", e) for r, e in c["errors"].items()], data=data)
    bw = average_busbw(agg["sweep"], "all_reduce")
    return finding("EC411", Status.OK, f"collectives correct on all {agg['world']} ranks; all_reduce busbw "
                   f"{(bw or 0):.3f} GB/s (average over the sweep)", detail=table, data=data)


def slowest(session: Any, compute: list[float], names: dict) -> Any:
    from envcheck.cluster.gather import finding
    from envcheck.model import Status, ev

    arrivals = session.roll.arrivals("facts")
    first = min(arrivals.values()) if arrivals else 0.0
    lag = {r: t - first for r, t in arrivals.items()}
    slow = max(range(len(compute)), key=lambda r: compute[r])
    med = statistics.median(compute)
    late = max(lag, key=lambda r: lag[r]) if lag else slow
    data = {"compute_ms": [round(c * 1000, 2) for c in compute],
            "facts_lag_s": {str(r): round(v, 3) for r, v in lag.items()}}
    title = (f"slowest rank: {names.get(slow, slow)} took {compute[slow] * 1000:.1f} ms on the reference workload "
             f"(median {med * 1000:.1f} ms); last to arrive: {names.get(late, late)} (+{lag.get(late, 0):.2f} s)")
    slow_enough = compute[slow] > SLOW_FACTOR * med and compute[slow] - med > SLOW_MARGIN_S
    status = Status.WARN if len(compute) > 2 and slow_enough else Status.OK
    return finding("EC507", status, title, evidence=[ev(names.get(r, str(r)), f"{c * 1000:.1f} ms")
                                                    for r, c in enumerate(compute)], data=data)
