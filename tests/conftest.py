"""Shared fixtures: run the CLI in-process or as a real subprocess; build Facts quickly."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

# A test run started in the background of a shell without job control (`cmd &` in a script, nohup) inherits SIGINT
# ignored, and so would every envcheck the tests start: Ctrl-C tests would then test that. The tests model a process
# in a terminal, so the run restores the usual handler; its children, after exec, get SIGINT's default (a handler is
# reset on exec, an ignored signal is not), which Python turns into KeyboardInterrupt.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
RESEARCH = REPO.parent / "shared" / "research"


@dataclass
class Result:
    rc: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)


@pytest.fixture
def cli(capsys):
    """Run envcheck.cli.main in-process: cli('probe', '--json') -> Result."""
    from envcheck.cli import main

    def _run(*argv: str) -> Result:
        rc = main([str(a) for a in argv])
        cap = capsys.readouterr()
        return Result(rc, cap.out, cap.err)

    return _run


def run_envcheck(*argv: str, env: dict | None = None, timeout: float = 120, cwd: str | None = None,
                 python: str = sys.executable) -> Result:
    """Run `python -m envcheck ...` as a real child process."""
    full_env = dict(os.environ)
    full_env.pop("NO_COLOR", None)
    if env:
        full_env.update(env)
    p = subprocess.run([python, "-m", "envcheck", *map(str, argv)], capture_output=True, text=True,
                       env=full_env, timeout=timeout, cwd=cwd or str(REPO))
    return Result(p.returncode, p.stdout, p.stderr)


@pytest.fixture
def envcheck_proc():
    return run_envcheck


def pytest_addoption(parser):
    parser.addoption("--run-npu", action="store_true", default=False, help="run tests that need a real Ascend NPU")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-npu"):
        return
    skip = pytest.mark.skip(reason="needs a real Ascend NPU (--run-npu)")
    for item in items:
        if "npu" in item.keywords:
            item.add_marker(skip)
