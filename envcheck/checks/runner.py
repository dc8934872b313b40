"""Run checks against a Context and assemble the Report; a raising check becomes an ERROR finding.

After the checks ran, `finish` gives every report the same shape: findings whose cause failed in
the same report collapse under it (`collapse`: one cause, one failure, one fix), and the failures
that stand get their kb links (`link`). `run` can tell a listener about each part as soon as it is
judged (the text report prints sections while the smoke tests still run): first the host, then
every section but the smoke tests (fast checks), then the smoke tests.
"""
from __future__ import annotations

import traceback
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any, Protocol

from envcheck.checks.registry import Check, Context
from envcheck.model import Facts, Finding, Report, Status, ev
from envcheck.version import __version__

SLOW_SECTIONS = ("Smoke tests",)
"""Sections whose checks run child processes for seconds: judged (and streamed) after the others."""
_CAUSES = (Status.FAIL, Status.ERROR)


class Listener(Protocol):
    """Told about a report while it is being built (the text renderer streams it)."""

    def start(self, report: Report) -> None: ...

    def progress(self, text: str) -> None: ...

    def sections(self, report: Report, names: Sequence[str]) -> None: ...


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


def run(checks: Iterable[Check], ctx: Context, command: str = "check", extra: Iterable[Finding] = (),
        frame: bool = False, listener: Listener | None = None) -> Report:
    """Run `checks` (fast sections first, then the smoke tests) and build the Report.

    frame: say what kind of machine this is (`Report.host`): only for reports about a live machine
    (`envcheck`, `--facts`), never for planned versions. listener: streamed parts (see Listener)."""
    checks = list(checks)
    report = Report(facts=ctx.facts, findings=[], envcheck_version=__version__, command=command)
    if frame:
        from envcheck.checks.host import classify

        report.host = classify(ctx.facts)
    if listener is not None:
        listener.start(report)
    fast = [c for c in checks if c.section not in SLOW_SECTIONS]
    slow = [c for c in checks if c.section in SLOW_SECTIONS]
    found: list[Finding] = []
    worst: dict[str, Status] = {}

    def run_one(c: Check) -> None:
        # `requires`: a cause that already failed (or could not run) in this run makes the check pointless:
        # it does not run (no child process is started for it) and reports nothing; the cause is the one line
        if any(worst.get(code, Status.OK) is not Status.OK for code in c.requires):
            return
        got = run_check(c, ctx)
        for f in got:
            worst[f.code] = max(worst.get(f.code, Status.OK), f.status, key=lambda s: s.severity)
        found.extend(got)

    for c in fast:
        run_one(c)
    if listener is not None and slow:
        report.findings = finish(found, ctx.facts)
        report.knowledge = knowledge(ctx)
        listener.sections(report, _sections(report.findings))
        listener.progress("running the smoke tests (torch import" + (", operators" if len(slow) > 1 else "") + ") …")
    for c in slow:
        run_one(c)
    found.extend(extra)
    report.findings = finish(found, ctx.facts)
    report.knowledge = knowledge(ctx)
    report.verdict_note = tested_note(report.findings)
    if listener is not None:
        listener.progress("")
        listener.sections(report, _sections(report.findings))
    return report


def _sections(findings: Sequence[Finding]) -> list[str]:
    return list(dict.fromkeys(f.section for f in findings))


def finish(findings: Iterable[Finding], facts: Facts | None = None) -> list[Finding]:
    """Collapse explained findings under their cause, then link the ones that stand to the kb; with
    the probed `facts`, kb links and gated advice follow the versions found (`gate`)."""
    out = [link(f) for f in collapse(list(findings))]
    if facts is None:
        return out
    versions = probed_versions(facts)
    return [gate(f, versions) for f in out]


def probed_versions(facts: Facts) -> dict[str, str | None]:
    """The versions kb gates are judged on (envcheck/kb/gate.py keys); None = not probed."""
    return {"torch_npu": facts.package("torch-npu"), "torch": facts.package("torch"),
            "mindspore": facts.package("mindspore"), "python": facts.python_version,
            "cann": facts.cann_version, "driver": facts.driver_version}


def gate(f: Finding, versions: dict[str, str | None]) -> Finding:
    """kb version gates on a finding's advice: drop linked entries whose `applies_to` rules out the probed
    versions, and mark every gated variable or fix its own fix text names that the probed versions do not
    (or may not) have: "TORCH_NPU_FALLBACK_CPU_DISABLE=1 (needs torch_npu >=2.13.0; probed 2.12.0: does not
    apply)". Findings without kb links are left alone."""
    if not f.kb or f.status in (Status.OK, Status.SKIP):
        return f
    from envcheck.kb.entries import load_kb
    from envcheck.kb.gate import entry_gates, gate_status

    try:
        kb = load_kb()
    except Exception:  # the kb must never take the report down
        return f
    entries = [e for e in (kb.get(i) for i in f.kb) if e is not None]
    keep = tuple(e.id for e in entries if gate_status(e, versions)[0] is not False)
    fix, marked = f.fix, set()
    for e in entries:
        for g in entry_gates(e):
            what = str(g.get("what", ""))
            if not what or what in marked or what not in fix:
                continue
            applies, text = gate_status(g, versions)
            if applies is True:
                continue
            marked.add(what)
            fix = fix.replace(what, f"{what} ({text})", 1)
    if keep == f.kb and fix == f.fix:
        return f
    return replace(f, kb=keep, fix=fix)


def collapse(findings: list[Finding]) -> list[Finding]:
    """One cause, one failure: a non-ok finding whose `depends` names a code that fails (or errors) in
    the same report becomes a skip `because` that code (its own status kept in data["collapsed"],
    its fix and kb dropped: the cause's fix is the one fix). Findings are taken in report order and a
    collapsed finding is never a cause, so two findings naming each other cannot both vanish; `because`
    names the root of a chain (EC402 -> EC401 -> EC301 says "because EC301")."""
    out = list(findings)
    standing: dict[str, int] = {}
    for f in out:
        if f.status in _CAUSES and not f.because:
            standing[f.code] = standing.get(f.code, 0) + 1
    under: dict[int, str] = {}
    for i, f in enumerate(out):
        if f.because or f.status in (Status.OK, Status.SKIP) or not f.depends:
            continue
        cause = next((c for c in f.depends if c != f.code and standing.get(c)), None)
        if cause is None:
            continue
        under[i] = cause
        if f.status in _CAUSES:
            standing[f.code] -= 1
    if not under:
        return out
    code_cause = {out[i].code: c for i, c in under.items() if not standing.get(out[i].code)}
    for i, cause in under.items():
        seen = {out[i].code}
        while not standing.get(cause) and cause in code_cause and cause not in seen:
            seen.add(cause)
            cause = code_cause[cause]
        f = out[i]
        out[i] = replace(f, status=Status.SKIP, because=cause, fix="", kb=(),
                         data={**dict(f.data), "collapsed": f.status.value})
    return out


def knowledge(ctx: Context) -> dict[str, Any]:
    """How current the judgement is: the matrix's as-of date, when this run loaded the matrix."""
    mx = ctx.loaded_matrix
    if mx is None:
        return {}
    return {"matrix_as_of": mx.as_of, "matrix": str(mx.path)}


def tested_note(findings: Iterable[Finding]) -> str:
    """The qualifier a verdict needs when the smoke tests ran but never touched an NPU."""
    devices = {str(f.data.get("device")) for f in findings
               if f.code.startswith("EC4") and f.status is not Status.SKIP and f.data.get("device")}
    if devices and not any(d.startswith("npu") for d in devices):
        shown = ", ".join(sorted(devices))
        return f"{shown} only: nothing about the NPU was tested"
    return ""


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
    return replace(f, kb=tuple(ids))
