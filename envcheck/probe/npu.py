"""Devices: `npu-smi info` (run with a timeout, parsed for every known layout) and /dev/davinci*."""
from __future__ import annotations

import os
import re
import shutil
from collections import Counter
from collections.abc import Mapping
from typing import Any

from envcheck.probe.fs import Root

FALLBACK_PATHS = ("/usr/local/sbin/npu-smi", "/usr/local/bin/npu-smi")
HDR = re.compile(r"npu-smi\s+(\S+)\s+Version:\s*(\S+)")
PAIR = re.compile(r"(\d+)\s*/\s*(\d+)")
DCMI_ERR = re.compile(r"ret is (-\d+)")
DAVINCI = re.compile(r"^davinci(\d+)$")
HEALTH_WORDS = {"ok", "warning", "alarm", "critical", "unknown", "general", "major", "minor"}


def probe(fs: Root, environ: Mapping[str, str], timeout: float) -> dict[str, Any]:
    """Facts.npu. Missing, failing or hanging npu-smi is recorded in "error", never raised."""
    out: dict[str, Any] = {"available": False, "path": None, "version": None, "tool_version": None,
                           "chip": None, "count": 0, "devices": [], "processes": [], "error": None,
                           "rc": None, "timed_out": False, "dev_davinci": davinci(fs)}
    exe = find_npu_smi(fs, environ)
    if exe is None:
        out["error"] = "npu-smi not found on PATH"
        return out
    out["path"] = exe
    from envcheck import subproc

    res = subproc.run([exe, "info"], timeout=timeout, env=dict(environ))
    out["rc"], out["timed_out"], out["seconds"] = res.rc, res.timed_out, round(res.seconds, 3)
    if res.error:
        out["error"] = res.error
        return out
    out["available"] = True
    text = (res.stdout or "") + ("\n" + res.stderr if res.stderr else "")
    if res.timed_out:
        out["error"] = f"`npu-smi info` did not answer within {timeout:g} s (killed)"
        return out
    parsed = parse_info(res.stdout or "")
    out.update(parsed)
    if res.rc != 0:
        out["error"] = f"`npu-smi info` exited with status {res.rc}: {_tail(text)}"
    elif not parsed["devices"]:
        out["error"] = f"`npu-smi info` listed no devices: {_tail(text)}"
    m = DCMI_ERR.search(text)
    if m:
        out["dcmi_code"] = int(m.group(1))
    return out


def find_npu_smi(fs: Root, environ: Mapping[str, str]) -> str | None:
    exe = shutil.which("npu-smi", path=environ.get("PATH", ""))
    if exe:
        return exe
    if fs.root == "/":  # the fixed install places only make sense on the live machine
        for p in FALLBACK_PATHS:
            if os.path.isfile(p) and os.access(p, os.X_OK):
                return p
    return None


def davinci(fs: Root) -> list[int]:
    """Sorted N of /dev/davinciN under the root (davinci_manager etc. excluded)."""
    ids = []
    for name in fs.listdir("/dev"):
        m = DAVINCI.match(name)
        if m:
            ids.append(int(m.group(1)))
    return sorted(ids)


def _tail(text: str, n: int = 3) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " / ".join(lines[-n:]) if lines else "(no output)"


# ---- parsing ------------------------------------------------------------------------------
def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _num(tok: str) -> float | None:
    try:
        return float(tok)
    except ValueError:
        return None


def parse_info(text: str) -> dict[str, Any]:
    """Parse `npu-smi info` (910A old/classic, 910B, A3 two-die, 310P, wide 26.x layouts)."""
    m = HDR.search(text)
    devices: list[dict[str, Any]] = []
    processes: list[dict[str, Any]] = []
    section = "header"
    pending: dict[str, Any] | None = None
    header: list[str] = []
    second = "phy_id"  # A3 prints `Chip  Phy-ID`; 310P prints `Chip  Device` (the logical device id)
    for line in text.splitlines():
        s = line.strip()
        if section == "header":
            header.append(s)
            if re.search(r"\|\s*Chip\s+Device\b", s):
                second = "device_id"
        if "Process id" in s:
            section, pending = "proc", None
            continue
        if s.startswith("+"):
            if section == "header" and "=" in s:
                section = "devices"
            pending = None
            continue
        if not s.startswith("|"):
            continue
        if section == "devices":
            cells = _cells(s)
            if pending is None:
                pending = _row1(cells) or {}
            else:
                if pending:
                    devices.append(_row2(pending, cells, second))
                pending = None
        elif section == "proc":
            p = _proc(_cells(s))
            if p:
                processes.append(p)
    for i, d in enumerate(devices):
        # Logical ids (what ASCEND_RT_VISIBLE_DEVICES, torch and /dev/davinciN count) are dense and
        # follow the table order; NPU ids are card ids (310P: 0, 32, 96, ...).
        d["logic_id"] = i
    names = Counter(d["name"] for d in devices if d.get("name"))
    return {
        "tool_version": m.group(1) if m else None,
        "version": m.group(2) if m else None,
        "chip": names.most_common(1)[0][0] if names else None,
        "count": len(devices),
        "npu_count": len({d["id"] for d in devices}),
        "devices": devices,
        "processes": processes,
    }


def _row1(cells: list[str]) -> dict[str, Any] | None:
    """`| 0     910B4 | OK | 87.2 33 0 / 0 |` (or A5: `| 0 | Ascend950DT | OK | ... |`)."""
    if len(cells) < 3:
        return None
    first = cells[0].split()
    if len(first) == 1 and first[0].isdigit() and len(cells) >= 4:
        first, cells = [first[0], cells[1]], [cells[0]] + cells[2:]
    if not first or not first[0].isdigit() or len(first) < 2:
        return None
    health = cells[1]
    if not health or health.split()[0].lower() not in HEALTH_WORDS:
        return None
    toks = cells[2].split()
    return {"id": int(first[0]), "name": " ".join(first[1:]), "health": health,
            "power_w": _num(toks[0]) if toks else None,
            "temp_c": _num(toks[1]) if len(toks) > 1 else None}


def _row2(r1: dict[str, Any], cells: list[str], second: str = "phy_id") -> dict[str, Any]:
    """`| 0 | 0000:C1:00.0 | 0  0 / 0  2654 / 32768 |`; A3/310P put a 2nd number (phy-id/device) first."""
    dev: dict[str, Any] = dict(r1)
    first = cells[0].split() if cells else []
    if not first and len(cells) >= 4:  # A5: the first cells are empty
        cells = cells[1:]
        first = cells[0].split()
    dev["chip_id"] = int(first[0]) if first and first[0].isdigit() else 0
    if len(first) > 1 and first[1].isdigit():
        dev[second] = int(first[1])
    dev["bus_id"] = cells[1] if len(cells) > 1 and cells[1] not in ("", "NA") else None
    last = cells[-1] if len(cells) > 2 else ""
    toks = last.split()
    dev["aicore_pct"] = _num(toks[0]) if toks else None
    pairs = [(int(a), int(b)) for a, b in PAIR.findall(last)]
    mem = pairs[0] if pairs else (None, None)
    hbm = pairs[1] if len(pairs) > 1 else (None, None)
    dev["memory_used_mb"], dev["memory_total_mb"] = mem
    dev["hbm_used_mb"], dev["hbm_total_mb"] = hbm
    return dev


def _proc(cells: list[str]) -> dict[str, Any] | None:
    """`| 0  0 | 123456 | python3 | 3072 |` (wide layout adds a container-pid column)."""
    if len(cells) < 4:
        return None
    ids = cells[0].split()
    if not ids or not ids[0].isdigit() or not cells[1].split() or not cells[1].split()[0].isdigit():
        return None
    mem = _num(cells[-1].split()[0]) if cells[-1].split() else None
    return {"device": int(ids[0]), "chip": int(ids[1]) if len(ids) > 1 and ids[1].isdigit() else 0,
            "pid": int(cells[1].split()[0]), "name": cells[-2], "memory_mb": mem}
