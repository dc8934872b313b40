"""CLI plumbing: help, version, list/explain, usage errors exit 2 without a traceback."""
from __future__ import annotations

import os

from envcheck.checks import all_checks


def test_help_and_version(cli):
    r = cli("--help")
    assert r.rc == 0 and "Exit status" in r.out
    r = cli("--version")
    assert r.rc == 0 and r.out.startswith("envcheck ")


def test_unknown_flag_is_usage_error(cli):
    r = cli("--no-such-flag")
    assert r.rc == 2 and "usage:" in r.err


def test_list_names_every_check(cli):
    r = cli("list", "--json")
    assert r.rc == 0
    assert [row["code"] for row in r.json()] == [c.code for c in all_checks()]


def test_explain_known_and_unknown(cli):
    checks = all_checks()
    if checks:
        c = checks[0]
        r = cli("explain", c.code.lower())
        assert r.rc == 0 and c.slug in r.out
        r = cli("explain", c.slug, "--json")
        assert r.json()["code"] == c.code
    r = cli("explain", "EC999")
    assert r.rc == 2 and r.err.startswith("envcheck: error: unknown check") and "Traceback" not in r.err


def test_facts_snapshot_errors_are_one_line(cli, tmp_path):
    bad = tmp_path / "facts.json"
    bad.write_bytes(b"\x00\x01garbage")
    r = cli("--facts", str(bad), "--no-smoke")
    assert r.rc == 2 and r.err.count("\n") == 1 and "cannot read facts" in r.err
    r = cli("--facts", str(tmp_path / "missing.json"))
    assert r.rc == 2


def test_junit_to_a_directory_is_usage_error(cli, tmp_path):
    r = cli("--no-smoke", "--junit", str(tmp_path), "--facts", str(_facts(tmp_path)))
    assert r.rc == 2 and "is a directory" in r.err


def _facts(tmp_path):
    p = tmp_path / "f.json"
    p.write_text('{"facts": {"root": "/"}}')
    return p


def test_ignore_drops_findings_emitted_by_a_driver_check(cli):
    """EC401 drives the smoke suite and emits EC403 findings; --ignore EC403 must still drop them."""
    r = cli("--device", "cpu", "--select", "EC4", "--ignore", "EC403", "--json")
    codes = {f["code"] for f in r.json()["findings"]}
    assert "EC401" in codes and "EC403" not in codes
    r = cli("--device", "cpu", "--select", "EC4", "--json")
    assert "EC403" in {f["code"] for f in r.json()["findings"]}


def test_python_given_as_relative_path_bare_name_or_venv_dir(cli, tmp_path, monkeypatch):
    import sys
    from pathlib import Path

    from envcheck.cli import resolve_python

    exe = Path(sys.executable)
    venv = exe.parent.parent
    monkeypatch.chdir(venv.parent)
    rel = os.path.relpath(exe, venv.parent)
    assert resolve_python(rel) == str(Path(venv.parent, rel))
    assert resolve_python(str(venv)) in (str(venv / "bin" / "python"), str(venv / "bin" / "python3"))
    r = cli("probe", "--json", "--python", rel)
    assert r.rc == 0, r.err
    assert r.json()["facts"]["python"]["version"]
    r = cli("probe", "--python", str(tmp_path))
    assert r.rc == 2 and "Traceback" not in r.err
