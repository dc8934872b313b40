"""`envcheck kb search`: codes first, Chinese and English queries, typos, the cache, no torch."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DATA, REPO

from envcheck.kb.search import search, tokens

MINI = DATA / "kb-mini"
REAL = REPO / "kb"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(tmp_path / "cache"))


def ids(query: str, root: Path = MINI, limit: int = 10) -> list[str]:
    return [h.id for h in search(query, root, limit=limit)]


def test_tokens_split_words_and_cjk_bigrams():
    assert tokens("torch_npu 版本不匹配 HCCL") == ["torch_npu", "hccl", "torch", "npu", "版本", "本不", "不匹", "匹配"]
    assert tokens("the 卡") == ["卡"]


@pytest.mark.parametrize("query,first", [
    ("EI0006", "hccl-socket-timeout-ei0006"),
    ("ei0006", "hccl-socket-timeout-ei0006"),
    ("ERR02200", "hccl-collective-timeout"),
    ("EL0004", "npu-out-of-memory"),
    ("ERR00008 import", "libhccl-not-found"),
    ("libhccl.so cannot open", "libhccl-not-found"),
    ("undefined symbol", "torch-torch-npu-mismatch"),
])
def test_english_and_code_queries(query, first):
    assert ids(query)[0] == first


def test_declared_code_ranks_before_a_mention(tmp_path):
    kb = tmp_path / "kb"
    shutil.copytree(MINI, kb)
    f = kb / "performance" / "log-level-debug.md"  # mentions EI0006 many times in its body
    f.write_text(f.read_text(encoding="utf-8") + "\nEI0006 EI0006 EI0006 EI0006 EI0006 EI0006\n", encoding="utf-8")
    assert ids("EI0006", kb)[:2] == ["hccl-socket-timeout-ei0006", "log-level-debug"]


def test_chinese_queries():
    assert ids("HCCL 超时")[0] == "hccl-collective-timeout"
    assert set(ids("版本不匹配")[:2]) == {"torch-npu-cann-mismatch", "torch-torch-npu-mismatch"}
    assert ids("显存不足")[0] == "npu-out-of-memory"
    assert ids("找不到 libhccl")[0] == "libhccl-not-found"


@pytest.mark.parametrize("query,first", [
    ("timout", "hccl-collective-timeout"),
    ("out of memroy", "npu-out-of-memory"),
    ("undefnied symbol", "torch-torch-npu-mismatch"),
    ("libhcl", "libhccl-not-found"),
])
def test_typos(query, first):
    assert ids(query)[0] == first


def test_nothing_matches(cli):
    assert ids("zzzzqqqq") == []
    r = cli("kb", "search", "zzzzqqqq", "--kb", MINI)
    assert r.rc == 1 and "no kb entries match" in r.err


def test_cli_text_and_json(cli):
    r = cli("kb", "search", "HCCL", "超时", "--kb", MINI, "--limit", "1")
    assert r.rc == 0
    assert r.out.startswith(" 1. hccl-collective-timeout  [hccl-timeout]  ERR02200\n")
    assert "HCCL 集合通信超时" in r.out and "envcheck kb show hccl-collective-timeout" in r.out
    doc = cli("kb", "search", "EI0006", "--kb", MINI, "--json").json()
    top = doc["results"][0]
    assert top["id"] == "hccl-socket-timeout-ei0006" and top["error_codes"] == ["EI0006"]
    assert top["url"].endswith("kb/hccl-init/hccl-socket-timeout-ei0006/")
    assert cli("kb", "search", "x", "--kb", MINI, "--limit", "0").rc == 2


def test_cache_is_outside_the_kb_and_follows_edits(tmp_path):
    kb = tmp_path / "kb"
    shutil.copytree(MINI, kb)
    before = sorted(p for p in kb.rglob("*"))
    assert ids("tokenizer", kb) == []
    cached = list((tmp_path / "cache").glob("kb-index-*.json"))
    assert len(cached) == 1
    assert sorted(p for p in kb.rglob("*")) == before  # nothing written into the kb
    f = kb / "performance" / "log-level-debug.md"
    f.write_text(f.read_text(encoding="utf-8").replace("## Cause", "## Cause\n\nThe tokenizer logs too."),
                 encoding="utf-8")
    assert ids("tokenizer", kb) == ["log-level-debug"]
    f.unlink()
    assert ids("tokenizer", kb) == []


def test_an_index_is_parsed_once_per_process_until_the_kb_changes(tmp_path):
    from envcheck.kb.search import load_index

    kb = tmp_path / "kb"
    shutil.copytree(MINI, kb)
    first = load_index(kb)
    assert load_index(kb) is first  # the same object: the cache file is not parsed again
    f = kb / "performance" / "log-level-debug.md"
    f.write_text(f.read_text(encoding="utf-8") + "\nThe tokenizer logs too.\n", encoding="utf-8")
    again = load_index(kb)
    assert again is not first and again["stamp"] != first["stamp"]


def test_corrupt_or_unwritable_cache_is_ignored(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cache.mkdir()
    assert ids("EI0006")[0] == "hccl-socket-timeout-ei0006"
    (pickled,) = cache.glob("kb-index-*.json")
    pickled.write_bytes(b"not JSON")
    assert ids("EI0006")[0] == "hccl-socket-timeout-ei0006"
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", "/proc/no-such-dir")
    assert ids("EI0006")[0] == "hccl-socket-timeout-ei0006"


def test_search_does_not_import_torch(tmp_path):
    code = ("import sys; from envcheck.cli import main; rc = main(['kb', 'search', 'HCCL', '--kb', sys.argv[1]]);"
            "assert 'torch' not in sys.modules, 'torch imported'; assert 'jieba' not in sys.modules; sys.exit(rc)")
    env = dict(os.environ, ENVCHECK_CACHE_DIR=str(tmp_path))
    p = subprocess.run([sys.executable, "-c", code, str(MINI)], capture_output=True, text=True, env=env,
                       cwd=REPO, timeout=60)
    assert p.returncode == 0, p.stderr


# ---------------------------------------------------------------- the real kb

def _real(query: str, n: int = 3):
    return search(query, REAL, limit=n)


def test_real_kb_error_code_first():
    declaring = [h for h in search("EI0006", REAL, limit=50) if "EI0006" in h.error_codes]
    assert declaring, "some real entry must declare EI0006 (HCCL link set-up timeout)"
    assert _real("EI0006", 1)[0].id == declaring[0].id
    for code in ("ERR02200", "EZ3002"):
        hits = _real(code, 1)
        assert hits and code in hits[0].error_codes, (code, hits)


def test_real_kb_chinese_hccl_timeout():
    hits = _real("HCCL 超时")
    assert hits and hits[0].category in ("hccl-timeout", "hccl-init"), hits
    assert any(h.category == "hccl-timeout" for h in hits), hits


def test_real_kb_chinese_version_mismatch():
    hits = _real("版本不匹配")
    assert len(hits) == 3 and all(h.category == "version-mismatch" for h in hits), hits


@pytest.mark.parametrize("query,category", [
    ("libhccl.so cannot open shared object file", "env-not-loaded"),
    ("torch_npu CANN version mismatch", "version-mismatch"),
    ("npu-smi dcmi module initialize failed", "device-unavailable"),
    ("NPU out of memory", "out-of-memory"),
])
def test_real_kb_english(query, category):
    hits = _real(query, 1)
    assert hits and hits[0].category == category, hits
