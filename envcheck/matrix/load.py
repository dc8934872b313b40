"""Read matrix.yaml: YAML with line numbers, then typed rows; problems raise MatrixError(path:LINE)."""
from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml

from envcheck import safeio
from envcheck.errors import UsageError
from envcheck.matrix.model import (
    ADVISORY_PACKAGES,
    ASCEND_PACKAGES,
    Advisory,
    CannRelease,
    Chip,
    Conflict,
    FirmwareMin,
    HdkRule,
    HdkSpec,
    KernelRule,
    Matrix,
    MatrixError,
    MsPairing,
    Pairing,
    PtaWindow,
    Source,
    _specifier,
)
from envcheck.resources import matrix_path
from envcheck.versions import PyRange, VersionError, parse_ascend, parse_pep440


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
        try:
            node = loader.get_single_node()
            safeio.check_yaml_node(node)
            doc = loader.construct_document(node) if node is not None else None
        except RecursionError:
            raise safeio.yaml_bomb_error()("nested too deeply") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 1 if mark else 1
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise MatrixError(path, line, f"not valid YAML: {problem}") from None
    finally:
        loader.dispose()
    return doc, loader.duplicates



class Builder:
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
            as_of_date=str(self.opt(doc, "as_of", str, "")),
            pta_windows=tuple(PtaWindow(self.strs(w, "pta"),
                                        tuple(c if c.upper().endswith(".X") else self.ascend(w, "cann", c)
                                              for c in self.strs(w, "cann")),
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
            advisories=self.advisories(self.opt(doc, "advisories", list, [])),
        )
        self.check_refs(matrix, doc)
        return matrix

    def advisories(self, items: list[Any]) -> tuple[Advisory, ...]:
        out: list[Advisory] = []
        for a in items:
            self.typed(a, "advisories[]", a, dict)
            pkg = self.req(a, "package")
            if pkg not in ADVISORY_PACKAGES:
                raise self.err(a, f"package: expected one of {', '.join(ADVISORY_PACKAGES)}, got {pkg!r}")
            check = self.ascend if pkg in ASCEND_PACKAGES else self.pep440
            versions = self.strs(a, "versions")
            if not versions:
                raise self.err(a, "versions: name at least one affected release")
            for v in versions:
                check(a, "versions", v)
            fixed = check(a, "fixed_in", self.req(a, "fixed_in"))
            sources = self.strs(a, "sources")
            if not sources:
                raise self.err(a, "sources: cite at least one source for a known defect")
            adv = Advisory(self.req(a, "id"), pkg, versions, self.req(a, "title"), fixed, self.req(a, "kb"),
                           sources, a.line)
            if adv.affects(fixed):
                raise self.err(a, f"fixed_in: {fixed} is itself listed as affected")
            if any(o.id == adv.id for o in out):
                raise self.err(a, f"id: duplicate advisory id {adv.id!r}")
            out.append(adv)
        return tuple(out)

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
        return MsPairing(cann, spec, self.pyrange(m, "python"), self.strs(m, "sources"), self.strs(m, "conflict"),
                         m.line)

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
    for chip in mx.chips:
        yield chip.line, chip.sources, ()
    for conflict in mx.conflicts.values():
        yield conflict.line, conflict.source_refs, ()
    for adv in mx.advisories:
        yield adv.line, adv.sources, ()


# ---------------------------------------------------------------------------------------------
# Loading
_CACHE: dict[tuple[str, float], Matrix] = {}


def load(path: str | os.PathLike[str] | None = None) -> Matrix:
    """Load and validate a matrix file (default: the shipped matrix.yaml). Raises MatrixError."""
    if path is None:
        path = matrix_path()
    path = str(path)
    try:
        mtime = os.stat(path).st_mtime
    except OSError as exc:
        raise UsageError(f"cannot read matrix {path}: {exc.strerror or exc}") from None
    hit = _CACHE.get((path, mtime))
    if hit is not None:
        return hit
    text = safeio.read_text_bounded(path, what="matrix")
    matrix = parse_text(text, path)
    _CACHE[(path, mtime)] = matrix
    return matrix


def parse_text(text: str, path: str = "matrix.yaml") -> Matrix:
    """Build a Matrix from YAML text; the first problem raises MatrixError."""
    doc, dups = read_yaml(text, path)
    if dups:
        raise MatrixError(path, dups[0][0], dups[0][1])
    return Builder(path).build(doc)
