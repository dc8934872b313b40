"""`envcheck` / `envcheck check`: probe, run every default check, render the report."""
from __future__ import annotations

import argparse
import json
import os

from envcheck.errors import UsageError
from envcheck.model import Facts


def collect_facts(args: argparse.Namespace) -> Facts:
    """Facts from a saved snapshot (--facts) or from this machine (--root, --python)."""
    facts_file = getattr(args, "facts", None)
    if facts_file:
        try:
            with open(facts_file, encoding="utf-8") as fh:
                doc = json.load(fh)
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot read facts from {facts_file}: {exc}") from None
        if not isinstance(doc, dict):
            raise UsageError(f"{facts_file}: not an envcheck facts document")
        return Facts.from_dict(doc.get("facts", doc))
    if not os.path.isdir(args.root):
        why = "not a directory" if os.path.exists(args.root) else "no such directory"
        raise UsageError(f"--root {args.root}: {why}")
    from envcheck import probe

    return probe.collect(root=args.root, python=args.python,
                         timeout=getattr(args, "timeout", None) or 10.0)


def run(args: argparse.Namespace) -> int:
    from envcheck import runner
    from envcheck.checks import all_checks
    from envcheck.commands._output import emit
    from envcheck.registry import Context, select, wanted

    facts = collect_facts(args)
    opts = {k: getattr(args, k, None) for k in ("smoke", "device", "timeout", "python", "root")}
    ctx = Context(facts=facts, matrix_path=args.matrix, options=opts)
    if args.matrix:  # a user-given matrix that does not load is bad input: one line, exit 2
        from envcheck import matrix

        ctx._matrix = matrix.load(args.matrix)
    checks = [c for c in all_checks() if c.default or args.select]
    checks = select(checks, args.select, args.ignore)
    report = runner.run(checks, ctx, command="check")
    # A driver check (EC401 runs the smoke suite) may emit findings of sibling codes: honour
    # --select / --ignore for those too.
    report.findings = [f for f in report.findings if wanted(f.code, f.slug, args.select, args.ignore)]
    return emit(report, args)
