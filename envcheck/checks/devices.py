"""EC3xx CANN install, driver and devices: what is installed, whether npu-smi answers, device health."""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from envcheck.checks.registry import Check, Context, check
from envcheck.checks.system import version_file_errors
from envcheck.model import Facts, Finding, ev

CANN_SECTION = "CANN"
DEV_SECTION = "Driver & devices"
CORE_COMPONENTS = ("runtime", "compiler", "hccl", "opp", "toolkit")
DCMI = {
    -8005: "the DCMI module could not initialise: the driver is not usable here (not loaded, or the "
           "container was started without the NPU devices / driver mounts)",
    -8020: "the device is in use by another container or process (DCMI -8020)",
}
INSTALL_DOC = "https://www.hiascend.com/document (CANN installation guide: install the toolkit, kernels and NNAL)"


def _driver_present(f: Facts) -> bool:
    return bool(f.driver.present or f.driver_version)


@check("EC301", "cann-not-found", "a CANN toolkit is installed", section=CANN_SECTION)
def cann_found(chk: Check, ctx: Context) -> Iterable[Finding]:
    """Looks for CANN toolkits where the installers put them (``/usr/local/Ascend/ascend-toolkit``,
    ``/usr/local/Ascend/cann-<v>`` for 8.5+, ``~/Ascend`` for non-root installs, and wherever
    ASCEND_HOME_PATH / ASCEND_TOOLKIT_HOME / /etc/Ascend/ascend_cann_install.info point). Without
    one, torch_npu cannot load (``libhccl.so`` / ``libascendcl.so`` not found)."""
    f = ctx.facts
    installs = f.cann.installs or ()
    if not installs:
        yield chk.fail("no CANN toolkit found", detail="Looked in $ASCEND_HOME_PATH, $ASCEND_TOOLKIT_HOME, "
                       "/etc/Ascend/ascend_cann_install.info, /usr/local/Ascend/{cann,ascend-toolkit/latest,cann-*} "
                       "and ~/Ascend.",
                       fix="install the CANN toolkit (Ascend-cann-toolkit_<ver>_linux-<arch>.run --install) and the "
                           "kernels/ops package for your chip, then source its set_env.sh; see " + INSTALL_DOC)
        return
    inst = f.cann.active_install() or installs[0]
    others = [i for i in installs if i is not inst]
    title = f"CANN {inst.get('version') or '(version unreadable)'} at {inst.get('home')}"
    tags = [inst.get("layout") or "?"] + (["latest"] if inst.get("latest") else [])
    title += f" ({', '.join(tags)})"
    extras = []
    for k in inst.get("kernels") or []:
        extras.append(f"kernels {k['name']}" + (f" {k['version']}" if k.get("version") else ""))
    for n in inst.get("nnal") or []:
        extras.append(f"NNAL {n['name']} {n['version']}")
    if others:
        extras.append("also installed: "
                      + ", ".join(f"{o.get('version') or '?'} ({o.get('home')})" for o in others))
    evidence = [ev(inst.source or inst.home or "", f"version {inst.get('version')}")]
    evidence += [ev(c["source"], f"{name} {c['version']}") for name, c in (inst.get("components") or {}).items()]
    evidence += [ev(k["source"], f"{k['name']} {k.get('version') or ''}".strip())
                 for k in inst.get("kernels") or []]
    evidence += [ev(n["source"], f"atb {n['version']}") for n in inst.get("nnal") or []]
    if not inst.get("version"):
        yield chk.warn(title, detail="the toolkit's version files could not be read (see EC308)",
                       evidence=evidence, fix="reinstall the toolkit package")
        return
    yield chk.ok(title + (": " + "; ".join(extras) if extras else ""), evidence=evidence)


def _release_key(v: str, internal_only: bool) -> str:
    v = v.lower()
    if internal_only:
        return ".".join(v.split(".")[:2])
    return v


@check("EC302", "cann-components-mixed", "the toolkit's components are one release", section=CANN_SECTION)
def components_consistent(chk: Check, ctx: Context) -> Iterable[Finding]:
    """runtime, compiler, hccl, opp and toolkit of the active toolkit must come from one CANN
    release. Mixed components (one package upgraded on its own, or ``latest/`` links pointing
    into two release directories) give undefined-symbol and op-compile errors at run time."""
    inst = ctx.facts.active_cann() or {}
    comps = {k: v for k, v in (inst.get("components") or {}).items() if k in CORE_COMPONENTS}
    if not comps:
        yield chk.skip("no toolkit component versions to compare")
        return
    internal_only = any(c.get("version") == c.get("internal") for c in comps.values())
    groups: dict[str, list[str]] = {}
    for name, c in comps.items():
        groups.setdefault(_release_key(str(c.get("version")), internal_only), []).append(name)
    evidence = [ev(c["source"], f"{n} {c['version']}") for n, c in comps.items()]
    if len(groups) > 1:
        common = max(groups, key=lambda g: len(groups[g]))
        odd = [n for g, ns in groups.items() if g != common for n in ns]
        shown = ", ".join(f"{n} {comps[n]['version']}" for n in odd)
        usual = comps[groups[common][0]]["version"]
        yield chk.fail(f"CANN components mixed in {inst.get('home')}: {shown} vs {usual}",
                       evidence=evidence, data={"components": {n: c["version"] for n, c in comps.items()}},
                       fix=f"reinstall the {inst.get('version') or 'toolkit'} toolkit package so every component is "
                           "one release (./Ascend-cann-toolkit_<ver>_linux-<arch>.run --upgrade), "
                           "or repoint the latest/ links")
        return
    yield chk.ok(f"{len(comps)} components at {next(iter(comps.values()))['version']}", evidence=evidence)


@check("EC303", "driver-not-found", "the NPU driver is installed", section=DEV_SECTION)
def driver_found(chk: Check, ctx: Context) -> Iterable[Finding]:
    """Reads ``<Driver_Install_Path_Param>/driver/version.info`` (``/etc/ascend_install.info``,
    default /usr/local/Ascend) and the firmware's ``version.info``. No driver means no NPU: inside
    a container, the host's driver directory and ``/etc/ascend_install.info`` must be mounted (a
    container started without the NPU devices, EC620, is then the one cause). Whether the files
    agree with the running driver is EC310."""
    f = ctx.facts
    d = f.driver
    if not f.driver_version:
        where = (d.install_path or "/usr/local/Ascend") + "/driver/version.info"
        if d.present:
            yield chk.fail(f"driver directory present but its version is unreadable ({where}; see EC308)",
                           evidence=[ev(where, "unreadable")],
                           fix="reinstall the driver package (Ascend-hdk-<chip>-npu-driver_<ver>.run)",
                           depends=("EC308",))
        else:
            in_container = bool(f.container.in_container)
            yield chk.fail(f"NPU driver not found ({where} missing)",
                           fix="install the NPU driver and firmware "
                               "(Ascend-hdk-<chip>-npu-driver_<ver>_linux-<arch>.run --full, then reboot); "
                               "in a container mount /usr/local/Ascend/driver and "
                               "/etc/ascend_install.info from the host",
                           depends=("EC620",) if in_container else ())
        return
    fw = f.firmware_version
    title = f"driver {f.driver_version}" + (f", firmware {fw}" if fw else " (firmware version not found)")
    evidence = [ev(d.version_source or "driver/version.info", f"driver {f.driver_version}")]
    if fw:
        evidence.append(ev(d.firmware_source or "firmware/version.info", f"firmware {fw}"))
    yield chk.ok(title, evidence=evidence)


def running_driver(f: Facts) -> str | None:
    """The driver version npu-smi reports (the loaded driver) when it differs from version.info."""
    smi = f.npu.version
    if smi and f.driver_version and smi.lower() != f.driver_version.lower():
        return smi
    return None


def effective_driver(f: Facts) -> tuple[str | None, str]:
    """The driver version to judge compatibility on, and a note when version.info and npu-smi disagree.

    EC310's fix brings the machine to the newer of the two (reboot into newer installed files, or
    files matching a newer running driver), so the compatibility checks judge that one: their advice
    and EC310's then point the same way."""
    smi = running_driver(f)
    if smi is None:
        return f.driver_version, ""
    from envcheck.versions import VersionError, parse_ascend

    try:
        newer = parse_ascend(smi) > parse_ascend(str(f.driver_version))
    except VersionError:
        return f.driver_version, ""
    if newer:
        return smi, f"the running driver (npu-smi) is {smi}; version.info says {f.driver_version} (EC310)"
    return f.driver_version, (f"version.info says {f.driver_version}; "
                              f"npu-smi still runs {smi} until a reboot (EC310)")


@check("EC310", "driver-version-disagrees", "the driver files and the running driver are one version",
       section=DEV_SECTION, failable=False, depends=("EC104",))
def driver_agrees(chk: Check, ctx: Context) -> Iterable[Finding]:
    """``driver/version.info`` (the installed files, also the user-space libraries such as
    ``libascend_hal.so``) and the driver npu-smi reports (the loaded kernel driver) must be one
    version. Newer files than the running driver: an upgrade waits for a reboot. Older files: the
    container mounts another host's (or a stale) driver directory, or a downgrade waits for a
    reboot. Warns only; when the driver does not suit CANN at all (EC104 fails), installing the
    HDK EC104 names (then rebooting) settles this too."""
    f = ctx.facts
    smi = running_driver(f)
    if not f.driver_version:
        yield chk.skip("no driver version.info to compare (EC303)")
        return
    if not f.npu.version:
        yield chk.skip("npu-smi did not report a driver version to compare with")
        return
    evidence = [ev(f.driver.version_source or "driver/version.info", f"driver {f.driver_version}")]
    if smi is None:
        yield chk.ok(f"version.info and npu-smi agree: driver {f.driver_version}", evidence=evidence)
        return
    evidence.append(ev("npu-smi info", f"Version: {smi}"))
    from envcheck.versions import VersionError, parse_ascend

    try:
        files_newer = parse_ascend(str(f.driver_version)) > parse_ascend(smi)
    except VersionError:
        files_newer = False
    if files_newer:
        yield chk.warn(f"driver {f.driver_version} is installed but npu-smi still runs {smi}",
                       detail="an upgrade was installed and the machine was not rebooted", evidence=evidence,
                       fix=f"reboot to load driver {f.driver_version}")
        return
    in_container = bool(f.container.in_container)
    fix = (f"mount the host's /usr/local/Ascend/driver (it runs {smi}) and /etc/ascend_install.info "
           "into the container"
           if in_container else
           f"reinstall the driver of HDK {smi} (the running one) so its files match, or reboot if "
           f"{f.driver_version} was installed on purpose")
    yield chk.warn(f"driver files say {f.driver_version} but npu-smi runs {smi}",
                   detail="the files are older than the running driver: a container mounting another host's driver "
                          "directory, a stale copy, or a downgrade waiting for a reboot",
                   evidence=evidence, fix=fix)


@check("EC304", "npu-smi-missing", "npu-smi is available", section=DEV_SECTION)
def npu_smi_present(chk: Check, ctx: Context) -> Iterable[Finding]:
    """npu-smi ships with the driver (``/usr/local/sbin/npu-smi`` or ``/usr/local/bin/npu-smi``).
    Missing on a machine with a driver usually means a container started without mounting it;
    envcheck then falls back to counting ``/dev/davinci*``."""
    f = ctx.facts
    npu = f.npu
    if npu.path:
        yield chk.ok(f"npu-smi at {npu.path}" + (f" (npu-smi {npu.tool_version})" if npu.tool_version else ""))
        return
    if not _driver_present(f) and not npu.dev_davinci:
        yield chk.skip("npu-smi not found, and there is no NPU driver (see EC303)")
        return
    yield chk.fail("npu-smi not found on PATH although the NPU driver is installed",
                   evidence=[ev("PATH", f.env.get("PATH", "(unset)"))],
                   fix="export PATH=/usr/local/sbin:/usr/local/bin:$PATH  (in a container: "
                       "-v /usr/local/bin/npu-smi:/usr/local/bin/npu-smi)")


@check("EC305", "npu-smi-failed", "`npu-smi info` answers", section=DEV_SECTION, depends=("EC620",))
def npu_smi_works(chk: Check, ctx: Context) -> Iterable[Finding]:
    """Runs ``npu-smi info`` with a timeout. A non-zero exit (DCMI ``-8005``: driver not usable
    here; ``-8020``: device used by another container), a hang, or a table with no devices all
    mean the NPUs cannot be used right now."""
    npu = ctx.facts.npu
    if not npu.available:
        yield chk.skip("npu-smi not run (not found)")
        return
    err = npu.error
    if not err:
        yield chk.ok(f"npu-smi info listed {npu.count} device(s)" +
                     (f" in {npu.seconds:.2f} s" if npu.seconds is not None else ""))
        return
    code = npu.dcmi_code
    detail = DCMI.get(code, "") if code is not None else ""
    fix = ("check the device is not held by another container (npu-smi info on the host), and start this "
           "container with --device=/dev/davinciN --device=/dev/davinci_manager --device=/dev/devmm_svm "
           "--device=/dev/hisi_hdc plus the driver mounts")
    if npu.timed_out:
        fix = "the driver is not answering: check `dmesg` for NPU errors and reboot the node if npu-smi keeps hanging"
    yield chk.fail(err, detail=detail, evidence=[ev(f"{npu.path} info", err)], fix=fix,
                   data={"rc": npu.rc, "timed_out": npu.timed_out, "dcmi_code": code})


@check("EC306", "npu-unhealthy", "every NPU reports Health OK", section=DEV_SECTION)
def npus_healthy(chk: Check, ctx: Context) -> Iterable[Finding]:
    """npu-smi's Health column: ``OK`` is healthy, ``Warning`` is degraded, ``Alarm`` / ``Critical``
    mean the device has a fault and jobs on it will fail or hang."""
    devs = ctx.facts.npu.devices or ()
    if not devs:
        yield chk.skip("no npu-smi device table to read")
        return
    bad = [d for d in devs if (d.health or "").upper() != "OK"]
    if not bad:
        yield chk.ok(f"all {len(devs)} NPUs Health OK")
        return
    evidence = [ev(f"npu-smi NPU {d.id} chip {d.chip_id}", f"{d.name} Health {d.health}") for d in bad]
    shown = ", ".join(f"NPU {d.id}: {d.health}" for d in bad)
    fix = "npu-smi info -t health -i <NPU id> shows the error code; take the device out of service and contact the " \
          "hardware owner (a reboot clears transient alarms)"
    if all((d.health or "").lower() == "warning" for d in bad):
        yield chk.warn(f"degraded NPUs: {shown}", evidence=evidence, fix=fix)
    else:
        yield chk.fail(f"unhealthy NPUs: {shown}", evidence=evidence, fix=fix)


BUSY_FRACTION = 0.5


@check("EC307", "npu-busy", "no other process holds the NPUs", section=DEV_SECTION, failable=False)
def npus_idle(chk: Check, ctx: Context) -> Iterable[Finding]:
    """Processes listed by npu-smi (or more than half of a device's HBM in use with no process
    visible, i.e. another container) leave less memory for the job and can make set-device fail
    with DCMI -8020. Warns only: the process may be your own job."""
    npu = ctx.facts.npu
    devs = npu.devices or ()
    procs = npu.processes or ()
    if not devs:
        yield chk.skip("no npu-smi device table to read")
        return
    if procs:
        shown = ", ".join(f"pid {p.pid} {p.name} on NPU {p.device} ({p.memory_mb:.0f} MB)" for p in procs[:6])
        yield chk.warn(f"{len(procs)} process(es) already on the NPUs: {shown}",
                       evidence=[ev("npu-smi info", f"NPU {p.device} pid {p.pid} {p.name}") for p in procs],
                       fix="stop the listed processes (kill <pid>) or pick free devices with ASCEND_RT_VISIBLE_DEVICES")
        return
    full = [d for d in devs if d.hbm_total_mb and (d.hbm_used_mb or 0) > BUSY_FRACTION * d.hbm_total_mb]
    if full:
        shown = ", ".join(f"NPU {d.id} {d.hbm_used_mb}/{d.hbm_total_mb} MB" for d in full)
        yield chk.warn(f"HBM in use with no visible process: {shown}",
                       detail="another container is probably using these devices",
                       fix="find the owner with npu-smi info on the host")
        return
    yield chk.ok("no processes on the NPUs")


@check("EC308", "version-file-unreadable", "CANN / driver version files are readable", section=CANN_SECTION)
def version_files_readable(chk: Check, ctx: Context) -> Iterable[Finding]:
    """A version or install-info file that exists but is binary, truncated (no ``Version=``), not
    UTF-8, a directory, or a symlink loop means a damaged or half-finished install: the versions
    envcheck (and torch_npu) read from it cannot be trusted."""
    errs = version_file_errors(ctx.facts)
    if not errs:
        yield chk.ok("version files readable")
        return
    paths = list(errs)
    yield chk.fail(f"{len(errs)} version file(s) unreadable: {paths[0]} ({errs[paths[0]]})"
                   + (f" and {len(errs) - 1} more" if len(errs) > 1 else ""),
                   evidence=[ev(p, why) for p, why in errs.items()],
                   fix="reinstall the package that owns each file (toolkit / driver / firmware .run with --upgrade "
                       "or --full); never edit version.info by hand",
                   data={"files": errs})


@check("EC309", "no-npu-visible", "at least one NPU is visible", section=DEV_SECTION, depends=("EC620",))
def npu_visible(chk: Check, ctx: Context) -> Iterable[Finding]:
    """Counts NPUs from npu-smi's device table, else from ``/dev/davinciN``. A driver with no
    device visible means the container was started without ``--device=/dev/davinciN`` or the
    cards are not detected (``lspci | grep d80``)."""
    f = ctx.facts
    npu = f.npu
    devs = npu.devices or ()
    dav = npu.dev_davinci or ()
    if devs:
        names = Counter(d.name for d in devs)
        shown = " + ".join(f"{n} × {name}" for name, n in names.most_common())
        per = npu.npu_count
        extra = f" on {per} cards" if per and per != len(devs) else ""
        yield chk.ok(f"{shown}{extra}", evidence=[ev("npu-smi info", f"{len(devs)} devices")])
        return
    if dav:
        yield chk.ok(f"{len(dav)} NPUs (/dev/davinci{dav[0]}..{dav[-1]}; chip unknown without npu-smi)",
                     evidence=[ev("/dev", " ".join(f"davinci{i}" for i in dav))])
        return
    if not _driver_present(f):
        yield chk.skip("no NPU driver, so no NPU can be visible (see EC303)")
        return
    yield chk.fail("NPU driver installed but no NPU is visible (no /dev/davinciN, npu-smi lists none)",
                   fix="start the container with --device=/dev/davinci0 ... --device=/dev/davinci_manager "
                       "--device=/dev/devmm_svm --device=/dev/hisi_hdc; on bare metal check `lspci | grep -i d80` "
                       "and `dmesg` for driver errors")


CHECKS = (cann_found, components_consistent, version_files_readable, driver_found, npu_smi_present,
          npu_smi_works, npu_visible, npus_healthy, npus_idle, driver_agrees)
