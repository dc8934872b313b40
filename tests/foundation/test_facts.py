"""envcheck.facts: typed sections read every snapshot and probe output back exactly, keep unknown keys,
record wrong types instead of raising, and still read like the plain dicts they replace."""
from __future__ import annotations

import dataclasses
import json
import os

import pytest
from conftest import DATA, REPO, run_envcheck

from envcheck.facts import (
    SECTIONS,
    CannFacts,
    CannInstall,
    NetdevFacts,
    NpuDevice,
    NpuFacts,
    PythonFacts,
    RankTableFacts,
    SystemFacts,
)
from envcheck.model import Facts
from envcheck.probe import npu
from envcheck.probe.fs import Root

REPORTS = sorted((DATA / "reports").glob("*.json"))
ROOTS = sorted(p for p in (DATA / "roots").iterdir() if p.is_dir())
NPU_SMI = sorted(p.name[len("info-"):-len(".txt")] for p in (DATA / "npu-smi" / "outputs").glob("info-*.txt")
                 if not p.name.startswith("info-m-")) + ["fail-8005", "fail-8020", "no-devices"]


def _assert_round_trip(facts: dict, where: str) -> None:
    assert set(SECTIONS) <= set(Facts.__dataclass_fields__), "a section class with no Facts field"
    for name, cls in SECTIONS.items():
        raw = facts.get(name, {})
        section = cls.from_dict(raw)
        assert section.problems == (), (where, name)
        back = section.to_dict()
        assert back == raw and list(back) == list(raw), (where, name)
        assert json.dumps(back) == json.dumps(raw), (where, name)  # nested key order too
        assert dict(section) == raw and len(section) == len(raw), (where, name)


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: p.name)
def test_every_report_snapshot_round_trips(path):
    _assert_round_trip(json.loads(path.read_text())["facts"], path.name)


@pytest.fixture(scope="module")
def probed():
    """`envcheck probe --json` on every fixture sysroot (real child processes of this checkout)."""
    env = {"PYTHONPATH": str(REPO)}
    out = {}
    for root in ROOTS:
        r = run_envcheck("probe", "--json", "--root", str(root), env=env)
        assert r.rc == 0, r.err
        out[root.name] = json.loads(r.out)["facts"]
    return out


@pytest.mark.parametrize("root", [p.name for p in ROOTS])
def test_probe_output_of_every_sysroot_round_trips(probed, root):
    _assert_round_trip(probed[root], root)


def test_sysroots_exercise_the_nested_records(probed):
    """The round trip above is only worth something if the fixtures fill the nested records."""
    installs = [CannFacts.from_dict(f["cann"]).installs or () for f in probed.values()]
    assert any(i.components and i.version_cfg and i.kernels for inst in installs for i in inst)
    devices = [d for f in probed.values() for d in NetdevFacts.from_dict(f["netdev"]).devices or ()]
    assert any(d.link_changes for d in devices) and any(d.errors for d in devices)


@pytest.mark.parametrize("fixture", NPU_SMI)
def test_npu_section_from_every_recorded_npu_smi_round_trips(fixture, tmp_path):
    environ = {"PATH": f"{DATA / 'npu-smi' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
               "NPU_SMI_FIXTURE": fixture}
    raw = json.loads(json.dumps(npu.probe(Root(str(tmp_path)), environ, timeout=20)))
    section = NpuFacts.from_dict(raw)
    assert section.problems == ()
    assert section.to_dict() == raw and json.dumps(section.to_dict()) == json.dumps(raw)
    if fixture.startswith("fail-"):
        assert section.dcmi_code is not None
    elif fixture != "no-devices":
        assert section.devices and all(isinstance(d, NpuDevice) for d in section.devices)
        assert section.devices[0].id == raw["devices"][0]["id"] and section.chip == raw["chip"]


# ---- unknown keys -----------------------------------------------------------------------------

def test_unknown_keys_survive_at_every_level():
    raw = {"future_key": {"a": [1, 2]}, "installs": [
        {"version": "8.0.RC1", "new_field": True, "components": {"runtime": {"version": "8.0.RC1", "x": 1}}}],
        "active": 0}
    section = CannFacts.from_dict(raw)
    assert section.problems == ()
    assert section.extra == {"future_key": {"a": [1, 2]}}
    inst = section.active_install()
    assert isinstance(inst, CannInstall) and inst.version == "8.0.RC1" and inst.extra == {"new_field": True}
    assert inst.components is not None and inst.components["runtime"].extra == {"x": 1}
    assert section.to_dict() == raw and list(section.to_dict()) == ["future_key", "installs", "active"]
    assert section["future_key"] == {"a": [1, 2]} and section.get("future_key") == {"a": [1, 2]}


def test_bookkeeping_names_in_the_input_are_ordinary_unknown_keys():
    raw = {"extra": 1, "problems": ["x"], "key_order": None, "chip": "910B4"}
    section = NpuFacts.from_dict(raw)
    assert section.problems == () and section.chip == "910B4"
    assert section.to_dict() == raw


# ---- wrong types: tolerant, recorded ----------------------------------------------------------

def test_a_wrong_typed_value_is_recorded_and_kept_raw():
    raw = {"count": "8", "chip": "910B4", "available": 1}
    section = NpuFacts.from_dict(raw)
    assert section.count is None and section.available is None and section.chip == "910B4"
    assert section.problems == ("npu.count: expected an integer, got str '8'",
                                "npu.available: expected true or false, got int 1")
    assert section.to_dict() == raw  # still round-trips
    assert section.get("count") == "8"  # the dict view shows what the dict showed


@pytest.mark.parametrize("raw, problem", [
    ({"cpu_count": True}, "system.cpu_count: expected an integer, got bool True"),  # JSON true is not 1
    ({"interfaces": {"eth0": ["10.0.0.1", 7]}}, "system.interfaces.eth0[1]: expected a string, got int 7"),
    ({"interfaces": ["eth0"]}, "system.interfaces: expected an object, got list ['eth0']"),
    ({"shm_bytes": 1.5}, "system.shm_bytes: expected an integer, got float 1.5"),
])
def test_wrong_types_in_containers_name_the_field(raw, problem):
    section = SystemFacts.from_dict(raw)
    assert section.problems == (problem,)
    assert section.to_dict() == raw and section.cpu_count is None and section.interfaces is None


def test_nested_problems_carry_their_path_and_keep_the_rest_of_the_record():
    raw = {"installs": [{"version": 8, "home": "/usr/local/Ascend/cann"}], "active": 0}
    section = CannFacts.from_dict(raw)
    assert section.problems == ("cann.installs[0].version: expected a string, got int 8",)
    inst = section.active_install()
    assert inst is not None and inst.version is None and inst.home == "/usr/local/Ascend/cann"
    assert section.to_dict() == raw


def test_a_section_that_is_not_an_object_is_empty_with_one_problem():
    section = NpuFacts.from_dict(["not", "a", "dict"])
    assert section.problems == ("npu: expected an object, got list",)
    assert len(section) == 0 and not section and section.to_dict() == {}
    assert NpuFacts.from_dict(None) == NpuFacts() and NpuFacts.from_dict(None).problems == ()


def test_numbers_keep_their_json_spelling():
    raw = {"devices": [{"id": 0, "power_w": 87, "temp_c": 33.0, "aicore_pct": 0.0}], "seconds": 1}
    assert json.dumps(NpuFacts.from_dict(raw).to_dict()) == json.dumps(raw)


# ---- the Mapping view old readers rely on -----------------------------------------------------

def test_mapping_interface_matches_the_dict_it_was_read_from():
    raw = {"available": False, "chip": None, "devices": [{"id": 3, "name": "910B4"}], "dev_davinci": [0, 1]}
    section = NpuFacts.from_dict(raw)
    assert section.get("chip") is None and "chip" in section  # present with null, as in the dict
    assert section.get("version") is None and "version" not in section and section.get("version", "x") == "x"
    assert section["devices"] == [{"id": 3, "name": "910B4"}] and isinstance(section["devices"], list)
    assert list(section) == list(raw) and len(section) == 4 and dict(section.items()) == raw
    with pytest.raises(KeyError):
        section["version"]
    assert section.devices is not None and section.devices[0].id == 3 and section.devices[0]["name"] == "910B4"


def test_mapping_values_are_copies_and_records_are_frozen():
    section = RankTableFacts.from_dict({"path": "/t.json", "doc": {"version": "1.0", "server_list": []}})
    section["doc"]["server_list"].append("tampered")
    section.to_dict()["doc"]["version"] = "tampered"
    assert section.doc == {"version": "1.0", "server_list": []}
    with pytest.raises(dataclasses.FrozenInstanceError):
        section.path = "/other"  # type: ignore[misc]


def test_a_section_built_in_code_emits_its_set_fields_and_counts_them():
    assert not SystemFacts() and len(SystemFacts()) == 0 and SystemFacts().to_dict() == {}
    section = SystemFacts(arch="aarch64", cpu_count=192, interfaces={"eth0": ("10.0.0.1",)})
    assert section.to_dict() == {"arch": "aarch64", "cpu_count": 192, "interfaces": {"eth0": ["10.0.0.1"]}}
    assert len(section) == 3 and section.get("arch") == "aarch64" and "glibc" not in section
    assert SystemFacts.from_dict(section.to_dict()) == section
    with_extra = NpuFacts(chip="910B4", extra={"from_a_newer_probe": 1})
    assert with_extra.to_dict() == {"chip": "910B4", "from_a_newer_probe": 1} and len(with_extra) == 2
    replaced = dataclasses.replace(SystemFacts.from_dict({"arch": "x86_64"}), glibc="2.36")
    assert replaced.to_dict() == {"arch": "x86_64", "glibc": "2.36"}


def test_equality_is_by_content():
    assert SystemFacts.from_dict({"arch": "x86_64"}) == SystemFacts(arch="x86_64")
    assert SystemFacts.from_dict({"arch": "x86_64", "glibc": None}) != SystemFacts(arch="x86_64")
    assert SystemFacts(arch="x86_64") == {"arch": "x86_64"} != SystemFacts(arch="aarch64")  # as a Mapping
    assert SystemFacts() != NpuFacts()  # different sections never compare equal


def test_package_lookup_uses_pep503_names():
    py = PythonFacts.from_dict({"packages": {"torch_npu": "2.1.0.post6", "torch": None}})
    assert py.package("torch-npu") == py.package("Torch.NPU") == "2.1.0.post6"
    assert py.package("torch") is None and py.package("numpy") is None


def test_active_install_is_none_for_a_bad_index():
    assert CannFacts.from_dict({"installs": [{"version": "8.0.RC1"}], "active": 3}).active_install() is None
    assert CannFacts.from_dict({"installs": [], "active": None}).active_install() is None
