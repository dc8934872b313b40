"""OS, kernel, arch, glibc, CPU count, /dev/shm size and network interfaces of this host.

Host-level facts that are not files (interfaces, the size of /dev/shm's filesystem) come from the
live machine when the root is ``/``. Under another ``--root`` they are read from an optional
fixture file ``<root>/envcheck-host.json`` (``{"shm_bytes": N, "interfaces": {name: [addr]}}``);
without it they are left unknown (None) rather than describing the wrong machine.
"""
from __future__ import annotations

import json
import os
import platform
import socket
from typing import Any

from envcheck.probe.fs import Root, parse_kv

HOST_FILE = "envcheck-host.json"


def probe(fs: Root) -> dict[str, Any]:
    live = fs.root == "/"
    host = {} if live else _host_file(fs)
    out: dict[str, Any] = {
        "os": platform.system(),
        "distro": _distro(fs),
        "kernel": platform.release(),
        "arch": platform.machine(),
        "glibc": glibc(),
        "hostname": socket.gethostname(),
        "cpu_count": os.cpu_count(),
    }
    if live:
        out["shm_bytes"] = shm_bytes("/dev/shm", fs)
        out["interfaces"] = interfaces(fs)
        out.update(cpu_and_memory())
        out.update(limits_and_numa())
    else:
        for key in ("shm_bytes", "interfaces", "cpu_model", "mem_total_bytes", "numa_nodes",
                    "open_files_limit", "memlock_limit"):
            out[key] = host.get(key)
    return out


CPU_IMPLEMENTERS = {"0x48": "HiSilicon (Kunpeng)", "0x41": "Arm", "0x70": "Phytium"}


def cpu_and_memory() -> dict[str, Any]:
    """CPU model (x86 'model name', or the aarch64 implementer) and MemTotal, from /proc."""
    out: dict[str, Any] = {"cpu_model": None, "mem_total_bytes": None}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            head = fh.read(8192)
    except OSError:
        head = ""
    for line in head.splitlines():
        key, _, val = line.partition(":")
        key, val = key.strip().lower(), val.strip()
        if key == "model name" and val:
            out["cpu_model"] = val
            break
        if key == "cpu implementer" and out["cpu_model"] is None:
            out["cpu_model"] = CPU_IMPLEMENTERS.get(val.lower(), f"implementer {val}")
    try:
        with open("/proc/meminfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    out["mem_total_bytes"] = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    return out


def limits_and_numa() -> dict[str, Any]:
    """NUMA node count (NPU/CPU affinity) and the open-files / locked-memory limits that
    data-loader workers and HCCL run into; None when unknown, -1 for unlimited."""
    out: dict[str, Any] = {"numa_nodes": None, "open_files_limit": None, "memlock_limit": None}
    try:
        out["numa_nodes"] = sum(1 for n in os.listdir("/sys/devices/system/node")
                                if n.startswith("node") and n[4:].isdigit()) or None
    except OSError:
        pass
    try:
        import resource

        for key, which in (("open_files_limit", resource.RLIMIT_NOFILE), ("memlock_limit", resource.RLIMIT_MEMLOCK)):
            soft = resource.getrlimit(which)[0]
            out[key] = -1 if soft == resource.RLIM_INFINITY else soft
    except (ImportError, OSError, ValueError, AttributeError):
        pass
    return out


def glibc() -> str | None:
    """'2.36' from the running C library (never from --root: the interpreter is what runs)."""
    try:
        s = os.confstr("CS_GNU_LIBC_VERSION")  # 'glibc 2.36'
    except (ValueError, OSError, AttributeError):
        s = None
    if s and s.startswith("glibc "):
        return s.split()[1]
    lib, ver = platform.libc_ver()
    return ver if lib == "glibc" and ver else None


def _distro(fs: Root) -> str | None:
    text = fs.read_text("/etc/os-release", kind="os-release")
    if not text:
        return None
    kv = parse_kv(text)
    return kv.get("PRETTY_NAME") or " ".join(x for x in (kv.get("NAME"), kv.get("VERSION_ID")) if x) or None


def shm_bytes(path: str, fs: Root) -> int | None:
    try:
        st = os.statvfs(path)
    except OSError as exc:
        fs.note("system:/dev/shm", exc.strerror or str(exc))
        return None
    return st.f_blocks * st.f_frsize


def _host_file(fs: Root) -> dict[str, Any]:
    text = fs.read_text("/" + HOST_FILE, kind="fixture")
    if not text:
        return {}
    try:
        doc = json.loads(text)
    except ValueError as exc:
        fs.note(f"fixture:/{HOST_FILE}", f"not JSON: {exc}")
        return {}
    return doc if isinstance(doc, dict) else {}


def interfaces(fs: Root) -> dict[str, list[str]] | None:
    """{name: [IPv4 and IPv6 addresses]} of this host, read without privileges."""
    try:
        names = [name for _, name in socket.if_nameindex()]
    except OSError as exc:
        fs.note("system:interfaces", exc.strerror or str(exc))
        return None
    out: dict[str, list[str]] = {n: [] for n in names}
    for name, addr in _ipv4():
        out.setdefault(name, []).append(addr)
    for name, addr in _ipv6():
        out.setdefault(name, []).append(addr)
    return out


def _ipv4() -> list[tuple[str, str]]:
    """Every IPv4 address via SIOCGIFCONF (aliases such as eth0:1 are folded into eth0)."""
    import array
    import fcntl
    import struct

    SIOCGIFCONF = 0x8912
    size = 40  # sizeof(struct ifreq) on 64-bit Linux
    buf = array.array("B", b"\0" * size * 128)
    out: list[tuple[str, str]] = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            res = fcntl.ioctl(s.fileno(), SIOCGIFCONF, struct.pack("iL", len(buf), buf.buffer_info()[0]))
        except OSError:
            return out
        length = struct.unpack("iL", res)[0]
        raw = buf.tobytes()[:length]
        for off in range(0, length, size):
            name = raw[off:off + 16].split(b"\0", 1)[0].decode(errors="replace").split(":", 1)[0]
            out.append((name, socket.inet_ntoa(raw[off + 20:off + 24])))
    return out


def _ipv6() -> list[tuple[str, str]]:
    """IPv6 addresses from /proc/net/if_inet6 (address, index, prefix, scope, flags, name)."""
    out: list[tuple[str, str]] = []
    try:
        with open("/proc/net/if_inet6", encoding="ascii") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 6 and len(parts[0]) == 32:
                    packed = bytes.fromhex(parts[0])
                    out.append((parts[5], socket.inet_ntop(socket.AF_INET6, packed)))
    except (OSError, ValueError):
        pass
    return out
