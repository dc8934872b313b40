"""CLI end to end for the probe side: no torch import, bad input exits 2, JSON schema, redaction."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import DATA, REPO

ROOTS = DATA / "roots"
STUB_BIN = DATA / "npu-smi" / "bin"
SECRET_TOKEN = "tok_9f8e7d6c5b4a39281706f5e4"
GH_TOKEN = "ghp_Zq8Xw7Vu6Ts5Rq4Po3Nm2Lk1Jh0Gf9Ed8Cb7"


@pytest.mark.parametrize("argv", [["--help"], ["probe"], ["probe", "--json"], ["probe", "-v"]])
def test_no_torch_import(argv):
    code = ("import sys\nfrom envcheck.cli import main\n"
            f"rc = main({argv!r})\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'torch_npu', 'mindspore'))\n"
            "assert not bad, bad\nassert rc == 0, rc\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(REPO), timeout=60)
    assert p.returncode == 0, p.stderr[-2000:]


@pytest.mark.parametrize("argv", [["probe", "--root", "/nonexistent"], ["--root", "/nonexistent"],
                                  ["probe", "--root", "/etc/passwd"]])
def test_bad_root_exits_2_one_line(cli, argv):
    res = cli(*argv)
    assert res.rc == 2 and res.out == ""
    assert res.err.startswith("envcheck: error: --root") and res.err.count("\n") == 1


def test_check_json_on_fixture_validates_against_schema(cli, monkeypatch):
    jsonschema = pytest.importorskip("jsonschema")
    monkeypatch.setenv("PATH", f"{STUB_BIN}:/usr/bin:/bin")
    monkeypatch.setenv("NPU_SMI_FIXTURE", "910b4")
    res = cli("--no-smoke", "--json", "--root", str(ROOTS / "root-910b-8.2"))
    doc = res.json()
    schema = json.loads((REPO / "envcheck" / "schemas" / "report.schema.json").read_text())
    jsonschema.validate(doc, schema)
    codes = {f["code"]: f["status"] for f in doc["findings"]}
    assert codes["EC301"] == "ok" and codes["EC309"] == "ok" and codes["EC201"] == "fail"
    assert res.rc == 1  # EC201 fails: set_env.sh not sourced in this test's environment
    assert doc["facts"]["cann"]["installs"][0]["version"] == "8.2.RC1"


@pytest.mark.parametrize("tree", ["root-910b-8.2", "nonroot-home", "cann-no-driver", "broken", "new-8.5"])
def test_every_fixture_tree_runs_clean_through_the_cli(cli, monkeypatch, tree):
    monkeypatch.setenv("HOME", "/home/alice")
    monkeypatch.setenv("ASCEND_HOME_PATH", "/usr/local/Ascend/nonexistent")
    res = cli("--no-smoke", "--json", "--root", str(ROOTS / tree))
    assert res.rc in (0, 1) and "Traceback" not in res.err
    doc = res.json()
    errors = [f for f in doc["findings"] if f["status"] == "error" and f["code"] != "EC001"]
    assert errors == []  # no check crashed on any tree
    text = cli("probe", "--root", str(ROOTS / tree))
    assert text.rc == 0 and text.out.startswith("System\n") and "\nCANN\n" in text.out


def test_probe_text_is_a_summary_and_verbose_adds_sources(cli, monkeypatch):
    monkeypatch.setenv("PATH", f"{STUB_BIN}:/usr/bin:/bin")
    monkeypatch.setenv("NPU_SMI_FIXTURE", "310p3")
    plain = cli("probe", "--root", str(ROOTS / "root-910b-8.2")).out
    assert not plain.lstrip().startswith("{")
    assert "8.2.RC1  /usr/local/Ascend/ascend-toolkit/latest  (classic, latest, active)" in plain
    assert "devices   6 × 310P3" in plain and "driver    25.0.rc1.1" in plain
    verbose = cli("probe", "-v", "--root", str(ROOTS / "root-910b-8.2")).out
    source = "[/usr/local/Ascend/driver/version.info]"
    assert source in verbose and source not in plain


def test_secrets_never_reach_any_output(cli, monkeypatch, tmp_path):
    monkeypatch.setenv("MY_API_TOKEN", SECRET_TOKEN)
    monkeypatch.setenv("ASCEND_CUSTOM_URL", f"https://ci:{SECRET_TOKEN}@mirror.example/x")
    monkeypatch.setenv("HCCL_DEBUG_NOTE", GH_TOKEN)
    monkeypatch.setenv("MASTER_ADDR", GH_TOKEN)
    root = str(ROOTS / "root-910b-8.2")
    outs = [cli("probe", "--root", root).out, cli("probe", "-v", "--root", root).out,
            cli("probe", "--json", "--root", root).out, cli("--no-smoke", "-v", "--root", root).out,
            cli("--no-smoke", "--json", "--root", root, "--junit", str(tmp_path / "j.xml")).out,
            (tmp_path / "j.xml").read_text()]
    for out in outs:
        assert SECRET_TOKEN not in out and GH_TOKEN not in out
    doc = json.loads(outs[2])
    assert "MY_API_TOKEN" not in doc["facts"]["env"]
    assert doc["facts"]["env"]["ASCEND_CUSTOM_URL"] == "https://ci:<redacted>@mirror.example/x"


def test_probe_snapshot_can_be_judged_offline(cli, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", f"{STUB_BIN}:/usr/bin:/bin")
    monkeypatch.setenv("NPU_SMI_FIXTURE", "910b4-unhealthy")
    snap = cli("probe", "--json", "--root", str(ROOTS / "cann-no-driver")).out
    (tmp_path / "facts.json").write_text(snap)
    monkeypatch.setenv("PATH", "/nonexistent")  # the judgement must not re-probe this machine
    res = cli("--facts", str(tmp_path / "facts.json"), "--json", "--no-smoke", "--select", "EC3")
    codes = {f["code"]: f["status"] for f in res.json()["findings"]}
    assert codes["EC302"] == "fail" and codes["EC306"] == "fail" and codes["EC303"] == "fail"
