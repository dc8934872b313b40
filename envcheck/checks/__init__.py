"""All checks, collected from the family modules in explicit tuples (no discovery magic).

Families (code hundreds): EC0xx system, EC1xx compatibility (matrix), EC2xx environment,
EC3xx CANN install / driver / devices, EC4xx smoke tests, EC5xx distributed / cluster,
EC6xx device network, host tuning and containers.
"""
from __future__ import annotations

from envcheck.registry import Check, Retired, index

RETIRED: tuple[Retired, ...] = ()


def all_checks() -> tuple[Check, ...]:
    """Every registered check, in family order. Imports are local to keep start-up cheap."""
    from envcheck.checks import compat, devices, distributed, environment, network, smoke, system

    return (*system.CHECKS, *compat.CHECKS, *environment.CHECKS, *devices.CHECKS,
            *smoke.CHECKS, *distributed.CHECKS, *network.CHECKS)


def by_id() -> dict[str, Check]:
    return index(all_checks())
