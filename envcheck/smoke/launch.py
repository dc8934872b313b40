"""Spawn N local ranks for the collective suite and watch them: name ranks that fail or hang.

Each rank (``python -m envcheck.smoke.rank``) writes JSON lines with its progress (phases). The
launcher polls them and, as a heartbeat that needs no cooperation from the rank, the CPU time each
rank uses (/proc). The run is declared stalled when no rank reached a new phase AND no rank was busy
for `timeout` seconds (120 s while a rank is still importing torch); a rank that keeps computing
(a slow rendezvous or import on a loaded machine) extends that up to twice the limit. Then the
ranks still alive are killed (whole process groups) and the ranks the others progressed past are
named as hung (those furthest behind; among them, the ones that were idle). So attribution does
not depend on how fast ranks start. A rank that exits with an error is named with its error text;
the others get a short grace to finish, then are torn down.
"""
from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from envcheck import lifetime, subproc
from envcheck.smoke.bandwidth import size_sweep
from envcheck.smoke.collective import SWEEP_OPS, aggregate

FAIL_GRACE_S = 3.0
STARTUP_ALLOWANCE_S = 120.0
POLL_S = 0.05
BUSY_WINDOW_S = 1.0
BUSY_CPU_S = 0.1
"""A rank that used at least this much CPU in one BUSY_WINDOW_S window is working, not hung."""


@dataclass
class RankState:
    """What the launcher knows about one rank."""

    rank: int
    device: str
    host: str = ""
    proc: Any = None
    phases: list[str] = field(default_factory=list)
    last_t: float = 0.0
    result: dict | None = None
    error: str = ""
    traceback: str = ""
    rc: int | None = None
    killed: bool = False
    stderr_tail: str = ""
    busy_t: float = 0.0
    """Last time the rank used CPU (BUSY_CPU_S per BUSY_WINDOW_S): a heartbeat read from /proc."""
    _pos: int = 0
    _cpu: int | None = None
    _cpu_t: float = 0.0

    @property
    def phase(self) -> str:
        return self.phases[-1] if self.phases else "not started"

    def to_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "device": self.device, "host": self.host, "phase": self.phase,
                "rc": self.rc, "signal": subproc.signal_name(self.rc), "error": self.error,
                "killed": self.killed, "stderr_tail": self.stderr_tail}


@dataclass
class LaunchResult:
    """Outcome of one collective run: per-rank states, hung / failed ranks, the aggregate."""

    world: int
    device: str
    backend: str
    ranks: list[RankState]
    hung: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    summary: dict[str, Any] | None = None
    seconds: float = 0.0
    interrupted: bool = False
    timeout: float = 0.0


def free_port() -> int:
    """A TCP port free right now on 127.0.0.1 (the rendezvous binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def launch(nproc: int, device: str = "cpu", sizes: Sequence[int] | None = None,
           ops: Sequence[str] = SWEEP_OPS, iters: int = 5, timeout: float = 60.0,
           python: str | None = None, env: dict[str, str] | None = None) -> LaunchResult:
    """Run the collective suite on `nproc` local ranks of `device` ('npu' | 'cuda' | 'cpu').

    `timeout` bounds both init_process_group and any stretch with no progress from any rank.
    Never raises for rank failures; Ctrl-C kills every rank and returns what finished.
    """
    from envcheck.smoke.devices import SPECS

    sizes = size_sweep() if sizes is None else list(sizes)
    kind = device.split(":")[0]
    t0 = time.monotonic()
    with lifetime.temp_dir("envcheck-coll-") as tmp:
        ranks = [RankState(r, "cpu" if kind == "cpu" else f"{kind}:{r}", socket.gethostname())
                 for r in range(nproc)]
        res = LaunchResult(nproc, kind, SPECS[kind].backend if kind in SPECS else "?", ranks, timeout=timeout)
        try:
            _start(ranks, tmp, kind, sizes, ops, iters, timeout, python or sys.executable, env)
            _watch(res, tmp)
        except KeyboardInterrupt:
            res.interrupted = True
        finally:
            _teardown(ranks, tmp)
        _collect(res, tmp)
    res.seconds = time.monotonic() - t0
    return res


def _rank_env(rank: int, nproc: int, port: int, kind: str, extra: dict[str, str] | None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra or {})
    pkg_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_parent, env.get("PYTHONPATH", "")) if p)
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(nproc),
               LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(nproc))
    if kind == "cpu":
        env.setdefault("OMP_NUM_THREADS", "1")  # N ranks on a few cores: do not oversubscribe
    return env


def _start(ranks: list[RankState], tmp: str, kind: str, sizes: Sequence[int], ops: Sequence[str],
           iters: int, timeout: float, python: str, extra_env: dict[str, str] | None) -> None:
    port = free_port()
    argv = [python, "-m", "envcheck.smoke.rank", "--out", tmp, "--device", kind,
            "--sizes", ",".join(map(str, sizes)), "--ops", ",".join(ops), "--iters", str(iters),
            # The process-group timeout is longer than the launcher's stall watchdog (at most
            # 2 x timeout) on purpose: the watchdog fires first and names the rank that is behind,
            # instead of the healthy rank that gave up waiting for it.
            "--timeout", str(3 * timeout + 5)]
    now = time.monotonic()
    for st in ranks:
        err = open(os.path.join(tmp, f"rank{st.rank}.err"), "wb")
        try:
            st.proc = subproc.spawn(argv, env=_rank_env(st.rank, len(ranks), port, kind, extra_env),
                                    stdout=err, stderr=err)
        except OSError as exc:
            st.error, st.rc = f"cannot start rank: {exc.strerror or exc}: {python}", None
        finally:
            err.close()
        st.last_t = st.busy_t = st._cpu_t = now


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _heartbeat(st: RankState, now: float) -> None:
    """Update st.busy_t from the CPU time the rank used in the last window."""
    if now - st._cpu_t < BUSY_WINDOW_S or st.proc is None:
        return
    act = subproc.activity(st.proc.pid)
    cpu = act[0] if act else None
    if cpu is not None and st._cpu is not None and (cpu - st._cpu) / _TICK >= BUSY_CPU_S * (now - st._cpu_t):
        st.busy_t = now
    st._cpu, st._cpu_t = cpu, now


def _watch(res: LaunchResult, tmp: str) -> None:
    """Poll until every rank exits, a rank fails (then a short grace), or progress stalls."""
    give_up_at: float | None = None
    while True:
        now = time.monotonic()
        alive = []
        for st in res.ranks:
            if _read_progress(st, tmp):
                st.last_t = now
            if st.proc is not None and st.proc.poll() is None:
                alive.append(st)
            elif st.proc is not None and st.rc is None:
                st.rc = st.proc.returncode
        failed = [st for st in res.ranks if (st.rc not in (0, None)) or (st.proc is None and st.error)]
        if not alive:
            break
        if failed and give_up_at is None:
            give_up_at = now + min(FAIL_GRACE_S, res.timeout)
        for st in alive:
            _heartbeat(st, now)
        last = max(st.last_t for st in res.ranks)
        busy = max([last] + [st.busy_t for st in alive])
        # importing torch / torch_npu is one long silent step on a loaded machine: give it the
        # start-up allowance, every later phase the stall timeout
        starting = any(st.phase in ("not started", "import") for st in alive)
        limit = max(res.timeout, STARTUP_ALLOWANCE_S) if starting else res.timeout
        stalled = now - busy > limit or now - last > 2 * limit
        if stalled or (give_up_at is not None and now > give_up_at):
            if not failed:
                res.hung = _behind(alive, now, limit)
            for st in alive:
                st.killed = True
                subproc.kill_group(st.proc.pid)
            break
        time.sleep(POLL_S)


def _behind(alive: list[RankState], now: float = 0.0, limit: float = 0.0) -> list[int]:
    """Ranks the others progressed past (fewest phases); among those, the ones that were idle
    (a rank still computing is slow, not hung) unless every one of them was busy."""
    least = min(len(st.phases) for st in alive)
    behind = [st for st in alive if len(st.phases) == least]
    idle = [st for st in behind if now - st.busy_t >= min(limit, BUSY_WINDOW_S * 3)]
    return [st.rank for st in (idle or behind)]


def _read_progress(st: RankState, tmp: str) -> bool:
    """Read new JSON lines from the rank's log; True when there were any."""
    path = os.path.join(tmp, f"rank{st.rank}.jsonl")
    try:
        with open(path, "rb") as fh:
            fh.seek(st._pos)
            chunk = fh.read()
    except OSError:
        return False
    complete = chunk[: chunk.rfind(b"\n") + 1]
    st._pos += len(complete)
    got = False
    for line in complete.decode("utf-8", "replace").splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        got = True
        st.phases.append(obj.get("phase", "?"))
        st.host = obj.get("host", st.host)
        st.device = obj.get("device", st.device)
        if obj.get("phase") == "result":
            st.result = obj.get("result")
        if obj.get("phase") == "error":
            st.error, st.traceback = obj.get("error", ""), obj.get("traceback", "")
    return got


def _teardown(ranks: list[RankState], tmp: str) -> None:
    for st in ranks:
        if st.proc is None:
            continue
        if st.proc.poll() is None:
            st.killed = True
        subproc.reap(st.proc, wait=5)  # the whole group: the rank and anything it left behind
        if st.rc is None:
            st.rc = st.proc.returncode


def _collect(res: LaunchResult, tmp: str) -> None:
    for st in res.ranks:
        _read_progress(st, tmp)
        st.stderr_tail = _tail(os.path.join(tmp, f"rank{st.rank}.err"))
        if st.rank not in res.hung and (st.error or (st.rc not in (0, None) and not st.killed)):
            res.failed.append(st.rank)
            if not st.error:
                sig = subproc.signal_name(st.rc)
                st.error = f"exited with {sig or f'status {st.rc}'}"
    results = [st.result for st in res.ranks if st.result]
    if results:
        res.summary = aggregate(results)


def _tail(path: str, limit: int = 4000) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - limit))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
