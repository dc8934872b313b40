"""Importability in the target interpreter: the real torch 2.13.0 + torch-npu 2.13.0 wheels without
CANN (error-catalogue §3.7) make even `import torch` fail; envcheck must say so with the real text.

The venv is built once per session under .tmp/ (reused while valid; CI starts clean and builds it:
about 30 s, torch from the local wheel, torch-npu from PyPI).
"""
from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys

import pytest
from conftest import REPO, run_envcheck

VENV = REPO / ".tmp" / "smoke-npu-venv"
SPEC = ("torch==2.13.0", "torch-npu==2.13.0")
STAMP = " ".join(SPEC)


def _valid(py) -> bool:
    if not py.exists() or not (VENV / ".envcheck-stamp").exists():
        return False
    if (VENV / ".envcheck-stamp").read_text() != STAMP:
        return False
    got = subprocess.run([str(py), "-c", "import importlib.metadata as m; print(m.version('torch'), "
                          "m.version('torch_npu'))"], capture_output=True, text=True, timeout=60)
    return got.returncode == 0 and got.stdout.split() == ["2.13.0+cpu", "2.13.0"]


@pytest.fixture(scope="session")
def npu_venv():
    """A venv with the real torch and torch_npu wheels and no CANN: the machine of §3.7."""
    py = VENV / "bin" / "python"
    VENV.parent.mkdir(exist_ok=True)
    with open(VENV.parent / "smoke-npu-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two pytest sessions must not build it at once
        if not _valid(py):
            shutil.rmtree(VENV, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, timeout=300)
            done = subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", *SPEC],
                                  capture_output=True, text=True, timeout=1200)
            assert done.returncode == 0, f"pip install {STAMP} failed:\n{done.stdout}\n{done.stderr}"
            (VENV / ".envcheck-stamp").write_text(STAMP)
    return str(py)


def _findings(doc, code):
    return [f for f in doc["findings"] if f["code"] == code]


@pytest.mark.slow
def test_torch_npu_without_cann_breaks_import_torch(npu_venv):
    r = run_envcheck("smoke", "--python", npu_venv, "--json", timeout=300)
    assert r.rc == 1, r.err
    doc = r.json()
    (torch,) = _findings(doc, "EC401")
    assert torch["status"] == "fail"
    assert "torch auto-loads torch_npu, which cannot load libhccl.so" in torch["title"]
    texts = "\n".join(e["text"] for e in torch["evidence"])
    assert ("RuntimeError: Failed to load the backend extension: torch_npu. You can disable extension "
            "auto-loading with TORCH_DEVICE_BACKEND_AUTOLOAD=0.") in texts
    assert "ImportError: libhccl.so: cannot open shared object file: No such file or directory" in texts
    assert "torch imports" in texts  # the retry with TORCH_DEVICE_BACKEND_AUTOLOAD=0
    assert "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in torch["detail"] and "entry point" in torch["detail"]
    assert torch["kb"] == ["cann-env-not-loaded"]
    assert "set_env.sh" in torch["fix"]
    assert torch["data"] == {"missing_library": "libhccl.so", "autoload": True}
    (npu,) = _findings(doc, "EC402")
    # one cause, one failure (issue 13): EC402 fails for the same missing library, so it collapses under EC401
    assert npu["status"] == "skip" and npu["because"] == "EC401" and npu["data"]["collapsed"] == "fail"
    assert "libhccl.so: cannot open shared object file" in npu["title"] and not npu["fix"]
    assert not _findings(doc, "EC403")  # nothing else runs on a torch that does not import


@pytest.mark.slow
def test_default_run_reports_it_too(npu_venv):
    r = run_envcheck("--python", npu_venv, "--select", "EC401", "-v", timeout=300)
    assert r.rc == 1, r.err
    lines = r.out.splitlines()
    assert any("`import torch` fails: torch auto-loads torch_npu, which cannot load libhccl.so" in ln
               and "EC401 torch-import-failed" in ln for ln in lines)
    # the exception lines come first, so the text view (20 lines per evidence) shows them
    assert any("ImportError: libhccl.so: cannot open shared object file" in ln for ln in lines)
    assert any(ln.strip().startswith("kb:") and "cann-env-not-loaded" in ln for ln in lines)


def test_interpreter_without_torch_skips(tmp_path, cli):
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120)
    r = cli("smoke", "--python", str(bare / "bin" / "python"), "--json")
    assert r.rc == 0
    (torch,) = _findings(r.json(), "EC401")
    assert torch["status"] == "skip" and "torch is not installed" in torch["title"]
    assert [f["code"] for f in r.json()["findings"]] == ["EC401", "EC402"]


def test_interpreter_that_crashes_on_import(tmp_path, cli):
    """A torch whose import kills the interpreter is a fail with the signal, not an envcheck crash."""
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    wrapper = tmp_path / "python"
    wrapper.write_text(f"#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} \"$@\"\n")
    wrapper.chmod(0o755)
    r = cli("smoke", "--python", str(wrapper), "--json")
    assert r.rc == 1
    (torch,) = _findings(r.json(), "EC401")
    assert torch["status"] == "fail" and "crashed" in torch["title"] and "SIGSEGV" in torch["title"]
