"""kb tooling: the entry schema, `kb lint` (file:line), `kb new`, `kb show`, and the wheel's data."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from conftest import DATA, REPO, run_envcheck

from envcheck.checks import known_codes
from envcheck.kb import regex_safety, validate
from envcheck.kb.entries import FRONT_RE, entry_files
from envcheck.kb.lint import lint_path
from envcheck.kb.taxonomy import CATEGORY_IDS

MINI = DATA / "kb-mini"
BROKEN = DATA / "kb-broken"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ENVCHECK_KB_DIR", raising=False)


# ---------------------------------------------------------------- schema

def test_schema_is_valid_draft_2020_12_and_lists_the_taxonomy():
    import jsonschema

    schema = validate.entry_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert tuple(schema["properties"]["category"]["enum"]) == CATEGORY_IDS


def test_taxonomy_ids_match_shared_taxonomy_md():
    taxonomy = REPO.parent / "shared" / "TAXONOMY.md"
    if not taxonomy.exists():
        pytest.skip("shared/TAXONOMY.md is not next to this checkout")
    import re

    ids = re.findall(r"^\| `([a-z-]+)` \|", taxonomy.read_text(encoding="utf-8"), re.M)
    assert tuple(ids) == CATEGORY_IDS


def _front_matters():
    out = []
    for f in entry_files(MINI) + entry_files(BROKEN):
        m = FRONT_RE.match(f.read_text(encoding="utf-8"))
        try:
            out.append((f, yaml.safe_load(m.group(1))))
        except yaml.YAMLError:
            pass
    extra = {"id": "Bad Id", "title": 3, "applies_to": {"cuda": "12"}, "checks": ["EC1", "EC1"]}
    return out + [(Path("synthetic"), extra)]


@pytest.mark.parametrize("path,meta", _front_matters(), ids=lambda v: getattr(v, "name", None))
def test_builtin_validator_agrees_with_jsonschema(path, meta):
    import jsonschema

    schema = validate.entry_schema()
    theirs = {tuple(e.absolute_path) for e in jsonschema.Draft202012Validator(schema).iter_errors(meta)}
    ours = {p for p, _k, _m in validate.errors(meta, schema)}
    assert bool(theirs) == bool(ours)
    assert theirs <= ours | {p[:-1] for p in ours}


# ---------------------------------------------------------------- lint

def test_kb_mini_lints_clean(cli):
    assert lint_path(MINI, known_checks={"EC201"}) == []
    r = cli("kb", "lint", MINI)
    assert r.rc == 0, r.out + r.err
    assert "7 entries, no problems" in r.out


EXPECTED = [
    ("env-not-loaded/bad-front-matter.md", 7, "front matter is not valid YAML"),
    ("version-mismatch/unknown-category.md", 5, "unknown category 'gpu-stuff'"),
    ("hccl-timeout/same-id.md", 2, "duplicate id 'same-id'"),
    ("numerics/pattern-misses-example.md", 13, "does not match its example 'step 11: loss is inf'"),
    ("performance/nested-quantifiers.md", 10, "nested quantifiers"),
    ("performance/other-problems.md", 2, "must equal the file name stem 'other-problems'"),
    ("performance/other-problems.md", 4, "title_zh must be written in Chinese"),
    ("performance/other-problems.md", 5, "must equal the parent folder 'performance'"),
    ("performance/other-problems.md", 7, "symptoms: needs at least 1 item"),
    ("performance/other-problems.md", 8, "unknown check id 'EC999'"),
    ("performance/other-problems.md", 10, "not POSIX ERE"),
    ("performance/other-problems.md", 15, "unknown key 'colour'"),
    ("performance/other-problems.md", 16, "missing required section '## Verify'"),
    ("performance/other-problems.md", 18, "broken link '../numerics/no-such-entry.md'"),
]


def test_kb_broken_fails_with_file_line_messages():
    r = run_envcheck("kb", "lint", "tests/data/kb-broken")
    assert r.rc == 1, r.out + r.err
    lines = r.out.splitlines()
    for rel, line, text in EXPECTED:
        prefix = f"tests/data/kb-broken/{rel}:{line}: "
        assert any(ln.startswith(prefix) and text in ln for ln in lines), (prefix, text, r.out)
    assert len(lines) == len(EXPECTED), r.out  # nothing reported twice, nothing unexpected
    assert "[not a link](nowhere.md)" not in r.out  # links inside code blocks are not links
    assert "14 problem(s)" in r.err


def test_lint_json_and_single_file(cli):
    r = cli("kb", "lint", BROKEN / "numerics" / "pattern-misses-example.md", "--json")
    assert r.rc == 1
    doc = r.json()
    assert doc["ok"] is False and doc["entries"] == 1
    assert [(p["line"], "does not match" in p["message"]) for p in doc["problems"]] == [(13, True)]


def test_lint_missing_path_is_a_usage_error(cli):
    r = cli("kb", "lint", "no/such/kb")
    assert r.rc == 2
    assert r.err.strip() == "envcheck: error: no/such/kb does not exist"


def test_duplicate_front_matter_key_is_reported(tmp_path):
    kb = tmp_path / "kb"
    shutil.copytree(MINI, kb)
    f = kb / "performance" / "log-level-debug.md"
    f.write_text(f.read_text(encoding="utf-8").replace("tags: [logging, slow]", "tags: [logging]\ntags: [slow]"),
                 encoding="utf-8")
    msgs = [(p.line, p.message) for p in lint_path(kb, known_checks=set())]
    assert (13, "duplicate key 'tags' in front matter") in msgs


def test_known_checks_come_from_the_registry(tmp_path):
    from envcheck.checks import by_id

    codes = sorted({c.code for c in by_id().values()})
    kb = tmp_path / "kb"
    shutil.copytree(MINI, kb)
    f = kb / "performance" / "log-level-debug.md"
    listed = ", ".join(codes[:2] + ["EC998"])
    f.write_text(f.read_text(encoding="utf-8").replace("checks: []", f"checks: [{listed}]"), encoding="utf-8")
    msgs = [p.message for p in lint_path(kb, known_codes())]
    assert msgs == ["unknown check id 'EC998' (not registered in envcheck.checks, not retired)"]


@pytest.mark.parametrize("rx", [r"(a+)+$", r"(a*)*b", r"(.*a)*", r"([0-9]+,?){2,}", r"(.|x)+y",
                                r"([A-Z]+[0-9]*)+: failed", r"(ERR|E)+(x+)+"])
def test_backtracking_detector_flags(rx):
    assert regex_safety.backtracking_problems(rx)


@pytest.mark.parametrize("rx", [r"libhccl\.so: cannot open", r"(x[0-9]+)+", r"(ab+)+c", r"a+b+",
                                r"ERR[0-9]{5}", r"(HCCL|HCCP) error [0-9]+", r"( [0-9]+)+",
                                r"(a{1,3}){1,3}"])
def test_backtracking_detector_passes_safe_patterns(rx):
    assert regex_safety.backtracking_problems(rx) == []


def test_flagged_pattern_really_backtracks_catastrophically():
    """The shape the detector rejects takes exponential time in Python re (bounded by a timeout)."""
    code = "import re; re.search(r'([a-z]+[0-9]*)+ slow', 'a' * 40 + '!')"
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([sys.executable, "-c", code], timeout=3)
    safe = "import re; re.search(r'([a-z][0-9]*)+ slow', 'a' * 40 + '!')"
    subprocess.run([sys.executable, "-c", safe], timeout=3, check=True)


@pytest.mark.slow
def test_timed_probe_catches_what_the_static_detector_misses(tmp_path):
    """Two classes that overlap only outside ASCII escape the static first-character check."""
    kb = tmp_path / "kb"
    shutil.copytree(MINI, kb)
    rx = r"([^\x00-\x7f]|[^\x00-\x60])+!"
    assert regex_safety.backtracking_problems(rx) == []
    f = kb / "performance" / "log-level-debug.md"
    f.write_text(f.read_text(encoding="utf-8").replace(
        "patterns: []", f"patterns:\n  - regex: '{rx}'\n    examples:\n      - \"éé!\""), encoding="utf-8")
    assert lint_path(kb, known_checks={"EC201"}) == []
    r = run_envcheck("kb", "lint", kb)
    assert r.rc == 1
    assert r.out.startswith(f"{f}:12: pattern ") and "timed probe" in r.out, r.out
    assert run_envcheck("kb", "lint", kb, "--no-probe").rc == 0


@pytest.mark.parametrize("rx,why", [(r"\d+", "POSIX"), (r"(?:ab)+", "(?:"), (r"a(?=b)", "lookahead"),
                                    (r"a+?", "lazy"), (r"(?i)err", "(?:"), (r"\bx", "use ^ and $")])
def test_portability_flags(rx, why):
    probs = regex_safety.portability_problems(rx)
    assert probs and any(why.split()[0].lower() in p.lower() or why in p for p in probs), probs


@pytest.mark.parametrize("rx", [r"\(?x", r"[(?]x", r"^a[0-9]{2}$", r"(a|b)+"])
def test_portability_passes(rx):
    assert regex_safety.portability_problems(rx) == []


# ---------------------------------------------------------------- real kb

@pytest.mark.slow
def test_real_kb_lints_clean():
    r = run_envcheck("kb", "lint")
    assert r.rc == 0, r.out + r.err


def test_real_kb_covers_every_category_folder_name():
    kb = REPO / "kb"
    cats = {p.parent.name for p in entry_files(kb)}
    assert cats <= set(CATEGORY_IDS), cats - set(CATEGORY_IDS)


# ---------------------------------------------------------------- new

NEW_FLAGS = ["--title", "HCCL port range is blocked", "--title-zh", "HCCL 端口被防火墙拦截",
             "--category", "hccl-init", "--summary-zh", "现象：建链超时。解决：放通 60000-60015 端口。",
             "--symptom", "EI0006 after a firewall change", "--error-code", "EI0006",
             "--regex", "EI0006: Getting socket times out", "--example", "EI0006: Getting socket times out. Reason: 1.",
             "--tag", "network", "--source", "https://example.org/hccl"]


def test_new_writes_a_valid_entry_and_never_overwrites(tmp_path):
    kb = tmp_path / "kb"
    shutil.copytree(MINI, kb)
    r = run_envcheck("kb", "new", "--kb", kb, *NEW_FLAGS)
    assert r.rc == 0, r.err
    f = kb / "hccl-init" / "hccl-port-range-is-blocked.md"
    assert f.exists() and str(f) in r.out
    text = f.read_text(encoding="utf-8")
    assert "title_zh: \"HCCL 端口被防火墙拦截\"" in text
    assert run_envcheck("kb", "lint", kb).rc == 0
    r2 = run_envcheck("kb", "new", "--kb", kb, *NEW_FLAGS[:-2], "--source", "changed")
    assert r2.rc == 2 and "already exists" in r2.err
    assert f.read_text(encoding="utf-8") == text
    hit = run_envcheck("kb", "search", "端口 防火墙", "--kb", kb, "--json").json()["results"][0]
    assert hit["id"] == "hccl-port-range-is-blocked"


def test_new_refuses_an_id_used_in_another_category(tmp_path):
    kb = tmp_path / "kb"
    shutil.copytree(MINI, kb)
    r = run_envcheck("kb", "new", "--kb", kb, "--id", "log-level-debug", *NEW_FLAGS)
    assert r.rc == 2 and "performance/log-level-debug.md already exists" in r.err
    assert not (kb / "hccl-init" / "log-level-debug.md").exists()


@pytest.mark.parametrize("change,msg", [
    (("--category", "gpu"), "is not one of"),
    (("--example", "something else"), "does not match --example"),
    (("--regex", "(a+)+x", "--example", "aax"), "would not pass `kb lint`"),
])
def test_new_rejects_bad_values_without_writing(tmp_path, change, msg):
    kb = tmp_path / "kb"
    shutil.copytree(MINI, kb)
    before = sorted(p.relative_to(kb) for p in kb.rglob("*"))
    flags = list(NEW_FLAGS)
    if change[0] in ("--category",):
        flags[flags.index("--category") + 1] = change[1]
    elif change[0] == "--example":
        flags[flags.index("--example") + 1] = change[1]
    else:
        i = flags.index("--regex")
        flags[i:i + 4] = list(change)
    r = run_envcheck("kb", "new", "--kb", kb, *flags)
    assert r.rc == 2 and msg in r.err, r.err
    assert sorted(p.relative_to(kb) for p in kb.rglob("*")) == before


def test_new_unknown_check_removes_its_own_file(tmp_path):
    kb = tmp_path / "kb"
    shutil.copytree(MINI, kb)
    r = run_envcheck("kb", "new", "--kb", kb, *NEW_FLAGS, "--check", "EC997")
    assert r.rc == 2 and "unknown check id 'EC997'" in r.err
    assert not (kb / "hccl-init" / "hccl-port-range-is-blocked.md").exists()


def test_new_prompts_for_missing_values(tmp_path):
    kb = tmp_path / "kb"
    shutil.copytree(MINI, kb)
    answers = "\n".join(["Checkpoint lacks optimizer state", "断点缺少优化器状态", "checkpoint", "",
                         "现象：恢复后 loss 跳变。解决：保存 optimizer.state_dict()。", "loss jumps after resume",
                         "", "", "", "resume, optimizer", "https://example.org/ckpt"]) + "\n"
    p = subprocess.run([sys.executable, "-m", "envcheck", "kb", "new", "--kb", str(kb), "--interactive"],
                       input=answers, capture_output=True, text=True, cwd=REPO, timeout=60)
    assert p.returncode == 0, p.stderr
    f = kb / "checkpoint" / "checkpoint-lacks-optimizer-state.md"
    assert f.exists()
    assert lint_path(f, known_checks=set()) == []
    assert "tags: [\"resume\", \"optimizer\"]" in f.read_text(encoding="utf-8")
    assert "category (" in p.stderr


# ---------------------------------------------------------------- show

def test_show_renders_the_entry(cli):
    r = cli("kb", "show", "libhccl-not-found", "--kb", MINI)
    assert r.rc == 0, r.err
    for text in ("import torch_npu fails: libhccl.so cannot be opened", "导入 torch_npu 失败：找不到 libhccl.so",
                 "现象：import torch_npu 报 libhccl.so 找不到", "env-not-loaded", "Symptom", "Cause", "Fix",
                 "    source /usr/local/Ascend/ascend-toolkit/set_env.sh", "Verify",
                 "kb/env-not-loaded/libhccl-not-found/", "ImportError: libhccl.so: cannot open shared object file"):
        assert text in r.out, text
    assert "```" not in r.out and "\033[" not in r.out


def test_show_color_always(cli):
    r = cli("kb", "show", "log-level-debug", "--kb", MINI, "--color", "always")
    assert r.rc == 0 and "\033[1mTraining is slow because the CANN log level is left at debug\033[0m" in r.out


def test_show_json(cli):
    r = cli("kb", "show", "npu-out-of-memory", "--kb", MINI, "--json")
    doc = r.json()
    assert doc["error_codes"] == ["EL0004"] and doc["category"] == "out-of-memory"
    assert doc["sections"]["Fix"].startswith("Lower the micro-batch size")
    assert doc["patterns"][0]["examples"][0].startswith("RuntimeError: NPU out of memory")
    assert doc["url"].endswith("kb/out-of-memory/npu-out-of-memory/")


def test_show_unknown_id_suggests(cli):
    r = cli("kb", "show", "npu-out-of-memroy", "--kb", MINI)
    assert r.rc == 2 and "did you mean npu-out-of-memory" in r.err and "Traceback" not in r.err


def test_kb_env_var_points_at_another_kb(cli, monkeypatch):
    monkeypatch.setenv("ENVCHECK_KB_DIR", str(MINI))
    r = cli("kb", "show", "log-level-debug", "--json")
    assert r.rc == 0 and r.json()["title_zh"] == "日志级别为 debug 导致训练变慢"
    monkeypatch.setenv("ENVCHECK_KB_DIR", "/no/such/kb")
    assert cli("kb", "search", "x").rc == 2


def test_page_url_uses_site_url(monkeypatch):
    from envcheck.kb.entries import load_kb
    from envcheck.kb.site import page_url

    e = load_kb(MINI).get("log-level-debug")
    monkeypatch.setenv("ENVCHECK_SITE_URL", "https://kb.example.org/")
    assert page_url(e) == "https://kb.example.org/kb/performance/log-level-debug/"
    monkeypatch.setenv("ENVCHECK_SITE_URL", "")
    assert page_url(e) == "kb/performance/log-level-debug/"


# ---------------------------------------------------------------- wheel

@pytest.mark.slow
def test_wheel_ships_kb_and_matrix(tmp_path):
    src = tmp_path / "src"  # a copy of what the wheel is built from: the build never touches the tree
    for name in ("envcheck", "kb"):
        shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "matrix.yaml"):
        shutil.copy(REPO / name, src / name)
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "w"), str(src)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    (whl,) = (tmp_path / "w").glob("envcheck-*.whl")
    zf = zipfile.ZipFile(whl)
    names = set(zf.namelist())
    assert "envcheck/_data/matrix.yaml" in names
    assert "envcheck/schemas/kb-entry.schema.json" in names
    shipped = {n for n in names if n.startswith("envcheck/_data/kb/") and n.endswith(".md")}
    expected = {f"envcheck/_data/kb/{p.relative_to(REPO / 'kb').as_posix()}" for p in (REPO / "kb").rglob("*.md")}
    assert expected and expected <= shipped
    # The unpacked wheel finds its own kb (resources.kb_dir() -> envcheck/_data/kb), away from the tree.
    site = tmp_path / "site"
    zf.extractall(site)
    code = ("import sys, envcheck; from envcheck import resources; from envcheck.cli import main; "
            "print(envcheck.__file__); print(resources.kb_dir()); print(resources.matrix_path()); "
            "sys.stdout.flush(); sys.exit(main(['kb', 'search', 'EI0006', '--json']))")
    env = dict(os.environ, PYTHONPATH=str(site), ENVCHECK_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("ENVCHECK_KB_DIR", None)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert p.returncode == 0, p.stderr
    mod, kb_dir, matrix, *rest = p.stdout.splitlines()
    assert mod.startswith(str(site)) and kb_dir == str(site / "envcheck" / "_data" / "kb")
    assert matrix == str(site / "envcheck" / "_data" / "matrix.yaml")
    assert json.loads("\n".join(rest))["results"][0]["path"].startswith(str(site))
