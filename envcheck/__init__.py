"""envcheck: a doctor for Huawei Ascend NPU training machines."""
from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "preflight"]


def __getattr__(name: str):  # pragma: no cover - thin lazy re-export
    # preflight pulls in torch.distributed; keep `import envcheck` cheap.
    if name == "preflight":
        from envcheck.preflight import preflight

        return preflight
    raise AttributeError(name)
