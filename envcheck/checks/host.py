"""What kind of machine the facts describe: the first line of a report, and what its verdict follows from.

Kinds:
- ``ascend``: NPUs visible here (npu-smi's table or /dev/davinciN), not in a container;
- ``container-npu``: a container with NPU devices mapped in;
- ``container-no-npu``: a container without NPU devices, but with some of the Ascend stack (CANN, driver);
- ``no-npu``: no NPU visible, some of the Ascend stack installed (a build or login machine);
- ``none``: no NPU, no NPU driver and no CANN: not an Ascend machine at all.

Pure: reads Facts only. Checks that cannot mean anything without NPUs ask `has_npu` / `ascend_stack`.
"""
from __future__ import annotations

from typing import Any

from envcheck.model import Facts

KINDS = ("ascend", "container-npu", "container-no-npu", "no-npu", "none")


def npu_count(facts: Facts) -> int:
    """NPUs visible here: npu-smi's device rows, else /dev/davinciN (probe or container view)."""
    devs = facts.npu.devices or ()
    if devs:
        return len(devs)
    dav = facts.npu.dev_davinci or facts.container.davinci or ()
    return len(dav)


def has_driver(facts: Facts) -> bool:
    return bool(facts.driver.present or facts.driver_version or facts.npu.path)


def has_cann(facts: Facts) -> bool:
    return bool(facts.cann.installs)


def has_npu(facts: Facts) -> bool:
    return npu_count(facts) > 0


def ascend_stack(facts: Facts) -> bool:
    """Any part of the Ascend stack is here: an NPU, its driver or a CANN toolkit."""
    return has_npu(facts) or has_driver(facts) or has_cann(facts)


def classify(facts: Facts) -> dict[str, Any]:
    """{"kind", "ascend" (NPUs visible), "title" (one line), "needs" (what a machine without the stack
    would need, in words)}."""
    n = npu_count(facts)
    container = bool(facts.container.in_container)
    engine = facts.container.engine or "container"
    where = ", ".join(x for x in (f"{engine} container" if container else "", facts.system.arch or "") if x)
    stack = _stack(facts)
    if n:
        chip = facts.chip
        devs = f"{n} × {chip}" if chip else f"{n} NPU(s)"
        head = f"container with {devs} mapped in" if container else f"Ascend host: {devs}"
        title = f"{head}; {stack}" + (f" ({where})" if where else "")
        return {"kind": "container-npu" if container else "ascend", "ascend": True, "title": title, "needs": []}
    if has_driver(facts) or has_cann(facts):
        if container:
            title = f"container without NPU devices mapped in; {stack}: it can build, not run on NPUs"
            kind = "container-no-npu"
        else:
            title = f"no NPU visible here; {stack}: a build or login machine, not one that can train on NPUs"
            kind = "no-npu"
        return {"kind": kind, "ascend": False, "title": title + (f" ({where})" if where else ""), "needs": []}
    needs = _needs(facts, container)
    title = "this is not an Ascend machine: no NPU, no NPU driver, no CANN" + (f" ({where})" if where else "")
    return {"kind": "none", "ascend": False, "title": title, "needs": needs}


def _stack(facts: Facts) -> str:
    parts = []
    parts.append(f"driver {facts.driver_version}" if facts.driver_version else
                 ("driver (version unreadable)" if has_driver(facts) else "no NPU driver"))
    parts.append(f"CANN {facts.cann_version}" if facts.cann_version else
                 ("CANN (version unreadable)" if has_cann(facts) else "no CANN"))
    npu = facts.package("torch-npu")
    if npu:
        parts.append(f"torch_npu {npu}")
    return ", ".join(parts)


def _needs(facts: Facts, container: bool) -> list[str]:
    out = ["NPUs mapped into the container" if container else "an Ascend NPU"]
    out.append("the NPU driver and firmware (HDK)")
    torch, npu = facts.package("torch"), facts.package("torch-npu")
    if npu:
        out.append(f"the CANN toolkit torch_npu {npu} was built for")
        return out
    out.append("the CANN toolkit")
    if torch:
        out.append(f"torch_npu for torch {torch.split('+')[0]}")
    else:
        out.append("torch and torch_npu")
    return out
