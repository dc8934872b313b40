"""NPU driver and firmware versions from version.info, rooted at /etc/ascend_install.info's install paths."""
from __future__ import annotations

from typing import Any

from envcheck.probe.fs import Root, first, parse_kv

INSTALL_INFO = "/etc/ascend_install.info"
DEFAULT_BASE = "/usr/local/Ascend"


def probe(fs: Root) -> dict[str, Any]:
    """Facts.driver: install_path, version, version_source, firmware_version, firmware_source."""
    info = parse_kv(fs.read_text(INSTALL_INFO) or "")
    drv_base = (info.get("Driver_Install_Path_Param") or DEFAULT_BASE).rstrip("/") or "/"
    fw_base = (info.get("Firmware_Install_Path_Param") or drv_base).rstrip("/") or "/"
    drv_dir = _join(drv_base, "driver")
    version, vsrc, drv_pkg = read_version(fs, _join(drv_dir, "version.info"), driver=True)
    fw_version, fsrc, fw_pkg = read_version(fs, _join(fw_base, "firmware", "version.info"), driver=False)
    return {
        "install_path": drv_base,
        "install_info": INSTALL_INFO if info else None,
        "present": fs.isdir(drv_dir),
        "version": version,
        "version_source": vsrc,
        "firmware_version": fw_version,
        "firmware_source": fsrc,
        "firmware_package_version": fw_pkg,
        "tools": {name: fs.isfile(_join(drv_dir, "tools", name)) for name in ("hccn_tool",)},
    }


def read_version(fs: Root, path: str, driver: bool) -> tuple[str | None, str | None, str | None]:
    """(version, source, package_version). Driver prefers package_version; firmware keeps its 5-part Version."""
    text = fs.read_text(path)
    if text is None:
        return None, None, None
    kv = parse_kv(text)
    pkg = kv.get("package_version") or None
    # Match keys exactly: ascendhal_version= etc. also contain "version" (research §1.3).
    _, ver = first(kv, "Version", "DriverVersion", "version")
    if driver and pkg:
        ver = pkg
    if not ver:
        fs.note(f"file:{path}", "no Version= line (truncated or not a version file)")
        return None, None, None
    return ver, path, pkg


def _join(*parts: str) -> str:
    return "/" + "/".join(p.strip("/") for p in parts if p.strip("/"))
