"""The kb content: coverage of the field report, taxonomy and check registry; portable, verified patterns."""
from __future__ import annotations

import re
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

import pytest

from envcheck.kb.entries import Entry, load_kb
from envcheck.kb.taxonomy import CATEGORY_IDS

REPO = Path(__file__).resolve().parents[2]
KB = REPO / "kb"
SHARED = REPO.parent / "shared"
RESEARCH = SHARED / "research"

# The taxonomy ships with the package (the kb ships without shared/); the field-report item count
# is fixed here. Both are cross-checked against shared/ when it is checked out.
CATEGORIES = CATEGORY_IDS
FIELD_REPORT_ITEMS = 58

# Entries that envcheck's code links to by id: id -> (category, checks it must name).
REQUIRED = {
    "cann-env-not-loaded": ("env-not-loaded", {"EC201", "EC401"}),
    "torch-npu-torch-mismatch": ("version-mismatch", {"EC101"}),
    "torch-npu-cann-mismatch": ("version-mismatch", {"EC102"}),
    "driver-too-old-for-cann": ("version-mismatch", {"EC104"}),
    "hccl-world-size-mismatch": ("rank-config", {"EC501"}),
    "hccl-timeout": ("hccl-timeout", {"EC412"}),
    "cpu-fallback-silent": ("cpu-fallback", {"EC406"}),
    "npu-out-of-memory": ("out-of-memory", set()),
    "shm-too-small": ("out-of-memory", {"EC203"}),
}

# Ordinary log output that no pattern may match (training progress, healthy tool output,
# non-error plog lines from shared/research).
BENIGN = (
    "INFO step 100 loss 2.31",
    "Epoch 1/10",
    "2026-11-29 10:00:00,123 INFO rank 0 step 2000 loss 1.873 lr 3.0e-4 step_time 0.412s",
    "[2023-09-13 10:20:36,763] torch.distributed.run: [WARNING] Setting OMP_NUM_THREADS environment "
    "variable for each process to be 1 in default, to avoid your system being overloaded, please further "
    "tune the variable for optimal performance in your application as needed.",
    "[EVENT] PROFILING(946748,main):2025-05-19-15:59:07.740.922 [msprof_callback_impl.cpp:79] >>> "
    "(tid:947062) MsprofCtrlCallback called, type: 255",
    "[INFO] HCCL(137309,all_reduce_test):2025-12-24-16:19:40.000.001 [hccl_socket_manager.cc:100] init ok",
    "link status: UP",
    "net health status: Success",
    "net health status: Init",
    "ipaddr:10.86.1.80",
    "fec mode: rs FEC mode",
    "| npu-smi 25.2.1                   Version: 25.2.1    |",
    "| 0     910B4               | OK            | 87.2        33                0    / 0             |",
    "| No running processes found in NPU 7                                                           |",
    "Health Status : OK",
    "Version=25.0.rc1.1",
    "The torch.Tensor.cuda and torch.nn.Module.cuda are replaced with torch.Tensor.npu and "
    "torch.nn.Module.npu now..",
    "Requires-Dist: torch==2.13.0.*",
    "WARNING: Skipping step 3 of warmup",
    "Saving checkpoint to /ckpt/step1000.pt",
    "torch_npu 2.9.0 imported, 8 NPUs available",
    "all_reduce busbw 180.3 GB/s",
)

# Regex features outside the common subset of Python `re` and POSIX ERE (`grep -E`).
_NON_PORTABLE = [
    (re.compile(r"\\[dDwWsSbBAZzG]"), "Perl class/anchor escape (use [0-9], [A-Za-z_], ' ')"),
    (re.compile(r"\(\?"), "(?...) group, lookaround or flag"),
    (re.compile(r"\\[1-9]"), "backreference"),
    (re.compile(r"[*+?}]\?"), "lazy or possessive quantifier"),
]


@lru_cache(maxsize=1)
def entries() -> tuple[Entry, ...]:
    kb = load_kb(KB)
    assert not kb.errors, [str(e) for e in kb.errors]
    return kb.entries


def _strip_escapes(rx: str) -> str:
    """Replace escaped characters by a neutral letter so structure checks ignore them."""
    return re.sub(r"\\.", "x", rx)


def nested_quantifier(rx: str) -> bool:
    """True for (..+..)+ / (..*..)* style groups: a quantified group containing a quantifier."""
    s = _strip_escapes(rx)
    s = re.sub(r"\[\^?\]?[^]]*\]", "x", s)  # bracket expressions are single atoms
    stack: list[int] = []
    for i, ch in enumerate(s):
        if ch == "(":
            stack.append(i)
        elif ch == ")" and stack:
            start = stack.pop()
            inner = s[start + 1:i]
            after = s[i + 1:i + 2]
            if after in ("*", "+", "{") and re.search(r"[*+{]", inner):
                return True
    return False


def portability_problems(rx: str) -> list[str]:
    s = _strip_escapes(rx.replace("\\\\", "xx"))
    probs = [why for pat, why in _NON_PORTABLE if pat.search(rx if "escape" in why or "back" in why else s)]
    if nested_quantifier(rx):
        probs.append("nested quantifier")
    return probs


def all_patterns():
    return [(e.id, p) for e in entries() for p in e.patterns]


def _grep_matches(regex: str, lines: list[str]) -> set[int]:
    """1-based numbers of the lines `grep -E` matches."""
    p = subprocess.run(["grep", "-E", "-n", "--", regex], input="\n".join(lines) + "\n",
                       capture_output=True, text=True, timeout=30)
    assert p.returncode in (0, 1), f"grep -E rejected {regex!r}: {p.stderr.strip()}"
    return {int(ln.split(":", 1)[0]) for ln in p.stdout.splitlines() if ln}


# -- coverage -----------------------------------------------------------------------------------

def test_enough_entries_and_every_category_has_two():
    es = entries()
    assert len(es) >= 45, len(es)
    per = {c: sum(1 for e in es if e.category == c) for c in CATEGORIES}
    thin = {c: n for c, n in per.items() if n < 2}
    assert not thin, f"categories with fewer than 2 entries: {thin}"
    unknown = sorted({e.category for e in es} - set(CATEGORIES))
    assert not unknown, f"entries with categories not in TAXONOMY.md: {unknown}"


def test_categories_constant_matches_taxonomy():
    tax = SHARED / "TAXONOMY.md"
    if not tax.exists():
        pytest.skip("shared/TAXONOMY.md not available")
    ids = re.findall(r"^\| `([a-z-]+)` \|", tax.read_text(encoding="utf-8"), re.M)
    assert tuple(ids) == CATEGORIES


def test_every_field_report_item_has_an_fr_tag():
    report = RESEARCH / "pitfalls.md"
    n = FIELD_REPORT_ITEMS
    if report.exists():
        items = [int(m) for m in re.findall(r"^(\d+)\. ", report.read_text(encoding="utf-8"), re.M)]
        assert items == list(range(1, len(items) + 1)) and len(items) == n, items
    tagged = {int(t[3:]) for e in entries() for t in e.tags if re.fullmatch(r"fr-[0-9]+", t)}
    missing = sorted(set(range(1, n + 1)) - tagged)
    assert not missing, f"field-report items without an fr-N tag: {missing}"
    assert not tagged - set(range(1, n + 1)), f"fr tags beyond the report: {sorted(tagged - set(range(1, n + 1)))}"


def test_every_failable_check_is_named_by_an_entry():
    from envcheck.checks import all_checks

    named = {c for e in entries() for c in e.checks}
    missing = [f"{c.code} {c.slug}" for c in all_checks() if c.failable and c.code not in named]
    assert not missing, f"failable checks that no kb entry names: {missing}"


def test_check_codes_are_well_formed():
    bad = [(e.id, c) for e in entries() for c in e.checks if not re.fullmatch(r"EC[0-9]{3}", c)]
    assert not bad, bad


@pytest.mark.parametrize("entry_id", sorted(REQUIRED))
def test_entries_the_code_links_to_exist(entry_id):
    e = next((x for x in entries() if x.id == entry_id), None)
    assert e is not None, f"missing kb entry {entry_id}"
    category, checks = REQUIRED[entry_id]
    assert e.category == category
    assert checks <= set(e.checks), (entry_id, e.checks)


def test_cann_env_not_loaded_matches_the_real_import_failure():
    """The reproduced `import torch` failure (error-catalogue §3.7) is recognised, and the entry
    explains the auto-load switch."""
    e = next(x for x in entries() if x.id == "cann-env-not-loaded")
    real = [
        "ImportError: libhccl.so: cannot open shared object file: No such file or directory",
        "RuntimeError: Failed to load the backend extension: torch_npu. You can disable extension "
        "auto-loading with TORCH_DEVICE_BACKEND_AUTOLOAD=0.",
    ]
    cat = RESEARCH / "error-catalogue.md"
    if cat.exists():
        block = cat.read_text(encoding="utf-8").split("### 3.7", 1)[1].split("```", 2)[1]
        assert all(line in block.splitlines() for line in real)
    for line in real:
        assert any(re.search(p.regex, line) for p in e.patterns), line
    assert "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in e.section("Fix")
    assert "set_env.sh" in e.section("Fix")


# -- front matter and body ----------------------------------------------------------------------

def test_front_matter_is_complete_and_bilingual():
    han = re.compile(r"[\u4e00-\u9fff]")
    problems = []
    for e in entries():
        if e.id != e.path.stem or e.category != e.path.parent.name:
            problems.append((e.id, "id/category must equal file stem/folder"))
        for key in ("id", "title", "title_zh", "category", "summary_zh", "symptoms", "sources", "tags"):
            if not e.meta.get(key):
                problems.append((e.id, f"empty {key}"))
        if not han.search(e.title_zh) or not han.search(e.summary_zh):
            problems.append((e.id, "title_zh/summary_zh must be Chinese"))
        if "现象" not in e.summary_zh or "解决" not in e.summary_zh:
            problems.append((e.id, "summary_zh must give 现象 and 解决"))
        for key in ("checks", "error_codes", "patterns"):
            if not isinstance(e.meta.get(key), list):
                problems.append((e.id, f"{key} must be a list"))
    assert not problems, problems


def test_ids_are_unique_slugs():
    ids = [e.id for e in entries()]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", i) for i in ids)


def test_body_has_the_four_sections_and_a_concrete_fix():
    problems = []
    for e in entries():
        for name in ("Symptom", "Cause", "Fix", "Verify"):
            if not e.section(name):
                problems.append((e.id, name))
        fix = e.section("Fix")
        if "`" not in fix:  # a command, variable or code, not only prose
            problems.append((e.id, "Fix has no command/code"))
    assert not problems, problems


def test_relative_links_resolve():
    broken = []
    for e in entries():
        for target in re.findall(r"\]\(([^)#\s]+\.md)(#[^)]*)?\)", e.body):
            t = target[0] if isinstance(target, tuple) else target
            if "://" in t:
                continue
            if not (e.path.parent / t).resolve().exists():
                broken.append((e.id, t))
    assert not broken, broken


def test_sources_are_urls_or_named_documents():
    for e in entries():
        for s in e.sources:
            assert s.startswith("https://") or len(s) > 10, (e.id, s)


# -- patterns -----------------------------------------------------------------------------------

def test_there_are_many_patterns():
    assert len(all_patterns()) >= 80


@pytest.mark.parametrize("entry_id,pattern", all_patterns(), ids=lambda v: v if isinstance(v, str) else "")
def test_pattern_is_portable(entry_id, pattern):
    assert not portability_problems(pattern.regex), (entry_id, pattern.regex, portability_problems(pattern.regex))
    re.compile(pattern.regex)


def test_portability_checker_catches_what_it_should():
    for bad in (r"ret \d+", r"(?:a|b)c", r"x(?=y)", r"a.*?b", r"(a)\1", r"(a+)+", r"(.*)*", r"(ab*){2}"):
        assert portability_problems(bad), bad
    for good in (r"ret [0-9]+", r"(a|b)c", r"libhccl\.so", r"\[ERROR\] [A-Z]+\([0-9]+", r"x( ?)y",
                 r"Optype \[[^]]*\] of", r"error code is 5070(14|15)"):
        assert not portability_problems(good), good


@pytest.mark.skipif(shutil.which("grep") is None, reason="grep not installed")
def test_patterns_match_their_examples_and_no_benign_line_with_re_and_grep():
    problems = []
    benign = list(BENIGN)
    for entry_id, p in all_patterns():
        if not p.examples:
            problems.append((entry_id, p.regex, "no examples"))
            continue
        rx = re.compile(p.regex)
        for ex in p.examples:
            if not rx.search(ex):
                problems.append((entry_id, p.regex, "re misses example", ex[:80]))
        for line in benign:
            if rx.search(line):
                problems.append((entry_id, p.regex, "re matches benign line", line))
        lines = list(p.examples) + benign
        hits = _grep_matches(p.regex, lines)
        want = set(range(1, len(p.examples) + 1))
        if hits != want:
            problems.append((entry_id, p.regex, "grep -E", sorted(want - hits), sorted(hits - want)))
    assert not problems, problems


def test_patterns_do_not_match_healthy_tool_output():
    """Healthy npu-smi tables (recordings in tests/data) and, where shared/ is checked out, healthy
    hccn_tool output and set_env exports match no pattern."""
    healthy = []
    rec = REPO / "tests" / "data" / "npu-smi" / "outputs"
    for name in ("info-910b4.txt", "info-a3.txt", "info-310p3.txt", "info-910a.txt", "info-m-910b4.txt"):
        healthy += [ln for ln in (rec / name).read_text(encoding="utf-8").splitlines() if ln.strip()]
    samples = RESEARCH / "samples"
    for name in ("hccn-tool-ip-link-health-ok.txt", "driver-version-910b-25.0.rc1.1.info",
                 "env-from-set_env-cann-8.5.0-container.txt"):
        if (samples / name).exists():
            healthy += [ln for ln in (samples / name).read_text(encoding="utf-8").splitlines() if ln.strip()]
    assert len(healthy) > 50
    hits = [(eid, p.regex, ln) for eid, p in all_patterns() for ln in healthy if re.search(p.regex, ln)]
    assert not hits, hits


# Lines that every kind of failure prints on its way out (error-catalogue.md quotes each): torch_npu's wrappers
# around an ACL call and its exception hook, CANN's "Inner Error" codes. They name no cause, so no entry may claim
# them with a pattern, except the guide that says to read the first specific error instead.
WRAPPER_LINES = (
    "[ERROR] 2025-01-15-20:59:48 (PID:6038, Device:0, RankID:-1) ERR00100 PTA call acl api failed",
    "[ERROR] 2025-02-16-12:18:25 (PID:775, Device:0, RankID:-1) ERR01100 OPS call acl api failed",
    "[ERROR] 2025-06-09-06:57:54 (PID:92380, Device:0, RankID:-1) ERR99999 UNKNOWN applicaiton exception",
    "EE9999: Inner Error, Please contact support engineer!",
    "EZ9999: Inner Error!",
    "CANN Inner Error. Please rectify the fault based on the error information in the ascend log.",
    "The Inner error is reported as above. The process exits for this inner error, and the current working operator "
    "name is <op>.",
)
WRAPPER_GUIDES = {"generic-inner-error-first-code"}


def test_no_entry_claims_a_line_every_failure_prints():
    hits = [(eid, p.regex, ln) for eid, p in all_patterns() for ln in WRAPPER_LINES
            if eid not in WRAPPER_GUIDES and re.search(p.regex, ln)]
    assert not hits, hits


def test_examples_are_verbatim_from_the_research():
    if not RESEARCH.exists():
        pytest.skip("shared/research not available")
    corpus = "\n".join(f.read_text(encoding="utf-8", errors="replace") for f in sorted(RESEARCH.rglob("*"))
                       if f.is_file())
    # lines copied from the public threads an entry cites, recorded with those sources
    corpus += "\n" + (REPO / "tests" / "data" / "kb-example-sources.md").read_text(encoding="utf-8")
    # and the development half of the field corpus (real excerpts with their threads; patterns may be
    # written from it, never from the evaluation half: test_no_example_comes_from_the_evaluation_half)
    corpus += "\n" + "\n".join(text for half, text in field_corpus() if half == "dev")
    unescaped = corpus.replace("\\|", "|")  # table cells escape '|'
    missing = [(eid, ex[:90]) for eid, p in all_patterns() for ex in p.examples
               if ex not in corpus and ex not in unescaped]
    assert not missing, missing


def test_example_sources_sections_close_their_code_blocks():
    # merges that append to this file have left a block open (its closing fence taken as the next section's): the
    # file still served its purpose (a corpus of lines) but no longer read as what it says, each line under its source
    text = (REPO / "tests" / "data" / "kb-example-sources.md").read_text(encoding="utf-8")
    open_at = []
    for section in re.split(r"(?m)^(?=## )", text):
        inside = False
        for line in section.splitlines():
            if line.startswith("```"):
                inside = not inside
            elif inside and line.startswith("- source:"):
                break  # a source line inside a block: the block before it was never closed
        if inside:
            open_at.append(section.splitlines()[0])
    assert not open_at, open_at


def field_corpus() -> list[tuple[str, str]]:
    """(dev|eval, text) of every field-corpus excerpt, split by tests/kb/test_field_corpus.py's own rule."""
    from test_field_corpus import FILES, load, split_of

    return [(split_of(str(d["thread"])), str(d["text"])) for d in map(load, FILES)]


def test_no_example_comes_from_the_evaluation_half():
    """A pattern example found in an evaluation excerpt and in no other source (shared research, the
    recorded thread lines, the development half) means the pattern was written from it."""
    if not RESEARCH.exists():
        pytest.skip("shared/research not available")
    other = "\n".join(f.read_text(encoding="utf-8", errors="replace") for f in sorted(RESEARCH.rglob("*"))
                      if f.is_file())
    other += "\n" + other.replace("\\|", "|")
    other += "\n" + (REPO / "tests" / "data" / "kb-example-sources.md").read_text(encoding="utf-8")
    other += "\n" + "\n".join(text for half, text in field_corpus() if half == "dev")
    evals = [text for half, text in field_corpus() if half == "eval"]
    leaked = [(eid, ex[:90]) for eid, p in all_patterns() for ex in p.examples
              if ex not in other and any(ex in text for text in evals)]
    assert not leaked, leaked


def test_error_codes_named_in_examples_are_listed():
    """An example carrying a CANN/torch_npu code (EI0006, ERR02200 ...) lists it in error_codes,
    so `kb search EI0006` and the error-code index find the entry."""
    code_re = re.compile(r"(?<![A-Z0-9])(E[A-Z0-9][0-9]{4}|ERR[0-9]{5})(?![0-9])")
    missing = sorted({(e.id, m) for e in entries() for p in e.patterns for ex in p.examples
                      for m in code_re.findall(ex) if m not in e.error_codes})
    assert not missing, missing


def test_listed_error_codes_are_real():
    """error_codes only name codes that the research shows or that the error-code dictionary lists (each of its
    families cites its source; tests/kb/test_error_codes.py): no invented codes."""
    if not RESEARCH.exists():
        pytest.skip("shared/research not available")
    from envcheck.kb.codes import load_codes

    book = load_codes()
    corpus = "\n".join(f.read_text(encoding="utf-8", errors="replace") for f in sorted(RESEARCH.rglob("*"))
                       if f.is_file())
    unknown = sorted({(e.id, c) for e in entries() for c in e.error_codes if book.get(c) is None
                      and not re.search(r"(?<![A-Za-z0-9])" + re.escape(c) + r"(?![0-9])", corpus)})
    assert not unknown, unknown


@pytest.mark.parametrize("entry_id,needles", [
    ("cann-env-not-loaded", ["source /usr/local/Ascend/ascend-toolkit/set_env.sh", "TORCH_DEVICE_BACKEND_AUTOLOAD=0"]),
    ("hccl-connect-timeout", ["export HCCL_CONNECT_TIMEOUT=1200", "hccn_tool"]),
    ("hccl-timeout", ["HCCL_EXEC_TIMEOUT", "drop_last=True"]),
    ("hccl-nic-invalid", ["HCCL_SOCKET_IFNAME", "HCCL_IF_IP"]),
    ("index-put-advanced-indexing", ["masked_fill", "torch.where"]),
    ("fp32-loss-mixed-precision", [".float()", "autocast"]),
    ("loss-scaling-gradscaler", ["torch_npu.npu.amp.GradScaler", "scaler.update()"]),
    ("blocking-host-to-device-copy", ["pin_memory=True", "non_blocking=True"]),
    ("resume-missing-optimizer-rng-state", ['"optimizer"', '"scheduler"', "get_rng_state"]),
    ("gradient-accumulation-wrong", ["zero_grad", "% accum == 0"]),
    ("nan-loss-gradient-explosion", ["named_parameters()", "1e4"]),
    ("cpu-fallback-silent", ["TORCH_NPU_FALLBACK_CPU_DISABLE=1", "profiler"]),
    ("npu-out-of-memory", ["PYTORCH_NPU_ALLOC_CONF"]),
    ("shm-too-small", ["--shm-size"]),
    ("log-level-verbose", ["ASCEND_GLOBAL_LOG_LEVEL=3"]),
    ("hccl-world-size-mismatch", ["--nproc_per_node", 'backend="hccl"']),
    ("preflight-allreduce-selfcheck", ["all_reduce", "envcheck.preflight()"]),
])
def test_fix_is_concrete(entry_id, needles):
    """The fixes the field report calls for are spelled out as commands / code, not prose."""
    e = next(x for x in entries() if x.id == entry_id)
    fix = e.section("Fix")
    missing = [n for n in needles if n not in fix]
    assert not missing, (entry_id, missing)
