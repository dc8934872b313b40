"""`envcheck ranktable FILE`: validate an HCCL rank table against its format and this host."""
from __future__ import annotations

import argparse
import os

from envcheck.errors import UsageError


def add_arguments(p: argparse.ArgumentParser) -> None:
    from envcheck.commands import _options as opt

    opt.target(p)
    opt.matrix(p)
    opt.report(p)
    p.add_argument("file", metavar="FILE", nargs="?", default=None,
                   help="rank table JSON (default: $RANK_TABLE_FILE)")
    p.add_argument("--world-size", type=int, metavar="N", default=None,
                   help="expected rank count (default: $WORLD_SIZE when set)")
    p.add_argument("--structure-only", action="store_true",
                   help="check the file only, not that this host, its addresses and devices are in it")


def run(args: argparse.Namespace) -> int:
    from envcheck.checks import runner
    from envcheck.checks.distributed import ranktable_valid
    from envcheck.checks.registry import Context
    from envcheck.commands._output import emit
    from envcheck.commands.check import collect_facts

    path = args.file or os.environ.get("RANK_TABLE_FILE")
    if not path:
        raise UsageError("no rank table: give FILE or set RANK_TABLE_FILE")
    if not os.path.isfile(path):
        raise UsageError(f"{path}: no such file")
    from envcheck.facts import RankTableFacts
    from envcheck.probe import ranktable as rt
    from envcheck.probe.fs import Root

    facts = collect_facts(args)
    facts.ranktable = RankTableFacts.from_dict(rt.read(Root("/"), path))
    if args.world_size is not None:
        facts.env = {k: v for k, v in facts.env.items() if k != "WORLD_SIZE"}
    opts = {"ranktable": path, "world_size": args.world_size, "structure_only": args.structure_only,
            "root": args.root}
    report = runner.run([ranktable_valid], Context(facts=facts, matrix_path=args.matrix, options=opts),
                        command="ranktable")
    return emit(report, args)
