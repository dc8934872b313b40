"""EC6xx on the net-* fixture sysroots: each gives its expected findings, the healthy one none."""
from __future__ import annotations

import pytest
from conftest import DATA

from envcheck.checks import network
from envcheck.checks.registry import Context
from envcheck.checks.runner import run_check
from envcheck.model import Facts
from envcheck.probe import collect

ROOTS = DATA / "roots"
ENV = {"PATH": "/usr/bin:/bin"}


def bad(root: str, env: dict | None = None) -> dict[str, list[str]]:
    facts = collect(root=str(ROOTS / root), environ={**ENV, **(env or {})})
    out: dict[str, list[str]] = {}
    for chk in network.CHECKS:
        if not chk.default:
            continue
        for f in run_check(chk, Context(facts=facts)):
            if f.status.value in ("warn", "fail", "error"):
                out.setdefault(f.code, []).append(f"{f.status.value}: {f.title}")
    return out


@pytest.mark.parametrize("root, expected", [
    ("net-healthy", {}),
    ("net-no-hccn-tool", {}),
    ("net-link-down", {"EC601": ["fail: device NIC link DOWN on device(s) [5]"],
                       "EC603": ["fail: net health not Success on device 5 (Fault)"]}),
    ("net-tls-mismatch", {"EC606": [("fail: TLS switch differs between devices: disabled (0) on [0, 1, 2, 3, 4, 5, 7]; "
                                    "enabled (1) on [6]")]}),
])
def test_fixture_roots(root, expected):
    assert bad(root) == expected


def test_flapping_link_is_a_warning():
    got = bad("net-flapping")
    assert list(got) == ["EC602"] and got["EC602"][0].startswith("warn: device NIC link went down within the last 24 h "
                                                                 "(device 2: 1 drop(s), last 2023-06-07T09:57:40)")


def test_missing_and_duplicate_ips_and_absent_optics():
    got = bad("net-missing-ip")
    assert got["EC604"] == ["fail: no IP configured on device NIC(s) [4]",
                            "fail: device NICs share an IP: 10.86.1.80 on devices [0, 7]"]
    assert got["EC605"] == ["fail: no optical module in the port of device(s) [5]"]
    assert set(got) == {"EC604", "EC605"}


def test_half_mounted_container():
    got = bad("net-container-half", {"ASCEND_VISIBLE_DEVICES": "4,5", "ASCEND_RT_VISIBLE_DEVICES": "4"})
    assert got["EC620"] == ["fail: container lacks /dev/devmm_svm, /dev/hisi_hdc"]
    assert got["EC621"][0].startswith("fail: only part of the driver is mounted (absent: topo")
    assert got["EC622"][0].startswith("fail: ASCEND_RT_VISIBLE_DEVICES=4 but the container holds 2 NPU(s)")
    assert {"EC610", "EC611", "EC612"} <= set(got) and all(v[0].startswith("warn") for k, v in got.items()
                                                            if k in ("EC610", "EC611", "EC612"))
    assert not any(k.startswith("EC60") for k in got)  # no hccn_tool in the container: skipped, not warned


def test_visible_devices_outside_container_warns():
    got = bad("net-healthy", {"ASCEND_VISIBLE_DEVICES": "0-3"})
    assert list(got) == ["EC622"] and "outside a container" in got["EC622"][0]


def test_hccl_if_ip_conflicts():
    facts = Facts(env={"HCCL_IF_IP": "10.10.1.11", "HCCL_SOCKET_IFNAME": "=eth1"},
                  system={"interfaces": {"enp189s0f0": ["10.10.1.11"], "eth1": ["10.0.0.2"]}})
    [f] = run_check(network.hccl_nic_conflict, Context(facts=facts))
    assert f.status.value == "warn" and "ignores HCCL_SOCKET_IFNAME" in f.title
    facts.netdev = {"devices": [{"id": 0, "ip": "10.10.1.11"}]}
    [f] = run_check(network.hccl_nic_conflict, Context(facts=facts))
    assert f.status.value == "warn" and "device (NPU) NIC address" in f.title
    facts = Facts(env={"HCCL_IF_IP": "10.0.0.2", "HCCL_SOCKET_IFNAME": "eth"},
                  system={"interfaces": {"eth1": ["10.0.0.2"]}})
    [f] = run_check(network.hccl_nic_conflict, Context(facts=facts))
    assert f.status.value == "ok"
