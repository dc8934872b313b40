"""The one output path of every report command: pick the format, render (redacted once), write.

--format text|json|junit|markdown picks what goes to stdout (or to -o FILE); --json is
--format json; --junit FILE also writes JUnit XML to FILE. Exit code: the result's.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from envcheck import safeio
from envcheck.errors import UsageError
from envcheck.model import Report
from envcheck.render import Result, render
from envcheck.render.text import use_color


def chosen_format(args: argparse.Namespace) -> str:
    fmt = getattr(args, "format", None)
    if getattr(args, "json", False):
        if fmt not in (None, "json"):
            raise UsageError(f"--json and --format {fmt} contradict each other")
        return "json"
    return fmt or "text"


def emit(result: Result, args: argparse.Namespace, before: str = "", stream: Any = None) -> int:
    """Print (or write) `result` as asked and return the exit code (0 ok, 1 a problem was found).

    before: text shown ahead of a text report on stdout (a table the report summarises).
    stream: the `render.text.TextStream` that already printed the report's first parts on stdout
    (`streaming(args)` says when to make one); only the rest is printed."""
    fmt = chosen_format(args)
    output = getattr(args, "output", None)
    junit = getattr(args, "junit", None)
    if junit:
        write_text(junit, render(result, "junit"), args)
    if fmt == "text" and stream is not None and not output and isinstance(result, Report):
        from envcheck.render import redacted

        text = before + stream.finish(redacted(result))
    elif fmt == "text":
        stream = None if output else sys.stdout
        text = before + render(result, "text", verbose=getattr(args, "verbose", False),
                               color=bool(stream) and use_color(getattr(args, "color", "auto"), stream),
                               stream=stream)
    else:
        text = render(result, fmt, verbose=getattr(args, "verbose", False))
    if output:
        write_text(output, text, args)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    if isinstance(result, Report):
        return result.exit_code(strict=getattr(args, "strict", False))
    return result.exit_code


def inputs_of(args: argparse.Namespace) -> list[str]:
    """Every file this run reads because the user named it (an output may never be one of them)."""
    out = [getattr(args, k, None) for k in ("facts", "matrix", "file")]
    for k in ("paths", "reports"):
        out += list(getattr(args, k, None) or [])
    return [p for p in out if p and p != "-"]


def check_outputs(args: argparse.Namespace) -> None:
    """Before the run: an output file that is an input, a symlink or a directory is a usage error now,
    not after minutes of smoke tests."""
    for path in (getattr(args, "output", None), getattr(args, "junit", None)):
        if path:
            safeio.check_output_path(path, inputs_of(args))


def write_text(path: str, text: str, args: argparse.Namespace | None = None) -> None:
    """Write an output file the user asked for: atomically, never over an input, never through a symlink."""
    safeio.write_output_atomically(path, text, inputs_of(args) if args is not None else ())


def streaming(args: argparse.Namespace) -> Any:
    """A TextStream on stdout when the report goes there as text (the sections print as they are
    judged); None for JSON, JUnit, Markdown or -o FILE, which are written whole."""
    if chosen_format(args) != "text" or getattr(args, "output", None):
        return None
    from envcheck.render.text import TextStream

    return TextStream(sys.stdout, verbose=getattr(args, "verbose", False),
                      color=use_color(getattr(args, "color", "auto"), sys.stdout))
