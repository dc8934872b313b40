"""Helpers shared by the compatibility checks: reading facts, citing the matrix, fix lines."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from packaging.version import Version

from envcheck.checks.registry import Check, Context
from envcheck.errors import EnvcheckError
from envcheck.model import Evidence, Facts, Finding, ev
from envcheck.versions import (
    AscendVersion,
    VersionError,
    base_release,
    canonical_name,
    canonical_pip,
    parse_ascend,
    parse_pep440,
)

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.matrix import Conflict, Matrix, Pairing

CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def ascend(value: str | None) -> tuple[AscendVersion | None, str | None]:
    """(parsed, problem): parsed is None when the value is absent or unparseable."""
    if value is None:
        return None, None
    try:
        return parse_ascend(str(value)), None
    except VersionError as exc:
        return None, str(exc)


def pep(value: str | None) -> tuple[Version | None, str | None]:
    """(parsed, problem) for a PEP 440 version: parsed is None when the value is absent or unparseable."""
    if value is None:
        return None, None
    try:
        return parse_pep440(str(value)), None
    except VersionError as exc:
        return None, str(exc)


def seen(facts: Facts, what: str) -> Evidence:
    """Evidence line for an observed value, naming where the probe read it."""
    if what == "cann":
        inst = facts.cann.active_install()
        if inst is None:
            return ev("cann", "CANN None")
        return ev(inst.source or "cann", f"CANN {inst.version}")
    if what == "driver":
        return ev(facts.driver.version_source or "driver", f"driver {facts.driver_version}")
    if what == "firmware":
        return ev(facts.driver.firmware_source or "firmware", f"firmware {facts.firmware_version}")
    if what == "chip":
        return ev(facts.npu.get("source") or "npu-smi", f"chip {facts.chip}")  # "source": not a declared field
    if what == "python":
        return ev(facts.python.executable or "python", f"Python {facts.python_version}")
    files = facts.python.package_files or {}
    want = canonical_name(what)
    where = next((v for k, v in files.items() if canonical_name(k) == want), None)
    return ev(where or "python packages", f"{what} {facts.package(what)}")


def cite(mx: Matrix, refs: Iterable[str], line: int = 0, row: str = "") -> list[Evidence]:
    """Evidence naming the matrix row (file:line) and each source with its URL."""
    out = []
    if row:
        out.append(ev(f"{_short(mx.path)}:{line}" if line else _short(mx.path), row))
    for ref in dict.fromkeys(refs):
        out.append(ev(ref, mx.url(ref) or "(no URL)"))
    return out


def uniq(evidence: Iterable[Evidence]) -> list[Evidence]:
    """Evidence without repeats, first occurrence kept."""
    return list(dict.fromkeys(evidence))


def _short(path: str) -> str:
    import os

    return os.path.basename(path)


def conflicts(mx: Matrix, ids: Sequence[str], scope: str) -> list[Conflict]:
    return [mx.conflicts[i] for i in ids if i in mx.conflicts and mx.conflicts[i].applies_to == scope]


def arch(facts: Facts) -> str | None:
    a = facts.system.arch
    return {"arm64": "aarch64", "amd64": "x86_64"}.get(str(a).lower(), a) if a else None


def pip_line(torch: str, torch_npu: str, arch_: str | None = None) -> str:
    """The exact pip command for one pairing (x86_64 takes torch's CPU build from its index)."""
    line = f"pip install torch=={canonical_pip(torch)} torch-npu=={canonical_pip(torch_npu)}"
    if arch_ == "x86_64":
        line += f" --extra-index-url {CPU_INDEX}"
    return line


def pip_note(mx: Matrix, p: Pairing) -> str:
    """Extra words when a build is not on PyPI."""
    if mx.wheels and str(parse_pep440(p.torch_npu).public) not in mx.wheels:
        where = f" (branch {p.branch})" if p.branch else ""
        return f"torch-npu {p.torch_npu} is not on PyPI: get the wheel from Ascend/pytorch releases{where}"
    return ""


def line_of(version: str) -> tuple[int, int]:
    """The PyTorch (major, minor) line of a version (``2.1.0.post6`` -> (2, 1))."""
    major, minor = base_release(version)[:2]
    return major, minor


def describe(cs: Sequence[Conflict]) -> str:
    return "\n".join("sources disagree, " + c.describe() + (f" [{c.resolution}]" if c.resolution else "")
                     for c in cs)


def not_in_matrix(mx: Matrix, what: str) -> str:
    return (f"{what} is not in the matrix (dated {mx.dated}); "
            "newer releases need a newer envcheck or a site matrix (--matrix)")


def matrix_or_error(chk: Check, ctx: Context) -> Matrix | Finding:
    """The matrix, or an error finding when the file is broken or unreadable (the EC1xx preamble):
    callers test ``isinstance(got, Finding)`` and yield it."""
    from envcheck.matrix import MatrixError

    try:
        return ctx.matrix
    except MatrixError as exc:
        return chk.error(f"cannot judge: {exc}", fix=f"envcheck matrix lint --matrix {exc.path}")
    except EnvcheckError as exc:  # an unreadable file
        return chk.error(f"cannot judge: {exc}")


def kernels_file(mx: Matrix, cann: str, family: str | None, token: str | None, arch_: str | None) -> str:
    """The kernels / ops package file name for a CANN release (``packages`` templates; ``name@family`` wins).

    W9: A3 up to CANN 8.3 is ``Atlas-A3-cann-kernels_<ver>_linux-<arch>.run``; from 8.5.0 the ops package."""
    rule = mx.kernel_rule(parse_ascend(cann))
    name = rule.package if rule else "kernels"
    pattern = mx.packages.get(f"{name}@{family}", "") if family else ""
    pattern = pattern or mx.packages.get(name, "")
    return _fill(pattern, chip=token or "<chip>", version=cann, arch=arch_ or "<arch>")


def hdk_packages(mx: Matrix, hdk: str, token: str | None, arch_: str | None, family: str | None = None) -> list[str]:
    """The HDK packages in words and file names: firmware in words (its file carries the firmware version,
    which the matrix does not know: W8), the driver file only for a concrete HDK release (W10: linux-x86-64)."""
    chip = token or "<chip>"
    concrete = bool(hdk) and ".." not in hdk and not hdk.upper().endswith(".X")
    words = mx.packages.get("firmware_words", "")
    out = [_fill(words, chip=chip, hdk=hdk)] if words else []
    drv = (mx.packages.get(f"driver@{family}", "") if family else "") or mx.packages.get("driver", "")
    if drv and concrete:
        hdk_arch = (arch_ or "<arch>").replace("_", "-")
        out.append(_fill(drv, chip=chip, hdk=hdk.lower(), arch=arch_ or "<arch>", hdk_arch=hdk_arch))
    elif drv:
        out.append(f"the npu-driver package of an Ascend HDK {hdk} release for {chip}")
    return out


def install_order(mx: Matrix) -> str:
    """W11: first install driver then firmware; upgrade firmware then driver (CANN install guide instg_0005)."""
    return mx.packages.get("install_order", "") or \
        "first install: driver, then firmware; upgrade: firmware, then driver; then reboot"


def _fill(pattern: str, **values: str) -> str:
    for k, v in values.items():
        pattern = pattern.replace("{" + k + "}", v)
    return pattern
