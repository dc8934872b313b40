"""Shared output plumbing for commands that produce a Report: text/JSON to stdout, JUnit to a file."""
from __future__ import annotations

import argparse
import os
import sys

from envcheck.errors import UsageError
from envcheck.model import Report
from envcheck.render import render
from envcheck.render.text import use_color


def emit(report: Report, args: argparse.Namespace) -> int:
    """Print the report as asked and return the exit code (0 ok, 1 a check failed)."""
    if args.junit:
        write_text(args.junit, render(report, "junit"))
    if args.json:
        sys.stdout.write(render(report, "json"))
    else:
        sys.stdout.write(render(report, "text", verbose=args.verbose,
                                color=use_color(args.color, sys.stdout), stream=sys.stdout))
    sys.stdout.flush()
    return report.exit_code(strict=args.strict)


def write_text(path: str, text: str) -> None:
    """Write an output file the user asked for; a bad path is a usage error, not a traceback."""
    if os.path.isdir(path):
        raise UsageError(f"{path}: is a directory")
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
