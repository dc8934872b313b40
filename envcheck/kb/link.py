"""Link findings to kb entries (by check code, then by error text) and describe an entry in one line."""
from __future__ import annotations

from typing import TYPE_CHECKING

from envcheck.kb.entries import Entry, load_kb
from envcheck.kb.site import page_url

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.model import Finding

FIX_LINES = 4  # lines of an entry's `## Fix` section shown as its fix summary
OUTCOME_ENTRIES = frozenset({"version-newer-than-matrix"})
"""Entries for an outcome several checks share (their `checks:` name each): linked only to a finding
that names that outcome (`data["failure"]`), never to the check's other failures."""


def _matcher(root: str | None):
    from envcheck.kb.match import kb_matcher  # compiled lazily, once per process

    return kb_matcher(root)


def finding_text(finding: Finding) -> str:
    """The error text of a finding that patterns are matched against."""
    parts = [finding.title, finding.detail]
    parts.extend(e.text for e in finding.evidence)
    return "\n".join(p for p in parts if p)


def entries_for(finding: Finding, root: str | None = None) -> list[str]:
    """kb entry ids for a finding, best first.

    Entries whose `checks:` name the finding's code come first (those whose patterns also match
    the finding's text lead them); then entries whose patterns match the text, ranked by the
    matcher (more specific patterns, then more hits). `root`: another kb directory.

    A finding that names its own failure (``data["failure"]``, e.g. ``version-newer-than-matrix``
    from EC102, or ``smoke-worker-failed`` from EC403) is not the failure its check's entries
    describe: it links the entry with that id, and by code only the entries whose patterns match
    its text.
    """
    kb = load_kb(root)
    text = finding_text(finding)
    ranked = [h.entry_id for h in _matcher(root).scan_text(text, source="finding").ranked()] if text else []
    pos = {eid: i for i, eid in enumerate(ranked)}
    by_check = [e.id for e in kb.entries if finding.code and finding.code in e.checks]
    failure = getattr(finding, "failure", finding.slug)
    by_check = [eid for eid in by_check if eid not in OUTCOME_ENTRIES or eid == failure]
    if failure != finding.slug:
        named = [failure] if kb.get(failure) is not None else []
        by_check = named + [eid for eid in by_check if eid in pos and eid not in named]
    by_check.sort(key=lambda eid: (eid not in pos, pos.get(eid, 0), eid))
    return by_check + [eid for eid in ranked if eid not in by_check]


def describe(entry_id: str, root: str | None = None, base: str | None = None) -> str:
    """Where to read an entry, in one line: `<full URL> — title` when a site URL is configured
    ($ENVCHECK_SITE_URL, or site_url in mkdocs.yml; `base` overrides both), else
    `envcheck kb show <id> — title`. An unknown id gives just the show command."""
    entry = load_kb(root).get(entry_id)
    if entry is None:
        return f"envcheck kb show {entry_id}"
    return f"{where(entry, base)} — {entry.title}"


def where(entry: Entry | str, base: str | None = None) -> str:
    """The full page URL when a site URL is configured, else the `envcheck kb show ID` command."""
    from envcheck.kb.site import site_url

    root = site_url() if base is None else base
    eid = entry if isinstance(entry, str) else entry.id
    if not root:
        return f"envcheck kb show {eid}"
    try:
        return page_url(entry, root)
    except KeyError:
        return f"envcheck kb show {eid}"


def fix_summary(entry: Entry, lines: int = FIX_LINES) -> str:
    """First lines of the entry's `## Fix` section (code fences dropped), else its Chinese summary."""
    fix = entry.section("Fix")
    out = []
    for raw in fix.splitlines():
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("```"):
            continue
        out.append(line if len(line) <= 200 else line[:200] + " …")
        if len(out) >= lines:
            break
    return "\n".join(out) or entry.summary_zh
