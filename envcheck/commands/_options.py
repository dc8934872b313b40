"""Option groups, offered only by the commands they apply to (no option that a command ignores).

- target: which machine and interpreter (--root, --python, --facts)
- matrix: --matrix FILE
- report: one output path (--format, --output, --json/--junit aliases, -v, --color, --select,
  --ignore, --strict)
- data:   --json for commands that print data, not a report (probe, list, explain, kb, matrix show)

`top=True` adds a group to the bare `envcheck` parser (the default `check` command); there the
defaults are real values, on sub-commands they are SUPPRESS so `envcheck --json probe` and
`envcheck probe --json` mean the same.
"""
from __future__ import annotations

import argparse
from typing import Any, Callable

FORMATS = ("text", "json", "junit", "markdown")


def _d(top: bool) -> Callable[[Any], Any]:
    return (lambda v: v) if top else (lambda v: argparse.SUPPRESS)


def target(p: argparse.ArgumentParser, top: bool = False, root: bool = True, python: bool = True,
           facts: bool = True) -> None:
    d = _d(top)
    g = p.add_argument_group("what to examine")
    if root:
        g.add_argument("--root", metavar="DIR", default=d("/"), help="read the filesystem side from DIR (a sysroot)")
    if python:
        g.add_argument("--python", metavar="PATH", default=d(None),
                       help="judge another interpreter: its path, a bare name on PATH, or a venv / conda env directory")
    if facts:
        g.add_argument("--facts", metavar="FILE", default=d(None),
                       help="judge a saved `envcheck probe --json` snapshot instead of this machine")


def matrix(p: argparse.ArgumentParser, top: bool = False) -> None:
    p.add_argument("--matrix", metavar="FILE", default=_d(top)(None), help="use another matrix.yaml")


def report(p: argparse.ArgumentParser, top: bool = False, select: bool = True) -> None:
    d = _d(top)
    g = p.add_argument_group("output")
    g.add_argument("--format", choices=FORMATS, default=d(None),
                   help="text (default), json (envcheck/schemas/report.schema.json), junit or markdown "
                        "(to paste into a GitHub/Gitee issue)")
    g.add_argument("-o", "--output", metavar="FILE", default=d(None), help="write the report to FILE, not stdout")
    g.add_argument("--json", action="store_true", default=d(False), help="same as --format json")
    g.add_argument("--junit", metavar="FILE", default=d(None), help="also write a JUnit XML report to FILE")
    g.add_argument("-v", "--verbose", action="store_true", default=d(False), help="show detail, evidence and fixes")
    g.add_argument("--color", choices=("auto", "always", "never"), default=d("auto"),
                   help="colour (auto: a TTY and no NO_COLOR)")
    if select:
        g.add_argument("--select", action="append", metavar="CODE", default=d([]),
                       help="only these checks (code prefix or slug)")
        g.add_argument("--ignore", action="append", metavar="CODE", default=d([]),
                       help="skip these checks (code prefix or slug)")
        g.add_argument("--strict", action="store_true", default=d(False), help="warnings also make the exit status 1")


def data(p: argparse.ArgumentParser, top: bool = False, verbose: bool = False) -> None:
    d = _d(top)
    p.add_argument("--json", action="store_true", default=d(False), help="print JSON")
    if verbose:
        p.add_argument("-v", "--verbose", action="store_true", default=d(False), help="show more detail")


def selection(p: argparse.ArgumentParser, top: bool = False) -> None:
    d = _d(top)
    p.add_argument("--select", action="append", metavar="CODE", default=d([]),
                   help="only these checks (code prefix or slug)")
    p.add_argument("--ignore", action="append", metavar="CODE", default=d([]),
                   help="skip these checks (code prefix or slug)")


# ---- validation: flag values that would make a gate go green by mistake are usage errors ----------

MAX_NPROC = 128
"""Local ranks one machine may start (16 chips on an A3 node, with room for CPU runs)."""


def validate(args: argparse.Namespace) -> None:
    """Reject flag values that parse but cannot mean anything: unknown or empty --select/--ignore codes,
    nan/inf/negative durations and floors, --nproc out of range. One-line UsageError each."""
    import math

    from envcheck.errors import UsageError

    for name in ("select", "ignore"):
        values = getattr(args, name, None) or []
        for v in values:
            if not v.strip():
                raise UsageError(f"--{name} needs a check code or slug (an empty value would match everything)")
        if values:
            _known_patterns(name, values)
    for name, flag in (("timeout", "--timeout"), ("time_budget", "--time-budget")):
        v = getattr(args, name, None)
        if v is not None and not (math.isfinite(v) and v > 0):
            raise UsageError(f"{flag} must be positive and finite (seconds), not {v}")
    v = getattr(args, "min_busbw", None)
    if v is not None and not (math.isfinite(v) and v >= 0):
        raise UsageError(f"--min-busbw {v}: give a bandwidth floor in GB/s (a number >= 0)")
    n = getattr(args, "nproc", None)
    if n is not None and not 1 <= n <= MAX_NPROC:
        raise UsageError(f"--nproc {n}: give 1..{MAX_NPROC} local ranks")


def _known_patterns(flag: str, values: list[str]) -> None:
    from envcheck.checks import RETIRED, all_checks
    from envcheck.checks.registry import wanted
    from envcheck.errors import UsageError

    checks = all_checks()
    for v in values:
        if any(wanted(c.code, c.slug, [v]) for c in checks) or any(r.code == v.upper() for r in RETIRED):
            continue
        raise UsageError(f"--{flag} {v}: no check has this code prefix or slug (see `envcheck list`)")
