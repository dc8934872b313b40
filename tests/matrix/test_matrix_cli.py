"""`envcheck matrix check|suggest|show|lint` end to end, including the two field claims."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import DATA, REPO

from envcheck.plan import hypothetical_facts

CLAIM1 = ("--cann", "7.0.RC1", "--torch", "2.1.0", "--torch-npu", "2.1.0.post6", "--python", "3.10")
CLAIM2 = ("--cann", "8.0.RC1", "--torch", "2.3.1", "--torch-npu", "2.3.1", "--python", "3.10")


def _by_code(doc):
    return {f["code"]: f for f in doc["findings"]}


# ---- the two field claims (compat-facts section c) --------------------------------------------
def test_claim_cann_7_0_rc1_pairs_post6_is_contradicted(cli):
    """"CANN 7.0.RC1 pairs torch_npu 2.1.0.post6 with PyTorch 2.1.0": the tables say 2.1.0.post6 is the
    CANN 8.0.RC2 build; 7.0.RC1's build for PyTorch 2.1.0 is 2.1.0.rc1. The PyTorch half is right."""
    r = cli("matrix", "check", *CLAIM1, "--json")
    assert r.rc == 1
    doc = r.json()
    assert doc["verdict"] == "fail"
    f = _by_code(doc)
    assert f["EC102"]["status"] == "fail" and "CANN 8.0.RC2" in f["EC102"]["title"]
    assert "torch-npu==2.1.0rc1" in f["EC102"]["fix"]
    assert f["EC101"]["status"] == "ok"  # torch 2.1.0 does match torch_npu 2.1.0.*


def test_claim_cann_8_0_rc1_supports_2_3_1_is_contradicted(cli):
    """"CANN 8.0.RC1 supports PyTorch 2.3.1": PyTorch 2.3.1 first appears with CANN 8.0.RC2; 8.0.RC1
    supports 1.11.0, 2.1.0 and 2.2.0, and no PTA window reaches back to 8.0.RC1."""
    r = cli("matrix", "check", *CLAIM2, "--json")
    assert r.rc == 1
    f = _by_code(r.json())
    assert f["EC102"]["status"] == "fail" and "CANN 8.0.RC2" in f["EC102"]["title"]
    r = cli("matrix", "suggest", "--cann", "8.0.RC1", "--torch", "2.3.1")
    assert r.rc == 1 and "No compatible set" in r.out


def _sets(cli, *argv):
    r = cli("matrix", "suggest", *argv, "--json")
    assert r.rc == 0, r.err
    return [(s["torch"], s["torch_npu"], s["verdict"]) for s in r.json()["sets"]], r.json()["sets"]


def test_suggest_cann_7_0_rc1(cli):
    sets, full = _sets(cli, "--cann", "7.0.RC1")
    assert sets == [("2.1.0", "2.1.0.rc1", "ok"), ("2.0.1", "2.0.1", "ok"), ("1.11.0", "1.11.0.post4", "ok")]
    assert full[0]["pip"] == "pip install torch==2.1.0 torch-npu==2.1.0rc1"
    assert full[0]["hdk"] == "23.0.RC3"
    text = cli("matrix", "suggest", "--cann", "7.0.RC1").out
    assert "pip install torch==2.1.0 torch-npu==2.1.0rc1" in text
    assert "Ascend-cann-toolkit_7.0.RC1_linux-<arch>.run" in text and "2.1.0.post6" not in text


def test_suggest_cann_8_0_rc1(cli):
    sets, full = _sets(cli, "--cann", "8.0.RC1", "--arch", "x86_64", "--chip", "910B4")
    assert [s[:2] for s in sets] == [("2.2.0", "2.2.0"), ("2.1.0", "2.1.0.post4"), ("2.1.0", "2.1.0.post3"),
                                     ("1.11.0", "1.11.0.post11")]
    assert [s[2] for s in sets] == ["ok", "warn", "warn", "ok"]  # d1: post3 vs post4, both sources named
    assert full[0]["pip"].endswith("--extra-index-url https://download.pytorch.org/whl/cpu")
    assert "Ascend-cann-kernels-910b_8.0.RC1_linux-x86_64.run" in full[0]["packages"]["cann"]
    assert not any(s[0] == "2.3.1" for s in sets)


def test_suggest_filters_newest_first(cli):
    sets, full = _sets(cli, "--torch", "2.1.0", "--python-version", "3.11")
    canns = [s["cann"] for s in full]
    assert canns[0] == "8.3.RC1" and "8.0.RC2" not in canns  # post6 has no cp311 wheel
    assert all(s["torch"] == "2.1.0" for s in full)
    sets, _ = _sets(cli, "--chip", "Ascend910", "--torch", "2.1.0")
    assert sets and all(s[1] not in ("2.1.0.post6", "2.1.0.post3", "2.1.0") for s in sets)  # A3 needs 8.0.RC3+


def test_suggest_smallest_change_for_a_probed_machine(cli, tmp_path):
    facts = hypothetical_facts(cann="7.0.RC1", driver="23.0.rc3", torch="2.1.0", torch_npu="2.1.0.post6",
                               python="3.10.12", chip="910B4", arch="aarch64")
    path = tmp_path / "facts.json"
    path.write_text(json.dumps({"facts": facts.to_dict()}))
    r = cli("--facts", str(path), "matrix", "suggest", "--json")
    assert r.rc == 1
    plan = r.json()["plan"]
    assert plan["target"]["cann"] == "7.0.RC1" and plan["target"]["torch_npu"] == "2.1.0.rc1"
    assert plan["steps"] == ["pip install torch==2.1.0 torch-npu==2.1.0rc1"]
    text = cli("--facts", str(path), "matrix", "suggest").out
    assert "Smallest change" in text and "EC102" in text
    ok = hypothetical_facts(cann="8.0.RC2", driver="24.1.rc2", torch="2.1.0", torch_npu="2.1.0.post6", python="3.10.4")
    path.write_text(json.dumps({"facts": ok.to_dict()}))
    r = cli("--facts", str(path), "matrix", "suggest")
    # issue 13: suggest judges the machine as `envcheck` does; these facts have consistent versions but no
    # NPU and no CANN environment, so it says the versions are fine and what still fails (same exit status)
    check = cli("--facts", str(path), "--no-smoke")
    assert "no version has to change" in r.out and "Still failing" in r.out and r.rc == check.rc == 1


def test_suggest_smallest_change_moves_the_driver_last(cli, tmp_path):
    facts = hypothetical_facts(cann="8.5.0", driver="24.1.0", torch="2.6.0", torch_npu="2.6.0.post5", python="3.10.12")
    path = tmp_path / "facts.json"
    path.write_text(json.dumps({"facts": facts.to_dict()}))
    plan = cli("--facts", str(path), "matrix", "suggest", "--json").json()["plan"]
    # HDK 24.1.0 is outside 8.5.0's range: moving CANN (10) beats reflashing the HDK (20)
    assert plan["target"]["cann"] != "8.5.0"
    assert not any(s.startswith("driver") for s in plan["steps"])


# ---- matrix check ----------------------------------------------------------------------------
def test_check_ok_environment_exit_0_and_schema(cli):
    import jsonschema

    r = cli("matrix", "check", "--cann", "8.0.RC2", "--driver", "24.1.rc2", "--torch", "2.1.0+cpu",
            "--torch-npu", "2.1.0.post6", "--python", "3.10.12", "--chip", "910B4", "--json")
    assert r.rc == 0, r.out
    doc = r.json()
    assert doc["verdict"] == "ok" and doc["command"] == "matrix check"
    schema = json.loads((REPO / "envcheck" / "schemas" / "report.schema.json").read_text())
    jsonschema.validate(doc, schema)
    assert {f["code"] for f in doc["findings"]} == {f"EC10{i}" for i in range(1, 9)}


def test_check_warn_exit_codes(cli):
    argv = ("matrix", "check", "--cann", "8.2.RC1", "--torch", "2.1.0", "--torch-npu", "2.1.0.post10")
    r = cli(*argv, "--json")
    assert r.rc == 0 and r.json()["verdict"] == "warn"
    assert cli(*argv, "--strict").rc == 1


def test_check_text_output_and_select(cli):
    r = cli("matrix", "check", *CLAIM1)
    assert r.rc == 1 and "EC102" in r.out and "Compatibility" in r.out
    r = cli("matrix", "check", *CLAIM1, "--ignore", "EC102", "--json")
    assert r.rc == 0 and "EC102" not in _by_code(r.json())


@pytest.mark.parametrize("argv,needle", [
    (("--cann", "eight"), "--cann"),
    (("--driver", "24.1"), "--driver"),
    (("--torch", "2.1.0-foo!"), "--torch"),
    (("--torch-npu", "latest"), "--torch-npu"),
    (("--python", "three"), "--python"),
    (("--kernels", "910b-ops"), "--kernels"),
    ((), "give at least one"),
])
def test_check_bad_input_exit_2_one_line(cli, argv, needle):
    r = cli("matrix", "check", *argv)
    assert r.rc == 2
    assert r.err.count("\n") == 1 and needle in r.err and "Traceback" not in r.err


def test_check_with_kernels_flag(cli):
    r = cli("matrix", "check", "--cann", "9.0.0", "--chip", "910B4", "--kernels", "910b-ops=8.5.0", "--json")
    assert _by_code(r.json())["EC106"]["status"] == "warn"


def test_site_matrix_and_broken_matrix(cli, tmp_path):
    site = DATA / "matrix" / "minimal.yaml"
    r = cli("matrix", "check", "--matrix", str(site), "--cann", "8.0.RC2", "--torch", "2.1.0",
            "--torch-npu", "2.1.0.post6", "--json")
    assert r.rc == 0 and r.json()["verdict"] == "ok"
    r = cli("matrix", "check", "--matrix", str(site), "--cann", "8.0.RC1", "--torch-npu", "2.1.0.post6", "--json")
    assert _by_code(r.json())["EC102"]["status"] == "fail"
    broken = DATA / "matrix" / "unknown-source.yaml"
    for action in (("check", "--cann", "8.0.RC1"), ("suggest", "--cann", "8.0.RC1"), ("show",)):
        r = cli("matrix", *action, "--matrix", str(broken))
        assert r.rc == 2 and f"{broken}:19: unknown source 'SRC-Z'" in r.err, (action, r.err)
    r = cli("matrix", "show", "--matrix", str(tmp_path / "missing.yaml"))
    assert r.rc == 2 and "cannot read matrix" in r.err


def test_matrix_without_action(cli):
    r = cli("matrix")
    assert r.rc == 2 and "choose an action" in r.err


# ---- show ------------------------------------------------------------------------------------
def test_show_table_json_markdown(cli):
    r = cli("matrix", "show", "--cann", "8.0.RC1")
    assert r.rc == 0 and "2.1.0.post3" in r.out and "d1" in r.out and "8.0.RC2" not in r.out
    rows = cli("matrix", "show", "--torch", "2.1.0", "--json").json()["rows"]
    assert rows and all(row["torch"] == "2.1.0" for row in rows)
    assert any(row["torch_npu"] == "2.1.0.post6" and row["wheels"] == "3.8-3.10" for row in rows)
    md = cli("matrix", "show", "--markdown").out
    assert md.startswith("| CANN |") and "](https://" in md
    assert cli("matrix", "show", "--torch", "0.1.0").rc == 1


# ---- lint ------------------------------------------------------------------------------------
LINT = {
    "syntax.yaml": (20, "not valid YAML"),
    "float-version.yaml": (19, "is a number, expected a string"),
    "missing-key.yaml": (19, "'torch_npu' is a required property"),
    "unknown-field.yaml": (17, "'ptaa' was unexpected"),
    "not-a-mapping.yaml": (1, "is not of type 'object'"),
    "bad-version.yaml": (21, "'8.0.XX1' does not have the expected form"),
    "bad-url.yaml": (6, "sources.SRC-B.url"),
    "backwards-python.yaml": (19, "runs backwards"),
    "unknown-source.yaml": (19, "unknown source 'SRC-Z'"),
    "unknown-conflict.yaml": (24, "unknown conflict 'd7'"),
    "unused-conflict.yaml": (14, "d2 is referenced by no row"),
    "dup-key.yaml": (17, "duplicate key 'pta'"),
    "dup-release.yaml": (21, "duplicate release 8.0.rc2 (also on line 15)"),
    "dup-pairing.yaml": (25, "duplicate torch_npu 2.1.0.post3"),
    "dup-wheel.yaml": (31, "duplicate version 2.1.0.post06"),
    "torch-mismatch.yaml": (19, "built for torch 2.1.0, not 2.2.0"),
    "two-releases.yaml": (25, "paired with several releases without a conflict entry"),
    "hdk-contradiction.yaml": (17, "both stated and unsupported"),
    "unsorted.yaml": (21, "newest release first"),
    "unsorted-pairings.yaml": (20, "newest PyTorch first"),
}


def test_every_fixture_has_an_expectation():
    names = {p.name for p in (DATA / "matrix").glob("*.yaml")} - {"minimal.yaml"}
    assert names == set(LINT)


@pytest.mark.parametrize("name", sorted(LINT))
def test_lint_catches(cli, name):
    path = DATA / "matrix" / name
    r = cli("matrix", "lint", "--matrix", str(path))
    assert r.rc == 2
    line, fragment = LINT[name]
    hits = [ln for ln in r.out.splitlines() if ln.startswith(f"{path}:{line}: ") and fragment in ln]
    assert hits, r.out


def test_lint_clean_files(cli):
    r = cli("matrix", "lint")
    assert r.rc == 0 and r.out.startswith("matrix.yaml: ok (")
    r = cli("matrix", "lint", "--matrix", str(DATA / "matrix" / "minimal.yaml"))
    assert r.rc == 0


# ---- no torch --------------------------------------------------------------------------------
def test_matrix_check_does_not_import_torch():
    code = ("import sys; from envcheck.cli import main; rc = main(['matrix', 'check', '--cann', '8.0.RC2', "
            "'--torch', '2.1.0', '--torch-npu', '2.1.0.post6', '--python', '3.10', '--json']); "
            "bad = sorted(m for m in sys.modules if m == 'torch' or m.startswith(('torch.', 'torch_npu'))); "
            "print('RC', rc, 'TORCH', bad, file=sys.stderr)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=str(REPO))
    assert "RC 0 TORCH []" in p.stderr, p.stderr[-2000:]


def test_full_check_with_a_broken_site_matrix_is_a_usage_error(cli):
    broken = DATA / "matrix" / "unknown-source.yaml"
    r = cli("--matrix", str(broken), "--no-smoke", "--select", "EC1")
    assert r.rc == 2 and f"{broken}:19:" in r.err
    r = cli("--matrix", str(DATA / "matrix" / "minimal.yaml"), "--no-smoke", "--select", "EC1", "--json")
    assert r.rc in (0, 1) and r.json()["findings"]


@pytest.mark.skipif(not (DATA / "roots" / "root-910b-8.2").is_dir(), reason="probe fixture trees not present")
def test_suggest_probes_a_sysroot(cli):
    """No flags: the probe reads the sysroot (CANN 8.2.RC1 with HDK 25.0.rc1.1: compatible, so nothing fails)."""
    r = cli("--root", str(DATA / "roots" / "root-910b-8.2"), "matrix", "suggest", "--json")
    doc = r.json()
    assert doc["current"]["cann"] == "8.2.RC1" and doc["consistent"] is True and doc["plan"] is None
    # issue 13: the exit status is envcheck's on the same facts (here CANN is not loaded: EC201 fails)
    check = cli("--root", str(DATA / "roots" / "root-910b-8.2"), "--no-smoke")
    assert r.rc == check.rc and doc["verdict"] == ("fail" if check.rc else doc["verdict"])
