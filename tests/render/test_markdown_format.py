"""--format markdown: a report to paste into an issue, checked by rendering it with a Markdown library."""
from __future__ import annotations

import json

import markdown
import pytest
from conftest import DATA

from envcheck.model import Evidence, Facts, Finding, Report, Status
from envcheck.render import FORMATS, render

SECRET = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6"


def sample() -> Report:
    f = [Finding("EC301", "cann-not-found", Status.FAIL, "no CANN toolkit | found", section="CANN",
                 fix="install the CANN toolkit", kb=("cann-not-installed",),
                 evidence=(Evidence("env:TOKEN_URL", f"https://u:pa55@x.example {SECRET}"),)),
         Finding("EC201", "cann-env-not-loaded", Status.WARN, "set_env.sh not sourced", section="Environment"),
         Finding("EC001", "system-summary", Status.OK, "Linux x86_64", section="System"),
         Finding("EC402", "torch-npu-import-failed", Status.SKIP, "no torch_npu", section="Smoke tests")]
    return Report(Facts(env={"HF_TOKEN": "hunter2-plain"}), f, "0.1.0")


def html_of(text: str) -> str:
    return markdown.markdown(text, extensions=["tables", "fenced_code", "md_in_html"])


def test_markdown_is_a_registered_format():
    assert "markdown" in FORMATS


def test_report_structure_table_failures_and_collapsed_facts():
    md = render(sample(), "markdown")
    html = html_of(md)
    assert "<table>" in html and html.count("<tr>") == 1 + 3  # header + the 3 findings that are not skips
    assert "no CANN toolkit \\| found" in md  # a pipe in a title does not break the table
    assert "<h4>" in html and "install the CANN toolkit" in html  # a failure with its fix
    assert "1 check(s) skipped" in md
    assert "<details>" in md and "<summary>" in md
    facts = md.split("<details>", 1)[1]
    assert '"env"' in facts  # the facts are inside the collapsed block
    assert md.index("### Failures and warnings") < md.index("<details>")


def test_markdown_is_redacted():
    md = render(sample(), "markdown", verbose=True)
    assert SECRET not in md and "pa55" not in md and "hunter2-plain" not in md


@pytest.mark.parametrize("cmd", [
    ["--no-smoke", "--facts", str(DATA / "reports" / "node-a.json")],
    ["compare", str(DATA / "reports" / "node-a.json"), str(DATA / "reports" / "node-b.json")],
])
def test_markdown_from_the_cli(cli, cmd):
    r = cli(*cmd, "--format", "markdown")
    assert r.rc in (0, 1), r.err
    assert r.out.lstrip().startswith(("## envcheck report", "| ")) or "## envcheck report" in r.out
    assert "<table>" in html_of(r.out)


def test_diagnose_markdown(cli, tmp_path):
    log = tmp_path / "train.log"
    log.write_text("RuntimeError: NPU out of memory. Tried to allocate 5.03 GiB (NPU 3; 60.96 GiB total capacity)\n")
    r = cli("diagnose", "--kb", str(DATA / "diagnose" / "kb"), str(log), "--format", "markdown")
    assert r.rc == 1, r.err
    html = html_of(r.out)
    assert "<table>" in html and "fx-npu-oom" in r.out and "<pre><code>" in html


def test_output_file_and_json_alias(cli, tmp_path):
    out = tmp_path / "r.md"
    r = cli("--no-smoke", "--facts", str(DATA / "reports" / "node-a.json"), "--format", "markdown", "-o", str(out))
    assert r.out == "" and out.read_text().startswith("## envcheck report")
    r = cli("--no-smoke", "--facts", str(DATA / "reports" / "node-a.json"), "--json")
    assert json.loads(r.out)["command"] == "check"
    r = cli("--no-smoke", "--facts", str(DATA / "reports" / "node-a.json"), "--json", "--format", "text")
    assert r.rc == 2 and "contradict" in r.err


def test_report_options_are_not_offered_where_they_do_not_apply(cli, tmp_path):
    r = cli("--junit", str(tmp_path / "x.xml"), "kb", "search", "hccl")
    assert r.rc == 2 and "--junit does not apply" in r.err
    assert not (tmp_path / "x.xml").exists()
    r = cli("kb", "--junit", str(tmp_path / "x.xml"), "search", "hccl")
    assert r.rc == 2
    r = cli("list", "--format", "json")
    assert r.rc == 2


def test_markdown_frames_the_host_and_names_collapsed_findings():
    """The issue reader sees what kind of machine it is, the as-of date, and which findings one cause explains."""
    cause = Finding("EC301", "cann-not-found", Status.FAIL, "no CANN toolkit found", section="CANN",
                    fix="install the CANN toolkit")
    folded = Finding("EC401", "torch-import-failed", Status.SKIP, "import torch failed", section="Smoke tests",
                     because="EC301")
    report = Report(Facts(), [cause, folded], "0.1.0",
                    host={"kind": "none", "title": "this is not an Ascend machine", "needs": ["the CANN toolkit"]},
                    knowledge={"matrix_as_of": "2026-11-30"})
    md = render(report, "markdown")
    head = md.split("|", 1)[0]
    assert "**this is not an Ascend machine**" in head and "- needs the CANN toolkit" in head
    assert "knowledge as of 2026-11-30" in head
    assert "Explains EC401 (collapsed under this cause)." in md
