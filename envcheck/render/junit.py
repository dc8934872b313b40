"""JUnit XML renderer: one testsuite per section, one testcase per finding (for CI gates)."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from envcheck.kb.diagnose import DiagnoseResult
from envcheck.model import Report, Status
from envcheck.render.text import group_by_section


def _body(f: Any) -> str:
    lines = [f.detail] if f.detail else []
    lines += [f"{e.source}: {e.text}" for e in f.evidence]
    if f.fix:
        lines.append(f"fix: {f.fix}")
    if f.kb:
        lines.append("kb: " + ", ".join(f.kb))
    return "\n".join(lines)


def render(report: Report, **_: Any) -> str:
    root = ET.Element("testsuites", name="envcheck")
    s = report.summary
    root.set("tests", str(len(report.findings)))
    root.set("failures", str(s["fail"]))
    root.set("errors", str(s["error"]))
    root.set("skipped", str(s["skip"]))
    for section, findings in group_by_section(report.findings):
        suite = ET.SubElement(root, "testsuite", name=section, tests=str(len(findings)))
        counts = {k: sum(f.status is k for f in findings) for k in Status}
        suite.set("failures", str(counts[Status.FAIL]))
        suite.set("errors", str(counts[Status.ERROR]))
        suite.set("skipped", str(counts[Status.SKIP]))
        for f in findings:
            case = ET.SubElement(suite, "testcase", classname=f"envcheck.{f.code}",
                                 name=f"{f.code} {f.slug}: {f.title}")
            msg = f.title
            if f.status is Status.FAIL:
                ET.SubElement(case, "failure", message=msg, type=f.slug).text = _body(f)
            elif f.status is Status.ERROR:
                ET.SubElement(case, "error", message=msg, type=f.slug).text = _body(f)
            elif f.status is Status.SKIP:
                ET.SubElement(case, "skipped", message=msg)
            elif f.status is Status.WARN:
                ET.SubElement(case, "system-out").text = "WARNING: " + msg + "\n" + _body(f)
    return _xml(root)


def _xml(root: ET.Element) -> str:
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def render_diagnose(result: DiagnoseResult, **_: Any) -> str:
    """One failing testcase per matched kb entry (a CI gate on logs)."""
    root = ET.Element("testsuites", name="envcheck diagnose")
    n = len(result.matches)
    root.set("tests", str(n))
    root.set("failures", str(n))
    suite = ET.SubElement(root, "testsuite", name="Diagnose", tests=str(n), failures=str(n))
    for m in result.matches:
        case = ET.SubElement(suite, "testcase", classname=f"envcheck.diagnose.{m.category or 'kb'}",
                             name=f"{m.id}: {m.title or m.id}")
        body = [f"{h.get('file')}:{h.get('line')}: {h.get('text')}" for h in m.lines]
        if m.fix:
            body.append(f"fix: {m.fix}")
        body.append(f"kb: {m.id}")
        ET.SubElement(case, "failure", message=m.title or m.id, type=m.id).text = "\n".join(body)
    return _xml(root)
