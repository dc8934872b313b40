"""EC104-EC107: HDK (driver / firmware), chip, kernels and MindSpore judged against the CANN release."""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from envcheck.checks import _compat as u
from envcheck.checks.registry import Check, Context, check
from envcheck.facts import CannPackage
from envcheck.model import Facts, Finding
from envcheck.versions import AscendVersion, parse_ascend

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.matrix import CannRelease, Chip, HdkRule, Matrix

SECTION = "Compatibility"


@check("EC104", "driver-too-old-for-cann", "the driver / firmware (HDK) is one stated for the CANN release",
       section=SECTION)
def driver_supports_cann(chk: Check, ctx: Context) -> Iterator[Finding]:
    """Is the NPU driver (HDK) one the CANN release is paired or stated compatible with?

    ok: the paired HDK or one listed as matched (hot-fix drops such as ``24.1.rc2.2`` count as
    their release). warn: an HDK only stated *compatible* (e.g. the 9.1.0 grid, MindSDK's ranges),
    a release whose sources are too thin to fail on, or a driver newer than the matrix.
    fail: an HDK marked unsupported, or outside every stated range. Firmware older than the
    minimum for the driver (ascend-deployer) warns. Upgrade order: firmware, driver, then CANN.
    """
    facts = ctx.facts
    from envcheck.checks.devices import effective_driver

    drv, note = effective_driver(facts)
    if facts.cann_version is None:
        yield chk.skip("no CANN toolkit found to judge the driver against")
        return
    if drv is None:
        yield chk.skip("no NPU driver found (driver/version.info)")
        return
    mx = u.matrix_or_error(chk, ctx)
    if isinstance(mx, Finding):
        yield mx
        return
    (cv, cerr), (dv, derr) = u.ascend(facts.cann_version), u.ascend(drv)
    if cv is None or dv is None:  # both are present, so None means it does not parse
        yield chk.warn(f"cannot judge: {cerr or derr}", evidence=[u.seen(facts, "cann"), u.seen(facts, "driver")])
        return
    hdk = _judge_hdk(chk, mx, facts, cv, dv)
    if note:  # version.info and npu-smi disagree (EC310): say which one was judged
        from dataclasses import replace

        from envcheck.model import ev

        hdk = replace(hdk, detail="\n".join(x for x in (f"judged: driver {dv}; {note}", hdk.detail) if x),
                      evidence=hdk.evidence + (ev("npu-smi info", f"Version: {facts.npu.get('version')}"),))
    yield hdk
    yield from _judge_firmware(chk, mx, facts, dv)


def _judge_hdk(chk: Check, mx: Matrix, facts: Facts, cv: AscendVersion, dv: AscendVersion) -> Finding:
    seen = [u.seen(facts, "cann"), u.seen(facts, "driver")]
    data: dict[str, object] = {"rule": "HDK stated for the CANN release", "cann": str(cv), "driver": str(dv)}
    rel = mx.release(cv)
    if rel is None:
        if cv > mx.newest_cann():
            return chk.warn(f"CANN {cv} is newer than the matrix (as of {mx.as_of}): cannot confirm driver {dv}",
                            evidence=seen, data={**data, "newer_than_matrix": True, "as_of": mx.as_of,
                                            "failure": "version-newer-than-matrix"},
                            kb=("version-newer-than-matrix",))
        return chk.warn(f"CANN {cv} is not in the matrix: cannot confirm driver {dv}", evidence=seen, data=data)
    fam = mx.chip_family(facts.chip) if facts.chip else None
    rule = rel.hdk
    fam_rule = rule.by_family.get(fam.family) if (rule and fam) else None
    eff = fam_rule or rule
    d9 = u.conflicts(mx, rule.conflicts, "hdk") if rule else []
    if eff is None or not eff.stated:
        return chk.warn(f"the matrix has no HDK statement for CANN {rel.version}: cannot confirm driver {dv}",
                        detail=u.describe(d9), evidence=seen + u.cite(mx, rule.sources if rule else rel.sources),
                        data=data)
    paired = ", ".join(s.text for s in eff.paired) or "none stated"
    evid = seen + u.cite(mx, eff.sources, eff.line, f"CANN {rel.version}: HDK paired {paired}"
                         + (f"; matched {', '.join(s.text for s in eff.matched)}" if eff.matched else "")
                         + (f"; compatible {', '.join(s.text for s in eff.compatible)}" if eff.compatible else ""))
    kind = eff.classify(dv)
    data["class"] = kind
    fix = _hdk_fix(mx, rel, eff, fam, dv, facts)
    if kind in ("paired", "matched"):
        note = u.describe([c for c in d9 if c.id == "d7"])
        return chk.ok(f"driver {dv} is {kind} with CANN {rel.version}", detail=note, evidence=evid, data=data)
    if kind == "compatible":
        return chk.warn(f"driver {dv} is stated compatible with CANN {rel.version}, but the paired HDK is {paired}",
                        detail=u.describe(d9), evidence=evid, data=data, fix=fix)
    if kind == "unsupported":
        return chk.fail(f"driver {dv} is marked unsupported for CANN {rel.version} (paired HDK {paired})",
                        evidence=evid, data=data, fix=fix)
    rel_word = "older" if all(dv.release_key < s.lo for s in eff.paired) else "newer" if eff.paired else "other"
    if dv.release_key > mx.newest_hdk():
        return chk.warn(f"driver {dv} is newer than the matrix (as of {mx.as_of}); CANN {rel.version} is paired "
                        f"with {paired}", detail="no HDK grid in the matrix names this driver yet: not a mismatch",
                        evidence=evid, data={**data, "newer_than_matrix": True, "as_of": mx.as_of,
                                            "failure": "version-newer-than-matrix"},
                        kb=("version-newer-than-matrix",))
    if eff.outside == "warn" or (fam is not None and fam.hdk_differs and fam_rule is None):
        return chk.warn(f"driver {dv} is not the HDK stated for CANN {rel.version} ({paired}); sources are too thin "
                        f"to rule it out", detail=u.describe(d9), evidence=evid, data=data, fix=fix)
    return chk.fail(f"driver {dv} is {rel_word} than every HDK stated for CANN {rel.version} (paired {paired})",
                    detail="The NPU driver and firmware (HDK) must be one the CANN release is paired or stated "
                           "compatible with; otherwise device initialisation or operators fail.",
                    evidence=evid, data=data, fix=fix)


def _hdk_fix(mx: Matrix, rel: CannRelease, eff: HdkRule, fam: Chip | None, dv: AscendVersion, facts: Facts) -> str:
    target = eff.paired[0].text if eff.paired else (eff.matched[0].text if eff.matched else "")
    fix = ""
    if target:
        pkgs = u.hdk_packages(mx, target, fam.token if fam else None, u.arch(facts), fam.family if fam else None)
        fix = f"install HDK {target} ({u.install_order(mx)}): {'; '.join(pkgs)}"
    homes = [r.version for r in mx.cann if r.hdk and r.hdk.classify(dv) in ("paired", "matched")]
    if homes:
        fix += (("; or " if fix else "")
                + f"keep driver {dv} and use CANN {homes[0]} (envcheck matrix suggest --cann {homes[0]})")
    return fix


def _judge_firmware(chk: Check, mx: Matrix, facts: Facts, dv: AscendVersion) -> Iterator[Finding]:
    fw = facts.firmware_version
    if fw is None:
        return
    fv, ferr = u.ascend(fw)
    if fv is None:  # fw is present: it does not parse
        yield chk.warn(f"cannot judge firmware: {ferr}", evidence=[u.seen(facts, "firmware")])
        return
    evid = [u.seen(facts, "driver"), u.seen(facts, "firmware")]
    data = {"rule": "firmware at least the minimum for the driver", "driver": str(dv), "firmware": str(fv)}
    if fv.major >= 20:  # an HDK release number (package_version), not the internal firmware number
        if fv.line < dv.line:
            yield chk.warn(f"firmware HDK {fv} is older than driver {dv}", evidence=evid, data=data,
                           fix=f"upgrade the firmware to HDK {dv.base} (firmware first, then the driver)")
        else:
            yield chk.ok(f"firmware HDK {fv} goes with driver {dv}", evidence=evid, data=data)
        return
    rule = next((m for m in mx.firmware if dv >= parse_ascend(m.driver)), None)  # the loader checked them
    if rule is None:
        return
    minimum = parse_ascend(rule.firmware)
    evid += u.cite(mx, rule.sources, 0, f"driver >= {rule.driver} needs firmware >= {rule.firmware}")
    if fv < minimum:
        yield chk.warn(f"firmware {fv} is older than {rule.firmware}, the minimum for driver {dv}",
                       evidence=evid, data=data, fix="upgrade the firmware package of the same HDK, then reboot")
    else:
        yield chk.ok(f"firmware {fv} meets the minimum {rule.firmware} for driver {dv}", evidence=evid, data=data)


@check("EC105", "chip-unsupported-by-cann", "the CANN release supports this NPU chip", section=SECTION)
def chip_supported_by_cann(chk: Check, ctx: Context) -> Iterator[Finding]:
    """Does this CANN release support the NPU chip family npu-smi reports?

    A3 (910_93) arrived with CANN 8.0.RC3 and 950 with 9.0.0 (the matrix's chip `since`, from compat-facts
    table E); a CANN older than that fails. A2 (910B) has no `since`: its first CANN is unverified (field
    update 2026-11, W12). An unknown chip name warns.
    """
    facts = ctx.facts
    if facts.chip is None:
        yield chk.skip("no NPU chip name read (npu-smi)")
        return
    if facts.cann_version is None:
        yield chk.skip(f"no CANN toolkit found to judge chip {facts.chip} against")
        return
    mx = u.matrix_or_error(chk, ctx)
    if isinstance(mx, Finding):
        yield mx
        return
    cv, cerr = u.ascend(facts.cann_version)
    seen = [u.seen(facts, "chip"), u.seen(facts, "cann")]
    if cv is None:  # the version is present: it does not parse
        yield chk.warn(f"cannot judge: {cerr}", evidence=seen)
        return
    fam = mx.chip_family(facts.chip)
    if fam is None:
        yield chk.warn(f"chip {facts.chip!r} is not a chip family the matrix knows", evidence=seen,
                       data={"rule": "chip family supported by CANN", "chip": facts.chip})
        return
    since = parse_ascend(fam.since) if fam.since else None  # the loader checked it
    evid = seen + u.cite(mx, fam.sources, fam.line,
                         f"{fam.name}: supported from CANN {fam.since or '(every release)'}")
    data = {"rule": "chip family supported by CANN", "chip": facts.chip, "family": fam.family, "since": fam.since}
    if since is not None and cv < since:
        first = min((r for r in mx.cann if r.parsed >= since and r.pairings), key=lambda r: r.parsed, default=None)
        yield chk.fail(f"CANN {cv} predates support for {fam.name} (chip {facts.chip}); "
                       f"first supported in CANN {fam.since}",
                       evidence=evid, data=data,
                       fix=f"install CANN {fam.since} or newer (envcheck matrix suggest --chip {facts.chip})"
                       + (f"; e.g. CANN {first.version}" if first and first.version != fam.since else ""))
        return
    cs = [c for c in mx.conflicts.values() if c.applies_to == "chip" and fam.family == "a3"]
    yield chk.ok(f"CANN {cv} supports {fam.name} (chip {facts.chip})", detail=u.describe(cs), evidence=evid, data=data)


_TOKEN = re.compile(r"(910_93|910b|910|a3|310p|310b|950|310)", re.I)


@check("EC106", "kernels-toolkit-mismatch", "the kernels / ops package matches the toolkit", section=SECTION)
def kernels_match_toolkit(chk: Check, ctx: Context) -> Iterator[Finding]:
    """The operator kernels package must match the toolkit and the chip.

    Up to CANN 8.3 the ``Ascend-cann-kernels-<chip>`` package must be the toolkit's release; from
    8.5.0 the ``Ascend-cann-<chip>-ops`` package may differ by one major step (9.0.0 toolkit with
    8.5.x ops), 8.5.0 at least (CANN-UPG): warn inside that window, fail outside it. Kernels for
    another chip family fail.
    """
    facts = ctx.facts
    inst = facts.cann.active_install()
    if inst is None or facts.cann_version is None:
        yield chk.skip("no CANN toolkit found")
        return
    kernels = list(inst.kernels or ())
    if not kernels:
        yield chk.skip(f"no kernels / ops package recorded for CANN {facts.cann_version}")
        return
    mx = u.matrix_or_error(chk, ctx)
    if isinstance(mx, Finding):
        yield mx
        return
    cv, cerr = u.ascend(facts.cann_version)
    if cv is None:  # the version is present: it does not parse
        yield chk.warn(f"cannot judge: {cerr}", evidence=[u.seen(facts, "cann")])
        return
    fam = mx.chip_family(facts.chip) if facts.chip else None
    other = [k for k in kernels if _wrong_chip(fam, k.name or "")]
    mine = [k for k in kernels if k not in other]
    if other and not any(_TOKEN.search(k.name or "") for k in mine):
        # kernels for some chip are installed, none for this one (another chip's package next to
        # the right one is harmless, so only its absence fails)
        yield _judge_kernel(chk, mx, facts, cv, fam, other[0])
        return
    versioned = [k for k in mine if k.version is not None]
    for k in versioned:
        yield _judge_kernel(chk, mx, facts, cv, fam, k)
    if not versioned:
        names = ", ".join(str(k.name) for k in kernels)
        yield chk.skip(f"kernels / ops found ({names}) but no version recorded to compare with CANN {cv}")


def _wrong_chip(fam: Chip | None, name: str) -> bool:
    tok = _TOKEN.search(name)
    return bool(fam is not None and tok and tok.group(1).lower() not in [t.lower() for t in fam.kernel_tokens])


def _judge_kernel(chk: Check, mx: Matrix, facts: Facts, cv: AscendVersion, fam: Chip | None,
                  k: CannPackage) -> Finding:
    name, ver = k.name or "kernels", k.version
    evid = [u.seen(facts, "cann"), u.ev(k.source or "kernels", f"{name} {ver}")]
    rule = mx.kernel_rule(cv)
    data = {"rule": "kernels / ops match the toolkit", "toolkit": str(cv), "kernels": name, "version": ver}
    if rule:
        evid += u.cite(mx, rule.sources, 0, rule.note)
    if fam is not None and _wrong_chip(fam, name):
        return chk.fail(f"{name} is for another chip than {fam.name} (chip {facts.chip})", evidence=evid, data=data,
                        fix=_kernel_fix(mx, cv, fam, facts))
    kv, kerr = u.ascend(ver)
    if kerr or kv is None:
        return chk.warn(f"cannot judge {name}: version {ver!r} does not parse", evidence=evid, data=data)
    internal = bool(kv.post) and kv.stage == 2  # e.g. 8.2.0.0.201: an internal number, compare the line only
    same = kv.line == cv.line if internal else kv.release_key == cv.release_key
    if same:
        return chk.ok(f"{name} {ver} matches toolkit {cv}", evidence=evid, data=data)
    if rule and rule.window:
        minimum = u.ascend(rule.minimum)[0] if rule.minimum else None
        if abs(kv.major - cv.major) <= rule.window and (minimum is None or (kv >= minimum and cv >= minimum)):
            return chk.warn(f"{name} {ver} differs from toolkit {cv}, inside the stated N-1..N+1 window",
                            evidence=evid, data=data, fix=_kernel_fix(mx, cv, fam, facts))
    return chk.fail(f"{name} {ver} does not match toolkit {cv}", evidence=evid, data=data,
                    detail="Operator kernels built for another CANN release give missing-kernel or AICore errors.",
                    fix=_kernel_fix(mx, cv, fam, facts))


def _kernel_fix(mx: Matrix, cv: AscendVersion, fam: Chip | None, facts: Facts) -> str:
    return "install " + u.kernels_file(mx, str(cv), fam.family if fam else None, fam.token if fam else None,
                                       u.arch(facts))


@check("EC107", "mindspore-cann-mismatch", "MindSpore is the release paired with the CANN release",
       section=SECTION, failable=False)
def mindspore_matches_cann(chk: Check, ctx: Context) -> Iterator[Finding]:
    """Is the installed MindSpore the release paired with this CANN (compat-facts table C)?

    Only ever warns: MindSpore's own runtime check (MS-CHECK) warns too, and some pairings are
    disputed (d6, d12). Also warns for 310P cards, where the deployer does not install MindSpore.
    """
    facts = ctx.facts
    ms = facts.package("mindspore")
    if ms is None:
        yield chk.skip("MindSpore is not installed")
        return
    if facts.cann_version is None:
        yield chk.skip(f"no CANN toolkit found to pair MindSpore {ms} with")
        return
    mx = u.matrix_or_error(chk, ctx)
    if isinstance(mx, Finding):
        yield mx
        return
    (cv, cerr), merr = u.ascend(facts.cann_version), u.pep(ms)[1]
    seen = [u.seen(facts, "mindspore"), u.seen(facts, "cann")]
    if cv is None or merr:  # both are present: None / a problem means it does not parse
        yield chk.warn(f"cannot judge: {cerr or merr}", evidence=seen)
        return
    data = {"rule": "MindSpore <-> CANN pairing", "mindspore": ms, "cann": str(cv)}
    fam = mx.chip_family(facts.chip) if facts.chip else None
    if fam is not None and not fam.mindspore:
        yield chk.warn(f"MindSpore on {fam.name}: the deployer does not install MindSpore for this card",
                       evidence=seen + u.cite(mx, ["AD-26"]), data=data)
    pairs = mx.mindspore_pairings(ms)
    here = [m for m in pairs if m.cann and parse_ascend(m.cann) == cv]  # m.cann: the release row it sits in
    if here:
        m = here[0]
        evid = seen + u.cite(mx, m.sources, m.line, f"CANN {m.cann} -> MindSpore {m.spec}")
        cs = u.conflicts(mx, m.conflicts, "mindspore")
        if cs:
            yield chk.warn(f"MindSpore {ms} with CANN {cv}: sources disagree ({', '.join(c.id for c in cs)})",
                           detail=u.describe(cs), data=data,
                           evidence=u.uniq(evid + u.cite(mx, [r for c in cs for r in c.source_refs])))
        else:
            yield chk.ok(f"MindSpore {ms} is paired with CANN {cv}", evidence=evid, data=data)
        return
    homes = [m for m in pairs if m.cann]
    rel = mx.release(cv)
    fix = ""
    if rel and rel.mindspore:
        spec = rel.mindspore[0].spec
        fix = f"pip install mindspore=={spec}" if spec[:1] not in "<>=!~" else f"pip install 'mindspore{spec}'"
    if homes:
        cannv = ", ".join(dict.fromkeys(m.cann for m in homes if m.cann))
        # a definite mismatch (the sources pair this MindSpore elsewhere), only a warning at start-up
        yield chk.warn(f"MindSpore {ms} is paired with CANN {cannv}, not CANN {cv}",
                       detail="MindSpore's own check (MS-CHECK) warns about this at start-up too.",
                       evidence=seen + u.cite(mx, [s for m in homes for s in m.sources] + ["MS-CHECK"]),
                       data={**data, "mismatch": True}, fix=fix)
    elif pairs:
        cs = [c for m in pairs for c in u.conflicts(mx, m.conflicts, "mindspore")]
        yield chk.warn(f"no source pairs MindSpore {ms} with any CANN release", detail=u.describe(cs),
                       evidence=seen + u.cite(mx, [s for m in pairs for s in m.sources]), data=data, fix=fix)
    else:
        yield chk.warn(f"MindSpore {ms} is not in the matrix (dated {mx.dated})", evidence=seen, data=data, fix=fix)


CHECKS = (driver_supports_cann, chip_supported_by_cann, kernels_match_toolkit, mindspore_matches_cann)
