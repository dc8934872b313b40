"""Text renderer laid out like `flutter doctor`: a section per area, one mark per finding."""
from __future__ import annotations

import os
import sys
from typing import Any, Iterable, TextIO

from envcheck.kb.diagnose import DiagnoseResult
from envcheck.model import SECTIONS, Finding, Report, Status

MARKS = {Status.OK: "✓", Status.WARN: "!", Status.FAIL: "✗", Status.SKIP: "-", Status.ERROR: "?"}
ASCII_MARKS = {Status.OK: "+", Status.WARN: "!", Status.FAIL: "x", Status.SKIP: "-", Status.ERROR: "?"}
COLORS = {Status.OK: "32", Status.WARN: "33", Status.FAIL: "31", Status.SKIP: "2", Status.ERROR: "35"}


def use_color(mode: str = "auto", stream: TextIO | None = None) -> bool:
    """Colour only on a TTY, never with NO_COLOR (https://no-color.org), unless forced."""
    if mode == "always":
        return True
    if mode == "never" or os.environ.get("NO_COLOR"):
        return False
    stream = stream or sys.stdout
    return bool(getattr(stream, "isatty", lambda: False)())


def _can_encode(s: str, stream: TextIO | None) -> bool:
    enc = getattr(stream or sys.stdout, "encoding", None) or "utf-8"
    try:
        s.encode(enc)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def group_by_section(findings: Iterable[Finding]) -> list[tuple[str, list[Finding]]]:
    groups: dict[str, list[Finding]] = {}
    for f in findings:
        groups.setdefault(f.section, []).append(f)
    order = {s: i for i, s in enumerate(SECTIONS)}
    return sorted(groups.items(), key=lambda kv: order.get(kv[0], len(order)))


def kb_hint(entry_id: str) -> str:
    """Where to read a kb entry: the title if the kb is available, and both addresses."""
    from envcheck.kb.link import describe

    try:
        return describe(entry_id)
    except Exception:
        return f"envcheck kb show {entry_id}"


def render(report: Report, verbose: bool = False, color: bool = False, stream: TextIO | None = None,
           **_: Any) -> str:
    marks = MARKS if _can_encode("✓✗", stream) else ASCII_MARKS

    def paint(status: Status, s: str) -> str:
        return f"\x1b[{COLORS[status]}m{s}\x1b[0m" if color else s

    def bold(s: str) -> str:
        return f"\x1b[1m{s}\x1b[0m" if color else s

    out: list[str] = []
    for section, findings in group_by_section(report.findings):
        worst = max((f.status for f in findings), key=lambda s: s.severity)
        out.append(f"[{paint(worst, marks[worst])}] {bold(section)}")
        for f in findings:
            bad = f.status not in (Status.OK, Status.SKIP)
            # Slugs name the failure (cann-not-found): show them only where something is wrong.
            label = f"{f.code} {f.slug}" if bad else f.code
            out.append(f"    {paint(f.status, marks[f.status])} {f.title}  ({label})")
            if verbose and f.detail:
                out.extend("        " + line for line in f.detail.splitlines())
            if verbose:
                for e in f.evidence:
                    first, *rest = (e.text or "").splitlines() or [""]
                    out.append(f"        · {e.source}: {first}")
                    out.extend("          " + line for line in rest[:20])
            if f.fix and (bad or verbose):
                out.append(f"        fix: {f.fix}")
            if f.kb and (bad or verbose):
                out.append(f"        kb:  {kb_hint(f.kb[0])}")
        out.append("")
    s = report.summary
    parts = [f"{s[k.value]} {k.value}" for k in (Status.OK, Status.WARN, Status.FAIL, Status.ERROR, Status.SKIP)
             if s[k.value]]
    verdict = report.verdict
    out.append(f"envcheck {report.envcheck_version}: {', '.join(parts) or 'no findings'} — verdict {verdict}")
    if not verbose and any(f.status is not Status.OK for f in report.findings):
        out.append("Run with -v for details, evidence and fixes.")
    return "\n".join(out) + "\n"


def render_diagnose(result: DiagnoseResult, verbose: bool = False, color: bool = False, **_: Any) -> str:
    """The diagnosis as text: the first failing rank, the entries best first (with how sure each is,
    its lines and the fix), what the error codes mean, codes nobody knows, harmless warnings, notes."""
    d = result.to_dict()

    def bold(s: str) -> str:
        return f"\x1b[1m{s}\x1b[0m" if color else s

    st = d["stats"]
    where = (f"{st['files']} input{'s' if st['files'] != 1 else ''} "
             f"({st['lines']:,} lines, {st['bytes'] / 1e6:.1f} MB, {st['seconds']:.2f} s)")
    real = [m for m in d["matches"] if m.get("severity") != "benign"]
    errors = st.get("error_lines", 0)
    out = []
    if real and all(m.get("confidence") == "likely" for m in real):
        out.append(f"envcheck diagnose: no kb pattern matched the {errors:,} error line{'s' if errors != 1 else ''} "
                   f"in {where}; the closest kb entries (likely):")
    elif real:
        n = len(real)
        how = {c: sum(1 for m in real if m.get("confidence") == c) for c in ("matched", "code", "likely")}
        detail = ", ".join(f"{v} {'by error code' if c == 'code' else c}" for c, v in how.items() if v)
        out.append(f"envcheck diagnose: {n} matching kb entr{'ies' if n != 1 else 'y'} in {where}"
                   + (f" ({detail})" if how["matched"] != n else ""))
    elif errors or d["codes"] or d["unknown_codes"]:
        out.append(f"envcheck diagnose: no kb entry matched the {errors:,} error line{'s' if errors != 1 else ''} "
                   f"in {where}")
    else:
        out.append(f"envcheck diagnose: no known pitfall found in {where}")
    ff = d.get("first_failure")
    if ff:
        out.append("")
        out.append(f"First failure: {_who(ff)} at {ff['file']}:{ff['line']}"
                   + (f" ({ff['timestamp']})" if ff.get("timestamp") else ""))
        out.append(f"    {ff['text']}")
        waited = ff.get("others_timed_out") or []
        if waited:
            out.append(f"    {len(waited)} other{'s' if len(waited) != 1 else ''} only timed out waiting for it: "
                       + ", ".join(_who(w) for w in waited))
        failed = ff.get("others_failed") or []
        if failed:
            out.append("    failed later: " + ", ".join(_who(w) for w in failed))
    for i, m in enumerate(d["matches"], 1):
        conf = "benign warning" if m.get("severity") == "benign" else m.get("confidence", "matched")
        out.append("")
        out.append(f"{i:2d}. {bold(m['id'])}  [{m['category']}]  {m['hits']} hit{'s' if m['hits'] != 1 else ''}"
                   f"  ({conf})")
        if m["title"]:
            out.append(f"    {m['title']}")
        for h in m["lines"]:
            out.append(f"    {h['file']}:{h['line']}: {h['text']}")
        if m["more_hits"]:
            out.append(f"    … {m['more_hits']} more hit{'s' if m['more_hits'] != 1 else ''}")
        if m.get("codes"):
            out.append(f"    codes: {', '.join(m['codes'])}")
        if verbose:
            out.append(f"    specificity: {m['specificity']}; severity: {m.get('severity')}")
        fix = (m["fix"] or "").splitlines()
        if fix and m.get("severity") != "benign":
            out.append(f"    fix: {fix[0]}")
            out.extend(f"         {line}" for line in fix[1:])
        out.append(f"    more: {m['kb_show']}; site: {m['page']}")
    if d["codes"]:
        out.append("")
        out.append("Error codes found:")
        for c in d["codes"]:
            first = c["first"] or {}
            tag = ", generic: look at the first specific error near it" if c["generic"] else ""
            out.append(f"    {c['code']:<9} {c['name']} ×{c['count']} [{c['category']}{tag}]")
            out.append(f"              {c['meaning']}")
            if verbose:
                out.append(f"              {first.get('file')}:{first.get('line')}: {first.get('text')}")
    if d["unknown_codes"]:
        out.append("")
        out.append("Error codes no kb entry knows yet (not in the error-code dictionary either; worth a kb entry):")
        for c in d["unknown_codes"]:
            first = c["first"] or {}
            out.append(f"    {c['code']:<9} ×{c['count']:<5} {first.get('file')}:{first.get('line')}: "
                       f"{first.get('text')}")
    if d.get("benign"):
        out.append("")
        out.append("Known harmless warnings (not the cause):")
        for b in d["benign"]:
            out.append(f"    ×{b['count']:<5} {b['file']}:{b['line']}: {b['why']}")
    if d["notes"]:
        out.append("")
        out.append("Notes:")
        out.extend(f"    {n}" for n in d["notes"])
    return "\n".join(out) + "\n"


def _who(p: dict[str, Any]) -> str:
    """'rank 3 on node-a' / 'rank 3' / the file, for the first-failure lines."""
    if p.get("rank") is not None:
        return f"rank {p['rank']}" + (f" on {p['host']}" if p.get("host") else "")
    return (f"{p['host']}: " if p.get("host") else "") + str(p.get("file"))
