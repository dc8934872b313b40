"""Host tuning read from files (so a sysroot can stand in for the machine): CPU frequency governor,
transparent huge pages, swap, kernel release, NUMA node of each NPU's PCI function.

Limits (`ulimit -n` / `-l`) and the NUMA node count stay in Facts.system (probe/system.py).
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from envcheck.probe.fs import Root

GOVERNOR = "/sys/devices/system/cpu/cpu{}/cpufreq/scaling_governor"
THP = "/sys/kernel/mm/transparent_hugepage/enabled"
MEMINFO = "/proc/meminfo"
OSRELEASE = "/proc/sys/kernel/osrelease"
PCI_NUMA = "/sys/bus/pci/devices/{}/numa_node"
CPU_DIR = re.compile(r"^cpu(\d+)$")


def probe(fs: Root, npu: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "cpu_governors": governors(fs),
        "thp": thp(fs),
        "swap_total_bytes": swap_total(fs),
        "kernel": _first_line(fs.read_text(OSRELEASE, kind="host")),
        "npu_numa": npu_numa(fs, npu),
    }


def governors(fs: Root) -> dict[str, int] | None:
    """{governor: number of CPUs using it}; None when no cpufreq (VMs, containers without /sys)."""
    counts: Counter = Counter()
    for name in fs.listdir("/sys/devices/system/cpu"):
        m = CPU_DIR.match(name)
        if not m:
            continue
        g = _first_line(fs.read_text(GOVERNOR.format(m.group(1)), kind="host"))
        if g:
            counts[g] += 1
    return dict(sorted(counts.items())) or None


def thp(fs: Root) -> str | None:
    """The bracketed mode of `always [madvise] never`."""
    text = fs.read_text(THP, kind="host")
    if not text:
        return None
    m = re.search(r"\[(\w+)\]", text)
    return m.group(1) if m else text.strip() or None


def swap_total(fs: Root) -> int | None:
    text = fs.read_text(MEMINFO, kind="host")
    if not text:
        return None
    m = re.search(r"^SwapTotal:\s+(\d+)\s*kB", text, re.MULTILINE)
    return int(m.group(1)) * 1024 if m else None


def npu_numa(fs: Root, npu: Mapping[str, Any]) -> dict[str, int | None] | None:
    """{"npu <id>": NUMA node} from each device's PCI bus id (npu-smi) and the kernel's sysfs numa_node.

    `-1` (no affinity reported by firmware) is kept as None.
    """
    out: dict[str, int | None] = {}
    for d in npu.get("devices") or []:
        bus = d.get("bus_id") if isinstance(d, dict) else None
        if not bus:
            continue
        text = _first_line(fs.read_text(PCI_NUMA.format(_pci(bus)), kind="host"))
        if text is None:
            continue
        try:
            node = int(text)
        except ValueError:
            continue
        out[f"npu {d.get('id')}" + (f" chip {d['chip_id']}" if d.get("chip_id") else "")] = node if node >= 0 else None
    return out or None


def _pci(bus: str) -> str:
    """npu-smi prints `0000:C1:00.0`; sysfs names are lower-case."""
    return bus.strip().lower()


def _first_line(text: str | None) -> str | None:
    if not text:
        return None
    lines: list[str] = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[0] if lines else None
