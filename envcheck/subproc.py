"""The one place that starts processes: argv lists, timeouts, whole-group kills, never shell=True."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Mapping, Sequence


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

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out and not self.error


def run(argv: Sequence[str], timeout: float = 10.0, env: Mapping[str, str] | None = None,
        input: str | None = None, cwd: str | None = None) -> Completed:
    """Run argv in its own process group; on timeout kill the whole group. Never raises OSError."""
    t0 = time.monotonic()
    argv = tuple(str(a) for a in argv)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(env) if env is not None else None,
                                cwd=cwd, start_new_session=True, text=True, errors="replace")
    except OSError as exc:
        return Completed(argv, None, "", "", False, time.monotonic() - t0, error=f"{exc.strerror or exc}: {argv[0]}")
    try:
        out, err = proc.communicate(input=input, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        try:
            out, err = proc.communicate(timeout=2)
        except subprocess.TimeoutExpired:  # pragma: no cover - pipes held open by a grandchild
            out, err = "", ""
        return Completed(argv, None, out or "", err or "", True, time.monotonic() - t0)
    except BaseException:  # Ctrl-C: leave nothing behind
        kill_group(proc.pid)
        raise
    return Completed(argv, proc.returncode, out, err, False, time.monotonic() - t0)


def spawn(argv: Sequence[str], env: Mapping[str, str] | None = None, cwd: str | None = None,
          stdin: object = subprocess.DEVNULL, stdout: object = None, stderr: object = None,
          pass_fds: Sequence[int] = ()) -> subprocess.Popen:
    """Start a long-lived child in its own process group (for streaming protocols and rank launchers).

    The caller owns the Popen and must end it with `kill_group(proc.pid)`; raises OSError when
    argv cannot be started.
    """
    return subprocess.Popen(tuple(str(a) for a in argv), stdin=stdin, stdout=stdout, stderr=stderr,
                            env=dict(env) if env is not None else None, cwd=cwd,
                            start_new_session=True, pass_fds=tuple(pass_fds), close_fds=True)


def kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    """Kill the process group led by pid (started with start_new_session=True)."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def signal_name(rc: int | None) -> str:
    """'SIGSEGV' for rc -11, '' otherwise."""
    if rc is None or rc >= 0:
        return ""
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"
