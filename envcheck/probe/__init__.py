"""The probe: read facts about the machine without importing torch or torch_npu.

`collect(root, python, timeout)` is the one entry point; each submodule reads one area.
"""
from __future__ import annotations

import os
import platform
import sys

from envcheck.model import Facts
from envcheck.redact import redact_env


def collect(root: str = "/", python: str | None = None, timeout: float = 10.0,
            environ: dict[str, str] | None = None) -> Facts:
    """Read everything. Never raises for machine problems: they land in Facts.probe_errors."""
    env = dict(os.environ if environ is None else environ)
    facts = Facts(root=root)
    facts.system = {"os": platform.system(), "kernel": platform.release(), "arch": platform.machine(),
                    "hostname": platform.node()}
    facts.python = {"executable": python or sys.executable, "version": platform.python_version(), "packages": {}}
    facts.env = redact_env({k: v for k, v in env.items() if k.startswith(("ASCEND_", "HCCL_"))})
    facts.cann = {"installs": [], "active": None}
    return facts
