"""Planned environments: judge versions that are not installed (``matrix check``) and plan changes
(``matrix suggest``). This layer sits above the checks: it builds hypothetical facts and runs the
compatibility checks over them.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from envcheck.checks import judge_compat
from envcheck.facts import CannFacts, DriverFacts, NpuFacts, PythonFacts, SystemFacts
from envcheck.matrix import Matrix, load
from envcheck.model import Facts, Finding


def judge(facts: Facts, matrix: Matrix | None = None) -> list[Finding]:
    """Run the compatibility checks (EC1xx) over `facts` and return their findings."""
    return judge_compat(facts, matrix if matrix is not None else load())


def hypothetical_facts(*, cann: str | None = None, driver: str | None = None, firmware: str | None = None,
                       torch: str | None = None, torch_npu: str | None = None, python: str | None = None,
                       chip: str | None = None, mindspore: str | None = None, arch: str | None = None,
                       kernels: Sequence[Mapping[str, str]] = (), source: str = "flag") -> Facts:
    """Facts for a planned environment (``matrix check`` flags); None means "not part of the plan".

    Each section is read from the dict the probe would have written (keys, order and nulls as here)."""
    facts = Facts(root="/")
    packages = {k: v for k, v in (("torch", torch), ("torch-npu", torch_npu), ("mindspore", mindspore)) if v}
    facts.python = PythonFacts.from_dict({"version": python, "packages": packages,
                                          "executable": f"--python ({source})",
                                          "package_files": {k: f"--{k} ({source})" for k in packages}})
    if cann:
        install = {"home": f"--cann ({source})", "version": cann, "source": f"--cann ({source})",
                   "components": {}, "kernels": [dict(k) for k in kernels], "nnal": []}
        facts.cann = CannFacts.from_dict({"installs": [install], "active": 0})
    else:
        facts.cann = CannFacts.from_dict({"installs": [], "active": None})
    drv: dict[str, str] = {}
    if driver:
        drv.update(version=driver, version_source=f"--driver ({source})")
    if firmware:
        drv.update(firmware_version=firmware, firmware_source=f"--firmware ({source})")
    facts.driver = DriverFacts.from_dict(drv)
    facts.npu = NpuFacts.from_dict({"chip": chip, "source": f"--chip ({source})"} if chip else {})
    facts.system = SystemFacts.from_dict({"arch": arch} if arch else {})
    return facts
