"""`envcheck matrix show`: the matrix as a text table, JSON rows or Markdown."""
from __future__ import annotations

import argparse
import json
import sys

from envcheck.matrix import Matrix
from envcheck.versions import parse_ascend, parse_pep440, same_base

COLUMNS = (("cann", "CANN"), ("torch", "PyTorch"), ("torch_npu", "torch_npu"), ("python", "Python (table)"),
           ("wheels", "wheels"), ("hdk", "HDK paired"), ("conflicts", "conflicts"))


def show(args: argparse.Namespace, mx: Matrix, want: dict[str, str]) -> int:
    if getattr(args, "markdown", False):
        sys.stdout.write(mx.to_markdown())
        return 0
    rows = [r for r in mx.rows() if _keep(r, want)]
    for r in rows:
        w = mx.wheel_python(r["torch_npu"]) if r["torch_npu"] else None
        r["wheels"] = ", ".join(str(x) for x in (w if isinstance(w, list) else [w])) if w else ""
    if args.json:
        sys.stdout.write(json.dumps({"matrix": mx.path, "dated": mx.dated, "rows": rows}, indent=2) + "\n")
        return 0
    if not rows:
        print("no rows match")
        return 1
    widths = {k: max(len(title), *(len(r[k]) for r in rows)) for k, title in COLUMNS}
    print("  ".join(title.ljust(widths[k]) for k, title in COLUMNS).rstrip())
    print("  ".join("-" * widths[k] for k, _ in COLUMNS))
    for r in rows:
        print("  ".join(r[k].ljust(widths[k]) for k, _ in COLUMNS).rstrip())
    print(f"\n{len(rows)} row(s); matrix {mx.path}, dated {mx.dated}. Sources: envcheck matrix show --json")
    return 0


def _keep(row: dict[str, str], want: dict[str, str]) -> bool:
    if want.get("cann") and parse_ascend(row["cann"]) != parse_ascend(want["cann"]):
        return False
    if want.get("torch") and not (row["torch"] and same_base(row["torch"], want["torch"])):
        return False
    if want.get("torch_npu") and not (row["torch_npu"] and
                                      parse_pep440(row["torch_npu"]).public == parse_pep440(want["torch_npu"]).public):
        return False
    return True
