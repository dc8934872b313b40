"""Device adapters: one small table (npu / cuda / cpu) so the same smoke code runs on all three.

Nothing here imports torch at module level; `resolve()` is called inside a child process (or inside
a rank that already imported torch).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

KINDS = ("npu", "cuda", "cpu")


@dataclass(frozen=True)
class Spec:
    """What differs between device kinds: the plug-in module, the c10d backend, the amp dtype."""

    kind: str
    backend: str
    """torch.distributed backend: hccl / nccl / gloo."""
    module: str | None
    """Module that must be imported to get the device (torch_npu), None when built in."""
    amp_dtype: str
    """dtype autocast uses in the amp smoke test (fp16 on accelerators, bf16 on cpu)."""


SPECS = {
    "npu": Spec("npu", "hccl", "torch_npu", "float16"),
    "cuda": Spec("cuda", "nccl", None, "float16"),
    "cpu": Spec("cpu", "gloo", None, "bfloat16"),
}


@dataclass
class Adapter:
    """A resolved device: `torch_device` for tensors, plus sync / amp helpers."""

    spec: Spec
    index: int = 0
    count: int = 1

    @property
    def kind(self) -> str:
        return self.spec.kind

    @property
    def backend(self) -> str:
        return self.spec.backend

    @property
    def torch_device(self) -> Any:
        import torch

        return torch.device("cpu") if self.kind == "cpu" else torch.device(self.kind, self.index)

    def __str__(self) -> str:
        return "cpu" if self.kind == "cpu" else f"{self.kind}:{self.index}"

    def synchronize(self) -> None:
        """Wait for queued kernels (timing and hang detection need it on accelerators)."""
        if self.kind != "cpu":
            _device_module(self.kind).synchronize()

    def autocast(self, dtype: Any = None) -> contextlib.AbstractContextManager:
        """torch.autocast for this device type (torch_npu registers device_type 'npu')."""
        import torch

        dtype = dtype or getattr(torch, self.spec.amp_dtype)
        return torch.autocast(device_type=self.kind, dtype=dtype)

    def grad_scaler(self, **kw: Any) -> Any:
        """torch.amp.GradScaler for this device; torch_npu's own torch.npu.amp.GradScaler as fallback."""
        import torch

        try:
            return torch.amp.GradScaler(self.kind, **kw)
        except (RuntimeError, TypeError, AttributeError):  # older torch_npu: device-specific class
            return _device_module(self.kind).amp.GradScaler(**kw)


def _device_module(kind: str) -> Any:
    import torch

    return getattr(torch, kind)


def import_backend(kind: str) -> None:
    """Import the plug-in module for `kind` (raises ImportError with the real loader message)."""
    mod = SPECS[kind].module
    if mod:
        __import__(mod)


def device_count(kind: str) -> int:
    """Visible devices of `kind` (cpu counts as 1); 0 when the backend cannot be imported."""
    if kind == "cpu":
        return 1
    try:
        import_backend(kind)
        mod = _device_module(kind)
        return int(mod.device_count()) if mod.is_available() else 0
    except Exception:
        return 0


def pick_auto() -> str:
    """npu when torch_npu imports and sees devices, else cuda, else cpu."""
    for kind in ("npu", "cuda"):
        if device_count(kind) > 0:
            return kind
    return "cpu"


def resolve(name: str = "auto", index: int = 0) -> Adapter:
    """Adapter for 'auto' | 'npu' | 'cuda' | 'cpu' (optionally 'npu:3'). Raises RuntimeError when absent."""
    kind, _, idx = name.partition(":")
    if idx:
        index = int(idx)
    if kind == "auto":
        kind = pick_auto()
    if kind not in SPECS:
        raise ValueError(f"unknown device {name!r}; expected one of auto, {', '.join(KINDS)}")
    if kind != "cpu":
        import_backend(kind)  # ImportError text is the evidence the caller reports
        count = device_count(kind)
        if count == 0:
            raise RuntimeError(f"no {kind} device is visible to torch")
        if index >= count:
            raise RuntimeError(f"{kind}:{index} requested but only {count} device(s) visible")
        _device_module(kind).set_device(index)
        return Adapter(SPECS[kind], index, count)
    return Adapter(SPECS["cpu"], 0, 1)
