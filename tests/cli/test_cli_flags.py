"""Flag values that would make a gate go green by mistake, and output files that would destroy an input."""
from __future__ import annotations

import os

import pytest
from conftest import DATA

FACTS = str(DATA / "reports" / "node-a.json")


@pytest.mark.parametrize("argv,needle", [
    (("--select", "EC999"), "--select EC999"),
    (("--ignore", ""), "--ignore needs"),
    (("--select", "no-such-slug"), "no check"),
    (("--timeout", "nan"), "--timeout must be positive"),
    (("--timeout", "-1"), "--timeout must be positive"),
    (("--timeout", "inf"), "--timeout must be positive"),
])
def test_check_flags_that_cannot_mean_anything_are_usage_errors(cli, argv, needle):
    r = cli("--no-smoke", "--facts", FACTS, *argv)
    assert r.rc == 2 and needle in r.err and r.err.count("\n") == 1 and r.out == ""


@pytest.mark.parametrize("argv,needle", [
    (("collective", "--min-busbw", "nan"), "--min-busbw"),
    (("collective", "--nproc", "100000"), "--nproc"),
    (("collective", "--nproc", "0"), "--nproc"),
])
def test_smoke_flags_are_bounded(cli, argv, needle):
    r = cli("smoke", *argv)
    assert r.rc == 2 and needle in r.err and r.err.count("\n") == 1


def test_known_prefixes_and_slugs_still_select(cli):
    r = cli("--no-smoke", "--facts", FACTS, "--select", "EC1", "--select", "cann-env-not-loaded", "--json")
    assert r.rc in (0, 1)
    assert {f["code"][:3] for f in r.json()["findings"]} <= {"EC1", "EC2"}


def test_an_output_file_is_never_an_input(cli, tmp_path):
    log = tmp_path / "train.log"
    log.write_text("RuntimeError: NPU out of memory. Tried to allocate 5.03 GiB\n")
    r = cli("diagnose", str(log), "--junit", str(log))
    assert r.rc == 2 and "also an input" in r.err
    assert log.read_text().startswith("RuntimeError")
    facts = tmp_path / "facts.json"
    facts.write_text(open(FACTS).read())
    before = facts.read_text()
    r = cli("--no-smoke", "--facts", str(facts), "-o", str(facts))
    assert r.rc == 2 and facts.read_text() == before


def test_an_output_symlink_is_refused_and_its_target_kept(cli, tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    link = tmp_path / "out.xml"
    os.symlink(target, link)
    r = cli("--no-smoke", "--facts", FACTS, "--junit", str(link))
    assert r.rc == 2 and "symlink" in r.err and target.read_text() == "keep me"


def test_output_is_written_atomically_and_complete(cli, tmp_path):
    out = tmp_path / "r.json"
    out.write_text("old")
    r = cli("--no-smoke", "--facts", FACTS, "--format", "json", "-o", str(out))
    assert r.rc in (0, 1) and out.read_text().lstrip().startswith("{")
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
