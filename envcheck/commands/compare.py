"""`envcheck compare REPORT.json...`: the drift table across reports gathered separately, one per node."""
from __future__ import annotations

import argparse
import os
from typing import Any

from envcheck.errors import UsageError


def add_arguments(p: argparse.ArgumentParser) -> None:
    from envcheck.commands import _options as opt

    opt.matrix(p)
    opt.report(p)
    p.add_argument("reports", nargs="+", metavar="REPORT.json",
                   help="`envcheck --json` reports or `envcheck probe --json` snapshots, one per node (two or more)")


def read_report(path: str) -> dict[str, Any]:
    """One saved `envcheck --json` report or `probe --json` snapshot; anything else is a one-line usage error."""
    from envcheck.probe.snapshot import facts_from_document
    from envcheck.safeio import InputError, load_json_checked, read_text_bounded

    text = read_text_bounded(path, what="compare input")
    try:
        doc = load_json_checked(text, object, path)  # any JSON; its shape is checked below
    except InputError as exc:
        if "deep" in str(exc):
            raise
        raise UsageError(f"{path}: not JSON (expected an `envcheck --json` report)") from None
    if not (isinstance(doc, dict) and isinstance(doc.get("facts"), dict) and ("schema_version" in doc)):
        raise UsageError(f"{path}: not an envcheck report or probe snapshot (no schema_version / facts)")
    if doc.get("command") == "probe":
        doc = {**doc, "findings": []}  # a `probe --json` snapshot: facts only
    if "findings" not in doc:
        raise UsageError(f"{path}: not an envcheck report (no findings)")
    findings = doc["findings"]
    if not isinstance(findings, list) or not all(isinstance(f, dict) for f in findings):
        raise UsageError(f"{path}: \"findings\" must be a list of objects")
    facts_from_document(doc["facts"], path)  # section types
    return doc


def nodes_from(paths: list[str]) -> list:
    from envcheck.cluster.drift import Node, verdicts_from_findings
    from envcheck.model import Facts

    docs = [(p, read_report(p)) for p in paths]
    hosts = [str((d["facts"].get("system") or {}).get("hostname") or "") for _, d in docs]
    nodes = []
    for (path, doc), host in zip(docs, hosts):
        stem = os.path.basename(path)
        label = host if host and hosts.count(host) == 1 else (f"{host} ({stem})" if host else stem)
        facts = Facts.from_dict(doc["facts"])
        npu = facts.npu
        count = npu.count if "count" in npu else (len(npu.devices) if npu.devices is not None else None)
        nodes.append(Node(label, facts, verdicts_from_findings(doc["findings"]), {"NPUs": count}))
    return nodes


def run(args: argparse.Namespace) -> int:
    from envcheck.checks.runner import link
    from envcheck.cluster import drift
    from envcheck.commands._output import emit
    from envcheck.model import Facts, Report, Status
    from envcheck.version import __version__

    if len(args.reports) < 2:
        raise UsageError("compare needs two or more reports (one `envcheck --json` per node)")
    from envcheck.cluster import netcheck

    nodes = nodes_from(args.reports)
    net = [f for f in netcheck.findings([(n.label, n.facts.to_dict()) for n in nodes])  # EC631 TLS, EC632 env
           if f.status not in (Status.OK, Status.SKIP)]  # agreement is already EC504's ok line
    report = Report(facts=Facts(), findings=[link(f) for f in drift.findings(nodes) + net],
                    envcheck_version=__version__, command="compare")
    table = drift.render_table(drift.table(nodes), [n.label for n in nodes]) + "\n\n"
    return emit(report, args, before=table)
