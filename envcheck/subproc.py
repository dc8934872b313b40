"""The one place that starts processes: argv lists, timeouts, whole-group kills, never shell=True.

Every child gets its own process group, registered with `envcheck.lifetime`, and the WHOLE group is
killed on every exit path of `run` (normal exit, timeout, error, Ctrl-C / SIGTERM / SIGHUP), so
helpers a child leaves behind in its group do not survive it. Output is read with a cap per
stream (head and tail kept), so a child printing 50 MB costs bounded memory.
"""
from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from envcheck import lifetime

MAX_OUTPUT = 1 << 20
"""Bytes of each stream kept from the start (plus MAX_OUTPUT // 4 from the end)."""
IDLE_CHECK_S = 0.25
DRAIN_S = 1.0
"""After the child exited and its group was killed: how long to wait for pipes held by a detached daemon."""


@dataclass(frozen=True)
class Completed:
    argv: tuple[str, ...]
    rc: int | None
    """Exit status; negative = killed by that signal; None = could not start or timed out."""
    stdout: str
    stderr: str
    timed_out: bool = False
    seconds: float = 0.0
    error: str = ""
    """Why it could not start (not found, permission denied), empty otherwise."""
    idle: bool = False
    """Timed out because it did nothing (no CPU, no reads) for idle_timeout seconds."""
    truncated: bool = False
    """Some output was dropped (more than MAX_OUTPUT bytes on a stream)."""

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out and not self.error


class _Capped:
    def __init__(self, limit: int) -> None:
        self.limit, self.head, self.tail, self.dropped = limit, bytearray(), bytearray(), 0

    def add(self, chunk: bytes) -> None:
        room = self.limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            keep = self.limit // 4
            if len(self.tail) > keep:
                self.dropped += len(self.tail) - keep
                del self.tail[:len(self.tail) - keep]

    def text(self) -> str:
        data = bytes(self.head)
        if self.dropped:
            data += f"\n[... {self.dropped:,} bytes of output not kept ...]\n".encode()
        text = (data + bytes(self.tail)).decode("utf-8", "replace")
        return text.replace("\r\n", "\n").replace("\r", "\n")  # universal newlines, as text=True did


def _stat_fields(pid: str) -> list[bytes] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _rchar(pid: str) -> int:
    try:
        with open(f"/proc/{pid}/io", "rb") as fh:
            for line in fh:
                if line.startswith(b"rchar:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def activity(pid: int) -> tuple[int, int] | None:
    """(CPU clock ticks, bytes read) used so far by pid, from /proc(5); None where unavailable.
    A child whose activity does not change is waiting, not working (a hang, not a slow import)."""
    fields = _stat_fields(str(pid))
    if fields is None:
        return None
    try:
        cpu = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of proc(5))
    except (IndexError, ValueError):
        return None
    return cpu, _rchar(str(pid))


def group_activity(pgid: int) -> tuple[int, int] | None:
    """activity() summed over every process in process group pgid (a wrapper script's children
    included); None where /proc is unavailable."""
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return None
    cpu = rchar = 0
    found = False
    for pid in pids:
        fields = _stat_fields(pid)
        try:
            if fields is None or int(fields[2]) != pgid:  # pgrp: field 5 of proc(5)
                continue
            cpu += int(fields[11]) + int(fields[12])
        except (IndexError, ValueError):
            continue
        rchar += _rchar(pid)
        found = True
    return (cpu, rchar) if found else None


def _exited(pid: int) -> bool:
    """True once pid has exited, WITHOUT reaping it (its group id cannot be reused meanwhile)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def run(argv: Sequence[str], timeout: float = 10.0, env: Mapping[str, str] | None = None,
        input: str | None = None, cwd: str | None = None, idle_timeout: float | None = None,
        max_output: int = MAX_OUTPUT) -> Completed:
    """Run argv in its own process group and kill the whole group when it ends, however it ends.

    `timeout`: wall-clock limit. `idle_timeout`: also give up once the child has used no CPU and
    read nothing for that long (a hang), while a busy child may run up to `timeout`.
    Never raises OSError; KeyboardInterrupt (Ctrl-C, SIGTERM, SIGHUP) kills the group and propagates.
    """
    t0 = time.monotonic()
    argv = tuple(str(a) for a in argv)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=dict(env) if env is not None else None, cwd=cwd, start_new_session=True)
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or str(exc)
        return Completed(argv, None, "", "", False, time.monotonic() - t0, error=f"{why}: {argv[0]}")
    lifetime.register_group(proc.pid)
    outs = {proc.stdout.fileno(): _Capped(max_output), proc.stderr.fileno(): _Capped(max_output)}  # type: ignore[union-attr]
    try:
        pending = (input or "").encode() if input is not None else b""
        if input is not None:
            _feed(proc, pending)
        timed_out, idle = _wait(proc, outs, t0 + timeout, idle_timeout)
        lifetime.kill_group(proc.pid)  # helpers left in the group, or the hung child itself
        _drain(outs, time.monotonic() + DRAIN_S)
        proc.wait()
    except BaseException:  # Ctrl-C / SIGTERM / SIGHUP: leave nothing behind
        lifetime.kill_group(proc.pid)
        try:
            proc.wait(timeout=2)
        except BaseException:  # pragma: no cover - unkillable (D state) or a second signal
            pass
        raise
    finally:
        for f in (proc.stdout, proc.stderr, proc.stdin):
            if f is not None:
                try:
                    f.close()
                except OSError:
                    pass
        lifetime.forget_group(proc.pid)
    truncated = any(c.dropped for c in outs.values())
    out, err = (c.text() for c in outs.values())  # stdout's fd was created first
    return Completed(argv, None if timed_out else proc.returncode, out, err, timed_out, time.monotonic() - t0,
                     idle=idle, truncated=truncated)


def _feed(proc: subprocess.Popen, data: bytes) -> None:
    try:
        assert proc.stdin is not None
        proc.stdin.write(data)
        proc.stdin.close()
    except (OSError, ValueError):  # the child does not read stdin, or died
        pass


def _wait(proc: subprocess.Popen, outs: dict[int, _Capped], deadline: float,
          idle_timeout: float | None) -> tuple[bool, bool]:
    """Read output until the child exits (not reaped) or a limit passes: (timed_out, idle)."""
    open_fds = list(outs)
    last_act = group_activity(proc.pid) if idle_timeout else None
    act_t = checked = time.monotonic()
    nap = 0.005
    while True:
        now = time.monotonic()
        if _exited(proc.pid):
            return False, False
        if now >= deadline:
            return True, False
        if idle_timeout is not None and now - checked >= IDLE_CHECK_S:
            checked = now
            cur = group_activity(proc.pid)
            if cur is None or cur != last_act:
                last_act, act_t = cur, now
            elif now - act_t >= idle_timeout:
                return True, True
        wait = min(nap, max(0.0, deadline - now))
        if open_fds:
            _pump(open_fds, outs, wait)
        else:
            time.sleep(wait)
        nap = min(nap * 2, 0.05)


def _pump(fds: list[int], outs: dict[int, _Capped], wait: float) -> bool:
    """Read what the pipes in `fds` have within `wait` seconds; drop a pipe from `fds` at EOF.
    False when none was ready."""
    ready, _, _ = select.select(fds, [], [], wait)
    for fd in ready:
        chunk = os.read(fd, 65536)
        if chunk:
            outs[fd].add(chunk)
        else:
            fds.remove(fd)
    return bool(ready)


def _drain(outs: dict[int, _Capped], deadline: float) -> None:
    """Read what is left in the pipes; stop at EOF or at the deadline (a daemon holding them open)."""
    fds = list(outs)
    while fds and time.monotonic() < deadline:
        if not _pump(fds, outs, max(0.0, deadline - time.monotonic())):
            break


def spawn(argv: Sequence[str], env: Mapping[str, str] | None = None, cwd: str | None = None,
          stdin: object = subprocess.DEVNULL, stdout: object = None, stderr: object = None,
          pass_fds: Sequence[int] = ()) -> subprocess.Popen:
    """Start a long-lived child in its own process group (for streaming protocols and rank launchers).

    The group is registered with `envcheck.lifetime` (killed at the latest when the run ends); the
    caller owns the Popen and ends it with `reap(proc)`. Raises OSError when argv cannot be started.
    """
    proc = subprocess.Popen(tuple(str(a) for a in argv), stdin=stdin, stdout=stdout, stderr=stderr,
                            env=dict(env) if env is not None else None, cwd=cwd,
                            start_new_session=True, pass_fds=tuple(pass_fds), close_fds=True)  # type: ignore[call-overload]
    lifetime.register_group(proc.pid)
    return proc


def reap(proc: subprocess.Popen, wait: float = 10.0) -> int | None:
    """Kill proc's whole group (what it left behind too), reap it, forget the group; its exit status."""
    lifetime.kill_group(proc.pid)
    try:
        proc.wait(timeout=wait)
    except subprocess.TimeoutExpired:  # pragma: no cover - unkillable (D state)
        pass
    lifetime.kill_group(proc.pid)
    if proc.returncode is not None:
        lifetime.forget_group(proc.pid)
    return proc.returncode


def kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    """Kill the process group led by pid (started with start_new_session=True)."""
    lifetime.kill_group(pid, sig)


def signal_name(rc: int | None) -> str:
    """'SIGSEGV' for rc -11, '' otherwise."""
    if rc is None or rc >= 0:
        return ""
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"
