"""Parse and validate HCCL rank table files (v1.0 ``server_list``, v1.2 ``super_pod_list``).

Pure: `parse(text)` and `validate(table, ...)` take strings and facts, never read the machine;
`load(path)` is the one function that reads a file. Format notes: shared/research
ascend-artifacts.md §4 (all values are strings; ``rank_id`` is global and follows server order;
``device_id`` is the card index on that server; v1.2 adds ``super_device_id`` per device,
``host_ip`` / ``container_ip`` per server and a top-level ``super_pod_list``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

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
    version = _s(doc.get("version"))
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
                     server_count=_s(doc.get("server_count")) or None,
                     status=_s(doc.get("status")) or None,
                     super_pods=[p for p in pods if isinstance(p, dict)], problems=problems)


def _s(v: Any) -> str:
    """Rank tables write every value as a string; accept numbers too."""
    if v is None or isinstance(v, bool):
        return ""
    return str(v).strip() if isinstance(v, (str, int)) else ""


def _server(i: int, raw: Any, problems: list[Problem]) -> Server | None:
    if not isinstance(raw, dict):
        problems.append(Problem("bad-value", "fail", f"server_list[{i}] is not an object"))
        return None
    sid = _s(raw.get("server_id"))
    if not sid:
        problems.append(Problem("missing-key", "fail", f"server_list[{i}] has no server_id"))
    devs = raw.get("device")
    if not isinstance(devs, list) or not devs:
        problems.append(Problem("missing-key", "fail", f"server_list[{i}] ({sid or '?'}) has no \"device\" array"))
        devs = []
    server = Server(server_id=sid, host_ip=_s(raw.get("host_ip")), container_ip=_s(raw.get("container_ip")))
    for j, d in enumerate(devs):
        where = f"server_list[{i}].device[{j}]"
        if not isinstance(d, dict):
            problems.append(Problem("bad-value", "fail", f"{where} is not an object"))
            continue
        for key in ("device_id", "rank_id"):
            if not _s(d.get(key)):
                problems.append(Problem("missing-key", "fail", f"{where} has no {key}"))
        server.devices.append(Device(device_id=_s(d.get("device_id")), rank_id=_s(d.get("rank_id")),
                                     device_ip=_s(d.get("device_ip")),
                                     super_device_id=_s(d.get("super_device_id"))))
    return server


def redacted(addr: str) -> bool:
    """Published tables mask addresses as ``10.*.*.*``: such values cannot be compared."""
    return "*" in addr


def validate(table: RankTable, *, host_addresses: Iterable[str] | None = None,
             host_devices: Iterable[int] | None = None, world_size: int | None = None) -> list[Problem]:
    """Every problem with `table`. Host checks run only when the host facts are given."""
    problems = list(table.problems)
    problems += _rank_problems(table)
    problems += _server_problems(table)
    if world_size is not None and table.rank_count and table.rank_count != world_size:
        problems.append(Problem("world-size", "fail",
                                f"the table lists {table.rank_count} ranks but WORLD_SIZE is {world_size}"))
    if host_addresses is not None:
        problems += _host_problems(table, set(host_addresses), host_devices)
    return problems


def _int(v: str) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _rank_problems(table: RankTable) -> list[Problem]:
    out: list[Problem] = []
    seen: dict[int, str] = {}
    order: list[int] = []
    for s in table.servers:
        for d in s.devices:
            if not d.rank_id:
                continue
            r = _int(d.rank_id)
            if r is None or r < 0:
                out.append(Problem("bad-rank", "fail", f"rank_id {d.rank_id!r} on {s.server_id} is not a rank number"))
                continue
            if r in seen:
                out.append(Problem("duplicate-rank", "fail",
                                   f"rank_id {r} appears twice ({seen[r]} and {s.server_id} device {d.device_id})"))
            seen[r] = f"{s.server_id} device {d.device_id}"
            order.append(r)
    if seen:
        missing = sorted(set(range(len(order))) - set(seen))
        if missing:
            out.append(Problem("rank-gap", "fail", f"rank ids must be 0..{len(order) - 1}; missing {_ranges(missing)}"))
        elif order != sorted(order):
            out.append(Problem("rank-order", "warn",
                               "rank ids do not follow server order (rank_id is global and should increase "
                               "server by server)"))
    return out


def _server_problems(table: RankTable) -> list[Problem]:
    out: list[Problem] = []
    if table.server_count is not None and _int(table.server_count) != len(table.servers):
        out.append(Problem("server-count", "fail",
                           f"server_count is {table.server_count} but server_list has {len(table.servers)} servers"))
    ids = [s.server_id for s in table.servers if s.server_id and not redacted(s.server_id)]
    for sid in sorted({i for i in ids if ids.count(i) > 1}):
        out.append(Problem("duplicate-server", "fail", f"server_id {sid} is listed twice"))
    ips: dict[str, str] = {}
    for s in table.servers:
        devs = [d.device_id for d in s.devices if d.device_id]
        for dev in sorted({x for x in devs if devs.count(x) > 1}):
            out.append(Problem("duplicate-device", "fail", f"device_id {dev} appears twice on server {s.server_id}"))
        for d in s.devices:
            if d.device_id and (_int(d.device_id) is None or _int(d.device_id) < 0):  # type: ignore[operator]
                out.append(Problem("bad-device", "fail", f"device_id {d.device_id!r} on {s.server_id} is not a number"))
            if d.device_ip and not redacted(d.device_ip):
                if d.device_ip in ips:
                    out.append(Problem("duplicate-device-ip", "fail",
                                       f"device_ip {d.device_ip} is used by {ips[d.device_ip]} and "
                                       f"{s.server_id} device {d.device_id}"))
                ips[d.device_ip] = f"{s.server_id} device {d.device_id}"
    if table.version == "1.2":
        known = {s.server_id for s in table.servers}
        for pod in table.super_pods:
            for ps in pod.get("server_list") or []:
                sid = _s(ps.get("server_id")) if isinstance(ps, dict) else ""
                if sid and sid not in known:
                    out.append(Problem("super-pod-server", "fail",
                                       f"super_pod {_s(pod.get('super_pod_id'))} names server {sid}, "
                                       "which is not in server_list"))
    if table.status and table.status != "completed":
        out.append(Problem("status", "warn", f"status is {table.status!r}, not \"completed\" (table still being built?)"))
    return out


def _host_problems(table: RankTable, addrs: set[str], host_devices: Iterable[int] | None) -> list[Problem]:
    listed = [a for s in table.servers for a in s.addresses()]
    if listed and all(redacted(a) for a in listed):
        return [Problem("redacted", "warn", "server addresses are masked (e.g. 10.*.*.*): cannot tell which "
                        "server is this host")]
    mine = [s for s in table.servers if set(s.addresses()) & addrs]
    if not mine:
        return [Problem("host-not-listed", "fail",
                        "none of this host's addresses (" + ", ".join(sorted(addrs)) + ") is a server_id, host_ip "
                        "or container_ip in the table")]
    if host_devices is None:
        return []
    have = set(host_devices)
    out = []
    for s in mine:
        for d in s.devices:
            n = _int(d.device_id)
            if n is not None and n not in have:
                out.append(Problem("device-not-on-host", "fail",
                                   f"device_id {n} (rank {d.rank_id}) on server {s.server_id} does not exist on "
                                   f"this host (devices: {_ranges(sorted(have)) or 'none'})"))
    return out


def _ranges(nums: list[int]) -> str:
    """[0, 1, 2, 5] -> '0-2, 5'."""
    runs: list[list[int]] = []
    for n in nums:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)
