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
    worst: dict[str, Status] = {}
    for c in checks:
        if any(worst.get(code, Status.OK) is not Status.OK for code in c.requires):
            continue  # its cause already failed (or could not run) in this run: one cause, one line
        found = run_check(c, ctx)
        for f in found:
            worst[f.code] = max(worst.get(f.code, Status.OK), f.status, key=lambda s: s.severity)
        findings.extend(found)
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
