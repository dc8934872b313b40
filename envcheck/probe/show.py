"""Text rendering of Facts for `envcheck probe`: a grouped, readable summary (``-v`` adds sources).

It reads each section through its Mapping view (the values as the probe or a snapshot wrote them, a
wrong-typed one included), so what is shown is what was read."""
from __future__ import annotations

from typing import Any

from envcheck.model import Facts
from envcheck.redact import redact_value

INDENT = "    "


def render_facts(facts: Facts, verbose: bool = False) -> str:
    out: list[str] = []
    for title, lines in (("System", _system(facts, verbose)), ("Python", _python(facts, verbose)),
                         ("CANN", _cann(facts, verbose)), ("Driver & firmware", _driver(facts, verbose)),
                         ("NPUs", _npu(facts, verbose)), ("Environment", _env(facts)),
                         ("Probe errors", _errors(facts))):
        if lines:
            out.append(title)
            out.extend(INDENT + redact_value(ln) for ln in lines)
            out.append("")
    if facts.root != "/":
        out.append(f"(read from --root {facts.root})")
    return "\n".join(out).rstrip() + "\n"


def _src(verbose: bool, source: str | None) -> str:
    return f"  [{source}]" if verbose and source else ""


def _system(f: Facts, verbose: bool) -> list[str]:
    s = f.system
    lines = [f"OS        {s.get('distro') or s.get('os')}  ({s.get('os')} {s.get('kernel')}, {s.get('arch')})",
             f"glibc     {s.get('glibc') or 'unknown'}",
             f"host      {s.get('hostname')}, {s.get('cpu_count')} CPUs"
             + (f" ({s['cpu_model']})" if s.get("cpu_model") else "")
             + (f", {_gib(s['mem_total_bytes'])} RAM" if s.get("mem_total_bytes") else "")]
    shm = s.get("shm_bytes")
    lines.append(f"/dev/shm  {_gib(shm) if shm is not None else 'unknown'}")
    if s.get("numa_nodes") or s.get("open_files_limit") is not None:
        lim = s.get("open_files_limit")
        lines.append(f"limits    {s.get('numa_nodes') or '?'} NUMA node(s), open files "
                     f"{'unlimited' if lim == -1 else lim if lim is not None else 'unknown'}")
    ifaces = s.get("interfaces")
    if isinstance(ifaces, dict):
        lines.append("network   " + "; ".join(f"{n} {' '.join(a) or '-'}" for n, a in ifaces.items()))
    return lines


def _gib(n: int) -> str:
    return f"{n / 1024 ** 3:.1f} GiB" if n >= 1024 ** 3 else f"{n / 1024 ** 2:.0f} MiB"


def _python(f: Facts, verbose: bool) -> list[str]:
    p = f.python
    lines = [f"{p.get('implementation') or 'Python'} {p.get('version')}  {p.get('executable')}"]
    files = p.get("package_files") or {}
    for dist, ver in (p.get("packages") or {}).items():
        if ver or verbose:
            lines.append(f"{dist:<14}{ver or 'not installed'}{_src(verbose, files.get(dist))}")
    if p.get("torch_npu_requires"):
        lines.append(f"torch_npu requires {p['torch_npu_requires']}")
    return lines


def _cann(f: Facts, verbose: bool) -> list[str]:
    installs = f.cann.get("installs") or []
    if not installs:
        return ["no CANN toolkit found"]
    lines: list[str] = []
    for i, inst in enumerate(installs):
        tags = [inst.get("layout") or "?"]
        if inst.get("latest"):
            tags.append("latest")
        if i == f.cann.get("active"):
            tags.append("active")
        lines.append(f"{inst.get('version') or '?'}  {inst.get('home')}  ({', '.join(tags)})"
                     + _src(verbose, inst.get("source")))
        if inst.get("realpath") != inst.get("home"):
            lines.append(f"    real dir  {inst.get('realpath')}")
        if inst.get("set_env") and verbose:
            lines.append(f"    set_env   {inst['set_env']}")
        comps = inst.get("components") or {}
        if comps:
            lines.append("    " + ", ".join(f"{n} {c.get('version')}" for n, c in comps.items()))
            if verbose:
                lines.extend(f"      {n}: {c.get('source')}" for n, c in comps.items())
        for k in inst.get("kernels") or []:
            kernel = f"    kernels   {k.get('name')} {k.get('version') or ''}".rstrip()
            lines.append(kernel + _src(verbose, k.get("source")))
        for n in inst.get("nnal") or []:
            lines.append(f"    nnal      {n.get('name')} {n.get('version')}" + _src(verbose, n.get("source")))
    return lines


def _driver(f: Facts, verbose: bool) -> list[str]:
    d = f.driver
    if not d.get("version") and not d.get("present"):
        return [f"no driver ({d.get('install_path') or '/usr/local/Ascend'}/driver missing)"]
    return [f"driver    {d.get('version') or 'unreadable'}" + _src(verbose, d.get("version_source")),
            f"firmware  {d.get('firmware_version') or 'not found'}" + _src(verbose, d.get("firmware_source"))]


def _npu(f: Facts, verbose: bool) -> list[str]:
    n = f.npu
    lines: list[str] = []
    if n.get("available"):
        lines.append(f"npu-smi   {n.get('path')}" + (f" (npu-smi {n['tool_version']}, driver {n.get('version')})"
                                                      if n.get("tool_version") else ""))
    if n.get("error"):
        lines.append(f"error     {n['error']}")
    devs: list[dict[str, Any]] = n.get("devices") or []
    if devs:
        lines.append(f"devices   {len(devs)} × {n.get('chip')}" +
                     (f" on {n.get('npu_count')} cards" if n.get("npu_count") not in (None, len(devs)) else ""))
        for d in devs if verbose or len(devs) <= 16 else devs[:16]:
            mem = (f"HBM {d['hbm_used_mb']}/{d['hbm_total_mb']} MB" if d.get("hbm_total_mb") else
                   f"mem {d.get('memory_used_mb')}/{d.get('memory_total_mb')} MB")
            lines.append(f"  NPU {d.get('id'):<5} chip {d.get('chip_id')}  {d.get('name'):<10} {d.get('health'):<8}"
                         f" {mem}  {d.get('bus_id') or ''}".rstrip())
    for p in n.get("processes") or []:
        lines.append(f"  process pid {p.get('pid')} {p.get('name')} on NPU {p.get('device')} "
                     f"({p.get('memory_mb')} MB)")
    dav = n.get("dev_davinci") or []
    lines.append(f"/dev      {len(dav)} davinci device(s)" if dav else "/dev      no /dev/davinci*")
    return lines


def _env(f: Facts) -> list[str]:
    env = f.env or {}
    return [f"{k}={v}" for k, v in env.items() if k != "PATH"] or ["(no Ascend / distributed variables set)"]


def _errors(f: Facts) -> list[str]:
    return [f"{k}: {v}" for k, v in (f.probe_errors or {}).items()]
