"""Report model and renderers: text layout and colour rules, JSON schema, JUnit, exit codes, redaction."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import jsonschema
import pytest

from envcheck import resources
from envcheck.checks.registry import check, index, select
from envcheck.model import Evidence, Facts, Finding, Report, Status
from envcheck.render import FORMATS, render
from envcheck.render.text import use_color


def _f(code: str, status: Status, section: str = "CANN", **kw) -> Finding:
    return Finding(code=code, slug="some-thing", status=status, title=f"{code} title", section=section, **kw)


def sample_report() -> Report:
    facts = Facts(env={"ASCEND_HOME_PATH": "/usr/local/Ascend/ascend-toolkit/latest"})
    findings = [
        _f("EC001", Status.OK, "System"),
        _f("EC201", Status.FAIL, "Environment", detail="ASCEND_HOME_PATH is unset",
           evidence=(Evidence("env:ASCEND_HOME_PATH", "<unset>"),),
           fix="source /usr/local/Ascend/ascend-toolkit/set_env.sh", kb=("cann-env-not-loaded",)),
        _f("EC301", Status.WARN, "CANN", fix="reinstall the kernels package"),
        _f("EC302", Status.SKIP, "CANN"),
        _f("EC303", Status.ERROR, "Driver & devices"),
    ]
    return Report(facts=facts, findings=findings, envcheck_version="0.0.test")


def test_every_status_has_a_mark_and_a_json_spelling():
    from envcheck.render.text import ASCII_MARKS, COLORS, MARKS

    for s in Status:
        assert s in MARKS and s in ASCII_MARKS and s in COLORS
        assert Status(s.value) is s


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_every_renderer_renders_the_sample(name):
    out = render(sample_report(), name)
    assert "EC201" in out


def test_json_matches_the_shipped_schema():
    doc = json.loads(render(sample_report(), "json"))
    schema = json.loads(resources.schema_path("report").read_text())
    jsonschema.validate(doc, schema)
    assert doc["verdict"] == "fail"
    assert doc["summary"] == {"ok": 1, "skip": 1, "warn": 1, "error": 1, "fail": 1}


def test_schema_rejects_a_bad_status():
    doc = json.loads(render(sample_report(), "json"))
    doc["findings"][0]["status"] = "passed"
    schema = json.loads(resources.schema_path("report").read_text())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, schema)


def test_text_layout_sections_marks_and_verbose():
    # issue 13 changed the default view: one line per section, then only failures and warnings
    r = sample_report()
    plain = render(r, "text")
    lines = plain.splitlines()
    # sections in the fixed order, each with the worst mark of its judged findings
    heads = [ln.split("  ")[0] for ln in lines if ln.startswith("[")]
    assert heads == ["[✓] System", "[!] CANN", "[?] Driver & devices", "[✗] Environment"]
    assert "[✓] System  EC001 title" in lines  # an all-ok section is one line
    assert "    ✗ EC201 title  (EC201 some-thing)" in lines
    assert not any("(EC001)" in ln for ln in lines)  # ok findings only under -v
    # fix is shown for failures even without -v; detail and evidence only with -v
    assert "fix: source /usr/local/Ascend/ascend-toolkit/set_env.sh" in plain
    assert "ASCEND_HOME_PATH is unset" not in plain
    verbose = render(r, "text", verbose=True)
    assert "    ✓ EC001 title  (EC001)" in verbose.splitlines()  # slugs name failures: not on ok lines
    assert "ASCEND_HOME_PATH is unset" in verbose
    assert "· env:ASCEND_HOME_PATH: <unset>" in verbose
    assert "\x1b[" not in plain
    assert "\x1b[31m" in render(r, "text", color=True)


def test_colour_rules(monkeypatch):
    class Tty:
        def isatty(self):
            return True

    class Pipe:
        def isatty(self):
            return False

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_color("auto", Tty()) is True
    assert use_color("auto", Pipe()) is False
    assert use_color("never", Tty()) is False
    monkeypatch.setenv("NO_COLOR", "1")
    assert use_color("auto", Tty()) is False


def test_junit_counts_and_failure_body():
    root = ET.fromstring(render(sample_report(), "junit").split("\n", 1)[1])
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == ("5", "1", "1", "1")
    failure = root.find(".//testcase/failure")
    assert failure is not None and "set_env.sh" in failure.text
    assert root.find(".//testcase/error") is not None


def test_exit_codes():
    r = sample_report()
    assert r.exit_code() == 1
    ok = Report(facts=Facts(), findings=[_f("EC001", Status.OK), _f("EC002", Status.WARN)])
    assert ok.exit_code() == 0
    assert ok.exit_code(strict=True) == 1


def test_secrets_never_reach_any_renderer():
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"
    r = sample_report()
    r.facts.env["MY_API_TOKEN"] = "hunter2-plain"
    r.findings.append(_f("EC210", Status.FAIL, "Environment", evidence=(Evidence("env:X", secret),),
                         detail=f"url https://bob:pa55word@mirror.example/simple {secret}"))
    for name in FORMATS:
        out = render(r, name, verbose=True)
        assert secret not in out and "pa55word" not in out and "hunter2-plain" not in out, name


def test_report_round_trips_through_json():
    r = sample_report()
    back = Report.from_dict(json.loads(render(r, "json")))
    assert [f.to_dict() for f in back.findings] == [f.to_dict() for f in r.findings]


def test_registry_rejects_duplicates_and_selects_by_prefix():
    def body(c, ctx):
        yield c.ok("fine")

    a = check("EC201", "a-thing", "A", section="Environment")(body)
    b = check("EC305", "b-thing", "B", section="CANN")(body)
    with pytest.raises(ValueError):
        index([a, check("EC201", "other", "C", section="X")(body)])
    assert select([a, b], ["EC2"]) == [a]
    assert select([a, b], [], ["b-thing"]) == [a]
    with pytest.raises(ValueError):
        check("E201", "x", "y", section="z")
