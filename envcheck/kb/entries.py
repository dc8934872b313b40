"""Load kb entries: Markdown files with YAML front matter, kb/<category>/<id>.md."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from envcheck import resources

FRONT_RE = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*\r?\n?(.*)\Z", re.S)


class EntryError(ValueError):
    """A kb file that cannot be read as an entry (path and line where known)."""

    def __init__(self, path: Path, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path, self.line, self.message = path, line, message


@dataclass(frozen=True)
class Pattern:
    regex: str
    examples: tuple[str, ...] = ()


@dataclass(frozen=True)
class Entry:
    """One pitfall entry. `meta` keeps the raw front matter for lint and the site."""

    id: str
    title: str
    category: str
    path: Path
    body: str
    title_zh: str = ""
    summary_zh: str = ""
    symptoms: tuple[str, ...] = ()
    checks: tuple[str, ...] = ()
    patterns: tuple[Pattern, ...] = ()
    error_codes: tuple[str, ...] = ()
    applies_to: dict[str, str] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)

    def section(self, name: str) -> str:
        """Text of a `## name` section of the body ('' if absent)."""
        m = re.search(rf"^##\s+{re.escape(name)}\s*$(.*?)(?=^##\s|\Z)", self.body, re.M | re.S)
        return m.group(1).strip() if m else ""


def split_front_matter(text: str, path: Path) -> tuple[dict[str, Any], str, int]:
    """(front matter, body, line where the body starts)."""
    m = FRONT_RE.match(text)
    if not m:
        raise EntryError(path, 1, "missing YAML front matter (a '---' block at the top)")
    try:
        meta = yaml.safe_load(m.group(1)) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = (mark.line + 2) if mark is not None else 1
        raise EntryError(path, line, f"front matter is not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(meta, dict):
        raise EntryError(path, 2, "front matter must be a mapping")
    body_line = m.group(1).count("\n") + 3
    return meta, m.group(2), body_line


def _tuple(v: Any) -> tuple:
    if v is None:
        return ()
    if isinstance(v, (list, tuple)):
        return tuple(v)
    return (v,)


def parse_entry(path: Path) -> Entry:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise EntryError(path, 1, f"cannot read: {exc}") from None
    meta, body, _ = split_front_matter(text, path)
    pats = []
    for p in _tuple(meta.get("patterns")):
        if isinstance(p, dict):
            pats.append(Pattern(str(p.get("regex", "")), tuple(str(x) for x in _tuple(p.get("examples")))))
        else:
            pats.append(Pattern(str(p)))
    return Entry(
        id=str(meta.get("id", path.stem)),
        title=str(meta.get("title", "")),
        category=str(meta.get("category", path.parent.name)),
        path=path,
        body=body,
        title_zh=str(meta.get("title_zh", "") or ""),
        summary_zh=str(meta.get("summary_zh", "") or ""),
        symptoms=tuple(str(s) for s in _tuple(meta.get("symptoms"))),
        checks=tuple(str(c) for c in _tuple(meta.get("checks"))),
        patterns=tuple(pats),
        error_codes=tuple(str(c) for c in _tuple(meta.get("error_codes"))),
        applies_to=dict(meta.get("applies_to") or {}) if isinstance(meta.get("applies_to"), dict) else {},
        tags=tuple(str(t) for t in _tuple(meta.get("tags"))),
        sources=tuple(str(s) for s in _tuple(meta.get("sources"))),
        meta=meta,
    )


@dataclass(frozen=True)
class KB:
    root: Path
    entries: tuple[Entry, ...]
    errors: tuple[EntryError, ...] = ()

    def get(self, entry_id: str) -> Entry | None:
        return next((e for e in self.entries if e.id == entry_id), None)


def entry_files(root: Path) -> list[Path]:
    """kb/<category>/<id>.md; top-level pages (index.md, CONTRIBUTING.md) are not entries."""
    return sorted(p for p in root.glob("*/*.md") if not p.parent.name.startswith((".", "_")))


@functools.lru_cache(maxsize=8)
def load_kb(root: str | Path | None = None) -> KB:
    base = Path(root) if root else resources.kb_dir()
    entries, errors = [], []
    for p in entry_files(base):
        try:
            entries.append(parse_entry(p))
        except EntryError as exc:
            errors.append(exc)
    return KB(base, tuple(entries), tuple(errors))
