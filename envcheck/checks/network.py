"""EC6xx device network (hccn_tool), host tuning and containers.

EC60x judge the NPUs' own NICs from Facts.netdev; EC61x the host's tuning (Facts.host / Facts.system),
judged only where an Ascend source gives a recommended value, otherwise reported; EC62x containers
(Facts.container); EC63x are cluster-only (envcheck.cluster.netcheck produces them under `envcheck cluster`).
"""
from __future__ import annotations

import ipaddress
import re
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from envcheck.checks.registry import Check, Context, check
from envcheck.model import Finding, ev

NET, HOST, CONT = "Device network", "Host tuning", "Container"
FLAP_HOURS = 24.0
HCCN_FIX_TOOL = "/usr/local/Ascend/driver/tools/hccn_tool"
# Recommended values with their source (msprechecker 0.4.0 presets/default.yaml, Huawei MindStudio)
MPC = "msprechecker 0.4.0 presets/default.yaml (Huawei MindStudio)"
KERNEL_MIN = (5, 10)


def _rows(chk: Check, ctx: Context) -> tuple[list[dict[str, Any]], list[Finding]]:
    """(the device rows as the probe wrote them, []), or ([], [a skip]) when hccn_tool was not read."""
    nd = ctx.facts.netdev
    if not nd.available:
        return [], [chk.skip(f"device network not read: {nd.reason or 'hccn_tool not run'}")]
    return [d.to_dict() for d in nd.devices or ()], []


def _unread(chk: Check, devs: list[dict[str, Any]], key: str, query: str) -> list[Finding]:
    """A skip when no device answered the query (errors shown), [] otherwise."""
    if any(d.get(key) is not None for d in devs):
        return []
    errs = [ev(f"hccn_tool -i {d['id']} -{query} -g", d.get("errors", {}).get(query, "no recognised line"))
            for d in devs]
    return [chk.skip(f"`hccn_tool -{query} -g` gave no readable answer on any device", evidence=errs)]


@check("EC601", "device-nic-down", "every NPU's RoCE NIC reports link status UP", section=NET)
def nic_up(chk: Check, ctx: Context) -> Iterable[Finding]:
    """``hccn_tool -i N -link -g`` must print ``link status: UP`` for every device. A device NIC that is
    DOWN (optics, cable, switch port) stops HCCL from building transports to it: EI0009 "Transport init
    error", HCCP ``ra rdev init failed``, or EI0006 socket timeouts across nodes."""
    devs, skip = _rows(chk, ctx)
    if skip or (skip := _unread(chk, devs, "link", "link")):
        yield from skip
        return
    evidence = [ev(f"hccn_tool -i {d['id']} -link -g", f"link status: {d.get('link')}") for d in devs]
    down = [d["id"] for d in devs if d.get("link") not in (None, "UP")]
    if down:
        yield chk.fail(f"device NIC link DOWN on device(s) {down}", evidence=evidence,
                       fix="reseat or replace the optical module / cable of those ports and check the switch port; "
                           f"then `{HCCN_FIX_TOOL} -i <id> -link -g` must print `link status: UP`")
        return
    yield chk.ok(f"link UP on all {len(devs)} device NIC(s)", evidence=evidence)


def _recent_downs(d: dict[str, Any], hours: float) -> list[str]:
    now = d.get("stat_time")
    if not now:
        return []
    t_now = datetime.fromisoformat(now)
    cut = t_now - timedelta(hours=hours)
    return [r["time"] for r in d.get("link_changes") or []
            if r.get("state") == "DOWN" and r.get("time") and cut <= datetime.fromisoformat(r["time"]) <= t_now]


@check("EC602", "device-link-flapping", "no device NIC went down in the last hours", section=NET)
def link_flapping(chk: Check, ctx: Context) -> Iterable[Finding]:
    """Reads the link change records of ``hccn_tool -i N -link_stat -g`` and warns when a device's link went
    DOWN within the last 24 hours (option ``flap_hours``), measured from the tool's own ``current time`` line.
    A link that drops and comes back makes collectives fail intermittently (HCCL timeouts, EI0006) although
    ``-link -g`` shows UP at the moment of the check."""
    devs, skip = _rows(chk, ctx)
    if skip or (skip := _unread(chk, devs, "stat_time", "link_stat")):
        yield from skip
        return
    hours = float((ctx.options or {}).get("flap_hours", FLAP_HOURS))
    flaps = {d["id"]: _recent_downs(d, hours) for d in devs}
    flaps = {k: v for k, v in flaps.items() if v}
    evidence = [ev(f"hccn_tool -i {d['id']} -link_stat -g",
                   f"link up count {d.get('link_up_count')}, last change "
                   f"{(d.get('link_changes') or [{}])[0].get('time', 'none')}") for d in devs]
    if flaps:
        what = ", ".join(f"device {k}: {len(v)} drop(s), last {v[0]}" for k, v in flaps.items())
        yield chk.warn(f"device NIC link went down within the last {hours:g} h ({what})", evidence=evidence,
                       fix="check the optical modules / cables / switch ports of those devices; watch "
                           f"`{HCCN_FIX_TOOL} -i <id> -link_stat -g` for new LINK DOWN records",
                       data={"flaps": flaps, "hours": hours})
        return
    yield chk.ok(f"no link drops within the last {hours:g} h on {len(devs)} device NIC(s)", evidence=evidence)


@check("EC603", "device-net-unhealthy", "every device NIC reports net health Success", section=NET)
def net_health(chk: Check, ctx: Context) -> Iterable[Finding]:
    """``hccn_tool -i N -net_health -g`` prints ``net health status: Success`` on a healthy NIC. ``Fault``
    (and any other value) fails: the NIC cannot reach its detection address (rank_table docs in
    mindspore-ai/docs show ``Fault`` for a link fault). ``Init`` only warns: it is the state before the first
    traffic (Ascend/mind-cluster faultdiag user guide) or when no detection address is set (``-netdetect``)."""
    devs, skip = _rows(chk, ctx)
    if skip or (skip := _unread(chk, devs, "net_health", "net_health")):
        yield from skip
        return
    evidence = [ev(f"hccn_tool -i {d['id']} -net_health -g", f"net health status: {d.get('net_health')}")
                for d in devs]
    bad = {d["id"]: d["net_health"] for d in devs if d.get("net_health") not in (None, "Success", "Init")}
    init = [d["id"] for d in devs if d.get("net_health") == "Init"]
    if bad:
        yield chk.fail("net health not Success on " + ", ".join(f"device {k} ({v})" for k, v in bad.items()),
                       evidence=evidence,
                       fix=f"check the link (`{HCCN_FIX_TOOL} -i <id> -link -g`), the detection address "
                           f"(`{HCCN_FIX_TOOL} -i <id> -netdetect -g`) and ping it from the device")
    if init:
        yield chk.warn(f"net health still Init on device(s) {init} (no traffic yet, or no detection address)",
                       evidence=evidence, fix=f"set a detection address: {HCCN_FIX_TOOL} -i <id> -netdetect -s "
                                              "address <gateway or peer ip>")
    if not bad and not init:
        yield chk.ok(f"net health Success on all {len(devs)} device NIC(s)", evidence=evidence)


@check("EC604", "device-ip-invalid", "every device NIC has its own IP, all with the same netmask", section=NET)
def device_ips(chk: Check, ctx: Context) -> Iterable[Finding]:
    """Each NPU's NIC needs an address (``hccn_tool -i N -ip -g``; HCCL and rank-table tools read the same
    address, ``/etc/hccn.conf`` ``address_N``). Fails when a device has none (``Get ipconf failed, because no
    ip was preset there!``) or two devices share one; warns when devices use different netmasks (one
    misconfigured device) or when hccn.conf disagrees with what the device reports."""
    devs, skip = _rows(chk, ctx)
    if skip:
        yield from skip
        return
    from envcheck.probe.hccn import conf_addresses

    evidence = [ev(f"hccn_tool -i {d['id']} -ip -g", f"{d.get('ip') or 'no ip'} / {d.get('netmask') or '-'}")
                for d in devs]
    missing = [d["id"] for d in devs
               if d.get("ip_missing") or (d.get("ip") is None and "ip" not in d.get("errors", {}))]
    by_ip: dict[str, list[int]] = defaultdict(list)
    for d in devs:
        if d.get("ip"):
            by_ip[d["ip"]].append(d["id"])
    dup = {ip: ids for ip, ids in by_ip.items() if len(ids) > 1}
    masks = {str(d["netmask"]) for d in devs if d.get("netmask")}
    bad_syntax = [d["id"] for d in devs if d.get("ip") and not _is_ip(d["ip"])]
    failed = False
    if missing:
        failed = True
        yield chk.fail(f"no IP configured on device NIC(s) {missing}", evidence=evidence,
                       fix=f"{HCCN_FIX_TOOL} -i <id> -ip -s address <ip> netmask <mask>  (and keep /etc/hccn.conf "
                           "and the rank table's device_ip in step)")
    if dup:
        failed = True
        yield chk.fail("device NICs share an IP: " + "; ".join(f"{ip} on devices {ids}" for ip, ids in dup.items()),
                       evidence=evidence, fix=f"give each device its own address: {HCCN_FIX_TOOL} -i <id> -ip -s "
                                              "address <ip> netmask <mask>")
    if bad_syntax:
        failed = True
        yield chk.fail(f"device(s) {bad_syntax} report an address that is not an IP", evidence=evidence)
    if len(masks) > 1:
        yield chk.warn(f"device NICs use different netmasks: {sorted(masks)}", evidence=evidence,
                       fix="use one netmask for all device NICs of the job's network plane")
    conf = conf_addresses(ctx.facts.netdev.hccn_conf)
    differ = {d["id"]: (conf[d["id"]], d["ip"]) for d in devs
              if d["id"] in conf and d.get("ip") and conf[d["id"]] != d["ip"]}
    if differ:
        yield chk.warn("/etc/hccn.conf differs from the device: " + "; ".join(
            f"device {k}: conf {c}, device {i}" for k, (c, i) in differ.items()), evidence=evidence,
            fix="rewrite /etc/hccn.conf from the live values (or re-apply the configuration with hccn_tool)")
    if not failed and len(masks) <= 1 and not differ:
        yield chk.ok(f"{len(by_ip)} distinct device IP(s), netmask {next(iter(masks), '?')}", evidence=evidence)


def _is_ip(s: str) -> bool:
    try:
        ipaddress.ip_address(s)
        return True
    except ValueError:
        return False


@check("EC605", "optical-module-absent", "an optical module is present in every device NIC port", section=NET)
def optical_present(chk: Check, ctx: Context) -> Iterable[Finding]:
    """``hccn_tool -i N -optical -g`` prints ``present : present`` when the port holds an optical module and
    ``present : not present`` when not (Ascend/mind-cluster faultdiag: "NPU光模块不在位"). Without a module
    the port stays down. The Tx/Rx power lines of that output are shown but not judged: no public capture of
    their format was found, so envcheck does not guess thresholds."""
    devs, skip = _rows(chk, ctx)
    if skip or (skip := _unread(chk, devs, "optical_present", "optical")):
        yield from skip
        return
    evidence = [ev(f"hccn_tool -i {d['id']} -optical -g", (d.get("raw") or {}).get("optical", "").strip()[:300])
                for d in devs]
    absent = [d["id"] for d in devs if d.get("optical_present") is False]
    if absent:
        yield chk.fail(f"no optical module in the port of device(s) {absent}", evidence=evidence,
                       fix="insert / reseat the optical module (or DAC cable) of those ports")
        return
    yield chk.ok(f"optical module present on {len(devs)} device NIC(s) (power levels not judged)", evidence=evidence)


@check("EC606", "device-tls-inconsistent", "the TLS switch is the same on every device NIC", section=NET)
def tls_same(chk: Check, ctx: Context) -> Iterable[Finding]:
    """``hccn_tool -i N -tls -g`` shows ``tls switch[0|1]``. Devices (and, in `envcheck cluster`, nodes:
    EC631) must agree; HCCL's EI0006 text names "the TLS configurations are inconsistent" as a cause of
    socket timeouts. envcheck does not say which value is right, only that they differ."""
    devs, skip = _rows(chk, ctx)
    if skip or (skip := _unread(chk, devs, "tls_switch", "tls")):
        yield from skip
        return
    vals: dict[int, list[int]] = defaultdict(list)
    for d in devs:
        if d.get("tls_switch") is not None:
            vals[d["tls_switch"]].append(d["id"])
    evidence = [ev(f"hccn_tool -i {d['id']} -tls -g", f"tls switch[{d.get('tls_switch')}]") for d in devs]
    if len(vals) > 1:
        yield chk.fail("TLS switch differs between devices: " + "; ".join(
            f"{'enabled' if k else 'disabled'} ({k}) on {v}" for k, v in sorted(vals.items())), evidence=evidence,
            fix=f"set one value on every device (and node), e.g. for i in 0..7: {HCCN_FIX_TOOL} -i $i -tls -s enable 0",
            data={"tls": {str(k): v for k, v in vals.items()}})
        return
    (k, _), = vals.items()
    yield chk.ok(f"TLS switch {k} ({'enabled' if k else 'disabled'}) on all {len(devs)} device NIC(s)",
                 evidence=evidence)


@check("EC607", "hccl-nic-conflict", "HCCL_IF_IP and HCCL_SOCKET_IFNAME do not contradict each other",
       section=NET)
def hccl_nic_conflict(chk: Check, ctx: Context) -> Iterable[Finding]:
    """HCCL picks the host NIC for communicator set-up in this order: HCCL_IF_IP > HCCL_SOCKET_IFNAME >
    other NICs (hiascend CANN env-var reference, HCCL_IF_IP). When both are set and HCCL_IF_IP is not an
    address of an interface HCCL_SOCKET_IFNAME selects, HCCL_SOCKET_IFNAME is silently ignored. Also warns
    when HCCL_IF_IP is one of this node's *device* NIC addresses: HCCL_IF_IP takes a host NIC only.
    Whether each variable names this host at all is EC205."""
    env = ctx.facts.env or {}
    ip, spec = env.get("HCCL_IF_IP"), env.get("HCCL_SOCKET_IFNAME")
    if not ip:
        yield chk.skip("HCCL_IF_IP not set: nothing to compare")
        return
    evidence = [ev(f"env {k}", env[k]) for k in ("HCCL_IF_IP", "HCCL_SOCKET_IFNAME") if env.get(k)]
    dev_ips = {d.ip for d in ctx.facts.netdev.devices or ()}
    if ip in dev_ips:
        yield chk.warn(f"HCCL_IF_IP={ip} is a device (NPU) NIC address; HCCL_IF_IP must name a host NIC",
                       evidence=evidence, fix="export HCCL_IF_IP=<this host's address on the management network>")
        return
    ifaces = ctx.facts.system.interfaces
    if spec and ifaces is not None:
        from envcheck.checks.environment import match_ifname

        chosen, _ = match_ifname(spec, ifaces)
        owners = [n for n, addrs in ifaces.items() if ip in [a.split("/")[0] for a in addrs]]
        if owners and not set(owners) & set(chosen):
            yield chk.warn(f"HCCL_IF_IP={ip} is on {owners[0]}, which HCCL_SOCKET_IFNAME={spec} does not select; "
                           "HCCL uses HCCL_IF_IP and ignores HCCL_SOCKET_IFNAME", evidence=evidence,
                           fix="unset one of them (keep HCCL_SOCKET_IFNAME for a name, HCCL_IF_IP for one address)")
            return
    yield chk.ok(f"HCCL_IF_IP={ip}" + (f" agrees with HCCL_SOCKET_IFNAME={spec}" if spec else ""), evidence=evidence)


# ---- host tuning ------------------------------------------------------------------------------

def _no_npu(chk: Check, ctx: Context) -> Finding | None:
    """A skip when no NPU is visible: Ascend's host-tuning advice is for machines that run NPUs."""
    from envcheck.checks.host import has_npu

    if has_npu(ctx.facts):
        return None
    return chk.skip("no NPU here: Ascend's host tuning does not apply")


@check("EC610", "cpu-governor-not-performance", "CPU frequency governor is `performance`", section=HOST)
def governor(chk: Check, ctx: Context) -> Iterable[Finding]:
    """Reads ``/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor``. Huawei's msprechecker expects every
    CPU at its maximum frequency ("使 CPU 运行在最大频率下，可以提升 CPU 性能"; presets/default.yaml, severity
    low): a power-saving governor slows operator dispatch on the host (host bound). Warns only. Host tuning
    (EC610-EC613) is judged only where an NPU is visible: elsewhere it cannot mean anything."""
    if (skip := _no_npu(chk, ctx)):
        yield skip
        return
    g = ctx.facts.host.cpu_governors
    if not g:
        yield chk.skip("no cpufreq governor readable (VM, container without /sys, or no cpufreq driver)")
        return
    evidence = [ev("scaling_governor", ", ".join(f"{k} x{v}" for k, v in g.items())), ev("recommended by", MPC)]
    other = {k: v for k, v in g.items() if k != "performance"}
    if other:
        yield chk.warn(f"CPU governor {', '.join(other)} on {sum(other.values())} CPU(s), not performance",
                       evidence=evidence, fix="cpupower frequency-set -g performance  (or the BIOS power policy)")
        return
    yield chk.ok(f"CPU governor performance on {sum(g.values())} CPU(s)", evidence=evidence)


@check("EC611", "thp-not-always", "transparent huge pages as Ascend's prechecker recommends", section=HOST)
def thp(chk: Check, ctx: Context) -> Iterable[Finding]:
    """Reads ``/sys/kernel/mm/transparent_hugepage/enabled``. msprechecker's preset expects ``always``
    ("开启透明大页，吞吐率结果会更加稳定", severity low; the preset targets MindIE / vLLM serving). Warns only."""
    if (skip := _no_npu(chk, ctx)):
        yield skip
        return
    v = ctx.facts.host.thp
    if v is None:
        yield chk.skip("transparent_hugepage setting not readable")
        return
    evidence = [ev("/sys/kernel/mm/transparent_hugepage/enabled", v), ev("recommended by", MPC)]
    if v != "always":
        yield chk.warn(f"transparent huge pages: {v} (recommended: always)", evidence=evidence,
                       fix="echo always > /sys/kernel/mm/transparent_hugepage/enabled  (persist via kernel cmdline "
                           "transparent_hugepage=always)")
        return
    yield chk.ok("transparent huge pages: always", evidence=evidence)


def _kernel(s: str) -> tuple[int, int] | None:
    m = re.match(r"(\d+)\.(\d+)", s or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


@check("EC612", "kernel-older-than-recommended", "Linux kernel is at least 5.10", section=HOST)
def kernel(chk: Check, ctx: Context) -> Iterable[Finding]:
    """msprechecker's preset expects kernel ≥ 5.10 ("升级到 5.10 以上，CPU 下发会加快，可以减少 host bound",
    severity low). Read from ``/proc/sys/kernel/osrelease`` (so a sysroot works), else the running kernel."""
    if (skip := _no_npu(chk, ctx)):
        yield skip
        return
    k = ctx.facts.host.kernel or ctx.facts.system.kernel
    ver = _kernel(k or "")
    if ver is None:
        yield chk.skip("kernel release unknown")
        return
    evidence = [ev("kernel", k), ev("recommended by", MPC)]
    if ver < KERNEL_MIN:
        yield chk.warn(f"kernel {k} is older than 5.10 (slower operator dispatch: host bound)", evidence=evidence,
                       fix="move to an OS release with kernel 5.10 or newer (e.g. openEuler 22.03 LTS)")
        return
    yield chk.ok(f"kernel {k}", evidence=evidence)


@check("EC613", "host-tuning-summary", "swap, NUMA, NPU-NUMA affinity, ulimits, container runtime (report only)",
       section=HOST, failable=False)
def host_summary(chk: Check, ctx: Context) -> Iterable[Finding]:
    """Reports host settings for which envcheck found no Ascend-published recommended value, so they are not
    judged: swap size, NUMA node count and each NPU's NUMA node (sysfs ``numa_node`` of its PCI function),
    ``ulimit -n`` / ``ulimit -l``, and the container engine. /dev/shm is judged by EC203."""
    if (skip := _no_npu(chk, ctx)):
        yield skip
        return
    h, s, c = ctx.facts.host, ctx.facts.system, ctx.facts.container

    def lim(v: int | None) -> str:
        return "unknown" if v is None else ("unlimited" if v == -1 else str(v))

    swap = h.swap_total_bytes
    parts = {
        "swap": "unknown" if swap is None else f"{swap // (1024 ** 2)} MiB",
        "NUMA nodes": str(s.numa_nodes if s.numa_nodes is not None else "unknown"),
        "ulimit -n": lim(s.open_files_limit),
        "ulimit -l": lim(s.memlock_limit),
        "container": (c.engine or "yes") if c.in_container else "no",
    }
    numa = h.npu_numa
    evidence = [ev(k, v) for k, v in parts.items()]
    if numa:
        evidence.append(ev("NPU NUMA node (sysfs numa_node)", ", ".join(f"{k}: {v}" for k, v in numa.items())))
    yield chk.ok("; ".join(f"{k} {v}" for k, v in parts.items()), evidence=evidence,
                 data={**parts, "npu_numa": numa})


# ---- containers --------------------------------------------------------------------------------

@check("EC620", "container-devices-missing", "a container has the NPU and management devices", section=CONT)
def container_devices(chk: Check, ctx: Context) -> Iterable[Finding]:
    """Inside a container (``/.dockerenv``, ``/run/.containerenv`` or a container cgroup) the Ascend Docker
    Runtime mounts the NPUs named by ASCEND_VISIBLE_DEVICES plus the management devices (Ascend/ascend-docker-
    runtime README); without it ``docker run`` must pass ``--device /dev/davinciN`` and ``/dev/davinci_manager``,
    ``/dev/devmm_svm``, ``/dev/hisi_hdc``. A missing one leaves NPUs invisible or the runtime failing to open
    them (gpustack#1432; vllm-ascend#6063)."""
    c = ctx.facts.container
    if not c.in_container:
        yield chk.skip("not in a container")
        return
    mgmt, dav = c.mgmt_devices or {}, c.davinci or ()
    evidence = [ev("container", ", ".join(c.signals or ()))]
    evidence += [ev(f"/dev/{k}", "present" if v else "absent") for k, v in mgmt.items()]
    evidence.append(ev("/dev/davinci*", ",".join(map(str, dav)) or "none"))
    missing = [f"/dev/{k}" for k, v in mgmt.items() if not v]
    if not dav:
        missing.insert(0, "/dev/davinciN (no NPU)")
    if missing:
        yield chk.fail(f"container lacks {', '.join(missing)}", evidence=evidence,
                       fix="on an Ascend host, start the container with the Ascend Docker Runtime "
                           "(`-e ASCEND_VISIBLE_DEVICES=0-7`: it maps the devices and mounts the driver) or pass "
                           "`--device /dev/davinci0 ... --device /dev/davinci_manager --device /dev/devmm_svm "
                           "--device /dev/hisi_hdc -v /usr/local/Ascend/driver:/usr/local/Ascend/driver`")
        return
    yield chk.ok(f"container has {len(dav)} NPU device(s) and the management devices", evidence=evidence)


@check("EC621", "driver-mounted-partially", "a container sees the whole driver directory", section=CONT)
def driver_whole(chk: Check, ctx: Context) -> Iterable[Finding]:
    """Many ``docker run`` examples mount only ``/usr/local/Ascend/driver/lib64`` (and version.info). HCCL
    also reads the topology files in ``/usr/local/Ascend/driver/topo``; without them communicator init fails
    with EI0014 / ``hcclCommInitRootInfoConfig error code is 4`` (vllm-project/recipes PR 907). Mount
    ``/usr/local/Ascend/driver`` whole. Fails inside a container when lib64 is there but topo is not."""
    c = ctx.facts.container
    if not c.in_container:
        yield chk.skip("not in a container")
        return
    d = c.driver_dir
    if not d:
        yield chk.skip("no /usr/local/Ascend/driver in this container (EC303 reports a missing driver)")
        return
    evidence = [ev(f"/usr/local/Ascend/driver/{k}", "present" if v else "absent") for k, v in d.items()]
    if d.get("lib64") and not d.get("topo"):
        absent = [k for k, v in d.items() if not v]
        yield chk.fail(f"only part of the driver is mounted (absent: {', '.join(absent)})", evidence=evidence,
                       fix="docker run ... -v /usr/local/Ascend/driver:/usr/local/Ascend/driver  (the whole directory)")
        return
    yield chk.ok("driver directory mounted with lib64 and topo", evidence=evidence)


def _ids(spec: str) -> list[int] | None:
    out: list[int] = []
    for part in spec.replace(" ", "").split(","):
        if not part:
            continue
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            return None
        a, b = int(m.group(1)), int(m.group(2) or m.group(1))
        out += list(range(a, b + 1))
    return out


@check("EC622", "visible-devices-confused", "ASCEND_VISIBLE_DEVICES and ASCEND_RT_VISIBLE_DEVICES fit together",
       section=CONT)
def visible_confused(chk: Check, ctx: Context) -> Iterable[Finding]:
    """ASCEND_VISIBLE_DEVICES is read by the Ascend Docker Runtime when the container starts: it picks the
    host's NPUs to mount. Inside the container those NPUs are renumbered from 0, and ASCEND_RT_VISIBLE_DEVICES
    (read by the CANN runtime in the process) indexes the NPUs the container sees. Fails when
    ASCEND_RT_VISIBLE_DEVICES names more or higher ids than ASCEND_VISIBLE_DEVICES handed in (host ids
    reused inside); warns when ASCEND_VISIBLE_DEVICES is set outside a container, where nothing reads it."""
    c = ctx.facts.container
    env = ctx.facts.env or {}
    vis = env.get("ASCEND_VISIBLE_DEVICES", c.ascend_visible_devices)
    rt = env.get("ASCEND_RT_VISIBLE_DEVICES", c.ascend_rt_visible_devices)
    if not vis:
        yield chk.skip("ASCEND_VISIBLE_DEVICES not set")
        return
    evidence = [ev("env ASCEND_VISIBLE_DEVICES", vis)] + ([ev("env ASCEND_RT_VISIBLE_DEVICES", rt)] if rt else [])
    if not c.in_container:
        yield chk.warn(f"ASCEND_VISIBLE_DEVICES={vis} is set outside a container: only the Ascend Docker Runtime "
                       "reads it; processes here see every NPU", evidence=evidence,
                       fix="use ASCEND_RT_VISIBLE_DEVICES to restrict a process on the host")
        return
    host_ids, rt_ids = _ids(vis), _ids(rt) if rt else None
    if host_ids and rt_ids is not None and (max(rt_ids, default=-1) >= len(host_ids)):
        yield chk.fail(f"ASCEND_RT_VISIBLE_DEVICES={rt} but the container holds {len(host_ids)} NPU(s) "
                       f"(host ids {vis}, numbered 0..{len(host_ids) - 1} inside)", evidence=evidence,
                       fix=f"export ASCEND_RT_VISIBLE_DEVICES={','.join(str(i) for i in range(len(host_ids)))}  "
                           "(container-local ids)")
        return
    yield chk.ok(f"ASCEND_VISIBLE_DEVICES={vis}" + (f", ASCEND_RT_VISIBLE_DEVICES={rt} within it" if rt else ""),
                 evidence=evidence)


# ---- cluster-only (produced by envcheck.cluster.netcheck) ---------------------------------------

def _cluster_only(chk: Check) -> Iterable[Finding]:
    yield chk.skip("compared across nodes only: run `torchrun ... -m envcheck cluster` or `envcheck compare`")


@check("EC630", "device-ip-unreachable", "every node reaches its peers' device and host IPs", section=NET,
       default=False)
def device_unreachable(chk: Check, ctx: Context) -> Iterable[Finding]:
    """Under `envcheck cluster` one rank per node runs ``hccn_tool -i N -ping -g address <peer's device N IP>``
    for every peer node and pings the peers' host addresses, at most 8 at a time with a timeout each; the
    report names every unreachable (node, device) -> (node, address) pair. Fails on any unreachable pair."""
    yield from _cluster_only(chk)


@check("EC631", "tls-differs-across-nodes", "the device TLS switch is the same on every node", section=NET,
       default=False)
def tls_nodes(chk: Check, ctx: Context) -> Iterable[Finding]:
    """Compares each node's ``hccn_tool -tls -g`` switch (EC606 compares the devices of one node). Nodes with
    different TLS settings cannot build HCCL links to each other (EI0006 names inconsistent TLS as a cause)."""
    yield from _cluster_only(chk)


@check("EC632", "env-drift-across-nodes", "HCCL_*, ASCEND_*, PYTORCH_NPU_* and LD_LIBRARY_PATH agree across nodes",
       section="Distributed", default=False)
def env_drift(chk: Check, ctx: Context) -> Iterable[Finding]:
    """Diffs the (redacted) HCCL_*, ASCEND_*, PYTORCH_NPU_* variables and the LD_LIBRARY_PATH components of
    every node (`envcheck cluster`, or `envcheck compare` on saved `probe --json` / `check --json` files).
    HCCL timeouts such as HCCL_CONNECT_TIMEOUT must match on all ranks (vllm-project/afd-plugin#229); per-node
    values (device lists, HCCL_IF_IP, rank ids) are shown but only warned about."""
    yield from _cluster_only(chk)


CHECKS = (nic_up, link_flapping, net_health, device_ips, optical_present, tls_same, hccl_nic_conflict,
          governor, thp, kernel, host_summary, container_devices, driver_whole, visible_confused,
          device_unreachable, tls_nodes, env_drift)
