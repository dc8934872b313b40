"""devices checks."""
from __future__ import annotations

CHECKS: tuple = ()
