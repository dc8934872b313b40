"""`envcheck compare REPORT.json...`: the drift table across reports gathered separately, one per node."""
from __future__ import annotations

import argparse
import json
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
    """One saved `envcheck --json` document; anything else is a one-line usage error."""
    if os.path.isdir(path):
        raise UsageError(f"{path}: is a directory, not a report")
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError):
        raise UsageError(f"{path}: not JSON (expected an `envcheck --json` report)") from None
    if isinstance(doc, dict) and doc.get("command") == "probe" and isinstance(doc.get("facts"), dict):
        doc = {**doc, "findings": []}  # a `probe --json` snapshot: facts only
    if not (isinstance(doc, dict) and "schema_version" in doc and isinstance(doc.get("facts"), dict)
            and isinstance(doc.get("findings"), list)):
        raise UsageError(f"{path}: not an envcheck report (no schema_version / facts / findings)")
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
        npu = facts.npu or {}
        count = npu.get("count", len(npu.get("devices") or []) if npu.get("devices") is not None else None)
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
