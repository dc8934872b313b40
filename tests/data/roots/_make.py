"""Regenerate the fixture sysroots in this folder from the real samples in shared/research/samples.

Run: python tests/data/roots/_make.py   (rewrites every tree; the trees are committed, so tests
never need this script or the research folder). See README.md here for what each tree models.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SAMPLES = HERE.parents[3] / "shared" / "research" / "samples"
TREES = ("root-910b-8.2", "nonroot-home", "cann-no-driver", "broken", "new-8.5")


def sample(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


class Tree:
    def __init__(self, name: str) -> None:
        self.top = HERE / name
        if self.top.exists() or self.top.is_symlink():
            shutil.rmtree(self.top)
        self.top.mkdir()

    def file(self, path: str, text: str | bytes, mode: int | None = None) -> None:
        p = self.top / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            p.write_bytes(text)
        else:
            p.write_text(text, encoding="utf-8", newline="")
        if mode:
            p.chmod(mode)

    def dir(self, path: str) -> None:
        """An empty directory git can keep."""
        self.file(path.rstrip("/") + "/.keep", "")

    def link(self, path: str, target: str) -> None:
        p = self.top / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, p)

    def host(self, shm_gib: float, interfaces: dict) -> None:
        doc = {"_comment": "fixture-only host facts (not filesystem): read by envcheck.probe.system under --root",
               "shm_bytes": int(shm_gib * 1024 ** 3), "interfaces": interfaces}
        self.file("envcheck-host.json", json.dumps(doc, indent=2) + "\n")

    def os_release(self, pretty: str, id_: str, version: str) -> None:
        self.file("etc/os-release", f'NAME="{pretty.split()[0]}"\nVERSION_ID="{version}"\nID={id_}\nPRETTY_NAME="{pretty}"\n')

    def devices(self, n: int) -> None:
        for i in range(n):
            self.file(f"dev/davinci{i}", "")
        self.file("dev/davinci_manager", "")
        self.file("dev/devmm_svm", "")
        self.file("dev/hisi_hdc", "")


def component(version_dir: str, internal: str, ts: str = "20250724_194044950") -> str:
    """Component version.info in the generator format of toolkit-version-info-8.2.RC1.info."""
    major = ".".join(version_dir.split(".")[:2])
    return (f"Version={internal}\nversion_dir={version_dir}\ntimestamp={ts}\n"
            f'required_package_runtime_version="{major}"\n')


def toolkit_info(version: str, arch: str, path: str, inner: str = "V100R001C22SPC001B231") -> str:
    base = sample("ascend_toolkit_install-8.2.RC1-aarch64.info")
    return (base.replace("version=8.2.RC1", f"version={version}")
            .replace("innerversion=V100R001C22SPC001B231", f"innerversion={inner}")
            .replace("arch=aarch64", f"arch={arch}")
            .replace("path=/usr/local/Ascend/ascend-toolkit/8.2.RC1/aarch64-linux", f"path={path}"))


def version_cfg(release: str, inner: str = "7.7.T20.0.B210") -> str:
    comps = ("runtime", "compiler", "hccl", "opp", "toolkit", "aoe", "ncs", "opp_kernel")
    lines = ["# version: 1.0"]
    for kind in ("running", "upgrade", "installed"):
        lines += [f"{c}_{kind}_version=[{inner}:{release}]" for c in comps]
    return "\n".join(lines) + "\n"


def classic_release(t: Tree, base: str, rel: str, arch: str, internal: str,
                    comps=("runtime", "compiler", "hccl", "opp", "toolkit")) -> None:
    d = f"{base}/ascend-toolkit/{rel}"
    t.file(f"{d}/{arch}-linux/ascend_toolkit_install.info", toolkit_info(rel, arch, f"{d}/{arch}-linux"))
    t.dir(f"{d}/{arch}-linux/lib64")
    for c in comps:
        t.file(f"{d}/{c}/version.info", component(rel, internal))


def classic_latest(t: Tree, base: str, rel: str, arch: str, links: dict | None = None) -> None:
    lat = f"{base}/ascend-toolkit/latest"
    t.file(f"{lat}/{arch}-linux/ascend_toolkit_install.info",
           toolkit_info(rel, arch, f"{base}/ascend-toolkit/{rel}/{arch}-linux"))
    t.dir(f"{lat}/{arch}-linux/lib64")
    t.link(f"{lat}/lib64", f"{arch}-linux/lib64")
    if arch == "aarch64":
        t.link(f"{lat}/arm64-linux", "aarch64-linux")
    targets = {c: rel for c in ("runtime", "compiler", "hccl", "opp", "toolkit", "opp_kernel")}
    targets.update(links or {})
    for c, r in targets.items():
        t.link(f"{lat}/{c}", f"../{r}/{c}")
    t.link(f"{lat}/acllib", f"../{targets['runtime']}/runtime")
    t.link(f"{lat}/ops", f"../{targets['opp']}/opp")


def set_env(home: str) -> str:
    """The ≤8.3 export list (research sample), rooted at this install."""
    return "#!/bin/sh\n" + sample("set_env-toolkit-exports-nonroot-home-install.sh").replace(
        "/home/phyww/Ascend/ascend-toolkit/latest", home)


def root_910b() -> None:
    """(a) root install on an 8 x 910B4 machine: driver 25.0.rc1.1, CANN 8.2.RC1 (+8.1.RC1 kept), NNAL."""
    t = Tree("root-910b-8.2")
    A = "/usr/local/Ascend"
    t.os_release("Ubuntu 22.04.4 LTS", "ubuntu", "22.04")
    t.file("etc/ascend_install.info", sample("etc-ascend_install.info-with-install-mode.txt"))
    t.file("etc/Ascend/ascend_cann_install.info", sample("etc-Ascend-ascend_cann_install.info-root-8.0.txt"))
    t.file(f"{A}/driver/version.info", sample("driver-version-910b-25.0.rc1.1.info"))
    t.dir(f"{A}/driver/lib64/driver")
    t.dir(f"{A}/driver/lib64/common")
    t.file(f"{A}/driver/tools/hccn_tool", "#!/bin/sh\nexit 0\n", 0o755)
    t.file(f"{A}/firmware/version.info", sample("firmware-version-910b-7.7.0.1.231.info"))
    t.file(f"{A}/ascend-toolkit/set_env.sh", set_env(f"{A}/ascend-toolkit/latest"))
    classic_release(t, A, "8.2.RC1", "aarch64", "8.2.0.0.201")
    t.file(f"{A}/ascend-toolkit/8.2.RC1/toolkit/version.info", sample("toolkit-version-info-8.2.RC1.info"))
    t.file(f"{A}/ascend-toolkit/8.2.RC1/opp_kernel/version.info", sample("opp_kernel-version-info-8.2.RC1.info"))
    t.dir(f"{A}/ascend-toolkit/8.2.RC1/opp/built-in/op_impl/ai_core/tbe/kernel/ascend910b")
    classic_release(t, A, "8.1.RC1", "aarch64", "8.1.0.0.201", comps=("runtime", "compiler", "opp", "toolkit"))
    classic_latest(t, A, "8.2.RC1", "aarch64")
    t.file(f"{A}/ascend-toolkit/latest/version.cfg", version_cfg("8.2.RC1"))
    t.file(f"{A}/nnal/atb/latest/version.info", sample("nnal-atb-version-info-8.2.RC1.info"))
    t.dir(f"{A}/nnal/atb/latest/atb/cxx_abi_1/lib")
    t.devices(8)
    t.host(256, {"lo": ["127.0.0.1", "::1"], "enp189s0f0": ["10.10.1.11", "fe80::1a2b:3cff:fe4d:5e6f"],
                 "docker0": ["172.17.0.1"]})


def nonroot() -> None:
    """(b) non-root CANN 8.1.RC1 under /home/alice/Ascend (8.1.T6 also installed), root-installed driver 24.1.rc1."""
    t = Tree("nonroot-home")
    A, H = "/usr/local/Ascend", "/home/alice/Ascend"
    t.os_release("openEuler 22.03 (LTS-SP4)", "openEuler", "22.03")
    t.file("etc/ascend_install.info", sample("etc-ascend_install.info-driver-firmware.txt"))
    t.file(f"{A}/driver/version.info", sample("driver-version-24.1.rc1.info"))
    t.file(f"{A}/firmware/version.info", sample("firmware-version-7.1.0.11.220.info"))
    t.file(f"{H}/ascend-toolkit/set_env.sh", set_env(f"{H}/ascend-toolkit/latest"))
    classic_release(t, H, "8.1.RC1", "x86_64", "8.1.0.0.201", comps=("runtime", "compiler", "hccl", "opp", "toolkit", "opp_kernel"))
    classic_release(t, H, "8.1.T6", "x86_64", "8.1.0.0.060", comps=("runtime", "compiler", "opp", "toolkit"))
    t.file(f"{H}/ascend-toolkit/8.1.RC1/x86_64-linux/ascend_toolkit_install.info",
           sample("ascend_toolkit_install-8.1.RC1-x86_64.info").replace("/usr/local/Ascend", H))
    classic_latest(t, H, "8.1.RC1", "x86_64")
    t.file(f"{H}/ascend-toolkit/latest/version.cfg", sample("version-cfg-8.1.RC1-multi-installed.cfg"))
    t.file(f"{H}/nnal/atb/latest/version.info", sample("nnal-atb-version-info-8.0.T63.info"))
    t.devices(16)
    t.host(0.0625, {"lo": ["127.0.0.1"], "eth0": ["192.168.3.20"]})


def no_driver() -> None:
    """(c) a build/CI container: CANN 8.1.RC1 toolkit whose compiler was left at 8.0.RC3, no driver, no NPU."""
    t = Tree("cann-no-driver")
    A = "/usr/local/Ascend"
    t.os_release("Ubuntu 20.04.6 LTS", "ubuntu", "20.04")
    t.file("etc/Ascend/ascend_cann_install.info", sample("etc-Ascend-ascend_cann_install.info-root-8.0.txt"))
    t.file(f"{A}/ascend-toolkit/set_env.sh", set_env(f"{A}/ascend-toolkit/latest"))
    classic_release(t, A, "8.1.RC1", "x86_64", "8.1.0.0.201")
    t.file(f"{A}/ascend-toolkit/8.1.RC1/x86_64-linux/ascend_toolkit_install.info",
           sample("ascend_toolkit_install-8.1.RC1-x86_64.info"))
    classic_release(t, A, "8.0.RC3", "x86_64", "8.0.0.0.301", comps=("compiler",))
    classic_latest(t, A, "8.1.RC1", "x86_64", links={"compiler": "8.0.RC3"})
    (t.top / A.lstrip("/") / "ascend-toolkit/latest/opp_kernel").unlink()  # no kernels package
    t.host(8, {"lo": ["127.0.0.1"], "eth0": ["172.18.0.5"]})


def broken() -> None:
    """(d) broken files: binary, truncated, CRLF, a directory where a file belongs, an ELOOP pair, garbage driver."""
    t = Tree("broken")
    A = "/usr/local/Ascend"
    t.file("etc/ascend_install.info", sample("etc-ascend_install.info-driver-firmware.txt"))
    t.file(f"{A}/driver/version.info", "<html><body>404 Not Found</body></html>\n")
    t.file(f"{A}/firmware/version.info", b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00")
    d = f"{A}/ascend-toolkit/8.2.RC1"
    crlf = sample("ascend_toolkit_install-8.2.RC1-aarch64.info").replace("\n", "\r\n")
    t.file(f"{d}/aarch64-linux/ascend_toolkit_install.info", crlf)
    t.file(f"{d}/runtime/version.info", "timestamp=00000000_000000000\n")  # the ACL unit-test shape: no Version=
    t.file(f"{d}/toolkit/version.info", b"Version=8.2.0.0.201\x00\x00\x00\x00\xff\xfe")
    t.dir(f"{d}/compiler/version.info")  # a directory where the file belongs: unreadable even as root
    t.file(f"{d}/opp/version.info", "Vers")  # truncated mid-key
    t.file(f"{d}/version.cfg", b"runtime_running_version=[7.7.T20.0.B210:8.2.RC1\xe9]\n")  # Latin-1, not UTF-8
    # cann -> ascend-toolkit/latest -> /usr/local/Ascend/cann: the hand-made ELOOP of research §2.7
    t.link(f"{A}/ascend-toolkit/latest", "/usr/local/Ascend/cann")
    t.link(f"{A}/cann", "ascend-toolkit/latest")
    t.host(2, {"lo": ["127.0.0.1"], "eth0": ["10.0.0.7"]})


def new_85() -> None:
    """(e) CANN 8.5.0 new layout: cann-8.5.0 real dir, absolute cann/latest links, share/info, ops package."""
    t = Tree("new-8.5")
    A = "/usr/local/Ascend"
    C = f"{A}/cann-8.5.0"
    t.os_release("Ubuntu 22.04.5 LTS", "ubuntu", "22.04")
    t.file("etc/ascend_install.info", sample("etc-ascend_install.info-with-install-mode.txt"))
    t.file("etc/Ascend/ascend_cann_install.info",
           sample("etc-Ascend-ascend_cann_install.info-root-8.5.2.txt").replace("cann-8.5.2", "cann-8.5.0"))
    t.file(f"{A}/driver/version.info", sample("driver-version-910b-25.0.rc1.1.info"))
    t.file(f"{A}/firmware/version.info", sample("firmware-version-910b-7.7.0.1.231.info"))
    t.file(f"{C}/set_env.sh", f'#!/bin/bash\nversion_dirpath="{C}"\nexport ASCEND_TOOLKIT_HOME="$version_dirpath"\n'
                              'export ASCEND_HOME_PATH="$ASCEND_TOOLKIT_HOME"\n')
    t.file(f"{C}/aarch64-linux/ascend_toolkit_install.info", sample("ascend_toolkit_install-8.5.0-aarch64-newlayout.info"))
    t.file(f"{C}/aarch64-linux/ascend_ops_install.info",
           "package_name=Ascend-cann-910b-ops\nversion=8.5.0\narch=aarch64\nos=linux\n"
           f"path={C}/aarch64-linux\n")
    t.dir(f"{C}/aarch64-linux/lib64")
    t.link(f"{C}/lib64", "aarch64-linux/lib64")
    for pkg in ("runtime", "hccl", "bisheng-compiler", "oam-tools", "ops-legacy"):
        t.file(f"{C}/share/info/{pkg}/version.info", "Version=8.5.0\n")
    t.file(f"{C}/share/info/ascendnpu-ir/version.info", "Version=1.2.0\n")
    t.file(f"{C}/opp/version.info", sample("opp-version-info-8.5.0.info"))
    t.link(f"{A}/cann", C)
    t.link(f"{A}/ascend-toolkit/latest", f"{A}/cann")
    t.link(f"{A}/ascend-toolkit/set_env.sh", f"{A}/ascend-toolkit/latest/set_env.sh")
    t.devices(8)
    t.host(64, {"lo": ["127.0.0.1", "::1"], "eth0": ["10.20.0.3"], "eth1": ["10.20.1.3"]})


def main() -> int:
    if not SAMPLES.is_dir():
        print(f"samples not found at {SAMPLES}", file=sys.stderr)
        return 1
    for make in (root_910b, nonroot, no_driver, broken, new_85):
        make()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
