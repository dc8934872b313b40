"""/proc helpers for the hostile-input tests: find processes by a marker in their environment,
and wait for conditions instead of sleeping fixed amounts (the suite must pass on a loaded box)."""
from __future__ import annotations

import os
import time
from typing import Callable


def marked(mark: str) -> list[tuple[int, str]]:
    """(pid, cmdline) of every process whose environment carries `mark` (not this process)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                if mark.encode() not in fh.read():
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
            with open(f"/proc/{pid}/stat", "rb") as fh:
                if fh.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue  # a zombie waiting for its parent is not running anything
        except OSError:
            continue
        found.append((int(pid), cmd))
    return found


def wait_for(cond: Callable[[], object], timeout: float, what: str, step: float = 0.05) -> object:
    """Poll cond() until it is truthy; fail with `what` after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(step)


def no_survivors(mark: str, timeout: float = 15.0) -> list[tuple[int, str]]:
    """[] once nothing carrying mark runs (waits up to timeout); else the survivors (then killed)."""
    deadline = time.monotonic() + timeout
    while True:
        left = marked(mark)
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    for pid, _ in left:
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    return left
