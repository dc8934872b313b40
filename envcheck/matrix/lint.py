"""`envcheck matrix lint`: schema, references, duplicates, contradictions and order of a matrix file.

Every problem is reported as ``path:LINE: message`` (lines from the YAML nodes' start marks).
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from envcheck import safeio
from envcheck.matrix import Matrix, MatrixError
from envcheck.matrix.load import Builder, read_yaml
from envcheck.versions import parse_ascend, parse_pep440


@dataclass(frozen=True, order=True)
class Problem:
    """One lint problem at one line."""

    line: int
    message: str

    def render(self, path: str) -> str:
        return f"{path}:{self.line}: {self.message}"


def lint_file(path: str) -> tuple[list[Problem], Matrix | None]:
    """All problems in the file (sorted by line) and the matrix when it loads."""
    return lint_text(safeio.read_text_bounded(path, what="matrix"), path)


def lint_text(text: str, path: str = "matrix.yaml") -> tuple[list[Problem], Matrix | None]:
    try:
        doc, dups = read_yaml(text, path)
    except MatrixError as exc:
        return [Problem(exc.line, exc.message)], None
    problems = [Problem(line, msg) for line, msg in dups]
    root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    problems += list(_schema(root, doc))
    matrix = None
    if not problems:
        try:
            matrix = Builder(path).build(doc)
        except MatrixError as exc:
            problems.append(Problem(exc.line, exc.message))
    if matrix is not None:
        problems += list(_semantics(matrix, root))
    return sorted(set(problems)), matrix


# -- schema ----------------------------------------------------------------------------------
def _schema(root: Any, doc: Any) -> Iterator[Problem]:
    try:
        import jsonschema  # only lint pays for it
    except ImportError:  # not a core dependency: the loader's own typed validation still runs
        import sys

        print("envcheck: jsonschema is not installed; JSON Schema validation skipped "
              "(pip install jsonschema)", file=sys.stderr)
        return

    from envcheck.resources import schema_path

    with open(schema_path("matrix"), encoding="utf-8") as fh:
        schema = json.load(fh)
    validator = jsonschema.Draft202012Validator(schema)
    for err in validator.iter_errors(doc):
        where = ".".join(str(p) for p in err.absolute_path) or "(top level)"
        path = list(err.absolute_path)
        if err.validator == "additionalProperties" and isinstance(err.instance, dict):
            extra = [k for k in err.instance if k not in err.schema.get("properties", {})]
            path += extra[:1]  # point at the unexpected key itself
        yield Problem(_line_at(root, path), f"{where}: {_short(err)}")


def _short(err: Any) -> str:
    msg = err.message
    if err.validator == "pattern" and isinstance(err.instance, str):
        return f"{err.instance!r} does not have the expected form"
    if err.validator == "type" and isinstance(err.instance, float):
        return f"{err.instance!r} is a number, expected a string (quote versions: YAML reads 3.10 as 3.1)"
    if err.validator == "oneOf":
        return f"{err.instance!r} is neither a Python range nor an {{arch: range}} mapping"
    return msg if len(msg) < 160 else msg[:157] + "..."


def _line_at(node: Any, path: list) -> int:
    """Line (1-based) of the node at a JSON path in a composed YAML tree."""
    line = node.start_mark.line + 1 if node is not None else 1
    for part in path:
        child = None
        if isinstance(node, yaml.MappingNode):
            child = next((v for k, v in node.value if k.value == str(part)), None)
            if child is None:  # a bad key: point at the key
                child = next((k for k, _ in node.value if k.value == str(part)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            child = node.value[part]
        if child is None:
            break
        node, line = child, child.start_mark.line + 1
    return line


# -- meaning ---------------------------------------------------------------------------------
def _semantics(mx: Matrix, root: Any) -> Iterator[Problem]:
    yield from _order(mx, root)
    yield from _duplicates(mx, root)
    yield from _contradictions(mx)
    yield from _references(mx, root)


def _order(mx: Matrix, root: Any) -> Iterator[Problem]:
    for a, b in zip(mx.cann, mx.cann[1:]):
        if a.parsed < b.parsed:
            yield Problem(b.line, f"cann: {b.version} must come before {a.version} (newest release first)")
    for r in mx.cann:
        keys = [(parse_pep440(p.torch), parse_pep440(p.torch_npu)) for p in r.pairings]
        for (ka, pa), (kb, pb) in zip(zip(keys, r.pairings), zip(keys[1:], r.pairings[1:])):
            if kb > ka:
                yield Problem(pb.line, f"CANN {r.version}: torch {pb.torch} / torch_npu {pb.torch_npu} "
                                       f"must come before {pa.torch} / {pa.torch_npu} (newest PyTorch first)")
    wheels = list(mx.wheels)
    for wa, wb in zip(wheels, wheels[1:]):
        if parse_pep440(wb) < parse_pep440(wa):
            yield Problem(_wheel_line(root, wb), f"wheels.python: {wb} must come after {wa} (ascending)")
    fws = list(mx.firmware)
    for i, (fa, fb) in enumerate(zip(fws, fws[1:])):
        if parse_ascend(fb.driver) > parse_ascend(fa.driver):
            yield Problem(_line_at(root, ["firmware", i + 1]),
                          f"firmware: driver {fb.driver} must come before {fa.driver} (newest first)")


def _wheel_keys(root: Any) -> list[tuple[str, int]]:
    """(raw version key, line) of every wheels.python entry."""
    node = root
    for part in ("wheels", "python"):
        if not isinstance(node, yaml.MappingNode):
            return []
        node = next((v for k, v in node.value if k.value == part), None)
    if not isinstance(node, yaml.MappingNode):
        return []
    return [(k.value, k.start_mark.line + 1) for k, _ in node.value]


def _wheel_line(root: Any, version: str) -> int:
    want = parse_pep440(version)
    return next((line for raw, line in _wheel_keys(root) if parse_pep440(raw) == want), 1)


def _duplicates(mx: Matrix, root: Any) -> Iterator[Problem]:
    seen: dict = {}
    for r in mx.cann:
        key = r.parsed.key
        if key in seen:
            yield Problem(r.line, f"cann: duplicate release {r.version} (also on line {seen[key]})")
        seen.setdefault(key, r.line)
        pairs: dict = {}
        for p in r.pairings:
            pk = parse_pep440(p.torch_npu)
            if pk in pairs:
                yield Problem(p.line, f"CANN {r.version}: duplicate torch_npu {p.torch_npu} (also on line {pairs[pk]})")
            pairs.setdefault(pk, p.line)
    first: dict = {}
    for raw, line in _wheel_keys(root):
        v = parse_pep440(raw)
        if v in first:
            yield Problem(line, f"wheels.python: duplicate version {raw} (same as {first[v][0]} on line {first[v][1]})")
        first.setdefault(v, (raw, line))
    seen_ids: dict = {}
    for node in _items(root, "conflicts"):
        cid = None
        if isinstance(node, yaml.MappingNode):
            cid = next((v.value for k, v in node.value if k.value == "id"), None)
        if cid in seen_ids:
            yield Problem(node.start_mark.line + 1, f"conflicts: duplicate id {cid} (also on line {seen_ids[cid]})")
        seen_ids.setdefault(cid, node.start_mark.line + 1)


def _items(root: Any, key: str) -> list:
    if not isinstance(root, yaml.MappingNode):
        return []
    node = next((v for k, v in root.value if k.value == key), None)
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def _contradictions(mx: Matrix) -> Iterator[Problem]:
    homes: dict = {}
    for r in mx.cann:
        for p in r.pairings:
            if parse_pep440(p.torch).release[:3] != parse_pep440(p.torch_npu).release[:3]:
                yield Problem(p.line, f"CANN {r.version}: torch_npu {p.torch_npu} is built for torch "
                                      f"{'.'.join(map(str, parse_pep440(p.torch_npu).release[:3]))}, not {p.torch}")
            homes.setdefault(parse_pep440(p.torch_npu), []).append((r, p))
        if r.hdk:
            for bad in r.hdk.unsupported:
                for good in r.hdk.paired + r.hdk.matched + r.hdk.compatible:
                    if bad.lo <= good.hi and good.lo <= bad.hi:
                        yield Problem(r.hdk.line, f"CANN {r.version}: HDK {good.text} is both stated "
                                                  f"and unsupported ({bad.text})")
    for ver, rows in homes.items():
        disputed = [p for _, p in rows if any(mx.conflicts.get(c) and mx.conflicts[c].applies_to == "pairing"
                                              for c in p.conflicts)]
        if len(rows) > 1 and len(disputed) < len(rows) - 1:
            where = ", ".join(f"CANN {r.version} (line {p.line})" for r, p in rows)
            yield Problem(rows[-1][1].line, f"torch_npu {ver} is paired with several releases without a conflict "
                                            f"entry: {where}")


def _references(mx: Matrix, root: Any) -> Iterator[Problem]:
    ptas = {r.pta for r in mx.cann if r.pta}
    for i, w in enumerate(mx.pta_windows):
        line = _line_at(root, ["pta_windows", i])
        for pta in w.pta:
            if pta.upper().endswith(".X") and any(w.has_pta(p) for p in ptas):
                continue
            if pta not in ptas:
                yield Problem(line, f"pta_windows: PTA {pta} is not the `pta` of any CANN release")
        for c in w.cann:
            if c.upper().endswith(".X"):
                if not any(w.has_cann(r.version) for r in mx.cann):
                    yield Problem(line, f"pta_windows: no CANN release in `cann` is on line {c}")
            elif mx.release(c) is None:
                yield Problem(line, f"pta_windows: CANN {c} is not in `cann`")
    families = {c.family for c in mx.chips}
    for r in mx.cann:
        if r.hdk:
            for fam, rule in r.hdk.by_family.items():
                if fam not in families:
                    yield Problem(rule.line, f"CANN {r.version}: hdk.by_family names unknown chip family {fam!r}")
    used = {c for r in mx.cann for p in r.pairings for c in p.conflicts}
    used |= {c for r in mx.cann for m in r.mindspore for c in m.conflicts}
    used |= {c for m in mx.mindspore_unpaired for c in m.conflicts}
    used |= {c for r in mx.cann if r.hdk for c in r.hdk.conflicts}
    for conflict in mx.conflicts.values():
        if conflict.id not in used and conflict.applies_to not in ("none", "chip"):
            yield Problem(conflict.line, f"conflicts: {conflict.id} is referenced by no row "
                                         f"(add `conflict: [{conflict.id}]` where it applies)")
    for r in mx.cann:
        if not r.sources:
            yield Problem(r.line, f"CANN {r.version}: cites no source")
