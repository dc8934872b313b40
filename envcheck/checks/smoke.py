"""EC4xx smoke tests: importability, operators, parity, MindSpore and collectives, run in children.

The smoke parts run once per Context (the `SmokeSession` in `ctx.smoke`, built from the options on
first use) and each EC4xx check reports its own code from that session. Which checks a level runs is
data (`PLANNED`): `--no-smoke` runs EC401 alone (one skip line), the default run importability plus a
quick op subset, --full everything; `--select EC403` runs EC403 on its own. A check whose part cannot
run because an earlier one failed skips and names it ("because EC401 ...").
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

from envcheck.checks.registry import Check, Context, check
from envcheck.model import Finding, ev
from envcheck.smoke.session import Session

SECTION = "Smoke tests"
KB_CANN_ENV = "cann-env-not-loaded"
CANN_CAUSES = ("EC301", "EC201")
"""A missing CANN library is explained by no CANN (EC301) or CANN not loaded (EC201): one cause, one fix."""
AUTOLOAD_DETAIL = (
    "torch (>= 2.5) imports every package registered under its `torch.backends` entry point when "
    "`import torch` runs; torch_npu registers itself there (`torch_npu = torch_npu:_autoload`). So "
    "with torch_npu installed, a torch_npu that cannot load its CANN libraries takes `import torch` "
    "down with it ('Failed to load the backend extension: torch_npu'). Setting "
    "TORCH_DEVICE_BACKEND_AUTOLOAD=0 stops the auto-loading: torch then imports, and torch_npu's own "
    "error shows when it is imported explicitly. The fix is to load the CANN environment (source "
    "set_env.sh) before starting Python, or to uninstall torch_npu on a machine without CANN.")
FIX_SET_ENV = ("source /usr/local/Ascend/ascend-toolkit/set_env.sh  (or <CANN home>/set_env.sh) before "
               "starting Python; meanwhile TORCH_DEVICE_BACKEND_AUTOLOAD=0 lets plain torch import")
FIX_FALLBACK = ("rewrite the code path with operators the NPU supports natively (e.g. masked_fill or "
                "slice assignment instead of index_put_ / advanced indexing), or update CANN and "
                "torch_npu; TORCH_NPU_FALLBACK_CPU_DISABLE=1 turns silent fallbacks into errors")
Body = Callable[[Check, Session], Iterator[Finding]]


NPU_LIB_DETAIL = (
    "torch_npu's extension links against CANN's shared libraries (libhccl.so, libascendcl.so, "
    "libge_runner.so, ...). They are found through LD_LIBRARY_PATH, which CANN's set_env.sh sets; "
    "the loader names only the first library it misses.")


def _tail(text: str | None, n: int = 40) -> str:
    return "\n".join((text or "").rstrip().splitlines()[-n:])


def _exceptions(tb: str | None) -> str:
    """The exception lines of a (chained) traceback, e.g. the ImportError and the RuntimeError."""
    lines = [ln for ln in (tb or "").splitlines() if ln and not ln[0].isspace()
             and not ln.startswith(("Traceback ", "The above exception", "During handling"))]
    return "\n".join(lines)


# Which EC4xx checks each smoke level runs (the level is --no-smoke / default / --full, or the
# `envcheck smoke ops|collective` suite).
PLANNED: dict[str, tuple[str, ...]] = {
    "none": ("EC401",),
    "quick": ("EC401", "EC402", "EC403", "EC404", "EC405", "EC406"),
    "ops": ("EC401", "EC402", "EC403", "EC404", "EC405", "EC406", "EC407", "EC408"),
    "collective": ("EC401", "EC402", "EC410", "EC411", "EC412", "EC413"),
    "full": ("EC401", "EC402", "EC403", "EC404", "EC405", "EC406", "EC407", "EC408",
             "EC410", "EC411", "EC412", "EC413"),
}


def planned(level: str | None) -> tuple[str, ...]:
    """The EC4xx codes a smoke level runs."""
    return PLANNED.get(level or "quick", PLANNED["quick"])


def session(ctx: Context) -> Session:
    """The smoke session of this run (built from ctx.options on first use; parts are cached in it)."""
    if ctx.smoke is None:
        ctx.smoke = Session.from_options(ctx.options or {})
    return ctx.smoke


def _blocked(code: str, s: Session) -> str | None:
    """Why this code's part cannot run, naming the part that failed first; None when it can."""
    if code in ("EC401", "EC402"):
        return None
    if s.interrupted:
        return "not run: interrupted (Ctrl-C) before this part started"
    if not s.torch_usable():
        return "not run because torch does not import in the target interpreter (EC401)"
    if "EC403" <= code <= "EC407" and no_npu_here(s):
        return ("no NPU here (torch_npu does not import or sees no device): the operator tests would run on "
                "the CPU and test nothing about the NPU; `envcheck smoke --device cpu` runs them anyway")
    if "EC404" <= code <= "EC407":
        suite = s.suite()
        if suite is None or suite.fatal:
            return "not run because the operator suite could not start (EC403)"
    return None


def no_npu_here(s: Session) -> bool:
    """The default run (`envcheck`, quick level, device auto) would only reach the CPU: skip its operator
    tests instead of reporting green ticks about the CPU. `envcheck smoke` and --device run them."""
    return s.level == "quick" and s.device == "auto" and s.importability().auto_kind() == "cpu"


def _smoke_check(code: str, slug: str, summary: str, body: Body, doc: str) -> Check:
    """Declare one EC4xx check: it reports its own code from the shared smoke session."""
    def run(c: Check, ctx: Context) -> Iterator[Finding]:
        if (ctx.options or {}).get("replay"):
            yield c.skip("judging a saved snapshot (--facts): smoke tests run only on the live machine")
            return
        s = session(ctx)
        if not s.plan:
            yield c.skip("smoke tests skipped (--no-smoke)")
            return
        why = _blocked(c.code, s)
        if why:
            yield c.skip(why)
            return
        yield from body(c, s)

    run.__doc__ = doc
    run.__name__ = slug.replace("-", "_")
    requires = () if code in ("EC401", "EC402") else ("EC401",)
    return check(code, slug, summary, section=SECTION, default=code == "EC401", requires=requires)(run)


# ---- EC401 / EC402: importability ------------------------------------------------------------

def _torch_body(c: Check, s: Session) -> Iterator[Finding]:
    imp = s.importability()
    att, torch = imp.plain, imp.plain.module("torch")
    probe_src = f"{imp.python} -c 'import torch'"
    if att.start_error:
        yield c.error(f"could not start {imp.python}: {att.start_error}")
    elif att.timed_out:
        yield c.fail(f"`import torch` did not finish within the timeout in {imp.python}",
                     evidence=[ev(f"{probe_src} (stderr)", _tail(att.stderr))])
    elif not att.info:
        yield c.fail(f"`import torch` crashed {imp.python} ({att.crashed or f'exit status {att.rc}'})",
                     evidence=[ev(f"{probe_src} (stderr)", _tail(att.stderr))])
    elif not imp.installed.get("torch"):
        yield c.skip(f"torch is not installed in {imp.python}")
    elif torch and torch.get("ok"):
        yield c.ok(f"torch {torch.get('version')} imports ({torch.get('seconds', 0):.1f} s)")
    else:
        yield _torch_failed(c, imp, probe_src)


def _torch_failed(c: Check, imp: Any, probe_src: str) -> Finding:
    from envcheck.smoke.importability import missing_library

    torch = imp.plain.module("torch") or {}
    evidence = [ev(probe_src, _exceptions(torch.get("traceback")) or torch.get("error")),
                ev(f"{probe_src} (traceback)", _tail(torch.get("traceback"), 60))]
    retry = imp.no_autoload.module("torch") if imp.no_autoload else None
    if retry is not None:
        said = "imports" if retry.get("ok") else f"also fails: {retry.get('error')}"
        evidence.append(ev("TORCH_DEVICE_BACKEND_AUTOLOAD=0 python -c 'import torch'", f"torch {said}"))
    npu = imp.torch_npu
    if npu and not npu.get("ok"):
        evidence.append(ev("TORCH_DEVICE_BACKEND_AUTOLOAD=0 python -c 'import torch_npu'",
                           _exceptions(npu.get("traceback")) or npu.get("error")))
    lib = missing_library("\n".join(e.text for e in evidence))
    autoload = "backend extension" in (torch.get("error") or "")
    title = f"`import torch` fails: {torch.get('error')}"
    if autoload and lib:
        title = (f"`import torch` fails: torch auto-loads torch_npu, which cannot load {lib} "
                 "(CANN environment not loaded)")
    return c.fail(title, detail=AUTOLOAD_DETAIL if autoload or imp.installed.get("torch_npu") else "",
                  evidence=evidence, fix=FIX_SET_ENV if lib else "", kb=(KB_CANN_ENV,) if lib else (),
                  data={"missing_library": lib, "autoload": autoload},
                  depends=CANN_CAUSES if lib else ())


def _torch_npu_body(c: Check, s: Session) -> Iterator[Finding]:
    from envcheck.smoke.importability import missing_library

    imp = s.importability()
    npu = imp.torch_npu
    if not imp.installed.get("torch_npu") and s.device.split(":")[0] == "npu":
        torch = (imp.plain.module("torch") or {}).get("version") or ""
        base = torch.split("+")[0]
        yield c.fail(f"--device npu, but torch_npu is not installed in {imp.python}",
                     fix="pip install the torch_npu build for your torch and CANN: envcheck matrix suggest"
                         + (f" --torch {base}" if base else ""),
                     data={"failure": "torch-npu-not-installed", "device": "npu"})
    elif not imp.installed.get("torch_npu"):
        yield c.skip("torch_npu is not installed")
    elif npu is None:
        yield c.skip("torch_npu was not imported: torch itself does not import (EC401)")
    elif npu.get("ok"):
        count = imp.plain.info.get("npu_count")
        seen = f"{count} NPU(s) visible" if count is not None else imp.plain.info.get("npu_error", "")
        yield c.ok(f"torch_npu {npu.get('version')} imports; {seen}")
    else:
        err = npu.get("traceback") or npu.get("error") or ""
        lib = missing_library(err)
        yield c.fail(f"`import torch_npu` fails: {npu.get('error')}", detail=NPU_LIB_DETAIL if lib else "",
                     evidence=[ev("python -c 'import torch_npu'", _exceptions(err) or err),
                               ev("python -c 'import torch_npu' (traceback)", _tail(err, 40))],
                     fix=FIX_SET_ENV if lib else "", kb=(KB_CANN_ENV,) if lib else (),
                     data={"missing_library": lib}, depends=(*CANN_CAUSES, "EC401") if lib else ("EC401",))


# ---- EC403..EC407: operator suite --------------------------------------------------------------

def _suite(c: Check, s: Session) -> Any:
    """The suite result, or a skip / fail Finding explaining why there is none."""
    suite = s.suite()
    if suite is None:
        return c.skip("operator tests not run: torch does not import (EC401)")
    if suite.fatal:
        if c.code != "EC403":
            return c.skip(f"operator tests not run on {s.device}: the smoke worker could not start")
        return c.fail(f"the smoke worker could not start on device '{s.device}': {suite.fatal}",
                      evidence=[ev("smoke worker", _tail(suite.fatal_traceback, 40))],
                      data={"failure": "smoke-worker-failed", "device": s.device}, depends=("EC402", "EC401"))
    return suite


def _outcome_evidence(o: Any) -> list:
    out = [ev(o.case, o.error)] if o.error else []
    if o.traceback:
        out.append(ev(f"{o.case} traceback", _tail(o.traceback, 30)))
    if o.stderr_tail.strip():
        out.append(ev(f"{o.case} stderr (tail)", _tail(o.stderr_tail, 30)))
    return out


def _op_failed_body(c: Check, s: Session) -> Iterator[Finding]:
    suite = _suite(c, s)
    if isinstance(suite, Finding):
        yield suite
        return
    ops = [o for o in suite.outcomes if o.case != "transformer_parity"]
    bad = [o for o in ops if o.status in ("fail", "error")]
    for o in bad:
        yield c.fail(f"{o.case} on {suite.device}: {o.error}", evidence=_outcome_evidence(o),
                     data={"case": o.case, "max_err": o.max_err, "tol": o.tol, "device": o.result_device})
    skipped = [o.case for o in ops if o.status == "not-run"]
    if skipped and suite.interrupted:  # the user stopped the run: say what did not finish, visibly
        yield c.warn(f"{len(skipped)} operator test(s) interrupted: {', '.join(skipped)}")
    elif skipped:
        yield c.skip(f"{len(skipped)} operator test(s) not run: {', '.join(skipped)}")
    passed = [o for o in ops if o.status == "ok"]
    if passed and not bad:
        worst = max(passed, key=lambda o: o.max_err or 0.0)
        table = "\n".join(f"{o.case:<28} max err {o.max_err or 0:.2e}  tol {o.tol or 0:.0e}  {o.seconds * 1e3:7.1f} ms"
                          for o in passed)
        yield c.ok(f"{len(passed)} operator tests match the float64 CPU reference on {suite.device} "
                   f"(worst: {worst.case} {worst.max_err or 0:.1e})", detail=table,
                   data={"device": suite.device, "torch": suite.torch, "startup_seconds": suite.startups,
                         "outcomes": [o.to_dict() for o in passed]})


def _op_crashed_body(c: Check, s: Session) -> Iterator[Finding]:
    suite = _suite(c, s)
    if isinstance(suite, Finding):
        yield suite
        return
    crashed = [o for o in suite.outcomes if o.status == "crash"]
    for o in crashed:
        yield c.fail(f"{o.case} crashed the smoke worker ({o.signal or 'non-zero exit'}) on {suite.device}",
                     detail="The remaining tests ran in a fresh worker.", evidence=_outcome_evidence(o),
                     data={"case": o.case, "signal": o.signal})
    if not crashed:
        yield c.ok("no operator test crashed the worker")


def _op_timeout_body(c: Check, s: Session) -> Iterator[Finding]:
    suite = _suite(c, s)
    if isinstance(suite, Finding):
        yield suite
        return
    hung = [o for o in suite.outcomes if o.status == "timeout"]
    for o in hung:
        yield c.fail(f"{o.case} hung on {suite.device}: killed after {s.timeout:g} s",
                     detail="The remaining tests ran in a fresh worker.", evidence=_outcome_evidence(o),
                     fix="raise --timeout if the device is just slow; otherwise see the stderr tail",
                     data={"case": o.case, "timeout": s.timeout})
    if not hung:
        yield c.ok(f"no operator test hung (timeout {s.timeout:g} s per test)")


def _fallback_body(c: Check, s: Session) -> Iterator[Finding]:
    suite = _suite(c, s)
    if isinstance(suite, Finding):
        yield suite
        return
    seen = [("start-up", fb) for fb in suite.startup_fallbacks]
    seen += [(o.case, fb) for o in suite.outcomes for fb in o.fallbacks]
    for case, fb in seen:
        yield c.warn(f"{fb['op']} fell back to the CPU (in {case}): slow, and data shuttles between host "
                     "and device on every call", evidence=[ev(f"{case} stderr", fb["line"])], fix=FIX_FALLBACK,
                     data={"op": fb["op"], "case": case, "kind": fb["kind"]})
    if not seen and str(suite.device).startswith("cpu"):
        yield c.skip("ran on the CPU: there is no device for an operator to fall back from")
    elif not seen:
        yield c.ok(f"no operator fell back to the CPU on {suite.device}", data={"device": suite.device})


def _parity_body(c: Check, s: Session) -> Iterator[Finding]:
    suite = _suite(c, s)
    if isinstance(suite, Finding):
        yield suite
        return
    o = next((o for o in suite.outcomes if o.case == "transformer_parity"), None)
    if o is None or o.status == "not-run":
        yield c.skip("parity run not run")
        return
    dev, cpu = o.data.get("device_losses") or [], o.data.get("cpu_losses") or []
    if str(suite.device).startswith("cpu"):  # the curves stay in data: the harness itself ran
        yield c.skip("ran on the CPU: the parity run compares a device with the CPU, here the CPU with itself",
                     data={"cpu_losses": cpu, "device_losses": dev})
        return
    curve = "\n".join(f"step {i + 1:>2}  {suite.device}: {a:.6f}  cpu: {b:.6f}"
                      for i, (a, b) in enumerate(zip(dev, cpu)))
    data = {"device": suite.device, "device_losses": dev, "cpu_losses": cpu, "max_rel_diff": o.max_err, "tol": o.tol}
    if o.status == "ok":
        yield c.ok(f"Transformer block loss curves agree over {len(dev)} steps ({suite.device} vs cpu, worst "
                   f"relative difference {o.max_err or 0:.1e}; loss {cpu[0]:.3f} -> {cpu[-1]:.3f})",
                   detail=curve, data=data)
    else:
        yield c.fail(f"parity run on {suite.device}: {o.error}", detail=curve,
                     evidence=_outcome_evidence(o) + ([ev("loss curves", curve)] if curve else []), data=data)


# ---- EC408: MindSpore -------------------------------------------------------------------------

def _mindspore_body(c: Check, s: Session) -> Iterator[Finding]:
    from envcheck.smoke.session import MINDSPORE_CHECK

    done = s.mindspore()
    if done is None:
        yield c.skip("MindSpore is not installed")
        return
    out = _tail(done.stdout + "\n" + done.stderr, 40)
    if done.ok:
        yield c.ok("mindspore.run_check() passed", evidence=[ev(MINDSPORE_CHECK, out)])
        return
    why = "timed out" if done.timed_out else (done.error or f"exit status {done.rc}")
    yield c.fail(f"mindspore.run_check() failed ({why})", evidence=[ev(MINDSPORE_CHECK, out)])


# ---- EC410..EC413: collectives ----------------------------------------------------------------


def _coll(c: Check, s: Session) -> Any:
    res = s.collective()
    return c.skip("collective tests not run: torch does not import (EC401)") if res is None else res


def _who(st: Any) -> str:
    return f"rank {st.rank} ({st.device}, host {st.host})"


def _rank_evidence(res: Any, ranks: Any) -> list:
    out = []
    for st in ranks:
        lines = ([f"last phase: {st.phase}"] + ([st.error] if st.error else [])
                 + [_tail(st.traceback or st.stderr_tail, 20)])
        out.append(ev(_who(st), "\n".join(x for x in lines if x)))
    return out


def _init_body(c: Check, s: Session) -> Iterator[Finding]:
    res = _coll(c, s)
    if isinstance(res, Finding):
        yield res
        return
    bad = [st for st in res.ranks if st.rank in res.failed and "initialised" not in st.phases]
    for st in bad:
        yield c.fail(f"{_who(st)} failed to initialise {res.backend}: {st.error}", evidence=_rank_evidence(res, [st]),
                     data={"rank": st.rank, "device": st.device, "host": st.host})
    if bad:
        return
    pending = [st.rank for st in res.ranks if "initialised" not in st.phases]
    if not pending:
        yield c.ok(f"{res.world} ranks initialised {res.backend} on {res.device}", data={"device": res.device})
    else:
        why = "hung (EC412)" if res.hung else ("interrupted" if res.interrupted else "stopped")
        yield c.skip(f"rank(s) {', '.join(map(str, pending))} did not finish process-group set-up: {why}")


def _wrong_body(c: Check, s: Session) -> Iterator[Finding]:
    res = _coll(c, s)
    if isinstance(res, Finding):
        yield res
        return
    failed_later = [st for st in res.ranks if st.rank in res.failed and "initialised" in st.phases]
    for st in failed_later:
        yield c.fail(f"{_who(st)} failed during {st.phases[-2] if len(st.phases) > 1 else st.phase}: {st.error}",
                     evidence=_rank_evidence(res, [st]), data={"rank": st.rank, "device": st.device, "host": st.host})
    summary = res.summary or {"checks": [], "sweep": []}
    wrong = [chk for chk in summary["checks"] if not chk["ok"]]
    for chk in wrong:
        errs = "\n".join(f"rank {r}: {e}" for r, e in chk["errors"].items())
        yield c.fail(f"{chk['op']} wrong or failed on rank(s) {', '.join(map(str, chk['failed_ranks']))} "
                     f"of {res.world}", evidence=[ev(chk["op"], errs)], data=chk)
    bad_rows = [r for r in summary["sweep"] if not r["ok"]]
    for r in bad_rows:
        yield c.fail(f"{r['op']} at {r['bytes']} bytes gave a wrong result in the sweep", data=r)
    if summary["checks"] and not (failed_later or wrong or bad_rows):
        ranks_seen = len([st for st in res.ranks if st.result])
        notes = sorted({chk["note"] for chk in summary["checks"] if chk.get("note")})
        yield c.ok(f"{', '.join(chk['op'] for chk in summary['checks'])} correct on every rank "
                   f"({ranks_seen}/{res.world} ranks, {res.backend})", detail="\n".join(notes))


def _hung_body(c: Check, s: Session) -> Iterator[Finding]:
    res = _coll(c, s)
    if isinstance(res, Finding):
        yield res
        return
    by_rank = {st.rank: st for st in res.ranks}
    others = [st for st in res.ranks if st.rank not in res.hung]
    for r in res.hung:
        st = by_rank[r]
        waiting = ", ".join(f"rank {o.rank} in '{o.phase}'" for o in others)
        yield c.fail(f"{_who(st)} hung: no progress for {res.timeout:g} s, last reported '{st.phase}'; all "
                     "ranks were killed", detail="Ranks still waiting for it: " + waiting,
                     evidence=_rank_evidence(res, [st] + others),
                     data={"rank": st.rank, "device": st.device, "host": st.host, "phase": st.phase})
    if not res.hung:
        yield c.ok(f"no rank hung ({res.world} ranks, stall timeout {res.timeout:g} s)")


def _busbw_body(c: Check, s: Session) -> Iterator[Finding]:
    from envcheck.smoke.bandwidth import average_busbw, format_table, human_size

    res = _coll(c, s)
    if isinstance(res, Finding):
        yield res
        return
    rows = (res.summary or {}).get("sweep") or []
    if not rows:
        yield c.skip("no bandwidth sweep ran")
        return
    table = format_table(rows)
    ops = list(dict.fromkeys(r["op"] for r in rows))
    avg = {op: average_busbw(rows, op) or 0.0 for op in ops}
    span = f"{human_size(min(r['bytes'] for r in rows))}..{human_size(max(r['bytes'] for r in rows))}"
    data = {"world": res.world, "backend": res.backend, "rows": rows, "avg_busbw": avg, "min_busbw": s.min_busbw}
    below = [op for op in ops if s.min_busbw is not None and avg[op] < s.min_busbw]
    for op in below:
        yield c.fail(f"{op} average busbw {avg[op]:.3f} GB/s is below the floor {s.min_busbw:g} GB/s "
                     f"({res.world} ranks, {res.backend}, {span})", detail=table, data=data)
    if not below:
        floor = f" (floor {s.min_busbw:g} GB/s)" if s.min_busbw is not None else ""
        yield c.ok(f"bandwidth sweep {span} on {res.world} ranks{floor}: "
                   + ", ".join(f"{op} {avg[op]:.2f}" for op in ops) + " GB/s avg busbw", detail=table, data=data)


# ---- declarations ---------------------------------------------------------------------------

SIBLINGS = (
    _smoke_check("EC402", "torch-npu-import-failed", "torch_npu imports in the target interpreter", _torch_npu_body,
             """`import torch_npu` in the target interpreter, in a child with a timeout.

    Skips when torch_npu is not installed. A missing CANN library (libhccl.so, libascendcl.so, ...)
    means the CANN environment was not loaded (set_env.sh); the finding links that kb entry. When
    `import torch` already fails (EC401), torch_npu is imported with TORCH_DEVICE_BACKEND_AUTOLOAD=0."""),
    _smoke_check("EC403", "op-failed", "operator smoke tests match a float64 CPU reference", _op_failed_body,
             """Operators (matmul fp32/fp16/bf16, conv2d, layer_norm, softmax, GELU, embedding,
    cross-entropy backward, AdamW step, autocast + GradScaler, index_put_, scatter_, masked_fill,
    advanced indexing, a custom autograd.Function) run on the device in an isolated worker; each
    result must live on the device and match a float64 CPU reference within its dtype's tolerance.
    Fails per operator that raised, returned a wrong result, or left its result on the CPU."""),
    _smoke_check("EC404", "op-crashed", "no operator smoke test crashes the process", _op_crashed_body,
             """An operator test that kills its worker (segfault, abort) is reported with the signal
    and the tail of stderr; the remaining tests continue in a fresh worker."""),
    _smoke_check("EC405", "op-timeout", "no operator smoke test hangs", _op_timeout_body,
             """An operator test that does not finish within --timeout seconds is killed with its
    whole process group; the remaining tests continue in a fresh worker."""),
    _smoke_check("EC406", "cpu-fallback", "no operator silently falls back to the CPU", _fallback_body,
             """Scans the worker's stderr for the CPU-fallback warnings that torch_npu (and PyTorch's
    PrivateUse1 fallback) print straight to stderr ("The operator 'aten::...' is not currently
    supported on the NPU backend and will fall back to run on the CPU") and warns per operator.
    A fallback is slow and silent: the field report's worst pitfall (a loss that never went down)."""),
    _smoke_check("EC407", "loss-parity-mismatch", "a tiny Transformer trains the same on the device and the CPU",
             _parity_body,
             """A tiny Transformer block is trained for 20 steps from one seed on the device and on
    the CPU; the loss curves must agree step by step within a relative tolerance. "Compare the loss
    curves before you trust a migration", as one command. Runs with --full / `envcheck smoke ops`."""),
    _smoke_check("EC408", "mindspore-check-failed", "mindspore.run_check() passes", _mindspore_body,
             """When MindSpore is installed in the target interpreter, its own `mindspore.run_check()`
    runs in a child with a timeout; skipped otherwise."""),
    _smoke_check("EC410", "collective-init-failed", "every local rank initialises the process group", _init_body,
             """`envcheck smoke collective` (and --full) spawns N local ranks (env://, 127.0.0.1, a free
    port) and calls init_process_group (hccl / nccl / gloo) with a timeout. Fails naming each rank
    (rank, device, host) that could not set up its device or process group, with its error."""),
    _smoke_check("EC411", "collective-wrong-result", "collectives give the right result on every rank",
             _wrong_body,
             """all_reduce, all_gather, broadcast, reduce_scatter and barrier with exact integer-valued
    data; the result of EVERY rank is checked (hccl_test's table shows only the root's). Fails per
    collective naming the ranks with a wrong result or an error."""),
    _smoke_check("EC412", "collective-rank-hung", "no rank hangs in a collective", _hung_body,
             """Every rank reports its progress; when no rank progresses for --timeout seconds, the
    ranks that are furthest behind are named (rank, device, host) as hung and every rank is killed,
    so the run ends within the timeout instead of waiting for HCCL's 1800 s default."""),
    _smoke_check("EC413", "busbw-below-floor", "collective bus bandwidth is above the floor", _busbw_body,
             """A size sweep (1 KiB..64 MiB by default) reports time, algbw and busbw per collective
    with the nccl-tests formulas (busbw = algbw x 2(n-1)/n for all_reduce, (n-1)/n for all_gather and
    reduce_scatter, 1 for broadcast). With --min-busbw GBPS an average busbw below the floor fails,
    as nccl-tests' minimum-bandwidth option does."""),
)


torch_imports = _smoke_check(
    "EC401", "torch-import-failed", "torch imports in the target interpreter", _torch_body,
    """`import torch` in the target interpreter (--python), in a child with a timeout.

    Fails with the real error text when torch cannot be imported. With torch_npu installed and
    CANN not loaded even `import torch` fails: torch auto-loads the torch_npu backend through its
    entry point (TORCH_DEVICE_BACKEND_AUTOLOAD, on by default) and torch_npu cannot find libhccl.so.
    The check retries with TORCH_DEVICE_BACKEND_AUTOLOAD=0 to tell that apart from a broken torch.
    The smoke level decides which EC4xx checks run (PLANNED): --no-smoke this one alone (a skip), the
    default importability and a quick operator subset, --full the whole operator suite, the parity run,
    MindSpore's run_check and a 2-rank collective.
    """)

CHECKS = (torch_imports, *SIBLINGS)


def planned_checks(level: str | None) -> list[Check]:
    """The EC4xx checks a smoke level runs, in family order."""
    codes = planned(level)
    return [c for c in CHECKS if c.code in codes]
