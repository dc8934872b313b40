"""Markdown for the site pages generated from the data: entry headers, categories, checks, error codes.

Entries stay plain Markdown with plain front matter; everything site-specific is added here, at
build time, by envcheck/kb/mkdocs_hooks.py. Links are relative `.md` paths so `mkdocs build
--strict` validates them.
"""
from __future__ import annotations

import html
import inspect
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from envcheck.kb.entries import Entry
from envcheck.kb.taxonomy import CATEGORIES


def esc(text: Any) -> str:
    """Prose from the data, safe inside Markdown: HTML escaped, table pipes escaped."""
    return html.escape(str(text), quote=False).replace("|", "\\|")


_TICKS_RE = re.compile(r"`+")


def md_inline(text: Any, table: bool = False, emphasis: bool = False) -> str:
    """Markdown text from the data rendered as Markdown: `code spans` stay code, the rest is HTML
    escaped once (a code span escapes its own content, so `<v>` inside one is never escaped twice).
    A backtick without its closing run is shown as a literal backtick. table: escape pipes too;
    emphasis: keep `*emphasis*` (docstrings) instead of showing the stars."""
    s = str(text)
    out: list[str] = []
    pos = 0
    while True:
        m = _TICKS_RE.search(s, pos)
        if m is None:
            out.append(_esc_md(s[pos:], emphasis))
            break
        out.append(_esc_md(s[pos:m.start()], emphasis))
        run = m.group(0)
        close = re.compile(rf"(?<!`){run}(?!`)").search(s, m.end())
        if close is None:
            out.append("\\`" * len(run))
            pos = m.end()
            continue
        out.append(s[m.start():close.end()].replace("\n", " "))
        pos = close.end()
    joined = "".join(out)
    return joined.replace("|", "\\|") if table else joined


def _esc_md(s: str, emphasis: bool = False) -> str:
    out = html.escape(s, quote=False)
    return out if emphasis else out.replace("*", "\\*")


def plain(text: Any) -> str:
    """Text without Markdown code fences, for HTML titles and tag lists ("`ImportError`" -> "ImportError")."""
    return re.sub(r"`+([^`]*?)`+", r"\1", str(text)).replace("`", "")


def code(text: Any) -> str:
    """An inline code span that survives backticks inside text."""
    s = str(text).replace("\n", " ")
    fence = "`" * (max((len(m) for m in re.findall(r"`+", s)), default=0) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def rel(src: str, target: str) -> str:
    """Relative link from the page whose source is src to the source file target."""
    return posixpath.relpath(target, posixpath.dirname(src) or ".")


def entry_src(e: Entry) -> str:
    return f"kb/{e.category}/{e.id}.md"


def code_anchor(c: str) -> str:
    return "code-" + re.sub(r"[^a-z0-9]+", "-", c.lower()).strip("-")


@dataclass(frozen=True)
class CheckInfo:
    code: str
    slug: str
    summary: str
    section: str
    doc: str
    failable: bool
    retired: str = ""
    replaced_by: str = ""


def check_infos() -> list[CheckInfo]:
    """Registered checks and tombstones, from envcheck.checks (code order)."""
    from envcheck.checks import RETIRED, all_checks

    out = [CheckInfo(c.code, c.slug, c.summary, c.section, inspect.getdoc(c.fn) or "", c.failable)
           for c in all_checks()]
    out += [CheckInfo(r.code, r.slug, "", "", "", False, r.retired, r.replaced_by or "") for r in RETIRED]
    return sorted(out, key=lambda c: c.code)


# ---------------------------------------------------------------------------- entry pages

SECTION_LABELS = {"symptom": "Symptom 现象", "cause": "Cause 原因", "fix": "Fix 解决",
                  "verify": "Verify 验证", "see also": "See also 另见", "sources": "Sources 来源"}
_SECTION_RE = re.compile(r"^##[ \t]+(symptoms?|cause|fix|verify|see also)[ \t]*$", re.IGNORECASE | re.MULTILINE)
APPLIES_NAMES = {"cann": "CANN", "driver": "driver (HDK)", "torch": "PyTorch", "torch_npu": "torch_npu",
                 "python": "Python", "mindspore": "MindSpore", "chip": "chip"}
_OPS = {">=": "≥", "<=": "≤", "!=": "≠", "==": "=", "~=": "~=", ">": ">", "<": "<", "=": "="}


def entry_header(e: Entry, src: str, check_codes: set[str]) -> str:
    """Title, Chinese title and summary, metadata table (and, when the body has no Symptom section,
    the symptoms) of an entry page. The body's sections are relabelled by entry_body()."""
    cat = f"[{CATEGORIES.get(e.category, e.category)}]({rel(src, f'kb/{e.category}/index.md')})"
    checks = ", ".join(f"[{c}]({rel(src, f'checks/{c}.md')})" if c in check_codes else c for c in e.checks)
    codes = ", ".join(f"[{c}]({rel(src, 'error-codes.md')}#{code_anchor(c)})" for c in e.error_codes)
    applies = "; ".join(version_gates(e))
    rows = [("id", code(e.id)), ("category 类别", cat), ("checks 检查项", checks),
            ("error codes 错误码", codes),
            ("applies to 适用版本", esc(applies)), ("offline 离线", code(f"envcheck kb show {e.id}"))]
    zh = f'<p class="kb-title-zh" lang="zh"><strong>{esc(e.title_zh)}</strong></p>'
    out = [f"# {md_inline(e.title)}", "", zh, ""]
    if e.summary_zh:
        out += ['!!! abstract "摘要 Summary"', "", f"    {esc(e.summary_zh)}", ""]
    out += _kv_table([(k, v) for k, v in rows if v])
    if not _section_span(e.body, "symptom"):
        out += [_heading("symptom"), ""] + symptoms_block(e)
    if e.applies_to and not _section_span(e.body, "fix"):
        out += gate_block(e)
    return "\n".join(out) + "\n"


def _heading(key: str) -> str:
    return f"## {SECTION_LABELS[key]} {{ #{key.replace(' ', '-')} }}"


def _section_span(body: str, key: str) -> re.Match | None:
    for m in _SECTION_RE.finditer(body):
        if _section_key(m.group(1)) == key:
            return m
    return None


def _section_key(name: str) -> str:
    low = name.lower()
    return "symptom" if low.startswith("symptom") else low


def symptoms_block(e: Entry) -> list[str]:
    """The symptoms as a Markdown list (code where the entry backticks it), then the patterns."""
    out: list[str] = []
    if e.symptoms:
        out += ['<p class="envcheck-label">What you see 你会看到</p>', ""]
        out += [f"- {md_inline(s)}" for s in e.symptoms] + [""]
    if e.patterns:
        out += ['??? example "Patterns envcheck matches in error output 报错匹配规则"', ""]
        for p in e.patterns:
            out += [f"    - regex {code(p.regex)}"] + [f"        - {code(x)}" for x in p.examples]
        out.append("")
    return out


def version_gates(e: Entry) -> list[str]:
    """applies_to in words: {torch_npu: ">=2.1"} -> ["torch_npu ≥ 2.1"]."""
    return _versions_in_words(e.applies_to)


def _versions_in_words(applies_to: dict) -> list[str]:
    out = []
    for key, spec in applies_to.items():
        name = APPLIES_NAMES.get(str(key), str(key))
        values = spec if isinstance(spec, (list, tuple)) else [spec]
        parts = []
        for v in values:
            for clause in str(v).split(","):
                m = re.match(r"^\s*(>=|<=|!=|==|~=|>|<|=)?\s*(.+?)\s*$", clause)
                if m:
                    parts.append(f"{_OPS[m.group(1)]} {m.group(2)}" if m.group(1) else m.group(2))
        if parts:
            out.append(f"{name} {' and '.join(parts)}")
    return out


def fix_gates(e: Entry) -> list[tuple[str, str, str]]:
    """Gated advice inside an entry (front matter `gates`): (what, versions in words, note)."""
    from envcheck.kb.gate import entry_gates

    return [(str(g["what"]), "; ".join(_versions_in_words(g["applies_to"])), str(g.get("note") or ""))
            for g in entry_gates(e) if g.get("what")]


def gate_block(e: Entry) -> list[str]:
    """The version gates, shown at the top of the Fix section: the whole fix needs these versions
    (`applies_to`), and single variables or steps need theirs (`gates`)."""
    gates = version_gates(e)
    out: list[str] = []
    if gates:
        en = "; ".join(gates)
        out += ['!!! warning envcheck-gate "Version gate 版本要求"', "",
                f"    **Needs {esc(en)}.** 需要 {esc(en)}。", "",
                "    This fix applies only to these versions; check yours with `envcheck probe`.", ""]
    for what, words, note in fix_gates(e):
        out += [f'!!! note envcheck-gate "{esc(what)}: version gate 版本要求"', "",
                f"    `{what}` **needs {esc(words)}**; 需要 {esc(words)}。" + (f" {esc(note)}" if note else ""), ""]
    return out


def entry_body(e: Entry, body: str) -> str:
    """The entry's own Markdown with bilingual section headings (stable ids #symptom, #cause, #fix,
    #verify), the symptom list under Symptom and the version gate under Fix."""
    def repl(m: re.Match) -> str:
        key = _section_key(m.group(1))
        extra: list[str] = []
        if key == "symptom":
            extra = symptoms_block(e)
        elif key == "fix" and (e.applies_to or fix_gates(e)):
            extra = gate_block(e)
        return "\n".join([_heading(key), ""] + extra)

    seen: set[str] = set()

    def once(m: re.Match) -> str:
        key = _section_key(m.group(1))
        if key in seen:
            return m.group(0)
        seen.add(key)
        return repl(m)

    return _SECTION_RE.sub(once, body)


def _kv_table(rows: list[tuple[str, str]]) -> list[str]:
    """A two-column key/value table under a small "field / value" header."""
    if not rows:
        return []
    return ['<div class="envcheck-facts" markdown>', "", "| field 项 | value 值 |", "| --- | --- |"] \
        + [f"| {k} | {v} |" for k, v in rows] + ["", "</div>", ""]


def entry_footer(e: Entry) -> str:
    if not e.sources:
        return ""
    # a source quotes messages in `code spans` (`... should <=192!`): escaped once, as symptoms are
    items = [f"- <{s}>" if re.match(r"^https?://\S+$", s) else f"- {md_inline(s)}" for s in e.sources]
    return f"\n\n{_heading('sources')}\n\n" + "\n".join(items) + "\n"


# ---------------------------------------------------------------------------- listings

def _entry_line(e: Entry, src: str) -> str:
    return f"| [{md_inline(e.title, table=True)}]({rel(src, entry_src(e))}) | {esc(e.title_zh)} |"


def category_page(cat: str, entries: list[Entry]) -> str:
    """A category's listing. Kept out of the search index: it repeats its entries' titles, so a query would find
    the listing next to (or above) the entry itself."""
    src = f"kb/{cat}/index.md"
    out = ["---", "search:", "  exclude: true", "---", "", f"# {CATEGORIES[cat]}", "", f"Category id {code(cat)}.", ""]
    if not entries:
        return "\n".join(out + ["No entries yet."]) + "\n"
    out += ["| entry | 中文 |", "| --- | --- |"] + [_entry_line(e, src) for e in entries]
    return "\n".join(out) + "\n"


def categories_table(by_cat: dict[str, list[Entry]], src: str) -> str:
    out = ["| category | id | entries |", "| --- | --- | --- |"]
    for cat, title in CATEGORIES.items():
        out.append(f"| [{title}]({rel(src, f'kb/{cat}/index.md')}) | {code(cat)} | {len(by_cat.get(cat, []))} |")
    return "\n".join(out) + "\n"


def checks_index(checks: list[CheckInfo], entries: list[Entry]) -> str:
    src = "checks/index.md"
    out = ["# Check reference", "",
           "Every check envcheck runs, by code. `envcheck explain CODE` prints the same offline.", ""]
    if not checks:
        return "\n".join(out + ["No checks are registered in this build."]) + "\n"
    out += ["| code | slug | summary | entries |", "| --- | --- | --- | --- |"]
    for c in checks:
        n = sum(1 for e in entries if c.code in e.checks)
        summary = md_inline(c.summary, table=True) if not c.retired else f"retired in {esc(c.retired)}"
        out.append(f"| [{c.code}]({rel(src, f'checks/{c.code}.md')}) | {code(c.slug)} | {summary} | {n} |")
    return "\n".join(out) + "\n"


def check_page(c: CheckInfo, entries: list[Entry]) -> str:
    src = f"checks/{c.code}.md"
    out = [f"# {c.code} {c.slug}", ""]
    if c.retired:
        out += [f"Retired in {esc(c.retired)}" + (f", replaced by [{c.replaced_by}]({c.replaced_by}.md)"
                                                  if c.replaced_by else "") + ". The code is never reused.", ""]
    else:
        out += [f"**{md_inline(c.summary)}**", ""]
        fails = "yes" if c.failable else "no (ok / warn / skip only)"
        out += _kv_table([("section 部分", esc(c.section)), ("can fail 可失败", fails),
                          ("offline 离线", code("envcheck explain " + c.code))])
        out += ["## What it checks", ""]
        out += [md_inline(c.doc, emphasis=True) if c.doc else "_No description._", ""]
    linked = [e for e in entries if c.code in e.checks]
    out += ["## Entries", ""]
    out += (["| entry | 中文 |", "| --- | --- |"] + [_entry_line(e, src) for e in linked]) if linked \
        else ["No kb entry names this check yet."]
    return "\n".join(out) + "\n"


def error_codes_page(entries: Iterable[Entry]) -> str:
    src = "error-codes.md"
    by_code: dict[str, list[Entry]] = {}
    for e in entries:
        for c in e.error_codes:
            by_code.setdefault(c, []).append(e)
    out = ["# Error codes", "",
           "CANN (`EI0006`, `EZ9999` …), torch_npu (`ERR02200` …), driver and HCCL codes, and the kb "
           "entries that explain them. `envcheck kb search CODE` finds the same offline.", ""]
    if not by_code:
        return "\n".join(out + ["No entry lists an error code yet."]) + "\n"
    for c in sorted(by_code, key=lambda s: (s.lstrip("-").upper(), s)):
        out += [f"## {esc(c)} {{ #{code_anchor(c)} }}", ""]
        out += [f"- [{md_inline(e.title)}]({rel(src, entry_src(e))}) — {esc(e.title_zh)}" for e in by_code[c]] + [""]
    return "\n".join(out)


TAGS_PAGE = "# Tags\n\nEntries by tag.\n\n<!-- material/tags -->\n"
