"""The one parser and ordering for CANN / HDK (driver, firmware) and torch-family version strings.

CANN and HDK strings are not PEP 440 (``8.0.RC2.alpha003``, ``24.1.rc2.b030``, ``20.2.2.spc001``,
``9.2.0-beta.2``), so they get their own grammar here; torch, torch_npu, Python and MindSpore
versions are PEP 440 and go through ``packaging``. Nothing else in envcheck compares versions.

Ordering of Ascend versions, within one ``major.minor`` (compat-facts b9, ascend-artifacts s7):
``x.y.Tn`` (internal test drop) < ``x.y.RCn`` < ``x.y.n`` (final); a pre-release suffix sorts below
its base (``alpha`` < ``beta`` < ``rc`` < none); build / ``spc`` / hot-fix suffixes sort above it
(``24.1.rc2`` < ``24.1.rc2.b030`` < ``24.1.rc2.2``). Comparison is case-insensitive and
``9.0.0-beta.1`` equals ``9.0.0.beta1`` (the runtime's own ConvertVersion does the same).
"""
from __future__ import annotations

import functools
import re
from typing import Any

from packaging.version import InvalidVersion, Version

__all__ = [
    "VersionError", "AscendVersion", "parse_ascend", "parse_pep440", "base_release",
    "same_base", "python_minor", "PyRange", "parse_pyrange", "canonical_pip", "canonical_name", "lenient_key",
]


class VersionError(ValueError):
    """A version string that does not follow the expected grammar."""


# stage of the third component: internal test drop < release candidate < final
_T, _RC, _FINAL = 0, 1, 2
# pre-release suffix rank (below the base); _NONE = no suffix
_PRE = {"alpha": 0, "a": 0, "beta": 1, "b": 1, "rc": 2}
_NONE = 3
# post suffix kinds (above the base): build number < spc patch < numeric hot-fix
_POST = {"b": 0, "spc": 1, "": 2}

_HEAD = re.compile(r"^(\d+)\.(\d+)\.(?:(rc)(\d+)|(t)(\d+)|(\d+))", re.I)
_PRE_RE = re.compile(r"^[.-](alpha|beta|rc)\.?(\d+)", re.I)
_POST_RE = re.compile(r"^[.-](b|spc)?(\d+)", re.I)

Key = tuple[Any, ...]
MAX_DIGITS = 32
"""Longest number accepted in a version component (a 4,300-digit one is an input error, not a ValueError)."""


def _show(raw: object) -> str:
    """repr of a version string for an error message, cut to 60 characters (the input may be huge)."""
    text = str(raw)
    return repr(text) if len(text) <= 60 else repr(text[:60]) + f"... ({len(text):,} characters)"


def _int(text: str, raw: object) -> int:
    if len(text) > MAX_DIGITS:
        raise VersionError(f"{_show(raw)}: a version number has more than {MAX_DIGITS} digits")
    return int(text)


@functools.total_ordering
class AscendVersion:
    """A parsed CANN / HDK / firmware version. Compares by `key`; `raw` keeps the original text."""

    __slots__ = ("raw", "major", "minor", "stage", "number", "pre", "post", "key")

    def __init__(self, raw: str) -> None:
        text = raw.strip()
        m = _HEAD.match(text)
        if not m:
            raise VersionError(f"{_show(raw)} is not a CANN / HDK version (expected e.g. 8.0.RC1, 8.1.0, 24.1.rc2)")
        self.raw = text
        self.major, self.minor = _int(m.group(1), raw), _int(m.group(2), raw)
        if m.group(3):
            self.stage, self.number = _RC, _int(m.group(4), raw)
        elif m.group(5):
            self.stage, self.number = _T, _int(m.group(6), raw)
        else:
            self.stage, self.number = _FINAL, _int(m.group(7), raw)
        rest = text[m.end():]
        pre = _PRE_RE.match(rest)
        self.pre: tuple[int, int] = (_NONE, 0)
        if pre:
            self.pre = (_PRE[pre.group(1).lower()], _int(pre.group(2), raw))
            rest = rest[pre.end():]
        post: list[tuple[int, int]] = []
        while rest:
            pm = _POST_RE.match(rest)
            if not pm:
                raise VersionError(f"{_show(raw)} is not a CANN / HDK version (cannot read {_show(rest)})")
            post.append((_POST[(pm.group(1) or "").lower()], _int(pm.group(2), raw)))
            rest = rest[pm.end():]
        self.post = tuple(post)
        self.key: Key = (self.major, self.minor, self.stage, self.number, self.pre, self.post)

    # -- views -----------------------------------------------------------------------
    @property
    def line(self) -> tuple[int, int]:
        """``(major, minor)``: the release line (``8.0`` for ``8.0.RC2``)."""
        return (self.major, self.minor)

    @property
    def base(self) -> AscendVersion:
        """The release without pre/post suffixes (``24.1.rc2.2`` -> ``24.1.RC2``)."""
        return AscendVersion(self._head())

    @property
    def release_key(self) -> Key:
        """Key of the release ignoring build / hot-fix suffixes (keeps alpha/beta)."""
        return (self.major, self.minor, self.stage, self.number, self.pre)

    @property
    def is_prerelease(self) -> bool:
        return self.pre[0] != _NONE or self.stage == _T

    def _head(self) -> str:
        third = {_RC: f"RC{self.number}", _T: f"T{self.number}", _FINAL: str(self.number)}[self.stage]
        return f"{self.major}.{self.minor}.{third}"

    def canonical(self) -> str:
        """Docs spelling: upper-case RC/T, ``.alphaN`` / ``.betaN`` suffixes, hot-fix numbers kept."""
        out = self._head()
        if self.pre[0] != _NONE:
            out += "." + ("alpha", "beta", "rc")[self.pre[0]] + str(self.pre[1])
        for kind, num in self.post:
            out += "." + {0: "b", 1: "spc", 2: ""}[kind] + str(num)
        return out

    # -- comparisons -----------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = parse_ascend(other)
            except VersionError:
                return False
        return isinstance(other, AscendVersion) and self.key == other.key

    def __lt__(self, other: AscendVersion) -> bool:
        if isinstance(other, str):
            other = parse_ascend(other)
        return self.key < other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"AscendVersion({self.raw!r})"

    def __str__(self) -> str:
        return self.raw


@functools.lru_cache(maxsize=1024)
def parse_ascend(text: str) -> AscendVersion:
    """Parse a CANN / HDK / firmware version string; raises VersionError."""
    if not isinstance(text, str):
        raise VersionError(f"{_show(text)} is not a version string")
    return AscendVersion(text)


def lenient_key(text: object) -> tuple[Any, ...]:
    """Sort key for a CANN version found on a machine (a directory name, a version file); never raises.

    Uses the `AscendVersion` ordering, so the probe and the checks agree. A ``cann-`` prefix
    (``/usr/local/Ascend/cann-8.5.0``) is ignored; when only the head parses (``8.0.RC2 beta``) the
    head decides; anything else sorts below every version, all such strings equal (a stable sort keeps
    their order)."""
    s = str(text if text is not None else "").strip()
    if s[:5].lower() == "cann-":
        s = s[5:]
    try:
        return (1, parse_ascend(s).key)
    except VersionError:
        pass
    m = _HEAD.match(s)
    if m:
        try:
            return (1, parse_ascend(m.group(0)).key)
        except VersionError:  # a component with too many digits
            pass
    return (0,)


@functools.lru_cache(maxsize=1024)
def parse_pep440(text: str) -> Version:
    """Parse torch / torch_npu / Python / MindSpore versions (``2.1.0.post6``, ``2.1.0+cpu``)."""
    if any(len(run) > MAX_DIGITS for run in re.findall(r"\d+", str(text))):
        raise VersionError(f"{_show(text)}: a version number has more than {MAX_DIGITS} digits")
    try:
        return Version(str(text).strip())
    except (InvalidVersion, ValueError):
        raise VersionError(f"{_show(text)} is not a PEP 440 version (expected e.g. 2.1.0, 2.1.0.post6)") from None


def base_release(text: str, width: int = 3) -> tuple[int, ...]:
    """The numeric release padded to `width`: ``2.1.0.post6`` / ``2.1.0+cpu`` / ``2.1.0rc1`` -> (2, 1, 0)."""
    rel = parse_pep440(text).release
    return tuple(list(rel[:width]) + [0] * (width - len(rel[:width])))


def same_base(a: str, b: str) -> bool:
    """True when two PEP 440 versions share ``major.minor.micro`` (local labels, pre and post ignored)."""
    return base_release(a) == base_release(b)


def python_minor(text: str) -> tuple[int, int]:
    """``3.10.12`` -> (3, 10)."""
    rel = parse_pep440(text).release
    return (rel[0], rel[1] if len(rel) > 1 else 0)


def canonical_name(name: str) -> str:
    """A distribution name normalised per PEP 503: runs of ``-``, ``_``, ``.`` become one ``-``, lower case
    (``Torch_NPU`` / ``torch.npu`` / ``torch-npu`` are one project). The one package-name normaliser."""
    return re.sub(r"[-_.]+", "-", name).lower()


def canonical_pip(text: str) -> str:
    """What pip calls a version (``2.1.0.rc1`` -> ``2.1.0rc1``)."""
    return str(parse_pep440(text))


class PyRange:
    """An inclusive Python range by minor version, with an optional patch floor / ceiling.

    Written ``"3.8-3.10"``, ``"3.7.5-3.10"`` or ``"3.7-3.11.4"``; a single ``"3.10"`` is one minor.
    """

    __slots__ = ("text", "lo", "hi")

    def __init__(self, text: str) -> None:
        self.text = text
        parts = [p.strip() for p in re.split(r"\s*(?:-|–|\.\.)\s*", str(text).strip(), maxsplit=1)]
        if len(parts) == 1:
            parts = parts * 2
        try:
            self.lo = _py_tuple(parts[0])
            self.hi = _py_tuple(parts[1])
        except VersionError:
            raise VersionError(f"{_show(text)} is not a Python range (expected e.g. 3.8-3.10)") from None
        if self.lo[:2] > self.hi[:2]:
            raise VersionError(f"Python range {_show(text)} runs backwards")

    def __contains__(self, version: str) -> bool:
        v = _py_tuple(version, pad=True)
        lo = self.lo + (0,) * (3 - len(self.lo))
        hi = self.hi if len(self.hi) == 3 else self.hi[:2] + (10**6,)
        return lo <= v <= hi

    def minors(self) -> list[tuple[int, int]]:
        """Every minor the range spans, e.g. [(3, 8), (3, 9), (3, 10)]."""
        return [(self.lo[0], m) for m in range(self.lo[1], self.hi[1] + 1)]

    def __repr__(self) -> str:
        return f"PyRange({self.text!r})"

    def __str__(self) -> str:
        return self.text


def _py_tuple(text: str, pad: bool = False) -> tuple[int, ...]:
    if not re.fullmatch(r"\d+\.\d+(\.\d+)?", text.strip()):
        if pad:  # an interpreter version such as 3.10.12rc1 or 3.13.0+
            rel = parse_pep440(text).release
            return tuple(list(rel[:3]) + [0] * (3 - len(rel[:3])))
        raise VersionError(f"{_show(text)} is not a Python version")
    nums = tuple(_int(p, text) for p in text.strip().split("."))
    if pad:
        nums = nums + (0,) * (3 - len(nums))
    return nums


def parse_pyrange(text: str) -> PyRange:
    return PyRange(text)
