"""`envcheck matrix check|suggest|show|lint`: judge, plan, print and lint against matrix.yaml.

Top-level imports stay light: the matrix, probe and renderers load only inside `run`.
"""
from __future__ import annotations

import argparse

from envcheck.errors import UsageError

VERSION_FLAGS = (  # flag, dest, kind (ascend = CANN/HDK grammar, pep440 = torch family), help
    ("--cann", "cann", "ascend", "CANN toolkit release, e.g. 8.0.RC1"),
    ("--driver", "driver", "ascend", "NPU driver (HDK) version, e.g. 24.1.rc1 or 24.1.RC1"),
    ("--firmware", "firmware", "ascend", "firmware version, e.g. 7.5.0.2.220"),
    ("--torch", "torch", "pep440", "PyTorch version, e.g. 2.1.0"),
    ("--torch-npu", "torch_npu", "pep440", "torch_npu version, e.g. 2.1.0.post6"),
    ("--python-version", "py_version", "pep440", "Python version, e.g. 3.10"),
    ("--mindspore", "mindspore", "pep440", "MindSpore version, e.g. 2.3.1"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from envcheck.commands import _options as opt

    sub = parser.add_subparsers(dest="matrix_command", metavar="ACTION")
    specs = {
        "check": ("judge a planned environment given as flags (same findings and exit codes as a real run)",
                  ("cann", "driver", "firmware", "torch", "torch_npu", "py_version", "mindspore")),
        "suggest": ("every compatible set honouring the flags, newest first; no flags: the smallest fix "
                    "for this machine (or --python PATH / --facts FILE)", ("cann", "torch", "torch_npu", "py_version")),
        "show": ("print the matrix as a table (filter with the flags)", ("cann", "torch", "torch_npu")),
        "lint": ("validate a matrix file: schema, references, duplicates, contradictions, order", ()),
    }
    for name, (help_, dests) in specs.items():
        sp = sub.add_parser(name, help=help_, description=help_)
        opt.matrix(sp)
        if name == "check":
            opt.report(sp)
        elif name == "suggest":
            opt.target(sp)
            opt.data(sp)
        elif name == "show":
            opt.data(sp)
        for flag, dest, _, h in VERSION_FLAGS:
            if dest in dests:
                flags = [flag]
                if dest == "py_version" and name == "check":
                    flags.append("--python")  # a planned environment has no interpreter path: --python is the version
                sp.add_argument(*flags, dest=dest, metavar="V", default=argparse.SUPPRESS, help=h)
        if name in ("check", "suggest"):
            sp.add_argument("--chip", metavar="NAME", default=argparse.SUPPRESS,
                            help="NPU chip as npu-smi prints it, e.g. 910B4, Ascend910, 310P3")
            sp.add_argument("--arch", choices=("aarch64", "x86_64"), default=argparse.SUPPRESS,
                            help="CPU architecture (x86_64 pip lines add PyTorch's CPU index)")
        if name == "check":
            sp.add_argument("--kernels", metavar="NAME=V", action="append", default=argparse.SUPPRESS,
                            help="a kernels / ops package and its version, e.g. 910b-ops=8.5.0 (repeatable)")
        if name == "lint":
            sp.add_argument("--index", action="store_true",
                            help="maintainers: also ask PyPI for torch-npu / torch / mindspore releases the matrix "
                                 "lacks (network; never part of a normal envcheck run)")
        if name == "show":
            sp.add_argument("--markdown", action="store_true", default=argparse.SUPPRESS,
                            help="print a Markdown table with linked sources")


def run(args: argparse.Namespace) -> int:
    action = getattr(args, "matrix_command", None)
    if action is None:
        raise UsageError("matrix: choose an action: check, suggest, show or lint (envcheck matrix --help)")
    if action == "lint":
        return _lint(args)
    from envcheck import matrix as m

    mx = m.load(args.matrix)
    if action == "check":
        return _check(args, mx)
    if action == "show":
        from envcheck.matrix.table import show

        return show(args, mx, _versions(args))
    from envcheck.plan.suggest import suggest

    versions = _versions(args)
    picked = [f for f in ("python", "facts") if getattr(args, f, None)]
    if picked and any(k in versions for k in ("cann", "torch", "torch_npu", "py_version")):
        # the flags ask for sets, --python / --facts for a machine's fix: one would be ignored without a word
        raise UsageError(f"matrix suggest: --{picked[0]} picks the machine to fix and takes no version flags; "
                         "to filter the sets by Python version use --python-version X.Y")
    return suggest(args, mx, versions)


def _versions(args: argparse.Namespace) -> dict[str, str]:
    """The version flags given, validated: a bad string is a one-line usage error (exit 2)."""
    from envcheck.versions import VersionError, parse_ascend, parse_pep440

    out = {}
    for flag, dest, kind, _ in VERSION_FLAGS:
        value = getattr(args, dest, None)
        if value is None:
            continue
        try:
            (parse_ascend if kind == "ascend" else parse_pep440)(value)
        except VersionError as exc:
            raise UsageError(f"{flag}: {exc}") from None
        out[dest] = value
    for key in ("chip", "arch"):
        if getattr(args, key, None):
            out[key] = getattr(args, key)
    return out


def _kernels(args: argparse.Namespace) -> list[dict[str, str]]:
    out = []
    for item in getattr(args, "kernels", None) or []:
        name, sep, ver = item.partition("=")
        if not sep or not name or not ver:
            raise UsageError(f"--kernels {item!r}: expected NAME=VERSION, e.g. 910b-ops=8.5.0")
        out.append({"name": name, "version": ver, "source": "--kernels (flag)"})
    return out


def _check(args: argparse.Namespace, mx) -> int:
    from envcheck.checks import runner
    from envcheck.checks.compat import CHECKS
    from envcheck.checks.registry import Context, select
    from envcheck.commands._output import emit
    from envcheck.plan import hypothetical_facts

    v = _versions(args)
    kernels = _kernels(args)
    if not v and not kernels:
        raise UsageError("matrix check: give at least one of --cann --driver --torch --torch-npu --python-version "
                         "--chip --mindspore --firmware")
    facts = hypothetical_facts(cann=v.get("cann"), driver=v.get("driver"), firmware=v.get("firmware"),
                               torch=v.get("torch"), torch_npu=v.get("torch_npu"), python=v.get("py_version"),
                               chip=v.get("chip"), mindspore=v.get("mindspore"), arch=v.get("arch"),
                               kernels=kernels)
    ctx = Context(facts=facts, matrix_path=args.matrix, loaded_matrix=mx)
    report = runner.run(select(CHECKS, args.select, args.ignore), ctx, command="matrix check")
    return emit(report, args)


def _lint(args: argparse.Namespace) -> int:
    import os
    import sys

    from envcheck.matrix.lint import lint_file
    from envcheck.resources import matrix_path

    path = args.matrix or str(matrix_path())
    rel = os.path.relpath(path)
    shown = args.matrix or (path if rel.startswith("..") else rel)
    problems, mx = lint_file(path)
    for p in problems:
        print(p.render(shown))
    if problems or mx is None:  # no matrix comes only with the problems that stopped it
        print(f"{shown}: {len(problems)} problem(s)", file=sys.stderr)
        return 2
    print(f"{shown}: ok ({len(mx.cann)} CANN releases, {len(mx.pairings())} torch_npu pairings, "
          f"{len(mx.conflicts)} conflicts, {len(mx.sources)} sources)")
    if getattr(args, "index", False):
        from envcheck.matrix import index

        missing = index.check(mx)
        sys.stdout.write(index.render(missing, mx))
        return 1 if missing else 0
    return 0
