"""The op suite in real child processes: the whole suite on cpu, then isolation (hang, segfault,
abort, raise, wrong result, result off the device), CPU-fallback capture and Ctrl-C.

Extra cases come from a plugin module written here and imported by the worker
(ENVCHECK_SMOKE_PLUGINS); every child carries a unique environment mark so the process table can
be searched for survivors afterwards.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from conftest import REPO

from envcheck.smoke.suite import run_suite

PLUGIN = textwrap.dedent('''
    import os, signal, subprocess, sys, time
    from envcheck.smoke.registry import register

    @register("test_raise")
    def _raise(d, dtype):
        raise RuntimeError("boom from the test plugin")

    @register("test_segv")
    def _segv(d, dtype):
        sys.stderr.write("about to segfault\\n")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGSEGV)

    @register("test_abort")
    def _abort(d, dtype):
        os.abort()

    @register("test_hang", timeout=3)
    def _hang(d, dtype):
        # a grandchild in the same process group must die with the worker
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)"])
        while True:
            time.sleep(1)

    @register("test_hang_long", timeout=300)
    def _hang_long(d, dtype):
        open(os.environ["SMOKE_TEST_FLAG"], "w").close()
        while True:
            time.sleep(1)

    @register("test_wrong")
    def _wrong(d, dtype):
        import torch
        return torch.ones(3, device=d.torch_device) * 2, torch.ones(3, dtype=torch.float64)

    @register("test_off_device")
    def _off_device(d, dtype):
        import torch
        return torch.empty(2, device="meta"), torch.zeros(2, dtype=torch.float64)

    @register("test_fallback")
    def _fallback(d, dtype):
        import torch
        # the C++ side prints straight to the stderr file descriptor, not through sys.stderr
        os.write(2, b"[W compiler_depend.ts:51] Warning: CAUTION: The operator 'aten::isin.Tensor_Tensor_out' is "
                    b"not currently supported on the NPU backend and will fall back to run on the CPU. This may "
                    b"have performance implications. (function npu_cpu_fallback)\\n")
        os.write(2, b"CAUTION: The operator aten::unfold_backward is currently not supported on the NPU backend. "
                    b"Now this operator will fallback to run on the CPU and may have performance implications.\\n")
        return torch.arange(4.0, device=d.torch_device), torch.arange(4.0, dtype=torch.float64)
''')

REQUIRED = {"matmul[float32]", "matmul[float16]", "matmul[bfloat16]", "conv2d", "layer_norm", "softmax", "gelu",
            "embedding", "cross_entropy_backward", "optimizer_step", "amp_grad_scaler", "index_put_", "scatter_",
            "masked_fill", "advanced_indexing", "custom_autograd_function", "transformer_parity"}


def survivors(mark: str) -> list[int]:
    """PIDs whose environment carries `mark` (read from /proc; psutil is not installed)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                env = fh.read()
        except OSError:
            continue
        if mark.encode() in env:
            found.append(int(pid))
    return found


@pytest.fixture
def plugin_env(tmp_path, monkeypatch):
    """Environment that makes the worker import the test plugin; returns (env, mark)."""
    (tmp_path / "smoke_test_plugin.py").write_text(PLUGIN)
    mark = f"smoke-{uuid.uuid4().hex}"
    env = {"PYTHONPATH": str(tmp_path), "ENVCHECK_SMOKE_PLUGINS": "smoke_test_plugin",
           "ENVCHECK_TEST_MARK": mark, "SMOKE_TEST_FLAG": str(tmp_path / "hanging")}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    yield env, mark
    assert survivors(mark) == []


def test_whole_suite_on_cpu():
    res = run_suite("all", device="cpu", timeout=60)
    by = {o.case: o for o in res.outcomes}
    assert REQUIRED <= set(by)
    assert res.device == "cpu" and res.torch.startswith("2.") and len(res.startups) == 1 and not res.fatal
    for o in res.outcomes:
        assert o.status == "ok", (o.case, o.error, o.traceback)
        assert o.max_err is not None and o.max_err <= o.tol
        assert o.fallbacks == []
    assert all(o.result_device == "cpu" for o in res.outcomes if o.case != "transformer_parity")
    assert by["matmul[bfloat16]"].max_err > by["matmul[float32]"].max_err  # the dtypes really differ
    parity = by["transformer_parity"].data
    assert len(parity["device_losses"]) == 20 and parity["device_losses"] == parity["cpu_losses"]
    assert parity["cpu_losses"][-1] < parity["cpu_losses"][0]
    assert res.outcomes[-1].case == "transformer_parity"  # the parity run closes the suite


@pytest.mark.slow
def test_hang_crash_and_raise_are_reported_and_the_rest_runs(plugin_env):
    env, mark = plugin_env
    order = ["softmax", "test_raise", "gelu", "test_segv", "layer_norm", "test_hang", "embedding",
             "test_abort", "masked_fill", "test_wrong", "test_off_device", "scatter_"]
    t0 = time.monotonic()
    res = run_suite(order, device="cpu", timeout=60)
    took = time.monotonic() - t0
    by = {o.case: o for o in res.outcomes}
    assert [o.case for o in res.outcomes] == order
    for name in ("softmax", "gelu", "layer_norm", "embedding", "masked_fill", "scatter_"):
        assert by[name].status == "ok", by[name]
    assert by["test_raise"].status == "error" and "RuntimeError: boom from the test plugin" in by["test_raise"].error
    assert "_raise" in by["test_raise"].traceback
    assert (by["test_segv"].status, by["test_segv"].signal) == ("crash", "SIGSEGV")
    assert "about to segfault" in by["test_segv"].stderr_tail
    assert (by["test_abort"].status, by["test_abort"].signal) == ("crash", "SIGABRT")
    hang = by["test_hang"]
    assert hang.status == "timeout" and 3 <= hang.seconds < 10 and "3 s" in hang.error
    assert by["test_wrong"].status == "fail" and by["test_wrong"].max_err == pytest.approx(1.0)
    assert by["test_off_device"].status == "fail" and "meta" in by["test_off_device"].error
    assert len(res.startups) == 4  # first worker + a fresh one after segv, hang and abort
    assert took < 60
    assert survivors(mark) == []


def test_cli_reports_fallback_wrong_result_and_off_device(plugin_env, cli):
    r = cli("smoke", "--device", "cpu", "--case", "test_fallback", "--case", "test_wrong", "--case",
            "test_off_device", "--case", "softmax", "--json")
    assert r.rc == 1
    found = r.json()["findings"]
    fallbacks = [f for f in found if f["code"] == "EC406"]
    assert {f["data"]["op"] for f in fallbacks} == {"aten::isin.Tensor_Tensor_out", "aten::unfold_backward"}
    assert all(f["status"] == "warn" and f["data"]["case"] == "test_fallback" for f in fallbacks)
    assert any("will fall back to run on the CPU" in e["text"] for f in fallbacks for e in f["evidence"])
    failed = {f["data"]["case"]: f for f in found if f["code"] == "EC403" and f["status"] == "fail"}
    assert set(failed) == {"test_wrong", "test_off_device"}
    assert "exceeds tolerance" in failed["test_wrong"]["title"]
    assert "result lives on meta, expected cpu" in failed["test_off_device"]["title"]
    assert all(f["section"] == "Smoke tests" for f in found)


@pytest.mark.slow
def test_cli_crash_and_hang_findings(plugin_env, cli):
    r = cli("smoke", "--device", "cpu", "--case", "test_segv", "--case", "test_hang", "--case", "gelu", "--json")
    assert r.rc == 1
    found = {(f["code"], f["status"]): f for f in r.json()["findings"]}
    crash = found[("EC404", "fail")]
    assert "test_segv" in crash["title"] and "SIGSEGV" in crash["title"]
    assert any("about to segfault" in e["text"] for e in crash["evidence"])
    assert "test_hang" in found[("EC405", "fail")]["title"]
    assert "1 operator tests match" in found[("EC403", "ok")]["title"]


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_and_prints_what_finished(plugin_env, tmp_path):
    env, mark = plugin_env
    flag = Path(env["SMOKE_TEST_FLAG"])
    proc = subprocess.Popen([sys.executable, "-m", "envcheck", "smoke", "-v", "--device", "cpu", "--case", "softmax",
                             "--case", "test_hang_long", "--case", "gelu"], cwd=str(REPO),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        deadline = time.monotonic() + 90
        while not flag.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert flag.exists(), "the hanging case never started"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "1 operator tests match the float64 CPU reference" in out
    assert "2 operator test(s) interrupted: test_hang_long, gelu" in out
    assert "interrupted" in err and "Traceback" not in err
    assert survivors(mark) == []


def test_unknown_device_kind_and_bad_flags(cli):
    assert cli("smoke", "--device", "tpu").rc == 2
    r = cli("smoke", "--timeout", "0")
    assert r.rc == 2 and "--timeout must be positive" in r.err
    r = cli("smoke", "--python", "/nonexistent/python")
    assert r.rc == 2 and "not an executable file" in r.err and "Traceback" not in r.err
    r = cli("smoke", "--case", "matmul[float128]")
    assert r.rc == 2 and "unknown smoke case 'matmul[float128]'" in r.err and "matmul[float16]" in r.err


def test_npu_requested_without_torch_npu_is_a_finding_not_a_crash(cli):
    r = cli("smoke", "--device", "npu", "--case", "softmax", "--json")
    assert r.rc == 1
    # issue 13: the cause is torch_npu missing (EC402), not an operator that fails on the NPU (EC403)
    (npu,) = [f for f in r.json()["findings"] if f["code"] == "EC402"]
    assert npu["status"] == "fail" and "torch_npu is not installed" in npu["title"]
    ops = [f for f in r.json()["findings"] if f["code"] == "EC403"]
    assert all(f["status"] == "skip" and f.get("because") == "EC402" for f in ops)


def test_survivor_scan_sees_a_marked_process():
    """The process-table check above can fail: a marked child is found until it is reaped."""
    mark = f"smoke-{uuid.uuid4().hex}"
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                            env=dict(os.environ, ENVCHECK_TEST_MARK=mark))
    try:
        # /proc/<pid>/environ can still read empty just after the spawn: poll briefly.
        deadline = time.monotonic() + 5
        while survivors(mark) != [proc.pid] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert survivors(mark) == [proc.pid]
    finally:
        proc.kill()
        proc.wait()
    assert survivors(mark) == []
