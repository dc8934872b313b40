"""`envcheck kb new`: scaffold an entry file that passes `envcheck kb lint` (never overwrites)."""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from envcheck.errors import UsageError
from envcheck.kb.taxonomy import CATEGORIES, REQUIRED_SECTIONS

SLUG_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
HINTS = {
    "Symptom": "What the user sees: the exact error line, the command that printed it.",
    "Cause": "Why it happens.",
    "Fix": "Concrete commands, environment variables or code changes.",
    "Verify": "How to confirm the fix worked.",
}


@dataclass
class Draft:
    id: str = ""
    title: str = ""
    title_zh: str = ""
    category: str = ""
    summary_zh: str = ""
    symptoms: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    error_codes: list[str] = field(default_factory=list)
    regex: str = ""
    examples: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)


def slugify(title: str) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", title.lower()))[:60].strip("-")


def validate(d: Draft) -> None:
    """Raise UsageError for values the entry cannot have (before anything is written)."""
    if not SLUG_RE.match(d.id):
        raise UsageError(f"--id {d.id!r} must be a slug: lower-case words joined by '-'")
    if d.category not in CATEGORIES:
        raise UsageError(f"--category {d.category!r} is not one of: {', '.join(CATEGORIES)}")
    for c in d.checks:
        if not re.fullmatch(r"EC[0-9]{3}", c):
            raise UsageError(f"--check {c!r} is not a check code like EC201")
    for name in ("title", "title_zh", "summary_zh"):
        if not getattr(d, name).strip():
            raise UsageError(f"--{name.replace('_', '-')} is required")
    if not d.symptoms:
        raise UsageError("at least one --symptom is required")
    if d.examples and not d.regex:
        raise UsageError("--example needs --regex")
    if d.regex and not d.examples:
        raise UsageError("--regex needs at least one --example (a real error line it must match)")
    if d.regex:
        try:
            rx = re.compile(d.regex)
        except re.error as exc:
            raise UsageError(f"--regex does not compile: {exc}") from None
        for ex in d.examples:
            if not rx.search(ex):
                raise UsageError(f"--regex {d.regex!r} does not match --example {ex!r}")


def _q(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)  # a JSON string is a valid YAML double-quoted scalar


def _list(items: list[str]) -> str:
    return "[" + ", ".join(_q(i) for i in items) + "]"


def render(d: Draft) -> str:
    lines = ["---", f"id: {d.id}", f"title: {_q(d.title)}", f"title_zh: {_q(d.title_zh)}",
             f"category: {d.category}", f"summary_zh: {_q(d.summary_zh)}", "symptoms:"]
    lines += [f"  - {_q(s)}" for s in d.symptoms]
    lines += [f"checks: [{', '.join(d.checks)}]", f"error_codes: {_list(d.error_codes)}"]
    if d.regex:
        lines += ["patterns:", "  - regex: '" + d.regex.replace("'", "''") + "'", "    examples:"]
        lines += [f"      - {_q(e)}" for e in d.examples]
    else:
        lines.append("patterns: []")
    lines += [f"tags: {_list(d.tags)}", f"sources: {_list(d.sources)}", "---", ""]
    for name in REQUIRED_SECTIONS:
        lines += [f"## {name}", "", f"<!-- {HINTS[name]} -->", ""]
    return "\n".join(lines)


def write(d: Draft, kb: Path) -> Path:
    """Write kb/<category>/<id>.md; refuse to overwrite or to reuse an id from another category."""
    validate(d)
    if not kb.is_dir():
        raise UsageError(f"kb folder {kb} does not exist")
    clash = next(iter(sorted(kb.glob(f"*/{d.id}.md"))), None)
    if clash is not None:
        raise UsageError(f"{clash} already exists; entry ids are unique and files are never overwritten")
    cat = kb / d.category
    target = cat / f"{d.id}.md"
    if os.path.lexists(target):  # also a dangling symlink: never write through it
        raise UsageError(f"{target} already exists (or is a symlink); entry ids are unique and files are never "
                         "overwritten")
    if os.path.lexists(cat) and (os.path.islink(cat) or not os.path.isdir(cat)):
        raise UsageError(f"{cat} is not a directory; cannot create the entry there")
    try:
        cat.mkdir(exist_ok=True)
        # O_EXCL|O_NOFOLLOW: fail rather than overwrite or follow a symlink, even in a race
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except FileExistsError:
        raise UsageError(f"{target} already exists; entry ids are unique and files are never overwritten") from None
    except OSError as exc:
        raise UsageError(f"cannot create {target}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(render(d))
    except OSError as exc:
        try:
            os.unlink(target)
        except OSError:
            pass
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None
    return target
