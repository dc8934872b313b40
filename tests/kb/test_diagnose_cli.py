"""`envcheck diagnose` on files, directories, gzip, stdin; exit codes, JSON, notes, redaction."""
from __future__ import annotations

import gzip
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from conftest import DATA

FIXTURE_KB = str(DATA / "diagnose" / "kb")
LIBHCCL = "ImportError: libhccl.so: cannot open shared object file: No such file or directory"
TRACEBACK = f"""Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/torch_npu/__init__.py", line 17, in <module>
    import torch_npu.npu
  File "/usr/local/lib/python3.10/dist-packages/torch_npu/utils/__init__.py", line 1, in <module>
    from torch_npu import _C
{LIBHCCL}
"""
OOM = "RuntimeError: NPU out of memory. Tried to allocate 5.03 GiB (NPU 3; 60.96 GiB total capacity)"
PLOG_OK = "[INFO] HCCL(137309,python3):2025-12-24-16:19:45.416.014 [hccl_comm.cc:100] [137400] init ok\n"


@pytest.fixture
def diag(cli):
    return lambda *argv: cli("diagnose", "--kb", FIXTURE_KB, *argv)


def test_stdin_traceback_is_diagnosed():
    p = subprocess.run([sys.executable, "-m", "envcheck", "diagnose", "--kb", FIXTURE_KB, "-"],
                       input=TRACEBACK, capture_output=True, text=True, timeout=60)
    assert p.returncode == 1, p.stderr
    first = p.stdout.splitlines()[2]
    assert first.startswith(" 1. fx-libs-missing  [env-not-loaded]")
    assert f"<stdin>:6: {LIBHCCL}" in p.stdout
    assert "fix: Load the CANN environment" in p.stdout
    assert "source /usr/local/Ascend/ascend-toolkit/set_env.sh" in p.stdout
    assert "envcheck kb show fx-libs-missing" in p.stdout


def test_json_has_the_same_data(diag, tmp_path):
    log = tmp_path / "train.log"
    log.write_text(PLOG_OK * 3 + OOM + "\n" + PLOG_OK + OOM + "\n" + OOM + "\n" + OOM + "\n")
    r = diag(str(log), "--json", "--max-hits", "2")
    assert r.rc == 1
    d = r.json()
    assert d["command"] == "diagnose" and d["inputs"] == [str(log)]
    m, *alternatives = d["matches"]
    assert (m["id"], m["category"], m["hits"], m["more_hits"]) == ("fx-npu-oom", "out-of-memory", 4, 2)
    assert m["confidence"] == "matched"
    # a lone specific match is followed by at most two `likely` alternatives (the closest entries by words)
    assert len(alternatives) <= 2 and all(a["confidence"] == "likely" for a in alternatives)
    assert m["lines"] == [{"file": str(log), "line": 4, "text": OOM}, {"file": str(log), "line": 6, "text": OOM}]
    assert m["fix"].startswith("Reduce the batch size") and m["kb_show"] == "envcheck kb show fx-npu-oom"
    assert m["page"]
    assert d["stats"]["lines"] == 8 and d["stats"]["files"] == 1 and d["exit_code"] == 1


def test_nothing_matched_exits_0(diag, tmp_path):
    log = tmp_path / "ok.log"
    log.write_text(PLOG_OK * 5)
    r = diag(str(log))
    assert r.rc == 0 and "no known pitfall found in 1 input (5 lines" in r.out


def test_directory_recursion_gzip_and_binary_skip(diag, tmp_path):
    (tmp_path / "debug" / "plog").mkdir(parents=True)
    (tmp_path / "debug" / "device-0").mkdir(parents=True)
    (tmp_path / "debug" / "plog" / "plog-1_20250101.log").write_text(PLOG_OK * 9 + LIBHCCL + "\n")
    with gzip.open(tmp_path / "debug" / "device-0" / "device-1_old.log.gz", "wt") as fh:
        fh.write(PLOG_OK * 41 + OOM + "\n")
    (tmp_path / "core.bin").write_bytes(b"\x7fELF\x02\x01\x01\x00" + LIBHCCL.encode() * 10)
    os.mkfifo(tmp_path / "debug" / "pipe")  # reading it would block forever: directories skip it
    d = diag(str(tmp_path), "--json").json()
    hits = {m["id"]: m["lines"][0] for m in d["matches"]}
    assert hits["fx-libs-missing"] == {"file": str(tmp_path / "debug" / "plog" / "plog-1_20250101.log"),
                                       "line": 10, "text": LIBHCCL}
    assert hits["fx-npu-oom"]["file"].endswith("device-1_old.log.gz") and hits["fx-npu-oom"]["line"] == 42
    assert f"{tmp_path / 'core.bin'}: binary file skipped" in d["notes"]
    assert d["stats"]["files"] == 2


def test_gzip_detected_by_magic_and_corrupt_gzip_is_a_note(diag, tmp_path):
    good = tmp_path / "rotated.1"
    good.write_bytes(gzip.compress((OOM + "\n").encode()))
    bad = tmp_path / "broken.log.gz"
    bad.write_bytes(gzip.compress((PLOG_OK * 1000).encode())[:200])
    r = diag(str(good), str(bad), "--json")
    d = r.json()
    assert [m["id"] for m in d["matches"]][:1] == ["fx-npu-oom"]
    assert all(m["confidence"] == "likely" for m in d["matches"][1:])  # alternatives after the match
    # issue 14: the readable part is scanned, the note says how much was read, the exit is not ok
    assert any(n.startswith(f"{bad}: truncated .gz: read 260 lines") for n in d["notes"]), d["notes"]
    assert r.rc == 2 and d["exit_code"] == 2 and d["stats"]["lines"] == 1 + 260  # 259 whole lines and the cut one


def test_unknown_codes_listed_separately(diag, tmp_path):
    log = tmp_path / "x.log"
    log.write_text("EZ9999: Inner Error!\nEQ7777: [PID: 4] 2025-01-01-00:00:00.000.000 new failure\n"
                   "[ERROR] 2025-01-15-20:59:48 (PID:6038, Device:0, RankID:-1) ERR04005 PROF internal error\n")
    r = diag(str(log))
    assert r.rc == 1
    # issue 11: unknown means in no kb entry and not in the error-code dictionary; known codes are
    # listed with what they mean (ERR04005 is torch_npu's PROF INTERNAL, EZ9999 aclnn's inner error)
    block = r.out.split("Error codes no kb entry knows yet")[1]
    assert "EQ7777" in block and "ERR04005" not in block and "EZ9999" not in block
    known = r.out.split("Error codes found:")[1].split("Error codes no kb entry")[0]
    assert "EZ9999" in known and "ERR04005" in known and "EQ7777" not in known
    d = diag(str(log), "--json").json()
    assert [c["code"] for c in d["unknown_codes"]] == ["EQ7777"]
    assert d["unknown_codes"][0]["first"]["line"] == 2
    codes = {c["code"]: c for c in d["codes"]}
    assert set(codes) == {"EZ9999", "ERR04005"} and codes["EZ9999"]["generic"] is True
    assert codes["ERR04005"]["family"] == "torch_npu" and codes["ERR04005"]["first"]["line"] == 3


def test_unknown_code_alone_still_exits_1(diag, tmp_path):
    log = tmp_path / "x.log"
    log.write_text("EQ7777: new failure\n")
    assert diag(str(log)).rc == 1


@pytest.mark.parametrize("argv, message", [
    (["/nonexistent/log"], "/nonexistent/log: no such file or directory"),
    (["--max-hits", "-1", "-"], "--max-hits must be >= 0"),
    (["--kb", "/nonexistent", "-"], "--kb /nonexistent: not a directory"),
])
def test_bad_input_is_one_line_and_exit_2(cli, argv, message):
    r = cli("diagnose", *argv)
    assert r.rc == 2 and r.err.startswith("envcheck: error: ") and message in r.err
    assert r.err.count("\n") == 1 and "Traceback" not in r.err


def test_default_is_the_cann_log_directory(diag, tmp_path, monkeypatch):
    logdir = tmp_path / "ascendlog"
    (logdir / "debug" / "plog").mkdir(parents=True)
    (logdir / "debug" / "plog" / "plog-7_1.log").write_text(LIBHCCL + "\n")
    monkeypatch.setenv("ASCEND_PROCESS_LOG_PATH", str(logdir))
    d = diag("--json").json()
    assert d["inputs"] == [str(logdir)] and d["matches"][0]["id"] == "fx-libs-missing"
    monkeypatch.delenv("ASCEND_PROCESS_LOG_PATH")
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "ascend" / "log").mkdir(parents=True)
    (tmp_path / "ascend" / "log" / "plog-8_1.log").write_text(OOM + "\n")
    d = diag("--json").json()
    assert d["matches"][0]["id"] == "fx-npu-oom"


def test_no_path_and_no_log_directory_is_a_usage_error(diag, tmp_path, monkeypatch):
    monkeypatch.delenv("ASCEND_PROCESS_LOG_PATH", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    r = diag()
    assert r.rc == 2 and "no PATH given" in r.err and "- to read" in r.err


def test_help_documents_exit_codes(cli):
    r = cli("diagnose", "--help")
    assert r.rc == 0
    assert "Exit status: 1 a kb entry matched" in r.out and "0 nothing matched" in r.out and "2 usage" in r.out


def test_secrets_in_logs_are_redacted(diag, tmp_path):
    log = tmp_path / "x.log"
    token = "ghp_" + "A1b2C3d4" * 5
    log.write_text(f"{LIBHCCL} token={token}\n")
    r = diag(str(log))
    assert token not in r.out and "<redacted>" in r.out
    assert token not in diag(str(log), "--json").out


def test_junit_output(diag, tmp_path):
    log = tmp_path / "x.log"
    log.write_text(OOM + "\n")
    out = tmp_path / "d.xml"
    assert diag(str(log), "--junit", str(out)).rc == 1
    root = ET.parse(out).getroot()
    assert root.get("failures") == "1" and "fx-npu-oom" in ET.tostring(root, encoding="unicode")
    # the likely alternatives after the match are testcases that pass with a note, not more failures
    cases = root.findall(".//testcase")
    assert [c.find("failure") is not None for c in cases][0] and len(cases) == int(root.get("tests"))
    assert all("possible alternative" in (c.findtext("system-out") or "") for c in cases[1:])


def test_python_engine_gives_the_same_answer(diag, tmp_path):
    log = tmp_path / "x.log"
    log.write_text(PLOG_OK * 3 + TRACEBACK + OOM + "\n")
    a = diag(str(log), "--json").json()
    b = diag(str(log), "--json", "--engine", "re").json()
    assert a["engine"] == "re2" and b["engine"] == "re"
    assert a["matches"] == b["matches"]


def test_text_names_a_page_only_as_a_full_url(tmp_path, monkeypatch):
    """Issue 13: no relative `kb/...` path in the terminal; the full URL when ENVCHECK_SITE_URL is set."""
    log = tmp_path / "train.log"
    log.write_text(OOM + "\n")
    env = {k: v for k, v in os.environ.items() if k != "ENVCHECK_SITE_URL"}
    run = lambda extra: subprocess.run([sys.executable, "-m", "envcheck", "diagnose", "--kb", FIXTURE_KB, str(log)],  # noqa: E731
                                       capture_output=True, text=True, timeout=60, env={**env, **extra})
    plain = run({}).stdout
    assert "more: envcheck kb show fx-npu-oom" in plain and "site:" not in plain
    assert "https://docs.example.com/envcheck/" in run({"ENVCHECK_SITE_URL": "https://docs.example.com/envcheck/"}).stdout
