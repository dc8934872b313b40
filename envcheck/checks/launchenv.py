"""The launcher's environment (WORLD_SIZE, RANK, LOCAL_RANK, ...) judged on one rank, without I/O."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

DIST_VARS = ("WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR",
             "MASTER_PORT", "ASCEND_RT_VISIBLE_DEVICES", "RANK_TABLE_FILE", "TORCHELASTIC_RUN_ID")



@dataclass(frozen=True)
class Issue:
    """One problem with the distributed environment of this process."""

    code: str
    severity: str  # "fail" or "warn"
    variable: str
    message: str
    fix: str = ""


def launched(env: Mapping[str, str]) -> bool:
    """True when this process looks like one rank of a distributed launch."""
    return any(env.get(v) for v in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR"))


def _int(env: Mapping[str, str], name: str, out: list[Issue], code: str, required: bool) -> int | None:
    raw = (env.get(name) or "").strip()
    if not raw:
        if required:
            out.append(Issue(code, "fail", name, f"{name} is not set",
                             "launch with torchrun (it sets WORLD_SIZE, RANK, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) "
                             f"or export {name}"))
        return None
    try:
        return int(raw)
    except ValueError:
        out.append(Issue(code, "fail", name, f"{name}={raw!r} is not an integer", f"export {name} as a whole number"))
        return None


def visible_devices(env: Mapping[str, str]) -> list[int] | None:
    """ASCEND_RT_VISIBLE_DEVICES as a list of ids (None when unset or unparsable)."""
    raw = (env.get("ASCEND_RT_VISIBLE_DEVICES") or "").strip()
    if not raw:
        return None
    try:
        return [int(p) for p in raw.split(",") if p.strip()]
    except ValueError:
        return None


def check_env(env: Mapping[str, str], devices: Sequence[int] | None = None,
              require: bool = True) -> list[Issue]:
    """Problems with this rank's launch variables; `devices` are the NPU ids on this node (None: unknown)."""
    out: list[Issue] = []
    ws = _int(env, "WORLD_SIZE", out, "EC501", require)
    rank = _int(env, "RANK", out, "EC502", require)
    lrank = _int(env, "LOCAL_RANK", out, "EC502", False)
    lws = _int(env, "LOCAL_WORLD_SIZE", out, "EC501", False)
    if ws is not None and ws < 1:
        out.append(Issue("EC501", "fail", "WORLD_SIZE", f"WORLD_SIZE={ws} must be at least 1"))
    if ws and rank is not None and not 0 <= rank < ws:
        out.append(Issue("EC502", "fail", "RANK", f"RANK={rank} is outside 0..WORLD_SIZE-1 (WORLD_SIZE={ws})",
                         "each rank needs a unique RANK in 0..WORLD_SIZE-1; "
                         "node k's ranks start at k*LOCAL_WORLD_SIZE"))
    if lws and lrank is not None and not 0 <= lrank < lws:
        out.append(Issue("EC502", "fail", "LOCAL_RANK",
                         f"LOCAL_RANK={lrank} is outside 0..LOCAL_WORLD_SIZE-1 (LOCAL_WORLD_SIZE={lws})"))
    if ws and lws:
        if lws > ws:
            out.append(Issue("EC501", "fail", "LOCAL_WORLD_SIZE",
                             f"LOCAL_WORLD_SIZE={lws} is larger than WORLD_SIZE={ws}"))
        elif ws % lws:
            out.append(Issue("EC501", "warn", "WORLD_SIZE",
                             f"WORLD_SIZE={ws} is not a multiple of LOCAL_WORLD_SIZE={lws}: nodes run "
                             "different numbers of ranks"))
    out += _master(env, require)
    out += _devices(env, devices, lrank, lws)
    return out


def _master(env: Mapping[str, str], require: bool) -> list[Issue]:
    out: list[Issue] = []
    if require and not (env.get("MASTER_ADDR") or "").strip():
        out.append(Issue("EC508", "fail", "MASTER_ADDR", "MASTER_ADDR is not set",
                         "export MASTER_ADDR=<address of the rank-0 host> (torchrun sets it)"))
    port = _int(env, "MASTER_PORT", out, "EC508", require)
    if port is not None and not 0 < port < 65536:
        out.append(Issue("EC508", "fail", "MASTER_PORT", f"MASTER_PORT={port} is not a TCP port (1-65535)"))
    return out


def _devices(env: Mapping[str, str], devices: Sequence[int] | None, lrank: int | None,
             lws: int | None) -> list[Issue]:
    out: list[Issue] = []
    raw = (env.get("ASCEND_RT_VISIBLE_DEVICES") or "").strip()
    vis = visible_devices(env)
    if raw and vis is None:
        out.append(Issue("EC503", "fail", "ASCEND_RT_VISIBLE_DEVICES",
                         f"ASCEND_RT_VISIBLE_DEVICES={raw!r} is not a comma-separated list of device ids"))
    if vis is not None and len(set(vis)) != len(vis):
        out.append(Issue("EC503", "fail", "ASCEND_RT_VISIBLE_DEVICES",
                         f"ASCEND_RT_VISIBLE_DEVICES={raw} names a device twice"))
    if devices is not None and vis is not None:
        missing = sorted(set(vis) - set(devices))
        if missing:
            out.append(Issue("EC503", "fail", "ASCEND_RT_VISIBLE_DEVICES",
                             f"ASCEND_RT_VISIBLE_DEVICES={raw} names device(s) {missing} that this node does not "
                             f"have (devices: {sorted(devices)})"))
    usable = len(vis) if vis is not None else (len(devices) if devices is not None else None)
    if usable is not None and lws and lws > usable:
        out.append(Issue("EC503", "fail", "LOCAL_WORLD_SIZE",
                         f"LOCAL_WORLD_SIZE={lws} ranks on this node but only {usable} device(s) are visible",
                         "start one rank per visible NPU (torchrun --nproc-per-node = number of visible devices)"))
    elif usable is not None and lrank is not None and lrank >= usable > 0:
        out.append(Issue("EC503", "fail", "LOCAL_RANK",
                         f"LOCAL_RANK={lrank} has no device: only {usable} device(s) are visible"))
    return out
