"""`envcheck` / `envcheck check`: probe, run every default check, render the report."""
from __future__ import annotations

import argparse

from envcheck.model import Facts


def collect_facts(args: argparse.Namespace) -> Facts:
    """Facts from a saved snapshot (--facts) or from this machine (--root, --python)."""
    from envcheck.probe.snapshot import gather

    return gather(facts_file=getattr(args, "facts", None), root=args.root, python=args.python,
                  timeout=getattr(args, "timeout", None))


def run(args: argparse.Namespace) -> int:
    from envcheck.checks import all_checks, runner
    from envcheck.checks.registry import Context, select, wanted
    from envcheck.commands._output import emit

    facts = collect_facts(args)
    opts = {k: getattr(args, k, None) for k in ("smoke", "device", "timeout", "python", "root")}
    ctx = Context(facts=facts, matrix_path=args.matrix, options=opts)
    if args.matrix:  # a user-given matrix that does not load is bad input: one line, exit 2
        from envcheck import matrix

        ctx.loaded_matrix = matrix.load(args.matrix)
    checks = [c for c in all_checks() if c.default or args.select]
    checks = select(checks, args.select, args.ignore)
    report = runner.run(checks, ctx, command="check")
    # A driver check (EC401 runs the smoke suite) may emit findings of sibling codes: honour
    # --select / --ignore for those too.
    report.findings = [f for f in report.findings if wanted(f.code, f.slug, args.select, args.ignore)]
    return emit(report, args)
