"""The report model: Status, Evidence, Finding, Facts and Report (plain, JSON-friendly data)."""
from __future__ import annotations

import copy
import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from envcheck.facts import SECTIONS as FACT_SECTIONS
from envcheck.facts import (
    CannFacts,
    ContainerFacts,
    DriverFacts,
    HostFacts,
    NetdevFacts,
    NpuFacts,
    PythonFacts,
    RankTableFacts,
    SystemFacts,
)

SCHEMA_VERSION = 1


class Status(str, enum.Enum):
    """Outcome of one finding. Ordered from best to worst by `severity`."""

    OK = "ok"
    SKIP = "skip"  # a precondition is absent (no NPU, torch_npu not installed): not a failure
    WARN = "warn"
    ERROR = "error"  # envcheck itself could not tell (probe or check crashed)
    FAIL = "fail"

    @property
    def severity(self) -> int:
        return _SEVERITY[self]


_SEVERITY = {Status.OK: 0, Status.SKIP: 1, Status.WARN: 2, Status.ERROR: 3, Status.FAIL: 4}


@dataclass(frozen=True)
class Evidence:
    """One thing that was read: where from (file, command, variable) and what it said."""

    source: str
    text: str

    def to_dict(self) -> dict[str, str]:
        return {"source": self.source, "text": self.text}


@dataclass(frozen=True)
class Finding:
    """One verdict of one check."""

    code: str
    """Stable check code, e.g. ``EC201``."""
    slug: str
    """Readable alias of the code, e.g. ``cann-env-not-loaded``."""
    status: Status
    title: str
    """One line, with the observed values filled in."""
    detail: str = ""
    """Why it matters / what exactly is wrong (may span lines)."""
    evidence: tuple[Evidence, ...] = ()
    fix: str = ""
    """The command or change that fixes it."""
    kb: tuple[str, ...] = ()
    """Ids of kb entries this finding links to, best first."""
    section: str = "General"
    """Report section (System, CANN, Driver & devices, ...)."""
    data: Mapping[str, Any] = field(default_factory=dict)
    """Machine-readable extras (e.g. a bandwidth table); rendered only in JSON."""
    depends: tuple[str, ...] = ()
    """Codes of checks whose failure explains this finding (e.g. EC401 `import torch` fails on a
    missing libhccl.so: EC301 no CANN, EC201 CANN not loaded). When one of them fails in the same
    report, this finding collapses under it (`because`) instead of failing again."""
    because: str = ""
    """Set by the runner when this finding collapsed under a failing cause: that cause's code. The
    finding is then a skip (its own judgement kept in ``data["collapsed"]``) and carries no fix."""

    @property
    def failure(self) -> str:
        """The name of what went wrong: ``data["failure"]`` when a check names this outcome apart
        from its own slug (e.g. ``version-newer-than-matrix`` from EC102), else the slug."""
        return str((self.data or {}).get("failure") or self.slug)

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "slug": self.slug,
            "status": self.status.value,
            "section": self.section,
            "title": self.title,
            "detail": self.detail,
            "evidence": [e.to_dict() for e in self.evidence],
            "fix": self.fix,
            "kb": list(self.kb),
            "data": dict(self.data),
            "depends": list(self.depends),
            "because": self.because,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Finding:
        return cls(
            code=d["code"],
            slug=d.get("slug", ""),
            status=Status(d["status"]),
            title=d.get("title", ""),
            detail=d.get("detail", ""),
            evidence=tuple(Evidence(e["source"], e["text"]) for e in d.get("evidence", ())),
            fix=d.get("fix", ""),
            kb=tuple(d.get("kb", ())),
            section=d.get("section", "General"),
            data=dict(d.get("data", {})),
            depends=tuple(d.get("depends", ())),
            because=d.get("because", "") or "",
        )


def ev(source: str, text: object) -> Evidence:
    """Shorthand for building evidence in checks."""
    return Evidence(str(source), str(text))


# Sections in display order. Checks pick one of these (others sort last).
SECTIONS = (
    "System",
    "CANN",
    "Driver & devices",
    "Python packages",
    "Compatibility",
    "Environment",
    "Distributed",
    "Device network",
    "Host tuning",
    "Container",
    "Smoke tests",
    "General",
)


@dataclass
class Facts:
    """Everything the probe read: one typed, frozen section per area (envcheck/facts.py) plus the
    relevant environment. A section given as a dict (a JSON snapshot, a test) is read into its type on
    assignment; `to_dict()` gives the JSON back exactly.

    ``None`` for a value means "not installed / absent"; "could not tell" goes into
    ``probe_errors`` (key = what was being read, value = why it failed).

    The accessors below are the contract the checks rely on; the probe fills the sections.
    """

    system: SystemFacts = field(default_factory=SystemFacts)
    """os, kernel, arch, glibc, hostname, cpu_count, shm_bytes, interfaces {name: [addr,...]}"""
    python: PythonFacts = field(default_factory=PythonFacts)
    """target interpreter: executable, version, implementation, packages {dist: version|None},
    package_files {dist: where the metadata was read}, torch_npu_requires (torch pin)"""
    cann: CannFacts = field(default_factory=CannFacts)
    """installs: [{home, realpath, version, source, components {name: {version, source}},
    kernels [...], nnal [...], latest: bool}], active: index into installs or None, environment"""
    driver: DriverFacts = field(default_factory=DriverFacts)
    """install_path, version, version_source, firmware_version, firmware_source"""
    npu: NpuFacts = field(default_factory=NpuFacts)
    """npu-smi: available, version, chip, count, devices [{id, name, health, memory_used_mb,
    memory_total_mb, hbm_used_mb, hbm_total_mb, bus_id}], processes [{device, pid, name, memory_mb}]"""
    env: dict[str, str] = field(default_factory=dict)
    """relevant environment variables, secrets already redacted"""
    ranktable: RankTableFacts = field(default_factory=RankTableFacts)
    """the table RANK_TABLE_FILE names: {path, doc (the parsed JSON object)} or {path, error}"""
    netdev: NetdevFacts = field(default_factory=NetdevFacts)
    """hccn_tool: available, tool, reason (why not read), hccn_conf, devices [...] (envcheck/facts.py)"""
    host: HostFacts = field(default_factory=HostFacts)
    """cpu_governors {governor: cpus}, thp, swap_total_bytes, kernel, npu_numa {"npu <id>": node}"""
    container: ContainerFacts = field(default_factory=ContainerFacts)
    """in_container, signals, engine, davinci, mgmt_devices, driver_dir, the ASCEND_* visibility variables"""
    probe_errors: dict[str, str] = field(default_factory=dict)
    root: str = "/"

    def __setattr__(self, name: str, value: Any) -> None:
        kind = FACT_SECTIONS.get(name)
        if kind is not None and not isinstance(value, kind):
            value = kind.from_dict(value)
        object.__setattr__(self, name, value)

    # ---- accessors used by checks -------------------------------------------------
    def active_cann(self) -> dict[str, Any] | None:
        inst = self.cann.active_install()
        return inst.to_dict() if inst is not None else None

    @property
    def cann_version(self) -> str | None:
        inst = self.cann.active_install()
        return inst.version if inst is not None else None

    @property
    def driver_version(self) -> str | None:
        return self.driver.version

    @property
    def firmware_version(self) -> str | None:
        return self.driver.firmware_version

    @property
    def chip(self) -> str | None:
        """Chip name as npu-smi prints it (e.g. ``910B4``, ``310P3``, ``Ascend910``)."""
        return self.npu.chip

    @property
    def python_version(self) -> str | None:
        return self.python.version

    def package(self, name: str) -> str | None:
        """Installed version of a distribution in the target interpreter (None = absent)."""
        return self.python.package(name)

    def problems(self) -> list[str]:
        """What the typed sections could not read (wrong-typed values in a snapshot)."""
        return [p for name in FACT_SECTIONS for p in getattr(self, name).problems]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = value.to_dict() if f.name in FACT_SECTIONS else copy.deepcopy(value)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Facts:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in known})


@dataclass
class Report:
    """Facts + findings + summary."""

    facts: Facts
    findings: list[Finding]
    envcheck_version: str = ""
    command: str = "check"
    host: dict[str, Any] = field(default_factory=dict)
    """What kind of machine this is (``envcheck.checks.host.classify``): kind, ascend, title, needs."""
    knowledge: dict[str, Any] = field(default_factory=dict)
    """How current envcheck's knowledge is: ``matrix_as_of`` (YYYY-MM-DD), ``matrix`` (its file)."""
    verdict_note: str = ""
    """A qualifier the verdict must carry, e.g. "cpu only: nothing about the NPU was tested"."""

    @property
    def summary(self) -> dict[str, int]:
        counts = {s.value: 0 for s in Status}
        for f in self.findings:
            counts[f.status.value] += 1
        return counts

    @property
    def worst(self) -> Status:
        return max((f.status for f in self.findings), key=lambda s: s.severity, default=Status.OK)

    @property
    def verdict(self) -> str:
        return verdict(self.findings)

    @property
    def explained(self) -> int:
        """Findings that collapsed under a failing cause (counted as skips)."""
        return sum(1 for f in self.findings if f.because)

    @property
    def reason(self) -> str:
        """Why the verdict is what it is, in a few words ('' for ok): the host when it is not an
        Ascend machine, else the first failure (or warning) that stands."""
        v = self.verdict
        if v == "ok":
            return ""
        bad = Status.WARN if v == "warn" else None
        standing = [f for f in self.findings if not f.because and
                    (f.status is bad if bad else f.status in (Status.FAIL, Status.ERROR))]
        if v == "fail" and self.host.get("kind") == "none":
            return "this is not an Ascend machine"
        if not standing:
            return ""
        order = {name: i for i, name in enumerate(SECTIONS)}  # the first one the text report shows
        first = min(standing, key=lambda f: (order.get(f.section, len(order)), -f.status.severity, f.code))
        more = f" (+{len(standing) - 1} more)" if len(standing) > 1 else ""
        return f"{first.code} {first.title}{more}"

    def exit_code(self, strict: bool = False) -> int:
        """0 nothing failed, 1 a check failed (or errored, or warned under --strict)."""
        bad = {Status.FAIL, Status.ERROR} | ({Status.WARN} if strict else set())
        return 1 if any(f.status in bad for f in self.findings) else 0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "envcheck_version": self.envcheck_version,
            "command": self.command,
            "verdict": self.verdict,
            "reason": self.reason,
            "summary": self.summary,
        }
        if self.verdict_note:
            out["verdict_note"] = self.verdict_note
        if self.host:
            out["host"] = dict(self.host)
        if self.knowledge:
            out["knowledge"] = dict(self.knowledge)
        out["facts"] = self.facts.to_dict()
        out["findings"] = [f.to_dict() for f in self.findings]
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Report:
        return cls(
            facts=Facts.from_dict(d.get("facts", {})),
            findings=[Finding.from_dict(f) for f in d.get("findings", [])],
            envcheck_version=d.get("envcheck_version", ""),
            command=d.get("command", "check"),
            host=dict(d.get("host") or {}),
            knowledge=dict(d.get("knowledge") or {}),
            verdict_note=d.get("verdict_note", "") or "",
        )


def verdict(findings: Iterable[Finding]) -> str:
    """ok / warn / fail: the worst finding, with error counted as fail."""
    worst = max((f.status.severity for f in findings), default=0)
    if worst >= Status.ERROR.severity:
        return "fail"
    if worst >= Status.WARN.severity:
        return "warn"
    return "ok"
