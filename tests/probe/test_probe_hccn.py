"""Device-network / host / container probes on the recorded hccn_tool outputs and the net-* sysroots."""
from __future__ import annotations

from conftest import DATA

from envcheck.probe import collect, hccn
from envcheck.probe.fs import Root

REC = DATA / "hccn-tool" / "recordings"
ROOTS = DATA / "roots"


def rec(name: str) -> str:
    return (REC / name).read_text(encoding="utf-8")


def test_parsers_read_the_recorded_formats():
    assert hccn.parse_link(rec("link-up.txt")) == {"link": "UP"}
    assert hccn.parse_link(rec("link-down.txt")) == {"link": "DOWN"}
    assert hccn.parse_ip(rec("ip-ok.txt")) == {"ip": "10.86.1.80", "netmask": "255.255.255.0", "ip_missing": False}
    assert hccn.parse_ip(rec("ip-none.txt"))["ip_missing"] is True
    assert hccn.parse_health(rec("net-health-fault.txt")) == {"net_health": "Fault"}
    assert hccn.parse_tls(rec("tls.txt")) == {"tls_switch": 0, "tls_preconfigured": 1}
    assert hccn.parse_optical(rec("optical-not-present.txt")) == {"optical_present": False}
    assert hccn.parse_optical("Tx Power: whatever\n") == {"optical_present": None}  # unknown lines: not judged
    st = hccn.parse_link_stat(rec("link-stat.txt"))
    assert st["stat_time"] == "2023-06-07T10:08:28" and st["link_up_count"] == 2
    assert [c["state"] for c in st["link_changes"]] == ["UP", "DOWN", "UP"]
    assert st["link_changes"][1]["time"] == "2023-06-06T16:32:10"


def test_ping_summary():
    assert hccn.parse_ping("3 packets transmitted, 3 received, 0.00% packet loss", 0) is True
    assert hccn.parse_ping("3 packets transmitted, 0 received, 100.00% packet loss", 1) is False
    assert hccn.parse_ping("", 0) is None


def test_conf_addresses():
    assert hccn.conf_addresses({"address_0": "1.1.1.0", "netmask_0": "x", "address_12": "1.1.1.2"}) == \
        {0: "1.1.1.0", 12: "1.1.1.2"}


def test_healthy_root_reads_all_eight_devices(monkeypatch):
    monkeypatch.delenv("ASCEND_VISIBLE_DEVICES", raising=False)
    f = collect(root=str(ROOTS / "net-healthy"), environ={"PATH": "/usr/bin:/bin"})
    nd = f.netdev
    assert nd["available"] and [d["id"] for d in nd["devices"]] == list(range(8))
    assert {d["link"] for d in nd["devices"]} == {"UP"} and {d["tls_switch"] for d in nd["devices"]} == {0}
    assert nd["devices"][3]["ip"] == "10.86.1.83"
    # -gateway -g has no public capture: the player has no recording, so it is an error kept per device, never parsed
    assert list(nd["devices"][3]["errors"]) == ["gateway"] and "no recording" in nd["devices"][3]["errors"]["gateway"]
    assert f.host["cpu_governors"] == {"performance": 4} and f.host["thp"] == "always"
    assert f.container["in_container"] is False
    assert f.probe_errors == {}


def test_no_hccn_tool_is_a_reason_not_an_error():
    f = collect(root=str(ROOTS / "net-no-hccn-tool"), environ={"PATH": "/usr/bin:/bin"})
    assert f.netdev["available"] is False and "hccn_tool not found" in f.netdev["reason"]
    assert f.probe_errors == {}


def test_hanging_tool_times_out(tmp_path):
    tool = tmp_path / "usr/local/Ascend/driver/tools/hccn_tool"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\nexec sleep 30\n")
    tool.chmod(0o755)
    out = hccn.probe(Root(str(tmp_path)), {"PATH": "/usr/bin:/bin"}, 0.5, [0])
    assert "did not answer within 0.5 s" in out["devices"][0]["errors"]["link"]


def test_container_half_mounted():
    f = collect(root=str(ROOTS / "net-container-half"), environ={"PATH": "/usr/bin:/bin"})
    c = f.container
    assert c["in_container"] and c["engine"] == "docker"
    assert c["mgmt_devices"] == {"davinci_manager": True, "devmm_svm": False, "hisi_hdc": False}
    assert c["driver_dir"]["lib64"] and not c["driver_dir"]["topo"]
