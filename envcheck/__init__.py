"""envcheck: a doctor for Huawei Ascend NPU training machines."""
from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "preflight", "PreflightError"]


def __getattr__(name: str):  # pragma: no cover - thin lazy re-export
    # preflight pulls in torch.distributed; keep `import envcheck` cheap.
    # Importing the submodule makes `envcheck.preflight` the module, so the module itself is
    # callable (envcheck/preflight.py): `envcheck.preflight(...)` works whatever was imported first.
    if name in ("preflight", "PreflightError"):
        import envcheck.preflight as _pf

        return _pf if name == "preflight" else _pf.PreflightError
    raise AttributeError(name)
