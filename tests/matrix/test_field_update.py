"""Every fact of the 2026-11 field update (shared/research/field-update-2026-11.md), sections A and B.

One case per fact, named by its id (W1 ... W13) or, for section B, by topic. Matrix facts go
through the CLI (`envcheck matrix check ... --json`, `matrix suggest`); kb facts through the kb.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from envcheck.kb.entries import load_kb
from envcheck.kb.gate import gate_status
from envcheck.matrix import load

REPO = Path(__file__).resolve().parents[2]
MX = load()
KB = load_kb(REPO / "kb")


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "envcheck", *args], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=120)


def check(**flags: str) -> dict:
    args = ["matrix", "check", "--json"]
    for k, v in flags.items():
        args += [f"--{k.replace('_', '-')}", v]
    r = cli(*args)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def findings(doc: dict, code: str) -> list[dict]:
    return [f for f in doc["findings"] if f["code"] == code]


def worst(doc: dict, code: str) -> str:
    order = ["skip", "ok", "warn", "fail", "error"]
    return max((f["status"] for f in findings(doc, code)), key=order.index)


# --- A. compatibility matrix ------------------------------------------------------------------
@pytest.mark.parametrize("cann,torch,npu,target", [
    ("8.5.0", "2.9.0", "2.9.0.post2", "2.9.0"),          # a 26.0.0 build on CANN 8.5.0
    ("9.1.0", "2.7.1", "2.7.1.post2", "2.7.1.post8"),    # a 7.3.0 build on CANN 9.1.0
    ("9.0.0", "2.7.1", "2.7.1.post8", "2.7.1.post4"),    # a 26.1.0 build on CANN 9.0.0
])
def test_W1_window_pairing_warns_naming_the_build_target_never_fails(cann, torch, npu, target):
    doc = check(cann=cann, torch=torch, torch_npu=npu, python="3.11")
    assert doc["verdict"] == "warn"
    [f] = findings(doc, "EC102")
    assert f["status"] == "warn"
    assert "per the window, not the paired build" in f["title"] and f"torch_npu {target}" in f["title"]
    assert "compatible per the window, not the paired build" in f["detail"]


def test_W1_window_is_data_with_line_wildcards():
    wins = [w for w in MX.pta_windows if "26.1.X" in w.pta]
    assert wins and set(wins[0].cann) == {"8.5.X", "9.0.X", "9.1.X"}
    assert set(wins[0].pta) == {"7.3.X", "26.0.X", "26.1.X"}
    assert wins[0].has_cann("8.5.2") and wins[0].has_pta("26.1.1") and not wins[0].has_cann("8.3.RC1")


def test_W1_outside_the_window_still_fails():
    doc = check(cann="8.3.RC1", torch="2.9.0", torch_npu="2.9.0.post2", python="3.11")
    assert worst(doc, "EC102") == "fail"


@pytest.mark.parametrize("torch,npu", [("2.12.0", "2.12.0.post2"), ("2.11.0", "2.11.0.post2"),
                                       ("2.10.0", "2.10.0.post6"), ("2.9.0", "2.9.0.post8"), ("2.7.1", "2.7.1.post10")])
def test_W2_torchnpu_26_1_1_builds_pair_with_cann_9_1_1(torch, npu):
    doc = check(cann="9.1.1", torch=torch, torch_npu=npu, python="3.11")
    assert worst(doc, "EC102") == "ok" and "PTA 26.1.1" in findings(doc, "EC102")[0]["title"]
    assert npu in MX.wheels  # all five are on PyPI


def test_W2_26_1_1_build_on_cann_9_1_0_is_in_window_not_a_failure():
    assert worst(check(cann="9.1.0", torch="2.12.0", torch_npu="2.12.0.post2", python="3.11"), "EC102") == "warn"


@pytest.mark.parametrize("driver,status", [("26.1.1", "ok"), ("25.2.0", "warn"), ("26.1.0", "warn"),
                                           ("25.0.rc1.1", "fail")])
def test_W3_cann_9_1_1_pairs_hdk_26_1_1_and_keeps_the_9_1_0_driver_grid(driver, status):
    assert worst(check(cann="9.1.1", driver=driver, chip="910B3"), "EC104") == status


def test_W4_cann_9_0_0_with_torch_npu_2_10_0_is_ok():
    doc = check(cann="9.0.0", torch="2.10.0", torch_npu="2.10.0.post2", python="3.11")
    assert worst(doc, "EC102") == "ok" and doc["verdict"] == "ok"
    # the 2.10.0 release itself pairs as well; only its known defect (advisory k2, fixed in .post2) warns
    doc = check(cann="9.0.0", torch="2.10.0", torch_npu="2.10.0", python="3.11")
    assert worst(doc, "EC102") == "ok" and worst(doc, "EC108") == "warn" and doc["verdict"] == "warn"


@pytest.mark.parametrize("npu", ["2.12.0", "2.11.0"])
def test_W5_26_1_0_builds_stop_at_python_3_13(npu):
    doc = check(cann="9.1.0", torch=npu, torch_npu=npu, python="3.14")
    assert worst(doc, "EC103") == "fail"
    assert worst(check(cann="9.1.0", torch=npu, torch_npu=npu, python="3.13"), "EC103") == "ok"
    assert str(MX.wheel_python(npu)) == "3.10-3.13" and "3.14" in MX.wheel_python(npu + ".post3")


def test_W6_cann_9_1_0_supports_python_3_14():
    doc = check(cann="9.1.0", python="3.14")
    assert any(f["status"] == "ok" and "CANN 9.1.0's range" in f["title"] for f in findings(doc, "EC103"))


@pytest.mark.parametrize("version", ["2.13.0", "2.14.0"])
def test_W7_newer_torch_npu_is_its_own_newer_than_matrix_finding(version):
    doc = check(cann="9.1.0", torch=version, torch_npu=version, python="3.12")
    [f] = findings(doc, "EC102")
    assert f["status"] == "warn" and "newer than the matrix" in f["title"]
    assert f["kb"] == ["version-newer-than-matrix"] and f["data"]["newer_than_matrix"] is True
    assert "no table pairs PyTorch" in f["detail"] and "downgrade" not in f["fix"]
    assert worst(doc, "EC101") == "ok"


def test_W7_as_of_date_is_exposed():
    assert re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", MX.as_of) and MX.as_of >= "2026-11-30"
    doc = json.loads(cli("matrix", "suggest", "--cann", "9.1.1", "--json").stdout)
    assert doc["matrix"]["as_of"] == MX.as_of


def suggest(*flags: str) -> str:
    r = cli("matrix", "suggest", *flags)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_W8_firmware_is_named_in_words_not_by_a_made_up_file():
    out = suggest("--cann", "9.0.0", "--chip", "910B3", "--arch", "aarch64")
    assert "npu-firmware_" not in out
    assert "the npu-firmware package of Ascend HDK 26.0.RC1 for 910b" in out


@pytest.mark.parametrize("cann,name", [("8.3.RC1", "Atlas-A3-cann-kernels_8.3.RC1_linux-aarch64.run"),
                                       ("8.5.0", "Ascend-cann-A3-ops_8.5.0_linux-aarch64.run")])
def test_W9_a3_kernels_package_name_by_cann_version(cann, name):
    assert name in suggest("--cann", cann, "--chip", "Ascend910_9391", "--arch", "aarch64")


def test_W10_hdk_packages_use_linux_x86_64_with_a_hyphen():
    out = suggest("--cann", "8.5.0", "--chip", "910B3", "--arch", "x86_64")
    assert "Ascend-hdk-910b-npu-driver_25.5.0_linux-x86-64.run" in out
    assert "Ascend-cann-toolkit_8.5.0_linux-x86_64.run" in out   # CANN packages keep x86_64


def test_W11_install_order_first_install_driver_then_firmware_upgrade_the_reverse():
    out = suggest("--cann", "8.5.0", "--chip", "910B3", "--arch", "aarch64")
    assert "first install: driver, then firmware" in out and "upgrade: firmware, then driver" in out
    doc = check(cann="9.1.1", driver="25.0.rc1.1", chip="910B3", arch="aarch64")
    assert "first install: driver, then firmware" in findings(doc, "EC104")[0]["fix"]


def test_W12_unverified_claims_are_dropped():
    assert MX.family("a2").since is None
    assert MX.family("i2").mindspore is True
    assert worst(check(cann="6.3.RC1", chip="910B4"), "EC105") != "fail"
    assert worst(check(cann="8.5.0", mindspore="2.7.2", chip="310P3"), "EC107") == "ok"


@pytest.mark.parametrize("cann,ms,status", [("8.5.0", "2.7.2", "ok"), ("8.3.RC1", "2.7.1", "ok"),
                                            ("8.2.RC1", "2.7.0rc1", "ok"), ("8.3.RC1", "2.7.1.post1", "warn"),
                                            ("8.5.0", "2.8.0", "warn")])
def test_W13_mindspore_pairings(cann, ms, status):
    assert worst(check(cann=cann, mindspore=ms), "EC107") == status


# --- suggest names only files that follow the official naming -----------------------------------
VER = r"[0-9]+\.[0-9]+\.[0-9A-Za-z.]+"
OFFICIAL = [
    rf"Ascend-cann-toolkit_{VER}_linux-(aarch64|x86_64)\.run",
    rf"Ascend-cann-kernels-(910b|910|310p|310b|310|950)_{VER}_linux-(aarch64|x86_64)\.run",
    rf"Atlas-A3-cann-kernels_{VER}_linux-(aarch64|x86_64)\.run",
    rf"Ascend-cann-(910b|910|A3|310p|310b|310|950)-ops_{VER}_linux-(aarch64|x86_64)\.run",
    r"Ascend-hdk-(910b|910|310p|310b|310|950)-npu-driver_[0-9]+\.[0-9]+\.([0-9]+|rc[0-9]+)(\.[0-9]+)?_linux-(aarch64|x86-64)\.run",
    r"Atlas-A3-hdk-npu-driver_[0-9]+\.[0-9]+\.([0-9]+|rc[0-9]+)(\.[0-9]+)?_linux-(aarch64|x86-64)\.run",
]


@pytest.mark.parametrize("chip", ["910B3", "Ascend910_9391", "910A", "310P3"])
@pytest.mark.parametrize("arch", ["aarch64", "x86_64"])
def test_suggest_names_no_file_outside_the_official_naming(chip, arch):
    doc = json.loads(cli("matrix", "suggest", "--chip", chip, "--arch", arch, "--json").stdout)
    names = [n for s in doc["sets"] for grp in s["packages"].values() for item in grp
             for n in re.findall(r"[A-Za-z0-9][A-Za-z0-9_.-]*\.run\b", item)]
    assert names, "suggest printed no package at all"
    bad = sorted({n for n in names if not any(re.fullmatch(p, n) for p in OFFICIAL)})
    assert not bad, bad
    assert not any("firmware" in n for n in names)


# --- B. kb corrections ---------------------------------------------------------------------------
def body(eid: str) -> str:
    e = KB.get(eid)
    assert e is not None, eid
    return e.body


def test_B_hccl_exec_timeout_default_1836_and_aiv_cap_1091():
    text = body("hccl-timeout") + body("hccl-watchdog-vs-exec-timeout")
    assert "1836" in text and not re.search(r"default 1800", text)
    assert "1091" in body("aiv-mode-exec-timeout-cap") and "17340" in body("hccl-watchdog-vs-exec-timeout")


def test_B_torch_npu_watchdog_is_exec_timeout_plus_1800_when_timeout_is_default():
    text = body("hccl-watchdog-vs-exec-timeout")
    assert "HCCL_EXEC_TIMEOUT + 1800 s" in text and "explicit" in text


def test_B_hccl_connect_timeout_range_and_plus_20s():
    text = body("hccl-connect-timeout")
    assert "[120, 7200]" in text and "+ 20 s" in text


def test_B_import_torch_npu_message_depends_on_release_line():
    text = body("cann-env-not-loaded")
    assert "PTA 26.0.0" in text and "without\nERR00008" in text.replace("without ERR00008", "without\nERR00008")
    assert "up to 2.9" not in text and "PTA 26.1.0" in text


def test_B_log_to_stdout_variable_is_ascend_slog_print_to_stdout():
    # released CANN (through 9.2.0-beta.2) reads only ASCEND_SLOG_PRINT_TO_STDOUT; hicann/runtime master renamed it to
    # ASCEND_LOG_PRINT_TO_STDOUT (a3cc8c30b, #768, 2026-08-19; found by session 11's review). The Fix must turn off the
    # released name; it may name the new one too only where the entry says it is master-only
    entry = KB.get("log-level-verbose")
    fix = entry.section("Fix")
    assert re.search(r"unset [^\n]*ASCEND_SLOG_PRINT_TO_STDOUT", fix)
    if "ASCEND_LOG_PRINT_TO_STDOUT" in fix:
        assert re.search(r"`ASCEND_LOG_PRINT_TO_STDOUT` exists so far only on the runtime's master", entry.body)


def test_B_force_overflow_check_is_gated_to_2_14_0():
    e = KB.get("loss-scaling-gradscaler")
    [g] = [g for g in e.meta["gates"] if "FORCE_OVERFLOW_CHECK" in g["what"]]
    assert gate_status(g, {"torch_npu": "2.12.0", "cann": "9.1.0"})[0] is False
    assert gate_status(g, {"torch_npu": "2.14.0", "cann": "9.1.0"})[0] is True
    assert "INF_NAN_MODE_ENABLE=1" in e.body and "not a mode switch" in e.body


def test_B_fallback_cpu_disable_advice_is_gated_wherever_given():
    users = [e for e in KB.entries if "TORCH_NPU_FALLBACK_CPU_DISABLE=1" in e.section("Fix") + e.section("Verify")]
    assert users
    for e in users:
        gates = [g for g in e.meta.get("gates", []) if "TORCH_NPU_FALLBACK_CPU_DISABLE" in g["what"]]
        assert gates, e.id
        assert gate_status(gates[0], {"torch_npu": "2.12.0"})[0] is False, e.id
        assert gate_status(gates[0], {"torch_npu": "2.12.0.post2"})[0] is False, e.id
        assert gate_status(gates[0], {"torch_npu": "2.13.0"})[0] is True, e.id


def test_B_1g_huge_pages_also_need_cann_8_1_rc1():
    assert "8.1.RC1" in body("huge-page-1g-unsupported")


def test_B_8_5_layout_paths_are_offered():
    for eid in ("ops-kernels-not-installed", "kernels-toolkit-mismatch"):
        assert "/usr/local/Ascend/cann" in body(eid), eid


# --- C. the new entries exist -------------------------------------------------------------------
NEW = ["npu-context-empty-107002", "numpy2-with-cann-before-9", "online-op-compilation-slow", "hccl-port-collision",
       "flash-attn-unavailable-on-npu", "bf16-unsupported-910a-310p", "aiv-mode-exec-timeout-cap",
       "hccl-env-invalid-ei0001", "alloc-conf-both-set", "megatron-mindspeed-version-conflict",
       "torch-compile-inductor-on-npu", "qlora-bnb-fp8-unsupported", "inf-nan-vs-saturation-mode",
       "deepspeed-npu-fusedadam", "task-queue-interactive-off", "cann-owner-mismatch-warning"]


@pytest.mark.parametrize("eid", NEW)
def test_C_new_entry_has_every_section_and_a_source(eid):
    e = KB.get(eid)
    assert e is not None and e.sources and e.title_zh and e.summary_zh
    for name in ("Symptom", "Cause", "Fix", "Verify"):
        assert e.section(name), (eid, name)


# --- staying current: the index check (offline, recorded answers) ---------------------------------
PYPI = REPO / "tests" / "data" / "pypi"


def recorded(name: str) -> dict:
    return json.loads((PYPI / f"{name}.json").read_text(encoding="utf-8"))


def test_index_check_lists_the_torch_releases_the_matrix_lacks():
    from envcheck.matrix import index as ic

    found = ic.check(MX, recorded)
    assert [(m.package, m.version) for m in found] == [("torch", "2.14.0"), ("torch", "2.13.0")]   # W7
    assert "torch 2.14.0  (Python 3.10, 3.11, 3.12, 3.13)" in ic.render(found, MX)


def test_index_check_reports_a_missing_torch_npu_wheel_with_its_python_tags(tmp_path):
    from envcheck.matrix import index as ic
    from envcheck.matrix import parse_text

    text = (REPO / "matrix.yaml").read_text(encoding="utf-8")
    cut = re.sub(r'\n    "2\.14\.0": "3\.10-3\.14"', "", text)
    assert cut != text
    mx = parse_text(cut, str(tmp_path / "matrix.yaml"))
    found = ic.missing(mx, "torch-npu", recorded("torch-npu"))
    assert [m.version for m in found] == ["2.14.0"]
    assert found[0].python == ("3.10", "3.11", "3.12", "3.13", "3.14")
    assert found[0].platforms == ("manylinux_2_28_aarch64", "manylinux_2_28_x86_64")   # as recorded (TSV)


def test_index_check_ignores_yanked_files_and_history_older_than_the_matrix():
    from envcheck.matrix import index as ic

    doc = {"releases": {"0.1.0": [{"filename": "torch-0.1.0-cp36-cp36m-linux_x86_64.whl"}],
                        "2.99.0": [{"filename": "torch-2.99.0-cp312-cp312-manylinux_2_28_x86_64.whl", "yanked": True}],
                        "2.98.0": [{"filename": "torch-2.98.0-cp312-cp312-manylinux_2_28_x86_64.whl"}]}}
    assert [m.version for m in ic.missing(MX, "torch", doc)] == ["2.98.0"]


def test_index_check_bad_answer_is_a_one_line_usage_error():
    from envcheck.errors import UsageError
    from envcheck.matrix import index as ic

    with pytest.raises(UsageError):
        ic.missing(MX, "torch", {"info": {}})
