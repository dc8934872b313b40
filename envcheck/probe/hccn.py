"""Device network (the NPUs' own RoCE NICs) read with `hccn_tool`, one process per query, each with a timeout.

Only output formats seen in real captures are parsed (tests/data/hccn-tool/README.md lists each one and
its source). Queries whose output format is not known from a public capture (`-gateway -g`, the optical
module's power readings) are kept as raw text and never judged.

Under ``--root`` the tool is looked up inside the sysroot (``<root>/usr/local/Ascend/driver/tools/hccn_tool``),
so tests can stand a recording player there; on the live machine PATH first, then that fixed place.
"""
from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

from envcheck.probe.fs import Root, parse_kv

TOOL_PATH = "/usr/local/Ascend/driver/tools/hccn_tool"
CONF_PATH = "/etc/hccn.conf"
MAX_WORKERS = 8  # bounded fan-out: never more hccn_tool processes than this at once
QUERIES = ("link", "ip", "gateway", "net_health", "link_stat", "optical", "tls")

LINK = re.compile(r"^\s*link status:\s*(\S+)", re.MULTILINE)
IPADDR = re.compile(r"^\s*ipaddr:\s*(\S+)", re.MULTILINE)
NETMASK = re.compile(r"^\s*netmask:\s*(\S+)", re.MULTILINE)
NO_IP = "Get ipconf failed"
HEALTH = re.compile(r"^\s*net health status:\s*(\S+)", re.MULTILINE)
TLS = re.compile(r"tls switch\[(\d+)\]")
TLS_PRESET = re.compile(r"tls preconfigured\[(\d+)\]")
PRESENT = re.compile(r"^\s*present\s*:\s*(.+?)\s*$", re.MULTILINE)
STAT_NOW = re.compile(r"current time\s*:\s*(.+?)\s*$", re.MULTILINE)
STAT_UPS = re.compile(r"link up count\s*:\s*(\d+)", re.MULTILINE)
STAT_REC = re.compile(r"^(?:\[device \d+\])?\s+(\w{3} \w{3}\s+\d+ \d\d:\d\d:\d\d \d{4})"
                      r"\s+LINK (UP|DOWN)\s*$", re.MULTILINE)
PING_RECEIVED = re.compile(r"(\d+) received")
TIME_FMT = "%a %b %d %H:%M:%S %Y"


def find_tool(fs: Root, environ: Mapping[str, str]) -> str | None:
    """Host path of hccn_tool, or None."""
    if fs.root != "/":
        p = fs.host(TOOL_PATH)
        return p if os.path.isfile(p) and os.access(p, os.X_OK) else None
    exe = shutil.which("hccn_tool", path=environ.get("PATH", ""))
    if exe:
        return exe
    return TOOL_PATH if os.path.isfile(TOOL_PATH) and os.access(TOOL_PATH, os.X_OK) else None


def probe(fs: Root, environ: Mapping[str, str], timeout: float, device_ids: Sequence[int]) -> dict[str, Any]:
    """Facts.netdev. No hccn_tool, or no devices, is a reason (``reason``), never an error."""
    out: dict[str, Any] = {"available": False, "tool": None, "reason": None, "devices": [],
                           "hccn_conf": read_conf(fs)}
    exe = find_tool(fs, environ)
    if exe is None:
        out["reason"] = f"hccn_tool not found (PATH, {TOOL_PATH})"
        return out
    out["tool"] = exe
    if not device_ids:
        out["reason"] = "no NPU device ids known (npu-smi / /dev/davinci*): nothing to ask hccn_tool about"
        return out
    out["available"] = True
    jobs = [(i, q) for i in device_ids for q in QUERIES]
    per = min(timeout, 10.0)
    with ThreadPoolExecutor(max_workers=min(MAX_WORKERS, len(jobs))) as pool:
        results = list(pool.map(lambda job: _query(exe, job[0], job[1], per, environ), jobs))
    by_dev: dict[int, dict[str, Any]] = {i: {"id": i, "errors": {}, "raw": {}} for i in device_ids}
    for (i, q), (text, err) in zip(jobs, results):
        dev = by_dev[i]
        if err:
            dev["errors"][q] = err
            continue
        dev["raw"][q] = text
        dev.update(PARSERS[q](text))
    for dev in by_dev.values():
        # keep raw text only where the format is unknown to envcheck (shown, never judged)
        dev["raw"] = {q: t for q, t in dev["raw"].items() if q in ("gateway", "optical")}
    out["devices"] = [by_dev[i] for i in device_ids]
    return out


def _query(exe: str, dev: int, query: str, timeout: float, environ: Mapping[str, str]) -> tuple:
    from envcheck import subproc

    res = subproc.run([exe, "-i", str(dev), f"-{query}", "-g"], timeout=timeout, env=dict(environ))
    text = (res.stdout or "") + (("\n" + res.stderr) if res.stderr else "")
    if res.error:
        return "", res.error
    if res.timed_out:
        return "", f"`hccn_tool -i {dev} -{query} -g` did not answer within {timeout:g} s (killed)"
    if res.rc != 0 and (not text.strip() or query in ("gateway", "optical")):
        tail = " / ".join(ln.strip() for ln in text.strip().splitlines()[-2:])
        return "", f"`hccn_tool -i {dev} -{query} -g` exited with status {res.rc}" + (f": {tail}" if tail else "")
    return text, ""


def parse_link(text: str) -> dict[str, Any]:
    """`link status: UP` (-link -g)."""
    m = LINK.search(text)
    return {"link": m.group(1).upper() if m else None}


def parse_ip(text: str) -> dict[str, Any]:
    """`ipaddr:10.86.1.80` / `netmask:255.255.255.0`, or `Get ipconf failed, because no ip was preset there!`."""
    if NO_IP in text:
        return {"ip": None, "netmask": None, "ip_missing": True}
    ip, mask = IPADDR.search(text), NETMASK.search(text)
    return {"ip": ip.group(1) if ip else None, "netmask": mask.group(1) if mask else None,
            "ip_missing": ip is None}


def parse_health(text: str) -> dict[str, Any]:
    """`net health status: Success` (also Fault, Init)."""
    m = HEALTH.search(text)
    return {"net_health": m.group(1) if m else None}


def parse_tls(text: str) -> dict[str, Any]:
    """`dev_id:0, tls switch[0](0:disable, 1:enable), tls preconfigured[1](...)...`."""
    m, p = TLS.search(text), TLS_PRESET.search(text)
    return {"tls_switch": int(m.group(1)) if m else None, "tls_preconfigured": int(p.group(1)) if p else None}


def parse_optical(text: str) -> dict[str, Any]:
    """Only the `present : present|not present` line is parsed; power readings are format-unknown."""
    m = PRESENT.search(text)
    if not m:
        return {"optical_present": None}
    return {"optical_present": m.group(1).strip().lower() == "present"}


def parse_link_stat(text: str) -> dict[str, Any]:
    """`[device 0]current time : Wed Jun  7 10:08:28 2023`, `link up count : 2`, then change records."""
    now = STAT_NOW.search(text)
    ups = STAT_UPS.search(text)
    records = [{"time": _iso(t), "state": s} for t, s in STAT_REC.findall(text)]
    return {"stat_time": _iso(now.group(1)) if now else None, "link_up_count": int(ups.group(1)) if ups else None,
            "link_changes": records}


def parse_gateway(text: str) -> dict[str, Any]:
    """Format not known from any public capture: nothing is parsed (raw text kept)."""
    return {}


def parse_ping(text: str, rc: int | None) -> bool | None:
    """True when the summary counts at least one reply (msprechecker expects `3 received`), None when unreadable."""
    m = PING_RECEIVED.search(text)
    if m is None:
        return None if rc in (None, 0) else False
    return int(m.group(1)) > 0 and rc in (0, None)


def _iso(text: str) -> str | None:
    try:
        return datetime.strptime(" ".join(text.split()), TIME_FMT).isoformat()
    except ValueError:
        return None


PARSERS = {"link": parse_link, "ip": parse_ip, "gateway": parse_gateway, "net_health": parse_health,
           "link_stat": parse_link_stat, "optical": parse_optical, "tls": parse_tls}


def read_conf(fs: Root) -> dict[str, str] | None:
    """/etc/hccn.conf as KEY=VALUE (``address_<id>``, ``netmask_<id>``, ...); None when absent."""
    text = fs.read_text(CONF_PATH, kind="file")
    return parse_kv(text) if text is not None else None


def conf_addresses(conf: Mapping[str, str] | None) -> dict[int, str]:
    """{device id: address} from hccn.conf ``address_<id>=<ip>`` lines (hccl_tools.py reads the same keys)."""
    out: dict[int, str] = {}
    for k, v in (conf or {}).items():
        m = re.fullmatch(r"address_(\d+)", k)
        if m and v:
            out[int(m.group(1))] = v
    return out


def ping(exe: str, dev: int, address: str, timeout: float, environ: Mapping[str, str]) -> dict[str, Any]:
    """`hccn_tool -i DEV -ping -g address IP` with a timeout: {ok, detail}."""
    from envcheck import subproc

    res = subproc.run([exe, "-i", str(dev), "-ping", "-g", "address", address], timeout=timeout, env=dict(environ))
    if res.error:
        return {"ok": None, "detail": res.error}
    if res.timed_out:
        return {"ok": False, "detail": f"no answer within {timeout:g} s"}
    text = (res.stdout or "") + (res.stderr or "")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return {"ok": parse_ping(text, res.rc), "detail": lines[-1] if lines else f"exit status {res.rc}"}


def device_ids(npu: Mapping[str, Any], davinci: list[int]) -> list[int]:
    """The indexes to pass to `hccn_tool -i`: A3 uses physical chip ids, others the NPU (logic) ids."""
    devs = [d for d in (npu.get("devices") or []) if isinstance(d, dict)]
    phy = sorted({d["phy_id"] for d in devs if isinstance(d.get("phy_id"), int)})
    if phy:
        return phy
    ids = sorted({d["logic_id"] for d in devs if isinstance(d.get("logic_id"), int)})
    return ids or list(davinci)
