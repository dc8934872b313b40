"""The probe: read facts about the machine without importing torch or torch_npu.

`collect(root, python, timeout, environ)` is the one entry point; each submodule reads one area:
`system` (OS, glibc, /dev/shm, interfaces), `pyenv` (target interpreter's packages), `cann`
(toolkit installs), `driver` (driver / firmware), `npu` (npu-smi, /dev/davinci*), `env`,
`hccn` (device NICs via hccn_tool), `host` (tuning), `container`.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Callable

from envcheck.facts import PythonFacts
from envcheck.model import Facts


def collect(root: str = "/", python: str | None = None, timeout: float = 10.0,
            environ: Mapping[str, str] | None = None) -> Facts:
    """Read everything. Machine problems land in Facts.probe_errors; only bad user input
    (a --python that is not an interpreter) raises UsageError."""
    from envcheck.probe import cann, driver, env, npu, pyenv, ranktable, system
    from envcheck.probe.fs import Root

    environ = dict(os.environ if environ is None else environ)
    fs = Root(root)
    facts = Facts(root=fs.root)
    try:
        python_section = pyenv.probe(python, environ, timeout)
    except pyenv.PythonUnusable as exc:  # it exists but hangs or crashes: a finding (EC001), not bad input
        fs.note("python", str(exc))
        python_section = {"requested": python, "executable": python, "packages": {}}
    facts.python = PythonFacts.from_dict(python_section)
    facts.system = _guard(fs, "system", lambda: system.probe(fs), {})
    cann_section = _guard(fs, "cann", lambda: cann.probe(fs, environ), {"installs": [], "active": None})
    cann_section["environment"] = _guard(fs, "cann", lambda: cann.env_paths(fs, environ), {})
    facts.cann = cann_section
    facts.driver = _guard(fs, "driver", lambda: driver.probe(fs), {})
    facts.npu = _guard(fs, "npu", lambda: npu.probe(fs, environ, timeout), {"available": False, "devices": []})
    facts.env = env.probe(environ)
    facts.ranktable = _guard(fs, "ranktable", lambda: ranktable.probe(fs, environ), {})
    from envcheck.probe import container, hccn, host

    davinci = list(facts.npu.dev_davinci or ())
    facts.netdev = _guard(fs, "netdev", lambda: hccn.probe(fs, environ, timeout, hccn.device_ids(facts.npu, davinci)),
                          {"available": False, "devices": []})
    facts.host = _guard(fs, "host", lambda: host.probe(fs, facts.npu), {})
    facts.container = _guard(fs, "container", lambda: container.probe(fs, environ, davinci), {})
    facts.probe_errors = dict(sorted(fs.errors.items()))
    return facts


def _guard(fs: Any, area: str, fn: Callable[[], Any], empty: Any) -> Any:
    """Run one area's probe; an unexpected exception becomes a probe error, not a traceback."""
    try:
        return fn()
    except Exception as exc:  # a probe bug or a filesystem shape nobody foresaw
        fs.note(f"{area}:probe", f"{type(exc).__name__}: {exc}")
        return empty
