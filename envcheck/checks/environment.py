"""EC2xx environment: CANN variables loaded, visible devices, /dev/shm, log level, HCCL NIC, HCCL launch variables."""
from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence

from envcheck.checks.registry import Check, Context, check
from envcheck.facts import CannEnvironment, CannInstall, EnvPath
from envcheck.model import Facts, Finding, ev

SECTION = "Environment"
SHM_MIN = 1 << 30  # 1 GiB: DataLoader workers pass batches through /dev/shm (docker's default is 64 MiB)


def set_env_command(inst: CannInstall) -> str:
    """`source <toolkit>/set_env.sh` for an install (the file found by the probe, else <home>/../set_env.sh)."""
    path = inst.set_env or posixpath.normpath((inst.home or "") + "/../set_env.sh")
    return f"source {path}"


def device_count(facts: Facts) -> int | None:
    """Logical NPUs on this host: npu-smi's chip rows, else the number of /dev/davinciN."""
    npu = facts.npu
    if npu.count:
        return npu.count
    return len(npu.dev_davinci or ()) or None


def _target_install(facts: Facts) -> CannInstall | None:
    inst = facts.cann.active_install()
    if inst is not None:
        return inst
    installs = facts.cann.installs or ()
    return installs[0] if installs else None


@check("EC201", "cann-env-not-loaded", "the CANN environment (set_env.sh) is loaded", section=SECTION)
def cann_env_loaded(chk: Check, ctx: Context) -> Iterable[Finding]:
    """torch_npu finds CANN only through the variables ``set_env.sh`` exports: ASCEND_HOME_PATH
    and ASCEND_OPP_PATH must name existing directories of the installed toolkit and
    LD_LIBRARY_PATH must hold its ``lib64`` (``libascendcl.so``, ``libhccl.so``). Without them
    ``import torch_npu`` fails with ``libhccl.so: cannot open shared object file``. The fix names the
    exact ``set_env.sh`` of the detected toolkit."""
    f = ctx.facts
    inst = _target_install(f)
    if inst is None:
        yield chk.skip("no CANN toolkit found, nothing to load (see EC301)")
        return
    envinfo = f.cann.environment or CannEnvironment()
    vars_ = envinfo.vars or {}
    fix = set_env_command(inst)
    home = vars_.get("ASCEND_HOME_PATH")
    problems: list[str] = []
    if not home:
        problems.append("ASCEND_HOME_PATH is not set")
    elif not home.exists:
        problems.append(f"ASCEND_HOME_PATH={home.value} does not exist")
    opp = vars_.get("ASCEND_OPP_PATH")
    if not opp:
        problems.append("ASCEND_OPP_PATH is not set")
    elif not opp.exists:
        problems.append(f"ASCEND_OPP_PATH={opp.value} does not exist")
    lib_dir = _lib64(home, inst)
    ld = envinfo.ld_library_path or ()
    if lib_dir and not any(e.realpath and _same(e.realpath, lib_dir) for e in ld):
        problems.append(f"LD_LIBRARY_PATH does not contain {_shown_lib64(home, inst)}")
    evidence = [ev(f"env {k}", v.value) for k, v in vars_.items()]
    evidence.append(ev("env LD_LIBRARY_PATH", ":".join(str(e.path) for e in ld) or "(unset)"))
    if problems or home is None:  # no problem means ASCEND_HOME_PATH is set
        yield chk.fail(f"CANN environment not loaded: {problems[0]}",
                       detail="\n".join(problems) + f"\nDetected toolkit: {inst.home} (CANN {inst.version}).",
                       evidence=evidence, fix=fix, data={"problems": problems})
        return
    yield chk.ok(f"CANN environment loaded: ASCEND_HOME_PATH={home.value}", evidence=evidence, fix=fix)


def _lib64(home: EnvPath | None, inst: CannInstall) -> str | None:
    """Resolved lib64 of the toolkit the environment names (else of the detected one)."""
    if home and home.exists:
        return home.lib64
    return inst.lib64


def _shown_lib64(home: EnvPath | None, inst: CannInstall) -> str:
    base = home.value if home and home.exists else inst.home
    return str(base).rstrip("/") + "/lib64"


def _same(realpath: str, lib_dir: str) -> bool:
    return realpath.rstrip("/") == lib_dir.rstrip("/")


@check("EC202", "visible-devices-invalid", "ASCEND_RT_VISIBLE_DEVICES names devices that exist", section=SECTION)
def visible_devices_valid(chk: Check, ctx: Context) -> Iterable[Finding]:
    """ASCEND_RT_VISIBLE_DEVICES (like CUDA_VISIBLE_DEVICES) must be a comma-separated list of
    distinct logical device ids below the number of NPUs on this host; otherwise the runtime
    fails with 107001 "invalid device" or sees no NPU at all."""
    env = ctx.facts.env or {}
    raw = env.get("ASCEND_RT_VISIBLE_DEVICES")
    n = device_count(ctx.facts)
    if raw is None:
        yield chk.skip("ASCEND_RT_VISIBLE_DEVICES not set: every NPU is visible" if n else
                       "ASCEND_RT_VISIBLE_DEVICES not set (and no NPU here)")
        return
    evidence = [ev("env ASCEND_RT_VISIBLE_DEVICES", raw), ev("devices on this host", n if n is not None else "unknown")]
    parts = [p.strip() for p in raw.split(",")]
    if not raw.strip():
        yield chk.fail("ASCEND_RT_VISIBLE_DEVICES is empty: it hides every NPU", evidence=evidence,
                       fix="unset ASCEND_RT_VISIBLE_DEVICES  (or list the ids to use, e.g. 0,1,2,3)")
        return
    bad = [p for p in parts if not p.isdigit()]
    if bad:
        yield chk.fail(f"ASCEND_RT_VISIBLE_DEVICES={raw} is not a list of device ids ({', '.join(map(repr, bad))})",
                       evidence=evidence, fix="export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3  (comma-separated integers)")
        return
    ids = [int(p) for p in parts]
    if len(set(ids)) != len(ids):
        yield chk.fail(f"ASCEND_RT_VISIBLE_DEVICES={raw} names a device twice", evidence=evidence,
                       fix="list each device id once")
        return
    if n is None:
        yield chk.skip(f"ASCEND_RT_VISIBLE_DEVICES={raw}: cannot check, the number of NPUs is unknown",
                       evidence=evidence)
        return
    out = [i for i in ids if i >= n]
    if out:
        yield chk.fail(f"ASCEND_RT_VISIBLE_DEVICES={raw} names device(s) {out} but this host has {n} (0..{n - 1})",
                       evidence=evidence,
                       fix=f"export ASCEND_RT_VISIBLE_DEVICES={','.join(str(i) for i in ids if i < n) or '0'}")
        return
    yield chk.ok(f"ASCEND_RT_VISIBLE_DEVICES={raw} ({len(ids)} of {n} NPUs)", evidence=evidence)


@check("EC203", "shm-too-small", "/dev/shm is large enough for DataLoader workers", section=SECTION)
def shm_large_enough(chk: Check, ctx: Context) -> Iterable[Finding]:
    """DataLoader workers hand batches to the trainer through /dev/shm. Containers get 64 MiB by
    default, and workers then die with "Unexpected bus error encountered in worker. This might be
    caused by insufficient shared memory (shm)". Fails below 1 GiB."""
    size = ctx.facts.system.shm_bytes
    if size is None:
        yield chk.skip("size of /dev/shm unknown")
        return
    evidence = [ev("statvfs /dev/shm", f"{size} bytes")]
    if size < SHM_MIN:
        yield chk.fail(f"/dev/shm is only {_human(size)} (DataLoader workers need >= 1 GiB)", evidence=evidence,
                       fix="docker run --shm-size=16g ...  (Kubernetes: mount an emptyDir with medium: Memory at "
                           "/dev/shm), or use num_workers=0")
        return
    yield chk.ok(f"/dev/shm {_human(size)}", evidence=evidence)


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" or n == int(n) else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)  # pragma: no cover


LOG_LEVELS = {"0": "debug", "1": "info", "2": "warning", "3": "error", "4": "null"}


@check("EC204", "log-level-verbose", "CANN logging is not left at debug/info", section=SECTION, failable=False)
def log_level_quiet(chk: Check, ctx: Context) -> Iterable[Finding]:
    """ASCEND_GLOBAL_LOG_LEVEL 0 (debug) or 1 (info), or ASCEND_SLOG_PRINT_TO_STDOUT=1, make every
    CANN component write plog lines on the hot path and slow training noticeably. Warns only."""
    env = ctx.facts.env or {}
    level = env.get("ASCEND_GLOBAL_LOG_LEVEL")
    stdout = env.get("ASCEND_SLOG_PRINT_TO_STDOUT")
    evidence = [ev(f"env {k}", env[k]) for k in ("ASCEND_GLOBAL_LOG_LEVEL", "ASCEND_SLOG_PRINT_TO_STDOUT") if k in env]
    if level is not None and level.strip() in ("0", "1"):
        yield chk.warn(f"ASCEND_GLOBAL_LOG_LEVEL={level} ({LOG_LEVELS[level.strip()]}) slows training",
                       evidence=evidence, fix="export ASCEND_GLOBAL_LOG_LEVEL=3  (error; 1 only while debugging)")
    elif level is not None and level.strip() not in LOG_LEVELS:
        yield chk.warn(f"ASCEND_GLOBAL_LOG_LEVEL={level!r} is not a level (0 debug .. 4 null)", evidence=evidence,
                       fix="export ASCEND_GLOBAL_LOG_LEVEL=3")
    if stdout is not None and stdout.strip() == "1":
        yield chk.warn("ASCEND_SLOG_PRINT_TO_STDOUT=1 prints CANN logs to the console", evidence=evidence,
                       fix="unset ASCEND_SLOG_PRINT_TO_STDOUT")
    if (level is None or level.strip() in ("2", "3", "4")) and not (stdout and stdout.strip() == "1"):
        if not ctx.facts.cann.installs:
            yield chk.skip("no CANN toolkit: no CANN logging to judge", evidence=evidence)
            return
        shown = f"{level} ({LOG_LEVELS[level.strip()]})" if level is not None else "default (error)"
        yield chk.ok(f"CANN log level {shown}", evidence=evidence)


def match_ifname(spec: str, names: Iterable[str]) -> tuple[list[str], list[str]]:
    """HCCL/NCCL-style interface selection: ``eth,ib`` prefixes, ``=eth0`` exact, ``^lo,docker`` excludes.

    Returns (selected interface names, entries of the spec that matched nothing).
    """
    names = list(names)
    spec = spec.strip()
    exclude = spec.startswith("^")
    if exclude:
        spec = spec[1:]
    exact = spec.startswith("=")
    if exact:
        spec = spec[1:]
    pats = [p.strip() for p in spec.split(",") if p.strip()]

    def hit(p: str, n: str) -> bool:
        return n == p if exact else n.startswith(p)

    unmatched = [p for p in pats if not any(hit(p, n) for n in names)]
    if exclude:
        return [n for n in names if n != "lo" and not any(hit(p, n) for p in pats)], unmatched
    return [n for n in names if any(hit(p, n) for p in pats)], unmatched


@check("EC205", "hccl-nic-invalid", "HCCL_SOCKET_IFNAME / HCCL_IF_IP name this host's NICs", section=SECTION)
def hccl_nic_valid(chk: Check, ctx: Context) -> Iterable[Finding]:
    """HCCL's host-side rendezvous uses the NIC chosen by HCCL_SOCKET_IFNAME (``eth0,enp``
    prefixes, ``=eth0`` exact, ``^lo,docker0`` excludes) or the address in HCCL_IF_IP. A name or
    address this host does not have makes communicator set-up time out (EI0006 / EI0015).
    GLOO_SOCKET_IFNAME (used by torch's gloo groups) is checked the same way."""
    env = ctx.facts.env or {}
    ifaces = ctx.facts.system.interfaces
    keys = [k for k in ("HCCL_SOCKET_IFNAME", "HCCL_IF_IP", "GLOO_SOCKET_IFNAME") if env.get(k)]
    if not keys:
        yield chk.skip("HCCL_SOCKET_IFNAME / HCCL_IF_IP not set: HCCL picks a NIC itself")
        return
    if ifaces is None:
        yield chk.skip("this host's network interfaces are unknown",
                       evidence=[ev(f"env {k}", env[k]) for k in keys])
        return
    listing = ", ".join(f"{n} ({' '.join(a) or 'no address'})" for n, a in ifaces.items())
    evidence = [ev(f"env {k}", env[k]) for k in keys] + [ev("interfaces", listing)]
    bad = False
    for var in ("HCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"):
        spec = env.get(var)
        if not spec:
            continue
        chosen, unmatched = match_ifname(spec, ifaces) if var == "HCCL_SOCKET_IFNAME" else \
            match_ifname("=" + spec.lstrip("="), ifaces)
        up = [n for n in chosen if ifaces.get(n)]
        if not up:
            bad = True
            yield chk.fail(f"{var}={spec} selects no interface with an address on this host",
                           detail=f"interfaces here: {listing}", evidence=evidence,
                           fix=f"export {var}={_suggest(ifaces)}")
        elif unmatched:
            yield chk.warn(f"{var}={spec}: {', '.join(unmatched)} match no interface here (using {', '.join(up)})",
                           evidence=evidence)
    ip = env.get("HCCL_IF_IP")
    if ip:
        owners = [n for n, addrs in ifaces.items() if ip.strip() in [a.split("/")[0] for a in addrs]]
        if not owners:
            bad = True
            yield chk.fail(f"HCCL_IF_IP={ip} is not an address of this host", detail=f"interfaces here: {listing}",
                           evidence=evidence, fix=f"export HCCL_IF_IP={_suggest_ip(ifaces)}  (or unset it)")
    if not bad:
        yield chk.ok("HCCL NIC settings match this host: " + ", ".join(f"{k}={env[k]}" for k in keys),
                     evidence=evidence)


def _suggest(ifaces: Mapping[str, Sequence[str]]) -> str:
    for n, addrs in ifaces.items():
        if n != "lo" and not n.startswith(("docker", "veth", "virbr", "ifb")) and addrs:
            return n
    return "<interface name from `ip -br addr`>"


def _suggest_ip(ifaces: Mapping[str, Sequence[str]]) -> str:
    n = _suggest(ifaces)
    addrs = [a for a in ifaces.get(n, []) if ":" not in a]
    return addrs[0] if addrs else "<address of this host>"


def _int(env: dict[str, str], name: str, problems: list[str]) -> int | None:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return None
    try:
        return int(raw.strip())
    except ValueError:
        problems.append(f"{name}={raw!r} is not an integer")
        return None


@check("EC206", "dist-env-invalid", "Ascend launch variables (RANK_SIZE, RANK_ID, HCCL timeouts) are valid",
       section=SECTION)
def dist_env_valid(chk: Check, ctx: Context) -> Iterable[Finding]:
    """The Ascend-side launch variables must be valid and agree with torchrun's: RANK_SIZE /
    RANK_ID / DEVICE_ID (rank-table and MindSpore launches) are integers with RANK_ID < RANK_SIZE,
    equal to WORLD_SIZE / RANK when both are set; HCCL_CONNECT_TIMEOUT / HCCL_EXEC_TIMEOUT are
    whole seconds, and HCCL_EVENT_TIMEOUT must exceed HCCL_EXEC_TIMEOUT. (WORLD_SIZE, RANK,
    LOCAL_RANK and MASTER_ADDR/PORT themselves are judged by EC501, EC502 and EC508.)"""
    env = dict(ctx.facts.env or {})
    names = ("RANK_SIZE", "RANK_ID", "DEVICE_ID", "WORLD_SIZE", "RANK", "HCCL_CONNECT_TIMEOUT",
             "HCCL_EXEC_TIMEOUT", "HCCL_EVENT_TIMEOUT", "RANK_TABLE_FILE")
    if not any(env.get(k) for k in names if k not in ("WORLD_SIZE", "RANK")):
        yield chk.skip("no Ascend launch variables set (RANK_SIZE, RANK_ID, HCCL_*_TIMEOUT)")
        return
    evidence = [ev(f"env {k}", env[k]) for k in names if env.get(k)]
    problems: list[str] = []
    warns: list[str] = []
    v = {k: _int(env, k, problems) for k in names[:8]}
    for k in ("RANK_SIZE", "WORLD_SIZE"):
        value = v[k]
        if value is not None and value < 1:
            problems.append(f"{k}={value} must be at least 1")
    for k in ("RANK_ID", "DEVICE_ID", "HCCL_CONNECT_TIMEOUT", "HCCL_EXEC_TIMEOUT", "HCCL_EVENT_TIMEOUT"):
        value = v[k]
        if value is not None and value < 0:
            problems.append(f"{k}={value} must not be negative")
    if v["RANK_SIZE"] and v["RANK_ID"] is not None and v["RANK_ID"] >= v["RANK_SIZE"] > 0:
        problems.append(f"RANK_ID={v['RANK_ID']} is outside 0..RANK_SIZE-1 (RANK_SIZE={v['RANK_SIZE']})")
    if v["RANK_SIZE"] and v["WORLD_SIZE"] and v["RANK_SIZE"] != v["WORLD_SIZE"]:
        problems.append(f"RANK_SIZE={v['RANK_SIZE']} disagrees with WORLD_SIZE={v['WORLD_SIZE']}")
    if v["RANK_ID"] is not None and v["RANK"] is not None and v["RANK_ID"] != v["RANK"]:
        problems.append(f"RANK_ID={v['RANK_ID']} disagrees with RANK={v['RANK']}")
    n = device_count(ctx.facts)
    if v["DEVICE_ID"] is not None and n and v["DEVICE_ID"] >= n:
        problems.append(f"DEVICE_ID={v['DEVICE_ID']} but this host has {n} NPUs (0..{n - 1})")
    ex, evt = v["HCCL_EXEC_TIMEOUT"], v["HCCL_EVENT_TIMEOUT"]
    if ex is not None and evt is not None and evt <= ex:
        problems.append(f"HCCL_EVENT_TIMEOUT={evt} must be greater than HCCL_EXEC_TIMEOUT={ex}")
    if ex == 0:
        warns.append("HCCL_EXEC_TIMEOUT=0 never times out: a dead rank hangs the job until the watchdog fires")
    ct = v["HCCL_CONNECT_TIMEOUT"]
    if env.get("RANK_TABLE_FILE") and ct is not None and ct < 300:
        warns.append(f"HCCL_CONNECT_TIMEOUT={ct} with RANK_TABLE_FILE: torch_npu recommends 300 s or more")
    if problems:
        yield chk.fail(problems[0], detail="\n".join(problems + warns), evidence=evidence,
                       fix="export consistent values (RANK_SIZE = WORLD_SIZE, RANK_ID = RANK, whole-second HCCL "
                           "timeouts with HCCL_EVENT_TIMEOUT > HCCL_EXEC_TIMEOUT)")
        return
    for w in warns:
        yield chk.warn(w, evidence=evidence, fix="export HCCL_CONNECT_TIMEOUT=600" if "CONNECT" in w
                       else "export HCCL_EXEC_TIMEOUT=1800")
    if not warns:
        yield chk.ok("Ascend launch variables valid: " + ", ".join(f"{k}={env[k]}" for k in names if env.get(k)),
                     evidence=evidence)


CHECKS = (cann_env_loaded, visible_devices_valid, shm_large_enough, log_level_quiet, hccl_nic_valid, dist_env_valid)
