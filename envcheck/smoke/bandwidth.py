"""Bandwidth maths for collective sweeps: algbw and busbw with the nccl-tests factors, size parsing.

nccl-tests (doc/PERFORMANCE.md) defines ``algbw = S / t`` and ``busbw = algbw * factor`` where the
factor depends on the collective and the world size ``n``:

========================  ==============
collective                factor
========================  ==============
all_reduce                ``2(n-1)/n``
reduce_scatter            ``(n-1)/n``
all_gather                ``(n-1)/n``
all_to_all                ``(n-1)/n``
broadcast, reduce         ``1``
========================  ==============

For all_gather and reduce_scatter ``S`` is the *total* array size (``count * dtype * n``), i.e. the
size of the gathered output / of the un-scattered input. Bandwidths are in GB/s with GB = 1e9 bytes,
as nccl-tests prints them. hccl_test prints only algbw; envcheck prints both.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

KIB = 1024
MIB = 1024 * 1024
GIB = 1024 * MIB
DEFAULT_MIN_SIZE = KIB
DEFAULT_MAX_SIZE = 64 * MIB

_FACTORS = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
}

_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgKMG]?)(i?[bB])?\s*$")
_UNITS = {"": 1, "k": KIB, "m": MIB, "g": GIB}


def bus_factor(op: str, world: int) -> float:
    """The nccl-tests bus-bandwidth factor of collective `op` on `world` ranks."""
    try:
        fn = _FACTORS[op]
    except KeyError:
        raise ValueError(f"no bus-bandwidth factor for collective {op!r}") from None
    if world < 1:
        raise ValueError(f"world size must be >= 1, got {world}")
    return fn(world)


def algbw(nbytes: float, seconds: float) -> float:
    """Algorithm bandwidth in GB/s (1e9 bytes): bytes moved by the collective divided by its time."""
    if seconds <= 0:
        return float("inf")
    return nbytes / seconds / 1e9


def busbw(op: str, nbytes: float, seconds: float, world: int) -> float:
    """Bus bandwidth in GB/s per nccl-tests: ``algbw(nbytes, seconds) * bus_factor(op, world)``.

    `nbytes` is S as nccl-tests defines it: the buffer size for all_reduce and broadcast, the total
    (all ranks) size for all_gather and reduce_scatter.
    """
    return algbw(nbytes, seconds) * bus_factor(op, world)


def parse_size(text: str) -> int:
    """'64M', '1KiB', '4096', '1.5G' -> bytes (binary units). Raises ValueError on anything else."""
    m = _SIZE_RE.match(str(text))
    if not m:
        raise ValueError(f"not a size: {text!r} (examples: 4096, 1K, 64M, 1G)")
    value = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if value < 1 or value != int(value):
        raise ValueError(f"not a whole positive number of bytes: {text!r}")
    return int(value)


def size_sweep(min_size: int = DEFAULT_MIN_SIZE, max_size: int = DEFAULT_MAX_SIZE, factor: int = 2) -> list[int]:
    """Sizes from min_size to max_size multiplying by `factor` (nccl-tests `-b -e -f`)."""
    if min_size < 1 or max_size < min_size or factor < 2:
        raise ValueError(f"bad sweep: min {min_size}, max {max_size}, factor {factor}")
    sizes, s = [], min_size
    while s <= max_size:
        sizes.append(s)
        s *= factor
    return sizes


def human_size(nbytes: int) -> str:
    """4096 -> '4K', 67108864 -> '64M' (binary units, as the sweep flags take them)."""
    for unit, mult in (("G", GIB), ("M", MIB), ("K", KIB)):
        if nbytes >= mult and nbytes % mult == 0:
            return f"{nbytes // mult}{unit}"
    return f"{nbytes}B"


def format_table(rows: Iterable[Mapping[str, Any]]) -> str:
    """Render sweep rows ({op, bytes, seconds, algbw, busbw, ok, note}) as an nccl-tests-like table."""
    head = f"{'op':<15} {'size':>8} {'time(us)':>11} {'algbw(GB/s)':>12} {'busbw(GB/s)':>12}  check"
    lines = [head]
    for r in rows:
        ok = r.get("ok")
        check = "ok" if ok else ("WRONG" if ok is False else "-")
        note = f"  ({r['note']})" if r.get("note") else ""
        lines.append(f"{str(r['op']):<15} {human_size(int(r['bytes'])):>8} {float(r['seconds']) * 1e6:>11.1f} "
                     f"{float(r['algbw']):>12.3f} {float(r['busbw']):>12.3f}  {check}{note}")
    return "\n".join(lines)


def average_busbw(rows: Sequence[Mapping[str, Any]], op: str) -> float | None:
    """Mean busbw of `op` over the sweep, the figure nccl-tests compares with its floor."""
    vals = [float(r["busbw"]) for r in rows if r["op"] == op]
    return sum(vals) / len(vals) if vals else None
