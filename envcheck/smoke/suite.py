"""Run op cases in an isolated worker child with a watchdog per case.

A case that hangs is killed (whole process group) after its timeout; a case that crashes is
reported with its signal and the stderr tail; either way the remaining cases continue in a fresh
worker. torch is imported once per worker, not per case. Ctrl-C kills the worker and returns what
finished. stderr of every case is scanned for CPU-fallback warnings.
"""
from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import IO, Any

from envcheck import lifetime, subproc
from envcheck.smoke import fallback

DEFAULT_TIMEOUT = 60.0
STARTUP_TIMEOUT = 120.0
TAIL_CHARS = 3000
ERR_SCAN_BYTES = 4 << 20
"""Most stderr read back per case (scanned for CPU-fallback warnings)."""


@dataclass
class Outcome:
    """What happened to one case."""

    case: str
    status: str
    """ok | fail (wrong result / not on device) | error (raised) | crash | timeout | not-run"""
    seconds: float = 0.0
    max_err: float | None = None
    tol: float | None = None
    result_device: str = ""
    error: str = ""
    traceback: str = ""
    signal: str = ""
    stderr_tail: str = ""
    fallbacks: list[dict[str, str]] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SuiteResult:
    device: str = ""
    kind: str = ""
    torch: str = ""
    outcomes: list[Outcome] = field(default_factory=list)
    startups: list[float] = field(default_factory=list)
    """Seconds each worker took to import torch and resolve the device (one per worker started)."""
    fatal: str = ""
    fatal_traceback: str = ""
    startup_fallbacks: list[dict[str, str]] = field(default_factory=list)
    interrupted: bool = False
    seconds: float = 0.0


class _Worker:
    """One worker child: its process, the message pipe and its stderr file."""

    def __init__(self, python: str, device: str, plugins: Sequence[str], env: dict[str, str] | None,
                 tmp: str, n: int) -> None:
        rfd, wfd = os.pipe()
        self.err_path = os.path.join(tmp, f"worker{n}.err")
        child_env = _env(env, wfd)
        argv = [python, "-m", "envcheck.smoke.worker", "--device", device,
                *[a for p in plugins for a in ("--plugin", p)]]
        with open(self.err_path, "wb") as err:
            try:
                self.proc = subproc.spawn(argv, env=child_env, stdin=subprocess.PIPE, stdout=err, stderr=err,
                                          pass_fds=(wfd,))
            finally:
                os.close(wfd)
        if self.proc.stdin is None:  # cannot happen with stdin=PIPE; narrows the type for the writes below
            raise RuntimeError("smoke worker started without a stdin pipe")
        self.stdin: IO[bytes] = self.proc.stdin
        self.rfd, self.buf, self.eof, self.closed = rfd, b"", False, False

    def send(self, name: str) -> None:
        try:
            self.stdin.write(f"{name}\n".encode())
            self.stdin.flush()
        except OSError:  # died between cases: recv() sees EOF and reports the crash
            pass

    def recv(self, deadline: float) -> dict[str, Any] | None:
        """Next message, or None on timeout / EOF (check self.eof)."""
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or self.eof:
                return None
            ready, _, _ = select.select([self.rfd], [], [], min(left, 0.5))
            if ready:
                chunk = os.read(self.rfd, 65536)
                if not chunk:
                    self.eof = True
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        try:
            return json.loads(line)
        except ValueError:
            return {"event": "garbage", "text": line.decode("utf-8", "replace")}

    def err_size(self) -> int:
        try:
            return os.path.getsize(self.err_path)
        except OSError:
            return 0

    def err_text(self, start: int = 0) -> str:
        """stderr written since `start`, at most ERR_SCAN_BYTES of it (the end: a flood keeps its tail)."""
        try:
            with open(self.err_path, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                fh.seek(max(start, fh.tell() - ERR_SCAN_BYTES))
                return fh.read(ERR_SCAN_BYTES).decode("utf-8", "replace")
        except OSError:
            return ""

    def close(self) -> int | None:
        """Kill the whole group, reap the child, return its exit status (idempotent)."""
        if self.closed:
            return self.proc.returncode
        self.closed = True
        subproc.reap(self.proc)  # the whole group: the worker and anything it left behind
        try:
            self.stdin.close()
        except OSError:  # the child is gone: broken pipe
            pass
        os.close(self.rfd)
        return self.proc.returncode


def _env(extra: dict[str, str] | None, fd: int) -> dict[str, str]:
    env = dict(os.environ)
    # fallback warnings must be printed to be seen: torch_npu up to 2.12.0 reads TORCH_NPU_DISABLED_WARNING, 2.13.0
    # TORCH_NPU_WARNING_DISABLE first and the old name as a fallback
    for name in ("TORCH_NPU_WARNING_DISABLE", "TORCH_NPU_DISABLED_WARNING"):
        env.pop(name, None)
    env.pop("RANK", None)  # recent torch_npu prints them only on rank 0 or without RANK
    env.update(extra or {})
    pkg_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_parent, env.get("PYTHONPATH", "")) if p)
    env["ENVCHECK_SMOKE_FD"] = str(fd)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def select_cases(available: Sequence[str], quick: Sequence[str], which: str | Sequence[str]) -> list[str]:
    """'all' | 'quick' | explicit names (unknown names are kept: the worker reports them)."""
    if which == "all":
        return list(available)
    if which == "quick":
        return list(quick)
    return list(which)


def run_suite(which: str | Sequence[str] = "all", device: str = "auto", timeout: float = DEFAULT_TIMEOUT,
              python: str | None = None, plugins: Sequence[str] = (), env: dict[str, str] | None = None,
              on_outcome: Any = None) -> SuiteResult:
    """Run the selected cases; never raises for what a case does. `on_outcome(o)` streams results."""
    res = SuiteResult()
    t0 = time.monotonic()
    pending: list[str] | None = None
    with lifetime.temp_dir("envcheck-smoke-") as tmp:
        worker: _Worker | None = None
        try:
            while pending is None or pending:
                worker = _Worker(python or sys.executable, device, plugins, env, tmp, len(res.startups))
                ready = worker.recv(time.monotonic() + max(STARTUP_TIMEOUT, timeout))
                if not ready or ready.get("event") != "ready":
                    _fatal(res, worker, ready)
                    break
                _note_ready(res, worker, ready)
                if pending is None:
                    pending = select_cases(ready["cases"], ready["quick"], which)
                limits = ready.get("timeouts") or {}
                while pending:
                    out = _one(worker, pending[0], limits.get(pending[0]) or timeout)
                    pending.pop(0)
                    _emit(res, out, on_outcome)
                    if out.status in ("crash", "timeout"):
                        break  # this worker is gone; the rest run in a fresh one
                worker.close()
                worker = None
        except KeyboardInterrupt:
            res.interrupted = True
        finally:
            if worker is not None:
                worker.close()
    for name in pending or ():
        res.outcomes.append(Outcome(name, "not-run", error="interrupted" if res.interrupted else res.fatal))
    res.seconds = time.monotonic() - t0
    return res


def _emit(res: SuiteResult, out: Outcome, on_outcome: Any) -> None:
    res.outcomes.append(out)
    if on_outcome:
        on_outcome(out)


def _note_ready(res: SuiteResult, worker: _Worker, ready: dict[str, Any]) -> None:
    res.device, res.kind, res.torch = ready["device"], ready["kind"], ready["torch"]
    res.startups.append(float(ready["seconds"]))
    for fb in fallback.scan(worker.err_text()):
        res.startup_fallbacks.append({"op": fb.op, "kind": fb.kind, "line": fb.line})


def _fatal(res: SuiteResult, worker: _Worker, msg: dict[str, Any] | None) -> None:
    rc = worker.close()
    if msg and msg.get("event") == "fatal":
        res.fatal, res.fatal_traceback = msg.get("error", ""), msg.get("traceback", "")
    else:
        sig = subproc.signal_name(rc)
        res.fatal = (f"smoke worker died while starting ({sig or f'exit status {rc}'})" if worker.eof
                     else "smoke worker did not start in time (importing torch / initialising the device)")
        res.fatal_traceback = worker.err_text()[-TAIL_CHARS:]


def _one(worker: _Worker, name: str, timeout: float) -> Outcome:
    start = worker.err_size()
    t0 = time.monotonic()
    worker.send(name)
    deadline = t0 + timeout
    msg = worker.recv(deadline)
    if msg and msg.get("event") == "start":
        msg = worker.recv(deadline)
    err = lambda: worker.err_text(start)  # noqa: E731
    if msg and msg.get("event") == "done":
        out = Outcome(name, msg.get("status", "error"), msg.get("seconds", 0.0), msg.get("max_err"), msg.get("tol"),
                      msg.get("result_device", ""), msg.get("error", ""), msg.get("traceback", ""),
                      data=msg.get("data") or {})
        text = err()
    elif worker.eof or worker.proc.poll() is not None:
        rc = worker.close()
        text = err()
        sig = subproc.signal_name(rc)
        out = Outcome(name, "crash", time.monotonic() - t0, signal=sig,
                      error=f"the worker died with {sig or f'exit status {rc}'} while running {name}")
    else:
        worker.close()
        text = err()
        out = Outcome(name, "timeout", time.monotonic() - t0,
                      error=f"{name} did not finish within {timeout:g} s; its process group was killed")
    if out.status != "ok":
        out.stderr_tail = text[-TAIL_CHARS:]
    out.fallbacks = [{"op": f.op, "kind": f.kind, "line": f.line} for f in fallback.scan(text)]
    return out
