"""One lifetime for everything envcheck starts: child process groups and temp directories.

`install()` (called by `cli.main`) makes SIGTERM and SIGHUP behave like Ctrl-C: the first one raises
`Terminated` (a KeyboardInterrupt) in the main thread, so every `except KeyboardInterrupt` /
`finally` that already cleans up after Ctrl-C runs for `timeout`, `scancel`, `kill` and a dropped ssh
session too. Every child is started in its own process group and registered here; `cleanup()`
kills each registered group that is still there and removes each registered temp dir. It runs when
`cli.main` returns (normal, error or signal) and at interpreter exit.
"""
from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from typing import Any, Callable

HANDLED = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None)


class Terminated(KeyboardInterrupt):
    """SIGTERM / SIGHUP received: unwinds exactly like Ctrl-C."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


_lock = threading.Lock()
_groups: set[int] = set()
_dirs: set[str] = set()
_received: int | None = None


def received() -> int | None:
    """The signal number that ended the run (SIGTERM / SIGHUP), None when none arrived."""
    return _received


def _handler(signum: int, frame: Any) -> None:
    global _received
    if _received is not None:  # already unwinding: let the cleanup finish
        return
    _received = signum
    raise Terminated(signum)


def install() -> Callable[[], None]:
    """Handle SIGTERM / SIGHUP like Ctrl-C (main thread only); returns a function restoring the old handlers."""
    global _received
    _received = None
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    old = {}
    for sig in HANDLED:
        try:
            old[sig] = signal.signal(sig, _handler)
        except (ValueError, OSError):  # pragma: no cover - not the main thread / not allowed
            pass

    def restore() -> None:
        for sig, h in old.items():
            try:
                signal.signal(sig, h)
            except (ValueError, OSError, TypeError):  # pragma: no cover
                pass

    return restore


def register_group(pgid: int) -> None:
    with _lock:
        _groups.add(pgid)


def forget_group(pgid: int) -> None:
    with _lock:
        _groups.discard(pgid)


def live_groups() -> list[int]:
    with _lock:
        return sorted(_groups)


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    """Signal a whole process group; a group that is gone already is fine."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


@contextlib.contextmanager
def temp_dir(prefix: str) -> Iterator[str]:
    """A temp dir removed on every exit path (and by cleanup() if this frame never unwinds)."""
    path = tempfile.mkdtemp(prefix=prefix)
    with _lock:
        _dirs.add(path)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        with _lock:
            _dirs.discard(path)


def cleanup() -> None:
    """Kill every registered group still present and remove every registered temp dir."""
    with _lock:
        groups, dirs = sorted(_groups), sorted(_dirs)
        _groups.clear()
        _dirs.clear()
    for g in groups:
        kill_group(g)
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)


atexit.register(cleanup)
