"""`envcheck probe`: print the facts only (no checks, no torch import); `--json` for a snapshot."""
from __future__ import annotations

import argparse
import json
import sys


def add_arguments(p: argparse.ArgumentParser) -> None:
    from envcheck.commands import _options as opt

    opt.target(p)
    opt.data(p, verbose=True)
    p.add_argument("--timeout", type=float, metavar="SEC", default=None,
                   help="timeout for npu-smi and the --python child (default 10 s)")


def run(args: argparse.Namespace) -> int:
    from envcheck.commands.check import collect_facts
    from envcheck.redact import scrub

    facts = collect_facts(args)
    if args.json:
        from envcheck.version import __version__

        doc = {"schema_version": 1, "envcheck_version": __version__, "command": "probe", "facts": facts.to_dict()}
        sys.stdout.write(json.dumps(scrub(doc), indent=2, ensure_ascii=False) + "\n")
    else:
        from envcheck.probe.show import render_facts

        sys.stdout.write(render_facts(facts, verbose=args.verbose))
    return 0
