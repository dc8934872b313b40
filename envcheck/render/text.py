"""Text renderer laid out like `flutter doctor`: what machine this is, a line per section, the failures.

Default view: the host line (what kind of machine), one line per section, and under it only the
failures and warnings with their fix and kb link; skips and findings explained by another failure
are counted (`-v` lists everything, with detail and evidence). On a machine with no Ascend stack
the sections give way to "here is what it would need". Long lines wrap to the terminal width with
their continuation indented under the text, never at column 0. `TextStream` prints the same report
part by part while the runner judges it (the first line right after the probe).

Every string from the report passes through `termsafe.escape_controls` (the colours are added after).
"""
from __future__ import annotations

import os
import re
import shutil
import sys
import textwrap
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

from envcheck.kb.diagnose import CONFIDENCES, DiagnoseResult, confidence_label
from envcheck.model import SECTIONS, Finding, Report, Status
from envcheck.termsafe import escape_controls

MARKS = {Status.OK: "✓", Status.WARN: "!", Status.FAIL: "✗", Status.SKIP: "-", Status.ERROR: "?"}
ASCII_MARKS = {Status.OK: "+", Status.WARN: "!", Status.FAIL: "x", Status.SKIP: "-", Status.ERROR: "?"}
COLORS = {Status.OK: "32", Status.WARN: "33", Status.FAIL: "31", Status.SKIP: "2", Status.ERROR: "35"}
VERDICT_COLORS = {"ok": "1;32", "warn": "1;33", "fail": "1;31"}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_BAD = (Status.FAIL, Status.ERROR, Status.WARN)


def use_color(mode: str = "auto", stream: TextIO | None = None) -> bool:
    """Colour only on a TTY, never with NO_COLOR (https://no-color.org), unless forced."""
    if mode == "always":
        return True
    if mode == "never" or os.environ.get("NO_COLOR"):
        return False
    stream = stream or sys.stdout
    return bool(getattr(stream, "isatty", lambda: False)())


def terminal_width(stream: TextIO | None = None) -> int:
    """Columns to wrap at: $COLUMNS when set, else the terminal's width when `stream` is a TTY, else 0
    (no wrapping: a pipe or a file keeps one finding per line for grep)."""
    cols = os.environ.get("COLUMNS", "")
    if cols.isdigit() and int(cols) >= 20:
        return int(cols)
    if stream is not None and getattr(stream, "isatty", lambda: False)():
        return max(20, shutil.get_terminal_size((80, 24)).columns)
    return 0


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
    """Where to read a kb entry: its full URL when a site URL is configured, else `envcheck kb show ID`."""
    from envcheck.kb.link import describe

    try:
        return describe(entry_id)
    except Exception:
        return f"envcheck kb show {entry_id}"


def wrap(prefix: str, text: str, indent: int, width: int) -> list[str]:
    """`prefix + text` wrapped at `width` (0: not at all); continuation lines start at column `indent`.
    `prefix` may hold colour codes (they take no columns). Words are never split (paths, URLs)."""
    out: list[str] = []
    pad = " " * indent
    for n, line in enumerate(text.split("\n") or [""]):
        first = prefix if n == 0 else pad
        if not width:
            out.append(first + line)
            continue
        room = max(20, width - len(_ANSI.sub("", first)))
        chunks = textwrap.wrap(line, width=room, break_long_words=False, break_on_hyphens=False) or [""]
        out.append(first + chunks[0])
        rest = " ".join(chunks[1:])
        if rest:
            out.extend(pad + c for c in textwrap.wrap(rest, width=max(20, width - indent),
                                                      break_long_words=False, break_on_hyphens=False))
    return out


def _clean(value: Any) -> Any:
    """Every string of a (nested) value with control characters escaped."""
    if isinstance(value, str):
        return escape_controls(value)
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_clean(v) for v in value)
    return value


def clean_findings(findings: Iterable[Finding], redact: bool = False) -> list[Finding]:
    """Findings safe to print: redacted (when not done by the output path yet) and control-escaped."""
    from envcheck.redact import scrub

    out = []
    for f in findings:
        d = f.to_dict()
        out.append(Finding.from_dict(_clean(scrub(d) if redact else d)))
    return out


def _label(f: Finding) -> str:
    """`EC201 cann-env-not-loaded` where something is wrong (the name of the failure), the bare code
    elsewhere; collapsed findings say what explains them."""
    if f.because:
        return f"{f.code}, because {f.because}"
    if f.status in _BAD:
        return f"{f.code} {f.failure}"
    return f.code


class TextReport:
    """The text layout of a check report, part by part (`head`, `section`, `tail`) or whole (`render`)."""

    def __init__(self, verbose: bool = False, color: bool = False, stream: TextIO | None = None,
                 width: int | None = None) -> None:
        self.verbose = verbose
        self.color = color
        self.marks = MARKS if _can_encode("✓✗", stream) else ASCII_MARKS
        self.width = terminal_width(stream) if width is None else width

    # -- styling ------------------------------------------------------------------------------
    def paint(self, status: Status, s: str) -> str:
        return f"\x1b[{COLORS[status]}m{s}\x1b[0m" if self.color else s

    def bold(self, s: str) -> str:
        return f"\x1b[1m{s}\x1b[0m" if self.color else s

    def mark(self, status: Status) -> str:
        return self.paint(status, self.marks[status])

    def wrap(self, prefix: str, text: str, indent: int) -> list[str]:
        return wrap(prefix, text, indent, self.width)

    # -- parts --------------------------------------------------------------------------------
    def head(self, report: Report) -> list[str]:
        """The host line (what kind of machine this is); nothing for reports that are not about a machine."""
        host = _clean(report.host or {})
        if not host.get("title"):
            return []
        title = str(host["title"])
        if host.get("kind") == "none":
            out = self.wrap("", self.bold(title[0].upper() + title[1:]) + ".", 2)
            needs = host.get("needs") or []
            if needs:
                listed = ", ".join(needs[:-1]) + (" and " if len(needs) > 1 else "") + needs[-1]
                out += self.wrap("", f"To train on NPUs it would need {listed}.", 2)
            return out
        return self.wrap("", self.bold(title[0].upper() + title[1:]), 2) + ([""] if self.verbose else [])

    def section(self, name: str, findings: Sequence[Finding], report: Report) -> list[str]:
        if report.host.get("kind") == "none" and not self.verbose:
            return self._needed(findings, report)
        shown = [f for f in findings if not f.because] if not self.verbose else list(findings)
        judged = [f for f in findings if f.status is not Status.SKIP]
        worst = max((f.status for f in judged), key=lambda s: s.severity) if judged else Status.SKIP
        head = f"[{self.mark(worst)}] {self.bold(name)}"
        if self.verbose:
            out = [head]
            out += self._verbose_lines(sorted(findings, key=lambda f: f.code), report.findings)
            return out + [""]
        bad = sorted((f for f in shown if f.status in _BAD), key=lambda f: (-f.status.severity, f.code))
        summary = self._section_summary(findings)
        out = self.wrap(head + "  ", summary, 4) if summary else [head]
        for f in bad:
            out += self._finding(f, findings_all=report.findings)
        return out

    def _section_summary(self, findings: Sequence[Finding]) -> str:
        oks = [f for f in findings if f.status is Status.OK]
        skips = [f for f in findings if f.status is Status.SKIP]
        bad = [f for f in findings if f.status in _BAD]
        parts = []
        if len(oks) == 1 and not bad:
            parts.append(oks[0].title)
        elif oks:
            parts.append(f"{len(oks)} ok")
        if skips:
            parts.append(f"{len(skips)} skipped")
        return ", ".join(parts)

    def _finding(self, f: Finding, findings_all: Sequence[Finding], indent: int = 4) -> list[str]:
        pad = " " * indent
        out = self.wrap(f"{pad}{self.mark(f.status)} ", f"{f.title}  ({_label(f)})", indent + 2)
        if self.verbose and f.detail:
            out += self.wrap(pad + "    ", f.detail, indent + 4)
        if self.verbose:
            for e in f.evidence:
                first, *rest = (e.text or "").splitlines() or [""]
                out += self.wrap(f"{pad}    · ", f"{e.source}: {first}", indent + 6)
                out += [f"{pad}      {line}" for line in rest[:20]]
        if f.fix and (f.status in _BAD or self.verbose):
            out += self.wrap(f"{pad}    fix: ", f.fix, indent + 9)
        if f.kb and (f.status in _BAD or self.verbose):
            out += self.wrap(f"{pad}    kb:  ", kb_hint(f.kb[0]), indent + 9)
        explained = sorted({g.code for g in findings_all if g.because == f.code and g.code != f.code})
        if explained and f.status in _BAD:
            verb = "fails" if len(explained) == 1 else "fail"
            out += self.wrap(f"{pad}    ", f"explains {', '.join(explained)}: {verb} because of this"
                             + ("" if self.verbose else " (-v shows how)"), indent + 4)
        return out

    def _verbose_lines(self, findings: Sequence[Finding], everything: Sequence[Finding]) -> list[str]:
        """Every finding; skips that share one title show once, with all their codes."""
        out: list[str] = []
        same: dict[str, list[Finding]] = {}
        for f in findings:
            if f.status is Status.SKIP and not f.because:
                same.setdefault(f.title, []).append(f)
        done: set[str] = set()
        for f in findings:
            group = same.get(f.title) if f.status is Status.SKIP and not f.because else None
            if group and len(group) > 1:
                if f.title not in done:
                    done.add(f.title)
                    codes = ", ".join(g.code for g in group)
                    out += self.wrap(f"    {self.mark(Status.SKIP)} ", f"{f.title}  ({codes})", 6)
                continue
            out += self._finding(f, everything)
        return out

    def _needed(self, findings: Sequence[Finding], report: Report) -> list[str]:
        """A machine with no Ascend stack: each failure on one line (its fix and kb link under -v)."""
        out: list[str] = []
        for f in sorted((f for f in findings if f.status in _BAD and not f.because),
                        key=lambda f: (-f.status.severity, f.code)):
            explained = sorted({g.code for g in report.findings if g.because == f.code and g.code != f.code})
            also = f"; explains {', '.join(explained)}" if explained else ""
            out += self.wrap(f"  {self.mark(f.status)} ", f"{f.title}  ({_label(f)}{also})", 4)
        return out

    def tail(self, report: Report) -> list[str]:
        s = report.summary
        parts = [f"{s[k.value]} {k.value}" for k in (Status.OK, Status.WARN, Status.FAIL, Status.ERROR, Status.SKIP)
                 if s[k.value]]
        v = report.verdict
        verdict = f"verdict {v}"
        note = report.verdict_note
        reason = _clean(report.reason) if v != "ok" else ""
        tail_text = verdict + (f" ({note})" if note else "") + (f": {reason}" if reason else "")
        known = report.knowledge.get("matrix_as_of")
        who = f"envcheck {report.envcheck_version}" + (f" · knowledge as of {known}" if known else "")
        out = [] if self.verbose or report.host.get("kind") == "none" else [""]
        glued = tail_text.replace(verdict, verdict.replace(" ", "\xa0"), 1)  # "verdict fail" never splits
        line = f"{who}: {', '.join(parts) or 'no findings'} — {glued}"
        wrapped = [ln.replace("\xa0", " ") for ln in self.wrap("", line, 2)]
        if self.color:  # paint the verdict after wrapping (colour codes take no columns)
            colour = VERDICT_COLORS.get(v, "1")
            wrapped = [ln.replace(verdict, f"\x1b[{colour}m{verdict}\x1b[0m", 1) for ln in wrapped]
        out += wrapped
        hidden = any(f.status is not Status.OK for f in report.findings)
        if not self.verbose and hidden:
            out.append("envcheck -v shows every check, with its detail, evidence, fix and kb link.")
        return out

    def render(self, report: Report) -> str:
        report = _escaped(report)
        out = self.head(report)
        for name, findings in group_by_section(report.findings):
            out += self.section(name, findings, report)
        out += self.tail(report)
        return "\n".join(out) + "\n"


def _escaped(report: Report) -> Report:
    from dataclasses import replace

    return replace(report, findings=clean_findings(report.findings))


def render(report: Report, verbose: bool = False, color: bool = False, stream: TextIO | None = None,
           width: int | None = None, **_: Any) -> str:
    return TextReport(verbose=verbose, color=color, stream=stream, width=width).render(report)


class TextStream:
    """Prints a check report while the runner judges it (a `runner.Listener`): the host line first,
    then each section as soon as its checks are done; `finish` returns the tail. Redacts and escapes
    what it prints (the output path's redaction comes too late for a stream)."""

    def __init__(self, out: TextIO, verbose: bool = False, color: bool = False, err: TextIO | None = None) -> None:
        self.out = out
        self.err = err if err is not None else sys.stderr
        self.layout = TextReport(verbose=verbose, color=color, stream=out)
        self.done: set[str] = set()
        self._progress = False

    def _write(self, lines: list[str]) -> None:
        if lines:
            self.progress("")
            self.out.write("\n".join(lines) + "\n")
            self.out.flush()

    def start(self, report: Report) -> None:
        from envcheck.redact import scrub

        shown = Report(facts=report.facts, findings=[], host=scrub(dict(report.host)))
        self._write(self.layout.head(shown))

    def progress(self, text: str) -> None:
        """A transient status line on a TTY (stderr): overwritten by the next line, cleared by ''."""
        if not getattr(self.err, "isatty", lambda: False)():
            return
        width = shutil.get_terminal_size((80, 24)).columns
        if text:
            self.err.write("\r\x1b[K" + escape_controls(text)[: max(10, width - 1)])
            self._progress = True
        elif self._progress:
            self.err.write("\r\x1b[K")
            self._progress = False
        self.err.flush()

    def sections(self, report: Report, names: Sequence[str]) -> None:
        from dataclasses import replace

        clean = replace(report, findings=clean_findings(report.findings, redact=True))
        lines: list[str] = []
        for name, findings in group_by_section(clean.findings):
            if name in names and name not in self.done:
                self.done.add(name)
                lines += self.layout.section(name, findings, clean)
        self._write(lines)

    def finish(self, report: Report) -> str:
        """The rest of the report (sections not streamed yet, then the tail), from the redacted report."""
        report = _escaped(report)
        out: list[str] = []
        for name, findings in group_by_section(report.findings):
            if name not in self.done:
                self.done.add(name)
                out += self.layout.section(name, findings, report)
        out += self.layout.tail(report)
        self.progress("")
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
        how = {c: sum(1 for m in real if m.get("confidence") == c) for c in CONFIDENCES}
        words = {"code": "by error code", "versions": "by the stated versions", "message": "by known message"}
        detail = ", ".join(f"{v} {words.get(c, c)}" for c, v in how.items() if v)
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
        conf = confidence_label(m.get("severity", ""), m.get("confidence", "matched"), bool(m.get("weak")))
        out.append("")
        out.append(f"{i:2d}. {bold(m['id'])}  [{m['category']}]  {m['hits']} hit{'s' if m['hits'] != 1 else ''}"
                   f"  ({conf})")
        if m["title"]:
            out.append(f"    {m['title']}")
        if m.get("reason"):
            out.append(f"    why: {m['reason']}")
        if m.get("weak"):
            out.append(f"    weak: several causes print this {'code' if m.get('confidence') == 'code' else 'line'};"
                       " a specific error near it, if any, names the cause")
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
        # a page is worth printing only as a full URL (ENVCHECK_SITE_URL set); a relative path helps nobody
        page = m["page"] if str(m["page"]).startswith(("http://", "https://")) else ""
        out.append(f"    more: {m['kb_show']}" + (f"; {page}" if page else ""))
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
