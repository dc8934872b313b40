"""Class 4 (issue 14): the kb search cache holds data, never code. A planted kb-index-*.pickle (the
old name) or a planted JSON of the wrong shape never runs and never changes results."""
from __future__ import annotations

import json
import os
import pickle

from envcheck.kb import search as ks


class _Evil:
    def __reduce__(self):
        return (open, (os.environ["PWN_FLAG"], "w"))


def test_planted_pickle_never_executes(tmp_path, monkeypatch):
    cache = tmp_path / "shared"
    cache.mkdir()
    flag = tmp_path / "PWNED"
    monkeypatch.setenv("PWN_FLAG", str(flag))
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(cache))
    from envcheck import resources

    key = ks._cache_file(resources.kb_dir()).name.split("-")[2].split(".")[0]
    for name in (f"kb-index-{key}.pickle", f"kb-index-{key}.json"):
        (cache / name).write_bytes(pickle.dumps(_Evil()))
    assert ks.search("hccl timeout")
    assert not flag.exists()
    # the cache written is plain JSON that validates
    idx = json.loads((cache / f"kb-index-{key}.json").read_text())
    assert ks.valid_index(idx)


def test_wrong_shaped_json_cache_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(tmp_path))
    from envcheck import resources

    root = resources.kb_dir()
    want = [h.id for h in ks.search("EI0006")]
    cf = ks._cache_file(root)
    idx = json.loads(cf.read_text())
    idx["postings"]["ei0006"] = [[10 ** 9, 1.0]]  # an index out of range
    cf.write_text(json.dumps(idx))
    assert not ks.valid_index(idx)
    assert [h.id for h in ks.search("EI0006")] == want
    for bad in ("[]", '{"version": 7}', "x" * 10, json.dumps({**idx, "entries": [{"id": 1}]})):
        cf.write_text(bad)
        assert [h.id for h in ks.search("EI0006")] == want


def test_cache_that_is_a_fifo_or_symlink_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(tmp_path))
    from envcheck import resources

    cf = ks._cache_file(resources.kb_dir())
    os.mkfifo(cf)
    assert ks._read_cache(cf) is None
    os.unlink(cf)
    other = tmp_path / "elsewhere.json"
    other.write_text("{}")
    cf.symlink_to(other)
    assert ks._read_cache(cf) is None
