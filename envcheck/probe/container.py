"""Is this a container, and were the Ascend devices and the driver handed into it completely?

Signals: `/.dockerenv` (Docker), `/run/.containerenv` (Podman), container names in `/proc/1/cgroup`
(docker, kubepods, containerd, lxc). The Ascend Docker Runtime (Ascend/ascend-docker-runtime README)
mounts the NPUs named by ASCEND_VISIBLE_DEVICES in a prestart hook, plus the management devices and the
driver's user-space libraries; without it `docker run` must pass them by hand (`--device /dev/davinciN`,
`/dev/davinci_manager`, `/dev/devmm_svm`, `/dev/hisi_hdc`, `-v /usr/local/Ascend/driver:...`).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from envcheck.probe.fs import Root

MGMT_DEVICES = ("davinci_manager", "devmm_svm", "hisi_hdc")
DRIVER = "/usr/local/Ascend/driver"
DRIVER_PARTS = ("lib64", "topo", "tools", "version.info", "include")
CGROUP_HINT = re.compile(r"docker|kubepods|containerd|libpod|lxc", re.IGNORECASE)


def probe(fs: Root, environ: Mapping[str, str], davinci: list[int]) -> dict[str, Any]:
    signals = []
    if fs.exists("/.dockerenv"):
        signals.append("/.dockerenv")
    if fs.exists("/run/.containerenv"):
        signals.append("/run/.containerenv")
    cg = fs.read_text("/proc/1/cgroup", kind="host") or ""
    m = CGROUP_HINT.search(cg)
    if m:
        signals.append(f"/proc/1/cgroup mentions {m.group(0)}")
    runtime = ("podman" if "/run/.containerenv" in signals else "docker" if "/.dockerenv" in signals
               else ("kubernetes" if m and m.group(0).lower() == "kubepods" else (m.group(0).lower() if m else None)))
    driver = {part: fs.exists(f"{DRIVER}/{part}") for part in DRIVER_PARTS}
    return {
        "in_container": bool(signals),
        "signals": signals,
        "engine": runtime,
        "davinci": list(davinci),
        "mgmt_devices": {name: fs.exists(f"/dev/{name}") for name in MGMT_DEVICES},
        "driver_dir": driver if fs.isdir(DRIVER) else None,
        "ascend_visible_devices": environ.get("ASCEND_VISIBLE_DEVICES"),
        "ascend_rt_visible_devices": environ.get("ASCEND_RT_VISIBLE_DEVICES"),
        "ascend_runtime_options": environ.get("ASCEND_RUNTIME_OPTIONS"),
    }
