"""EC1xx compatibility checks: the probe's versions judged against matrix.yaml.

Verdict levels (issue 3), the same in every check: **ok** an official pairing; **warn** stated
compatible but not the paired build, sources that disagree (both named), tabled-but-no-wheel,
or a version newer than the matrix; **fail** only where every stated source rules it out.
An absent component is a skip with the reason.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from envcheck.checks import _compat as u
from envcheck.checks.registry import Check, Context, check
from envcheck.model import Evidence, Facts, Finding, ev
from envcheck.versions import AscendVersion, PyRange, base_release, parse_ascend, parse_pep440

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.matrix import CannRelease, Matrix, Pairing
    from envcheck.matrix.model import PtaWindow

SECTION = "Compatibility"
SETUP_SOURCES = ("PT-SETUP", "PYPI-NPU")


@check("EC101", "torch-torch-npu-mismatch", "torch matches the version torch_npu was built for",
       section=SECTION)
def torch_matches_torch_npu(chk: Check, ctx: Context) -> Iterator[Finding]:
    """torch_npu ``X.Y.Z`` / ``X.Y.Z.postN`` / ``X.Y.ZrcN`` is built against exactly torch ``X.Y.Z``.

    Its wheel pins ``torch==X.Y.Z+cpu`` (x86_64, up to 2.11) or ``torch==X.Y.Z`` (compat-facts b1,
    PT-SETUP); local labels such as ``+cpu`` or ``+git1234567`` are ignored. A different base
    version fails; a CUDA build or a pre-release of the same base warns.
    """
    facts = ctx.facts
    torch, npu = facts.package("torch"), facts.package("torch-npu")
    if npu is None:
        yield chk.skip("torch_npu is not installed: nothing to pair torch with")
        return
    tv, nerr = u.pep(torch)[0], u.pep(npu)[1]
    if nerr:
        yield chk.warn(f"cannot judge: torch_npu version {npu!r} does not parse", evidence=[u.seen(facts, "torch-npu")])
        return
    need = ".".join(map(str, base_release(npu)))
    if torch is None:
        yield chk.skip(f"torch is not installed (torch_npu {npu} needs torch {need})",
                       fix=f"pip install torch=={need}", evidence=[u.seen(facts, "torch-npu")])
        return
    if tv is None:  # torch is present: it does not parse
        yield chk.warn(f"cannot judge: torch version {torch!r} does not parse", evidence=[u.seen(facts, "torch")])
        return
    mx = u.matrix_or_error(chk, ctx)  # only for citing the sources: a broken matrix cites none
    evid = [u.seen(facts, "torch"), u.seen(facts, "torch-npu")]
    evid += [] if isinstance(mx, Finding) else u.cite(mx, SETUP_SOURCES)
    data = {"rule": "torch base == torch_npu base", "torch": torch, "torch_npu": npu, "needs": need}
    if base_release(torch) != base_release(npu):
        yield chk.fail(f"torch {torch} does not match torch_npu {npu}, which needs torch {need}",
                       detail="torch_npu is compiled against one PyTorch release and pins it exactly "
                              "(local labels such as +cpu are ignored). Any other torch gives import errors, "
                              "undefined symbols or wrong results.",
                       evidence=evid, fix=_torch_fix(need, npu, facts), data=data)
    elif tv.is_prerelease or tv.is_devrelease:
        yield chk.warn(f"torch {torch} is a pre-release of {need}; "
                       f"torch_npu {npu} is built against the {need} release",
                       evidence=evid, fix=_torch_fix(need, npu, facts), data=data)
    elif tv.local and str(tv.local).startswith(("cu", "rocm")):
        yield chk.warn(f"torch {torch} is a CUDA/ROCm build; torch_npu {npu} expects the CPU build of torch {need}",
                       detail="torch_npu refuses a CUDA torch at import on recent releases (two accelerators).",
                       evidence=evid, fix=_torch_fix(need, npu, facts, cpu=True), data=data)
    else:
        yield chk.ok(f"torch {torch} matches torch_npu {npu}", evidence=evid, data=data)


def _torch_fix(need: str, npu: str, facts: Facts, cpu: bool = False) -> str:
    line = u.pip_line(need, npu, u.arch(facts) or ("x86_64" if cpu else None))
    return f"{line}   (or install the torch_npu build for your torch: envcheck matrix suggest --torch <version>)"


@check("EC102", "torch-npu-cann-mismatch", "torch_npu is a build for the installed CANN", section=SECTION)
def torch_npu_matches_cann(chk: Check, ctx: Context) -> Iterator[Finding]:
    """Is the installed torch_npu the build made for this CANN release?

    ok: the CANN row lists this build. warn: sources disagree about the pairing (both named), the
    build is one release's but a PTA<->CANN compatibility window (HA-PTA-720C) covers this CANN,
    the build is on PyPI but in no table, or CANN / torch_npu are newer than the matrix.
    fail: the build belongs to another CANN release and no stated window covers this one.
    """
    facts = ctx.facts
    npu = facts.package("torch-npu")
    if npu is None:
        yield chk.skip("torch_npu is not installed")
        return
    if facts.cann_version is None:
        yield chk.skip(f"no CANN toolkit found to pair torch_npu {npu} with")
        return
    mx = u.matrix_or_error(chk, ctx)
    if isinstance(mx, Finding):
        yield mx
        return
    cv, cerr = u.ascend(facts.cann_version)
    nv, nerr = u.pep(npu)
    if cv is None or nerr:  # both are present: None / a problem means it does not parse
        yield chk.warn(f"cannot judge: {cerr or nerr}", evidence=[u.seen(facts, "cann"), u.seen(facts, "torch-npu")])
        return
    yield _judge_npu_cann(chk, mx, facts, cv, npu)


def _judge_npu_cann(chk: Check, mx: Matrix, facts: Facts, cv: AscendVersion, npu: str) -> Finding:
    seen = [u.seen(facts, "cann"), u.seen(facts, "torch-npu")]
    rel = mx.release(cv)
    arch = u.arch(facts)
    data = {"rule": "torch_npu build <-> CANN release", "cann": str(cv), "torch_npu": npu}
    if rel is None:
        near = mx.neighbours(cv)
        hint = "; ".join(f"CANN {r.version}: " + ", ".join(p.torch_npu for p in r.pairings) for r in near)
        if cv > mx.newest_cann():
            return _newer(chk, mx, f"CANN {cv}", f"no torch_npu pairing, HDK or Python statement for CANN {cv}; "
                          f"nearest tabled releases: {hint}", seen, data)
        what = f"CANN {cv} is not in the matrix"
        return chk.warn(f"{what}: cannot confirm torch_npu {npu}", detail=f"nearest tabled releases: {hint}",
                        evidence=seen, data=data, fix="envcheck matrix suggest --cann <a tabled release>")
    row = f"CANN {rel.version}"
    if not rel.pairings:
        near = mx.neighbours(cv)
        hint = "; ".join(f"CANN {r.version}: " + ", ".join(p.torch_npu for p in r.pairings) for r in near)
        return chk.warn(f"the matrix lists no torch_npu build for CANN {rel.version}: cannot confirm {npu}",
                        detail=f"nearest tabled releases: {hint}", data=data,
                        evidence=seen + u.cite(mx, rel.sources, rel.line,
                                               row + (f" ({rel.note})" if rel.note else "")))
    mine = [p for p in rel.pairings if _same(p.torch_npu, npu)]
    if mine:
        p = mine[0]
        evid = seen + u.cite(mx, p.sources, p.line, f"{row} -> torch_npu {p.torch_npu} (PyTorch {p.torch})")
        cs = u.conflicts(mx, p.conflicts, "pairing")
        if cs:
            refs = [r for c in cs for r in c.source_refs]
            ids = [c.id for c in cs]
            return chk.warn(f"torch_npu {npu} for CANN {rel.version}: sources disagree ({', '.join(ids)})",
                            detail=u.describe(cs), evidence=u.uniq(evid + u.cite(mx, refs)),
                            data={**data, "conflicts": ids})
        return chk.ok(f"torch_npu {npu} is the CANN {rel.version} build"
                      + (f" (PTA {rel.pta}, branch {p.branch})" if p.branch else ""), evidence=evid, data=data)
    others = mx.builds(npu)
    if others:
        homes = sorted({p.cann for p in others}, key=parse_ascend)  # p.cann: the release row it sits in
        win = _window(mx, [mx.release(c) for c in homes], rel)
        srcs = [s for p in others for s in p.sources]
        evid = seen + u.cite(mx, srcs, others[0].line,
                             f"torch_npu {npu} -> CANN {', '.join(homes)}")
        if win:
            return chk.warn(f"torch_npu {npu} is the CANN {', '.join(homes)} build: stated compatible with CANN "
                            f"{rel.version} per the window, not the paired build ({_target(rel, npu)})",
                            detail=f"compatible per the window, not the paired build. PTA compatibility window: "
                                   f"{win.describe()}",
                            evidence=u.uniq(evid + u.cite(mx, win.sources)),
                            data={**data, "window": win.describe(), "build_target": _target(rel, npu)},
                            fix=_fix_for_release(mx, rel, npu, arch))
        return chk.fail(f"torch_npu {npu} is the build for CANN {', '.join(homes)}, not for CANN {rel.version}",
                        detail="Within one PyTorch line the post number identifies the CANN release (compat-facts b3); "
                               "no stated PTA<->CANN window covers this combination.",
                        evidence=evid, data=data, fix=_fix_for_release(mx, rel, npu, arch, other_cann=homes))
    return _untabled(chk, mx, rel, npu, seen, data, arch)


def _untabled(chk: Check, mx: Matrix, rel: CannRelease, npu: str, seen: list[Evidence], data: dict[str, str],
              arch: str | None) -> Finding:
    """torch_npu that no table lists (e.g. a newer post on PyPI, or a future release)."""
    on_pypi = str(parse_pep440(npu).public) in mx.wheels  # the caller parsed npu
    pypi = "a wheel exists on PyPI but no table lists it" if on_pypi else "not on PyPI either"
    line = u.line_of(npu)
    if line in mx.lines_for(rel):
        same = [p for p in rel.pairings if u.line_of(p.torch) == line]
        return chk.warn(f"torch_npu {npu} is in no table ({pypi}); the CANN {rel.version} build of PyTorch "
                        f"{'.'.join(map(str, line))} is {same[0].torch_npu}",
                        evidence=seen + u.cite(mx, ["PYPI-NPU"] + list(same[0].sources), same[0].line,
                                               f"CANN {rel.version} -> torch_npu {same[0].torch_npu}"),
                        data=data, fix=_fix_for_release(mx, rel, npu, arch))
    homes = mx.line_known(line)
    if homes:
        win = _window(mx, homes, rel)
        names = ", ".join(r.version for r in homes)
        if win:
            return chk.warn(f"torch_npu {npu} is in no table ({pypi}); PyTorch {'.'.join(map(str, line))} builds "
                            f"belong to CANN {names}, stated compatible with CANN {rel.version} per the window, "
                            f"not the paired build ({_target(rel, npu)})",
                            evidence=seen + u.cite(mx, win.sources), data=data,
                            fix=_fix_for_release(mx, rel, npu, arch))
        return chk.fail(f"torch_npu {npu}: PyTorch {'.'.join(map(str, line))} has no torch_npu build for CANN "
                        f"{rel.version} (the tables pair it with CANN {names})",
                        evidence=seen + u.cite(mx, [s for r in homes for s in r.sources]), data=data,
                        fix=_fix_for_release(mx, rel, npu, arch))
    if line > mx.newest_line():
        return _newer(chk, mx, f"torch_npu {npu}", f"no table pairs PyTorch {'.'.join(map(str, line))} builds with a "
                      f"CANN release ({pypi}); the newest tabled line is "
                      f"{'.'.join(map(str, mx.newest_line()))}", seen + u.cite(mx, ["PYPI-NPU"]), data)
    return chk.warn(u.not_in_matrix(mx, f"torch_npu {npu}") + f" ({pypi})", evidence=seen + u.cite(mx, ["PYPI-NPU"]),
                    data=data, fix=_fix_for_release(mx, rel, npu, arch))


def _same(a: str, b: str) -> bool:
    pa, pb = u.pep(a)[0], u.pep(b)[0]
    return pa is not None and pb is not None and pa.public == pb.public


def _window(mx: Matrix, homes: Sequence[CannRelease | None], rel: CannRelease) -> PtaWindow | None:
    """A PTA window containing one of `homes`' PTA releases and `rel`, else None."""
    for w in mx.pta_windows:
        if w.has_cann(rel.version) and any(h is not None and w.has_pta(h.pta) for h in homes):
            return w
    return None


def _target(rel: CannRelease, npu: str) -> str:
    """'CANN R's build target for PyTorch L: torch_npu X' (or its builds when the line has none)."""
    line = u.line_of(npu)
    same = [p.torch_npu for p in rel.pairings if u.line_of(p.torch) == line]
    if same:
        return f"CANN {rel.version}'s build target for PyTorch {'.'.join(map(str, line))} is torch_npu {same[0]}"
    return f"CANN {rel.version}'s build targets are torch_npu {', '.join(p.torch_npu for p in rel.pairings)}"


def _newer(chk: Check, mx: Matrix, what: str, missing: str, seen: list[Evidence], data: Mapping[str, object],
           fix: str = "") -> Finding:
    """A version newer than the matrix: its own finding, linked to kb version-newer-than-matrix."""
    return chk.warn(f"{what} is newer than the matrix (as of {mx.as_of})",
                    detail=f"The matrix has no facts for it yet: {missing}. This is not a mismatch and no "
                           "downgrade is implied; check the vendor's newest compatibility table, or use a newer "
                           "envcheck / a site matrix (--matrix).",
                    evidence=seen, data={**data, "newer_than_matrix": True, "as_of": mx.as_of,
                                         "failure": "version-newer-than-matrix"},
                    fix=fix, kb=("version-newer-than-matrix",))


def _fix_for_release(mx: Matrix, rel: CannRelease, npu: str, arch: str | None, exclude_disputed: bool = False,
                     other_cann: Sequence[str] = ()) -> str:
    """Exact pip line(s) for this CANN release, same PyTorch line first."""
    pairs = [p for p in rel.pairings if not (exclude_disputed and u.conflicts(mx, p.conflicts, "pairing"))]
    if not pairs:
        return "envcheck matrix suggest --cann " + rel.version
    line = u.line_of(npu)
    pairs.sort(key=lambda p: u.line_of(p.torch) != line)
    fix = f"for CANN {rel.version}: {u.pip_line(pairs[0].torch, pairs[0].torch_npu, arch)}"
    note = u.pip_note(mx, pairs[0])
    if note:
        fix += f"  ({note})"
    if other_cann:
        fix += f"; or install CANN {other_cann[-1]} to keep torch_npu {npu}"
    return fix


@check("EC103", "python-unsupported", "Python is supported by the torch_npu build and by CANN", section=SECTION)
def python_supported(chk: Check, ctx: Context) -> Iterator[Finding]:
    """Python support belongs to each torch_npu *build* (compat-facts b6), not to the PyTorch line.

    ok: the interpreter's minor has a wheel for this build (PyPI tags) and the table lists it.
    warn: only one of the two lists it (conflict d4), or no Python data exists. fail: neither.
    Also judged: CANN's own Python range (warn outside) and MindSpore's (fail outside).
    """
    facts = ctx.facts
    py = facts.python_version
    if py is None:
        yield chk.skip("no Python interpreter version read")
        return
    mx = u.matrix_or_error(chk, ctx)
    if isinstance(mx, Finding):
        yield mx
        return
    if u.pep(py)[1]:
        yield chk.warn(f"cannot judge: Python version {py!r} does not parse")
        return
    npu = facts.package("torch-npu")
    if npu is None:
        yield chk.skip("torch_npu is not installed: no build to check Python against")
    elif u.pep(npu)[1] is None:
        yield _python_vs_build(chk, mx, facts, py, npu)
    yield from _python_vs_cann(chk, mx, facts, py)
    yield from _python_vs_mindspore(chk, mx, facts, py)


def _python_vs_build(chk: Check, mx: Matrix, facts: Facts, py: str, npu: str) -> Finding:
    cv = u.ascend(facts.cann_version)[0]
    builds = mx.builds(npu)
    mine = [p for p in builds if cv is not None and parse_ascend(p.cann) == cv]  # p.cann: its release row
    tabled = [p for p in (mine or builds) if p.python]
    table_ranges = [p.python for p in tabled if p.python is not None]
    table_ok = any(py in r for r in table_ranges) if tabled else None
    wheels = mx.wheel_ranges(npu, u.arch(facts))
    wheel_ok = any(py in w for w in wheels) if wheels else None
    tab_txt = ", ".join(sorted({str(r) for r in table_ranges})) or "none"
    whl_txt = ", ".join(str(w) for w in wheels) or "none on PyPI"
    pyminor = ".".join(py.split(".")[:2])
    evid = [u.seen(facts, "python"), u.seen(facts, "torch-npu"),
            ev("matrix", f"torch_npu {npu}: table Python {tab_txt}; wheels {whl_txt}")]
    evid = u.uniq(evid + u.cite(mx, [s for p in tabled for s in p.sources] + (["PYPI-NPU"] if wheels else [])))
    data: dict[str, object] = {"rule": "Python in the torch_npu build's range", "python": py, "torch_npu": npu,
            "table": tab_txt, "wheels": whl_txt}
    d4 = [c for p in tabled for c in u.conflicts(mx, p.conflicts, "python")]
    fix = _python_fix(mx, facts, py, npu, tabled, wheels)
    if wheel_ok is None and table_ok is None:
        newer = parse_pep440(npu) > mx.newest_torch_npu()  # the caller parsed npu
        if newer:
            return _newer(chk, mx, f"torch_npu {npu}", f"no wheel list or table Python column for it, so Python "
                          f"{pyminor} cannot be confirmed", evid, data)
        return chk.warn(f"cannot confirm Python {pyminor}: no Python data for torch_npu {npu}", evidence=evid,
                        data=data)
    if wheel_ok is None or table_ok is None:
        ok = wheel_ok if table_ok is None else table_ok
        basis = "its PyPI wheels" if table_ok is None else "the table (no PyPI wheels for this build)"
        if ok:
            return chk.ok(f"Python {pyminor} is supported by torch_npu {npu} ({basis})", evidence=evid, data=data)
        shown = whl_txt if table_ok is None else tab_txt
        return chk.fail(f"Python {pyminor} is outside torch_npu {npu}'s range ({basis}: {shown})",
                        evidence=evid, data=data, fix=fix)
    if wheel_ok and table_ok:
        return chk.ok(f"Python {pyminor} is supported by torch_npu {npu} (wheel and table)", evidence=evid,
                      data=data)
    if wheel_ok or table_ok:
        why = ("a wheel exists but no table lists it" if wheel_ok
               else f"tabled but no cp{pyminor.replace('.', '')} wheel exists")
        return chk.warn(f"Python {pyminor} with torch_npu {npu}: {why}", detail=u.describe(d4), evidence=evid,
                        data=data, fix=fix if table_ok else "")
    return chk.fail(f"Python {pyminor} is outside torch_npu {npu}'s range (table {tab_txt}; wheels {whl_txt})",
                    evidence=evid, data=data, fix=fix)


def _python_fix(mx: Matrix, facts: Facts, py: str, npu: str, tabled: Sequence[Pairing],
                wheels: Sequence[PyRange]) -> str:
    ranges = [str(w) for w in wheels] or sorted({str(p.python) for p in tabled})
    fix = f"use a Python in {', '.join(ranges)} for torch_npu {npu}" if ranges else ""
    cv = u.ascend(facts.cann_version)[0]
    rel = mx.release(cv) if cv is not None else None
    if rel:
        for p in rel.pairings:
            ws = mx.wheel_ranges(p.torch_npu, u.arch(facts))
            if (ws and all(py in x for x in ws)) and not u.conflicts(mx, p.conflicts, "pairing"):
                return fix + f"; or keep Python and install {u.pip_line(p.torch, p.torch_npu, u.arch(facts))}"
    return fix


def _python_vs_cann(chk: Check, mx: Matrix, facts: Facts, py: str) -> Iterator[Finding]:
    cv = u.ascend(facts.cann_version)[0]
    rel = mx.release(cv) if cv is not None else None
    if rel is None or rel.python is None:
        return
    evid = [u.seen(facts, "python"), u.seen(facts, "cann")] + u.cite(mx, rel.python_sources, rel.line,
                                                                     f"CANN {rel.version}: Python {rel.python}")
    data = {"rule": "Python in CANN's own range", "python": py, "cann": rel.version, "range": str(rel.python)}
    if py in rel.python:
        yield chk.ok(f"Python {py} is in CANN {rel.version}'s range {rel.python}", evidence=evid, data=data)
    else:
        yield chk.warn(f"Python {py} is outside CANN {rel.version}'s stated range {rel.python}",
                       detail="CANN's Python tools (operator compilation) are validated on that range.",
                       evidence=evid, data=data, fix=f"use a Python in {rel.python}")


def _python_vs_mindspore(chk: Check, mx: Matrix, facts: Facts, py: str) -> Iterator[Finding]:
    ms = facts.package("mindspore")
    if ms is None or u.pep(ms)[1]:
        return
    rows = [(m, m.python) for m in mx.mindspore_pairings(ms) if m.python]
    if not rows:
        return
    m, rng = rows[0]
    evid = [u.seen(facts, "python"), u.seen(facts, "mindspore")] + u.cite(mx, m.sources, m.line,
                                                                          f"MindSpore {m.spec}: Python {rng}")
    data = {"rule": "Python in MindSpore's range", "python": py, "mindspore": ms, "range": str(rng)}
    if py in rng:
        yield chk.ok(f"Python {py} is supported by MindSpore {ms}", evidence=evid, data=data)
    else:
        yield chk.fail(f"Python {py} is outside MindSpore {ms}'s range {rng}", evidence=evid, data=data,
                       fix=f"use a Python in {rng} for MindSpore {ms}")


# EC104-EC107 (judged against the CANN release's HDK, chip, kernels and MindSpore rows) live in
# compat_hw.py, EC108 (releases with a known defect) in compat_defects.py; the EC1xx family is the three tuples.
from envcheck.checks import compat_defects, compat_hw  # noqa: E402

CHECKS = (torch_matches_torch_npu, torch_npu_matches_cann, python_supported, *compat_hw.CHECKS,
          *compat_defects.CHECKS)

__all__ = ["CHECKS"]
