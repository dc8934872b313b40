"""EC5xx distributed checks that make sense on one process: launch variables, devices per node, rank table.

Cluster-wide findings (drift, links, unresponsive ranks) are produced by envcheck.cluster.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping

from envcheck.checks import launchenv as envvars
from envcheck.checks.registry import Check, Context, check
from envcheck.model import Facts, Finding, ev
from envcheck.probe.ranktable import RankTable

SECTION = "Distributed"


def node_devices(facts: Facts, keys: tuple[str, ...] = ("logic_id", "id")) -> list[int] | None:
    """Device ids on this node from npu-smi facts (None when npu-smi was not read).

    Default: logical ids (what ASCEND_RT_VISIBLE_DEVICES and torch count), falling back to the NPU id.
    """
    npu = facts.npu
    devs = npu.devices
    if not devs or not npu.get("available", True):  # a table, and npu-smi not said to be unavailable
        return None
    ids: list[int] = []
    for d in devs:
        for k in keys:
            value = getattr(d, k, None)  # an NpuDevice field: id, phy_id, logic_id...
            if isinstance(value, int):
                ids.append(value)
                break
    return sorted(set(ids)) or None


def table_devices(facts: Facts) -> list[int] | None:
    """Ids a rank table's device_id may use: NPU ids, physical chip ids (A3: 0..15) and logical ids."""
    found = [node_devices(facts, (k,)) for k in ("id", "phy_id", "logic_id")]
    if all(f is None for f in found):
        return None
    return sorted({i for f in found if f for i in f})


def host_addresses(facts: Facts) -> set[str] | None:
    """Every address of this host's interfaces, plus its hostname (None when the probe read none)."""
    ifaces = facts.system.interfaces
    if not ifaces:
        return None
    out = {a.split("/")[0] for addrs in ifaces.values() for a in addrs}
    if facts.system.hostname:
        out.add(facts.system.hostname)
    return out


def _env_findings(chk: Check, ctx: Context, code: str) -> Iterator[Finding]:
    env = ctx.facts.env or {}
    if not envvars.launched(env):
        yield chk.skip("not a distributed launch (WORLD_SIZE / RANK not set)")
        return
    issues = [i for i in envvars.check_env(env, node_devices(ctx.facts)) if i.code == code]
    evidence = [ev(f"env {v}", env[v]) for v in envvars.DIST_VARS if env.get(v)]
    if not issues:
        yield chk.ok(f"{chk.summary}: consistent", evidence=evidence)
    for i in issues:
        make = chk.fail if i.severity == "fail" else chk.warn
        yield make(i.message, fix=i.fix, evidence=evidence, data={"variable": i.variable})


@check("EC501", "world-size-mismatch", "WORLD_SIZE matches the ranks launched", section=SECTION)
def world_size_consistent(chk: Check, ctx: Context) -> Iterable[Finding]:
    """WORLD_SIZE must be a whole number ≥ 1, at least LOCAL_WORLD_SIZE and (normally) a multiple of it.

    HCCL waits for WORLD_SIZE ranks; when fewer processes really take part, initialisation waits
    for peers that never come (until HCCL_CONNECT_TIMEOUT or the store timeout). `envcheck.preflight()`
    and `envcheck cluster` also count the ranks that really joined and name the missing ones.
    """
    yield from _env_findings(chk, ctx, "EC501")


@check("EC502", "rank-numbering-invalid", "RANK and LOCAL_RANK are inside their ranges", section=SECTION)
def rank_numbering_valid(chk: Check, ctx: Context) -> Iterable[Finding]:
    """RANK must lie in 0..WORLD_SIZE-1 and LOCAL_RANK in 0..LOCAL_WORLD_SIZE-1.

    Ranks that are not coordinated across nodes make HCCL link set-up fail; in a cluster run envcheck
    also checks that no RANK is used twice and that each node's ranks form one block.
    """
    yield from _env_findings(chk, ctx, "EC502")


@check("EC503", "devices-per-node-mismatch", "ranks on this node fit the visible NPUs", section=SECTION)
def devices_per_node_fit(chk: Check, ctx: Context) -> Iterable[Finding]:
    """LOCAL_WORLD_SIZE must not exceed the NPUs visible on the node (ASCEND_RT_VISIBLE_DEVICES, else npu-smi).

    Every id in ASCEND_RT_VISIBLE_DEVICES must exist on the node. In a cluster run, every node should
    also run the same number of ranks on the same number of devices.
    """
    yield from _env_findings(chk, ctx, "EC503")


@check("EC508", "rendezvous-env-invalid", "MASTER_ADDR and MASTER_PORT are set and valid", section=SECTION)
def rendezvous_env_valid(chk: Check, ctx: Context) -> Iterable[Finding]:
    """MASTER_ADDR and MASTER_PORT tell every rank where rank 0's rendezvous store listens (env:// init)."""
    yield from _env_findings(chk, ctx, "EC508")


@check("EC505", "ranktable-invalid", "the HCCL rank table (RANK_TABLE_FILE) is valid for this host",
       section=SECTION)
def ranktable_valid(chk: Check, ctx: Context) -> Iterable[Finding]:
    """Validate the rank table named by RANK_TABLE_FILE (or `envcheck ranktable FILE`).

    Formats 1.0 (``server_list``) and 1.2 (A3 ``super_pod_list``): valid JSON; every device has a
    device_id and rank_id; rank ids unique and exactly 0..N-1, following server order; server_count
    right; no device or device_ip twice; one server is this host (server_id / host_ip / container_ip
    among this host's addresses) and its device ids exist here; the rank count equals WORLD_SIZE.
    HCCL reports a bad table as EI0004 "The ranktable is invalid" or EI0014 / EI0017.
    """
    from envcheck.probe import ranktable as rt

    env = ctx.facts.env or {}
    path = ctx.options.get("ranktable") or env.get("RANK_TABLE_FILE")
    if not path:
        yield chk.skip("RANK_TABLE_FILE is not set")
        return
    read = ctx.facts.ranktable
    if read.path != path:
        yield chk.skip(f"the rank table {path} was not read by the probe (a saved snapshot without it?)")
        return
    if read.error or read.doc is None:
        yield chk.fail(f"rank table unreadable: {read.error or 'no table'}",
                       evidence=[ev("RANK_TABLE_FILE", path)],
                       fix="point RANK_TABLE_FILE at the JSON rank table generated for this job")
        return
    table = rt.from_dict(read.doc)
    yield _judge(chk, ctx, table, path)
    if not ctx.options.get("ranktable"):
        yield from _connect_timeout(chk, env)


def _connect_timeout(chk: Check, env: Mapping[str, str]) -> Iterator[Finding]:
    """torch_npu's advice for rank-table launches: HCCL_CONNECT_TIMEOUT of 300 s or more."""
    raw = env.get("HCCL_CONNECT_TIMEOUT")
    try:
        value = int(raw) if raw else 120  # HCCL's default
    except ValueError:
        return  # EC206 judges malformed HCCL timeouts
    if value < 300:
        yield chk.warn(f"RANK_TABLE_FILE is set and HCCL_CONNECT_TIMEOUT is {value} s: rank-table links are set "
                       "up without socket negotiation and time out sooner",
                       fix="export HCCL_CONNECT_TIMEOUT=300 (or more)",
                       evidence=[ev("env HCCL_CONNECT_TIMEOUT", raw or "unset (HCCL default 120)")])


def _judge(chk: Check, ctx: Context, table: RankTable, path: str) -> Finding:
    from envcheck.checks import ranktable as rt

    host = not ctx.options.get("structure_only")
    ws_raw = (ctx.facts.env or {}).get("WORLD_SIZE") or ctx.options.get("world_size")
    try:
        ws = int(ws_raw) if ws_raw not in (None, "") else None
    except ValueError:
        ws = None
    problems = rt.validate(table, host_addresses=host_addresses(ctx.facts) if host else None,
                           host_devices=table_devices(ctx.facts) if host else None, world_size=ws)
    data = {"path": path, "version": table.version, "servers": len(table.servers),
            "ranks": table.rank_count, "problems": [p.__dict__ for p in problems]}
    evidence = [ev("rank table", f"{path}: version {table.version or '?'}, {len(table.servers)} server(s), "
                   f"{table.rank_count} rank(s)")]
    if ws is not None:
        evidence.append(ev("env WORLD_SIZE", ws))
    if host and host_addresses(ctx.facts) is None:
        evidence.append(ev("host", "this host's addresses were not read: host checks skipped"))
    elif host and table_devices(ctx.facts) is None:
        evidence.append(ev("host", "npu-smi devices were not read: device ids not checked"))
    fails = [p for p in problems if p.severity == "fail"]
    warns = [p for p in problems if p.severity != "fail"]
    detail = "\n".join(f"{p.severity}: {p.message}" for p in problems)
    if fails:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        return chk.fail(f"rank table {os.path.basename(path)}: {fails[0].message}{more}", detail=detail,
                        evidence=evidence, data=data,
                        fix="regenerate the table for this job (hccl_tools.py / the cluster scheduler); device_ip "
                            "values come from `hccn_tool -i N -ip -g`")
    if warns:
        return chk.warn(f"rank table {os.path.basename(path)}: {warns[0].message}", detail=detail,
                        evidence=evidence, data=data)
    return chk.ok(f"rank table {os.path.basename(path)}: version {table.version}, {len(table.servers)} "
                  f"server(s), ranks 0-{table.rank_count - 1}", evidence=evidence, data=data)


def _cluster_only(chk: Check) -> Iterator[Finding]:
    yield chk.skip("cluster-wide: run `torchrun --nproc-per-node N -m envcheck cluster` or envcheck.preflight()")


@check("EC504", "cluster-version-drift", "every node runs the same CANN, driver, torch and torch_npu",
       section=SECTION, default=False)
def cluster_versions_agree(chk: Check, ctx: Context) -> Iterable[Finding]:
    """Compare CANN, driver, firmware, chip, torch, torch_npu, Python and the matrix verdicts across nodes.

    The majority value of each field is the reference; the node(s) that differ are named. Mixed CANN or
    torch_npu versions inside one job make HCCL fail in ways that look like network problems. Run inside
    the job (`envcheck cluster` under torchrun, `envcheck.preflight()`) or on saved reports
    (`envcheck compare a.json b.json ...`).
    """
    yield from _cluster_only(chk)


@check("EC506", "slow-or-dead-link", "every node pair exchanges data at similar speed", section=SECTION,
       default=False)
def node_links_healthy(chk: Check, ctx: Context) -> Iterable[Finding]:
    """`envcheck cluster` sends a buffer back and forth between the leaders of every pair of nodes.

    A pair that does not answer within the timeout is a dead link (HCCL would hang on it, EI0006 /
    EI0002); a pair much slower than the median is named as the slowest link. Check the NIC HCCL uses
    (HCCL_SOCKET_IFNAME / HCCL_IF_IP) and `hccn_tool -i N -link -g` / `-net_health -g` on both ends.
    """
    yield from _cluster_only(chk)


@check("EC507", "rank-unresponsive", "every rank reaches each preflight stage in time", section=SECTION,
       default=False)
def ranks_responsive(chk: Check, ctx: Context) -> Iterable[Finding]:
    """Each preflight stage is a barrier on the job's store with a deadline (the preflight timeout).

    A rank that does not arrive in time is named with its host, node, local rank and pid: it hung,
    crashed or is far slower than the others (data loading, a checkpoint, a dead NPU). In a real job the
    same rank would make HCCL time out (EI0002 "Heartbeat Lost", the watchdog) after up to 30 minutes.
    """
    yield from _cluster_only(chk)


CHECKS = (world_size_consistent, rank_numbering_valid, devices_per_node_fit, rendezvous_env_valid,
          ranktable_valid, cluster_versions_agree, node_links_healthy, ranks_responsive)
