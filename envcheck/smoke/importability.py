"""Can the target interpreter import torch and torch_npu? Asked in a child with a timeout.

With torch_npu installed, `import torch` itself loads torch_npu: torch (>= 2.5) imports every
package registered under the ``torch.backends`` entry point (torch_npu registers
``torch_npu = torch_npu:_autoload``). Without CANN the loader then fails on ``libhccl.so`` and even
``import torch`` dies with "Failed to load the backend extension: torch_npu" (error-catalogue
§3.7). ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` turns the auto-loading off, so when the plain import
fails a second child retries with it to tell "torch is broken" from "the backend broke torch".
"""
from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from envcheck import subproc

AUTOLOAD = "TORCH_DEVICE_BACKEND_AUTOLOAD"
DEFAULT_TIMEOUT = 120.0

# Shared libraries torch_npu's extension needs from CANN (error-catalogue RX-LIB, §3.7).
MISSING_LIB_RE = re.compile(
    r"(lib(hccl|ascendcl|acl_op_compiler|ascend_hal|atb|opapi|ge_runner|graph|runtime|torch_npu)\.so)"
    r"(\.[0-9]+)*: cannot open shared object file")

_PROBE = r"""
import importlib.util, json, sys, time, traceback
out = {"python": sys.version.split()[0], "executable": sys.executable,
       "installed": {n: importlib.util.find_spec(n) is not None for n in ("torch", "torch_npu", "mindspore")}}

def attempt(name):
    t0 = time.perf_counter()
    try:
        mod = __import__(name)
    except BaseException as exc:
        return {"ok": False, "seconds": time.perf_counter() - t0, "traceback": traceback.format_exc(),
                "error": "".join(traceback.format_exception_only(type(exc), exc)).strip()}
    return {"ok": True, "seconds": time.perf_counter() - t0, "version": str(getattr(mod, "__version__", ""))}

if out["installed"]["torch"]:
    out["torch"] = attempt("torch")
    if out["torch"]["ok"] and out["installed"]["torch_npu"]:
        out["torch_npu"] = attempt("torch_npu")
        if out["torch_npu"]["ok"]:
            try:
                import torch
                out["npu_count"] = int(torch.npu.device_count())
            except BaseException as exc:
                out["npu_error"] = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    if out["torch"]["ok"]:
        try:
            import torch
            out["cuda_count"] = int(torch.cuda.device_count()) if torch.cuda.is_available() else 0
        except BaseException:
            out["cuda_count"] = 0
sys.stdout.write("\n@@ENVCHECK@@" + json.dumps(out) + "\n")
"""


@dataclass
class Attempt:
    """One `import` in one child (plain, or with auto-loading off)."""

    env: dict[str, str]
    rc: int | None = None
    timed_out: bool = False
    start_error: str = ""
    stderr: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def crashed(self) -> str:
        """Signal name when the child died of a signal during import."""
        return subproc.signal_name(self.rc)

    def module(self, name: str) -> dict[str, Any] | None:
        return self.info.get(name)


@dataclass
class Importability:
    python: str
    plain: Attempt
    no_autoload: Attempt | None = None

    @property
    def installed(self) -> dict[str, bool]:
        return self.plain.info.get("installed", {})

    @property
    def torch_ok(self) -> bool:
        t = self.plain.module("torch")
        return bool(t and t.get("ok"))

    def auto_kind(self) -> str:
        """What `--device auto` will pick: npu when torch_npu imports and sees devices, else cuda, else cpu."""
        if (self.plain.info.get("npu_count") or 0) > 0:
            return "npu"
        return "cuda" if (self.plain.info.get("cuda_count") or 0) > 0 else "cpu"

    def device_count(self, kind: str) -> int:
        return 1 if kind == "cpu" else int(self.plain.info.get(f"{kind}_count") or 0)

    @property
    def torch_npu(self) -> dict[str, Any] | None:
        """torch_npu's import attempt: from the plain child, else from the autoload-off retry."""
        got = self.plain.module("torch_npu")
        if got is None and self.no_autoload is not None:
            got = self.no_autoload.module("torch_npu")
        return got


def _attempt(python: str, env_extra: dict[str, str], timeout: float, idle_timeout: float | None = None) -> Attempt:
    env = dict(os.environ)
    env.update(env_extra)
    done = subproc.run([python, "-c", _PROBE], timeout=timeout, env=env, idle_timeout=idle_timeout)
    att = Attempt(env_extra, done.rc, done.timed_out, done.error, done.stderr)
    marker = done.stdout.rfind("@@ENVCHECK@@")
    if marker >= 0:
        try:
            att.info = json.loads(done.stdout[marker + len("@@ENVCHECK@@"):].strip().splitlines()[0])
        except (ValueError, IndexError):
            pass
    return att


def probe(python: str | None = None, timeout: float = DEFAULT_TIMEOUT,
          idle_timeout: float | None = None) -> Importability:
    """Import torch (and torch_npu when installed) in `python`; retry with auto-loading off on failure.

    `timeout` bounds each child; `idle_timeout` gives up earlier on a child that does nothing
    (no CPU, no reads: a hang, e.g. an interpreter that sleeps at start-up)."""
    python = python or sys.executable
    res = Importability(python, _attempt(python, {}, timeout, idle_timeout))
    torch = res.plain.module("torch")
    if torch is not None and not torch.get("ok") and res.installed.get("torch_npu"):
        res.no_autoload = _attempt(python, {AUTOLOAD: "0"}, timeout, idle_timeout)
    return res


def missing_library(text: str) -> str | None:
    """'libhccl.so' when `text` says a CANN library could not be loaded."""
    m = MISSING_LIB_RE.search(text or "")
    return m.group(1) if m else None
