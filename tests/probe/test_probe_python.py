"""Python packages of the target interpreter: the current one in-process, or --python PATH in a child."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from envcheck.errors import UsageError
from envcheck.probe import pyenv


@pytest.fixture(scope="module")
def other_venv(tmp_path_factory):
    """A second venv (no pip, no system site) holding only a fake torch_npu 2.1.0.post3 dist-info."""
    d = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(d)], check=True, timeout=120)
    py = d / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    info = d / site.split(str(d) + "/", 1)[1] / "torch_npu-2.1.0.post3.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(textwrap.dedent("""\
        Metadata-Version: 2.1
        Name: torch-npu
        Version: 2.1.0.post3
        Requires-Dist: torch (==2.1.0+cpu)
        Requires-Dist: pyyaml
        """))
    return py


def test_current_interpreter_reads_metadata_without_import():
    r = pyenv.probe(None, {}, timeout=10)
    assert r["executable"] == sys.executable
    assert r["version"] == ".".join(map(str, sys.version_info[:3]))
    from importlib import metadata

    assert r["packages"]["torch"] == metadata.version("torch")
    assert r["package_files"]["torch"].endswith(".dist-info")
    assert r["packages"]["torch-npu"] is None


def test_other_interpreter_packages_are_its_own(other_venv):
    r = pyenv.probe(str(other_venv), {"PATH": "/usr/bin:/bin"}, timeout=30)
    assert r["packages"]["torch-npu"] == "2.1.0.post3"
    assert r["packages"]["torch"] is None  # the dev venv has torch; that venv does not
    assert r["torch_npu_requires"] == "torch (==2.1.0+cpu)"
    assert "torch_npu-2.1.0.post3.dist-info" in r["package_files"]["torch-npu"]
    assert r["executable"].startswith(str(other_venv.parent.parent))


def test_cli_probe_with_python(other_venv, cli):
    res = cli("probe", "--json", "--python", str(other_venv))
    assert res.rc == 0
    facts = res.json()["facts"]
    assert facts["python"]["packages"]["torch-npu"] == "2.1.0.post3"


@pytest.mark.parametrize("path, msg", [("/etc/passwd", "not an executable"), ("/nonexistent/python", "no such file"),
                                       ("/tmp", "not an executable"), ("/bin/true", "not a Python interpreter")])
def test_bad_python_is_a_usage_error(path, msg):
    with pytest.raises(UsageError, match=msg):
        pyenv.probe(path, {"PATH": "/usr/bin:/bin"}, timeout=10)


def test_hanging_python_times_out(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nexec sleep 30\n")
    fake.chmod(0o755)
    # issue 14: an interpreter that exists but hangs is a finding about the machine, not bad input
    with pytest.raises(pyenv.PythonUnusable, match="did not answer"):
        pyenv.probe(str(fake), {"PATH": "/usr/bin:/bin"}, timeout=0.5)


@pytest.mark.parametrize("path", ["/etc/passwd", "/nonexistent/python"])
def test_cli_bad_python_exits_2_one_line(path, cli):
    res = cli("probe", "--python", path)
    assert res.rc == 2 and res.out == ""
    assert res.err.startswith("envcheck: error: --python") and res.err.count("\n") == 1


def test_torch_pin_forms():
    assert pyenv.torch_pin(["torch (==2.1.0+cpu)"]) == "torch (==2.1.0+cpu)"
    assert pyenv.torch_pin(["numpy", "torch==2.5.1; extra == 'x'"]) == "torch==2.5.1"
    assert pyenv.torch_pin(["torchvision>=0.1", "torch-npu"]) is None
