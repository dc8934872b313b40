"""`envcheck list`: every check code, slug, section and summary."""
from __future__ import annotations

import argparse
import json
import sys


def add_arguments(p: argparse.ArgumentParser) -> None:
    from envcheck.commands import _options as opt

    opt.data(p)
    opt.selection(p)


def run(args: argparse.Namespace) -> int:
    from envcheck.checks import all_checks
    from envcheck.checks.registry import select

    checks = select(all_checks(), args.select, args.ignore)
    if args.json:
        rows = [{"code": c.code, "slug": c.slug, "section": c.section, "summary": c.summary,
                 "failable": c.failable, "default": c.default} for c in checks]
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return 0
    for c in checks:
        sys.stdout.write(f"{c.code}  {c.slug:<34} {c.section:<18} {c.summary}\n")
    return 0
