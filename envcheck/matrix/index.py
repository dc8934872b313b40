"""Maintainer check: which releases on the package index does the matrix lack? (`matrix lint --index`)

Asks the PyPI JSON API (``https://pypi.org/pypi/<name>/json``) for torch-npu, torch and mindspore,
reads the Python tags from the wheel file names, and lists the releases (not yanked) that
matrix.yaml does not know, newest first. Never called by a normal `envcheck` run: it needs the
network, and only a maintainer updating matrix.yaml wants it. Offline tests pass a fetcher that
reads recorded answers (tests/data/pypi/).

Imports only foundation modules and the matrix loader (layer rule).
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Callable

from envcheck.errors import UsageError
from envcheck.matrix.model import Matrix
from envcheck.versions import VersionError, parse_pep440

__all__ = ["PACKAGES", "INDEX_URL", "Missing", "fetch", "releases", "known", "missing", "check", "render"]

PACKAGES = ("torch-npu", "torch", "mindspore")
INDEX_URL = "https://pypi.org/pypi/{name}/json"
_WHEEL = re.compile(r"^(?P<dist>[^-]+)-(?P<ver>[^-]+)(-[0-9][^-]*)?-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$")
Fetcher = Callable[[str], Mapping[str, Any]]


@dataclass(frozen=True)
class Missing:
    """A release on the index that the matrix lacks."""

    package: str
    version: str
    python: tuple[str, ...] = ()
    """Python minors of its wheels ("3.10", ...), ascending; empty for sdist-only / pure wheels."""
    platforms: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {"package": self.package, "version": self.version, "python": list(self.python),
                "platforms": list(self.platforms)}


def fetch(name: str, timeout: float = 20.0) -> Mapping[str, Any]:
    """The index's JSON answer for one project (network). Raises UsageError with one line."""
    import urllib.error
    import urllib.request

    url = INDEX_URL.format(name=name)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (fixed https URL)
            return json.loads(resp.read().decode("utf-8"))
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise UsageError(f"cannot read {url}: {getattr(exc, 'reason', None) or exc}") from None


def _py_minor(tag: str) -> list[str]:
    """'cp310' -> ['3.10']; 'cp39.cp310' -> both; 'py3' / 'py2.py3' -> []."""
    out = []
    for t in tag.split("."):
        m = re.fullmatch(r"cp3([0-9]+)t?", t)
        if m:
            out.append(f"3.{int(m.group(1))}")
    return out


def releases(doc: Mapping[str, Any]) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """version -> (Python minors, platforms) for every release with at least one file not yanked."""
    out: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    rel = doc.get("releases")
    if not isinstance(rel, Mapping):
        raise UsageError("index answer has no 'releases' mapping (not a PyPI JSON API document)")
    for ver, files in rel.items():
        files = [f for f in (files or []) if isinstance(f, Mapping) and not f.get("yanked")]
        if not files:
            continue
        pys: set[str] = set()
        plats: set[str] = set()
        for f in files:
            m = _WHEEL.match(str(f.get("filename", "")))
            if m:
                pys.update(_py_minor(m.group("py")))
                plats.update(p for p in m.group("plat").split(".") if p != "any")
        key = lambda s: tuple(int(x) for x in s.split("."))  # noqa: E731
        out[str(ver)] = (tuple(sorted(pys, key=key)), tuple(sorted(plats)))
    return out


def known(mx: Matrix, package: str) -> list[str]:
    """Versions (or specifiers, for MindSpore) the matrix names for a package."""
    if package == "torch-npu":
        return [p.torch_npu for p in mx.pairings()] + list(mx.wheels)
    if package == "torch":
        return [p.torch for p in mx.pairings()]
    if package == "mindspore":
        return [m.spec for r in mx.cann for m in r.mindspore] + [m.spec for m in mx.mindspore_unpaired]
    raise UsageError(f"unknown package {package!r} (one of {', '.join(PACKAGES)})")


def _is_known(mx: Matrix, package: str, version: str) -> bool:
    if package == "mindspore":
        return bool(mx.mindspore_pairings(version))
    v = parse_pep440(version)
    return any(parse_pep440(k).public == v.public for k in known(mx, package) if k[:1] not in "<>=!~")


def missing(mx: Matrix, package: str, doc: Mapping[str, Any]) -> list[Missing]:
    """Releases on the index newer than the oldest version the matrix knows and absent from it, newest first.

    (Older releases than anything in the matrix are history, not news.)"""
    floor_list = [parse_pep440(k) for k in known(mx, package) if k[:1] not in "<>=!~"]
    floor = min(floor_list) if floor_list else None
    out = []
    for ver, (pys, plats) in releases(doc).items():
        try:
            v = parse_pep440(ver)
        except VersionError:
            continue
        if floor is not None and v < floor:
            continue
        if not _is_known(mx, package, ver):
            out.append((v, Missing(package, ver, pys, plats)))
    return [m for _, m in sorted(out, key=lambda t: t[0], reverse=True)]


def check(mx: Matrix, fetcher: Fetcher = fetch, packages: Iterable[str] = PACKAGES) -> list[Missing]:
    """Ask the index about each package; every release the matrix lacks."""
    out: list[Missing] = []
    for name in packages:
        out += missing(mx, name, fetcher(name))
    return out


def render(found: list[Missing], mx: Matrix) -> str:
    """Text for the maintainer: one line per release, with its Python tags."""
    if not found:
        return f"the matrix (as of {mx.as_of}) knows every release on the index\n"
    lines = [f"{len(found)} release(s) on the index that the matrix (as of {mx.as_of}) lacks:"]
    for m in found:
        py = ", ".join(m.python) if m.python else "no cpXY wheels"
        lines.append(f"  {m.package} {m.version}  (Python {py})")
    lines.append("add them to matrix.yaml (a torch-npu wheel: `wheels.python`; a pairing: its CANN row, with a source)")
    return "\n".join(lines) + "\n"
