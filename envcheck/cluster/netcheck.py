"""Across nodes: device-IP / host-IP reachability (EC630), device TLS (EC631), environment drift (EC632).

`plan` and the judging functions are pure; `run_pings` is the only part that starts processes (through
envcheck.subproc, a bounded number at a time, each with a timeout). Nodes are given as
(label, facts-dict) pairs so the same code serves `envcheck cluster` (payloads) and `envcheck compare`.
"""
from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from envcheck.checks import finding
from envcheck.model import Finding, Status, ev
from envcheck.redact import redact_env

SECTION_NET, SECTION_DIST = "Device network", "Distributed"
ENV_PREFIXES = ("HCCL_", "ASCEND_", "PYTORCH_NPU_")
# values that are legitimately different per node / per process: shown, judged warn at most
PER_NODE = ("HCCL_IF_IP", "ASCEND_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES", "ASCEND_DEVICE_ID")
MAX_PARALLEL = 8
PING_TIMEOUT = 5.0
MAX_HOST_ADDRS = 4

Node = tuple  # (label: str, facts: Mapping[str, Any])


def _f(code: str, status: Status, title: str, *_section: str, **kw: Any) -> Finding:
    """A finding through the registry's handle (code -> slug and section come from the registry only)."""
    return finding(code, status, title, **kw)


# ---- reachability ---------------------------------------------------------------------------

def device_ips(facts: Mapping[str, Any]) -> dict[int, str]:
    out = {}
    for d in (facts.get("netdev") or {}).get("devices") or []:
        if isinstance(d, dict) and d.get("ip") and isinstance(d.get("id"), int):
            out[d["id"]] = str(d["ip"])
    return out


def host_ips(facts: Mapping[str, Any]) -> list[str]:
    """A node's routable IPv4 host addresses (no loopback / link-local), at most MAX_HOST_ADDRS."""
    out = []
    for _name, addrs in sorted(((facts.get("system") or {}).get("interfaces") or {}).items()):
        for a in addrs or []:
            try:
                ip = ipaddress.ip_address(str(a).split("/")[0])
            except ValueError:
                continue
            if ip.version == 4 and not ip.is_loopback and not ip.is_link_local and str(ip) not in out:
                out.append(str(ip))
    return out[:MAX_HOST_ADDRS]


def plan(me: str, nodes: Sequence[Node]) -> list[dict[str, Any]]:
    """What node `me` pings: device N -> each peer's device N IP (the pairing HCCL rings use across servers),
    then each peer's host addresses."""
    mine = dict(nodes)[me]
    mine_dev = device_ips(mine)
    todo: list[dict[str, Any]] = []
    for label, facts in nodes:
        if label == me:
            continue
        for dev, ip in sorted(device_ips(facts).items()):
            if dev in mine_dev:
                todo.append({"kind": "device", "from": me, "device": dev, "to": label, "address": ip})
        for ip in host_ips(facts):
            todo.append({"kind": "host", "from": me, "to": label, "address": ip})
    return todo


def find_ping(root: str, environ: Mapping[str, str]) -> str | None:
    import shutil

    if root not in ("", "/"):
        p = os.path.join(root, "usr/bin/ping")
        return p if os.access(p, os.X_OK) else None
    return shutil.which("ping", path=environ.get("PATH", ""))


def run_pings(todo: Sequence[Mapping[str, Any]], hccn_tool: str | None, ping_exe: str | None,
              environ: Mapping[str, str], timeout: float = PING_TIMEOUT) -> list[dict[str, Any]]:
    """Run the plan (at most MAX_PARALLEL at once); each result = the item + ok (True/False/None) + detail."""
    from envcheck import subproc
    from envcheck.probe.hccn import ping as hccn_ping

    def one(item: Mapping[str, Any]) -> dict[str, Any]:
        if item["kind"] == "device":
            if not hccn_tool:
                return {**item, "ok": None, "detail": "hccn_tool not found"}
            return {**item, **hccn_ping(hccn_tool, item["device"], item["address"], timeout, environ)}
        if not ping_exe:
            return {**item, "ok": None, "detail": "ping not found"}
        res = subproc.run([ping_exe, "-c", "3", "-W", "1", item["address"]], timeout=timeout, env=dict(environ))
        lines = [ln for ln in (res.stdout or res.stderr or res.error).splitlines() if ln.strip()]
        ok = None if res.error else (res.rc == 0 and not res.timed_out)
        return {**item, "ok": ok, "detail": lines[-1].strip() if lines else f"exit status {res.rc}"}

    if not todo:
        return []
    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(todo))) as pool:
        return list(pool.map(one, todo))


def reach_findings(results: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """EC630: one fail naming every unreachable pair, or ok / skip."""
    code = "EC630"

    def name(r: Mapping[str, Any]) -> str:
        src = f"{r['from']} device {r['device']}" if r["kind"] == "device" else f"{r['from']} (host)"
        return f"{src} -> {r['to']} {r['address']}"

    bad = [r for r in results if r.get("ok") is False]
    unknown = [r for r in results if r.get("ok") is None]
    evidence = tuple(ev(name(r), r.get("detail", "")) for r in (bad + unknown)[:40])
    data = {"pairs": [dict(r) for r in results]}
    if bad:
        return [_f(code, Status.FAIL, f"{len(bad)} of {len(results)} address(es) unreachable: "
                   + "; ".join(name(r) for r in bad[:8]) + (" ..." if len(bad) > 8 else ""), SECTION_NET,
                   evidence=evidence, data=data,
                   fix="check those device NICs (`hccn_tool -i <id> -link -g`, `-ip -g`), the switch VLAN / routes "
                       "between the subnets, and that TLS matches on both ends")]
    if not results or len(unknown) == len(results):
        why = unknown[0]["detail"] if unknown else "no peer addresses known (no hccn_tool facts, no host addresses)"
        return [_f(code, Status.SKIP, f"reachability not tested: {why}", SECTION_NET, evidence=evidence,
                   data=data)]
    return [_f(code, Status.OK, f"{len(results) - len(unknown)} peer address(es) reachable"
               + (f" ({len(unknown)} not tested)" if unknown else ""), SECTION_NET, evidence=evidence, data=data)]


# ---- TLS across nodes -------------------------------------------------------------------------

def tls_findings(nodes: Sequence[Node]) -> list[Finding]:
    """EC631: the set of device TLS switches per node; fails when nodes differ."""
    code = "EC631"
    per: dict[str, str] = {}
    for label, facts in nodes:
        vals = sorted({int(d["tls_switch"]) for d in (facts.get("netdev") or {}).get("devices") or []
                       if isinstance(d, dict) and d.get("tls_switch") is not None})
        if vals:
            per[label] = "/".join(str(v) for v in vals)
    if len(per) < 2:
        return [_f(code, Status.SKIP, "device TLS read on fewer than two nodes", SECTION_NET)]
    evidence = tuple(ev(n, f"tls switch {v}") for n, v in per.items())
    if len(set(per.values())) > 1:
        from envcheck.cluster.drift import row

        r = row("TLS", per, Status.FAIL)
        odd = ", ".join(f"{n} has tls switch {per[n]}" for n in r.odd)
        return [_f(code, Status.FAIL, f"device TLS differs across nodes: {odd} (majority: {r.majority})",
                   SECTION_NET, evidence=evidence, data={"tls": per, "odd": r.odd},
                   fix="set the same value on every device of every node: hccn_tool -i <id> -tls -s enable <0|1>")]
    return [_f(code, Status.OK, f"device TLS switch {next(iter(per.values()))} on all {len(per)} nodes",
               SECTION_NET, evidence=evidence)]


# ---- environment drift ----------------------------------------------------------------------------

def relevant_env(env: Mapping[str, str]) -> dict[str, str]:
    """HCCL_*, ASCEND_*, PYTORCH_NPU_* and LD_LIBRARY_PATH split into numbered components, redacted."""
    picked = {k: str(v) for k, v in env.items() if k.startswith(ENV_PREFIXES)}
    for i, part in enumerate(str(env.get("LD_LIBRARY_PATH") or "").split(":")):
        if part:
            picked[f"LD_LIBRARY_PATH[{i}]"] = part
    return dict(sorted(redact_env(picked).items()))


def env_findings(nodes: Sequence[Node]) -> list[Finding]:
    """EC632: one finding per differing variable (absent counts as a value), or one ok finding."""
    code = "EC632"
    envs = {label: relevant_env(facts.get("env") or {}) for label, facts in nodes}
    keys = sorted({k for e in envs.values() for k in e})
    out = []
    for k in keys:
        vals = {n: e.get(k, "absent") for n, e in envs.items()}
        if len(set(vals.values())) == 1:
            continue
        from envcheck.cluster.drift import row

        r = row(k, vals, Status.FAIL)
        status = Status.WARN if k in PER_NODE or k.startswith("LD_LIBRARY_PATH[") else Status.FAIL
        odd = ", ".join(f"{n} has {vals[n]}" for n in r.odd)
        out.append(_f(code, status, f"{k} differs across nodes: {odd} (majority: {r.majority})", SECTION_DIST,
                      evidence=tuple(ev(n, f"{k}={v}") for n, v in vals.items()),
                      data={"variable": k, "values": vals, "odd": r.odd},
                      fix="export the same value on every node (one launch script / image for the whole job)"))
    if not out:
        out.append(_f(code, Status.OK, f"{len(keys)} HCCL/ASCEND/PYTORCH_NPU/LD_LIBRARY_PATH value(s) agree on "
                      f"{len(envs)} node(s)", SECTION_DIST))
    return out


def findings(nodes: Sequence[Node]) -> list[Finding]:
    """Everything comparable from facts alone (no pings): EC631 + EC632."""
    return tls_findings(nodes) + env_findings(nodes)
