"""The message catalogue (messages.yaml): what torch_npu, op-plugin, vllm-ascend, HCCL and MindSpore print.

Users' errors are mostly lines printed by a handful of code bases, and the code that prints a message says
which subsystem failed: a torch_npu caching-allocator message is about device memory, a ProcessGroupHCCL
message about the communicator, an op-plugin argument check about a shape or dtype the NPU op does not take.
messages.yaml holds those messages as templates (the literal text with ``{}`` where the program inserts a
value), each with the file that prints it, the taxonomy category of that subsystem and, when a kb entry
treats it, the entry ids. It is generated from the sources by scripts/extract_messages.py (see there for the
origin -> category table and what is left out).

`lookup(line)` returns the templates a line is an instance of: a template matches when its literal chunks
(the text between placeholders) occur in the line in order (a line cut short may stop inside them after
MIN_CUT literal characters), so log headers, ``E   `` (pytest), ``[rank3]:``
prefixes and the values filled in do not matter. Each template is indexed under one rare word of its own
literal text, so a line costs a dictionary look-up per word plus a check of the few templates indexed under
its words, whatever the size of the catalogue. diagnose calls it only for the error lines the scan already
kept, never for every log line.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

MESSAGES_PATH = Path(__file__).resolve().with_name("messages.yaml")
LEVELS = ("error", "warning")
# a value the program inserts: {} / {name} / {:>8} (Python, fmt) or a printf conversion (%s, %d, %lu, %.2f)
PLACEHOLDER = re.compile(r"\{[^{}\s]{0,24}\}|%[-+#0]*\d*(?:\.\d+)?(?:hh|h|ll|l|z|j|t|L)?[sdiuxXfFeEgGcp]")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPACE = re.compile(r"\s+")
MIN_KEY = 4  # shortest word a template is indexed under
MIN_CUT = 40  # literal characters a line cut inside a template must have matched
CUT_PREFIX = 8  # characters of the next chunk such a line must end with


class MessageBookError(ValueError):
    """messages.yaml cannot be read or is malformed (one-line message)."""


@dataclass(frozen=True)
class Message:
    """One catalogue record. `source` is ``owner/repo@commit``; `origin` the file in it that prints the message."""

    template: str
    origin: str
    category: str
    level: str
    source: str
    entries: tuple[str, ...] = ()
    chunks: tuple[str, ...] = ()

    @property
    def literal(self) -> int:
        """Characters of literal text (how specific the template is)."""
        return sum(len(c) for c in self.chunks)


@dataclass(frozen=True)
class MessageHit:
    message: Message
    line: str


def chunks(template: str) -> tuple[str, ...]:
    """The literal pieces of a template, split at its placeholders, whitespace-collapsed, empty ones dropped."""
    return tuple(c for c in (_SPACE.sub(" ", p).strip() for p in PLACEHOLDER.split(template)) if c)


def key_words(template: str, within: int | None = None) -> list[str]:
    """Words of the template's literal text that a matching line must contain as whole words: a word at the
    edge of a chunk next to a placeholder may be glued to the inserted value, so it is no key. With `within`,
    only words starting in the first `within` literal characters."""
    out: list[str] = []
    pieces = PLACEHOLDER.split(template)
    done = 0
    for n, raw in enumerate(pieces):
        for m in _WORD.finditer(raw):
            if (m.start() == 0 and n > 0) or (m.end() == len(raw) and n < len(pieces) - 1):
                continue
            if len(m.group()) >= MIN_KEY and (within is None or done + m.start() < within):
                out.append(m.group())
        done += len(raw)
    return out


@dataclass(frozen=True)
class MessageBook:
    sources: dict[str, dict[str, str]]
    messages: tuple[Message, ...]
    index: dict[str, tuple[int, ...]]

    def __len__(self) -> int:
        return len(self.messages)

    def lookup(self, line: str) -> list[MessageHit]:
        """The templates `line` is an instance of, the most specific (most literal text) first."""
        text = _SPACE.sub(" ", line)
        seen: set[int] = set()
        found: list[Message] = []
        for word in set(_WORD.findall(text)):
            for i in self.index.get(word, ()):
                if i in seen:
                    continue
                seen.add(i)
                msg = self.messages[i]
                if _in_order(msg.chunks, text):
                    found.append(msg)
        found.sort(key=lambda m: (-m.literal, m.template))
        return [MessageHit(m, line) for m in found]


def _in_order(parts: tuple[str, ...], text: str) -> bool:
    """The chunks occur in `text` in order; the line may stop inside the last chunks (a cut or hard-wrapped
    line) once MIN_CUT literal characters matched and it ends with at least CUT_PREFIX of the next chunk."""
    at = done = 0
    for part in parts:
        j = text.find(part, at)
        if j < 0:
            head = part[:CUT_PREFIX]
            if len(head) < CUT_PREFIX:
                return False
            k = text.rfind(head, at)
            tail = text[k:].rstrip() if k >= 0 else ""
            return len(tail) >= CUT_PREFIX and part.startswith(tail) and done + len(tail) >= MIN_CUT
        at = j + len(part)
        done += len(part)
    return True


def parse(data: Any, categories: Iterable[str] | None = None) -> MessageBook:
    """A MessageBook from the loaded YAML; `categories` (default: the taxonomy) bounds `category`."""
    if categories is None:
        from envcheck.kb.taxonomy import CATEGORY_IDS
        categories = CATEGORY_IDS
    cats = set(categories)
    if not isinstance(data, dict) or data.get("schema") != 1 or not isinstance(data.get("sources"), dict):
        raise MessageBookError("messages.yaml: expected a mapping with schema: 1 and sources")
    sources: dict[str, dict[str, str]] = {}
    msgs: list[Message] = []
    for sid, src in data["sources"].items():
        if not isinstance(src, dict) or not src.get("repo") or not src.get("commit"):
            raise MessageBookError(f"messages.yaml: source {sid}: needs repo and commit")
        where = f"{src['repo']}@{src['commit']}"
        sources[str(sid)] = {"repo": str(src["repo"]), "commit": str(src["commit"])}
        for n, rec in enumerate(src.get("messages") or ()):
            if not isinstance(rec, dict) or not rec.get("template") or not rec.get("origin"):
                raise MessageBookError(f"messages.yaml: {sid} message {n}: needs template and origin")
            cat, level = rec.get("category"), rec.get("level", "error")
            if cat not in cats or level not in LEVELS:
                raise MessageBookError(f"messages.yaml: {sid} message {n}: category {cat!r} / level {level!r}")
            tpl = str(rec["template"])
            msgs.append(Message(tpl, str(rec["origin"]), str(cat), str(level), where,
                                tuple(str(e) for e in rec.get("entries") or ()), chunks(tpl)))
    return MessageBook(sources, tuple(msgs), build_index(msgs))


def build_index(msgs: list[Message]) -> dict[str, tuple[int, ...]]:
    """Each template under its rarest key word (ties: the longest), so few templates share a bucket; the word
    is taken from the first MIN_CUT literal characters when there is one, so a line cut short still finds it."""
    keys = [sorted(set(key_words(m.template, MIN_CUT) or key_words(m.template))) for m in msgs]
    df: dict[str, int] = {}
    for ks in keys:
        for k in ks:
            df[k] = df.get(k, 0) + 1
    index: dict[str, list[int]] = {}
    for i, ks in enumerate(keys):
        if ks:
            best = min(ks, key=lambda k: (df[k], -len(k), k))
            index.setdefault(best, []).append(i)
    return {k: tuple(v) for k, v in index.items()}


@functools.lru_cache(maxsize=4)
def load_messages(path: str | None = None) -> MessageBook:
    """The catalogue, read once per process (the C YAML loader when PyYAML has it)."""
    p = Path(path) if path else MESSAGES_PATH
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(p.read_text(encoding="utf-8"), Loader=loader)  # noqa: S506 - a safe loader
    except (OSError, yaml.YAMLError) as exc:
        raise MessageBookError(f"{p}: cannot read ({exc})") from None
    return parse(data)


def lookup(line: str) -> list[MessageHit]:
    """The shipped catalogue's templates that `line` is an instance of, most specific first."""
    return load_messages().lookup(line)
