"""Command line: argparse → options → the command's run(); `main(argv) -> int`.

Exit codes: 0 nothing failed, 1 a check failed, 2 usage or input error.
Command modules are imported only when their command runs, so `envcheck --help` stays light.
"""
from __future__ import annotations

import argparse
import importlib
import os
import shutil
import sys
from typing import Sequence

from envcheck import __version__
from envcheck.errors import UsageError

# name -> (module, one-line help). Each module has add_arguments(parser) and run(args) -> int.
COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("envcheck.commands.check", "probe the machine and run every check (the default)"),
    "probe": ("envcheck.commands.probe", "print the facts read from this machine (no judgement)"),
    "list": ("envcheck.commands.listing", "list every check code, slug and summary"),
    "explain": ("envcheck.commands.explain", "explain a check code (e.g. EC201) and its kb entries"),
    "matrix": ("envcheck.commands.matrix", "judge or plan versions against matrix.yaml"),
    "smoke": ("envcheck.commands.smoke", "run operator / collective smoke tests in child processes"),
    "kb": ("envcheck.commands.kb", "search, show, scaffold and lint pitfall entries"),
    "diagnose": ("envcheck.commands.diagnose", "match error output or logs against the kb"),
    "cluster": ("envcheck.commands.cluster", "cluster-wide checks, run under torchrun"),
    "compare": ("envcheck.commands.compare", "drift table across saved JSON reports"),
    "ranktable": ("envcheck.commands.ranktable", "validate an HCCL rank table file"),
}


def add_common(p: argparse.ArgumentParser, top: bool) -> None:
    """Options accepted both before and after the command (`envcheck --json probe` == `envcheck probe --json`)."""
    d = (lambda v: v) if top else (lambda v: argparse.SUPPRESS)
    g = p.add_argument_group("common options")
    g.add_argument("--root", metavar="DIR", default=d("/"), help="read the filesystem side from DIR (a sysroot)")
    g.add_argument("--python", metavar="PATH", default=d(None), help="judge another interpreter (venv / conda env)")
    g.add_argument("--matrix", metavar="FILE", default=d(None), help="use another matrix.yaml")
    g.add_argument("--json", action="store_true", default=d(False), help="print the JSON report")
    g.add_argument("--junit", metavar="FILE", default=d(None), help="also write a JUnit XML report to FILE")
    g.add_argument("-v", "--verbose", action="store_true", default=d(False), help="show detail, evidence and fixes")
    g.add_argument("--color", choices=("auto", "always", "never"), default=d("auto"), help="colour (auto: TTY and no NO_COLOR)")
    g.add_argument("--select", action="append", metavar="CODE", default=d([]), help="only these checks (code prefix or slug)")
    g.add_argument("--ignore", action="append", metavar="CODE", default=d([]), help="skip these checks (code prefix or slug)")
    g.add_argument("--strict", action="store_true", default=d(False), help="warnings also make the exit status 1")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="envcheck",
        description="A doctor for Huawei Ascend NPU training machines: probe versions, judge them "
        "against the compatibility matrix, smoke-test operators and collectives, and link every "
        "failure to a pitfall entry.",
        epilog="Exit status: 0 nothing failed, 1 a check failed, 2 usage or input error.",
    )
    p.add_argument("--version", action="version", version=f"envcheck {__version__}")
    add_common(p, top=True)
    _check_options(p, top=True)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_) in COMMANDS.items():
        sp = sub.add_parser(name, help=help_, description=help_)
        add_common(sp, top=False)
        sp.set_defaults(_module=module)
        _add_command_arguments(module, sp)
    return p


def _check_options(p: argparse.ArgumentParser, top: bool) -> None:
    """Options of the default `check` command, also accepted on the bare `envcheck`."""
    d = (lambda v: v) if top else (lambda v: argparse.SUPPRESS)
    p.add_argument("--no-smoke", dest="smoke", action="store_const", const="none", default=d("quick"),
                   help="skip the smoke tests")
    p.add_argument("--full", dest="smoke", action="store_const", const="full", default=d("quick"),
                   help="run the whole smoke suite (default: a quick subset)")
    p.add_argument("--device", choices=("auto", "npu", "cuda", "cpu"), default=d("auto"),
                   help="device for smoke tests (default: auto)")
    p.add_argument("--timeout", type=float, metavar="SEC", default=d(None),
                   help="per-test / per-probe timeout in seconds")
    p.add_argument("--facts", metavar="FILE", default=d(None),
                   help="judge a saved `envcheck probe --json` snapshot instead of this machine")


def _add_command_arguments(module: str, sp: argparse.ArgumentParser) -> None:
    mod = importlib.import_module(module)
    if module == "envcheck.commands.check":
        _check_options(sp, top=False)
    adder = getattr(mod, "add_arguments", None)
    if adder:
        adder(sp)


def resolve_python(value: str) -> str:
    """--python as a shell would find it: a bare name via PATH, a relative path made absolute,
    a venv / conda env directory → its bin/python. Unusable values are left for the probe to reject."""
    if os.path.isdir(value):
        for cand in ("bin/python", "bin/python3", "python.exe"):
            path = os.path.join(value, cand)
            if os.path.isfile(path):
                return os.path.abspath(path)
        return value
    if os.sep not in value:
        found = shutil.which(value)
        return found or value
    return os.path.abspath(value)


def _prepare_streams() -> None:
    """Unencodable characters (PYTHONIOENCODING=ascii, a non-UTF-8 file name) become escapes, never
    a UnicodeEncodeError; a closed stdout (`envcheck >&-`) becomes /dev/null with a note."""
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w", encoding="utf-8")
        if sys.stderr is not None:
            print("envcheck: note: standard output is closed; the report is discarded", file=sys.stderr)
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):  # not a TextIOWrapper (a test's StringIO)
            pass


def _silence_stdout() -> None:
    """After EPIPE / ENOSPC on stdout: point fd 1 at /dev/null so the exit-time flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, AttributeError, ValueError):  # no real fd (captured in tests)
        pass


def main(argv: Sequence[str] | None = None) -> int:
    from envcheck import lifetime

    _prepare_streams()
    restore = lifetime.install()
    try:
        return _main(argv)
    finally:
        lifetime.cleanup()
        restore()


def _main(argv: Sequence[str] | None) -> int:
    from envcheck import lifetime

    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help/--version exit 0, bad usage exits 2
        return int(exc.code or 0)
    if getattr(args, "python", None):
        args.python = resolve_python(args.python)
    module = getattr(args, "_module", "envcheck.commands.check")
    if module != "envcheck.commands.check":
        for key, default in (("smoke", "quick"), ("device", "auto"), ("timeout", None), ("facts", None)):
            if not hasattr(args, key):
                setattr(args, key, default)
    try:
        mod = importlib.import_module(module)
        rc = int(mod.run(args))
        sys.stdout.flush()
    except UsageError as exc:
        print(f"envcheck: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM / SIGHUP (lifetime.Terminated)
        signum = getattr(exc, "signum", 2)
        print("envcheck: interrupted" if signum == 2 else f"envcheck: terminated ({lifetime.Terminated(signum).name})",
              file=sys.stderr)
        return 128 + signum
    except BrokenPipeError:  # `envcheck | head`
        _silence_stdout()
        return 0
    except OSError as exc:
        if _is_stdout_error(exc):
            _silence_stdout()
            print(f"envcheck: error: cannot write the report to standard output: {exc.strerror or exc}",
                  file=sys.stderr)
            return 2
        print(f"envcheck: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except (RecursionError, MemoryError) as exc:
        print(f"envcheck: error: input too large or too deeply nested ({type(exc).__name__})", file=sys.stderr)
        return 2
    except Exception as exc:  # an envcheck bug: one line; the traceback with ENVCHECK_DEBUG=1
        if os.environ.get("ENVCHECK_DEBUG"):
            raise
        print(f"envcheck: internal error: {type(exc).__name__}: {_one_line(str(exc))} "
              "(ENVCHECK_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 2
    got = lifetime.received()
    if rc == 130 and got:  # a command that reported what finished after SIGTERM / SIGHUP
        return 128 + got
    return rc


def _is_stdout_error(exc: OSError) -> bool:
    import errno

    return exc.errno in (errno.ENOSPC, errno.EPIPE, errno.EBADF, errno.EIO, errno.EDQUOT)


def _one_line(text: str, limit: int = 500) -> str:
    """One line, at most `limit` characters (an error quoting a huge value stays readable)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit] + f"... ({len(line) - limit:,} more characters)"


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
