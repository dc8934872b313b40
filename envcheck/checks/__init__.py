"""All checks, collected from the family modules in explicit tuples (no discovery magic).

Families (code hundreds): EC0xx system, EC1xx compatibility (matrix), EC2xx environment,
EC3xx CANN install / driver / devices, EC4xx smoke tests, EC5xx distributed / cluster,
EC6xx device network, host tuning and containers.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from envcheck.checks import registry
from envcheck.checks.registry import Check, Context, Retired, index
from envcheck.checks.runner import run_check
from envcheck.matrix import Matrix
from envcheck.model import Facts, Finding, Status

RETIRED: tuple[Retired, ...] = ()


def all_checks() -> tuple[Check, ...]:
    """Every registered check, in family order. Imports are local to keep start-up cheap."""
    from envcheck.checks import (
        compat,
        devices,
        distributed,
        environment,
        network,
        smoke,
        system,
    )

    return (*system.CHECKS, *compat.CHECKS, *environment.CHECKS, *devices.CHECKS,
            *smoke.CHECKS, *distributed.CHECKS, *network.CHECKS)


_BY_ID: dict[str, Check] = {}


def by_id() -> dict[str, Check]:
    """Code and slug -> Check (built once per process)."""
    if not _BY_ID:
        _BY_ID.update(index(all_checks()))
    return _BY_ID


def finding(code: str, status: Status, title: str, **kw: Any) -> Finding:
    """A finding for a registered check, built through its handle: code, slug and section come from the
    registry only (cluster code and the smoke driver use this instead of writing slugs themselves)."""
    try:
        chk = by_id()[code]
    except KeyError:
        raise ValueError(f"{code} is not a registered check") from None
    return chk.finding(status, title, **kw)


def to_run(smoke_level: str | None, select: Sequence[str] = (), ignore: Sequence[str] = ()) -> list[Check]:
    """The checks a run executes: the default ones plus the EC4xx checks its smoke level plans (every
    check when --select names it), then --select / --ignore, applied once."""
    from envcheck.checks import smoke

    planned = set(smoke.planned(smoke_level))
    chosen = [c for c in all_checks() if c.default or c.code in planned or select]
    return registry.select(chosen, select, ignore)


def judge_compat(facts: Facts, matrix: Matrix | None = None, matrix_path: str | None = None) -> list[Finding]:
    """Run the compatibility family (EC1xx) over `facts`: the one place that does it (`matrix check`,
    `matrix suggest`, the cluster drift table)."""
    from envcheck.checks import compat

    ctx = Context(facts=facts, matrix_path=matrix_path, loaded_matrix=matrix)
    return [f for c in compat.CHECKS for f in run_check(c, ctx)]


def known_codes() -> set[str]:
    """Codes of every registered check plus retired codes (tombstones stay valid in kb entries)."""
    return {c.code for c in by_id().values()} | {r.code for r in RETIRED}
