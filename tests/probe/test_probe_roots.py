"""The probe against every fixture sysroot in tests/data/roots (built from the real sample formats)."""
from __future__ import annotations

import errno
import os

import pytest
from conftest import DATA

from envcheck.probe import collect
from envcheck.probe.fs import ProbeError, Root, decode

ROOTS = DATA / "roots"


def facts_for(tree: str, **env: str):
    base = {"PATH": "/nonexistent-bin"}  # no npu-smi: these tests are about the filesystem side
    base.update(env)
    return collect(root=str(ROOTS / tree), environ=base)


def test_root_install_910b_classic_layout():
    f = facts_for("root-910b-8.2")
    installs = f.cann["installs"]
    active = f.active_cann()
    assert active["home"] == "/usr/local/Ascend/ascend-toolkit/latest"
    assert active["realpath"] == "/usr/local/Ascend/ascend-toolkit/8.2.RC1"  # latest/ is a dir of links
    assert active["version"] == "8.2.RC1" and active["latest"] is True and active["layout"] == "classic"
    assert active["source"].endswith("latest/aarch64-linux/ascend_toolkit_install.info")
    assert active["set_env"] == "/usr/local/Ascend/ascend-toolkit/set_env.sh"
    comps = active["components"]
    assert {c: comps[c]["version"] for c in comps} == {c: "8.2.RC1" for c in
                                                      ("runtime", "compiler", "hccl", "opp", "toolkit", "opp_kernel")}
    assert comps["toolkit"]["internal"] == "8.2.0.0.201"
    assert comps["toolkit"]["source"] == "/usr/local/Ascend/ascend-toolkit/latest/toolkit/version.info"
    kernels = {k["name"]: k for k in active["kernels"]}
    assert kernels["opp_kernel"]["version"] == "8.2.RC1" and "ascend910b" in kernels
    assert active["nnal"] == [{"name": "atb", "version": "8.2.RC1", "build": "8.2.RC1.B150",
                               "source": "/usr/local/Ascend/nnal/atb/latest/version.info"}]
    # the older release dir is a second install, not latest, and the same dir is never listed twice
    assert [i["version"] for i in installs] == ["8.2.RC1", "8.1.RC1"]
    assert installs[1]["latest"] is False
    assert len({i["realpath"] for i in installs}) == len(installs)
    assert f.driver["version"] == "25.0.rc1.1" and f.driver["firmware_version"] == "7.7.0.1.231"
    assert f.driver["version_source"] == "/usr/local/Ascend/driver/version.info"
    assert f.npu["dev_davinci"] == list(range(8))
    assert f.system["distro"] == "Ubuntu 22.04.4 LTS" and f.system["shm_bytes"] == 256 * 1024 ** 3
    assert f.probe_errors == {}


def test_ascend_home_path_picks_the_active_install():
    f = facts_for("root-910b-8.2", ASCEND_HOME_PATH="/usr/local/Ascend/ascend-toolkit/8.1.RC1")
    assert f.cann_version == "8.1.RC1"
    assert f.active_cann()["found_via"] == "$ASCEND_HOME_PATH"
    assert [i["latest"] for i in f.cann["installs"]] == [False, True]


def test_nonroot_install_found_through_home():
    f = facts_for("nonroot-home", HOME="/home/alice")
    active = f.active_cann()
    assert active["home"] == "/home/alice/Ascend/ascend-toolkit/latest"
    assert active["version"] == "8.1.RC1" and active["latest"]
    assert active["set_env"] == "/home/alice/Ascend/ascend-toolkit/set_env.sh"
    assert active["nnal"][0]["version"] == "8.0.T63"
    assert sorted(i["version"] for i in f.cann["installs"]) == ["8.1.RC1", "8.1.T6"]
    cfg = active["version_cfg"]  # the multi-installed version.cfg of vllm-ascend#629
    assert cfg["running"]["toolkit"] == "8.1.RC1"
    assert cfg["installed"]["opp_kernel"] == ["8.1.T6", "8.1.RC1", "8.1.RC1"]
    assert f.driver["version"] == "24.1.rc1"  # no package_version line: falls back to ^Version=
    assert f.system["shm_bytes"] == 64 * 1024 ** 2


def test_nonroot_install_invisible_without_home():
    f = facts_for("nonroot-home", HOME="/root")
    assert f.cann["installs"] == [] and f.cann["active"] is None


def test_cann_without_driver_and_mixed_components():
    f = facts_for("cann-no-driver")
    active = f.active_cann()
    assert active["version"] == "8.1.RC1"
    assert active["components"]["compiler"]["version"] == "8.0.RC3"
    assert active["components"]["runtime"]["version"] == "8.1.RC1"
    assert f.driver["version"] is None and f.driver["present"] is False
    assert f.npu["dev_davinci"] == [] and f.npu["available"] is False
    assert f.probe_errors == {}


def test_new_85_layout_absolute_links_stay_inside_root():
    f = facts_for("new-8.5")
    (inst,) = f.cann["installs"]
    assert inst["realpath"] == "/usr/local/Ascend/cann-8.5.0"
    assert inst["layout"] == "8.5+" and inst["latest"] is True and inst["version"] == "8.5.0"
    assert inst["source"] == "/usr/local/Ascend/cann-8.5.0/share/info/runtime/version.info"
    # ascendnpu-ir 1.2.0 lives in share/info too but is not a CANN component
    assert {c["version"] for c in inst["components"].values()} == {"8.5.0"}
    assert inst["components"]["compiler"]["source"].endswith("share/info/bisheng-compiler/version.info")
    assert inst["kernels"][0]["name"] == "Ascend-cann-910b-ops"
    assert inst["set_env"] == "/usr/local/Ascend/cann-8.5.0/set_env.sh"


def test_broken_files_become_probe_errors_not_tracebacks():
    f = facts_for("broken", ASCEND_HOME_PATH="/usr/local/Ascend/nonexistent")
    errs = f.probe_errors
    d = "/usr/local/Ascend/ascend-toolkit/8.2.RC1"
    assert "NUL" in errs[f"file:{d}/toolkit/version.info"]
    assert "directory" in errs[f"file:{d}/compiler/version.info"]
    assert "no Version=" in errs[f"file:{d}/runtime/version.info"]
    assert "no Version=" in errs[f"file:{d}/opp/version.info"]  # truncated to "Vers"
    assert "no Version=" in errs["file:/usr/local/Ascend/driver/version.info"]  # an HTML page
    assert "NUL" in errs["file:/usr/local/Ascend/firmware/version.info"]  # ELF bytes
    assert "UTF-8" in errs[f"file:{d}/version.cfg"]
    assert "symlink loop" in errs["cann:/usr/local/Ascend/cann"]
    assert "symlink loop" in errs["cann:/usr/local/Ascend/ascend-toolkit/latest"]
    # the CRLF install.info still parses, and the missing ASCEND_HOME_PATH is simply not an install
    (inst,) = f.cann["installs"]
    assert inst["version"] == "8.2.RC1"
    assert f.cann["environment"]["vars"]["ASCEND_HOME_PATH"]["exists"] is False
    assert f.driver["version"] is None and f.driver["present"] is True


def test_root_resolves_absolute_links_inside_root(tmp_path):
    (tmp_path / "opt/real").mkdir(parents=True)
    (tmp_path / "opt/real/f").write_text("x")
    os.symlink("/opt/real", tmp_path / "link")
    os.symlink("../opt/real/f", tmp_path / "opt/rel")
    fs = Root(str(tmp_path))
    assert fs.resolve("/link/f") == "/opt/real/f"
    assert fs.resolve("/opt/rel") == "/opt/real/f"
    assert fs.resolve("/link/missing/x") == "/opt/real/missing/x"
    assert fs.read_text("/link/f") == "x"
    os.symlink("/b", tmp_path / "a")
    os.symlink("/a", tmp_path / "b")
    with pytest.raises(OSError) as ei:
        fs.resolve("/a")
    assert ei.value.errno == errno.ELOOP
    assert fs.read_text("/a/version.info") is None and "symlink loop" in fs.errors["file:/a/version.info"]


@pytest.mark.parametrize("data, why", [(b"Version=1\x00", "NUL"), (b"\xff\xfeV", "UTF-8"),
                                       (b"x" * (300 * 1024), "KiB")])
def test_decode_rejects_binary_and_huge(data, why):
    with pytest.raises(ProbeError, match=why):
        decode(data)


def test_decode_accepts_crlf():
    assert decode(b"Version=1\r\nversion_dir=8.2.RC1\r\n") == "Version=1\nversion_dir=8.2.RC1\n"


def test_env_facts_keep_relevant_vars_and_redact_secrets():
    f = facts_for("root-910b-8.2", ASCEND_RT_VISIBLE_DEVICES="0,1", MY_API_TOKEN="abc123supersecret",
                  HCCL_IF_IP="10.10.1.11", MASTER_ADDR="https://bob:hunter2@10.0.0.1", RANDOM_VAR="x",
                  ASCEND_CUSTOM="ghp_abcdefghijklmnopqrstuvwxyz0123456789")
    assert f.env["ASCEND_RT_VISIBLE_DEVICES"] == "0,1" and f.env["HCCL_IF_IP"] == "10.10.1.11"
    assert "MY_API_TOKEN" not in f.env and "RANDOM_VAR" not in f.env
    assert "hunter2" not in f.env["MASTER_ADDR"] and "ghp_" not in f.env["ASCEND_CUSTOM"]


def test_live_probe_reads_numa_and_limits():
    """On the live machine the probe records NUMA nodes and the open-files limit (None under --root)."""
    import resource

    from envcheck.probe import collect

    s = collect(root="/").system
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert s["open_files_limit"] == (-1 if soft == resource.RLIM_INFINITY else soft)
    assert s["numa_nodes"] is None or s["numa_nodes"] >= 1
