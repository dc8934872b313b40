"""Check declarations: the Check object, the @check decorator and the run Context."""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from envcheck.model import Evidence, Facts, Finding, Status

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.matrix import Matrix
    from envcheck.smoke.session import Session as SmokeSession

CODE_RE = re.compile(r"^EC\d{3}$")
SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


@dataclass
class Context:
    """What a check may look at: the facts, the matrix (loaded lazily) and the options."""

    facts: Facts
    matrix_path: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    loaded_matrix: Matrix | None = None
    """A matrix already loaded by the caller; otherwise `matrix` loads `matrix_path` on first use."""
    smoke: SmokeSession | None = None
    """The smoke session of this run: the EC4xx checks build it from `options` on first use and
    read their parts' results from it (each part runs once, in child processes)."""

    @property
    def matrix(self) -> Matrix:
        if self.loaded_matrix is None:
            from envcheck import (
                matrix as _m,  # lazy: plain `probe` never parses the matrix
            )

            self.loaded_matrix = _m.load(self.matrix_path)
        return self.loaded_matrix


CheckFn = Callable[["Check", Context], Iterable[Finding]]


@dataclass(frozen=True)
class Check:
    """One check: stable code, slug (names the failure), one-line summary, section, function."""

    code: str
    slug: str
    summary: str
    section: str
    fn: CheckFn
    failable: bool = True
    """False for checks that only ever report ok/warn/skip (they need no kb entry)."""
    default: bool = True
    """False for checks that only run on request (smoke suites, cluster)."""
    requires: tuple[str, ...] = ()
    """Codes whose failure makes this check meaningless: when one of them ran earlier in the same run
    and did not pass, this check does not run and reports nothing (its cause carries the one ✗)."""
    depends: tuple[str, ...] = ()
    """Codes whose failure explains this check's non-ok findings: when one of them fails in the same
    report, the finding collapses under it ("because EC301") instead of failing again. A finding may
    name its own (``depends=`` on the helpers) where only some of its outcomes follow from a cause."""

    def run(self, ctx: Context) -> Iterator[Finding]:
        yield from self.fn(self, ctx)

    # Helpers so check bodies stay short: self.ok(...), self.fail(...)
    def finding(self, status: Status, title: str, *, detail: str = "",
                evidence: Sequence[Evidence] = (), fix: str = "", kb: Sequence[str] = (),
                data: Mapping[str, Any] | None = None, depends: Sequence[str] | None = None) -> Finding:
        return Finding(code=self.code, slug=self.slug, status=status, title=title, detail=detail,
                       evidence=tuple(evidence), fix=fix, kb=tuple(kb), section=self.section,
                       data=dict(data or {}), depends=tuple(self.depends if depends is None else depends))

    def ok(self, title: str, **kw: Any) -> Finding:
        return self.finding(Status.OK, title, **kw)

    def warn(self, title: str, **kw: Any) -> Finding:
        return self.finding(Status.WARN, title, **kw)

    def fail(self, title: str, **kw: Any) -> Finding:
        return self.finding(Status.FAIL, title, **kw)

    def skip(self, title: str, **kw: Any) -> Finding:
        return self.finding(Status.SKIP, title, **kw)

    def error(self, title: str, **kw: Any) -> Finding:
        return self.finding(Status.ERROR, title, **kw)


def check(code: str, slug: str, summary: str, *, section: str, failable: bool = True,
          default: bool = True, requires: Sequence[str] = (),
          depends: Sequence[str] = ()) -> Callable[[CheckFn], Check]:
    """Declare a check. The decorated function receives (check, ctx) and yields Findings."""
    if not CODE_RE.match(code):
        raise ValueError(f"bad check code {code!r}")
    if not SLUG_RE.match(slug):
        raise ValueError(f"bad check slug {slug!r}")

    def wrap(fn: CheckFn) -> Check:
        return Check(code, slug, summary, section, fn, failable, default, requires=tuple(requires),
                     depends=tuple(depends))

    return wrap


@dataclass(frozen=True)
class Retired:
    """A tombstone: a code that once existed and must never be reused."""

    code: str
    slug: str
    retired: str
    replaced_by: str | None = None


def index(checks: Iterable[Check]) -> dict[str, Check]:
    """Map code and slug to check; raise on duplicates (codes are never reused)."""
    out: dict[str, Check] = {}
    for c in checks:
        for key in (c.code, c.slug):
            if key in out:
                raise ValueError(f"duplicate check id {key!r}")
            out[key] = c
    return out


def wanted(code: str, slug: str, select: Sequence[str] = (), ignore: Sequence[str] = ()) -> bool:
    """--select / --ignore by code prefix or slug (flake8-style: `EC2` matches the whole family)."""

    def hit(pats: Sequence[str]) -> bool:
        return any(code.startswith(p.upper()) or slug == p for p in pats)

    return (not select or hit(select)) and not hit(ignore)


def select(checks: Iterable[Check], select: Sequence[str] = (), ignore: Sequence[str] = ()) -> list[Check]:
    """The checks that --select / --ignore leave in."""
    return [c for c in checks if wanted(c.code, c.slug, select, ignore)]
