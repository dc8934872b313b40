"""`envcheck kb show`: one entry rendered for the terminal, or as a JSON document."""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from envcheck.kb.entries import Entry
from envcheck.kb.gate import entry_gates, gate_status, gate_text
from envcheck.kb.site import page_url
from envcheck.kb.taxonomy import CATEGORIES, REQUIRED_SECTIONS

FENCE_RE = re.compile(r"^\s*(```|~~~)")
LINK_RE = re.compile(r"\[([^\]]+)\]\(([^)\s]+)[^)]*\)")


def gates(e: Entry, versions: Mapping[str, str | None] | None = None) -> list[dict[str, Any]]:
    """The entry's version gates: the entry itself (`applies_to`), then each gated fix (`gates`).

    Each: {"what", "applies_to", "needs", "applies" (True / False / None), "text"}."""
    out = []
    items: list[tuple[str, Any]] = [("this entry", {"applies_to": e.applies_to})] if e.applies_to else []
    items += [(str(g.get("what", "")), g) for g in entry_gates(e)]
    for what, g in items:
        applies, text = gate_status(g, versions or {})
        out.append({"what": what, "applies_to": {k: str(v) for k, v in g["applies_to"].items()},
                    "needs": gate_text(g["applies_to"]), "note": str(g.get("note", "")) if isinstance(g, dict) else "",
                    "applies": applies if versions else None, "text": text if versions else gate_text(g["applies_to"])})
    return out


def to_dict(e: Entry, versions: Mapping[str, str | None] | None = None) -> dict[str, Any]:
    return {"gates": gates(e, versions),
        "id": e.id, "title": e.title, "title_zh": e.title_zh, "summary_zh": e.summary_zh,
        "category": e.category, "symptoms": list(e.symptoms), "checks": list(e.checks),
        "error_codes": list(e.error_codes),
        "patterns": [{"regex": p.regex, "examples": list(p.examples)} for p in e.patterns],
        "applies_to": {k: str(v) for k, v in e.applies_to.items()}, "tags": list(e.tags),
        "sources": list(e.sources), "sections": {s: e.section(s) for s in REQUIRED_SECTIONS},
        "body": e.body, "path": str(e.path), "url": page_url(e),
    }


class _Style:
    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color else text


def render(e: Entry, color: bool = False, versions: Mapping[str, str | None] | None = None) -> str:
    """versions (optional): probed versions by applies_to key; the gates then say whether they apply."""
    st = _Style(color)
    out = [st(e.title, "1"), e.title_zh, f"{e.id} · {e.category} ({CATEGORIES.get(e.category, '?')})", ""]
    if e.summary_zh:
        out += [e.summary_zh, ""]
    meta = [("checks", ", ".join(e.checks)), ("error codes", ", ".join(e.error_codes)),
            ("applies to", ", ".join(f"{k} {v}" for k, v in e.applies_to.items())), ("tags", ", ".join(e.tags))]
    out += [f"{st(k + ':', '2')} {v}" for k, v in meta if v]
    for g in gates(e, versions):
        mark = {True: "applies", False: "does not apply", None: ""}[g["applies"]] if versions else ""
        line = f"{st('gate:', '2')} {g['what']}: {g['text'] if versions else g['needs']}"
        note = f" ({g['note']})" if g["note"] else ""
        out.append(line + (f"  [{mark}]" if mark and mark not in line else "") + note)
    if e.symptoms:
        out += ["", st("Symptoms", "1")] + [f"  - {s}" for s in e.symptoms]
    for name in REQUIRED_SECTIONS:
        text = e.section(name)
        if text:
            out += ["", st(name, "1")] + _terminal(text, st)
    out += ["", f"{st('page:', '2')} {page_url(e)}"]
    out += [f"{st('source:', '2')} {s}" for s in e.sources]
    return "\n".join(out) + "\n"


def _terminal(md: str, st: _Style) -> list[str]:
    """Light Markdown → terminal: code blocks indented, links as 'text (target)', ** dropped."""
    lines, in_code = [], False
    for line in md.splitlines():
        if FENCE_RE.match(line):
            in_code = not in_code
            continue
        if in_code:
            lines.append("    " + st(line, "36"))
            continue
        line = LINK_RE.sub(lambda m: f"{m.group(1)} ({m.group(2)})", line)
        line = re.sub(r"\*\*([^*]+)\*\*", r"\1", line)
        line = re.sub(r"^#{3,}\s*", "", line)
        lines.append("  " + line if line else "")
    return lines
