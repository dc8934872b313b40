"""Markdown renderer: a report to paste into a GitHub / Gitee issue.

A summary table, the failures and warnings with their fixes, and the facts in a collapsed
``<details>`` block. Secrets are already redacted by the output path (render.render).
"""
from __future__ import annotations

import json
from typing import Any

from envcheck.kb.diagnose import DiagnoseResult, confidence_label
from envcheck.model import Report, Status

MARK = {Status.OK: "✅", Status.WARN: "⚠️", Status.FAIL: "❌", Status.ERROR: "❓", Status.SKIP: "➖"}


def cell(text: str) -> str:
    """Text safe inside a table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def fence(text: str, lang: str = "") -> str:
    """A code block whose fence is longer than any backtick run inside it."""
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}"


def render(report: Report, verbose: bool = False, **_: Any) -> str:
    s = report.summary
    counts = ", ".join(f"{s[k.value]} {k.value}" for k in Status if s[k.value])
    verdict = report.verdict + (f" ({report.verdict_note})" if report.verdict_note else "")
    out = [f"## envcheck report: verdict **{verdict}**", ""]
    host = report.host or {}
    if host.get("title"):  # what kind of machine this is, and what it would need
        out += [f"**{cell(str(host['title']))}**", ""]
        out += [f"- needs {cell(str(n))}" for n in host.get("needs") or []] + ([""] if host.get("needs") else [])
    as_of = (report.knowledge or {}).get("matrix_as_of")
    out += [f"envcheck {report.envcheck_version} · `{report.command}` · {counts or 'no findings'}"
            + (f" · knowledge as of {as_of}" if as_of else ""), ""]
    shown = [f for f in report.findings if f.status is not Status.SKIP or verbose]
    if shown:
        out += ["| | Code | Section | Finding |", "| --- | --- | --- | --- |"]
        out += [f"| {MARK[f.status]} | {f.code} `{f.slug}` | {cell(f.section)} | {cell(f.title)} |" for f in shown]
        out.append("")
    skipped = s[Status.SKIP.value]
    if skipped and not verbose:
        out += [f"{skipped} check(s) skipped (not applicable here).", ""]
    bad = [f for f in report.findings if f.status in (Status.FAIL, Status.ERROR, Status.WARN)]
    if bad:
        out += ["### Failures and warnings", ""]
    for f in sorted(bad, key=lambda f: -f.status.severity):
        out += [f"#### {MARK[f.status]} {f.code} {f.slug}: {f.title}", ""]
        explains = [g.code for g in report.findings if g.because == f.code]
        if explains:
            out += [f"Explains {', '.join(dict.fromkeys(explains))} (collapsed under this cause).", ""]
        if f.detail:
            out += [fence(f.detail), ""]
        if f.evidence:
            out += [f"- {e.source}: `{cell(e.text)}`" for e in f.evidence] + [""]
        if f.fix:
            out += [f"**Fix:** {f.fix}", ""]
        if f.kb:
            out += ["**kb:** " + ", ".join(f"`envcheck kb show {k}`" for k in f.kb), ""]
    facts = json.dumps(report.facts.to_dict(), indent=2, ensure_ascii=False)
    out += ["<details><summary>Facts (what envcheck read)</summary>", "", fence(facts, "json"), "", "</details>", ""]
    return "\n".join(out)


def render_diagnose(result: DiagnoseResult, **_: Any) -> str:
    st = result.stats
    real = [m for m in result.matches if m.severity != "benign"]
    out = ["## envcheck diagnose", "",
           f"{len(real)} matching kb entr{'y' if len(real) == 1 else 'ies'} in "
           f"{st.get('files', 0)} input(s), {st.get('lines', 0):,} lines, {st.get('error_lines', 0):,} error lines", ""]
    ff = result.first_failure
    if ff:
        out += ["### First failure", "", f"**{cell(_who(ff))}** at `{cell(str(ff.get('file')))}:{ff.get('line')}`"
                + (f" ({ff['timestamp']})" if ff.get("timestamp") else ""), "", fence(str(ff.get("text", ""))), ""]
        waited = ff.get("others_timed_out") or []
        if waited:
            out += [f"Only timed out waiting for it: {cell(', '.join(_who(w) for w in waited))}", ""]
        failed = ff.get("others_failed") or []
        if failed:
            out += [f"Failed later: {cell(', '.join(_who(w) for w in failed))}", ""]
    if result.matches:
        out += ["| # | kb entry | Category | Confidence | Hits |", "| --- | --- | --- | --- | --- |"]
        out += [f"| {i} | `{m.id}`: {cell(m.title)} | {m.category} | "
                f"{confidence_label(m.severity, m.confidence, m.weak)} | {m.hits} |"
                for i, m in enumerate(result.matches, 1)]
        out.append("")
    for i, m in enumerate(result.matches, 1):
        out += [f"### {i}. {m.title or m.id}", ""]
        lines = "\n".join(f"{h.get('file')}:{h.get('line')}: {h.get('text')}" for h in m.lines)
        if m.reason:
            out += [f"**Why:** {cell(m.reason)}", ""]
        if lines:
            out += [fence(lines), ""]
        if m.fix and m.severity != "benign":
            out += [f"**Fix:** {m.fix}", ""]
        url = m.page if m.page.startswith(("http://", "https://")) else ""
        out += [f"More: `{m.kb_show}`" + (f" · {url}" if url else ""), ""]
    if result.codes:
        out += ["### Error codes found", "", "| Code | Name | Category | Meaning | Count |",
                "| --- | --- | --- | --- | --- |"]
        out += [f"| `{c.code}` | {cell(c.name)} | {c.category}{' (generic)' if c.generic else ''} | "
                f"{cell(c.meaning)} | {c.count} |" for c in result.codes]
        out.append("")
    if result.unknown_codes:
        out += ["### Error codes no kb entry knows yet", ""]
        out += [f"- `{c.code}` ×{c.count}" for c in result.unknown_codes] + [""]
    if result.benign:
        out += ["### Known harmless warnings", ""]
        out += [f"- ×{b.get('count')} `{cell(str(b.get('file')))}:{b.get('line')}`: {cell(str(b.get('why')))}"
                for b in result.benign] + [""]
    if result.notes:
        out += ["<details><summary>Notes</summary>", ""] + [f"- {n}" for n in result.notes] + ["", "</details>", ""]
    return "\n".join(out)


def _who(p: dict[str, Any]) -> str:
    if p.get("rank") is not None:
        return f"rank {p['rank']}" + (f" on {p['host']}" if p.get("host") else "")
    return (f"{p['host']}: " if p.get("host") else "") + str(p.get("file"))
