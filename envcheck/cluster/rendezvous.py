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
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Callable

POLL = 0.05
ACK_GRACE = 3.0  # how long a rank that gives up waits for the others to read the verdict
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

    def to_json(self) -> str:
        return json.dumps({"code": self.code, "message": str(self), "variable": self.variable, "ranks": self.ranks})

    @classmethod
    def from_json(cls, text: str | bytes) -> RendezvousError:
        d = json.loads(text)
        return cls(d["code"], d["message"], d.get("variable", ""), d.get("ranks"))


@dataclass
class Roll:
    """The roll call of one preflight: the store, this rank, the world and everyone's records."""

    store: Any
    rank: int
    world_size: int
    timeout: float
    who: dict[int, dict[str, Any]] = field(default_factory=dict)

    def arrive(self, stage: str, timeout: float | None = None) -> list[int]:
        """Store barrier for `stage` (deadline `timeout`, default the roll's); raises naming latecomers."""
        try:
            return self._arrive(stage, self.timeout if timeout is None else timeout)
        except (RuntimeError, OSError) as exc:  # DistNetworkError etc.: the store's host went away
            raise RendezvousError("EC507", f"rank {self.rank} lost the rendezvous store at the {stage!r} stage "
                                  f"({_first_line(exc)}): the store's host (rank 0 or the torchrun agent) "
                                  "exited or is unreachable", ranks=[0]) from None

    def _arrive(self, stage: str, timeout: float) -> list[int]:
        self.store.set(f"stage/{stage}/{self.rank}", json.dumps(time.time()))

        def explain(n: int) -> RendezvousError:
            missing = [r for r in range(self.world_size) if not self.store.check([f"stage/{stage}/{r}"])]
            return RendezvousError("EC507", f"{self.describe(missing)} did not reach the {stage!r} stage within "
                                   f"{timeout:g} s (hung, crashed or much slower than the others)",
                                   ranks=missing)

        barrier(self.store, f"stage/{stage}", self.world_size, timeout, explain)
        return []

    def publish(self, key: str, value: Any) -> None:
        """Leave a JSON value for rank 0 on the store (which stays usable when the process group is not)."""
        self.store.set(f"data/{key}/{self.rank}", json.dumps(value, default=str))

    def collect(self, key: str) -> list[Any]:
        """Every rank's published value for `key`, in rank order (call after a stage everyone passed)."""
        return [json.loads(self.store.get(f"data/{key}/{r}")) for r in range(self.world_size)]

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


def barrier(store: Any, name: str, world_size: int, timeout: float,
            explain: Callable[[int], RendezvousError]) -> int:
    """Count this rank in `name` and wait for `world_size` arrivals; raise the same verdict on every rank.

    The first rank to give up writes `explain(arrived)` under `<name>/verdict`; ranks still waiting
    read it instead of timing out on their own, so every rank says the same thing.
    """
    n = store.add(name, 1)
    deadline = time.monotonic() + timeout
    while n < world_size:
        if store.check([f"{name}/verdict"]):
            break
        if time.monotonic() >= deadline:
            conclude(store, name, explain(n))
        time.sleep(POLL)
        n = store.add(name, 0)
    else:
        return n
    conclude(store, name, None)
    return n  # pragma: no cover - conclude always raises


def conclude(store: Any, name: str, err: RendezvousError | None) -> None:
    """Publish `err` as the verdict of `name` (unless one exists), acknowledge it and raise it.

    Waits up to ACK_GRACE for every rank that arrived to acknowledge: rank 0 may host the store,
    and exiting at once would cut the others off before they read the verdict.
    """
    key = f"{name}/verdict"
    if err is not None:
        store.compare_set(key, "", err.to_json())
    verdict = RendezvousError.from_json(store.get(key))
    acks = store.add(f"{key}/ack", 1)
    grace = time.monotonic() + ACK_GRACE
    while acks < store.add(name, 0) and time.monotonic() < grace:
        time.sleep(POLL)
        acks = store.add(f"{key}/ack", 0)
    raise verdict


def join(store: Any, rank: int, world_size: int, who: dict[str, Any], timeout: float) -> Roll:
    """Everyone adds itself; wait until WORLD_SIZE ranks joined, then insist each RANK is used once."""
    try:
        return _join(store, rank, world_size, who, timeout)
    except (RuntimeError, OSError) as exc:
        if isinstance(exc, RendezvousError):
            raise
        raise RendezvousError("EC508", f"rank {rank} lost the rendezvous store while joining "
                              f"({_first_line(exc)}): its host (rank 0 or the torchrun agent) exited") from None


def _join(store: Any, rank: int, world_size: int, who: dict[str, Any], timeout: float) -> Roll:
    store.set(f"who/{rank}", json.dumps(who))
    store.add(f"rank/{rank}", 1)
    roll = Roll(store, rank, world_size, timeout)

    def explain(n: int) -> RendezvousError:
        roll.who = _records(store, world_size)
        missing = [r for r in range(world_size) if r not in roll.who]
        return RendezvousError(
            "EC501", f"WORLD_SIZE={world_size} but only {n} process(es) joined within {timeout:g} s "
            f"({roll.describe(sorted(roll.who))}); missing rank(s) {', '.join(map(str, missing))}. Either WORLD_SIZE "
            "is larger than the number of processes launched, or those ranks failed to start",
            "WORLD_SIZE", missing)

    n = barrier(store, "joined", world_size, timeout, explain)
    roll.who = _records(store, world_size)
    dup = [r for r in range(world_size) if store.add(f"rank/{r}", 0) > 1]
    if dup or n > world_size:
        missing = [r for r in range(world_size) if r not in roll.who]
        conclude(store, "joined", RendezvousError(
            "EC502", f"{n} processes joined a world of {world_size}: RANK "
            f"{', '.join(map(str, dup)) or '?'} is used by more than one process"
            + (f" and rank(s) {', '.join(map(str, missing))} by none" if missing else ""),
            "RANK", dup))
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

    node = env.get("GROUP_RANK") or env.get("NODE_RANK") or ""
    local = env.get("LOCAL_RANK") or ""
    return {"host": socket.gethostname(), "node_rank": int(node) if node.isdecimal() else None,
            "local_rank": int(local) if local.isdecimal() else None,
            "pid": os.getpid(), "rank": rank}
