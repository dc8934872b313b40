"""Run checks against a Context and assemble the Report; a raising check becomes an ERROR finding."""
from __future__ import annotations

import traceback
from typing import Iterable

from envcheck.checks.registry import Check, Context
from envcheck.model import Finding, Report, Status, ev
from envcheck.version import __version__


def run_check(check: Check, ctx: Context) -> list[Finding]:
    try:
        found = list(check.run(ctx))
    except Exception as exc:  # a bug or an unexpected fact shape: report it, keep going
        tb = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return [check.error(f"envcheck could not evaluate this check: {tb}",
                            evidence=[ev("envcheck", "".join(traceback.format_exc(limit=3)))])]
    if not found:
        return [check.skip(f"{check.summary}: nothing to check")]
    return found


def run(checks: Iterable[Check], ctx: Context, command: str = "check",
        extra: Iterable[Finding] = ()) -> Report:
    findings: list[Finding] = []
    for c in checks:
        findings.extend(run_check(c, ctx))
    findings.extend(extra)
    findings = [link(f) for f in findings]
    return Report(facts=ctx.facts, findings=findings, envcheck_version=__version__, command=command)


def link(f: Finding) -> Finding:
    """Attach kb entry ids to non-ok findings (by check code, then by error text)."""
    if f.status in (Status.OK, Status.SKIP) or f.kb:
        return f
    from envcheck.kb.link import entries_for

    try:
        ids = entries_for(f)
    except Exception:  # the kb must never take the report down
        return f
    if not ids:
        return f
    from dataclasses import replace

    return replace(f, kb=tuple(ids))
