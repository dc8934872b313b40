"""The 15 pitfall categories of shared/TAXONOMY.md (hard-coded: the kb ships without shared/)."""
from __future__ import annotations

# id -> site title. Ids are fixed; titles may be reworded.
CATEGORIES: dict[str, str] = {
    "version-mismatch": "Version mismatch",
    "env-not-loaded": "Environment not loaded",
    "device-unavailable": "Device unavailable",
    "op-unsupported": "Operator unsupported",
    "cpu-fallback": "CPU fallback",
    "device-runtime-error": "Device runtime error",
    "rank-config": "Rank configuration",
    "hccl-init": "HCCL initialisation",
    "hccl-timeout": "HCCL timeout",
    "out-of-memory": "Out of memory",
    "numerics": "Numerics",
    "data-pipeline": "Data pipeline",
    "checkpoint": "Checkpoint",
    "performance": "Performance",
    "migration": "Migration",
}

CATEGORY_IDS: tuple[str, ...] = tuple(CATEGORIES)

REQUIRED_SECTIONS: tuple[str, ...] = ("Symptom", "Cause", "Fix", "Verify")
