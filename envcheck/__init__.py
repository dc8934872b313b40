"""envcheck: a doctor for Huawei Ascend NPU training machines.

The public facade: ``envcheck.preflight`` / ``envcheck.PreflightError`` for training scripts. Nothing
inside the package imports this module's names; they import the layer they need.
"""
from __future__ import annotations

from envcheck.version import __version__

__all__ = ["__version__", "preflight", "PreflightError"]


def __getattr__(name: str):  # pragma: no cover - thin lazy re-export
    # The preflight lives in envcheck.cluster.preflight (torch is imported only when it runs);
    # resolving it lazily keeps `import envcheck` and `envcheck --help` cheap.
    if name in ("preflight", "PreflightError"):
        from envcheck.cluster import preflight as _pf

        return getattr(_pf, name)
    raise AttributeError(name)
