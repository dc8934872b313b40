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
    """One failing testcase per kb entry the input points to (a CI gate on logs), one for the first
    failing rank; known-harmless warnings pass with a note, and so do the `likely` alternatives that follow
    a specific match (guesses next to a diagnosis are no second failure)."""
    root = ET.Element("testsuites", name="envcheck diagnose")
    specific = any(m.confidence != "likely" and m.severity != "benign" for m in result.matches)

    def note_only(m: Any) -> bool:
        return m.severity == "benign" or (specific and m.confidence == "likely")

    real = [m for m in result.matches if not note_only(m)]
    n = len(result.matches) + (1 if result.first_failure else 0)
    nfail = len(real) + (1 if result.first_failure else 0)
    root.set("tests", str(n))
    root.set("failures", str(nfail))
    suite = ET.SubElement(root, "testsuite", name="Diagnose", tests=str(n), failures=str(nfail))
    ff = result.first_failure
    if ff:
        who = f"rank {ff['rank']}" if ff.get("rank") is not None else str(ff.get("file"))
        case = ET.SubElement(suite, "testcase", classname="envcheck.diagnose.first-failure",
                             name=f"first failure: {who}")
        waited = ", ".join(str(w.get("rank") if w.get("rank") is not None else w.get("file"))
                           for w in ff.get("others_timed_out") or [])
        text = f"{ff.get('file')}:{ff.get('line')}: {ff.get('text')}"
        text += f"\nonly timed out: {waited}" if waited else ""
        ET.SubElement(case, "failure", message=f"{who} failed first", type="first-failure").text = text
    for m in result.matches:
        case = ET.SubElement(suite, "testcase", classname=f"envcheck.diagnose.{m.category or 'kb'}",
                             name=f"{m.id}: {m.title or m.id}")
        body = [f"{h.get('file')}:{h.get('line')}: {h.get('text')}" for h in m.lines]
        if m.severity == "benign":
            ET.SubElement(case, "system-out").text = "known harmless warning\n" + "\n".join(body)
            continue
        if note_only(m):
            ET.SubElement(case, "system-out").text = "possible alternative (likely)\n" + "\n".join(body)
            continue
        if m.reason:
            body.insert(0, f"why: {m.reason}")
        if m.fix:
            body.append(f"fix: {m.fix}")
        body.append(f"kb: {m.id} (confidence: {m.confidence}{', weak' if m.weak else ''})")
        ET.SubElement(case, "failure", message=m.title or m.id, type=m.id).text = "\n".join(body)
    return _xml(root)
