"""`envcheck explain CODE`: what a check checks, or what an error code means, and the kb entries for it.

CODE is a check code or slug (EC201, cann-env-not-loaded) or an error code from the dictionary
(envcheck/kb/error_codes.yaml): an ACL / runtime return code (507001), a CANN message code (EI0006),
a torch_npu code (ERR02200), an HcclResult (hccl:9, or a bare 9), an npu-smi/DCMI code (-8020), an NPU
health-management fault / event id (0x80E18400, or bare 80E18400 as npu-smi prints it), a MindIE code
(MIE05E01000A), or a macro or enum name (ACL_ERROR_RT_TS_ERROR, TEXT_GENERATOR_OUT_OF_MEMORY).
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from envcheck.errors import UsageError


def add_arguments(p: argparse.ArgumentParser) -> None:
    from envcheck.commands import _options as opt

    opt.data(p)
    p.add_argument("code", help="check code or slug (EC201, cann-env-not-loaded) or error code (507001, EI0006, "
                                "ERR02200, hccl:9, -8020, 0x80E18400, MIE05E01000A)")


def run(args: argparse.Namespace) -> int:
    from envcheck.checks import RETIRED, by_id

    checks = by_id()
    key = args.code if args.code in checks else args.code.upper()
    c = checks.get(key)
    if c is None:
        for r in RETIRED:
            if key in (r.code, r.slug):
                sys.stdout.write(f"{r.code} {r.slug}: retired in {r.retired}"
                                 + (f", replaced by {r.replaced_by}" if r.replaced_by else "") + "\n")
                return 0
        return _explain_error_code(args)
    entries = _entries(c.code)
    if args.json:
        sys.stdout.write(json.dumps({"code": c.code, "slug": c.slug, "section": c.section,
                                     "summary": c.summary, "failable": c.failable,
                                     "kb": [e.id for e in entries]}, indent=2) + "\n")
        return 0
    sys.stdout.write(f"{c.code} {c.slug}  [{c.section}]\n  {c.summary}\n")
    doc = (c.fn.__doc__ or "").strip()
    if doc:
        sys.stdout.write("\n" + "\n".join("  " + line.strip() for line in doc.splitlines()) + "\n")
    if entries:
        sys.stdout.write("\nkb entries:\n")
        for e in entries:
            sys.stdout.write(f"  {e.id:<40} {e.title}\n")
        sys.stdout.write(f"\nRead one with: envcheck kb show {entries[0].id}\n")
    return 0


def _entries(code: str) -> list:
    from envcheck.kb.entries import load_kb

    return [e for e in load_kb().entries if code in e.checks]


def _explain_error_code(args: argparse.Namespace) -> int:
    """An error code: every dictionary entry it may be (a bare small number may be an HcclResult)."""
    from envcheck.kb.codes import CodeBookError, load_codes
    from envcheck.kb.entries import load_kb

    try:
        book = load_codes()
    except CodeBookError as exc:
        raise UsageError(str(exc)) from None
    cands = book.candidates(args.code) if len(args.code) <= 64 else ()
    if not cands:
        raise UsageError(f"unknown check or error code {args.code!r} (see `envcheck list`; error codes: "
                         "ACL/runtime 1xxxxx-5xxxxx, CANN E[A-Z]dddd, torch_npu ERRddddd, hccl:N, DCMI -80xx, "
                         "NPU fault 0x80E18400, MindIE MIE05E01000A)")
    kb = load_kb()
    rows: list[dict[str, Any]] = []
    for c in cands:
        ids = list(dict.fromkeys([e for e in c.entries if kb.get(e) is not None]
                                 + [e.id for e in kb.entries if c.code in {x.upper() for x in e.error_codes}]))
        fam = book.families.get(c.family)
        rows.append({"code": c.code, "family": c.family, "family_title": fam.title if fam else c.family,
                     "name": c.name, "meaning": c.meaning, "category": c.category, "generic": c.generic,
                     "source": c.source, "kb": ids})
    if args.json:
        sys.stdout.write(json.dumps({"code": args.code, "kind": "error-code", "candidates": rows},
                                   indent=2, ensure_ascii=False) + "\n")
        return 0
    for i, r in enumerate(rows):
        if i:
            sys.stdout.write("\n")
        sys.stdout.write(f"{r['code']} {r['name']}  [{r['family_title']}]\n  {r['meaning']}\n")
        sys.stdout.write(f"  category: {r['category']}"
                         + ("  (generic: a wrapper; the first specific error near it is the cause)" if r["generic"]
                            else "") + "\n")
        sys.stdout.write(f"  source: {r['source']}\n")
        if r["kb"]:
            sys.stdout.write("\nkb entries:\n")
            for eid in r["kb"]:
                e = kb.get(eid)
                sys.stdout.write(f"  {eid:<40} {e.title if e else ''}\n")
            sys.stdout.write(f"\nRead one with: envcheck kb show {r['kb'][0]}\n")
    return 0
