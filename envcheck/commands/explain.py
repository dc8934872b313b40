"""`envcheck explain CODE`: what a check checks and the kb entries that explain its failures."""
from __future__ import annotations

import argparse
import json
import sys

from envcheck.errors import UsageError


def add_arguments(p: argparse.ArgumentParser) -> None:
    from envcheck.commands import _options as opt

    opt.data(p)
    p.add_argument("code", help="check code or slug, e.g. EC201 or cann-env-not-loaded")


def run(args: argparse.Namespace) -> int:
    from envcheck.checks import RETIRED, by_id

    checks = by_id()
    key = args.code if args.code in checks else args.code.upper()
    c = checks.get(key)
    if c is None:
        for r in RETIRED:
            if key in (r.code, r.slug):
                sys.stdout.write(f"{r.code} {r.slug}: retired in {r.retired}"
                                 + (f", replaced by {r.replaced_by}" if r.replaced_by else "") + "\n")
                return 0
        raise UsageError(f"unknown check {args.code!r} (see `envcheck list`)")
    entries = _entries(c.code)
    if args.json:
        sys.stdout.write(json.dumps({"code": c.code, "slug": c.slug, "section": c.section,
                                     "summary": c.summary, "failable": c.failable,
                                     "kb": [e.id for e in entries]}, indent=2) + "\n")
        return 0
    sys.stdout.write(f"{c.code} {c.slug}  [{c.section}]\n  {c.summary}\n")
    doc = (c.fn.__doc__ or "").strip()
    if doc:
        sys.stdout.write("\n" + "\n".join("  " + line.strip() for line in doc.splitlines()) + "\n")
    if entries:
        sys.stdout.write("\nkb entries:\n")
        for e in entries:
            sys.stdout.write(f"  {e.id:<40} {e.title}\n")
        sys.stdout.write(f"\nRead one with: envcheck kb show {entries[0].id}\n")
    return 0


def _entries(code: str) -> list:
    from envcheck.kb.entries import load_kb

    return [e for e in load_kb().entries if code in e.checks]
