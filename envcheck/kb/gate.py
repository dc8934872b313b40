"""Version gates on kb advice: an entry's `applies_to`, or one fix's gate (front matter `gates`).

`applies_to` maps a component to a gate:
- ``torch``, ``torch_npu``, ``python``, ``mindspore``: PEP 440 specifier sets, e.g. ``>=2.13.0`` or
  ``>=2.1,<2.10``;
- ``cann``, ``driver``: the same operators over CANN / HDK versions, e.g. ``>=8.5.0`` or ``<8.1.RC1``;
- ``chip``: chip families from matrix.yaml (``a1``, ``a2``, ``a3``, ``a5``, ``i2``, ...), comma
  separated; ``!a1`` excludes.

`gate_status(entry_or_fix, versions)` is pure: it says whether the advice applies to the probed
versions (True / False / None when a gated component was not probed) and a line for humans,
e.g. ``needs torch_npu >=2.13.0 (probed 2.12.0): does not apply``.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Callable

from envcheck.versions import VersionError, parse_ascend, parse_pep440

__all__ = ["GateError", "KEYS", "parse_gate", "gate_status", "gate_text", "gate_versions"]

KEYS = ("cann", "driver", "torch", "torch_npu", "python", "mindspore", "chip")
PEP_KEYS = ("torch", "torch_npu", "python", "mindspore")
ASCEND_KEYS = ("cann", "driver")
_CLAUSE = re.compile(r"^\s*(===|==|!=|<=|>=|~=|<|>)?\s*([^\s<>=!~,]+)\s*$")
_LABELS = {"torch_npu": "torch_npu", "cann": "CANN", "driver": "driver", "torch": "torch", "python": "Python",
           "mindspore": "MindSpore", "chip": "chip"}


class GateError(ValueError):
    """An `applies_to` value that is not a valid gate."""


def parse_gate(key: str, text: str) -> list[tuple[str, str]]:
    """[(operator, version-or-family)], validated; raises GateError."""
    if key not in KEYS:
        raise GateError(f"unknown applies_to key {key!r} (one of {', '.join(KEYS)})")
    if not isinstance(text, str) or not text.strip():
        raise GateError(f"applies_to.{key}: empty gate")
    out: list[tuple[str, str]] = []
    if key == "chip":
        for part in text.split(","):
            name = part.strip()
            neg = name.startswith("!")
            name = name.lstrip("!").strip().lower()
            if not re.fullmatch(r"[a-z][a-z0-9]*", name):
                raise GateError(f"applies_to.chip: {part.strip()!r} is not a chip family name")
            out.append(("!=" if neg else "==", name))
        return out
    for clause in text.split(","):
        m = _CLAUSE.match(clause)
        if not m:
            raise GateError(f"applies_to.{key}: {clause.strip()!r} is not '<op><version>' (e.g. >=2.13.0)")
        op, ver = m.group(1) or "==", m.group(2)
        if key in PEP_KEYS and ver.endswith(".*"):
            if op not in ("==", "!="):
                raise GateError(f"applies_to.{key}: {clause.strip()!r}: a '.*' version needs == or !=")
            _parse(key, ver[:-2])
        else:
            _parse(key, ver)
        out.append((op, ver))
    return out


def _parse(key: str, ver: str) -> Any:
    try:
        return parse_ascend(ver) if key in ASCEND_KEYS else parse_pep440(ver)
    except VersionError as exc:
        raise GateError(f"applies_to.{key}: {ver!r} is not a version: {exc}") from None


def gate_versions(key: str, text: str) -> list[str]:
    """The versions (or chip families) a gate names, for `kb lint`'s "exists in the matrix" check."""
    return [v[:-2] if v.endswith(".*") else v for _op, v in parse_gate(key, text)]


def _holds(key: str, clauses: list[tuple[str, str]], probed: str) -> bool:
    if key == "chip":
        fam = probed.lower()
        wanted = [v for op, v in clauses if op == "=="]
        banned = [v for op, v in clauses if op == "!="]
        return fam not in banned and (not wanted or fam in wanted)
    have = _parse(key, probed)
    if key in PEP_KEYS:
        from packaging.specifiers import SpecifierSet

        spec = SpecifierSet(",".join(f"{op}{v}" for op, v in clauses))
        return spec.contains(str(have), prereleases=True)
    cmp: dict[str, Callable[[Any, Any], bool]] = {
        "==": lambda a, b: a.key == b.key, "===": lambda a, b: a.key == b.key, "!=": lambda a, b: a.key != b.key,
        "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
        "~=": lambda a, b: a >= b and a.release_key[:2] == b.release_key[:2]}
    return all(cmp[op](have, _parse(key, v)) for op, v in clauses)


def entry_gates(entry: Any) -> list[Mapping[str, Any]]:
    """The well-formed items of an entry's front matter `gates` (each a mapping with an `applies_to`
    mapping, a `what` and an optional `note`): the one reader the CLI, reports and the site share."""
    items = (getattr(entry, "meta", None) or {}).get("gates") or []
    return [g for g in items if isinstance(g, Mapping) and isinstance(g.get("applies_to"), Mapping)]


def gate_text(applies_to: Mapping[str, str]) -> str:
    """'needs torch_npu >=2.13.0, CANN >=8.5.0' ('' when ungated)."""
    parts = [f"{_LABELS.get(k, k)} {str(v).replace(',', ', ')}" for k, v in applies_to.items()]
    return ("needs " + "; ".join(parts)) if parts else ""


def _applies_to(entry_or_fix: Any) -> Mapping[str, str]:
    if isinstance(entry_or_fix, Mapping):
        inner = entry_or_fix.get("applies_to")
        return inner if isinstance(inner, Mapping) else {k: v for k, v in entry_or_fix.items() if k in KEYS}
    return getattr(entry_or_fix, "applies_to", None) or {}


def gate_status(entry_or_fix: Any, versions: Mapping[str, str | None]) -> tuple[bool | None, str]:
    """Does this advice apply to the probed versions?

    entry_or_fix: a kb Entry, a gate mapping (``{"what": ..., "applies_to": {...}}``, one item of an
    entry's ``gates``) or a bare applies_to mapping. versions: probed versions by key (``torch_npu``,
    ``cann``, ``driver``, ``torch``, ``python``, ``mindspore``; ``chip`` = a chip family such as
    ``a2``); missing or None = not probed.
    Returns (True, text) when every gate holds, (False, text) when one fails, (None, text) when the
    advice is gated but a gated component was not probed (or the gate is malformed); (True, '') when
    the advice is not gated at all.
    """
    gates = dict(_applies_to(entry_or_fix))
    if not gates:
        return True, ""
    need = gate_text(gates)
    unknown, failed = [], []
    for key, text in gates.items():
        try:
            clauses = parse_gate(key, str(text))
        except GateError as exc:
            return None, f"{need} (gate not understood: {exc})"
        probed = versions.get(key)
        if not probed:
            unknown.append(_LABELS.get(key, key))
            continue
        try:
            if not _holds(key, clauses, str(probed)):
                failed.append(f"{_LABELS.get(key, key)} {probed}")
        except (GateError, VersionError):
            unknown.append(f"{_LABELS.get(key, key)} {probed!r} (unparseable)")
    if failed:
        return False, f"{need}; probed {', '.join(failed)}: does not apply"
    if unknown:
        return None, f"{need}; {', '.join(unknown)} not probed: may not apply"
    return True, f"{need}: applies to the probed versions"
