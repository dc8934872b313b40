"""`envcheck smoke [ops|collective]`: operator or collective smoke tests in isolated children."""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from envcheck.errors import UsageError


def add_arguments(p: argparse.ArgumentParser) -> None:
    from envcheck.commands import _options as opt

    opt.target(p, root=False, facts=False)
    opt.matrix(p)
    opt.report(p)
    p.add_argument("suite", nargs="?", choices=("ops", "collective"), default="ops",
                   help="ops: operator suite + parity run (default); collective: N local ranks")
    p.add_argument("--device", choices=("auto", "npu", "cuda", "cpu"), default="auto",
                   help="auto: npu when torch_npu imports and sees devices, else cuda, else cpu")
    p.add_argument("--timeout", type=float, metavar="SEC", default=None,
                   help="per-test timeout (ops) / no-progress timeout (collective); default 60")
    p.add_argument("--case", action="append", metavar="NAME", default=None,
                   help="ops: run only this case (repeatable), e.g. 'matmul[float16]'")
    g = p.add_argument_group("collective")
    g.add_argument("--nproc", type=int, metavar="N", default=None,
                   help="local ranks (default: the device count; 2 on cpu)")
    g.add_argument("--sizes", metavar="LIST", default=None,
                   help="comma-separated sweep sizes, e.g. 1K,1M,64M ('none' = no sweep)")
    g.add_argument("--min-size", metavar="SIZE", default="1K", help="sweep start (default 1K)")
    g.add_argument("--max-size", metavar="SIZE", default="64M", help="sweep end, doubling (default 64M)")
    g.add_argument("--iters", type=int, metavar="N", default=5, help="timed iterations per size (default 5)")
    g.add_argument("--min-busbw", type=float, metavar="GBPS", default=None,
                   help="fail when a collective's average busbw is below GBPS (as nccl-tests' floor)")


def _sizes(args: argparse.Namespace) -> list[int]:
    from envcheck.smoke.bandwidth import parse_size, size_sweep

    try:
        if args.sizes is not None:
            if args.sizes.strip().lower() == "none":
                return []
            return [parse_size(s) for s in args.sizes.split(",") if s.strip()]
        return size_sweep(parse_size(args.min_size), parse_size(args.max_size))
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _check_cases(names: list[str]) -> None:
    """Unknown --case names are a usage error (the registry imports no torch; plugins as the worker)."""
    from envcheck.smoke import ops  # noqa: F401  (registers the built-in cases)
    from envcheck.smoke.registry import REGISTRY
    from envcheck.smoke.worker import ENV_PLUGINS, load_plugins

    try:
        load_plugins(os.environ.get(ENV_PLUGINS, "").split(","))
    except ImportError:  # importable only on the worker's PYTHONPATH: the worker will judge the names
        return
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise UsageError(f"unknown smoke case {unknown[0]!r}; known: {', '.join(REGISTRY)}")


def _validate(args: argparse.Namespace) -> None:
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError(f"--timeout must be positive, got {args.timeout:g}")
    if args.nproc is not None and args.nproc < 1:
        raise UsageError(f"--nproc must be at least 1, got {args.nproc}")
    if args.iters < 1:
        raise UsageError(f"--iters must be at least 1, got {args.iters}")
    if args.python and not (os.path.isfile(args.python) and os.access(args.python, os.X_OK)):
        raise UsageError(f"--python {args.python}: not an executable file")
    if args.case:
        _check_cases(args.case)


def _progress(o: Any) -> None:
    """One line per finished op case on stderr (TTY only), so a long NPU run shows it is alive."""
    err = f"  {o.error}" if o.error else ""
    print(f"  {o.case:<28} {o.status:<8} {o.seconds:6.2f} s{err}"[:160], file=sys.stderr, flush=True)


def _table(report: Any) -> str:
    """The sweep table, shown ahead of the report it summarises (-v shows it inside EC413 instead)."""
    from envcheck.smoke.bandwidth import format_table

    rows = next((f.data.get("rows") for f in report.findings if f.code == "EC413" and f.data.get("rows")), None)
    return format_table(rows) + "\n\n" if rows else ""


def _python_facts(given: str | None, python: str) -> dict[str, Any]:
    """The interpreter's package versions (read from metadata, nothing imported), so kb version gates in
    the report are judged on them; just the executable when they cannot be read."""
    from envcheck.errors import EnvcheckError
    from envcheck.probe.pyenv import probe

    try:
        return dict(probe(given, os.environ, 30.0))
    except (EnvcheckError, OSError, ValueError):
        return {"executable": python}


def run(args: argparse.Namespace) -> int:
    from envcheck.checks import runner
    from envcheck.checks.registry import Context
    from envcheck.checks.smoke import planned_checks
    from envcheck.commands._output import emit
    from envcheck.facts import PythonFacts
    from envcheck.model import Facts

    _validate(args)
    python = args.python or sys.executable
    opts = {"smoke": args.suite, "device": args.device, "timeout": args.timeout, "python": python,
            "nproc": args.nproc, "sizes": _sizes(args) if args.suite == "collective" else None,
            "min_busbw": args.min_busbw, "iters": args.iters, "cases": args.case,
            "progress": _progress if sys.stderr.isatty() else None}
    ctx = Context(facts=Facts(python=PythonFacts.from_dict(_python_facts(args.python, python))),
                  matrix_path=args.matrix, options=opts)
    if sys.stderr.isatty():  # the ops suite prints a line per case; say what runs before the first one
        what = "the collective tests on local ranks" if args.suite == "collective" else "the operator tests"
        print(f"envcheck smoke: running {what} on device {args.device} …", file=sys.stderr, flush=True)
    report = runner.run(planned_checks(args.suite), ctx, command=f"smoke {args.suite}")
    table = _table(report) if args.suite == "collective" and not args.verbose else ""
    rc = emit(report, args, before=table)
    if ctx.smoke is not None and ctx.smoke.interrupted:
        print("envcheck: interrupted; the report above shows what finished", file=sys.stderr)
        return 130
    return rc
