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
    # the line is printed for several causes, this entry's the most common: it names the entry when nothing more
    # specific does (weak evidence, as a pattern on a line whose codes are all generic)
    wrapper: bool = False


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
    from envcheck.safeio import load_yaml_safely

    try:
        meta = load_yaml_safely(m.group(1)) or {}
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


MAX_ENTRY_BYTES = 1024 * 1024
_SCALAR = (str, int, float)
_LISTS = ("symptoms", "checks", "error_codes", "tags", "sources")
_TEXTS = ("id", "title", "title_zh", "category", "summary_zh")


def check_types(meta: dict[str, Any], path: Path) -> None:
    """EntryError (one line) for front-matter fields of the wrong type, before anything uses them."""
    for key in _TEXTS:
        v = meta.get(key)
        if v is not None and (not isinstance(v, _SCALAR) or isinstance(v, bool)):
            raise EntryError(path, 2, f"{key} must be a string, got {type(v).__name__}")
    for key in _LISTS:
        v = meta.get(key)
        if v is None or isinstance(v, _SCALAR) and not isinstance(v, bool) and key not in ("checks", "error_codes"):
            continue
        if not isinstance(v, list) or not all(isinstance(x, _SCALAR) and not isinstance(x, bool) for x in v):
            raise EntryError(path, 2, f"{key} must be a list of strings")
    pats = meta.get("patterns")
    if pats is not None:
        if not isinstance(pats, list):
            raise EntryError(path, 2, f"patterns must be a list of {{regex, examples}} mappings, "
                                      f"got {type(pats).__name__}")
        for i, p in enumerate(pats):
            if not isinstance(p, dict) or not isinstance(p.get("regex"), str):
                raise EntryError(path, 2, f"patterns[{i}] must be a mapping with a regex string")
            ex = p.get("examples")
            if ex is not None and not (isinstance(ex, list) and all(isinstance(x, str) for x in ex)):
                raise EntryError(path, 2, f"patterns[{i}].examples must be a list of strings")
    at = meta.get("applies_to")
    if at is not None and not isinstance(at, dict):
        raise EntryError(path, 2, "applies_to must be a mapping")


def parse_entry(path: Path) -> Entry:
    from envcheck.safeio import InputError, read_text_bounded

    try:
        text = read_text_bounded(path, MAX_ENTRY_BYTES)
    except InputError as exc:
        raise EntryError(path, 1, str(exc)) from None
    meta, body, _ = split_front_matter(text, path)
    check_types(meta, path)
    pats = [Pattern(p["regex"], tuple(_tuple(p.get("examples"))), p.get("wrapper") is True)
            for p in _tuple(meta.get("patterns"))]
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
