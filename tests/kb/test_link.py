"""Linking findings to kb entries: check code first, then error text; one-line descriptions."""
from __future__ import annotations

from conftest import DATA

from envcheck.checks import runner
from envcheck.kb import link
from envcheck.kb.entries import load_kb
from envcheck.model import Finding, Status, ev

FIXTURE_KB = str(DATA / "diagnose" / "kb")
LIBHCCL = "ImportError: libhccl.so: cannot open shared object file: No such file or directory"


def finding(code: str, status: Status = Status.FAIL, title: str = "t", detail: str = "", evidence=()) -> Finding:
    return Finding(code=code, slug="s", status=status, title=title, detail=detail, evidence=tuple(evidence))


def test_check_code_links_first_then_text_matches():
    f = finding("EC410", evidence=[ev("stderr", "EI0002: The wait execution of the Notify register times out.")])
    assert link.entries_for(f, root=FIXTURE_KB) == ["fx-socket-timeout", "fx-notify-timeout"]


def test_check_linked_entries_that_also_match_lead():
    # EC402 links fx-libs-missing only; EC201 too. An entry named by the code and matching the text leads.
    f = finding("EC403", evidence=[ev("stderr", "EZ9999: Inner Error!\n" + LIBHCCL)])
    assert link.entries_for(f, root=FIXTURE_KB) == ["fx-inner-error", "fx-libs-missing"]
    f2 = finding("EC201", detail="import failed", evidence=[ev("smoke", LIBHCCL)])
    assert link.entries_for(f2, root=FIXTURE_KB) == ["fx-libs-missing"]


def test_smoke_failure_without_a_linked_code_is_matched_by_its_error_text():
    tail = ("Traceback (most recent call last):\n  File \"x.py\", line 3, in <module>\n"
            "RuntimeError: NPU out of memory. Tried to allocate 72.00 MiB (NPU 0; 61.27 GiB total capacity)\n")
    f = finding("EC999", evidence=[ev("stderr (tail)", tail)])
    assert link.entries_for(f, root=FIXTURE_KB) == ["fx-npu-oom"]


def test_no_code_and_no_text_match_gives_nothing():
    assert link.entries_for(finding("EC999", detail="all fine really"), root=FIXTURE_KB) == []


def test_describe_one_line(monkeypatch):
    # issue 13: a full URL when a site URL is configured, else the `envcheck kb show ID` command
    monkeypatch.setenv("ENVCHECK_SITE_URL", "")
    line = link.describe("fx-libs-missing", root=FIXTURE_KB)
    assert line == "envcheck kb show fx-libs-missing — Fixture: CANN libraries not on the loader path"
    monkeypatch.setenv("ENVCHECK_SITE_URL", "https://docs.example/envcheck/")
    line = link.describe("fx-libs-missing", root=FIXTURE_KB)
    assert line.startswith("https://docs.example/envcheck/kb/") and line.split(" — ")[0].endswith("/fx-libs-missing/")
    assert "\n" not in line
    assert link.describe("no-such-entry", root=FIXTURE_KB) == "envcheck kb show no-such-entry"


def test_fix_summary_takes_the_first_fix_lines_without_fences():
    kb = load_kb(FIXTURE_KB)
    assert link.fix_summary(kb.get("fx-libs-missing")) == (
        "Load the CANN environment before starting Python:\nsource /usr/local/Ascend/ascend-toolkit/set_env.sh")
    assert link.fix_summary(kb.get("fx-inner-error")) == ""  # no Fix section and no summary


def test_runner_links_failed_findings_to_the_real_kb():
    kb = load_kb()
    linked = [e for e in kb.entries if "EC201" in e.checks]
    f = runner.link(finding("EC201", evidence=[ev("env", "LD_LIBRARY_PATH has no CANN directories")]))
    assert f.kb and set(e.id for e in linked) <= set(f.kb)
    ok = runner.link(finding("EC201", status=Status.OK))
    assert ok.kb == ()


def test_runner_links_by_error_text_in_the_real_kb():
    ids = runner.link(finding("EC999", evidence=[ev("stderr", LIBHCCL)])).kb
    assert ids, "the real kb should know libhccl.so missing"
    entry = load_kb().get(ids[0])
    assert entry.category == "env-not-loaded"
