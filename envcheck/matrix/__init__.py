"""The compatibility matrix as data: typed rows, lookups, loading with line numbers, lint, tables.

A leaf package: it imports only the foundation modules (errors, versions, resources). Judging
versions against it is the checks' job (`envcheck.checks.compat`); planning changes is `envcheck.plan`.
"""
from __future__ import annotations

from envcheck.matrix.load import load, parse_text
from envcheck.matrix.model import (
                                   Advisory,
                                   CannRelease,
                                   Chip,
                                   Conflict,
                                   HdkRule,
                                   HdkSpec,
                                   Matrix,
                                   MatrixError,
                                   MsPairing,
                                   Pairing,
                                   Source,
)

__all__ = ["MatrixError", "Matrix", "Advisory", "CannRelease", "Pairing", "MsPairing", "HdkRule", "HdkSpec",
           "Chip", "Conflict", "Source", "load", "parse_text"]
