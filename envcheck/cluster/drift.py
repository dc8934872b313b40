"""Version drift across nodes: one row per field, the majority value, and the odd node(s) out. Pure."""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable

from envcheck.checks import finding
from envcheck.model import Facts, Finding, Status, ev

CODE = "EC504"


@dataclass
class Node:
    """One node as the drift table sees it: a label, its facts and its matrix verdicts."""

    label: str
    facts: Facts
    verdicts: dict[str, str] = field(default_factory=dict)
    """check code -> status ('ok', 'fail', ...) of the compatibility (EC1xx) checks on that node."""
    extra: dict[str, Any] = field(default_factory=dict)
    """more comparable values (e.g. ranks, devices) keyed by field name."""


# (field, read value from a Node, severity when nodes differ)
FIELDS: tuple[tuple[str, Callable[[Node], Any], Status], ...] = (
    ("CANN", lambda n: n.facts.cann_version, Status.FAIL),
    ("driver", lambda n: n.facts.driver_version, Status.FAIL),
    ("firmware", lambda n: n.facts.firmware_version, Status.FAIL),
    ("chip", lambda n: n.facts.chip, Status.FAIL),
    ("torch", lambda n: n.facts.package("torch"), Status.FAIL),
    ("torch_npu", lambda n: n.facts.package("torch-npu"), Status.FAIL),
    ("Python", lambda n: n.facts.python_version, Status.WARN),
)


@dataclass
class Row:
    field: str
    values: dict[str, str]
    majority: str
    odd: list[str]
    severity: Status

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "values": self.values, "majority": self.majority, "odd": self.odd,
                "severity": self.severity.value}


def show(v: Any) -> str:
    return "absent" if v in (None, "") else str(v)


def row(name: str, values: Mapping[str, str], severity: Status) -> Row:
    """Majority value (ties go to the first node, i.e. rank 0's) and the nodes that differ from it."""
    counts = Counter(values.values())
    top = max(counts.values())
    majority = next(v for v in values.values() if counts[v] == top)
    odd = [n for n, v in values.items() if v != majority]
    return Row(name, dict(values), majority, odd, severity)


def table(nodes: Sequence[Node]) -> list[Row]:
    rows = [row(name, {n.label: show(get(n)) for n in nodes}, sev) for name, get, sev in FIELDS]
    for key in sorted({k for n in nodes for k in n.extra}):
        rows.append(row(key, {n.label: show(n.extra.get(key)) for n in nodes}, Status.FAIL))
    for code in sorted({c for n in nodes for c in n.verdicts}):
        rows.append(row(f"matrix {code}", {n.label: n.verdicts.get(code, "absent") for n in nodes}, Status.WARN))
    return rows


def render_table(rows: Sequence[Row], nodes: Sequence[str]) -> str:
    """Plain-text drift table: fields down, nodes across, odd values marked with '*'."""
    head = ["field", *nodes]
    body = [[r.field, *(r.values.get(n, "") + (" *" if n in r.odd else "") for n in nodes)] for r in rows]
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]
    fmt = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([fmt(head), fmt(["-" * w for w in widths]), *map(fmt, body)])


def findings(nodes: Sequence[Node]) -> list[Finding]:
    """EC504: one finding per drifting field naming the odd node(s), or one ok finding."""
    rows = table(nodes)
    labels = [n.label for n in nodes]
    text = render_table(rows, labels)
    data = {"nodes": labels, "rows": [r.to_dict() for r in rows]}
    out = []
    for r in rows:
        if not r.odd:
            continue
        odd = ", ".join(f"{n} has {r.values[n]}" for n in r.odd)
        out.append(finding(CODE, r.severity, f"{r.field} differs across nodes: {odd} (majority: {r.majority})",
                           detail=text, evidence=tuple(ev(n, f"{r.field} {r.values[n]}") for n in labels),
                           fix="install the same CANN, driver/firmware, torch and torch_npu on every node "
                               "(one image or one set of packages for the whole job)",
                           data={**data, "field": r.field, "odd": r.odd}))
    if not out:
        out.append(finding(CODE, Status.OK, f"{len(nodes)} node(s) agree on "
                           + ", ".join(r.field for r in rows if not r.field.startswith("matrix ")),
                           detail=text, data=data))
    return out


def verdicts_from_findings(found: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Worst status per EC1xx code from a report's findings (dicts as in the JSON report)."""
    worst: dict[str, str] = {}
    for f in found:
        code = str(f.get("code", ""))
        if not code.startswith("EC1"):
            continue
        st = Status(f.get("status", "ok"))
        if code not in worst or st.severity > Status(worst[code]).severity:
            worst[code] = st.value
    return worst


def matrix_verdicts(facts: Facts, matrix_path: str | None = None) -> dict[str, str]:
    """Run the compatibility checks on one node's facts: worst status per EC1xx code."""
    from envcheck.checks import judge_compat

    return verdicts_from_findings([f.to_dict() for f in judge_compat(facts, matrix_path=matrix_path)])
