"""Load matrix.yaml into typed, frozen rows and answer lookups about it (pure, no machine I/O).

`load(path=None) -> Matrix` reads the shipped matrix (``envcheck.resources.matrix_path()``) or
another file and raises `MatrixError` (``matrix.yaml:LINE: message``) when it is malformed.
`Matrix.rows()` / `Matrix.to_markdown()` give a flat table (the kb site renders it at build time).
Loading lives in `envcheck.matrix.load`; judging planned versions lives above the checks, in `envcheck.plan`.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from packaging.version import Version

from envcheck.errors import EnvcheckError
from envcheck.versions import AscendVersion, PyRange, VersionError, parse_ascend, parse_pep440

if TYPE_CHECKING:  # pragma: no cover
    from packaging.specifiers import SpecifierSet




class MatrixError(EnvcheckError):
    """A malformed matrix file: the message reads ``path:LINE: message``."""

    def __init__(self, path: str, line: int, message: str) -> None:
        self.path, self.line, self.message = path, line, message
        super().__init__(f"{path}:{line}: {message}")

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

    __slots__ = ("text", "lo", "hi")

    def __init__(self, text: str) -> None:
        self.text = text
        lo, sep, hi = text.partition("..")
        self.lo = _hdk_bound(lo.strip(), low=True)
        self.hi = _hdk_bound((hi if sep else lo).strip(), low=False)

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
    by_family: Mapping[str, HdkRule] = field(default_factory=dict)
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
class Advisory:
    """A known defect of single releases (matrix.yaml ``advisories``): versions the tables pair correctly but
    whose maintainers name a defect that a later build fixes."""

    id: str
    package: str
    """``torch_npu``, ``torch``, ``mindspore`` (PEP 440 versions) or ``cann``, ``driver``, ``firmware`` (Ascend)."""
    versions: tuple[str, ...]
    title: str
    fixed_in: str
    kb: str
    """The kb entry that treats the defect's symptom."""
    sources: tuple[str, ...]
    line: int = 0

    @property
    def ascend(self) -> bool:
        return self.package in ASCEND_PACKAGES

    def affects(self, version: str) -> bool:
        """Is `version` one of the affected releases? PEP 440 versions compare without their local label
        (``2.8.0+cpu`` is 2.8.0); Ascend versions as releases (``8.0.rc1`` is 8.0.RC1). Unparseable: no."""
        try:
            if self.ascend:
                key = parse_ascend(version).key
                return any(parse_ascend(v).key == key for v in self.versions)
            pub = parse_pep440(version).public
            return any(parse_pep440(v).public == pub for v in self.versions)
        except VersionError:
            return False


ADVISORY_PACKAGES = ("torch_npu", "torch", "mindspore", "cann", "driver", "firmware")
ASCEND_PACKAGES = ("cann", "driver", "firmware")


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
    """CANN releases, or ``8.5.X`` for every release of a line."""
    sources: tuple[str, ...]

    def has_pta(self, pta: str) -> bool:
        """Is this PTA release (``7.3.0``, ``26.1.1``) in the window (``7.3.X`` covers the 7.3 line)?"""
        return bool(pta) and any(_line_or_same(w, pta) for w in self.pta)

    def has_cann(self, version: str) -> bool:
        return any(_line_or_same(w, version) for w in self.cann)

    def describe(self) -> str:
        return f"PTA {', '.join(self.pta)} with CANN {', '.join(self.cann)}"


def _line_or_same(spec: str, version: str) -> bool:
    """``8.5.X`` matches 8.5.0 / 8.5.2; anything else is compared as an Ascend version."""
    if spec.upper().endswith(".X"):
        return version.upper().startswith(spec[:-1].upper())
    try:
        return parse_ascend(spec).key == parse_ascend(version).key
    except Exception:
        return spec.lower() == version.lower()


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
    wheels: dict[str, PyRange | dict[str, PyRange]]
    """torch_npu version (pip spelling) -> PyRange, or {arch: PyRange}."""
    mindspore_unpaired: tuple[MsPairing, ...] = ()
    advisories: tuple[Advisory, ...] = ()
    """Known defects of single releases, whatever they are paired with."""
    as_of_date: str = ""
    """``as_of:`` in matrix.yaml: when the matrix was last checked against its sources."""
    _by_cann: dict = field(default_factory=dict, repr=False)

    @property
    def as_of(self) -> str:
        """The matrix's "as of" date (YYYY-MM-DD) for reports; falls back to ``dated``."""
        return self.as_of_date or self.dated

    # -- CANN ------------------------------------------------------------------------
    def release(self, version: str | AscendVersion) -> CannRelease | None:
        """The CANN row for exactly this release (case-insensitive), else None."""
        if not self._by_cann:
            self._by_cann = {r.parsed.key: r for r in self.cann}
        v = version if isinstance(version, AscendVersion) else parse_ascend(version)
        return self._by_cann.get(v.key)

    def advisories_for(self, package: str, version: str | None) -> list[Advisory]:
        """The known defects of `package` (an ADVISORY_PACKAGES name) at `version`."""
        if not version:
            return []
        return [a for a in self.advisories if a.package == package and a.affects(version)]

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

    def newest_torch_npu(self) -> Version:
        keys = [_public(p.torch_npu) for p in self.pairings()]
        keys += [parse_pep440(v) for v in self.wheels]
        return max(keys)

    def lines_for(self, release: CannRelease) -> set[tuple[int, int]]:
        """PyTorch (major, minor) lines that have a build for this CANN release."""
        return {_torch_line(p.torch) for p in release.pairings}

    def line_known(self, line: tuple[int, int]) -> list[CannRelease]:
        """CANN releases that pair some build of this PyTorch line."""
        return [r for r in self.cann if line in self.lines_for(r)]

    def wheel_ranges(self, torch_npu: str, arch: str | None = None) -> list[PyRange]:
        """Python ranges of the PyPI wheels of this build: [] when it has no wheels, one range when all
        arches agree or `arch` is known, one per arch otherwise (a Python is covered when some range has it)."""
        entry = self.wheels.get(str(_public(torch_npu)))
        if entry is None:
            return []
        if isinstance(entry, PyRange):
            return [entry]
        if arch in entry:
            return [entry[arch]]
        return list(entry.values())

    def wheel_python(self, torch_npu: str, arch: str | None = None) -> PyRange | list[PyRange] | None:
        """Older shape of `wheel_ranges`: None, one range, or a list when arches differ and arch is unknown.

        Prefer `wheel_ranges`, which is always a list."""
        ranges = self.wheel_ranges(torch_npu, arch)
        if not ranges:
            return None
        entry = self.wheels[str(_public(torch_npu))]
        return ranges if isinstance(entry, dict) and arch not in entry else ranges[0]

    def newest_line(self) -> tuple[int, int]:
        """Newest PyTorch (major, minor) line that any CANN release pairs."""
        return max(_torch_line(p.torch) for p in self.pairings())

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


def _public(version: str) -> Version:
    """PEP 440 version without its local label (``2.1.0.post3+git1234567`` -> 2.1.0.post3)."""
    v = parse_pep440(version)
    return parse_pep440(v.public) if v.local else v


def _torch_line(version: str) -> tuple[int, int]:
    """(major, minor) of a PEP 440 version; ``2`` is line (2, 0) as PEP 440 pads missing parts with zeros."""
    release = parse_pep440(version).release
    return (release[0], release[1] if len(release) > 1 else 0)


_SPECS: dict[str, Any] = {}


def _specifier(text: str) -> SpecifierSet:
    if text not in _SPECS:
        from packaging.specifiers import SpecifierSet

        _SPECS[text] = SpecifierSet(text)
    return _SPECS[text]
