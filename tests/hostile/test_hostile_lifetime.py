"""Class 1 (issue 14): one lifetime for every child. SIGTERM / SIGHUP / SIGINT (and `timeout`) during
each kind of child — a hung npu-smi, a hung --python interpreter, the smoke worker, collective
ranks — leave no process and no envcheck-* temp dir behind; helpers a child leaves in its process
group die with it even on a normal exit. Conditions are polled, never fixed sleeps."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
from conftest import DATA, REPO
from hostile_proc import marked, no_survivors, wait_for

from envcheck import subproc

SMI_BIN = DATA / "npu-smi" / "bin"


def _start(argv: list[str], tmp, extra: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
    mark = f"hostile-{uuid.uuid4().hex}"
    env = dict(os.environ, ENVCHECK_TEST_MARK=mark, TMPDIR=str(tmp), PYTHONPATH=str(REPO))
    env.update(extra or {})
    proc = subprocess.Popen([sys.executable, "-m", "envcheck", *argv], env=env, cwd=str(REPO),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    return proc, mark


def _children(proc: subprocess.Popen, mark: str, needle: str, n: int = 1):
    def found():
        kids = [c for p, c in marked(mark) if p != proc.pid and needle in c]
        return kids if len(kids) >= n else None
    return found


def _end(proc: subprocess.Popen, sig: int, mark: str, tmp) -> tuple[int, str]:
    os.kill(proc.pid, sig)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        raise AssertionError("envcheck did not exit within 60 s of the signal") from None
    left = no_survivors(mark)
    assert left == [], f"survivors after {signal.Signals(sig).name}: {left}"
    assert not [p for p in os.listdir(tmp) if p.startswith("envcheck-")], os.listdir(tmp)
    return proc.returncode, err.decode("utf-8", "replace")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signal_while_npu_smi_hangs(tmp_path, sig):
    proc, mark = _start(["--no-smoke", "--timeout", "120"], tmp_path,
                        {"PATH": f"{SMI_BIN}:{os.environ['PATH']}", "NPU_SMI_FIXTURE": "hang"})
    wait_for(_children(proc, mark, "sleep 300"), 60, "the stand-in npu-smi to hang")
    rc, err = _end(proc, sig, mark, tmp_path)
    assert rc == 128 + sig, err
    assert "Traceback" not in err
    assert ("interrupted" if sig == signal.SIGINT else signal.Signals(sig).name) in err


def test_gnu_timeout_while_npu_smi_hangs(tmp_path):
    mark = f"hostile-{uuid.uuid4().hex}"
    env = dict(os.environ, ENVCHECK_TEST_MARK=mark, TMPDIR=str(tmp_path), PYTHONPATH=str(REPO),
               PATH=f"{SMI_BIN}:{os.environ['PATH']}", NPU_SMI_FIXTURE="hang")
    p = subprocess.run(["timeout", "3", sys.executable, "-m", "envcheck", "--no-smoke", "--timeout", "120"],
                       env=env, cwd=str(REPO), capture_output=True, text=True, timeout=120)
    assert p.returncode == 124
    assert no_survivors(mark) == []


def test_sigterm_while_python_interpreter_hangs(tmp_path):
    py = tmp_path / "py_hang"
    py.write_text("#!/bin/sh\nexec sleep 100000\n")
    py.chmod(0o755)
    proc, mark = _start(["probe", "--python", str(py), "--timeout", "120"], tmp_path)
    wait_for(_children(proc, mark, "sleep 100000"), 60, "the --python child to hang")
    rc, err = _end(proc, signal.SIGTERM, mark, tmp_path)
    assert rc == 143 and "Traceback" not in err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_signal_during_smoke_ops(tmp_path, sig):
    proc, mark = _start(["smoke", "--device", "cpu", "--case", "matmul[float32]"], tmp_path)
    wait_for(_children(proc, mark, "envcheck.smoke.worker"), 60, "the smoke worker")
    wait_for(lambda: [p for p in os.listdir(tmp_path) if p.startswith("envcheck-smoke-")], 30, "its temp dir")
    rc, err = _end(proc, sig, mark, tmp_path)
    assert rc == 128 + sig and "Traceback" not in err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signal_during_collective(tmp_path, sig):
    proc, mark = _start(["smoke", "collective", "--device", "cpu", "--nproc", "2", "--sizes", "64M",
                         "--iters", "50", "--timeout", "120"], tmp_path)
    wait_for(_children(proc, mark, "envcheck.smoke.rank", 2), 90, "two collective ranks")
    rc, err = _end(proc, sig, mark, tmp_path)
    assert rc == 128 + sig and "Traceback" not in err


def test_helpers_left_in_the_group_die_after_a_normal_exit(tmp_path):
    mark = f"hostile-{uuid.uuid4().hex}"
    res = subproc.run(["sh", "-c", "sleep 1002 >/dev/null 2>&1 & echo dcmi failed; exit 1"], timeout=20,
                      env=dict(os.environ, ENVCHECK_TEST_MARK=mark))
    assert res.rc == 1 and "dcmi failed" in res.stdout
    assert no_survivors(mark, timeout=5) == []


def test_helper_holding_the_pipe_does_not_block_and_dies(tmp_path):
    mark = f"hostile-{uuid.uuid4().hex}"
    t0 = time.monotonic()
    res = subproc.run(["sh", "-c", "sleep 1003 & echo out; exit 0"], timeout=30,
                      env=dict(os.environ, ENVCHECK_TEST_MARK=mark))
    assert res.rc == 0 and res.stdout == "out\n" and not res.timed_out
    assert time.monotonic() - t0 < 20  # not the helper's 1003 s
    assert no_survivors(mark, timeout=5) == []


def test_idle_timeout_ends_a_hang_early_but_lets_a_busy_child_run():
    hang = subproc.run(["sleep", "100"], timeout=60, idle_timeout=1.0)
    assert hang.timed_out and hang.idle and hang.seconds < 30
    busy = subproc.run([sys.executable, "-c",
                        "import time\nt=time.process_time()\nwhile time.process_time()-t<2.5: pass\nprint('done')"],
                       timeout=120, idle_timeout=1.0)
    assert busy.ok and busy.stdout.strip() == "done", busy


def test_output_is_capped_and_keeps_its_end():
    res = subproc.run([sys.executable, "-c", "import sys; sys.stdout.write('x' * 5_000_000 + '\\nTHE END\\n')"],
                      timeout=60, max_output=1 << 16)
    assert res.ok and res.truncated
    assert len(res.stdout) < 200_000 and res.stdout.rstrip().endswith("THE END")
