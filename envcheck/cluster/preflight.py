"""`envcheck.preflight()`: a distributed start-up self-check for training scripts.

    import envcheck
    report = envcheck.preflight(timeout=60)   # before or after dist.init_process_group()

Checks this rank's launch variables, counts the ranks that really joined (a wrong WORLD_SIZE
fails in `timeout` seconds, not after the 30-minute store timeout), all-gathers every rank's probe
facts, judges drift across nodes, runs an all_reduce with a timeout, and returns a Report or raises
one PreflightError naming the odd rank / node and the kb entry.
"""
from __future__ import annotations

import atexit
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from envcheck.checks import launchenv as envvars
from envcheck.cluster.rendezvous import RendezvousError, Roll
from envcheck.model import Facts, Finding, Report, Status, ev

# Rendezvous problems that make joining pointless: fail on this rank at once.
_FATAL = ("EC501", "EC502", "EC508")
SLEEP_RANK = "ENVCHECK_TEST_SLEEP_RANK"  # test hook: this rank sleeps before the facts stage
SLEEP_SECONDS = "ENVCHECK_TEST_SLEEP_SECONDS"


class PreflightError(RuntimeError):
    """The preflight found a problem; `report` holds every finding (None if it failed before gathering)."""

    def __init__(self, message: str, report: Report | None = None, code: str = "", kb: tuple[str, ...] = (),
                 ranks: list[int] | None = None) -> None:
        super().__init__(message)
        self.report = report
        self.code = code
        self.kb = kb
        self.ranks = ranks or []


@dataclass
class Session:
    """What a preflight leaves behind for `envcheck cluster`: the roll call, everyone's payloads."""

    rank: int
    world_size: int
    roll: Roll | None
    device: Any
    payloads: list[dict[str, Any]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    facts: Facts = field(default_factory=Facts)
    created_group: bool = False


def preflight(*, strict: bool = False, timeout: float = 60.0, device: str = "auto", backend: str | None = None,
              root: str = "/", matrix: str | None = None) -> Report:
    """Check the distributed job from inside it; return the Report or raise PreflightError.

    strict: warnings raise too. timeout: seconds for the roll call, each stage and the all_reduce.
    device: auto | npu | cuda | cpu (backend hccl / nccl / gloo unless `backend` says otherwise).
    Initialises the default process group (env://, with `timeout`) when it is not initialised yet.
    """
    session = start(timeout=timeout, device=device, backend=backend, root=root, matrix=matrix)
    report = make_report(session)
    bad = {Status.FAIL, Status.ERROR} | ({Status.WARN} if strict else set())
    worst = [f for f in report.findings if f.status in bad]
    if worst:
        f = max(worst, key=lambda f: f.status.severity)
        rank = f.data.get("rank")
        raise PreflightError(message(f, session.rank), report, f.code, f.kb, [rank] if isinstance(rank, int) else [])
    return report


def message(f: Finding, rank: int) -> str:
    """One clear line: what is wrong, the check, and where to read about it."""
    where = f"kb: {', '.join(f.kb)}" if f.kb else f"see `envcheck explain {f.code}`"
    return f"envcheck preflight (rank {rank}): {f.title} [{f.code} {f.slug}; {where}]"


def make_report(session: Session) -> Report:
    from envcheck.checks.runner import finish
    from envcheck.version import __version__

    findings = finish(session.findings, session.facts)  # collapsed, linked and gated as `envcheck` does
    return Report(facts=session.facts, findings=findings, envcheck_version=__version__, command="preflight")


def _fail_early(err: RendezvousError | envvars.Issue, rank: int | None) -> PreflightError:
    from envcheck.checks import finding
    from envcheck.checks.runner import link

    code = err.code
    text = str(err) if isinstance(err, RendezvousError) else err.message
    f = link(finding(code, Status.FAIL, text))
    ranks = err.ranks if isinstance(err, RendezvousError) else []
    return PreflightError(message(f, rank if rank is not None else -1), None, code, f.kb, ranks)


def _collective_error(code: str, what: str, exc: BaseException, rank: int) -> PreflightError:
    from envcheck.checks import finding
    from envcheck.checks.runner import link

    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
    f = link(finding(code, Status.FAIL, f"{what}: {first}", evidence=(ev(type(exc).__name__, str(exc)[-2000:]),)))
    return PreflightError(message(f, rank), None, code, f.kb, [rank])


def start(*, timeout: float = 60.0, device: str = "auto", backend: str | None = None, root: str = "/",
          matrix: str | None = None, env: Mapping[str, str] | None = None) -> Session:
    """Run the preflight stages on this rank and return the Session (raise PreflightError early)."""
    import torch.distributed as dist

    env = dict(os.environ if env is None else env)
    initialised = dist.is_available() and dist.is_initialized()
    if initialised:
        env.setdefault("RANK", str(dist.get_rank()))
        env.setdefault("WORLD_SIZE", str(dist.get_world_size()))
    issues = envvars.check_env(env, None, require=not initialised)
    fatal = [i for i in issues if i.severity == "fail" and i.code in _FATAL]
    if fatal:
        raise _fail_early(fatal[0], _int(env.get("RANK")))
    rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
    facts = _probe(root, timeout, env)
    from envcheck.checks.distributed import node_devices

    issues = [i for i in envvars.check_env(env, node_devices(facts), require=not initialised)
              if i.code not in _FATAL or i.severity != "fail"]
    adapter = _device(device, env)
    session = Session(rank, world, None, adapter, facts=facts)
    try:
        session.roll, session.created_group = _rendezvous(env, rank, world, timeout, adapter, backend, initialised)
        _gather(session, env, issues, matrix)
        session.findings.append(_all_reduce(session))
    except RendezvousError as exc:
        raise _fail_early(exc, rank) from None
    session.findings += _ranktable(facts, matrix)
    return session


def _int(v: str | None) -> int | None:
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


def _probe(root: str, timeout: float, env: Mapping[str, str]) -> Facts:
    from envcheck import probe

    facts = probe.collect(root=root, timeout=min(timeout, 10.0))
    facts.env = {**(facts.env or {}), **{k: env[k] for k in envvars.DIST_VARS if env.get(k)}}
    return facts


def _device(device: str, env: Mapping[str, str]) -> Any:
    from envcheck.smoke import devices

    local = _int(env.get("LOCAL_RANK")) or 0
    try:
        return devices.resolve(device, index=local)
    except (ImportError, RuntimeError, ValueError) as exc:
        raise PreflightError(f"envcheck preflight: device {device!r} unusable on local rank {local}: {exc}",
                             code="EC503") from None


def _rendezvous(env: Mapping[str, str], rank: int, world: int, timeout: float, adapter: Any,
                backend: str | None, initialised: bool) -> tuple[Roll, bool]:
    import torch.distributed as dist

    from envcheck.cluster import rendezvous as rv

    if initialised:
        base = dist.distributed_c10d._get_default_store()
    else:
        base = rv.connect(env, rank, world, timeout)
    ns = rv.namespace(env)
    roll = rv.join(dist.PrefixStore(ns, base), rank, world, rv.whoami(env, rank), timeout)
    if initialised:
        return roll, False
    name = backend or adapter.backend
    try:
        dist.init_process_group(name, store=dist.PrefixStore(ns + "/pg", base), rank=rank, world_size=world,
                                timeout=timedelta(seconds=timeout))
    except Exception as exc:  # HCCL / NCCL / gloo set-up errors: their text is what the kb matches
        raise _collective_error("EC410", f"init_process_group({name!r}) failed on rank {rank}", exc, rank) from None
    atexit.register(_destroy_group)
    return roll, True


def _destroy_group() -> None:
    """At exit, tear down the group preflight created: a live gloo group aborts the interpreter at exit."""
    import torch.distributed as dist

    if dist.is_initialized():
        try:
            dist.destroy_process_group()
        except Exception:  # pragma: no cover - best effort at interpreter exit
            pass


def stage(roll: Roll, name: str, timeout: float | None = None) -> None:
    """Barrier on the store: raises PreflightError (EC507) naming the ranks that did not arrive in time."""
    try:
        roll.arrive(name, timeout)
    except RendezvousError as exc:
        raise _fail_early(exc, roll.rank) from None


def _gather(session: Session, env: Mapping[str, str], issues: list, matrix: str | None) -> None:
    from envcheck.cluster import gather
    from envcheck.cluster.comm import all_gather_json

    if env.get(SLEEP_RANK) == str(session.rank):
        time.sleep(float(env.get(SLEEP_SECONDS) or 3600))
    assert session.roll is not None
    stage(session.roll, "facts")
    mine = gather.payload(session.rank, session.roll.who.get(session.rank, {}), env, session.facts, issues,
                          str(session.device))
    try:
        everyone = all_gather_json(mine, session.device.torch_device)
    except Exception as exc:
        raise _collective_error("EC410", f"all-gather of every rank's facts failed on rank {session.rank}", exc,
                                session.rank) from None
    session.payloads = everyone
    session.findings += gather.analyse(everyone, session.world_size, matrix)


def _all_reduce(session: Session) -> Finding:
    import torch
    import torch.distributed as dist

    from envcheck.cluster.gather import finding

    assert session.roll is not None
    stage(session.roll, "all_reduce")
    world = session.world_size
    t0 = time.perf_counter()
    try:
        x = torch.full((1024,), float(session.rank + 1), device=session.device.torch_device)
        dist.all_reduce(x)
        session.device.synchronize()
        got = float(x[0].item())
    except Exception as exc:  # the collective itself failed (HCCL error text is the evidence)
        first_line = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        return finding("EC410", Status.FAIL, f"all_reduce across {world} ranks failed: {first_line}",
                       evidence=[ev("all_reduce", str(exc)[-2000:])])
    ms = (time.perf_counter() - t0) * 1000
    want = world * (world + 1) / 2
    if got != want:
        return finding("EC411", Status.FAIL, f"all_reduce across {world} ranks returned {got:g}, expected {want:g}")
    return finding("EC411", Status.OK, f"all_reduce across {world} ranks correct ({ms:.1f} ms on rank {session.rank})",
                   data={"ms": ms})


def _ranktable(facts: Facts, matrix: str | None) -> list[Finding]:
    if not (facts.env or {}).get("RANK_TABLE_FILE"):
        return []
    from envcheck.checks.distributed import ranktable_valid
    from envcheck.checks.registry import Context
    from envcheck.checks.runner import run_check

    return run_check(ranktable_valid, Context(facts=facts, matrix_path=matrix))

