"""HCCL rank tables: the real published samples pass, and each kind of broken table is named."""
from __future__ import annotations

import json
import shutil

import pytest
from conftest import DATA

from envcheck.checks import ranktable as judge
from envcheck.checks.distributed import ranktable_valid
from envcheck.checks.registry import Context
from envcheck.checks.runner import run_check
from envcheck.model import Facts, Status
from envcheck.probe import ranktable as rt
from envcheck.probe.fs import Root

TABLES = DATA / "ranktables"

BROKEN = {
    "bad-duplicate-rank.json": "duplicate-rank",
    "bad-rank-gap.json": "rank-gap",
    "bad-missing-device-id.json": "missing-key",
    "bad-server-count.json": "server-count",
    "bad-duplicate-device.json": "duplicate-device",
    "bad-duplicate-device-ip.json": "duplicate-device-ip",
    "bad-duplicate-server.json": "duplicate-server",
    "bad-rank-not-number.json": "bad-rank",
    "bad-no-server-list.json": "missing-key",
    "bad-v1.2-super-pod-unknown-server.json": "super-pod-server",
}
WARNINGS = {"warn-rank-order.json": "rank-order", "warn-status-initializing.json": "status"}


def kinds(problems, severity=None):
    return {p.kind for p in problems if severity is None or p.severity == severity}


@pytest.mark.parametrize("name", ["good-v1.0-16pcs-redacted.json", "good-v1.2-a3-superpod.json",
                                  "good-v1.0-2x4.json"])
def test_real_samples_are_structurally_valid(name):
    table = rt.load(str(TABLES / name))
    assert judge.validate(table) == []
    assert table.rank_count == (8 if "2x4" in name else 16)


def test_v12_sample_fields_are_read():
    table = rt.load(str(TABLES / "good-v1.2-a3-superpod.json"))
    assert table.version == "1.2"
    assert table.servers[0].container_ip == "192.168.247.11"
    assert table.servers[0].devices[15].super_device_id == "115146767"
    assert table.super_pods[0]["super_pod_id"] == "1"


@pytest.mark.parametrize("name,kind", sorted(BROKEN.items()))
def test_each_broken_table_is_named(name, kind):
    problems = judge.validate(rt.load(str(TABLES / name)))
    assert kind in kinds(problems, "fail"), problems


@pytest.mark.parametrize("name,kind", sorted(WARNINGS.items()))
def test_warnings_are_not_failures(name, kind):
    problems = judge.validate(rt.load(str(TABLES / name)))
    assert kinds(problems) == {kind}
    assert all(p.severity == "warn" for p in problems)


@pytest.mark.parametrize("name", ["bad-not-json.json", "bad-not-object.json"])
def test_unparsable_tables_raise(name):
    with pytest.raises(rt.RankTableError):
        rt.load(str(TABLES / name))


def test_messages_name_the_values():
    problems = judge.validate(rt.load(str(TABLES / "bad-duplicate-rank.json")))
    msg = " ".join(p.message for p in problems)
    assert "rank_id 1 appears twice" in msg
    assert "missing 6" in msg  # rank 6 was overwritten by the duplicate


# ---- host checks -------------------------------------------------------------------------

def host(addrs, devices):
    return dict(host_addresses=addrs, host_devices=devices)


def test_host_listed_with_its_devices_passes():
    table = rt.load(str(TABLES / "good-v1.0-2x4.json"))
    assert judge.validate(table, world_size=8, **host({"127.0.0.1", "192.168.10.12"}, range(8))) == []


def test_device_missing_on_host():
    table = rt.load(str(TABLES / "good-v1.0-2x4.json"))
    problems = judge.validate(table, **host({"192.168.10.12"}, [0, 1]))
    assert kinds(problems) == {"device-not-on-host"}
    assert "device_id 2 (rank 6)" in problems[0].message


def test_host_not_listed():
    table = rt.load(str(TABLES / "good-v1.0-2x4.json"))
    problems = judge.validate(table, **host({"127.0.0.1", "10.9.9.9"}, range(8)))
    assert kinds(problems) == {"host-not-listed"}
    assert "10.9.9.9" in problems[0].message


def test_world_size_mismatch():
    table = rt.load(str(TABLES / "good-v1.0-2x4.json"))
    problems = judge.validate(table, world_size=16)
    assert kinds(problems) == {"world-size"}
    assert "8 ranks but WORLD_SIZE is 16" in problems[0].message


def test_v12_matches_a3_host_by_container_ip():
    table = rt.load(str(TABLES / "good-v1.2-a3-superpod.json"))
    assert judge.validate(table, world_size=16, **host({"192.168.247.11"}, range(16))) == []


def test_redacted_sample_cannot_be_matched_to_a_host():
    table = rt.load(str(TABLES / "good-v1.0-16pcs-redacted.json"))
    problems = judge.validate(table, **host({"127.0.0.1"}, range(8)))
    assert kinds(problems) == {"redacted"} and problems[0].severity == "warn"


# ---- the EC505 check ----------------------------------------------------------------------

def facts_for(tmp_path, table_name, *, addrs=("192.168.10.11",), ndev=4, world_size="8", root="/"):
    facts = Facts(system={"hostname": "node-a", "interfaces": {"eth0": list(addrs), "lo": ["127.0.0.1"]}},
                  npu={"available": True, "devices": [{"id": i} for i in range(ndev)]},
                  env={"RANK_TABLE_FILE": str(TABLES / table_name), "WORLD_SIZE": world_size,
                       "HCCL_CONNECT_TIMEOUT": "600"}, root=root)
    return probed(facts)


def probed(facts):
    """What the probe adds: the table RANK_TABLE_FILE names, read inside the facts' root."""
    facts.ranktable = rt.probe(Root(facts.root), facts.env)
    return facts


def test_check_passes_for_this_host(tmp_path):
    [f] = run_check(ranktable_valid, Context(facts_for(tmp_path, "good-v1.0-2x4.json")))
    assert f.status is Status.OK and f.code == "EC505"
    assert f.data["ranks"] == 8


def test_check_fails_on_world_size_and_names_it(tmp_path):
    [f] = run_check(ranktable_valid, Context(facts_for(tmp_path, "good-v1.0-2x4.json", world_size="4")))
    assert f.status is Status.FAIL
    assert "WORLD_SIZE is 4" in f.title


def test_check_unreadable_table_is_a_failure(tmp_path):
    [f] = run_check(ranktable_valid, Context(facts_for(tmp_path, "bad-not-json.json")))
    assert f.status is Status.FAIL and "not valid JSON" in f.title


def test_check_skips_without_rank_table_file():
    [f] = run_check(ranktable_valid, Context(Facts(env={})))
    assert f.status is Status.SKIP


def test_check_reads_the_table_under_root(tmp_path):
    (tmp_path / "etc").mkdir()
    shutil.copy(TABLES / "good-v1.0-2x4.json", tmp_path / "etc" / "rt.json")
    facts = facts_for(tmp_path, "x", root=str(tmp_path))
    facts.env["RANK_TABLE_FILE"] = "/etc/rt.json"
    [f] = run_check(ranktable_valid, Context(probed(facts)))
    assert f.status is Status.OK, f.title


# ---- the command ----------------------------------------------------------------------------

def test_cli_good_sample_structure_only(cli):
    r = cli("ranktable", "--structure-only", "--json", TABLES / "good-v1.2-a3-superpod.json")
    assert r.rc == 0, r.err
    [f] = r.json()["findings"]
    assert f["code"] == "EC505" and f["status"] == "ok" and f["data"]["version"] == "1.2"


def test_cli_broken_table_fails_with_every_problem(cli):
    r = cli("ranktable", "--structure-only", "-v", TABLES / "bad-duplicate-rank.json")
    assert r.rc == 1
    assert "rank_id 1 appears twice" in r.out and "missing 6" in r.out


def test_cli_world_size_option(cli):
    r = cli("ranktable", "--structure-only", "--world-size", "4", "--json", TABLES / "good-v1.0-2x4.json")
    assert r.rc == 1
    assert r.json()["findings"][0]["data"]["problems"][0]["kind"] == "world-size"


def test_cli_missing_file_is_usage_error(cli, tmp_path):
    r = cli("ranktable", tmp_path / "nope.json")
    assert r.rc == 2 and r.err.startswith("envcheck: error:") and len(r.err.splitlines()) == 1


def test_cli_no_file_and_no_env_is_usage_error(cli, monkeypatch):
    monkeypatch.delenv("RANK_TABLE_FILE", raising=False)
    r = cli("ranktable")
    assert r.rc == 2 and "RANK_TABLE_FILE" in r.err


def test_cli_json_is_one_document(cli):
    r = cli("ranktable", "--structure-only", "--json", TABLES / "bad-server-count.json")
    doc = json.loads(r.out)
    assert doc["command"] == "ranktable" and doc["verdict"] == "fail"


def test_short_connect_timeout_with_a_rank_table_warns(tmp_path):
    facts = facts_for(tmp_path, "good-v1.0-2x4.json")
    del facts.env["HCCL_CONNECT_TIMEOUT"]
    table, advice = run_check(ranktable_valid, Context(facts))
    assert table.status is Status.OK
    assert advice.status is Status.WARN and "HCCL_CONNECT_TIMEOUT is 120 s" in advice.title


# ---- real npu-smi output, parsed by the probe, against the real tables ----------------------

def npu_facts(sample, addrs):
    from conftest import DATA

    from envcheck.probe.npu import parse_info

    npu = dict(parse_info((DATA / "npu-smi" / "outputs" / sample).read_text()), available=True)
    return probed(Facts(system={"interfaces": {"eth0": list(addrs)}}, npu=npu,
                        env={"RANK_TABLE_FILE": str(TABLES / "good-v1.2-a3-superpod.json"), "WORLD_SIZE": "16",
                             "HCCL_CONNECT_TIMEOUT": "600"}))


def test_a3_table_matches_an_a3_host_by_physical_chip_ids():
    """A3: 8 NPUs x 2 chips; the v1.2 table's device_id 0..15 are the chips' physical ids."""
    facts = npu_facts("info-a3.txt", ["192.168.247.11"])
    [f] = run_check(ranktable_valid, Context(facts))
    assert f.status is Status.OK, f.detail


def test_a3_table_on_an_8_npu_910b_host_names_the_missing_devices():
    facts = npu_facts("info-910b4.txt", ["192.168.247.11"])
    [f] = run_check(ranktable_valid, Context(facts))
    assert f.status is Status.FAIL
    assert "device_id 8 (rank 8)" in f.title and "(+7 more)" in f.title


def test_rank_table_file_is_checked_by_a_plain_run(cli, monkeypatch):
    monkeypatch.setenv("RANK_TABLE_FILE", str(TABLES / "bad-duplicate-rank.json"))
    r = cli("--no-smoke", "--select", "EC505", "--json")
    [f] = [f for f in r.json()["findings"] if f["code"] == "EC505"][:1]
    assert r.rc == 1 and f["status"] == "fail" and "rank_id 1 appears twice" in f["title"]


def test_a_snapshot_without_the_table_skips_instead_of_reading_this_machine(tmp_path):
    """EC505 is pure: it never opens RANK_TABLE_FILE itself, so a --facts replay judges what was probed."""
    facts = facts_for(tmp_path, "good-v1.0-2x4.json")
    facts.ranktable = {}
    [f] = run_check(ranktable_valid, Context(facts))
    assert f.status is Status.SKIP and "not read by the probe" in f.title
