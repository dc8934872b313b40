"""`envcheck kb lint`: validate kb entries; every problem is `file:line: message`.

Checks: front matter parses and follows envcheck/schemas/kb-entry.schema.json; id is unique and
equals the file name stem; category is a TAXONOMY.md id and equals the parent folder; every
`checks:` code is registered (or retired); each pattern compiles, stays inside the Python-re /
POSIX-ERE subset, matches each of its examples and cannot backtrack catastrophically; body has
Symptom / Cause / Fix / Verify sections; internal links resolve; title_zh / summary_zh are Chinese;
`applies_to` and `gates[].applies_to` are valid gates (specifier sets, chip family names) whose every
version exists in the matrix (envcheck.kb.gate).
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import yaml

from envcheck import safeio
from envcheck.errors import UsageError
from envcheck.kb import regex_safety, validate
from envcheck.kb.entries import FRONT_RE, entry_files
from envcheck.kb.taxonomy import CATEGORIES, REQUIRED_SECTIONS

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
CJK_RE = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
LINK_RE = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+[\"'][^)]*[\"'])?\s*\)")
REF_LINK_RE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
FENCE_RE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True, order=True)
class Problem:
    path: Path
    line: int
    message: str

    def format(self, base: Path | None = None) -> str:
        return f"{_display(self.path, base)}:{self.line}: {self.message}"

    def to_dict(self, base: Path | None = None) -> dict:
        return {"file": _display(self.path, base), "line": self.line, "message": self.message}


def _display(path: Path, base: Path | None) -> str:
    try:
        return str(path.relative_to(base or Path.cwd()))
    except ValueError:
        return str(path)


def lint_path(path: Path, known_checks: Iterable[str], probe: bool = False) -> list[Problem]:
    """Lint a kb folder (kb/<category>/<id>.md) or one entry file.

    probe: also run every pattern the static detector passed on crafted near-miss inputs in a
    child process, and report those that run away (see regex_safety.probe_slow).
    known_checks: the registered and retired check codes (`envcheck.checks.known_codes()`); the kb
    sits below the checks, so the caller passes them in."""
    files = [path] if path.is_file() else entry_files(path)
    known = set(known_checks)
    problems: list[Problem] = []
    ids: dict[str, tuple[Path, int]] = {}
    safe: list[tuple[Path, int, str, list[str]]] = []
    for f in files:
        fm = _lint_file(f, known, problems, safe)
        if fm is None:
            continue
        eid, line = fm
        if eid in ids:
            first, first_line = ids[eid]
            problems.append(Problem(f, line, f"duplicate id {eid!r} (also {_display(first, None)}:{first_line})"))
        else:
            ids[eid] = (f, line)
    if probe and safe:
        for i in sorted(regex_safety.probe_slow([(rx, ex) for _f, _l, rx, ex in safe])):
            f, line, rx, _ex = safe[i]
            problems.append(Problem(f, line, f"pattern {rx!r} runs away on a crafted near-miss input "
                                             "(catastrophic backtracking found by the timed probe)"))
    return sorted(problems)


class _Lines:
    """Front-matter line numbers of keys and items, from the YAML node marks."""

    def __init__(self, node: Any, offset: int) -> None:
        self.offset = offset
        self.map: dict[tuple, int] = {}
        self.dup_keys: list[tuple[str, int]] = []
        self._walk(node, ())

    def _walk(self, node: Any, path: tuple) -> None:
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for k, v in node.value:
                key = k.value
                if key in seen:
                    self.dup_keys.append((key, k.start_mark.line + self.offset))
                seen.add(key)
                self.map[path + (key,)] = k.start_mark.line + self.offset
                self._walk(v, path + (key,))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                self.map[path + (i,)] = item.start_mark.line + self.offset
                self._walk(item, path + (i,))

    def __call__(self, *path: Any) -> int:
        """Line of the deepest known prefix of path (2, the first front-matter line, if none)."""
        p = tuple(path)
        while p:
            if p in self.map:
                return self.map[p]
            p = p[:-1]
        return self.offset


def _read(f: Path, problems: list[Problem]) -> tuple[dict, _Lines, str, int] | None:
    try:
        text = safeio.read_text_bounded(f, what="kb entry")
    except UsageError as exc:
        problems.append(Problem(f, 1, f"cannot read: {exc}"))
        return None
    m = FRONT_RE.match(text)
    if not m:
        problems.append(Problem(f, 1, "missing YAML front matter (a '---' block at the top of the file)"))
        return None
    try:
        loader = _Loader(m.group(1))
        try:
            node = loader.get_single_node()
            safeio.check_yaml_node(node)
            meta = loader.construct_document(node) if node is not None else {}
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        problems.append(_yaml_problem(f, exc))
        return None
    if not isinstance(meta, dict):
        problems.append(Problem(f, 2, "front matter must be a mapping of keys to values"))
        return None
    body_line = m.group(1).count("\n") + 3
    return meta, _Lines(node, 2), m.group(2), body_line


def _yaml_problem(f: Path, exc: yaml.YAMLError) -> Problem:
    """Point at where the broken construct starts (context) and say where YAML gave up (problem)."""
    problem, context = getattr(exc, "problem_mark", None), getattr(exc, "context_mark", None)
    what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    mark = context if context is not None else problem
    line = mark.line + 2 if mark is not None else 1
    msg = f"front matter is not valid YAML: {what}"
    context_text = getattr(exc, "context", None)
    if context is not None and context_text:
        msg += f" ({context_text} at line {context.line + 2}"
        msg += f", noticed at line {problem.line + 2})" if problem is not None else ")"
    return Problem(f, line, msg)


def _lint_file(f: Path, known: set[str], problems: list[Problem],
               safe: list[tuple[Path, int, str, list[str]]]) -> tuple[str, int] | None:
    got = _read(f, problems)
    if got is None:
        return None
    meta, lines, body, body_line = got
    def add(line: int, msg: str) -> None:
        return problems.append(Problem(f, line, msg))
    for key, line in lines.dup_keys:
        add(line, f"duplicate key {key!r} in front matter")
    for path, keyword, msg in validate.errors(meta, validate.entry_schema()):
        if path == ("category",) and keyword == "enum":
            continue  # reported below with a clearer message
        where = ".".join(map(str, path)) or "front matter"
        add(lines(*path), f"{where}: {msg}")
    _identity(f, meta, lines, add)
    _checks(meta, lines, known, add)
    _patterns(meta, lines, add, lambda line, rx, ex: safe.append((f, line, rx, ex)))
    _chinese(meta, lines, add)
    _gates(meta, lines, add)
    _sections(body, body_line, add)
    _links(f, body, body_line, add)
    eid = meta.get("id")
    return (eid, lines("id")) if isinstance(eid, str) else None


def _identity(f: Path, meta: dict, lines: _Lines, add: Callable[[int, str], None]) -> None:
    eid, cat = meta.get("id"), meta.get("category")
    if isinstance(eid, str) and eid != f.stem:
        add(lines("id"), f"id {eid!r} must equal the file name stem {f.stem!r}")
    if isinstance(cat, str):
        if cat not in CATEGORIES:
            add(lines("category"), f"unknown category {cat!r} (not a TAXONOMY.md id: {', '.join(CATEGORIES)})")
        elif cat != f.parent.name:
            add(lines("category"), f"category {cat!r} must equal the parent folder {f.parent.name!r}")


def _checks(meta: dict, lines: _Lines, known: set[str], add: Callable[[int, str], None]) -> None:
    checks = meta.get("checks")
    if not isinstance(checks, list):
        return
    for i, code in enumerate(checks):
        if isinstance(code, str) and re.fullmatch(r"EC[0-9]{3}", code) and code not in known:
            add(lines("checks", i), f"unknown check id {code!r} (not registered in envcheck.checks, not retired)")


def _patterns(meta: dict, lines: _Lines, add: Callable[[int, str], None],
              keep: Callable[[int, str, list[str]], None]) -> None:
    """Compile, check and match each pattern; keep() the statically safe ones for the probe."""
    pats = meta.get("patterns")
    if not isinstance(pats, list):
        return
    for i, p in enumerate(pats):
        if not isinstance(p, dict) or not isinstance(p.get("regex"), str):
            continue
        rx = p["regex"]
        line = lines("patterns", i, "regex")
        try:
            compiled = re.compile(rx)
        except re.error as exc:
            add(line, f"pattern does not compile: {exc}")
            continue
        unsafe = regex_safety.backtracking_problems(rx)
        for msg in unsafe:
            add(line, f"pattern {rx!r}: {msg}")
        for msg in regex_safety.portability_problems(rx):
            add(line, f"pattern {rx!r}: {msg}")
        raw_examples = p.get("examples")
        examples: list[Any] = raw_examples if isinstance(raw_examples, list) else []
        if not unsafe:
            keep(line, rx, [x for x in examples if isinstance(x, str)])
        for j, ex in enumerate(examples):
            if isinstance(ex, str) and not compiled.search(ex):
                add(lines("patterns", i, "examples", j), f"pattern {rx!r} does not match its example {ex!r}")


def _chinese(meta: dict, lines: _Lines, add: Callable[[int, str], None]) -> None:
    for key in ("title_zh", "summary_zh"):
        v = meta.get(key)
        if isinstance(v, str) and v.strip() and not CJK_RE.search(v):
            add(lines(key), f"{key} must be written in Chinese")


def _gates(meta: dict, lines: _Lines, add: Callable[[int, str], None]) -> None:
    """applies_to syntax (envcheck.kb.gate) and every named version / chip family known to the matrix."""
    from envcheck.kb.gate import GateError, gate_versions

    blocks: list[tuple[tuple, Any]] = [(("applies_to",), meta.get("applies_to"))]
    gates: Any = meta.get("gates")
    if isinstance(gates, list):
        blocks += [(("gates", i, "applies_to"), g.get("applies_to"))
                   for i, g in enumerate(gates) if isinstance(g, dict)]
    for path, block in blocks:
        if not isinstance(block, dict):
            continue
        for key, text in block.items():
            line = lines(*path, key)
            try:
                named = gate_versions(str(key), str(text))
            except GateError as exc:
                add(line, str(exc))
                continue
            for v in named:
                if not _known(str(key), v):
                    add(line, f"{'.'.join(map(str, path))}.{key}: {v!r} is not a version the matrix knows"
                              + (" (a chip family in matrix.yaml `chips`)" if key == "chip" else ""))


def _known(key: str, version: str) -> bool:
    """Is this version (or a line prefix such as 2.1) / chip family in the shipped matrix?"""
    try:
        from envcheck.matrix import load

        mx = load()
    except Exception:  # no matrix: nothing to compare against
        return True
    from envcheck.versions import VersionError, parse_ascend, parse_pep440

    try:
        if key == "chip":
            return mx.family(version) is not None
        if key == "cann":
            want = parse_ascend(version)
            return any(r.parsed.key == want.key for r in mx.cann)
        if key == "driver":
            want = parse_ascend(version)
            specs = [s for r in mx.cann if r.hdk for n in ("paired", "matched", "compatible", "unsupported")
                     for s in getattr(r.hdk, n)]
            return any(s.matches(want) for s in specs) or any(f.driver.lower() == version.lower() for f in mx.firmware)
        want_rel = parse_pep440(version).release
        if key == "python":
            ranges = [p.python for p in mx.pairings() if p.python] + [r.python for r in mx.cann if r.python]
            return any(version in r for r in ranges)
        if key == "mindspore":
            known = [m.spec for r in mx.cann for m in r.mindspore] + [m.spec for m in mx.mindspore_unpaired]
        elif key == "torch":
            known = [p.torch for p in mx.pairings()]
        else:
            known = [p.torch_npu for p in mx.pairings()] + list(mx.wheels)
        exact = parse_pep440(version)
        for k in known:
            if k[:1] in "<>=!~":
                continue
            kv = parse_pep440(k)
            if kv == exact or (len(want_rel) < 3 and kv.release[:len(want_rel)] == want_rel):
                return True
        return False
    except VersionError:
        return False


def _sections(body: str, body_line: int, add: Callable[[int, str], None]) -> None:
    found = set(re.findall(r"^##[ \t]+(.+?)[ \t]*#*[ \t]*$", body, re.M))
    for name in REQUIRED_SECTIONS:
        if name not in found:
            add(body_line, f"missing required section '## {name}'")


def _links(f: Path, body: str, body_line: int, add: Callable[[int, str], None]) -> None:
    for n, line in enumerate(_prose_lines(body)):
        targets = LINK_RE.findall(line) + REF_LINK_RE.findall(line)
        for target in targets:
            if SCHEME_RE.match(target) or target.startswith(("#", "/")):
                continue
            rel = target.split("#", 1)[0].split("?", 1)[0]
            if rel and not (f.parent / rel).exists():
                add(body_line + n, f"broken link {target!r}: {rel} does not exist")


def _prose_lines(body: str) -> list[str]:
    """Body lines with fenced code blocks and inline code blanked (line count preserved)."""
    out, fence = [], None
    for line in body.split("\n"):
        m = FENCE_RE.match(line)
        if fence:
            out.append("")
            if m and m.group(1) == fence:
                fence = None
            continue
        if m:
            fence = m.group(1)
            out.append("")
            continue
        out.append(re.sub(r"`[^`]*`", "", line))
    return out
