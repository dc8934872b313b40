"""Judge an HCCL rank table (parsed by `envcheck.probe.ranktable`) against its format and this host. Pure."""
from __future__ import annotations

from collections.abc import Iterable

from envcheck.probe.ranktable import Problem, RankTable, redacted, text_value


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
                sid = text_value(ps.get("server_id")) if isinstance(ps, dict) else ""
                if sid and sid not in known:
                    out.append(Problem("super-pod-server", "fail",
                                       f"super_pod {text_value(pod.get('super_pod_id'))} names server {sid}, "
                                       "which is not in server_list"))
    if table.status and table.status != "completed":
        out.append(Problem("status", "warn",
                           f"status is {table.status!r}, not \"completed\" (table still being built?)"))
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
