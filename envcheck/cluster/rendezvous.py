"""A short-timeout roll call on the job's TCPStore: who joined, who is missing, who is stuck where.

torch's own rendezvous waits up to the store timeout (30 minutes by default) and then says only
"timed out". envcheck counts arrivals itself, so a wrong WORLD_SIZE or a sleeping rank is named in
seconds: every rank adds itself to a counter and writes a small "who am I" record; stages (facts,
all_reduce, ...) are store barriers with a deadline that report the ranks that never arrived.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Mapping

POLL = 0.05
_calls = 0  # preflight may run more than once per process: each call gets its own key space


class RendezvousError(Exception):
    """The roll call failed: code (EC5xx), the variable at fault (if any) and the ranks concerned."""

    def __init__(self, code: str, message: str, variable: str = "", ranks: list[int] | None = None,
                 who: Mapping[int, Mapping[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.variable = variable
        self.ranks = ranks or []
        self.who = dict(who or {})


@dataclass
class Roll:
    """The roll call of one preflight: the store, this rank, the world and everyone's records."""

    store: Any
    rank: int
    world_size: int
    timeout: float
    who: dict[int, dict[str, Any]] = field(default_factory=dict)

    def arrive(self, stage: str) -> list[int]:
        """Store barrier for `stage`; returns the ranks that did not arrive before the deadline."""
        try:
            return self._arrive(stage)
        except (RuntimeError, OSError) as exc:  # DistNetworkError etc.: the store's host went away
            raise RendezvousError("EC507", f"rank {self.rank} lost the rendezvous store at the {stage!r} stage "
                                  f"({_first_line(exc)}): the store's host (rank 0 or the torchrun agent) "
                                  "exited or is unreachable", ranks=[0]) from None

    def _arrive(self, stage: str) -> list[int]:
        self.store.set(f"stage/{stage}/{self.rank}", json.dumps(time.time()))
        n = self.store.add(f"stage/{stage}", 1)
        deadline = time.monotonic() + self.timeout
        while n < self.world_size and time.monotonic() < deadline:
            time.sleep(POLL)
            n = self.store.add(f"stage/{stage}", 0)
        if n >= self.world_size:
            return []
        return [r for r in range(self.world_size) if not self.store.check([f"stage/{stage}/{r}"])]

    def arrivals(self, stage: str) -> dict[int, float]:
        """When each rank reached `stage` (wall clock seconds)."""
        out = {}
        for r in range(self.world_size):
            key = f"stage/{stage}/{r}"
            if self.store.check([key]):
                out[r] = json.loads(self.store.get(key))
        return out

    def describe(self, ranks: list[int]) -> str:
        """'rank 2 (host h, node 0, local rank 2, pid 123)' for each rank."""
        return ", ".join(describe_rank(r, self.who.get(r)) for r in ranks)


def describe_rank(rank: int, who: Mapping[str, Any] | None) -> str:
    if not who:
        return f"rank {rank}"
    bits = [f"host {who.get('host')}"]
    if who.get("node_rank") is not None:
        bits.append(f"node {who['node_rank']}")
    if who.get("local_rank") is not None:
        bits.append(f"local rank {who['local_rank']}")
    bits.append(f"pid {who.get('pid')}")
    return f"rank {rank} ({', '.join(bits)})"


def connect(env: Mapping[str, str], rank: int, world_size: int, timeout: float) -> Any:
    """The job's TCPStore: a client of the torchrun agent's store, or hosted by rank 0 (env://)."""
    import torch.distributed as dist

    addr, port = env["MASTER_ADDR"], int(env["MASTER_PORT"])
    agent = env.get("TORCHELASTIC_USE_AGENT_STORE", "").lower() == "true"
    td = timedelta(seconds=timeout)
    try:
        if agent or rank != 0:
            return dist.TCPStore(addr, port, world_size, is_master=False, timeout=td)
        return dist.TCPStore(addr, port, world_size, is_master=True, timeout=td, wait_for_workers=False,
                             multi_tenant=True)
    except (RuntimeError, OSError) as exc:
        what = "listen on" if (rank == 0 and not agent) else "reach the rendezvous store at"
        raise RendezvousError("EC508", f"rank {rank} could not {what} MASTER_ADDR:MASTER_PORT = {addr}:{port} "
                              f"within {timeout:g} s ({_first_line(exc)})", "MASTER_ADDR") from None


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


def namespace(env: Mapping[str, str]) -> str:
    """Key prefix unique to this job attempt and preflight call (torchrun reuses its store)."""
    global _calls
    _calls += 1
    run = env.get("TORCHELASTIC_RUN_ID", "")
    restart = env.get("TORCHELASTIC_RESTART_COUNT", "0")
    return f"envcheck/{run}/{restart}/{_calls}"


def join(store: Any, rank: int, world_size: int, who: dict[str, Any], timeout: float) -> Roll:
    """Everyone adds itself; wait until WORLD_SIZE ranks joined, then insist each RANK is used once."""
    store.set(f"who/{rank}", json.dumps(who))
    store.add(f"rank/{rank}", 1)
    n = store.add("joined", 1)
    deadline = time.monotonic() + timeout
    while n < world_size and time.monotonic() < deadline:
        time.sleep(POLL)
        n = store.add("joined", 0)
    roll = Roll(store, rank, world_size, timeout)
    roll.who = _records(store, world_size)
    if n < world_size:
        here = sorted(roll.who)
        missing = [r for r in range(world_size) if r not in roll.who]
        raise RendezvousError(
            "EC501", f"WORLD_SIZE={world_size} but only {n} process(es) joined within {timeout:g} s "
            f"({roll.describe(here)}); missing rank(s) {', '.join(map(str, missing))}. Either WORLD_SIZE is larger "
            "than the number of processes launched, or those ranks failed to start",
            "WORLD_SIZE", missing, roll.who)
    dup = [r for r in range(world_size) if store.add(f"rank/{r}", 0) > 1]
    if dup or n > world_size:
        missing = [r for r in range(world_size) if r not in roll.who]
        raise RendezvousError(
            "EC502", f"{n} processes joined a world of {world_size}: RANK "
            f"{', '.join(map(str, dup)) or '?'} is used by more than one process"
            + (f" and rank(s) {', '.join(map(str, missing))} by none" if missing else ""),
            "RANK", dup, roll.who)
    return roll


def _records(store: Any, world_size: int) -> dict[int, dict[str, Any]]:
    out = {}
    for r in range(world_size):
        if store.check([f"who/{r}"]):
            out[r] = json.loads(store.get(f"who/{r}"))
    return out


def whoami(env: Mapping[str, str], rank: int) -> dict[str, Any]:
    """This process in a few fields: host, node rank (GROUP_RANK), local rank, pid."""
    import socket

    node = env.get("GROUP_RANK") or env.get("NODE_RANK")
    return {"host": socket.gethostname(), "node_rank": int(node) if (node or "").isdigit() else None,
            "local_rank": int(env["LOCAL_RANK"]) if (env.get("LOCAL_RANK") or "").isdigit() else None,
            "pid": os.getpid(), "rank": rank}
