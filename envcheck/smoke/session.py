"""One smoke session per check run: what to run for a level, each part run once and cached.

Levels: none (nothing), quick (importability + a few fast ops on the auto device), full (whole op
suite + parity + MindSpore + a 2-rank collective), ops (`envcheck smoke ops`), collective
(`envcheck smoke collective`). The EC4xx checks read the parts they report on from here.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from envcheck import subproc
from envcheck.smoke.importability import Importability
from envcheck.smoke.launch import LaunchResult
from envcheck.smoke.suite import DEFAULT_TIMEOUT, SuiteResult

PLANS: dict[str, tuple[str, ...]] = {
    "none": (),
    "quick": ("import", "ops:quick"),
    "full": ("import", "ops:all", "mindspore", "collective"),
    "ops": ("import", "ops:all", "mindspore"),
    "collective": ("import", "collective"),
}
MINDSPORE_CHECK = "import mindspore; mindspore.run_check()"


@dataclass
class Session:
    """Options for the smoke parts plus their cached results."""

    level: str = "quick"
    device: str = "auto"
    timeout: float = DEFAULT_TIMEOUT
    python: str | None = None
    nproc: int | None = None
    sizes: Sequence[int] | None = None
    min_busbw: float | None = None
    iters: int = 5
    cases: Sequence[str] | None = None
    progress: Any = None
    """Callable(Outcome) told about each finished op case (the CLI prints a line on a TTY)."""
    emitted: set[str] = field(default_factory=set)
    interrupted: bool = False
    _cache: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> Session:
        get = options.get
        return cls(level=get("smoke") or "quick", device=get("device") or "auto",
                   timeout=float(get("timeout") or DEFAULT_TIMEOUT), python=get("python"),
                   nproc=get("nproc"), sizes=get("sizes"), min_busbw=get("min_busbw"),
                   iters=int(get("iters") or 5), cases=get("cases"), progress=get("progress"))

    @property
    def plan(self) -> tuple[str, ...]:
        return PLANS.get(self.level, PLANS["quick"])

    def wants(self, part: str) -> bool:
        return any(p == part or p.startswith(part + ":") for p in self.plan)

    def _once(self, key: str, fn: Any) -> Any:
        if key not in self._cache:
            self._cache[key] = fn()
        return self._cache[key]

    def importability(self) -> Importability:
        from envcheck.smoke.importability import probe

        # a hang (no CPU, no reads) is given up after --timeout; an import that is busy (a loaded
        # machine, a cold disk cache) may take up to max(--timeout, 60 s)
        return self._once("import", lambda: probe(self.python, timeout=max(self.timeout, 60.0),
                                                  idle_timeout=self.timeout))

    def torch_usable(self) -> bool:
        return self.importability().torch_ok

    def suite(self) -> SuiteResult | None:
        """The op suite (quick or all cases) on the chosen device; None when torch does not import."""
        if not self.torch_usable():
            return None
        from envcheck.smoke.suite import run_suite

        which: Any = self.cases or ("quick" if "ops:quick" in self.plan else "all")

        def go() -> SuiteResult:
            res = run_suite(which, device=self.device, timeout=self.timeout, python=self.python,
                            on_outcome=self.progress)
            self.interrupted |= res.interrupted
            return res

        return self._once("suite", go)

    def mindspore(self) -> subproc.Completed | None:
        """`mindspore.run_check()` in a child; None when MindSpore is not installed."""
        if not self.importability().installed.get("mindspore"):
            return None
        python = self.python or _sys_executable()
        return self._once("mindspore", lambda: subproc.run([python, "-c", MINDSPORE_CHECK],
                                                           timeout=max(self.timeout, 120.0),
                                                           idle_timeout=self.timeout))

    def collective_kind(self) -> str:
        kind = self.device.split(":")[0]
        return self.importability().auto_kind() if kind == "auto" else kind

    def collective_nproc(self) -> int:
        if self.nproc:
            return int(self.nproc)
        kind = self.collective_kind()
        if self.level == "full" or kind == "cpu":
            return 2
        return max(1, self.importability().device_count(kind))

    def collective(self) -> LaunchResult | None:
        if not self.torch_usable():
            return None
        from envcheck.smoke.launch import launch

        def go() -> LaunchResult:
            res = launch(self.collective_nproc(), self.collective_kind(), sizes=self.sizes, iters=self.iters,
                         timeout=self.timeout, python=self.python)
            self.interrupted |= res.interrupted
            return res

        return self._once("collective", go)


def _sys_executable() -> str:
    import sys

    return sys.executable


def session_for(ctx: Any) -> Session:
    """The Session cached on a check Context (built from ctx.options on first use)."""
    sess = getattr(ctx, "_envcheck_smoke", None)
    if sess is None:
        sess = Session.from_options(ctx.options or {})
        ctx._envcheck_smoke = sess
    return sess

