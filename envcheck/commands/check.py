"""`envcheck` / `envcheck check`: probe, run every default check, render the report."""
from __future__ import annotations

import argparse

from envcheck.model import Facts


def add_arguments(p: argparse.ArgumentParser, top: bool = False) -> None:
    """The default command's options; with top=True they are also the bare `envcheck`'s."""
    from envcheck.commands import _options as opt

    opt.target(p, top)
    opt.matrix(p, top)
    opt.report(p, top)
    d = (lambda v: v) if top else (lambda v: argparse.SUPPRESS)
    g = p.add_argument_group("checks")
    g.add_argument("--no-smoke", dest="smoke", action="store_const", const="none", default=d("quick"),
                   help="skip the smoke tests")
    g.add_argument("--full", dest="smoke", action="store_const", const="full", default=d("quick"),
                   help="run the whole smoke suite (default: a quick subset)")
    g.add_argument("--device", choices=("auto", "npu", "cuda", "cpu"), default=d("auto"),
                   help="device for smoke tests (default: auto)")
    g.add_argument("--timeout", type=float, metavar="SEC", default=d(None),
                   help="per-test / per-probe timeout in seconds")


def collect_facts(args: argparse.Namespace) -> Facts:
    """Facts from a saved snapshot (--facts) or from this machine (--root, --python)."""
    from envcheck.probe.snapshot import gather

    return gather(facts_file=getattr(args, "facts", None), root=args.root, python=args.python,
                  timeout=getattr(args, "timeout", None))


def run(args: argparse.Namespace) -> int:
    from envcheck.checks import runner, to_run
    from envcheck.checks.registry import Context
    from envcheck.commands._output import emit, streaming

    stream = streaming(args)
    facts = collect_facts(args)
    opts = {k: getattr(args, k, None) for k in ("smoke", "device", "timeout", "python", "root")}
    opts["replay"] = bool(getattr(args, "facts", None))  # judging a snapshot: nothing may run on this machine
    if stream is not None:  # on a TTY, a status line names each operator test as it finishes
        opts["progress"] = lambda o: stream.progress(f"smoke test {o.case}: {o.status} ({o.seconds:.1f} s)")
    ctx = Context(facts=facts, matrix_path=args.matrix, options=opts)
    if args.matrix:  # a user-given matrix that does not load is bad input: one line, exit 2
        from envcheck import matrix

        ctx.loaded_matrix = matrix.load(args.matrix)
    report = runner.run(to_run(args.smoke, args.select, args.ignore), ctx, command="check", frame=True,
                        listener=stream)
    return emit(report, args, stream=stream)
