"""Load matrix.yaml into typed, frozen rows and answer lookups about it (pure, no machine I/O).

`load(path=None) -> Matrix` reads the shipped matrix (``envcheck.resources.matrix_path()``) or
another file and raises `MatrixError` (``matrix.yaml:LINE: message``) when it is malformed.
`Matrix.rows()` / `Matrix.to_markdown()` give a flat table (the kb site renders it at build time).
The verdict rules themselves live in `envcheck.checks.compat`; `judge(facts, matrix)` runs them.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import yaml

from envcheck.errors import UsageError
from envcheck.versions import (AscendVersion, PyRange, VersionError, parse_ascend, parse_pep440)

if TYPE_CHECKING:  # pragma: no cover
    from packaging.specifiers import SpecifierSet

    from envcheck.model import Facts, Finding

__all__ = ["MatrixError", "Matrix", "CannRelease", "Pairing", "MsPairing", "HdkRule", "HdkSpec",
           "Chip", "Conflict", "Source", "load", "parse_text", "judge"]


class MatrixError(UsageError):
    """A malformed matrix file: the message reads ``path:LINE: message``."""

    def __init__(self, path: str, line: int, message: str) -> None:
        self.path, self.line, self.message = path, line, message
        super().__init__(f"{path}:{line}: {message}")


# ---------------------------------------------------------------------------------------------
# YAML with line numbers: every mapping remembers the line it starts on (1-based).
class LineDict(dict):
    """A dict that remembers the source line of its mapping (``.line``)."""

    line = 0


_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[misc, valid-type]
    duplicates: list[tuple[int, str]]


def _construct_map(loader: _Loader, node: yaml.MappingNode) -> LineDict:
    loader.flatten_mapping(node)
    out = LineDict()
    out.line = node.start_mark.line + 1
    for knode, vnode in node.value:
        key = loader.construct_object(knode, deep=True)
        if key in out:
            loader.duplicates.append((knode.start_mark.line + 1, f"duplicate key {key!r}"))
        out[key] = loader.construct_object(vnode, deep=True)
    return out


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_map)


def read_yaml(text: str, path: str) -> tuple[Any, list[tuple[int, str]]]:
    """Parse YAML text; returns (document, duplicate-key problems). Syntax errors -> MatrixError."""
    loader = _Loader(text)
    loader.duplicates = []
    try:
        doc = loader.get_single_data()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 1 if mark else 1
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise MatrixError(path, line, f"not valid YAML: {problem}") from None
    finally:
        loader.dispose()
    return doc, loader.duplicates


# ---------------------------------------------------------------------------------------------
# Rows
@dataclass(frozen=True)
class Source:
    """A cited source: key (e.g. ``PT-COMPAT``), title, URL and snapshot date."""

    key: str
    title: str
    url: str
    date: str = ""


@dataclass(frozen=True)
class Conflict:
    """Two sources that disagree (compat-facts section d), kept as data with both sides."""

    id: str
    applies_to: str
    title: str
    sides: tuple[tuple[str, tuple[str, ...]], ...]
    """(what the side says, its source refs) pairs."""
    resolution: str = ""
    line: int = 0

    def describe(self) -> str:
        """One paragraph naming both sides and their sources."""
        parts = [f"{says} ({', '.join(srcs)})" for says, srcs in self.sides]
        return f"{self.id}: {self.title}: " + " vs ".join(parts)

    @property
    def source_refs(self) -> tuple[str, ...]:
        return tuple(s for _, srcs in self.sides for s in srcs)


@dataclass(frozen=True)
class Pairing:
    """One official torch_npu build for one CANN release (a row of compat-facts table A)."""

    cann: str
    torch: str
    torch_npu: str
    python: PyRange | None
    """The table's Python column for this build (None: not stated)."""
    branch: str = ""
    sources: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()
    note: str = ""
    line: int = 0

    @property
    def key(self) -> Any:
        return parse_pep440(self.torch_npu)


@dataclass(frozen=True)
class MsPairing:
    """A MindSpore release (exact version or PEP 440 specifier) paired with a CANN release."""

    cann: str | None
    spec: str
    python: PyRange | None
    sources: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()
    line: int = 0

    def matches(self, version: str) -> bool:
        if self.spec[:1] in "<>=!~":
            return _specifier(self.spec).contains(parse_pep440(version), prereleases=True)
        return parse_pep440(version) == parse_pep440(self.spec)


class HdkSpec:
    """``24.1.RC1`` (that release incl. hot-fix / build drops), ``25.2.X`` (a line) or ``A..B``."""

    __slots__ = ("text", "lo", "hi", "line_only")

    def __init__(self, text: str) -> None:
        self.text = text
        lo, sep, hi = text.partition("..")
        self.lo = _hdk_bound(lo.strip(), low=True)
        self.hi = _hdk_bound((hi if sep else lo).strip(), low=False)
        self.line_only = not sep and lo.strip().upper().endswith(".X")

    def matches(self, v: AscendVersion) -> bool:
        k = v.release_key
        return self.lo <= k <= self.hi

    def newest(self) -> tuple:
        return self.hi

    def __repr__(self) -> str:
        return f"HdkSpec({self.text!r})"


def _hdk_bound(text: str, low: bool) -> tuple:
    if re.fullmatch(r"\d+\.\d+\.[xX]", text):
        major, minor = (int(p) for p in text.split(".")[:2])
        return (major, minor, -1, -1) if low else (major, minor, 99, 10**9)
    v = parse_ascend(text)
    return v.release_key


@dataclass(frozen=True)
class HdkRule:
    """What a CANN release says about the HDK (driver + firmware) under it."""

    paired: tuple[HdkSpec, ...] = ()
    matched: tuple[HdkSpec, ...] = ()
    compatible: tuple[HdkSpec, ...] = ()
    unsupported: tuple[HdkSpec, ...] = ()
    outside: str = "fail"
    """Verdict for an HDK no list names: ``fail`` (default) or ``warn`` (sources too thin)."""
    sources: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()
    by_family: Mapping[str, "HdkRule"] = field(default_factory=dict)
    line: int = 0

    def classify(self, v: AscendVersion) -> str:
        """paired / matched / unsupported / compatible / outside."""
        for name in ("paired", "matched", "unsupported", "compatible"):
            if any(s.matches(v) for s in getattr(self, name)):
                return name
        return "outside"

    @property
    def stated(self) -> bool:
        return bool(self.paired or self.matched or self.compatible)


@dataclass(frozen=True)
class CannRelease:
    """One CANN release with everything the matrix knows about it."""

    version: str
    pta: str = ""
    python: PyRange | None = None
    python_sources: tuple[str, ...] = ()
    hdk: HdkRule | None = None
    pairings: tuple[Pairing, ...] = ()
    mindspore: tuple[MsPairing, ...] = ()
    sources: tuple[str, ...] = ()
    note: str = ""
    line: int = 0

    @property
    def parsed(self) -> AscendVersion:
        return parse_ascend(self.version)


@dataclass(frozen=True)
class Chip:
    """A chip family (A1, A2, A3, ...) and the CANN releases that support it."""

    family: str
    name: str
    match: tuple[str, ...]
    token: str
    kernel_tokens: tuple[str, ...] = ()
    products: tuple[str, ...] = ()
    since: str | None = None
    hdk_differs: bool = False
    mindspore: bool = True
    sources: tuple[str, ...] = ()
    line: int = 0

    def matches(self, chip: str) -> bool:
        name = re.sub(r"\s+", "", chip).lower()
        return any(re.search(p, name) for p in self.match)


@dataclass(frozen=True)
class KernelRule:
    """Kernels / ops package rule for CANN releases from `start` on."""

    start: str
    package: str
    window: int
    minimum: str | None
    sources: tuple[str, ...]
    note: str = ""


@dataclass(frozen=True)
class FirmwareMin:
    """Minimum firmware for drivers from `driver` on."""

    driver: str
    firmware: str
    sources: tuple[str, ...]


@dataclass(frozen=True)
class PtaWindow:
    """PTA releases stated compatible with a set of CANN releases."""

    pta: tuple[str, ...]
    cann: tuple[str, ...]
    sources: tuple[str, ...]


# ---------------------------------------------------------------------------------------------
@dataclass
class Matrix:
    """The whole matrix, with lookups. Build it with `load()`."""

    path: str
    dated: str
    sources: dict[str, Source]
    cann: tuple[CannRelease, ...]
    chips: tuple[Chip, ...]
    conflicts: dict[str, Conflict]
    pta_windows: tuple[PtaWindow, ...]
    kernels: tuple[KernelRule, ...]
    firmware: tuple[FirmwareMin, ...]
    packages: dict[str, str]
    wheels: dict[str, Any]
    """torch_npu version (pip spelling) -> PyRange, or {arch: PyRange}."""
    mindspore_unpaired: tuple[MsPairing, ...] = ()
    _by_cann: dict = field(default_factory=dict, repr=False)

    # -- CANN ------------------------------------------------------------------------
    def release(self, version: str | AscendVersion) -> CannRelease | None:
        """The CANN row for exactly this release (case-insensitive), else None."""
        if not self._by_cann:
            self._by_cann = {r.parsed.key: r for r in self.cann}
        v = version if isinstance(version, AscendVersion) else parse_ascend(version)
        return self._by_cann.get(v.key)

    def newest_cann(self) -> AscendVersion:
        return max(r.parsed for r in self.cann)

    def neighbours(self, version: AscendVersion) -> list[CannRelease]:
        """The tabled releases just below and above `version` (for "nearest" hints)."""
        below = [r for r in self.cann if r.parsed < version and r.pairings]
        above = [r for r in self.cann if r.parsed > version and r.pairings]
        out = []
        if below:
            out.append(max(below, key=lambda r: r.parsed))
        if above:
            out.append(min(above, key=lambda r: r.parsed))
        return out

    # -- torch_npu -------------------------------------------------------------------
    def pairings(self) -> list[Pairing]:
        return [p for r in self.cann for p in r.pairings]

    def builds(self, torch_npu: str) -> list[Pairing]:
        """Every pairing that lists this torch_npu build (local label ignored)."""
        want = _public(torch_npu)
        return [p for p in self.pairings() if _public(p.torch_npu) == want]

    def newest_torch_npu(self) -> Any:
        keys = [_public(p.torch_npu) for p in self.pairings()]
        keys += [parse_pep440(v) for v in self.wheels]
        return max(keys)

    def lines_for(self, release: CannRelease) -> set[tuple[int, int]]:
        """PyTorch (major, minor) lines that have a build for this CANN release."""
        return {parse_pep440(p.torch).release[:2] for p in release.pairings}

    def line_known(self, line: tuple[int, int]) -> list[CannRelease]:
        """CANN releases that pair some build of this PyTorch line."""
        return [r for r in self.cann if line in self.lines_for(r)]

    def wheel_python(self, torch_npu: str, arch: str | None = None) -> PyRange | list[PyRange] | None:
        """Python range of the PyPI wheels of this build (a list when arches differ and arch is unknown)."""
        entry = self.wheels.get(str(_public(torch_npu)))
        if entry is None or isinstance(entry, PyRange):
            return entry
        if arch in entry:
            return entry[arch]
        return list(entry.values())

    def windows_for(self, pta: str) -> list[PtaWindow]:
        return [w for w in self.pta_windows if pta in w.pta]

    # -- chips / kernels / firmware --------------------------------------------------
    def chip_family(self, chip: str) -> Chip | None:
        for c in self.chips:
            if c.matches(chip):
                return c
        return None

    def family(self, family: str) -> Chip | None:
        return next((c for c in self.chips if c.family == family), None)

    def kernel_rule(self, cann: AscendVersion) -> KernelRule | None:
        for rule in self.kernels:
            if cann >= parse_ascend(rule.start):
                return rule
        return None

    def newest_hdk(self) -> tuple:
        tops = []
        for r in self.cann:
            rules = [r.hdk] if r.hdk else []
            rules += list(r.hdk.by_family.values()) if r.hdk else []
            for rule in rules:
                for name in ("paired", "matched", "compatible"):
                    tops += [s.newest() for s in getattr(rule, name)]
        return max(tops)

    # -- mindspore -------------------------------------------------------------------
    def mindspore_pairings(self, version: str) -> list[MsPairing]:
        out = [m for r in self.cann for m in r.mindspore if m.matches(version)]
        return out + [m for m in self.mindspore_unpaired if m.matches(version)]

    # -- sources ---------------------------------------------------------------------
    def url(self, ref: str) -> str:
        """URL of a source reference (``PT-COMPAT`` or ``MS-DOCS r2.2``)."""
        src = self.sources.get(ref.split()[0])
        return src.url if src else ""

    def cite(self, refs: Iterable[str]) -> list[str]:
        """``KEY <url>`` strings for evidence lines."""
        return [f"{ref} <{self.url(ref)}>" for ref in dict.fromkeys(refs)]

    # -- tables for humans and the kb site -------------------------------------------
    def rows(self) -> list[dict[str, str]]:
        """Flat rows: one per (CANN, torch_npu) pairing; CANN releases without builds get one row."""
        out = []
        for r in self.cann:
            hdk = _hdk_text(r.hdk)
            for p in r.pairings or (None,):
                out.append({
                    "cann": r.version,
                    "torch": p.torch if p else "",
                    "torch_npu": p.torch_npu if p else "",
                    "python": str(p.python) if p and p.python else "",
                    "hdk": hdk,
                    "mindspore": ", ".join(m.spec for m in r.mindspore),
                    "conflicts": ", ".join(p.conflicts) if p else "",
                    "sources": ", ".join(p.sources if p else r.sources),
                })
        return out

    def to_markdown(self) -> str:
        """The rows as a Markdown table, sources linked."""
        head = "| CANN | PyTorch | torch_npu | Python | HDK | MindSpore | sources |\n|---|---|---|---|---|---|---|\n"
        lines = []
        for row in self.rows():
            srcs = ", ".join(f"[{s}]({self.url(s)})" for s in row["sources"].split(", ") if s)
            note = f" ({row['conflicts']})" if row["conflicts"] else ""
            lines.append(f"| {row['cann']} | {row['torch']} | {row['torch_npu']}{note} | {row['python']} "
                         f"| {row['hdk']} | {row['mindspore']} | {srcs} |")
        return head + "\n".join(lines) + "\n"


def _hdk_text(rule: HdkRule | None) -> str:
    if rule is None or not rule.stated:
        return ""
    return ", ".join(s.text for s in rule.paired + rule.matched)


def _public(version: str) -> Any:
    """PEP 440 version without its local label (``2.1.0.post3+git1234567`` -> 2.1.0.post3)."""
    v = parse_pep440(version)
    return parse_pep440(v.public) if v.local else v


_SPECS: dict[str, Any] = {}


def _specifier(text: str) -> "SpecifierSet":
    if text not in _SPECS:
        from packaging.specifiers import SpecifierSet

        _SPECS[text] = SpecifierSet(text)
    return _SPECS[text]


# ---------------------------------------------------------------------------------------------
# Loading
_CACHE: dict[tuple[str, float], Matrix] = {}


def load(path: str | os.PathLike[str] | None = None) -> Matrix:
    """Load and validate a matrix file (default: the shipped matrix.yaml). Raises MatrixError."""
    if path is None:
        from envcheck.resources import matrix_path

        path = matrix_path()
    path = str(path)
    try:
        mtime = os.stat(path).st_mtime
    except OSError as exc:
        raise UsageError(f"cannot read matrix {path}: {exc.strerror or exc}") from None
    hit = _CACHE.get((path, mtime))
    if hit is not None:
        return hit
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read matrix {path}: {getattr(exc, 'strerror', None) or exc}") from None
    matrix = parse_text(text, path)
    _CACHE[(path, mtime)] = matrix
    return matrix


def parse_text(text: str, path: str = "matrix.yaml") -> Matrix:
    """Build a Matrix from YAML text; the first problem raises MatrixError."""
    doc, dups = read_yaml(text, path)
    if dups:
        raise MatrixError(path, dups[0][0], dups[0][1])
    return _Builder(path).build(doc)


class _Builder:
    """Turns the parsed YAML into typed rows, raising MatrixError with the row's line."""

    def __init__(self, path: str) -> None:
        self.path = path

    def err(self, node: Any, message: str) -> MatrixError:
        return MatrixError(self.path, getattr(node, "line", 0) or 1, message)

    def req(self, d: Mapping[str, Any], key: str, kind: type | tuple = str) -> Any:
        if key not in d:
            raise self.err(d, f"missing required key {key!r}")
        return self.typed(d, key, d[key], kind)

    def opt(self, d: Mapping[str, Any], key: str, kind: type | tuple = str, default: Any = None) -> Any:
        if key not in d or d[key] is None:
            return default
        return self.typed(d, key, d[key], kind)

    def typed(self, d: Any, key: str, value: Any, kind: type | tuple) -> Any:
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
            want = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            raise self.err(d, f"{key}: expected {want}, got {type(value).__name__} {value!r}"
                           + (" (quote versions: YAML reads 3.10 as 3.1)" if isinstance(value, float) else ""))
        return value

    def strs(self, d: Mapping[str, Any], key: str) -> tuple[str, ...]:
        items = self.opt(d, key, list, [])
        for item in items:
            self.typed(d, key, item, str)
        return tuple(items)

    def ascend(self, d: Any, key: str, text: str) -> str:
        try:
            parse_ascend(text)
        except VersionError as exc:
            raise self.err(d, f"{key}: {exc}") from None
        return text

    def pep440(self, d: Any, key: str, text: str) -> str:
        try:
            parse_pep440(text)
        except VersionError as exc:
            raise self.err(d, f"{key}: {exc}") from None
        return text

    def pyrange(self, d: Mapping[str, Any], key: str) -> PyRange | None:
        text = self.opt(d, key)
        if text is None:
            return None
        try:
            return PyRange(text)
        except VersionError as exc:
            raise self.err(d, f"{key}: {exc}") from None

    # -- sections --------------------------------------------------------------------
    def build(self, doc: Any) -> Matrix:
        if not isinstance(doc, dict):
            raise MatrixError(self.path, 1, "the matrix must be a mapping with schema_version, sources and cann")
        if doc.get("schema_version") != 1:
            raise self.err(doc, f"schema_version: expected 1, got {doc.get('schema_version')!r}")
        sources = {k: Source(k, self.req(v, "title"), self.req(v, "url"), str(v.get("date", "")))
                   for k, v in self.req(doc, "sources", dict).items() if self.typed(doc, k, v, dict) is not None}
        chips = tuple(self.chip(c) for c in self.opt(doc, "chips", list, []))
        conflicts = {}
        for c in self.opt(doc, "conflicts", list, []):
            self.typed(doc, "conflicts[]", c, dict)
            sides = tuple((self.req(s, "says"), self.strs(s, "sources")) for s in self.req(c, "sides", list))
            conflicts[self.req(c, "id")] = Conflict(c["id"], self.req(c, "applies_to"), self.req(c, "title"),
                                                    sides, self.opt(c, "resolution", str, ""), c.line)
        cann = tuple(self.release(r) for r in self.req(doc, "cann", list))
        wheels_node = self.opt(doc, "wheels", dict, {})
        wheels: dict[str, Any] = {}
        pys = self.opt(wheels_node, "python", dict, {}) if wheels_node else {}
        for ver, val in pys.items():
            key = str(parse_pep440(self.pep440(pys, "wheels.python", str(ver))))
            if isinstance(val, dict):
                wheels[key] = {a: self.pyrange(val, a) for a in val}
            else:
                wheels[key] = self.pyrange(pys, ver)
        matrix = Matrix(
            path=self.path, dated=str(self.req(doc, "dated")), sources=sources, cann=cann, chips=chips,
            conflicts=conflicts,
            pta_windows=tuple(PtaWindow(self.strs(w, "pta"), tuple(self.ascend(w, "cann", c) for c in self.strs(w, "cann")),
                                        self.strs(w, "sources")) for w in self.opt(doc, "pta_windows", list, [])),
            kernels=tuple(KernelRule(self.ascend(k, "from", self.req(k, "from")), self.req(k, "package"),
                                     self.opt(k, "window", int, 0), self.opt(k, "minimum"), self.strs(k, "sources"),
                                     self.opt(k, "note", str, "")) for k in self.opt(doc, "kernels", list, [])),
            firmware=tuple(FirmwareMin(self.ascend(f, "driver", self.req(f, "driver")),
                                       self.ascend(f, "firmware", self.req(f, "firmware")), self.strs(f, "sources"))
                           for f in self.opt(doc, "firmware", list, [])),
            packages=dict(self.opt(doc, "packages", dict, {})),
            wheels=wheels,
            mindspore_unpaired=tuple(self.ms(m, None) for m in self.opt(doc, "mindspore_unpaired", list, [])),
        )
        self.check_refs(matrix, doc)
        return matrix

    def chip(self, c: Any) -> Chip:
        self.typed(c, "chips[]", c, dict)
        patterns = self.strs(c, "match")
        for p in patterns:
            try:
                re.compile(p)
            except re.error as exc:
                raise self.err(c, f"match: bad regex {p!r}: {exc}") from None
        since = self.opt(c, "since")
        return Chip(self.req(c, "family"), self.req(c, "name"), patterns, self.req(c, "token"),
                    self.strs(c, "kernel_tokens"), self.strs(c, "products"),
                    self.ascend(c, "since", since) if since else None, bool(c.get("hdk_differs", False)),
                    bool(c.get("mindspore", True)), self.strs(c, "sources"), c.line)

    def hdk(self, h: Any) -> HdkRule:
        self.typed(h, "hdk", h, dict)

        def specs(key: str) -> tuple[HdkSpec, ...]:
            out = []
            for text in self.strs(h, key):
                try:
                    out.append(HdkSpec(text))
                except VersionError as exc:
                    raise self.err(h, f"hdk.{key}: {exc}") from None
            return tuple(out)

        outside = self.opt(h, "outside", str, "fail")
        if outside not in ("fail", "warn"):
            raise self.err(h, f"hdk.outside: expected 'fail' or 'warn', got {outside!r}")
        fams = {k: self.hdk(v) for k, v in self.opt(h, "by_family", dict, {}).items()}
        return HdkRule(specs("paired"), specs("matched"), specs("compatible"), specs("unsupported"), outside,
                       self.strs(h, "sources"), self.strs(h, "conflict"), fams, h.line)

    def release(self, r: Any) -> CannRelease:
        self.typed(r, "cann[]", r, dict)
        version = self.ascend(r, "version", self.req(r, "version"))
        pairings = []
        for p in self.req(r, "torch", list):
            self.typed(r, "torch[]", p, dict)
            pairings.append(Pairing(version, self.pep440(p, "torch", self.req(p, "torch")),
                                    self.pep440(p, "torch_npu", self.req(p, "torch_npu")), self.pyrange(p, "python"),
                                    self.opt(p, "branch", str, ""), self.strs(p, "sources"), self.strs(p, "conflict"),
                                    self.opt(p, "note", str, ""), p.line))
        hdk = self.hdk(r["hdk"]) if r.get("hdk") is not None else None
        return CannRelease(version, str(self.opt(r, "pta", str, "")), self.pyrange(r, "python"),
                           self.strs(r, "python_sources"), hdk, tuple(pairings),
                           tuple(self.ms(m, version) for m in self.opt(r, "mindspore", list, [])),
                           self.strs(r, "sources"), self.opt(r, "note", str, ""), r.line)

    def ms(self, m: Any, cann: str | None) -> MsPairing:
        self.typed(m, "mindspore[]", m, dict)
        spec = self.req(m, "mindspore")
        try:
            if spec[:1] in "<>=!~":
                _specifier(spec)
            else:
                parse_pep440(spec)
        except Exception as exc:
            raise self.err(m, f"mindspore: {spec!r} is neither a version nor a specifier: {exc}") from None
        return MsPairing(cann, spec, self.pyrange(m, "python"), self.strs(m, "sources"), self.strs(m, "conflict"), m.line)

    def check_refs(self, mx: Matrix, doc: Any) -> None:
        """Every cited source key and conflict id must exist (the rest is `matrix lint`)."""
        for node, refs, conf in _cited(mx):
            for ref in refs:
                if ref.split()[0] not in mx.sources:
                    raise MatrixError(self.path, node or 1, f"unknown source {ref!r} (not in `sources`)")
            for cid in conf:
                if cid not in mx.conflicts:
                    raise MatrixError(self.path, node or 1, f"unknown conflict {cid!r} (not in `conflicts`)")


def _cited(mx: Matrix) -> Iterable[tuple[int, Sequence[str], Sequence[str]]]:
    """(line, source refs, conflict ids) of every row that cites something."""
    for r in mx.cann:
        yield r.line, r.sources + r.python_sources, ()
        if r.hdk:
            yield r.hdk.line, r.hdk.sources, r.hdk.conflicts
            for fam in r.hdk.by_family.values():
                yield fam.line, fam.sources, fam.conflicts
        for p in r.pairings:
            yield p.line, p.sources, p.conflicts
        for m in r.mindspore:
            yield m.line, m.sources, m.conflicts
    for m in mx.mindspore_unpaired:
        yield m.line, m.sources, m.conflicts
    for c in mx.chips:
        yield c.line, c.sources, ()
    for c in mx.conflicts.values():
        yield c.line, c.source_refs, ()


def judge(facts: "Facts", matrix: Matrix | None = None) -> list["Finding"]:
    """Run the compatibility checks (EC1xx) over `facts` and return their findings."""
    from envcheck.checks.compat import CHECKS
    from envcheck.registry import Context
    from envcheck.runner import run_check

    ctx = Context(facts=facts)
    ctx._matrix = matrix if matrix is not None else load()
    return [f for c in CHECKS for f in run_check(c, ctx)]


def hypothetical_facts(*, cann: str | None = None, driver: str | None = None, firmware: str | None = None,
                       torch: str | None = None, torch_npu: str | None = None, python: str | None = None,
                       chip: str | None = None, mindspore: str | None = None, arch: str | None = None,
                       kernels: Sequence[Mapping[str, str]] = (), source: str = "flag") -> "Facts":
    """Facts for a planned environment (``matrix check`` flags); None means "not part of the plan"."""
    from envcheck.model import Facts

    facts = Facts(root="/")
    packages = {k: v for k, v in (("torch", torch), ("torch-npu", torch_npu), ("mindspore", mindspore)) if v}
    facts.python = {"version": python, "packages": packages, "executable": f"--python ({source})",
                    "package_files": {k: f"--{k} ({source})" for k in packages}}
    if cann:
        facts.cann = {"installs": [{"home": f"--cann ({source})", "version": cann, "source": f"--cann ({source})",
                                    "components": {}, "kernels": [dict(k) for k in kernels], "nnal": []}],
                      "active": 0}
    else:
        facts.cann = {"installs": [], "active": None}
    facts.driver = {k: v for k, v in (("version", driver), ("version_source", f"--driver ({source})"),
                                      ("firmware_version", firmware),
                                      ("firmware_source", f"--firmware ({source})")) if v and (driver or firmware)}
    if not driver:
        facts.driver.pop("version_source", None)
    if not firmware:
        facts.driver.pop("firmware_source", None)
    facts.npu = {"chip": chip, "source": f"--chip ({source})"} if chip else {}
    facts.system = {"arch": arch} if arch else {}
    return facts
