"""EC0xx system & probe: what the machine is, and whether the probe could read everything."""
from __future__ import annotations

from collections.abc import Iterable

from envcheck.checks.registry import Check, Context, check
from envcheck.model import Facts, Finding, ev

SHOWN_PACKAGES = ("torch", "torch-npu", "torchvision", "numpy", "mindspore")


def version_file_errors(facts: Facts) -> dict[str, str]:
    """Probe errors about a version / install-info file (reported by EC308)."""
    return {k[5:]: v for k, v in (facts.probe_errors or {}).items() if k.startswith("file:")}


def other_probe_errors(facts: Facts) -> dict[str, str]:
    """Probe errors that are not about one version file (reported by EC001)."""
    return {k: v for k, v in (facts.probe_errors or {}).items() if not k.startswith("file:")}


@check("EC001", "probe-incomplete", "the probe read everything it looked for", section="System")
def probe_complete(chk: Check, ctx: Context) -> Iterable[Finding]:
    """Fails (status *error*) when the probe met something it could not read: a symlink loop
    (``cann -> ascend-toolkit/latest -> cann``), an unreadable directory, a probe that crashed.
    Later findings may then be built on partial facts, so envcheck says so instead of guessing.
    Broken version files are reported separately by EC308.
    """
    errs = other_probe_errors(ctx.facts)
    if not errs:
        yield chk.ok("probe read everything it looked for")
        return
    first = next(iter(errs))
    yield chk.error(
        f"probe could not read {len(errs)} thing(s), e.g. {first.split(':', 1)[-1]}: {errs[first]}",
        detail="Findings below may rest on partial facts. Each item names what was being read and why it failed.",
        evidence=[ev(k, v) for k, v in errs.items()],
        fix="repair or remove the paths listed (a hand-made symlink loop such as `cann -> ascend-toolkit/latest` "
            "is the usual cause), then run envcheck again",
        data={"errors": errs})


@check("EC002", "system-summary", "OS, architecture, glibc and Python", section="System", failable=False)
def system_summary(chk: Check, ctx: Context) -> Iterable[Finding]:
    """States what the machine is: OS / distribution, kernel, CPU architecture, glibc, and the
    target Python interpreter (the current one or ``--python PATH``). Never fails."""
    s, p = ctx.facts.system, ctx.facts.python
    parts = [s.distro or s.os or "unknown OS", s.arch or "?"]
    if s.glibc:
        parts.append(f"glibc {s.glibc}")
    parts.append(f"Python {p.version or '?'}")
    yield chk.ok(", ".join(parts),
                 detail=f"kernel {s.kernel}, {s.cpu_count} CPUs, host {s.hostname}",
                 evidence=[ev("python", p.executable), ev("os", s.distro or s.os)])


@check("EC003", "python-packages", "torch / torch_npu / MindSpore versions of the target interpreter",
       section="Python packages", failable=False)
def python_packages(chk: Check, ctx: Context) -> Iterable[Finding]:
    """Lists the framework packages installed in the target interpreter, read from package
    metadata (nothing is imported). Whether they fit together is judged by the EC1xx checks."""
    p = ctx.facts.python
    pk = p.packages or {}
    shown = [f"{d.replace('-', '_')} {pk[d]}" for d in SHOWN_PACKAGES if pk.get(d)]
    files = p.package_files or {}
    evidence = [ev(files.get(d, "importlib.metadata"), f"{d} {pk[d]}") for d in SHOWN_PACKAGES if pk.get(d)]
    if p.torch_npu_requires:
        evidence.append(ev("torch_npu METADATA Requires-Dist", p.torch_npu_requires))
    if not shown:
        yield chk.skip("no torch, torch_npu or MindSpore in " + (p.executable or "this interpreter"),
                       fix="pip install torch==<version> torch_npu==<matching version> (see `envcheck matrix`)")
        return
    missing = "" if pk.get("torch-npu") else " (torch_npu not installed)"
    yield chk.ok(", ".join(shown) + missing, evidence=evidence)


CHECKS = (probe_complete, system_summary, python_packages)
