"""EC108: releases with a known defect (matrix.yaml `advisories`), whatever they are paired with."""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from envcheck.checks import _compat as u
from envcheck.checks.registry import Check, Context, check
from envcheck.model import Facts, Finding

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.matrix import Advisory, Matrix

SECTION = "Compatibility"

# advisory package -> (how the probe names it for u.seen, its version in the facts, the name in findings' data)
_WHAT = {"torch_npu": "torch-npu", "torch": "torch", "mindspore": "mindspore",
         "cann": "cann", "driver": "driver", "firmware": "firmware"}
_SHOWN = {"torch_npu": "torch_npu", "torch": "torch", "mindspore": "MindSpore",
          "cann": "CANN", "driver": "driver", "firmware": "firmware"}


def _version(facts: Facts, package: str) -> str | None:
    if package == "cann":
        return facts.cann_version
    if package == "driver":
        return facts.driver_version
    if package == "firmware":
        return facts.firmware_version
    return facts.package(_WHAT[package])


@check("EC108", "release-known-defect", "no installed release has a known defect its maintainers fixed later",
       section=SECTION)
def release_known_defects(chk: Check, ctx: Context) -> Iterator[Finding]:
    """A release the tables pair correctly can still carry a defect its maintainers name and a later build
    fixes (torch_npu 2.8.0's host memory leak, fixed in 2.8.0.post1). warn: an installed torch_npu, torch,
    MindSpore, CANN, driver or firmware is one of an advisory's releases; the finding names the defect, the
    fixed build and the kb entry of its symptom. ok: none is. Versions are compared exactly (a PEP 440 local
    label such as ``+cpu`` ignored)."""
    facts = ctx.facts
    present = {p: v for p in _WHAT if (v := _version(facts, p))}
    if not present:
        yield chk.skip("no torch_npu, torch, MindSpore, CANN or NPU driver found to look up")
        return
    mx = u.matrix_or_error(chk, ctx)
    if isinstance(mx, Finding):
        yield mx
        return
    hits = [(a, present[p]) for p in present for a in mx.advisories_for(p, present[p])]
    for adv, version in hits:
        yield _warn(chk, mx, facts, adv, version)
    if not hits:
        named = ", ".join(f"{_SHOWN[p]} {v}" for p, v in present.items())
        yield chk.ok(f"no known defect recorded for {named}", data=dict(present))


def _warn(chk: Check, mx: Matrix, facts: Facts, adv: Advisory, version: str) -> Finding:
    name = _SHOWN[adv.package]
    evid = [u.seen(facts, _WHAT[adv.package])] + u.cite(mx, adv.sources, adv.line,
                                                         f"advisory {adv.id}: {name} {', '.join(adv.versions)}")
    return chk.warn(f"{name} {version} has a known defect: {adv.title} (fixed in {adv.fixed_in})",
                    detail="The compatibility tables pair this release, but its maintainers name this defect and "
                           f"a later build fixes it: move to {name} {adv.fixed_in} or newer.",
                    evidence=evid, fix=_fix(adv), kb=(adv.kb,),
                    data={adv.package: version, "advisory": adv.id, "fixed_in": adv.fixed_in})


def _fix(adv: Advisory) -> str:
    if not adv.ascend:  # a pip package
        return f"pip install '{adv.package.replace('_', '-')}=={adv.fixed_in}'"
    if adv.package == "cann":
        return f"install CANN {adv.fixed_in} (envcheck matrix suggest --cann {adv.fixed_in})"
    return f"upgrade the NPU {adv.package} to {adv.fixed_in} (firmware first, then driver)"


CHECKS = (release_known_defects,)
