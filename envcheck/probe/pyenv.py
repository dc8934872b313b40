"""Python of the target interpreter: version and the versions of torch, torch_npu & co from metadata.

The current interpreter is read in-process with importlib.metadata (nothing is imported);
`--python PATH` runs that interpreter in a child with a timeout and a tiny inline script.
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from envcheck.errors import EnvcheckError, UsageError


class PythonUnusable(EnvcheckError):
    """The --python interpreter exists but hung, crashed or answered nonsense: a finding about the
    machine (the probe records it), not bad input."""

DISTS = ("torch", "torch-npu", "torchvision", "torchaudio", "numpy", "mindspore", "transformers",
         "accelerate", "deepspeed", "vllm", "vllm-ascend", "apex", "mindformers", "mindspeed")

# The package reader. It runs in the target interpreter for --python (any Python >= 3.8: stdlib
# only, prints one JSON document) and, for the current interpreter, in-process from the same source,
# so both paths read metadata the same way.
READER = r"""
import json, platform, sys
try:
    from importlib import metadata as md
except ImportError:
    md = None


def torch_pin(requires):
    # The `torch (==2.1.0+cpu)` / `torch==2.5.1` requirement among torch_npu's Requires-Dist.
    for r in requires:
        name = r.split(";")[0].strip()
        low = name.lower()
        if low.startswith("torch") and not (low[5:6].isalnum() or low[5:6] in ("-", "_")):
            return name
    return None


def read(dists):
    pk, files, req = {}, {}, None
    for d in dists:
        pk[d] = None
        if md is None:
            continue
        try:
            dist = md.distribution(d)
        except Exception:  # not installed, or a corrupt dist-info: never take the probe down
            continue
        pk[d] = dist.version
        p = getattr(dist, "_path", None)
        if p is not None:
            files[d] = str(p)
        if d == "torch-npu":
            req = torch_pin(dist.requires or [])
    return {"executable": sys.executable, "version": platform.python_version(),
            "implementation": platform.python_implementation(), "packages": pk,
            "package_files": files, "torch_npu_requires": req}
"""
CHILD = READER + "\nprint(json.dumps(read(sys.argv[1].split(','))))\n"

_NS: dict[str, Any] = {}
exec(compile(READER, "<envcheck.probe.pyenv.READER>", "exec"), _NS)  # noqa: S102 - our own source
torch_pin = _NS["torch_pin"]


def probe(python: str | None, environ: Mapping[str, str], timeout: float) -> dict[str, Any]:
    """Facts.python for the current interpreter, or for `python` (raises UsageError when unusable)."""
    if python is None:
        return _current()
    return _child(python, environ, timeout)


def _current() -> dict[str, Any]:
    return _NS["read"](DISTS)


def _child(python: str, environ: Mapping[str, str], timeout: float) -> dict[str, Any]:
    if not os.path.exists(python):
        raise UsageError(f"--python {python}: no such file")
    if os.path.isdir(python) or not os.access(python, os.X_OK):
        raise UsageError(f"--python {python}: not an executable Python interpreter")
    from envcheck import subproc

    # idle_timeout: an interpreter that hangs at start-up (no CPU, no reads) is given up on after
    # `timeout`; a busy one (a slow site-packages scan on a loaded machine) may take up to 60 s
    res = subproc.run([python, "-c", CHILD, ",".join(DISTS)], timeout=max(timeout, 60.0), idle_timeout=timeout,
                      env=dict(environ), cwd="/")
    if res.timed_out:
        raise PythonUnusable(f"--python {python}: did not answer within {timeout:g} s (hung at start-up)")
    if res.error or res.rc != 0:
        why = res.error or (res.stderr.strip().splitlines() or [f"exit status {res.rc}"])[-1]
        raise PythonUnusable(f"--python {python}: not a usable Python interpreter ({why[:200]})")
    try:
        doc = json.loads(res.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise UsageError(f"--python {python}: not a Python interpreter (unexpected output)") from None
    if not isinstance(doc, dict) or "packages" not in doc:
        raise UsageError(f"--python {python}: not a Python interpreter (unexpected output)")
    doc["requested"] = python
    return doc
