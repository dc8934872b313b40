"""Regenerate the device-network / host / container fixture sysroots (`net-*`) in this folder.

Run: python tests/data/roots/_make_net.py   (the trees are committed; tests never run this).
Every hccn_tool answer is a copy of a recording in tests/data/hccn-tool/recordings (README there gives
each one's public source) with only the address / switch value / dates changed. See README.md here.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
REC = HERE.parent / "hccn-tool" / "recordings"
N = 8
# node-a device i: 10.86.1.(80+i), node-b: 10.86.2.(80+i); one /24 per node like the public capture's netmask
NODE_A = [f"10.86.1.{80 + i}" for i in range(N)]
NODE_B = [f"10.86.2.{80 + i}" for i in range(N)]
HOSTS = {"a": "10.10.1.11", "b": "10.10.1.12"}
OLD_STAT = "link-stat.txt"  # current time Wed Jun  7 10:08:28 2023; last change 17.6 h earlier


def old_stat(dev: int) -> str:
    """The capture with its change records moved a week back (Tue May 30 2023): a link that settled long ago."""
    return rec(OLD_STAT).replace("[device 0]", f"[device {dev}]").replace("Tue Jun  6", "Tue May 30")


def rec(name: str) -> str:
    return (REC / name).read_text(encoding="utf-8")


class Tree:
    def __init__(self, name: str) -> None:
        self.top = HERE / name
        if self.top.exists():
            shutil.rmtree(self.top)
        self.top.mkdir()

    def file(self, path: str, text: str, mode: int | None = None) -> None:
        p = self.top / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        if mode:
            p.chmod(mode)

    def host(self, ip: str, kernel: str = "5.10.0-182.0.0.95.oe2203sp3.aarch64", thp: str = "always",
             governor: str = "performance") -> None:
        doc = {"_comment": "fixture-only host facts (not filesystem): read by envcheck.probe.system under --root",
               "shm_bytes": 256 * 1024 ** 3, "interfaces": {"lo": ["127.0.0.1"], "enp189s0f0": [ip]}}
        self.file("envcheck-host.json", json.dumps(doc, indent=2) + "\n")
        for c in range(4):
            self.file(f"sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor", governor + "\n")
        modes = " ".join(f"[{m}]" if m == thp else m for m in ("always", "madvise", "never"))
        self.file("sys/kernel/mm/transparent_hugepage/enabled", modes + "\n")
        self.file("proc/meminfo", "MemTotal:       1584844800 kB\nSwapTotal:             0 kB\n")
        self.file("proc/sys/kernel/osrelease", kernel + "\n")

    def devices(self, n: int = N, mgmt: tuple = ("davinci_manager", "devmm_svm", "hisi_hdc")) -> None:
        for i in range(n):
            self.file(f"dev/davinci{i}", "")
        for m in mgmt:
            self.file(f"dev/{m}", "")

    def driver(self, whole: bool = True) -> None:
        self.file("usr/local/Ascend/driver/version.info", "Version=24.1.rc2\n")
        self.file("usr/local/Ascend/driver/lib64/.keep", "")
        if whole:
            self.file("usr/local/Ascend/driver/topo/.keep", "")
            self.file("usr/local/Ascend/driver/tools/.keep", "")

    def hccn(self, ips: list, reachable: list, tls: int = 0, override: dict | None = None) -> None:
        """The recording player at the fixed hccn_tool path, plus one recording per device and query."""
        tools = "usr/local/Ascend/driver/tools"
        self.file(f"{tools}/hccn_tool",
                  '#!/bin/sh\nd=$(cd "$(dirname "$0")" && pwd)\n'
                  'exec sh "$d/../../../../../../../hccn-tool/stub.sh" "$d/hccn-rec" "$@"\n', 0o755)
        self.file("usr/bin/ping",
                  '#!/bin/sh\nd=$(cd "$(dirname "$0")/../local/Ascend/driver/tools" && pwd)\n'
                  'exec sh "$d/../../../../../../../hccn-tool/stub.sh" "$d/hccn-rec" ping "$@"\n', 0o755)
        self.file(f"{tools}/hccn-rec/reachable", "\n".join(reachable) + "\n")
        conf = []
        for i, ip in enumerate(ips):
            answers = {
                "link": rec("link-up.txt"),
                "ip": rec("ip-ok.txt").replace("10.86.1.80", ip) if ip else rec("ip-none.txt"),
                "net_health": rec("net-health-success.txt"),
                "tls": rec("tls.txt").replace("dev_id:0", f"dev_id:{i}").replace("switch[0]", f"switch[{tls}]"),
                "link_stat": old_stat(i),
                "optical": rec("optical-present.txt"),
            }
            answers.update((override or {}).get(i, {}))
            for q, text in answers.items():
                self.file(f"{tools}/hccn-rec/{i}/{q}.txt", text)
            if ip:
                conf += [f"address_{i}={ip}", f"netmask_{i}=255.255.255.0"]
        self.file("etc/hccn.conf", "\n".join(conf) + "\n")


def base(name: str, ip: str = HOSTS["a"]) -> Tree:
    t = Tree(name)
    t.host(ip)
    t.devices()
    t.driver()
    return t


def main() -> None:
    reach_a = NODE_A + [HOSTS["a"], HOSTS["b"]] + [ip for i, ip in enumerate(NODE_B) if i != 3]
    reach_b = NODE_B + NODE_A + [HOSTS["a"], HOSTS["b"]]

    base("net-healthy").hccn(NODE_A, reach_a)
    base("net-node-b", HOSTS["b"]).hccn(NODE_B, reach_b, tls=1)
    base("net-link-down").hccn(NODE_A, reach_a, override={
        5: {"link": rec("link-down.txt"), "net_health": rec("net-health-fault.txt")}})
    flap = (rec(OLD_STAT).replace("[device 0]", "[device 2]").replace("link up count       : 2", "link up count       : 9")
            .replace("Tue Jun  6 16:32:12 2023", "Wed Jun  7 09:58:02 2023")
            .replace("Tue Jun  6 16:32:10 2023", "Wed Jun  7 09:57:40 2023"))
    base("net-flapping").hccn(NODE_A, reach_a, override={2: {"link_stat": flap}})
    base("net-tls-mismatch").hccn(NODE_A, reach_a, override={
        6: {"tls": rec("tls.txt").replace("dev_id:0", "dev_id:6").replace("switch[0]", "switch[1]")}})
    ips = list(NODE_A)
    ips[4] = ""
    ips[7] = NODE_A[0]
    base("net-missing-ip").hccn(ips, reach_a, override={5: {"optical": rec("optical-not-present.txt")}})
    t = Tree("net-no-hccn-tool")
    t.host(HOSTS["a"])
    t.devices()
    t.driver()
    t = Tree("net-container-half")
    t.host(HOSTS["a"], thp="madvise", governor="ondemand", kernel="4.19.90-vhulk2211.3.0.h1543.eulerosv2r10.aarch64")
    t.file(".dockerenv", "")
    t.devices(mgmt=("davinci_manager",))
    t.driver(whole=False)


if __name__ == "__main__":
    main()
