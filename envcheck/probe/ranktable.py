"""Read and parse HCCL rank table files (v1.0 ``server_list``, v1.2 ``super_pod_list``).

`probe(fs, environ)` reads the table named by RANK_TABLE_FILE (inside a sysroot) into the facts;
`read(fs, path)` reads any table; `parse(text)` / `from_dict(doc)` are pure. Judging a table against
this host lives in `envcheck.checks.ranktable`. Format notes: shared/research
ascend-artifacts.md §4 (all values are strings; ``rank_id`` is global and follows server order;
``device_id`` is the card index on that server; v1.2 adds ``super_device_id`` per device,
``host_ip`` / ``container_ip`` per server and a top-level ``super_pod_list``).
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

KNOWN_VERSIONS = ("1.0", "1.2")


class RankTableError(Exception):
    """The file cannot be read as a rank table at all (not JSON, not an object)."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a rank table: kind (stable key), severity (fail/warn), message."""

    kind: str
    severity: str
    message: str


@dataclass
class Device:
    device_id: str
    rank_id: str
    device_ip: str = ""
    super_device_id: str = ""


@dataclass
class Server:
    server_id: str
    devices: list[Device] = field(default_factory=list)
    host_ip: str = ""
    container_ip: str = ""

    def addresses(self) -> list[str]:
        return [a for a in (self.server_id, self.host_ip, self.container_ip) if a]


@dataclass
class RankTable:
    version: str
    servers: list[Server]
    server_count: str | None = None
    status: str | None = None
    super_pods: list[dict[str, Any]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    """Structural problems found while parsing (missing keys, wrong types)."""

    @property
    def rank_count(self) -> int:
        return sum(len(s.devices) for s in self.servers)


def load(path: str) -> RankTable:
    """Read and parse a rank table file; RankTableError if unreadable or not a JSON object."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise RankTableError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise RankTableError(f"{path}: not a text file") from None
    return parse(text, name=path)


def parse(text: str, name: str = "rank table") -> RankTable:
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise RankTableError(f"{name}: not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise RankTableError(f"{name}: a rank table is a JSON object, found {type(doc).__name__}")
    return from_dict(doc)


def from_dict(doc: Mapping[str, Any]) -> RankTable:
    problems: list[Problem] = []
    version = text_value(doc.get("version"))
    if not version:
        problems.append(Problem("missing-key", "fail", "no \"version\" key (expected \"1.0\" or \"1.2\")"))
    elif version not in KNOWN_VERSIONS:
        problems.append(Problem("unknown-version", "warn",
                                f"version {version!r} is not one envcheck knows ({', '.join(KNOWN_VERSIONS)}); "
                                "checked as a server_list table"))
    raw_servers = doc.get("server_list")
    if not isinstance(raw_servers, list) or not raw_servers:
        problems.append(Problem("missing-key", "fail", "no non-empty \"server_list\" array"))
        raw_servers = []
    servers = [_server(i, s, problems) for i, s in enumerate(raw_servers)]
    pods = doc.get("super_pod_list") or []
    if version == "1.2" and not isinstance(pods, list):
        problems.append(Problem("bad-value", "fail", "\"super_pod_list\" is not an array"))
        pods = []
    return RankTable(version=version, servers=[s for s in servers if s is not None],
                     server_count=text_value(doc.get("server_count")) or None,
                     status=text_value(doc.get("status")) or None,
                     super_pods=[p for p in pods if isinstance(p, dict)], problems=problems)


def text_value(v: Any) -> str:
    """Rank tables write every value as a string; accept numbers too."""
    if v is None or isinstance(v, bool):
        return ""
    return str(v).strip() if isinstance(v, (str, int)) else ""


def _server(i: int, raw: Any, problems: list[Problem]) -> Server | None:
    if not isinstance(raw, dict):
        problems.append(Problem("bad-value", "fail", f"server_list[{i}] is not an object"))
        return None
    sid = text_value(raw.get("server_id"))
    if not sid:
        problems.append(Problem("missing-key", "fail", f"server_list[{i}] has no server_id"))
    devs = raw.get("device")
    if not isinstance(devs, list) or not devs:
        problems.append(Problem("missing-key", "fail", f"server_list[{i}] ({sid or '?'}) has no \"device\" array"))
        devs = []
    server = Server(server_id=sid, host_ip=text_value(raw.get("host_ip")),
                    container_ip=text_value(raw.get("container_ip")))
    for j, d in enumerate(devs):
        where = f"server_list[{i}].device[{j}]"
        if not isinstance(d, dict):
            problems.append(Problem("bad-value", "fail", f"{where} is not an object"))
            continue
        for key in ("device_id", "rank_id"):
            if not text_value(d.get(key)):
                problems.append(Problem("missing-key", "fail", f"{where} has no {key}"))
        server.devices.append(Device(device_id=text_value(d.get("device_id")), rank_id=text_value(d.get("rank_id")),
                                     device_ip=text_value(d.get("device_ip")),
                                     super_device_id=text_value(d.get("super_device_id"))))
    return server


def redacted(addr: str) -> bool:
    """Published tables mask addresses as ``10.*.*.*``: such values cannot be compared."""
    return "*" in addr


def read(fs: Any, path: str) -> dict[str, Any]:
    """The `ranktable` facts section for `path`: {path, doc} or {path, error}. `fs` is a probe Root."""
    shown = path
    if not os.path.isabs(path):
        path = os.path.abspath(path)
    text = fs.read_text(path, kind="ranktable")
    if text is None:
        why = fs.errors.pop(f"ranktable:{path}", None) or "No such file or directory"
        return {"path": shown, "error": f"cannot read {shown}: {why}"}
    try:
        doc = json.loads(text)
    except ValueError as exc:
        return {"path": shown, "error": f"{shown}: not valid JSON ({exc})"}
    if not isinstance(doc, dict):
        return {"path": shown, "error": f"{shown}: a rank table is a JSON object, found {type(doc).__name__}"}
    return {"path": shown, "doc": doc}


def probe(fs: Any, environ: Mapping[str, str]) -> dict[str, Any]:
    """Read the table RANK_TABLE_FILE names (empty when it is not set)."""
    path = environ.get("RANK_TABLE_FILE")
    return read(fs, path) if path else {}
