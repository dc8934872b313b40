"""EC2xx environment checks: pure functions of facts, driven from fixture trees and small fact dicts."""
from __future__ import annotations

import pytest
from conftest import DATA

from envcheck.checks import environment as E
from envcheck.checks.registry import Context
from envcheck.model import Facts, Status
from envcheck.probe import collect

ROOTS = DATA / "roots"
TK = "/usr/local/Ascend/ascend-toolkit/latest"
SOURCED_8_2 = {  # what the 8.x set_env.sh exports, for the root-910b-8.2 tree
    "ASCEND_HOME_PATH": TK, "ASCEND_TOOLKIT_HOME": TK, "ASCEND_OPP_PATH": TK + "/opp",
    "ASCEND_AICPU_PATH": TK, "TOOLCHAIN_HOME": TK + "/toolkit",
    "LD_LIBRARY_PATH": f"/usr/local/Ascend/driver/lib64/driver:{TK}/lib64:{TK}/lib64/plugin/opskernel",
}


def run(check, facts: Facts):
    return list(check.run(Context(facts=facts)))


def probe(tree: str, **env: str) -> Facts:
    base = {"PATH": "/nonexistent-bin"}
    base.update(env)
    return collect(root=str(ROOTS / tree), environ=base)


def only(findings):
    assert len(findings) == 1, findings
    return findings[0]


# ---- EC201 ---------------------------------------------------------------------------------
def test_ec201_ok_when_set_env_sourced():
    f = only(run(E.cann_env_loaded, probe("root-910b-8.2", **SOURCED_8_2)))
    assert f.status is Status.OK and TK in f.title


def test_ec201_fails_when_not_sourced_with_exact_set_env_path():
    f = only(run(E.cann_env_loaded, probe("root-910b-8.2")))
    assert f.status is Status.FAIL and "ASCEND_HOME_PATH is not set" in f.title
    assert f.fix == "source /usr/local/Ascend/ascend-toolkit/set_env.sh"


def test_ec201_nonroot_fix_points_into_home():
    f = only(run(E.cann_env_loaded, probe("nonroot-home", HOME="/home/alice")))
    assert f.status is Status.FAIL and f.fix == "source /home/alice/Ascend/ascend-toolkit/set_env.sh"


def test_ec201_missing_lib64_in_ld_library_path():
    env = dict(SOURCED_8_2, LD_LIBRARY_PATH="/usr/local/Ascend/driver/lib64/driver")
    f = only(run(E.cann_env_loaded, probe("root-910b-8.2", **env)))
    assert f.status is Status.FAIL and f"LD_LIBRARY_PATH does not contain {TK}/lib64" in f.title


def test_ec201_lib64_through_the_real_release_dir_counts():
    env = dict(SOURCED_8_2, LD_LIBRARY_PATH="/usr/local/Ascend/ascend-toolkit/latest/aarch64-linux/lib64")
    assert only(run(E.cann_env_loaded, probe("root-910b-8.2", **env))).status is Status.OK


def test_ec201_home_path_to_missing_dir():
    f = only(run(E.cann_env_loaded, probe("broken", ASCEND_HOME_PATH="/usr/local/Ascend/nonexistent")))
    assert f.status is Status.FAIL and "ASCEND_HOME_PATH=/usr/local/Ascend/nonexistent does not exist" in f.title


def test_ec201_new_layout_env_from_the_85_image():
    c = "/usr/local/Ascend/cann-8.5.0"
    env = {"ASCEND_HOME_PATH": c, "ASCEND_OPP_PATH": c + "/opp", "LD_LIBRARY_PATH": c + "/lib64"}
    assert only(run(E.cann_env_loaded, probe("new-8.5", **env))).status is Status.OK
    f = only(run(E.cann_env_loaded, probe("new-8.5")))
    assert f.status is Status.FAIL and f.fix == "source /usr/local/Ascend/cann-8.5.0/set_env.sh"


def test_ec201_skips_without_cann():
    assert only(run(E.cann_env_loaded, Facts(cann={"installs": [], "active": None}))).status is Status.SKIP


# ---- EC202 ---------------------------------------------------------------------------------
@pytest.mark.parametrize("value, status, text", [
    ("0,1,7", Status.OK, "3 of 8"), ("0,8", Status.FAIL, "[8]"), ("0,0", Status.FAIL, "twice"),
    ("a,1", Status.FAIL, "not a list"), ("", Status.FAIL, "empty"), (None, Status.SKIP, "not set")])
def test_ec202_visible_devices(value, status, text):
    env = {} if value is None else {"ASCEND_RT_VISIBLE_DEVICES": value}
    facts = Facts(env=env, npu={"dev_davinci": list(range(8))})
    f = only(run(E.visible_devices_valid, facts))
    assert f.status is status and text in f.title


def test_ec202_uses_npu_smi_chip_count_over_davinci():
    facts = Facts(env={"ASCEND_RT_VISIBLE_DEVICES": "15"}, npu={"count": 16, "dev_davinci": []})
    assert only(run(E.visible_devices_valid, facts)).status is Status.OK


# ---- EC203 ---------------------------------------------------------------------------------
def test_ec203_shm_from_fixture_trees():
    assert only(run(E.shm_large_enough, probe("nonroot-home"))).status is Status.FAIL  # 64 MiB
    assert only(run(E.shm_large_enough, probe("root-910b-8.2"))).status is Status.OK
    assert only(run(E.shm_large_enough, Facts(system={"shm_bytes": None}))).status is Status.SKIP


# ---- EC204 ---------------------------------------------------------------------------------
@pytest.mark.parametrize("env, statuses", [
    ({"ASCEND_GLOBAL_LOG_LEVEL": "0"}, [Status.WARN]), ({"ASCEND_GLOBAL_LOG_LEVEL": "1"}, [Status.WARN]),
    ({"ASCEND_GLOBAL_LOG_LEVEL": "3"}, [Status.OK]), ({}, [Status.OK]),
    ({"ASCEND_GLOBAL_LOG_LEVEL": "9"}, [Status.WARN]),
    ({"ASCEND_SLOG_PRINT_TO_STDOUT": "1"}, [Status.WARN]),
])
def test_ec204_log_level(env, statuses):
    cann = {"installs": [{"home": "/usr/local/Ascend/ascend-toolkit/latest", "version": "8.2.RC1"}], "active": 0}
    assert [f.status for f in run(E.log_level_quiet, Facts(env=env, cann=cann))] == statuses


def test_ec204_skips_without_cann():
    # issue 13: no green tick for "CANN log level default" where there is no CANN; a bad level still warns
    assert [f.status for f in run(E.log_level_quiet, Facts(env={}))] == [Status.SKIP]
    assert [f.status for f in run(E.log_level_quiet, Facts(env={"ASCEND_GLOBAL_LOG_LEVEL": "0"}))] == [Status.WARN]


# ---- EC205 ---------------------------------------------------------------------------------
IFACES = {"lo": ["127.0.0.1"], "eth0": ["10.0.0.5", "fe80::1"], "eth1": ["10.0.1.5"], "docker0": ["172.17.0.1"],
          "ib0": []}


@pytest.mark.parametrize("spec, chosen, unmatched", [
    ("eth", ["eth0", "eth1"], []), ("=eth0", ["eth0"], []), ("=eth", [], ["eth"]),
    ("^lo,docker", ["eth0", "eth1", "ib0"], []), ("eth0,enp", ["eth0"], ["enp"]),
    ("^=eth0", ["eth1", "docker0", "ib0"], []),
])
def test_match_ifname_syntax(spec, chosen, unmatched):
    assert E.match_ifname(spec, IFACES) == (chosen, unmatched)


@pytest.mark.parametrize("env, status", [
    ({"HCCL_SOCKET_IFNAME": "eth0"}, Status.OK), ({"HCCL_SOCKET_IFNAME": "enp189s0f0"}, Status.FAIL),
    ({"HCCL_SOCKET_IFNAME": "ib"}, Status.FAIL),  # ib0 has no address
    ({"HCCL_SOCKET_IFNAME": "eth0,enp"}, Status.WARN), ({"HCCL_SOCKET_IFNAME": "^eth,docker,ib"}, Status.FAIL),
    ({"HCCL_IF_IP": "10.0.1.5"}, Status.OK), ({"HCCL_IF_IP": "fe80::1"}, Status.OK),
    ({"HCCL_IF_IP": "10.9.9.9"}, Status.FAIL), ({"GLOO_SOCKET_IFNAME": "eth9"}, Status.FAIL),
])
def test_ec205_hccl_nic(env, status):
    findings = run(E.hccl_nic_valid, Facts(env=env, system={"interfaces": IFACES}))
    assert max(f.status.severity for f in findings) == status.severity


def test_ec205_fix_suggests_a_real_interface_of_the_fixture_host():
    facts = probe("root-910b-8.2", HCCL_SOCKET_IFNAME="eth0", HCCL_IF_IP="10.10.1.99")
    fails = [f for f in run(E.hccl_nic_valid, facts) if f.status is Status.FAIL]
    assert [f.fix for f in fails] == ["export HCCL_SOCKET_IFNAME=enp189s0f0",
                                      "export HCCL_IF_IP=10.10.1.11  (or unset it)"]


def test_ec205_skips_when_unset_or_interfaces_unknown():
    assert only(run(E.hccl_nic_valid, Facts(system={"interfaces": IFACES}))).status is Status.SKIP
    assert only(run(E.hccl_nic_valid, Facts(env={"HCCL_IF_IP": "1.2.3.4"}, system={}))).status is Status.SKIP


def test_ec205_live_interfaces_include_loopback():
    facts = collect(environ={"PATH": "/nonexistent", "HCCL_SOCKET_IFNAME": "=lo", "HCCL_IF_IP": "127.0.0.1"})
    assert "127.0.0.1" in facts.system["interfaces"]["lo"]
    assert only(run(E.hccl_nic_valid, facts)).status is Status.OK


# ---- EC206 ---------------------------------------------------------------------------------
@pytest.mark.parametrize("env, status, text", [
    ({"RANK_SIZE": "8", "RANK_ID": "3", "WORLD_SIZE": "8", "RANK": "3"}, Status.OK, "valid"),
    ({"RANK_SIZE": "8", "RANK_ID": "8"}, Status.FAIL, "outside"),
    ({"RANK_SIZE": "8", "WORLD_SIZE": "16"}, Status.FAIL, "disagrees"),
    ({"RANK_ID": "1", "RANK": "2"}, Status.FAIL, "disagrees"),
    ({"RANK_SIZE": "x"}, Status.FAIL, "not an integer"),
    ({"DEVICE_ID": "8"}, Status.FAIL, "8 NPUs"),
    ({"HCCL_EXEC_TIMEOUT": "1800", "HCCL_EVENT_TIMEOUT": "1800"}, Status.FAIL, "greater than"),
    ({"HCCL_EXEC_TIMEOUT": "0"}, Status.WARN, "never times out"),
    ({"RANK_TABLE_FILE": "/x.json", "HCCL_CONNECT_TIMEOUT": "120"}, Status.WARN, "300"),
    ({"WORLD_SIZE": "8"}, Status.SKIP, "no Ascend launch variables"),
])
def test_ec206_ascend_launch_vars(env, status, text):
    findings = run(E.dist_env_valid, Facts(env=env, npu={"count": 8}))
    worst = max(findings, key=lambda f: f.status.severity)
    assert worst.status is status and text in worst.title + worst.detail
