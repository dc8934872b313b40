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
from dataclasses import dataclass
from typing import Any, Iterable

from envcheck.kb.entries import Entry
from envcheck.kb.taxonomy import CATEGORIES


def esc(text: Any) -> str:
    """Prose from the data, safe inside Markdown: HTML escaped, table pipes escaped."""
    return html.escape(str(text), quote=False).replace("|", "\\|")


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

def entry_header(e: Entry, src: str, check_codes: set[str]) -> str:
    """Title, Chinese title and summary, metadata table, symptoms and patterns of an entry page."""
    cat = f"[{CATEGORIES.get(e.category, e.category)}]({rel(src, f'kb/{e.category}/index.md')})"
    checks = ", ".join(f"[{c}]({rel(src, f'checks/{c}.md')})" if c in check_codes else c for c in e.checks)
    codes = ", ".join(f"[{c}]({rel(src, 'error-codes.md')}#{code_anchor(c)})" for c in e.error_codes)
    applies = ", ".join(f"{esc(k)} {code(v)}" for k, v in e.applies_to.items())
    rows = [("id", code(e.id)), ("category", cat), ("checks", checks), ("error codes", codes),
            ("applies to", applies), ("offline", code(f"envcheck kb show {e.id}"))]
    out = [f"# {esc(e.title)}", "", f'<p class="kb-title-zh" lang="zh"><strong>{esc(e.title_zh)}</strong></p>', ""]
    if e.summary_zh:
        out += ['!!! abstract "摘要 Summary"', "", f"    {esc(e.summary_zh)}", ""]
    out += _kv_table([(k, v) for k, v in rows if v])
    if e.symptoms:
        out += ["**Symptoms**", ""] + [f"- {code(s)}" for s in e.symptoms] + [""]
    if e.patterns:
        out += ['??? example "Patterns envcheck matches in error output"', ""]
        for p in e.patterns:
            out += [f"    - regex {code(p.regex)}"] + [f"        - {code(x)}" for x in p.examples]
        out.append("")
    return "\n".join(out) + "\n"


def _kv_table(rows: list[tuple[str, str]]) -> list[str]:
    """A two-column key/value table; the first pair is the header row (no empty header)."""
    if not rows:
        return []
    (k0, v0), rest = rows[0], rows[1:]
    return [f"| {k0} | {v0} |", "| --- | --- |"] + [f"| {k} | {v} |" for k, v in rest] + [""]


def entry_footer(e: Entry) -> str:
    if not e.sources:
        return ""
    items = [f"- <{s}>" if re.match(r"^https?://\S+$", s) else f"- {esc(s)}" for s in e.sources]
    return "\n\n## Sources\n\n" + "\n".join(items) + "\n"


# ---------------------------------------------------------------------------- listings

def _entry_line(e: Entry, src: str) -> str:
    return f"| [{esc(e.title)}]({rel(src, entry_src(e))}) | {esc(e.title_zh)} |"


def category_page(cat: str, entries: list[Entry]) -> str:
    src = f"kb/{cat}/index.md"
    out = [f"# {CATEGORIES[cat]}", "", f"Category id {code(cat)}.", ""]
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
        summary = esc(c.summary) if not c.retired else f"retired in {esc(c.retired)}"
        out.append(f"| [{c.code}]({rel(src, f'checks/{c.code}.md')}) | {code(c.slug)} | {summary} | {n} |")
    return "\n".join(out) + "\n"


def check_page(c: CheckInfo, entries: list[Entry]) -> str:
    src = f"checks/{c.code}.md"
    out = [f"# {c.code} {c.slug}", ""]
    if c.retired:
        out += [f"Retired in {esc(c.retired)}" + (f", replaced by [{c.replaced_by}]({c.replaced_by}.md)"
                                                  if c.replaced_by else "") + ". The code is never reused.", ""]
    else:
        out += [f"**{esc(c.summary)}**", ""]
        out += _kv_table([("section", esc(c.section)), ("can fail", "yes" if c.failable else "no (ok / warn / skip only)"),
                          ("offline", code("envcheck explain " + c.code))])
        out += ["## What it checks", ""]
        out += [esc(c.doc) if c.doc else "_No description._", ""]
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
        out += [f"- [{esc(e.title)}]({rel(src, entry_src(e))}) — {esc(e.title_zh)}" for e in by_code[c]] + [""]
    return "\n".join(out)


TAGS_PAGE = "# Tags\n\nEntries by tag.\n\n<!-- material/tags -->\n"
