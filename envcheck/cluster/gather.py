"""What each rank contributes to the all-gather, and the cluster findings judged from all of them. Pure."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from envcheck.checks import finding  # noqa: F401  (re-exported: cluster code builds findings through it)
from envcheck.checks import launchenv as envvars
from envcheck.cluster import drift, netcheck
from envcheck.model import Facts, Finding, Status, ev


def node_label(who: Mapping[str, Any]) -> str:
    """How a node is named in reports: 'node1@host' under torchrun (GROUP_RANK), else the hostname."""
    host = who.get("host") or "?"
    return f"node{who['node_rank']}@{host}" if who.get("node_rank") is not None else str(host)


def payload(rank: int, who: Mapping[str, Any], env: Mapping[str, str], facts: Facts,
            issues: Sequence[envvars.Issue], device: str) -> dict[str, Any]:
    """One rank's contribution (JSON-friendly)."""
    return {"rank": rank, "who": dict(who), "node": node_label(who), "device": device,
            "env": {k: env[k] for k in envvars.DIST_VARS if env.get(k)},
            "issues": [i.__dict__ for i in issues], "facts": facts.to_dict()}


def by_node(payloads: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    nodes: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for p in sorted(payloads, key=lambda p: p["rank"]):
        nodes[p["node"]].append(p)
    return dict(nodes)


def analyse(payloads: Sequence[Mapping[str, Any]], world_size: int, matrix_path: str | None = None,
            verdicts: bool = True) -> list[Finding]:
    """Cluster findings: rank numbering (EC502), ranks and devices per node (EC503), drift (EC504)."""
    nodes = by_node(payloads)
    out = [finding("EC501", Status.OK, f"{world_size} rank(s) joined on {len(nodes)} node(s), as WORLD_SIZE says",
                   data={"nodes": {n: [p["rank"] for p in ps] for n, ps in nodes.items()}})]
    out += _issues(payloads)
    out += _numbering(nodes)
    out += _per_node(nodes)
    out += drift.findings([_drift_node(label, ps[0], matrix_path, verdicts) for label, ps in nodes.items()])
    out += netcheck.findings([(label, ps[0]["facts"]) for label, ps in nodes.items()])  # EC631 TLS, EC632 env
    return out


def _issues(payloads: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """Per-rank launch-variable problems, each naming the rank and node it came from."""
    out = []
    for p in payloads:
        for i in p.get("issues", ()):
            status = Status.FAIL if i["severity"] == "fail" else Status.WARN
            out.append(finding(i["code"], status, f"rank {p['rank']} on {p['node']}: {i['message']}",
                               fix=i.get("fix", ""),
                               data={"rank": p["rank"], "node": p["node"], "variable": i["variable"]}))
    return out


def _numbering(nodes: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[Finding]:
    out = []
    for label, ps in nodes.items():
        local = [p["who"].get("local_rank") for p in ps]
        dup = sorted({x for x in local if x is not None and local.count(x) > 1})
        if dup:
            out.append(finding("EC502", Status.FAIL, f"{label}: LOCAL_RANK {dup} used by more than one process",
                               data={"node": label, "local_ranks": local}))
        ranks = [p["rank"] for p in ps]
        if ranks != list(range(ranks[0], ranks[0] + len(ranks))):
            out.append(finding("EC502", Status.WARN, f"{label}: its ranks {ranks} are not one contiguous block "
                               "(HCCL and rank tables expect node k's ranks to follow node k-1's)",
                               data={"node": label, "ranks": ranks}))
    if not out:
        out.append(finding("EC502", Status.OK, "ranks are unique and each node holds one contiguous block"))
    return out


def _devices(facts: Mapping[str, Any]) -> int | None:
    npu = facts.get("npu") or {}
    if npu.get("count") is not None:
        return int(npu["count"])
    return len(npu["devices"]) if npu.get("devices") else None


def _per_node(nodes: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[Finding]:
    table = {label: {"ranks": len(ps), "devices": _devices(ps[0]["facts"])} for label, ps in nodes.items()}
    ev_ = [ev(label, f"{t['ranks']} rank(s), {t['devices'] if t['devices'] is not None else '?'} NPU(s)")
           for label, t in table.items()]
    out = []
    counts = drift.row("ranks per node", {n: str(t["ranks"]) for n, t in table.items()}, Status.FAIL)
    if counts.odd:
        out.append(finding("EC503", Status.FAIL, "nodes run different numbers of ranks: " + ", ".join(
            f"{n} runs {counts.values[n]}" for n in counts.odd) + f" (majority: {counts.majority})",
            evidence=ev_, data={"nodes": table}))
    devs = drift.row("NPUs per node", {n: str(t["devices"]) for n, t in table.items() if t["devices"] is not None},
                     Status.FAIL) if any(t["devices"] is not None for t in table.values()) else None
    if devs and devs.odd:
        out.append(finding("EC503", Status.FAIL, "nodes have different numbers of NPUs: " + ", ".join(
            f"{n} has {devs.values[n]}" for n in devs.odd) + f" (majority: {devs.majority})",
            evidence=ev_, data={"nodes": table}))
    if not out:
        out.append(finding("EC503", Status.OK, f"every node runs {counts.majority} rank(s)", evidence=ev_,
                           data={"nodes": table}))
    return out


def _drift_node(label: str, p: Mapping[str, Any], matrix_path: str | None, verdicts: bool) -> drift.Node:
    facts = Facts.from_dict(p["facts"])
    return drift.Node(label, facts, drift.matrix_verdicts(facts, matrix_path) if verdicts else {})
