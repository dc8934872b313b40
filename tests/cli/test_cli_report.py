"""Issue 13, the terminal: host framing, a short default report, streaming, wrapping, colour, kb URLs,
escaped control characters, the as-of date, and verdicts that agree across sub-commands."""
from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import DATA, REPO

from envcheck.checks import to_run
from envcheck.matrix import load

ROOTS = DATA / "roots"
STUB_BIN = DATA / "npu-smi" / "bin"
AS_OF = load().as_of
ON_AN_ASCEND_MACHINE = os.path.exists("/dev/davinci0") or os.path.exists("/usr/local/Ascend/driver/version.info")
needs_plain_host = pytest.mark.skipif(ON_AN_ASCEND_MACHINE, reason="asserts the report of a machine without NPUs")


@pytest.fixture(autouse=True)
def _plain_env(monkeypatch):
    for k in ("COLUMNS", "NO_COLOR", "ENVCHECK_SITE_URL", "ASCEND_HOME_PATH", "RANK_TABLE_FILE"):
        monkeypatch.delenv(k, raising=False)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR", "ENVCHECK_SITE_URL")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


# ---- host framing and the short default report ------------------------------------------------

@needs_plain_host
@pytest.mark.parametrize("columns", [None, "80"])
def test_default_report_on_this_machine_is_short_and_says_why(cli, monkeypatch, columns):
    if columns:
        monkeypatch.setenv("COLUMNS", columns)
    res = cli()
    lines = res.out.splitlines()
    assert res.rc == 1
    assert len(lines) <= 12, res.out
    assert lines[0].startswith("This is not an Ascend machine")
    assert re.search(r"verdict fail: this is not\s+an Ascend machine", res.out)
    if columns:
        assert max(len(ln) for ln in lines) <= 80
    # -v has every check the default run executed
    full = cli("-v")
    codes = set(re.findall(r"\bEC\d{3}\b", full.out))
    assert {c.code for c in to_run("quick")} <= codes
    assert full.rc == 1 and len(full.out.splitlines()) > 40


def test_ascend_host_first_line_and_sections(cli, monkeypatch):
    monkeypatch.setenv("PATH", f"{STUB_BIN}:/usr/bin:/bin")
    monkeypatch.setenv("NPU_SMI_FIXTURE", "910b4")
    res = cli("--no-smoke", "--root", str(ROOTS / "root-910b-8.2"))
    lines = res.out.splitlines()
    assert lines[0].startswith("Ascend host: 8 × 910B4; driver 25.0.rc1.1, CANN 8.2.RC1")
    heads = [ln for ln in lines if ln.startswith("[")]
    assert len(heads) == len({ln.split("]")[1].split("  ")[0] for ln in heads})  # one line per section
    assert any(ln.startswith("[-] Distributed  5 skipped") for ln in heads)
    assert "    ✗ CANN environment not loaded" in res.out and "(EC201 cann-env-not-loaded)" in res.out
    assert "(EC501)" not in res.out  # skips are counted, -v lists them
    assert f"knowledge as of {AS_OF}" in lines[-2] and "verdict fail: EC201 CANN environment not loaded" in res.out


def test_container_without_devices_is_framed(cli, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("HOME", "/home/alice")
    res = cli("--no-smoke", "--root", str(ROOTS / "net-container-half"))
    assert res.out.splitlines()[0].lower().startswith(("container with", "container without"))


# ---- the as-of date, JSON additions ----------------------------------------------------------

def test_json_report_carries_host_reason_knowledge_and_collapse(cli):
    jsonschema = pytest.importorskip("jsonschema")
    res = cli("--no-smoke", "--json")
    doc = res.json()
    schema = json.loads((REPO / "envcheck" / "schemas" / "report.schema.json").read_text())
    jsonschema.validate(doc, schema)
    assert doc["knowledge"]["matrix_as_of"] == AS_OF
    assert doc["host"]["kind"] in ("ascend", "container-npu", "container-no-npu", "no-npu", "none")
    assert list(doc)[:6] == ["schema_version", "envcheck_version", "command", "verdict", "reason", "summary"]
    if doc["verdict"] == "fail":
        assert doc["reason"]
    for f in doc["findings"]:
        if f["because"]:
            assert f["status"] == "skip" and f["data"]["collapsed"] in ("fail", "warn", "error")


# ---- wrapping, colour, kb URLs, control characters ---------------------------------------------

def test_long_lines_wrap_with_indented_continuations(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    monkeypatch.setenv("HOME", "/home/alice")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    res = cli("--no-smoke", "-v", "--root", str(ROOTS / "nonroot-home"))
    lines = res.out.splitlines()
    fix = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("fix: ") and len(ln) > 40)
    assert lines[fix + 1].startswith(" " * 13)  # the continuation sits under the text, not at column 0
    for ln in lines:
        words = ln.split()
        # only a long word (a path, a URL) may overflow
        assert len(ln) <= 60 or (len(words) <= 2 or max(len(w) for w in words) > 30), ln
        if ln and not ln.startswith((" ", "[", "envcheck", "Ascend", "This", "To ", "Container", "No ")):
            pytest.fail(f"line at column 0: {ln!r}")


def test_verdict_is_coloured_and_no_color_is_respected(cli, monkeypatch):
    res = cli("--no-smoke", "--color", "always")
    assert "\x1b[1;31mverdict fail\x1b[0m" in res.out or "\x1b[1;33mverdict warn" in res.out \
        or "\x1b[1;32mverdict ok" in res.out
    assert "\x1b[" not in cli("--no-smoke", "--color", "never").out


def test_kb_links_are_urls_when_a_site_is_configured(cli, monkeypatch):
    monkeypatch.setenv("HOME", "/home/alice")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    args = ("--no-smoke", "--root", str(ROOTS / "nonroot-home"))
    plain = cli(*args)
    assert "kb:  envcheck kb show cann-env-not-loaded — " in plain.out and "site: kb/" not in plain.out
    monkeypatch.setenv("ENVCHECK_SITE_URL", "https://docs.example/envcheck")
    site = cli(*args)
    assert "kb:  https://docs.example/envcheck/kb/env-not-loaded/cann-env-not-loaded/ — " in site.out


def test_control_characters_are_escaped_in_text(cli, tmp_path):
    res = cli("probe", "--json")
    doc = json.loads(res.out)
    doc["facts"]["system"]["distro"] = "Evil\x1b]0;pwned\x07 OS\x1b[2J"
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(doc))
    out = cli("--facts", str(path), "--no-smoke", "-v", "--color", "never").out
    assert "\x1b" not in out and "\x07" not in out
    assert "Evil\\x1b]0;pwned\\x07 OS\\x1b[2J" in out


# ---- streaming and the TTY ----------------------------------------------------------------------

def _run_pty(argv: list[str], env: dict[str, str], timeout: float = 120) -> tuple[list[tuple[float, bytes]], int]:
    """Run envcheck on a pseudo-terminal: (time, chunk) of everything it wrote, and its exit status."""
    master, slave = pty.openpty()
    t0 = time.monotonic()
    p = subprocess.Popen([sys.executable, "-m", "envcheck", *argv], stdin=slave, stdout=slave, stderr=slave,
                         env=env, cwd=str(REPO), close_fds=True)
    os.close(slave)
    chunks: list[tuple[float, bytes]] = []
    try:
        while time.monotonic() - t0 < timeout:
            r, _, _ = select.select([master], [], [], 0.5)
            if r:
                try:
                    data = os.read(master, 65536)
                except OSError:
                    break
                if not data:
                    break
                chunks.append((time.monotonic() - t0, data))
            elif p.poll() is not None:
                break
    finally:
        os.close(master)
        rc = p.wait(timeout=30)
    return chunks, rc


def test_report_streams_before_the_smoke_tests_end_with_a_progress_line():
    chunks, rc = _run_pty(["--color", "never"], _env(COLUMNS="100", TERM="xterm"))
    text = b"".join(c for _, c in chunks).decode("utf-8", "replace")
    assert rc == 1 and "verdict" in text
    first = next(t for t, c in chunks if c.strip())
    last = chunks[-1][0]
    # the host line comes right after the probe, long before the smoke tests (a torch import) finish
    assert first < last - 0.5 and first < 2.0, (first, last)  # issue 13 asks < 1 s; a loaded CI box gets slack
    assert "running the smoke tests" in text  # the transient status line on the terminal
    assert "\r\x1b[K" in text


def test_smoke_shows_progress_on_a_tty():
    pytest.importorskip("torch")
    chunks, rc = _run_pty(["smoke", "--device", "cpu", "--case", "matmul[float32]", "--case", "softmax"],
                          _env(TERM="xterm"))
    text = b"".join(c for _, c in chunks).decode("utf-8", "replace")
    assert rc == 0
    progress = [ln for ln in text.splitlines() if ln.strip().startswith(("matmul[float32]", "softmax"))]
    assert len(progress) == 2 and all(" ok " in ln for ln in progress)  # one line per finished case
    assert text.index("softmax") < text.index("verdict ok")


def test_no_color_on_a_tty():
    chunks, _ = _run_pty(["--no-smoke"], _env(NO_COLOR="1", TERM="xterm"))
    text = b"".join(c for _, c in chunks).decode("utf-8", "replace")
    assert "verdict" in text and "\x1b[3" not in text and "\x1b[1;3" not in text


def test_json_is_written_whole():
    p = subprocess.run([sys.executable, "-m", "envcheck", "--no-smoke", "--json"], capture_output=True, text=True,
                       env=_env(), cwd=str(REPO), timeout=120)
    json.loads(p.stdout)  # one document, nothing streamed ahead of it


def test_tables_come_before_the_verdict(capsys):
    import argparse

    from envcheck.commands._output import emit
    from envcheck.model import Facts, Finding, Report, Status

    report = Report(Facts(), [Finding("EC413", "busbw-below-floor", Status.OK, "sweep", section="Smoke tests")])
    args = argparse.Namespace(format=None, json=False, output=None, junit=None, verbose=False, color="never")
    emit(report, args, before="size  busbw\n1K    0.1\n\n")
    out = capsys.readouterr().out
    assert out.index("1K    0.1") < out.index("verdict ok")


# ---- verdicts agree across sub-commands ----------------------------------------------------------

@needs_plain_host
def test_matrix_suggest_agrees_with_envcheck_on_this_machine(cli):
    check = cli("--no-smoke")
    sug = cli("matrix", "suggest")
    assert "nothing has to change" not in sug.out and "no version has to change" not in sug.out
    assert sug.rc == check.rc == 1
    doc = cli("matrix", "suggest", "--json").json()
    assert doc["consistent"] is False and doc["verdict"] == "fail" and doc["host"]["kind"] == "none"


def test_matrix_suggest_takes_a_path_with_python_and_a_version_with_python_version(cli):
    res = cli("matrix", "suggest", "--python", sys.executable)
    assert res.rc in (0, 1) and "PEP 440" not in res.err
    ver = cli("matrix", "suggest", "--python-version", "3.10", "--torch", "2.1.0")
    assert ver.rc == 0 and "compatible set(s)" in ver.out
    # a version where a path belongs, next to version flags, was ignored without a word (all sets listed)
    mixed = cli("matrix", "suggest", "--cann", "8.5.0", "--python", "3.13")
    assert mixed.rc == 2 and "--python-version" in mixed.err and not mixed.out
    assert "Traceback" not in mixed.err and len(mixed.err.strip().splitlines()) == 1


def test_matrix_suggest_never_calls_a_failing_ascend_host_consistent(cli, monkeypatch):
    monkeypatch.setenv("HOME", "/home/alice")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    root = str(ROOTS / "nonroot-home")
    check = cli("--no-smoke", "--json", "--root", root).json()
    sug = cli("matrix", "suggest", "--root", root)
    assert check["verdict"] == "fail" and sug.rc == 1
    assert "nothing has to change" not in sug.out
    assert "install HDK" not in sug.out or "HDK 25.0.RC1" in sug.out  # the HDK EC104 names, no other
    assert "CANN 6." not in sug.out  # never a downgrade of the whole stack when a driver upgrade fixes it


def _fake_torch_npu(tmp: Path) -> str:
    """An interpreter with torch (CPU) and a torch_npu 2.13.0 whose import fails on libhccl.so, registered
    under torch's backend entry point (what a torch_npu wheel does), on a machine without CANN."""
    site = tmp / "site"
    (site / "torch_npu").mkdir(parents=True)
    (site / "torch_npu" / "__init__.py").write_text(
        'raise ImportError("libhccl.so: cannot open shared object file: No such file or directory")\n')
    dist = site / "torch_npu-2.13.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: torch_npu\nVersion: 2.13.0\n"
                                   "Requires-Dist: torch==2.13.0\n")
    (dist / "entry_points.txt").write_text("[torch.backends]\ntorch_npu = torch_npu:_autoload\n")
    (dist / "RECORD").write_text("torch_npu/__init__.py,,\n")
    py = tmp / "python"
    py.write_text(f'#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} "$@"\n')
    py.chmod(0o755)
    return str(py)


@needs_plain_host
def test_torch_npu_without_cann_is_one_cause(cli, tmp_path):
    pytest.importorskip("torch")
    py = _fake_torch_npu(tmp_path)
    doc = cli("--python", py, "--json").json()
    by = {f["code"]: f for f in doc["findings"]}
    assert by["EC401"]["because"] == "EC301" and by["EC402"]["because"] == "EC301", (by["EC401"], by["EC402"])
    fails = [f for f in doc["findings"] if f["status"] == "fail"]
    assert "EC301" in {f["code"] for f in fails} and not {"EC401", "EC402"} & {f["code"] for f in fails}
    assert len({f["fix"] for f in fails}) == len(fails)  # no fix given twice
    sug = cli("matrix", "suggest", "--python", py)
    assert sug.rc == 1 and "torch_npu 2.13.0 is newer than the matrix" in sug.out
    assert "nothing has to change" not in sug.out


def test_smoke_on_the_cpu_says_so_in_its_verdict(cli):
    pytest.importorskip("torch")
    res = cli("smoke", "--device", "cpu", "--case", "matmul[float32]")
    assert res.rc == 0
    assert "verdict ok (cpu only: nothing about the NPU was tested)" in res.out
    assert "no operator fell back to the CPU on cpu" not in cli("smoke", "--device", "cpu", "--case",
                                                                 "matmul[float32]", "-v").out


# ---- kb show with versions ----------------------------------------------------------------------

def test_kb_show_judges_gates_for_given_versions(cli):
    old = cli("kb", "show", "cpu-fallback-silent", "--torch-npu", "2.12.0")
    assert old.rc == 0 and "probed torch_npu 2.12.0: does not apply" in old.out
    new = cli("kb", "show", "cpu-fallback-silent", "--torch-npu", "2.13.0", "--json").json()
    assert [g["applies"] for g in new["gates"]] == [True]
    bad = cli("kb", "show", "cpu-fallback-silent", "--torch-npu", "banana")
    assert bad.rc == 2 and bad.err.startswith("envcheck: error: --torch-npu")
    chip = cli("kb", "show", "numpy2-with-cann-before-9", "--cann", "9.1.0", "--chip", "910B4")
    assert "does not apply" in chip.out
