"""The smoke worker: a child that imports torch once, then runs the cases the parent names.

Protocol: the parent writes case names on stdin, one a line; the worker answers with JSON lines on
the file descriptor in ENVCHECK_SMOKE_FD: first ``{"event": "ready", "cases": [...]}`` (or
``{"event": "fatal", ...}`` when torch or the device cannot be set up), then for every case
``{"event": "start"}`` and ``{"event": "done", "status": "ok"|"fail"|"error", ...}``. stdout and
stderr are the parent's files, so C++ warnings written straight to fd 2 are captured there.
Plugin modules (``--plugin``, ENVCHECK_SMOKE_PLUGINS) may register extra cases.
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
import time
import traceback
from collections.abc import Iterable
from typing import Any

ENV_FD = "ENVCHECK_SMOKE_FD"
ENV_PLUGINS = "ENVCHECK_SMOKE_PLUGINS"


class Channel:
    """JSON lines to the parent over an inherited pipe."""

    def __init__(self, fd: int) -> None:
        self.fh = os.fdopen(fd, "w", buffering=1, encoding="utf-8")

    def send(self, **obj: Any) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        self.fh.write(json.dumps(obj, default=str) + "\n")
        self.fh.flush()


def _flatten(obj: Any) -> list[Any]:
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _flatten(o)]
    return [obj]


def compare(adapter: Any, result: Any, reference: Any, tol: float) -> dict[str, Any]:
    """Max error of result vs reference (relative to the reference's scale) and where results live."""
    import torch

    got, want = _flatten(result), _flatten(reference)
    if len(got) != len(want):
        return {"status": "error", "error": f"case returned {len(got)} results for {len(want)} references"}
    bad = [type(g).__name__ for g in got if not isinstance(g, torch.Tensor)]
    if bad:
        return {"status": "error", "error": f"case returned {bad[0]}, not a tensor"}
    devices = sorted({g.device.type for g in got})
    where = ",".join(devices)
    if devices != [adapter.kind]:
        return {"status": "fail", "result_device": where, "error": f"result lives on {where}, expected {adapter.kind}"}
    worst = 0.0
    for g, w in zip(got, want):
        g64, w64 = g.detach().to("cpu", torch.float64), torch.as_tensor(w).detach().to("cpu", torch.float64)
        if g64.shape != w64.shape:
            return {"status": "fail", "result_device": where,
                    "error": f"shape {tuple(g64.shape)} != reference {tuple(w64.shape)}"}
        if g64.numel():
            err = float((g64 - w64).abs().max()) / max(1.0, float(w64.abs().max()))
            worst = err if math.isnan(err) or err > worst else worst
            if math.isnan(worst):
                break
    ok = not math.isnan(worst) and worst <= tol
    out: dict[str, Any] = {"status": "ok" if ok else "fail", "max_err": worst, "tol": tol, "result_device": where}
    if not ok:
        out["error"] = f"max error {worst:.3g} exceeds tolerance {tol:.3g}"
    return out


def run_case(adapter: Any, case: Any) -> dict[str, Any]:
    import torch

    from envcheck.smoke.parity import compare_curves

    dtype = getattr(torch, case.dtype) if case.dtype else None
    t0 = time.perf_counter()
    try:
        result, reference = case.fn(adapter, dtype)
        adapter.synchronize()
        if case.kind == "parity":
            ok, worst, step = compare_curves(result, reference, case.tolerance)
            out = {"status": "ok" if ok else "fail", "max_err": worst, "tol": case.tolerance,
                   "data": {"device_losses": result, "cpu_losses": reference, "worst_step": step}}
            if not ok:
                out["error"] = f"loss curves differ by {worst:.3g} (relative) at step {step}"
        else:
            out = compare(adapter, result, reference, case.tolerance)
    except Exception as exc:
        out = {"status": "error", "error": "".join(traceback.format_exception_only(type(exc), exc)).strip(),
               "traceback": traceback.format_exc(limit=6)}
    out["seconds"] = time.perf_counter() - t0
    return out


def load_plugins(names: Iterable[str]) -> None:
    for name in names:
        if name:
            importlib.import_module(name)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="envcheck.smoke.worker")
    p.add_argument("--device", default="auto")
    p.add_argument("--plugin", action="append", default=[])
    args = p.parse_args(argv)
    chan = Channel(int(os.environ[ENV_FD]))
    t0 = time.perf_counter()
    try:
        import torch

        from envcheck.smoke import ops  # noqa: F401  (registers the built-in cases)
        from envcheck.smoke.devices import resolve
        from envcheck.smoke.registry import REGISTRY, ordered

        load_plugins([*args.plugin, *os.environ.get(ENV_PLUGINS, "").split(",")])
        adapter = resolve(args.device)
    except BaseException as exc:
        chan.send(event="fatal", error="".join(traceback.format_exception_only(type(exc), exc)).strip(),
                  traceback=traceback.format_exc())
        return 3
    chan.send(event="ready", device=str(adapter), kind=adapter.kind, torch=torch.__version__,
              seconds=time.perf_counter() - t0, cases=[c.name for c in ordered()],
              quick=[c.name for c in ordered() if c.quick],
              timeouts={c.name: c.timeout for c in ordered() if c.timeout})
    for line in sys.stdin:
        name = line.strip()
        if not name:
            continue
        chan.send(event="start", case=name)
        case = REGISTRY.get(name)
        out = run_case(adapter, case) if case else {"status": "error", "error": f"no such case {name!r}"}
        chan.send(event="done", case=name, **out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
