"""`envcheck matrix suggest`: compatible sets newest first, or the smallest fix for this machine."""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from typing import Any

from envcheck.checks import _compat as u
from envcheck.matrix import CannRelease, Matrix, Pairing
from envcheck.model import Facts, Finding, Status, verdict
from envcheck.plan import hypothetical_facts, judge
from envcheck.versions import PyRange, parse_ascend, parse_pep440, same_base


@dataclass
class Candidate:
    """One complete set: a CANN release, one of its torch_npu builds, the Python range and the HDK."""

    rel: CannRelease
    pairing: Pairing
    python: list[PyRange]
    hdk: str
    verdict: str = "ok"
    notes: list[str] = field(default_factory=list)

    def to_dict(self, mx: Matrix, arch: str | None, chip: str | None) -> dict[str, Any]:
        p = self.pairing
        return {"cann": self.rel.version, "pta": self.rel.pta, "torch": p.torch, "torch_npu": p.torch_npu,
                "python": [str(r) for r in self.python], "hdk": self.hdk, "verdict": self.verdict,
                "pip": u.pip_line(p.torch, p.torch_npu, arch), "packages": packages(mx, self, arch, chip),
                "sources": {s: mx.url(s) for s in p.sources}, "conflicts": list(p.conflicts), "notes": self.notes}


def python_range(mx: Matrix, p: Pairing, arch: str | None) -> list[PyRange]:
    """The build's Python range: its wheel tags where it has wheels, else the table's column."""
    wheels = mx.wheel_ranges(p.torch_npu, arch)
    if wheels:
        return wheels
    return [p.python] if p.python else []


def candidates(mx: Matrix, want: dict[str, str]) -> list[Candidate]:
    """Every set that honours the fixed versions in `want`, newest first."""
    fam = mx.chip_family(want["chip"]) if want.get("chip") else None
    since = parse_ascend(fam.since) if fam and fam.since else None
    out = []
    for rel in sorted(mx.cann, key=lambda r: r.parsed, reverse=True):
        if want.get("cann") and rel.parsed != parse_ascend(want["cann"]):
            continue
        if since is not None and rel.parsed < since:
            continue
        for p in sorted(rel.pairings, key=lambda p: (parse_pep440(p.torch), parse_pep440(p.torch_npu)), reverse=True):
            if want.get("torch") and not same_base(p.torch, want["torch"]):
                continue
            if want.get("torch_npu") and parse_pep440(p.torch_npu).public != parse_pep440(want["torch_npu"]).public:
                continue
            py = python_range(mx, p, want.get("arch"))
            if want.get("py_version") and not any(want["py_version"] in r for r in py):
                continue
            out.append(Candidate(rel, p, py, _hdk(rel, fam)))
    return out


def _hdk(rel: CannRelease, fam) -> str:
    rule = rel.hdk.by_family.get(fam.family) if (rel.hdk and fam) else None
    rule = rule or rel.hdk
    if rule is None:
        return ""
    specs = rule.paired + rule.matched
    return specs[0].text if specs else ""


def _concrete(hdk: str) -> str | None:
    return hdk if hdk and ".." not in hdk and not hdk.upper().endswith(".X") else None


def rate(mx: Matrix, c: Candidate, want: dict[str, str]) -> None:
    """Judge the set with the same checks as a real run; fill verdict and notes."""
    py = want.get("py_version") or _pick_python(c)
    facts = hypothetical_facts(cann=c.rel.version, driver=_concrete(c.hdk), torch=c.pairing.torch,
                               torch_npu=c.pairing.torch_npu, python=py, chip=want.get("chip"), arch=want.get("arch"))
    found = judge(facts, mx)
    c.verdict = verdict(found)
    c.notes = [f"{f.code} {f.title}" for f in found if f.status in (Status.WARN, Status.FAIL, Status.ERROR)]


def _pick_python(c: Candidate) -> str | None:
    """The newest minor both the wheels and the table allow (else the wheels' newest)."""
    minors = sorted({m for r in c.python for m in r.minors()}, reverse=True)
    for m in minors:
        text = f"{m[0]}.{m[1]}"
        if all(text in r for r in c.python) and (c.pairing.python is None or text in c.pairing.python):
            return text
    return f"{minors[0][0]}.{minors[0][1]}" if minors else None


def packages(mx: Matrix, c: Candidate, arch: str | None, chip: str | None) -> dict[str, list[str]]:
    """CANN and HDK package file names for the set."""
    fam = mx.chip_family(chip) if chip else None
    a = arch or "<arch>"
    cann = [mx.packages.get("toolkit", "").format(version=c.rel.version, arch=a)]
    cann.append(u.kernels_file(mx, c.rel.version, fam.family if fam else None, fam.token if fam else None, arch))
    hdk = u.hdk_packages(mx, c.hdk, fam.token if fam else None, arch, fam.family if fam else None) if c.hdk else []
    return {"cann": [x for x in cann if x], "hdk": [x for x in hdk if x]}


# ---------------------------------------------------------------------------------------------
def suggest(args: argparse.Namespace, mx: Matrix, want: dict[str, str]) -> int:
    fixed = {k: v for k, v in want.items() if k != "arch"}
    if not fixed:
        return _smallest_change(args, mx, want)
    cands = candidates(mx, want)
    for c in cands:
        rate(mx, c, want)
    if args.json:
        doc = {"command": "matrix suggest", "matrix": {"path": mx.path, "dated": mx.dated, "as_of": mx.as_of},
               "filters": want,
               "sets": [c.to_dict(mx, want.get("arch"), want.get("chip")) for c in cands]}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        _print_sets(mx, cands, want)
    return 0 if cands else 1


def _print_sets(mx: Matrix, cands: list[Candidate], want: dict[str, str]) -> None:
    flags = " ".join(f"--{k.replace('_', '-').replace('py-version', 'python')} {v}" for k, v in want.items())
    if not cands:
        print(f"No compatible set in the matrix (dated {mx.dated}) honours {flags}.")
        return
    print(f"{len(cands)} compatible set(s) for {flags}, newest first (matrix dated {mx.dated}):\n")
    for c in cands:
        print(_render(mx, c, want))


def _render(mx: Matrix, c: Candidate, want: dict[str, str]) -> str:
    p = c.pairing
    pk = packages(mx, c, want.get("arch"), want.get("chip"))
    lines = [f"CANN {c.rel.version} + PyTorch {p.torch} + torch_npu {p.torch_npu}   [{c.verdict}]",
             f"  Python    {', '.join(str(r) for r in c.python) or 'not stated'}",
             f"  pip       {u.pip_line(p.torch, p.torch_npu, want.get('arch'))}"]
    note = u.pip_note(mx, p)
    if note:
        lines.append(f"            ({note})")
    lines.append(f"  CANN      {'  '.join(pk['cann'])}")
    lines.append(f"  HDK       {c.hdk + ': ' + '; '.join(pk['hdk']) if c.hdk else 'no HDK statement in the matrix'}")
    if c.hdk:
        lines.append(f"            ({u.install_order(mx)})")
    lines.append(f"  sources   {', '.join(p.sources)}")
    for n in c.notes:
        lines.append(f"  note      {n}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
VERSION_CODES = ("EC301", "EC302", "EC303", "EC308", "EC310")
"""Besides EC1xx, the checks whose failures a change of versions or packages fixes."""


def _is_version(f: Any) -> bool:
    return f.code.startswith("EC1") or f.code in VERSION_CODES


def _smallest_change(args: argparse.Namespace, mx: Matrix, want: dict[str, str]) -> int:
    """No flags: judge this machine exactly as `envcheck` does (the same checks, collapsed the same way)
    and propose the cheapest set of changes that makes its versions consistent. It never says "nothing
    has to change" where `envcheck` fails or where a version is newer than the matrix knows."""
    from envcheck.checks import runner, to_run
    from envcheck.checks.registry import Context
    from envcheck.probe.snapshot import gather

    facts = gather(facts_file=getattr(args, "facts", None), root=args.root, python=args.python,
                   timeout=getattr(args, "timeout", None))
    ctx = Context(facts=facts, matrix_path=mx.path, loaded_matrix=mx, options={"smoke": "none"})
    checks = [c for c in to_run("none") if c.section not in runner.SLOW_SECTIONS]
    report = runner.run(checks, ctx, command="matrix suggest", frame=True)
    found = report.findings
    fails = [f for f in found if f.status in (Status.FAIL, Status.ERROR)]
    version_fails = [f for f in fails if _is_version(f)]
    other_fails = [f for f in fails if not _is_version(f)]
    warns = [f for f in found if f.status == Status.WARN]
    arch = want.get("arch") or u.arch(facts)
    cur = {"cann": facts.cann_version, "driver": facts.driver_version, "torch": facts.package("torch"),
           "torch_npu": facts.package("torch-npu"), "python": facts.python_version}
    newer = _newer_than_matrix(mx, found, cur)
    host = report.host
    plan: dict[str, Any] | None = None
    if version_fails and host.get("kind") != "none":
        ctx_want = {"chip": facts.chip, "arch": arch}
        cands = candidates(mx, {k: v for k, v in ctx_want.items() if v})
        scored = [(_cost(mx, c, cur, facts), i, c) for i, c in enumerate(cands)]
        if scored:
            cost, _, best = min(scored, key=lambda t: (t[0][0], t[1]))
            plan = {"target": best.to_dict(mx, arch, facts.chip), "steps": cost[1]}
    consistent = not version_fails and not newer and host.get("kind") != "none"
    if args.json:
        doc = {"command": "matrix suggest", "verdict": report.verdict, "reason": report.reason, "host": host,
               "current": cur, "consistent": consistent,
               "failing": [f.to_dict() for f in version_fails], "also_failing": [f.to_dict() for f in other_fails],
               "newer_than_matrix": newer, "plan": plan,
               "matrix": {"path": mx.path, "dated": mx.dated, "as_of": mx.as_of}}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return report.exit_code()
    out: list[str] = []
    if host.get("kind") == "none":
        out.append(f"{host['title'][0].upper()}{host['title'][1:]}: there is no Ascend stack here to match "
                   "against the matrix.")
        torch = cur["torch"]
        hint = f" --torch {torch.split('+')[0]}" if torch and not cur["torch_npu"] else ""
        out.append(f"To plan an install for an Ascend machine: envcheck matrix suggest --chip <chip>{hint}")
    elif version_fails:
        out.append("Failing now:")
        out += [f"  {f.code} {f.title}" for f in version_fails]
    for n in newer:
        out.append(f"{n} is newer than the matrix (as of {mx.as_of}): the matrix cannot name what goes with it; "
                   "check the vendor's release notes, or use a newer envcheck / a site matrix (--matrix).")
    if plan is not None:
        t = plan["target"]
        keep = " (no tabled set keeps the newer version above)" if newer else ""
        out.append(f"\nSmallest change within the matrix{keep}: CANN {t['cann']} + PyTorch {t['torch']} + "
                   f"torch_npu {t['torch_npu']}")
        out += [f"  - {step}" for step in plan["steps"]]
    elif version_fails and host.get("kind") != "none":
        out.append("No set in the matrix fits this machine's chip.")
    if consistent:
        out.append("The installed versions are consistent with the matrix: no version has to change."
                   + (f" ({len(warns)} warning(s): envcheck -v)" if warns else ""))
    if other_fails:
        out.append(("Still failing" if consistent else "Also failing") + " (not fixed by versions; envcheck -v): "
                   + "; ".join(f"{f.code} {f.title}" for f in other_fails))
    out.append(f"(knowledge as of {mx.as_of}; envcheck's verdict on these facts: {report.verdict})")
    sys.stdout.write("\n".join(out) + "\n")
    return report.exit_code()


def _newer_than_matrix(mx: Matrix, found: list[Finding], cur: dict[str, Any]) -> list[str]:
    """Installed versions the matrix is too old to know ('torch_npu 2.13.0'), also where no check could
    judge them (torch_npu without CANN)."""
    out = []
    for f in found:
        if f.data.get("newer_than_matrix"):
            what = f.title.split(" is newer than the matrix")[0]
            if " is newer" in f.title and what not in out:
                out.append(what)
    npu = cur["torch_npu"]
    if npu and not any(o.startswith("torch_npu") for o in out):
        v = u.pep(npu)[0]
        try:
            if v is not None and (u.line_of(npu) > mx.newest_line() or v > mx.newest_torch_npu()):
                out.append(f"torch_npu {npu}")
        except Exception:  # an unusual matrix: no statement rather than a crash
            pass
    return out


def _cost(mx: Matrix, c: Candidate, cur: dict[str, Any], facts: Facts) -> tuple[float, list[str]]:
    """(cost, steps): driver 20, CANN 10, Python 5, torch 1, torch_npu 1; disputed sets +0.5; a set whose
    release states no HDK for the installed driver +5 (keeping the driver there is unconfirmed); going
    back from the installed CANN +2 per release (one release back beats reflashing the HDK; ten do not)."""
    steps, cost = [], 0.0
    pk = packages(mx, c, u.arch(facts), facts.chip)
    have = u.ascend(cur["cann"])[0] if cur["cann"] else None
    if have is not None and c.rel.parsed < have:  # each release back drops PyTorch lines and operators
        cost += 2 * sum(1 for r in mx.cann if c.rel.parsed <= r.parsed < have)
    if cur["cann"] is None or have != c.rel.parsed:
        cost += 10
        steps.append(f"CANN {cur['cann'] or '(none)'} -> {c.rel.version}: install {'  '.join(pk['cann'])}")
    dv = u.ascend(cur["driver"])[0]
    rule = c.rel.hdk
    kind = rule.classify(dv) if (rule and dv is not None) else None
    if dv is not None and not (rule and rule.stated):
        cost += 5  # the matrix cannot confirm the installed driver with this release: not a cheap way out
    if rule and rule.stated and (dv is None or kind == "unsupported" or (kind == "outside" and rule.outside == "fail")):
        cost += 20
        order = ("first install: driver, then firmware, then reboot" if dv is None
                 else "upgrade: firmware, then driver, then reboot")   # W11, CANN install guide instg_0005
        steps.append(f"driver {cur['driver'] or '(none)'} -> HDK {c.hdk}: {order}: {'; '.join(pk['hdk'])}")
    py = cur["python"]
    if py and c.python and not any(py in r for r in c.python):
        cost += 5
        steps.append(f"Python {py} -> {', '.join(str(r) for r in c.python)}: create a new environment with that Python")
    p = c.pairing
    torch_ok = cur["torch"] and same_base(cur["torch"], p.torch)
    installed_npu = u.pep(cur["torch_npu"])[0] if cur["torch_npu"] else None
    npu_ok = installed_npu is not None and installed_npu.public == parse_pep440(p.torch_npu).public
    cost += (0 if torch_ok else 1) + (0 if npu_ok else 1)
    if not (torch_ok and npu_ok):
        steps.append(u.pip_line(p.torch, p.torch_npu, u.arch(facts)))
    if u.conflicts(mx, p.conflicts, "pairing"):
        cost += 0.5
    return cost, steps
