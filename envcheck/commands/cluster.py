"""`envcheck cluster`, launched by torchrun: preflight on every rank, then rank 0 reports the cluster.

    torchrun --nproc-per-node 8 [--nnodes 2 --node-rank K --master-addr A --master-port P] -m envcheck cluster

Other ranks print nothing, or one line on stderr when they fail.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

from envcheck.errors import UsageError

GRACE = 2.0
LINK_TIMEOUT = 10.0  # seconds one pair may take before the link counts as dead
SKIP_LINKS_RANK = "ENVCHECK_TEST_SKIP_LINKS_RANK"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from envcheck.commands import _options as opt

    opt.target(p, python=False, facts=False)
    opt.matrix(p)
    opt.report(p)
    p.add_argument("--device", choices=("auto", "npu", "cuda", "cpu"), default="auto",
                   help="device / backend: npu→hccl, cuda→nccl, cpu→gloo (default: auto)")
    p.add_argument("--timeout", type=float, metavar="SEC", default=60.0,
                   help="deadline for joining, each stage and each link (default: 60)")
    p.add_argument("--sizes", metavar="LIST", default="1K,1M,16M",
                   help="collective sweep sizes, comma-separated (e.g. 1K,64M; '' skips the sweep)")
    p.add_argument("--link-bytes", metavar="SIZE", default="1M", help="buffer size of the pairwise link pass")
    p.add_argument("--no-links", action="store_true", help="skip the pairwise send/recv pass")


def _sizes(text: str) -> list[int]:
    from envcheck.smoke.bandwidth import parse_size

    try:
        return [parse_size(s) for s in text.split(",") if s.strip()]
    except ValueError as exc:
        raise UsageError(f"--sizes {text!r}: {exc}") from None


def run(args: argparse.Namespace) -> int:
    from envcheck.checks import launchenv as envvars

    if not envvars.launched(os.environ):
        raise UsageError("run under torchrun: `torchrun --nproc-per-node N -m envcheck cluster` "
                         "(WORLD_SIZE / RANK are not set)")
    if args.timeout <= 0:
        raise UsageError(f"--timeout {args.timeout:g}: must be a positive number of seconds")
    sizes = _sizes(args.sizes)
    link_bytes = _sizes(args.link_bytes)[0] if args.link_bytes else 0
    from envcheck.cluster import preflight as pf

    rank = int(os.environ.get("RANK", "0"))
    try:
        session = pf.start(timeout=args.timeout, device=args.device, root=args.root, matrix=args.matrix)
        session.findings += _extras(session, sizes, 0 if args.no_links else link_bytes, args.timeout)
    except pf.PreflightError as exc:
        return _failed(exc, rank, args)
    if session.rank != 0:
        return 0  # rank 0 carries the verdict; a non-zero exit here would make torchrun kill rank 0
    from envcheck.commands._output import emit

    report = pf.make_report(session)
    report.command = "cluster"
    report.findings = selected(report.findings, args)
    return emit(report, args)


def selected(findings: list, args: argparse.Namespace) -> list:
    """--select / --ignore on findings (code prefix or slug), as for checks."""
    def hit(f: Any, pats: list) -> bool:
        return any(f.code.startswith(p.upper()) or f.slug == p for p in pats)

    return [f for f in findings if (not args.select or hit(f, args.select)) and not hit(f, args.ignore)]


def _failed(exc: Any, rank: int, args: argparse.Namespace) -> int:
    """Rank 0 prints a report holding the one finding; every other rank one line on stderr."""
    if rank != 0:
        print(f"envcheck cluster: rank {rank}: {exc}", file=sys.stderr)
        time.sleep(GRACE)  # torchrun kills every rank when one fails: let rank 0 print its report first
        return 1
    from envcheck.checks import finding
    from envcheck.commands._output import emit
    from envcheck.model import Facts, Report, Status
    from envcheck.version import __version__

    if exc.report is not None:
        report = exc.report
    else:
        code = exc.code or "EC507"
        report = Report(Facts(), [finding(code, Status.FAIL, str(exc).split(": ", 1)[-1].rsplit(" [", 1)[0],
                                          kb=tuple(exc.kb), data={"ranks": exc.ranks})],
                        envcheck_version=__version__)
    report.command = "cluster"
    emit(report, args)
    return 1


def _extras(session: Any, sizes: list[int], link_bytes: int, timeout: float) -> list:
    """Sweep, links and the slowest rank; every rank takes part, rank 0 judges.

    Results travel over the store, not the process group: after a dead link the group may be
    unusable, the store is not.
    """
    from envcheck.cluster import links
    from envcheck.cluster.preflight import stage
    from envcheck.smoke.collective import aggregate, run_collectives

    dev, roll = session.device.torch_device, session.roll
    stage(roll, "sweep")
    mine: dict[str, Any] = {"compute_s": _compute(dev), "sweep": None}
    if sizes:
        mine["sweep"] = run_collectives(dev, sizes=sizes, ops=("all_reduce", "all_gather"), iters=3)
    names = {p["rank"]: f"rank {p['rank']} ({p['node']})" for p in session.payloads}
    todo = links.pairs(links.units(session.payloads)) if link_bytes else []
    link_timeout = min(timeout, LINK_TIMEOUT)
    stage(roll, "links")
    skip = os.environ.get(SKIP_LINKS_RANK) == str(session.rank)  # test hook: a rank that never answers
    mine["links"] = {} if skip else links.run_pairs(session.rank, todo, link_bytes, dev, link_timeout)
    mine["net"], net_budget = _reach(session)
    roll.publish("cluster", mine)
    # a rank may spend up to link_timeout on each of its pairs (and its node's pings) before it gets here
    stage(roll, "report", timeout + link_timeout * len(todo) + net_budget)
    if session.rank != 0:
        return []
    everyone = roll.collect("cluster")
    out = []
    if sizes:
        out.append(_sweep_finding(aggregate([e["sweep"] for e in everyone]), names))
    if todo:
        out.append(links.judge([e["links"] for e in everyone], todo, link_bytes, names, link_timeout))
    out.append(_slowest(session, [e["compute_s"] for e in everyone], names))
    from envcheck.cluster.netcheck import reach_findings

    out += reach_findings([r for e in everyone for r in (e.get("net") or [])])
    return out


def _reach(session: Any) -> tuple[list, float]:
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


def _compute(dev: Any) -> float:
    """A fixed small matmul workload: the same on every rank, so its time ranks the ranks."""
    import torch

    a = torch.ones(128, 128, device=dev)
    t0 = time.perf_counter()
    for _ in range(20):
        a = (a @ a) / 128.0
    float(a[0, 0].item())
    return time.perf_counter() - t0


def _sweep_finding(agg: dict, names: dict) -> Any:
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


def _slowest(session: Any, compute: list[float], names: dict) -> Any:
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
    status = Status.WARN if len(compute) > 2 and compute[slow] > 3 * med and compute[slow] - med > 0.05 else Status.OK
    return finding("EC507", status, title, evidence=[ev(names.get(r, str(r)), f"{c * 1000:.1f} ms")
                                                    for r, c in enumerate(compute)], data=data)
