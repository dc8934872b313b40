"""The EC4xx checks in the default run: --no-smoke, the quick subset, --select and listing."""
from __future__ import annotations

import subprocess
import sys

from envcheck.checks import runner, smoke
from envcheck.checks.registry import Context
from envcheck.model import Facts, Status


def _run(level: str, checks=None, **opts):
    ctx = Context(facts=Facts(), options={"smoke": level, "device": "cpu", "timeout": None, "python": None, **opts})
    chosen = checks if checks is not None else smoke.planned_checks(level)
    return runner.run(chosen, ctx).findings


def test_no_smoke_is_a_single_skip():
    (f,) = _run("none")
    assert (f.code, f.status, f.title) == ("EC401", Status.SKIP, "smoke tests skipped (--no-smoke)")


def test_quick_runs_importability_and_a_few_fast_ops():
    found = _run("quick")
    assert [f.code for f in found] == ["EC401", "EC402", "EC403", "EC404", "EC405", "EC406"]
    assert all(f.section == "Smoke tests" for f in found)
    assert found[0].status is Status.OK and found[0].title.startswith("torch 2.13.0")
    assert found[1].status is Status.SKIP  # torch_npu is not installed here
    ops = found[2]
    assert ops.status is Status.OK and "on cpu" in ops.title
    cases = {o["case"] for o in ops.data["outcomes"]}
    assert cases == {"matmul[float32]", "layer_norm", "softmax", "cross_entropy_backward", "index_put_"}
    assert len(ops.data["startup_seconds"]) == 1


def test_each_smoke_code_is_reported_by_its_own_check_once():
    """No driver: a selection runs exactly the selected checks, each reporting only its own code, and
    the op suite they share runs once."""
    chosen = [c for c in smoke.CHECKS if c.code in ("EC403", "EC406", "EC401")]
    ctx = Context(facts=Facts(), options={"smoke": "quick", "device": "cpu", "timeout": None, "python": None})
    found = runner.run(chosen, ctx).findings
    assert [f.code for f in found] == ["EC401", "EC403", "EC406"]
    assert ctx.smoke is not None and list(ctx.smoke._cache) == ["import", "suite"]


def test_smoke_parts_that_cannot_run_skip_and_name_the_cause(tmp_path):
    """torch missing in the target interpreter: EC401 fails, the op checks skip "because ... (EC401)"."""
    from envcheck.smoke.session import Session

    (tmp_path / "bin").mkdir()
    python = tmp_path / "bin" / "python"
    python.write_text("#!/bin/sh\nexec /usr/bin/env python3 -S -I \"$@\"\n")
    python.chmod(0o755)
    ctx = Context(facts=Facts(), options={"smoke": "quick", "device": "cpu", "timeout": 30, "python": str(python)})
    ctx.smoke = Session.from_options(ctx.options)
    found = {f.code: f for f in runner.run(smoke.planned_checks("quick"), ctx).findings}
    assert found["EC401"].status in (Status.SKIP, Status.FAIL)
    assert set(found) == {"EC401", "EC402"}  # EC403-EC406 require EC401: one cause, one line
    alone = [c for c in smoke.CHECKS if c.code == "EC403"]
    (f,) = runner.run(alone, ctx).findings  # selected on its own, it says why it did not run
    assert f.status is Status.SKIP and "(EC401)" in f.title


def test_a_sibling_alone_under_no_smoke_skips():
    (ec403,) = [c for c in smoke.CHECKS if c.code == "EC403"]
    (f,) = _run("none", checks=[ec403])
    assert f.code == "EC403" and f.status is Status.SKIP


def test_codes_slugs_and_docs():
    codes = {c.code: c for c in smoke.CHECKS}
    assert sorted(codes) == ["EC401", "EC402", "EC403", "EC404", "EC405", "EC406", "EC407", "EC408",
                             "EC410", "EC411", "EC412", "EC413"]
    assert codes["EC401"].slug == "torch-import-failed" and codes["EC401"].default
    assert codes["EC406"].slug == "cpu-fallback" and codes["EC413"].slug == "busbw-below-floor"
    assert [c.code for c in smoke.CHECKS if c.default] == ["EC401"]
    assert [c.code for c in smoke.planned_checks("none")] == ["EC401"]
    assert [c.code for c in smoke.planned_checks("full")] == sorted(codes)
    for c in smoke.CHECKS:
        assert c.section == "Smoke tests" and c.failable and len((c.fn.__doc__ or "").strip()) > 80, c.code


def test_cli_no_smoke_shows_one_smoke_line(cli):
    r = cli("--no-smoke", "--json")
    smoke_findings = [f for f in r.json()["findings"] if f["section"] == "Smoke tests"]
    assert [(f["code"], f["status"]) for f in smoke_findings] == [("EC401", "skip")]


def test_parsing_the_cli_does_not_import_torch():
    code = ("import sys; from envcheck.cli import build_parser; build_parser(); "
            "import envcheck.commands.smoke, envcheck.checks.smoke; print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_full_adds_parity_mindspore_and_a_two_rank_collective():
    found = _run("full", sizes=[1024, 65536])
    codes = [f.code for f in found]
    assert codes == ["EC401", "EC402", "EC403", "EC404", "EC405", "EC406", "EC407", "EC408",
                     "EC410", "EC411", "EC412", "EC413"]
    by = {f.code: f for f in found}
    assert by["EC403"].status is Status.OK and len(by["EC403"].data["outcomes"]) == 16
    # issue 13: on the CPU the parity run compares the CPU with itself: a skip, not a green tick (its curves kept)
    assert by["EC407"].status is Status.SKIP and len(by["EC407"].data["cpu_losses"]) == 20
    assert by["EC408"].status is Status.SKIP and "MindSpore is not installed" in by["EC408"].title
    assert by["EC410"].status is Status.OK and by["EC410"].title.startswith("2 ranks initialised gloo")
    assert by["EC413"].status is Status.OK and len(by["EC413"].data["rows"]) == 8


def _fake_mindspore(tmp_path, body: str):
    pkg = tmp_path / "mindspore"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("__version__ = '2.4.0'\n\ndef run_check():\n" + body)
    return str(tmp_path)


def test_mindspore_run_check_runs_in_a_child(tmp_path, monkeypatch):
    (ec408,) = [c for c in smoke.CHECKS if c.code == "EC408"]
    ok_dir = _fake_mindspore(tmp_path / "ok", "    print('MindSpore version: 2.4.0')\n    print('The result of "
                             "multiplication calculation is correct, MindSpore has been installed on platform [CPU] "
                             "successfully!')\n")
    monkeypatch.setenv("PYTHONPATH", ok_dir)
    (f,) = _run("ops", checks=[ec408])
    assert f.status is Status.OK and "installed on platform [CPU] successfully" in f.evidence[0].text
    bad_dir = _fake_mindspore(tmp_path / "bad", "    raise RuntimeError('Ascend collective communication "
                              "initialization failed.')\n")
    monkeypatch.setenv("PYTHONPATH", bad_dir)
    (f,) = _run("ops", checks=[ec408])
    assert f.status is Status.FAIL and "exit status 1" in f.title
    assert "Ascend collective communication initialization failed." in f.evidence[0].text


def test_a_facts_replay_starts_no_smoke_child(cli, tmp_path):
    """--facts judges a snapshot: the smoke checks must not run this machine's torch and call it the snapshot's."""
    from conftest import DATA

    r = cli("--facts", str(DATA / "reports" / "node-a.json"), "--json")
    smoke = [f for f in r.json()["findings"] if f["section"] == "Smoke tests"]
    assert smoke and all(f["status"] == "skip" and "saved snapshot" in f["title"] for f in smoke)
