"""The op-case registry: name -> fn(device, dtype) returning (result, reference).

A case function receives the resolved `Adapter` and a torch dtype (or None) and returns
``(result, reference)``: tensors (or tuples of tensors) computed on the device and a float64 CPU
reference. The worker checks that every result tensor lives on the device and compares it with
the reference under the dtype's tolerance. Cases with ``kind="parity"`` return
``(device_losses, cpu_losses)`` instead. Tests register extra cases (hang, crash, raise) from a
plugin module the worker imports (``--plugin`` / ENVCHECK_SMOKE_PLUGINS).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable

# Max error allowed, relative to the reference's magnitude (max |ref|, at least 1). float32 allows
# HF32-class accumulation (torch_npu enables HF32 for conv by default); half types a few ulps.
TOLERANCE = {"float64": 1e-9, "float32": 2e-3, "float16": 1e-2, "bfloat16": 5e-2, None: 2e-3}


@dataclass(frozen=True)
class Case:
    """One registered smoke test (one dtype of one op)."""

    name: str
    """Unique id: 'matmul[float16]', or the op name when it has a single dtype."""
    fn: Callable[..., Any]
    dtype: str | None
    quick: bool = False
    """Part of the quick subset the default `envcheck` run uses."""
    kind: str = "compare"
    """'compare' (result vs float64 reference) or 'parity' (two loss curves)."""
    tol: float | None = None
    timeout: float | None = None
    """Per-case timeout override in seconds (None: the suite's --timeout)."""

    @property
    def tolerance(self) -> float:
        return self.tol if self.tol is not None else TOLERANCE.get(self.dtype, TOLERANCE[None])


REGISTRY: dict[str, Case] = {}


def register(name: str, *, dtypes: Sequence[str | None] = (None,), quick: bool | Sequence[str] = False,
             kind: str = "compare", tol: float | None = None,
             timeout: float | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register fn under `name` once per dtype. `quick` may name the quick dtypes."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        for dt in dtypes:
            cid = name if len(dtypes) == 1 else f"{name}[{dt}]"
            if cid in REGISTRY:
                raise ValueError(f"smoke case {cid!r} registered twice")
            q = quick if isinstance(quick, bool) else dt in quick
            REGISTRY[cid] = Case(cid, fn, dt, bool(q), kind, tol, timeout)
        return fn

    return wrap


def ordered() -> list[Case]:
    """Cases in registration order, parity runs last (they close the suite)."""
    cases = list(REGISTRY.values())
    return [c for c in cases if c.kind != "parity"] + [c for c in cases if c.kind == "parity"]
