"""Class 9 (issue 14): no traceback — a 4,300-digit version, `kb new` into a read-only kb / onto a
dangling symlink / where the category is a file, stdout closed, /dev/full, PYTHONIOENCODING=ascii,
non-UTF-8 output: one line on stderr and exit 2 (or the report's own code)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from envcheck.errors import UsageError
from envcheck.kb.new import Draft, write
from envcheck.versions import VersionError, parse_ascend, parse_pep440, parse_pyrange

HUGE = "9" * 5000


@pytest.mark.parametrize("fn,text", [(parse_ascend, f"{HUGE}.0.RC1"), (parse_ascend, f"8.0.RC{HUGE}"),
                                     (parse_ascend, f"8.0.1.b{HUGE}"), (parse_pep440, f"2.{HUGE}"),
                                     (parse_pyrange, f"3.8-3.{HUGE}")])
def test_huge_version_numbers_are_version_errors(fn, text):
    with pytest.raises(VersionError) as e:
        fn(text)
    assert len(str(e.value)) < 200


def _draft(**kw) -> Draft:
    d = Draft(id="new-entry", title="T", title_zh="标题", category="hccl-timeout", summary_zh="摘要",
              symptoms=["x"])
    for k, v in kw.items():
        setattr(d, k, v)
    return d


def test_kb_new_onto_a_dangling_symlink(tmp_path):
    (tmp_path / "hccl-timeout").mkdir()
    victim = tmp_path / "victim"
    (tmp_path / "hccl-timeout" / "new-entry.md").symlink_to(victim)
    with pytest.raises(UsageError, match="already exists"):
        write(_draft(), tmp_path)
    assert not victim.exists()


def test_kb_new_where_the_category_is_a_file(tmp_path):
    (tmp_path / "hccl-timeout").write_text("not a dir")
    with pytest.raises(UsageError, match="not a directory"):
        write(_draft(), tmp_path)


def test_kb_new_into_a_read_only_kb(tmp_path):
    (tmp_path / "hccl-timeout").mkdir()
    os.chmod(tmp_path / "hccl-timeout", 0o555)
    try:
        if os.access(tmp_path / "hccl-timeout", os.W_OK):
            pytest.skip("running as root: a read-only directory is still writable")
        with pytest.raises(UsageError, match="cannot create"):
            write(_draft(), tmp_path)
    finally:
        os.chmod(tmp_path / "hccl-timeout", 0o755)


def _run(argv: list[str], **kw) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.update(kw.pop("env", {}))
    return subprocess.run([sys.executable, "-m", "envcheck", *argv], env=env, cwd=str(REPO), timeout=120,
                          check=False, **kw)


def test_matrix_check_with_a_5000_digit_version():
    p = _run(["matrix", "check", "--cann", f"{HUGE}.0.RC1"], capture_output=True, text=True)
    assert p.returncode == 2 and "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_stdout_closed():
    p = _run(["list"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
             preexec_fn=lambda: os.close(1))
    assert p.returncode == 0 and "Traceback" not in p.stderr and "standard output is closed" in p.stderr


def test_dev_full():
    with open("/dev/full", "w") as full:
        p = _run(["list"], stdout=full, stderr=subprocess.PIPE, text=True)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip().splitlines() == ["envcheck: error: cannot write the report to standard output: "
                                             "No space left on device"]


@pytest.mark.parametrize("enc", ["ascii", "latin-1"])
def test_unencodable_output(enc):
    p = _run(["kb", "search", "超时"], capture_output=True, env={"PYTHONIOENCODING": enc})
    assert p.returncode in (0, 1) and b"Traceback" not in p.stderr and p.stdout


def test_non_utf8_file_name(tmp_path):
    name = os.fsdecode(b"\xff\xfe.log")
    path = Path(tmp_path) / name
    path.write_text("RuntimeError: EI0006 Getting socket times out\n")
    p = _run(["diagnose", str(path)], capture_output=True)
    assert p.returncode in (0, 1) and b"Traceback" not in p.stderr
