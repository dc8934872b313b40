"""`envcheck probe`: print the facts only (no checks, no torch import)."""
from __future__ import annotations

import argparse
import json
import sys

from envcheck.redact import scrub


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--timeout", type=float, metavar="SEC", default=None,
                   help="timeout for npu-smi and the --python child (default 10 s)")


def run(args: argparse.Namespace) -> int:
    from envcheck.commands.check import collect_facts
    from envcheck.probe.show import render_facts

    facts = collect_facts(args)
    if args.json:
        doc = {"schema_version": 1, "command": "probe", "facts": facts.to_dict()}
        sys.stdout.write(json.dumps(scrub(doc), indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(render_facts(facts, verbose=args.verbose))
    return 0
