"""Command line: argparse → options → the command's run(); `main(argv) -> int`.

Exit codes: 0 nothing failed, 1 a check failed, 2 usage or input error.
Only the command named on the command line is imported (`build_parser(argv)`), so `envcheck --help`
stays light. Each command offers only the option groups that apply to it (commands/_options.py).
"""
from __future__ import annotations

import argparse
import importlib
import os
import shutil
import sys
from collections.abc import Sequence

from envcheck.errors import EnvcheckError, UsageError
from envcheck.version import __version__

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


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser. Only the command named in `argv` is imported and given its options; the others
    appear in --help by name (so `envcheck --help` and `envcheck probe` import one command module)."""
    p = argparse.ArgumentParser(
        prog="envcheck",
        description="A doctor for Huawei Ascend NPU training machines: probe versions, judge them "
        "against the compatibility matrix, smoke-test operators and collectives, and link every "
        "failure to a pitfall entry.",
        epilog="Exit status: 0 nothing failed, 1 a check failed, 2 usage or input error.",
    )
    p.add_argument("--version", action="version", version=f"envcheck {__version__}")
    from envcheck.commands import check

    check.add_arguments(p, top=True)
    chosen = _command_in(p, argv)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_) in COMMANDS.items():
        sp = sub.add_parser(name, help=help_, description=help_)
        sp.set_defaults(_module=module)
        if name == chosen:
            mod = importlib.import_module(module)
            mod.add_arguments(sp)
    return p


def _command_in(p: argparse.ArgumentParser, argv: Sequence[str]) -> str | None:
    """The command named in argv: the first word that is not an option or an option's value."""
    takes_value = {s for a in p._actions if a.option_strings and a.nargs != 0 for s in a.option_strings}
    skip = False
    for word in argv:
        if skip:
            skip = False
            continue
        if word == "--":
            return None
        if word.startswith("-"):
            skip = word in takes_value  # `--root DIR`; `--root=DIR` carries its value
            continue
        return word if word in COMMANDS else None
    return None


def _accepted(p: argparse.ArgumentParser) -> set[str]:
    """Every option dest a (sub)parser accepts, nested sub-commands included."""
    out: set[str] = set()
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sp in a.choices.values():
                out |= _accepted(sp)
        elif a.option_strings:
            out.add(a.dest)
    return out


def _reject_foreign_options(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """`envcheck --junit x.xml kb search hccl`: a top-level option the command does not take is an error."""
    name = getattr(args, "command", None)
    if not name or name == "check":
        return
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)).choices[name]
    accepted = _accepted(sub)
    for a in p._actions:
        if not a.option_strings or a.dest in ("help", "version") or a.dest in accepted:
            continue
        if getattr(args, a.dest, a.default) != a.default:
            raise UsageError(f"{a.option_strings[-1]} does not apply to `envcheck {name}` "
                             f"(see `envcheck {name} --help`)")


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

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help/--version exit 0, bad usage exits 2
        return int(exc.code or 0)
    module = getattr(args, "_module", "envcheck.commands.check")
    try:
        _reject_foreign_options(parser, args)
        from envcheck.commands import _options, _output

        _options.validate(args)
        _output.check_outputs(args)
        if getattr(args, "python", None):
            args.python = resolve_python(args.python)
        mod = importlib.import_module(module)
        rc = int(mod.run(args))
        sys.stdout.flush()
    except EnvcheckError as exc:
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
