"""Issue 13: one cause, one failure, one fix. Every fixture environment is judged as `envcheck` judges it
and the failures that stand must never give advice that contradicts each other; explained findings
collapse under their cause ("because EC301")."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import DATA

from envcheck.checks import by_id, runner, to_run
from envcheck.checks.registry import Context, check
from envcheck.model import Facts, Finding, Status
from envcheck.probe import collect
from envcheck.smoke.importability import Attempt, Importability
from envcheck.smoke.session import Session
from envcheck.versions import parse_ascend, parse_pep440

ROOTS = DATA / "roots"
STUB_BIN = DATA / "npu-smi" / "bin"
LIBHCCL = "ImportError: libhccl.so: cannot open shared object file: No such file or directory"
AUTOLOAD = ("RuntimeError: Failed to load the backend extension: torch_npu. You can disable extension "
            "auto-loading with TORCH_DEVICE_BACKEND_AUTOLOAD=0.")

# (tree, npu-smi recording or None, extra environment): every tree under tests/data/roots, the
# Ascend ones also with the npu-smi stand-in in its healthy and failing states.
ENVIRONMENTS = [
    ("root-910b-8.2", "910b4", {}),
    ("root-910b-8.2", "a3", {}),                  # version.info 25.0.rc1.1, npu-smi runs 25.2.1
    ("root-910b-8.2", "910b4-unhealthy", {}),
    ("root-910b-8.2", "fail-8005", {}),
    ("root-910b-8.2", None, {}),
    ("nonroot-home", "910b4-busy", {"HOME": "/home/alice"}),  # files 24.1.rc1, npu-smi runs 25.0.rc1.1
    ("nonroot-home", None, {"HOME": "/home/alice"}),
    ("new-8.5", "910b4", {}),
    ("cann-no-driver", None, {}),
    ("broken", None, {"ASCEND_HOME_PATH": "/usr/local/Ascend/nonexistent"}),
] + [(p.name, None, {}) for p in sorted(ROOTS.glob("net-*")) if p.is_dir()]


def probe(tree: str, smi: str | None, env: dict[str, str]) -> Facts:
    base = {"PATH": f"{STUB_BIN}:/usr/bin:/bin" if smi else "/usr/bin:/bin"}
    if smi:
        base["NPU_SMI_FIXTURE"] = smi
    return collect(root=str(ROOTS / tree), environ={**base, **env}, timeout=5)


def session(torch_npu_fails: bool) -> Session:
    """A smoke session whose import results are given (no child processes): torch_npu installed and
    failing on libhccl.so (through the autoload, so `import torch` fails too), or a plain CPU torch."""
    installed = {"torch": True, "torch_npu": torch_npu_fails, "mindspore": False}
    if torch_npu_fails:
        tb = f"Traceback (most recent call last):\n  ...\n{LIBHCCL}\n\n{AUTOLOAD}"
        plain = Attempt({}, rc=0, info={"installed": installed, "torch": {"ok": False, "error": AUTOLOAD,
                                                                         "traceback": tb}})
        retry = Attempt({"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}, rc=0, info={
            "installed": installed, "torch": {"ok": True, "version": "2.13.0+cpu"},
            "torch_npu": {"ok": False, "error": LIBHCCL, "traceback": f"Traceback ...\n{LIBHCCL}"}})
        imp = Importability("/venv/bin/python", plain, retry)
    else:
        imp = Importability("/venv/bin/python", Attempt({}, rc=0, info={
            "installed": installed, "torch": {"ok": True, "version": "2.13.0+cpu", "seconds": 1.0}, "cuda_count": 0}))
    s = Session(level="quick", device="auto")
    s._cache["import"] = imp
    return s


def judge(facts: Facts, smoke: Session | None = None):
    """The report `envcheck` builds (its default checks; the smoke part from `smoke` or not at all)."""
    ctx = Context(facts=facts, options={"smoke": "quick" if smoke else "none"}, smoke=smoke)
    return runner.run(to_run("quick" if smoke else "none"), ctx, frame=True)


def standing(report) -> list[Finding]:
    return [f for f in report.findings if f.status in (Status.FAIL, Status.ERROR, Status.WARN) and not f.because]


def _release(v: str) -> tuple:
    return parse_ascend(v).release_key[:3]


def contradictions(report) -> list[str]:
    """Pairs of standing pieces of advice that cannot both be followed (or repeat each other)."""
    out: list[str] = []
    fixes = [(f.code, f.fix) for f in standing(report) if f.fix]
    seen: dict[str, str] = {}
    for code, fix in fixes:  # one cause, one fix: the same advice twice means one cause failed twice
        if fix in seen:
            out.append(f"{seen[fix]} and {code} give the same fix: {fix[:80]}")
        seen.setdefault(fix, code)
    no_cann = any(f.code == "EC301" and f.status is Status.FAIL for f in standing(report))
    sources = {m for _, fix in fixes for m in re.findall(r"source (\S+/set_env\.sh)", fix)}
    if no_cann and sources:
        out.append(f"EC301 says there is no CANN, yet a fix sources {sorted(sources)}")
    if len(sources) > 1:
        out.append(f"two different set_env.sh to source: {sorted(sources)}")
    # the driver: every fix that names a target driver names the same release
    targets: dict[str, set[str]] = {}
    for code, fix in fixes:
        for m in re.finditer(r"(?:install HDK|reboot to load driver|reinstall the driver of HDK) (\S+)", fix):
            targets.setdefault(".".join(map(str, _release(m.group(1).rstrip(")(,;")))), set()).add(code)
    if len(targets) > 1:
        out.append(f"fixes lead to different drivers: {targets}")
    # one torch_npu per report, and never a downgrade below a version that is newer than the matrix
    pins: dict[str, set[str]] = {}
    for code, fix in fixes:
        for m in re.finditer(r"pip install torch==\S+ torch-npu==(\S+)", fix):
            pins.setdefault(str(parse_pep440(m.group(1)).public), set()).add(code)
    if len(pins) > 1:
        out.append(f"fixes pin different torch_npu builds: {pins}")
    newer = [f for f in standing(report) if f.data.get("newer_than_matrix")]
    npu = report.facts.package("torch-npu")
    if npu and any(f.title.startswith(f"torch_npu {npu} ") for f in newer):
        low = [v for v in pins if parse_pep440(v) < parse_pep440(npu)]
        if low:
            out.append(f"torch_npu {npu} is newer than the matrix, yet a fix downgrades it to {low}")
    return out


@pytest.mark.parametrize("tree, smi, env", ENVIRONMENTS, ids=[f"{t}-{s or 'no-smi'}" for t, s, _ in ENVIRONMENTS])
def test_fixes_never_contradict_each_other(tree, smi, env):
    report = judge(probe(tree, smi, env))
    assert contradictions(report) == []
    for f in report.findings:  # a collapsed finding names a cause that stands in the same report
        if f.because:
            assert f.status is Status.SKIP and not f.fix and f.data["collapsed"] in ("fail", "error", "warn")
            assert any(g.code == f.because and g.status in (Status.FAIL, Status.ERROR) and not g.because
                       for g in report.findings), f


def test_every_fixture_tree_is_covered():
    trees = {p.name for p in ROOTS.iterdir() if p.is_dir()}
    assert trees <= {t for t, _, _ in ENVIRONMENTS}


def _torch_npu_without_cann(cann: bool) -> Facts:
    facts = probe("root-910b-8.2", "910b4", {})
    facts.python = {**facts.python, "packages": {**(facts.python.get("packages") or {}), "torch-npu": "2.13.0"}}
    if not cann:
        facts.cann = {"installs": [], "active": None}
    facts.netdev = {}  # the tree's device NICs have no IPs (EC604): another cause, not this test's
    return facts


def test_torch_npu_without_cann_is_one_failure_with_one_fix():
    report = judge(_torch_npu_without_cann(cann=False), session(torch_npu_fails=True))
    fails = [f for f in standing(report) if f.status is Status.FAIL]
    assert [f.code for f in fails] == ["EC301"], [(f.code, f.title) for f in fails]
    assert "install the CANN toolkit" in fails[0].fix
    collapsed = {f.code: f.because for f in report.findings if f.because}
    assert collapsed == {"EC401": "EC301", "EC402": "EC301"}
    assert contradictions(report) == []
    assert report.reason.startswith("EC301 no CANN toolkit found")


def test_torch_npu_with_cann_not_loaded_collapses_under_ec201():
    report = judge(_torch_npu_without_cann(cann=True), session(torch_npu_fails=True))
    fails = [f for f in standing(report) if f.status is Status.FAIL]
    assert [f.code for f in fails] == ["EC201"]
    assert fails[0].fix == "source /usr/local/Ascend/ascend-toolkit/set_env.sh"
    assert {f.code: f.because for f in report.findings if f.because} == {"EC401": "EC201", "EC402": "EC201"}
    assert contradictions(report) == []


def test_ec402_collapses_under_ec401_when_nothing_else_explains_them():
    # neither EC301 nor EC201 fails (here: not run), the library is still missing: EC401 stands and
    # EC402, which follows from the same missing library, collapses under it
    facts = _torch_npu_without_cann(cann=True)
    ctx = Context(facts=facts, options={"smoke": "quick"}, smoke=session(torch_npu_fails=True))
    report = runner.run(to_run("quick", ignore=["EC201", "EC301"]), ctx, frame=True)
    assert [f.code for f in standing(report) if f.status is Status.FAIL] == ["EC401"]
    assert next(f for f in report.findings if f.code == "EC402").because == "EC401"


def test_driver_disagreement_and_compatibility_point_the_same_way():
    # nonroot-home: files 24.1.rc1 (too old for CANN 8.1.RC1), npu-smi runs 25.0.rc1.1 (paired):
    # EC104 judges the running driver, EC310 says to make the files match it; no "install HDK" vs "reboot"
    report = judge(probe("nonroot-home", "910b4-busy", {"HOME": "/home/alice"}))
    by = {f.code: f for f in report.findings
          if f.code in ("EC104", "EC303", "EC310") and not f.data.get("rule", "").startswith("firmware")}
    assert by["EC303"].status is Status.OK
    assert by["EC310"].status is Status.WARN and "25.0.rc1.1" in by["EC310"].fix
    assert by["EC104"].status is Status.OK and "driver 25.0.rc1.1" in by["EC104"].title
    assert contradictions(report) == []


def test_files_newer_than_running_driver_collapse_under_an_ec104_failure():
    facts = probe("nonroot-home", "910b4-busy", {"HOME": "/home/alice"})
    facts.driver = {**facts.driver, "version": "24.1.rc2"}
    facts.npu = {**facts.npu, "version": "24.1.rc1"}  # upgrade installed, not rebooted; both too old
    report = judge(facts)
    ec310 = next(f for f in report.findings if f.code == "EC310")
    assert ec310.because == "EC104" and ec310.data["collapsed"] == "warn"
    assert any(f.code == "EC104" and f.status is Status.FAIL and "install HDK" in f.fix for f in standing(report))
    assert contradictions(report) == []


def test_container_without_devices_explains_the_missing_driver():
    facts = Facts(container={"in_container": True, "engine": "docker", "davinci": [],
                             "mgmt_devices": {"davinci_manager": False, "devmm_svm": False, "hisi_hdc": False}},
                  system={"arch": "x86_64"})
    report = judge(facts)
    assert next(f for f in report.findings if f.code == "EC303").because == "EC620"
    assert report.host["kind"] == "none" and report.reason == "this is not an Ascend machine"
    assert {f.code for f in standing(report) if f.status is Status.FAIL} == {"EC301", "EC620"}


def test_collapse_never_loses_both_sides_of_a_cycle():
    def body(c, ctx):
        yield c.fail("x")

    a = check("EC901", "aa", "A", section="General", depends=("EC902",))(body)
    b = check("EC902", "bb", "B", section="General", depends=("EC901",))(body)
    found = runner.collapse([a.fail("a"), b.fail("b")])
    assert [f.status for f in found] == [Status.SKIP, Status.FAIL] and found[0].because == "EC902"


def test_collapse_names_the_root_of_a_chain():
    def body(c, ctx):
        yield c.fail("x")

    a = check("EC901", "aa", "A", section="General")(body)
    b = check("EC902", "bb", "B", section="General", depends=("EC901",))(body)
    c = check("EC903", "cc", "C", section="General", depends=("EC902",))(body)
    found = runner.collapse([c.fail("c"), b.fail("b"), a.fail("a")])
    assert [(f.code, f.because) for f in found] == [("EC903", "EC901"), ("EC902", "EC901"), ("EC901", "")]
    # a warning never hides a failure
    w = runner.collapse([c.fail("c"), b.warn("b")])
    assert [f.status for f in w] == [Status.FAIL, Status.WARN]


def test_no_fast_check_depends_on_a_smoke_check():
    # the text report prints the fast sections before the smoke tests ran: nothing there may collapse later
    smoke = {c.code for c in by_id().values() if c.section in runner.SLOW_SECTIONS}
    for c in by_id().values():
        if c.section not in runner.SLOW_SECTIONS:
            assert not set(c.depends) & smoke, c.code
    src = Path(runner.__file__).parent
    for path in src.glob("*.py"):
        if path.name in ("smoke.py", "runner.py", "registry.py"):
            continue
        assert not re.search(r"depends=\([^)]*\"EC4", path.read_text()), path.name


def test_the_contradiction_detector_catches_the_audit_reports():
    # the reports of the UX audit (before issue 13) must be flagged, or the tests above prove nothing
    from envcheck.model import Report

    def f(code, fix, **kw):
        return Finding(code=code, slug="s", status=kw.pop("status", Status.FAIL), title=kw.pop("title", "t"),
                       fix=fix, **kw)

    set_env = "source /usr/local/Ascend/ascend-toolkit/set_env.sh  (or <CANN home>/set_env.sh) before starting Python"
    venv = Report(Facts(), [f("EC301", "install the CANN toolkit"), f("EC401", set_env), f("EC402", set_env)])
    assert len(contradictions(venv)) == 2  # the same fix twice, and a set_env.sh with no CANN
    driver = Report(Facts(), [f("EC303", "reboot to load driver 24.1.rc1", status=Status.WARN),
                              f("EC104", "install HDK 25.0.RC1 (firmware, then driver): ...")])
    assert [c.split(':')[0] for c in contradictions(driver)] == ["fixes lead to different drivers"]
    newer = Report(Facts(python={"packages": {"torch-npu": "2.13.0"}}), [
        f("EC102", "for CANN 8.2.RC1: pip install torch==2.6.0 torch-npu==2.6.0", status=Status.WARN,
          title="torch_npu 2.13.0 is newer than the matrix (as of 2026-11-30)", data={"newer_than_matrix": True})])
    assert contradictions(newer) == ["torch_npu 2.13.0 is newer than the matrix, yet a fix downgrades it to ['2.6.0']"]
