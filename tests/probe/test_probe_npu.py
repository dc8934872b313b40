"""npu-smi: every recorded layout parses; missing / failing / hanging npu-smi is recorded, never raised."""
from __future__ import annotations

import subprocess
import time

import pytest
from conftest import DATA

from envcheck.probe import npu
from envcheck.probe.fs import Root

STUB = DATA / "npu-smi"
OUT = STUB / "outputs"


def env_with_stub(fixture: str) -> dict:
    return {"PATH": f"{STUB / 'bin'}:/usr/bin:/bin", "NPU_SMI_FIXTURE": fixture}


@pytest.mark.parametrize("name, tool, drv, chip, count, cards, hbm_total", [
    ("910a", "1.8.21", "20.2.2.spc001", "910A", 8, 8, 32768),
    ("910b2c", "24.1.rc2.2", "24.1.rc2.2", "910B2C", 16, 16, 65536),
    ("910b4", "25.0.rc1.1", "25.0.rc1.1", "910B4", 8, 8, 32768),
    ("310p3", "25.2.0", "25.2.0", "310P3", 6, 6, None),
    ("a3", "25.2.1", "25.2.1", "Ascend910", 16, 8, 65536),
])
def test_parse_every_recorded_layout(name, tool, drv, chip, count, cards, hbm_total):
    r = npu.parse_info((OUT / f"info-{name}.txt").read_text())
    assert (r["tool_version"], r["version"], r["chip"], r["count"], r["npu_count"]) == (tool, drv, chip, count, cards)
    assert all(d["health"] == "OK" for d in r["devices"])
    assert r["devices"][0]["hbm_total_mb"] == hbm_total
    assert r["processes"] == []


def test_parse_details_of_odd_layouts():
    a3 = npu.parse_info((OUT / "info-a3.txt").read_text())["devices"]
    assert [(d["id"], d["chip_id"]) for d in a3[:3]] == [(0, 0), (0, 1), (1, 0)]
    assert a3[1]["power_w"] is None and a3[0]["power_w"] == 165.3  # second die prints "-"
    p310 = npu.parse_info((OUT / "info-310p3.txt").read_text())["devices"]
    assert [d["id"] for d in p310] == [0, 32, 96, 32768, 32800, 32896]  # card ids, not 0..N-1
    assert [d["device_id"] for d in p310] == list(range(6))  # `Chip Device` header: logical ids
    assert [d["logic_id"] for d in p310] == list(range(6)) and [d["logic_id"] for d in a3] == list(range(16))
    assert a3[3]["phy_id"] == 3 and "device_id" not in a3[3]
    assert p310[0]["memory_used_mb"] == 1851 and p310[0]["memory_total_mb"] == 21527 and p310[0]["power_w"] is None
    old = npu.parse_info((OUT / "info-910a.txt").read_text())["devices"][0]
    assert (old["memory_used_mb"], old["memory_total_mb"], old["hbm_total_mb"]) == (591, 14795, 32768)
    assert old["bus_id"] == "0000:C1:00.0" and old["temp_c"] == 36


def test_parse_busy_and_unhealthy_variants():
    busy = npu.parse_info((OUT / "info-910b4-busy.txt").read_text())
    assert [(p["device"], p["pid"], p["name"], p["memory_mb"]) for p in busy["processes"]] == [
        (0, 2034561, "python3.10", 28120), (3, 2034587, "python3.10", 28118)]
    assert busy["devices"][0]["hbm_used_mb"] == 30774  # "30774/ 32768": no space before the slash
    bad = npu.parse_info((OUT / "info-910b4-unhealthy.txt").read_text())
    assert {d["id"]: d["health"] for d in bad["devices"] if d["health"] != "OK"} == {5: "Alarm", 6: "Warning"}


@pytest.mark.parametrize("text", ["", "dcmi model initialized failed\n", "npu-smi Version: 25.0.rc1.2\n",
                                  "| garbage | table |\n+====+\n| 0 x | | |\n| | | |\n"])
def test_parse_never_crashes(text):
    r = npu.parse_info(text)
    assert r["devices"] == [] and r["count"] == 0


def test_stub_ok():
    r = npu.probe(Root("/"), env_with_stub("910b4"), timeout=10)
    assert r["available"] and r["error"] is None and r["count"] == 8 and r["rc"] == 0
    assert r["path"] == str(STUB / "bin" / "npu-smi")


def test_missing_npu_smi_is_recorded(tmp_path):
    r = npu.probe(Root(str(tmp_path)), {"PATH": str(tmp_path)}, timeout=10)
    assert r["available"] is False and "not found" in r["error"] and r["devices"] == []


@pytest.mark.parametrize("mode, code, text", [("fail-8005", -8005, "dcmi module initialize failed"),
                                             ("fail-8020", -8020, "because the device is used")])
def test_failing_npu_smi_is_recorded(mode, code, text):
    r = npu.probe(Root("/"), env_with_stub(mode), timeout=10)
    assert r["available"] and r["rc"] == 255 and r["dcmi_code"] == code
    assert "exited with status 255" in r["error"] and text in r["error"]


def test_no_devices_output_is_an_error():
    r = npu.probe(Root("/"), env_with_stub("no-devices"), timeout=10)
    assert r["rc"] == 0 and "listed no devices" in r["error"]


def test_hanging_npu_smi_times_out_quickly_and_leaves_nothing():
    t0 = time.monotonic()
    r = npu.probe(Root("/"), env_with_stub("hang"), timeout=0.5)
    assert time.monotonic() - t0 < 4
    assert r["timed_out"] and "did not answer within 0.5 s" in r["error"]
    left = subprocess.run(["pgrep", "-f", "sleep 300"], capture_output=True, text=True).stdout.split()
    mine = [p for p in left if _parent_is_stub(p)]
    assert mine == []


def _parent_is_stub(pid: str) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return b"NPU_SMI_FIXTURE=hang" in fh.read()
    except OSError:
        return False


def test_davinci_fallback_counts_only_numbered_devices(tmp_path):
    (tmp_path / "dev").mkdir()
    for n in ("davinci0", "davinci1", "davinci12", "davinci_manager", "davinciX"):
        (tmp_path / "dev" / n).write_text("")
    assert npu.davinci(Root(str(tmp_path))) == [0, 1, 12]


def test_root_fallback_paths_not_used_under_a_fixture_root(tmp_path):
    # /usr/local/sbin/npu-smi of *this* machine must not describe a --root fixture
    assert npu.find_npu_smi(Root(str(tmp_path)), {"PATH": ""}) is None


def _mutations():
    from hypothesis import strategies as st

    lines = []
    for f in sorted(OUT.glob("info-*.txt")):
        lines.extend(f.read_text().splitlines())
    return st.lists(st.one_of(st.sampled_from(lines), st.text(alphabet="|+=- 0123456789/.ABOKNaz:", max_size=60)),
                    max_size=40)


def test_parse_info_survives_shuffled_and_garbled_tables():
    from hypothesis import given, settings

    @settings(max_examples=150, deadline=None)
    @given(_mutations())
    def prop(lines):
        r = npu.parse_info("\n".join(lines))
        assert r["count"] == len(r["devices"])
        for d in r["devices"]:
            assert isinstance(d["id"], int) and isinstance(d["chip_id"], int)

    prop()
