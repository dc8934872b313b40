"""Locate the shipped data (matrix.yaml, kb/, schemas) in a wheel or a source checkout."""
from __future__ import annotations

from pathlib import Path

PKG = Path(__file__).resolve().parent
_DATA = PKG / "_data"  # filled by hatchling's force-include in a wheel
_REPO = PKG.parent  # a source checkout or editable install


def _find(name: str) -> Path:
    for base in (_DATA, _REPO):
        p = base / name
        if p.exists():
            return p
    return _REPO / name


def matrix_path() -> Path:
    return _find("matrix.yaml")


def kb_dir() -> Path:
    return _find("kb")


def schema_path(name: str) -> Path:
    """JSON Schemas live inside the package: envcheck/schemas/<name>.schema.json."""
    return PKG / "schemas" / f"{name}.schema.json"
