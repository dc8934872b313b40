"""`envcheck cluster`, launched by torchrun: preflight on every rank, then rank 0 reports the cluster.

    torchrun --nproc-per-node 8 [--nnodes 2 --node-rank K --master-addr A --master-port P] -m envcheck cluster

Other ranks print nothing, or one line on stderr when they fail.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from envcheck.errors import UsageError

GRACE = 2.0


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
    from envcheck.cluster.survey import survey

    rank = int(os.environ.get("RANK", "0"))
    try:
        session = pf.start(timeout=args.timeout, device=args.device, root=args.root, matrix=args.matrix)
        session.findings += survey(session, sizes, 0 if args.no_links else link_bytes, args.timeout)
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
    """--select / --ignore on findings (code prefix or slug), the registry's rule."""
    from envcheck.checks.registry import wanted

    return [f for f in findings if wanted(f.code, f.slug, args.select, args.ignore)]


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
