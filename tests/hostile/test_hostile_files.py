"""Classes 5/9/10 (issue 14): bounded, regular-file-only reads. FIFOs, devices and /dev/zero are a
one-line error, never a hang or a MemoryError; YAML alias bombs and deep JSON are capped; a kb
entry with wrong-typed fields is an entry error; output files never destroy an input, never go
through a symlink, and are replaced atomically; partial reads are reported."""
from __future__ import annotations

import gzip
import os
import time

import pytest
import yaml

from envcheck import safeio
from envcheck.errors import UsageError
from envcheck.probe.fs import Root

BOMB = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))


@pytest.fixture
def fifo(tmp_path):
    p = tmp_path / "pipe"
    os.mkfifo(p)
    return p


def test_fifo_and_devices_are_one_line_errors_without_blocking(fifo):
    t0 = time.monotonic()
    for path in (fifo, "/dev/zero", "/dev/null"):
        with pytest.raises(UsageError) as e:
            safeio.read_text_bounded(path, 1024, what="--facts")
        assert "\n" not in str(e.value) and "expected a regular file" in str(e.value)
        with pytest.raises(UsageError):
            safeio.require_regular_file(path)
    assert time.monotonic() - t0 < 5


def test_size_limit_and_encoding(tmp_path):
    big = tmp_path / "big"
    big.write_bytes(b"x" * 2048)
    with pytest.raises(UsageError, match="more than the 1,024 allowed"):
        safeio.read_text_bounded(big, 1024)
    bad = tmp_path / "bad"
    bad.write_bytes(b"\xff\xfe")
    with pytest.raises(UsageError, match="not UTF-8"):
        safeio.read_text_bounded(bad)
    assert safeio.read_text_bounded(big, 4096) == "x" * 2048


def test_fifo_as_version_file_under_root_does_not_hang(tmp_path):
    d = tmp_path / "usr/local/Ascend/driver"
    d.mkdir(parents=True)
    os.mkfifo(d / "version.info")
    root = Root(str(tmp_path))
    t0 = time.monotonic()
    assert root.read_text("/usr/local/Ascend/driver/version.info") is None
    assert time.monotonic() - t0 < 5
    assert "named pipe" in root.errors["file:/usr/local/Ascend/driver/version.info"]


def test_yaml_alias_bomb_is_refused_quickly():
    t0 = time.monotonic()
    with pytest.raises(yaml.YAMLError) as e:
        safeio.load_yaml_safely(BOMB)
    assert time.monotonic() - t0 < 10
    assert "expands to more than" in e.value.problem and len(str(e.value)) < 300
    with pytest.raises(yaml.YAMLError, match="recursive"):
        safeio.load_yaml_safely("a: &a [*a]\n")
    assert safeio.load_yaml_safely("base: &b {x: 1}\nuse: *b\n") == {"base": {"x": 1}, "use": {"x": 1}}


def test_shipped_matrix_loads_under_the_caps():
    from conftest import REPO

    text = (REPO / "matrix.yaml").read_text(encoding="utf-8")
    assert safeio.load_yaml_safely(text) == yaml.safe_load(text)


def test_json_depth_and_top_level_type():
    with pytest.raises(UsageError, match="nested more than"):
        safeio.load_json_checked("[" * 100_000 + "]" * 100_000, list)
    with pytest.raises(UsageError, match="nested more than 64"):
        safeio.load_json_checked("[" * 100 + "]" * 100, list)
    with pytest.raises(UsageError, match="expected an object at the top level, got an array"):
        safeio.load_json_checked("[]", dict, "--facts f.json")
    assert safeio.load_json_checked('{"a": [1]}') == {"a": [1]}


def test_output_never_an_input_never_through_a_symlink(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("precious\n")
    with pytest.raises(UsageError, match="also an input"):
        safeio.write_output_atomically(log, "<xml/>", inputs=[str(log)])
    hard = tmp_path / "hard.xml"
    os.link(log, hard)
    with pytest.raises(UsageError, match="also an input"):
        safeio.write_output_atomically(hard, "<xml/>", inputs=[str(log)])
    target = tmp_path / "target"
    target.write_text("data\n")
    link = tmp_path / "link.xml"
    link.symlink_to(target)
    with pytest.raises(UsageError, match="symlink"):
        safeio.write_output_atomically(link, "<xml/>")
    dangling = tmp_path / "dangling.xml"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(UsageError, match="symlink"):
        safeio.write_output_atomically(dangling, "<xml/>")
    assert log.read_text() == "precious\n" and target.read_text() == "data\n"
    assert not (tmp_path / "nowhere").exists()


def test_output_replaced_atomically_keeping_its_mode(tmp_path):
    out = tmp_path / "report.xml"
    out.write_text("old")
    os.chmod(out, 0o640)
    safeio.write_output_atomically(out, "new")
    assert out.read_text() == "new" and (os.stat(out).st_mode & 0o777) == 0o640
    assert sorted(os.listdir(tmp_path)) == ["report.xml"]  # no temp file left
    with pytest.raises(UsageError, match="directory"):
        safeio.write_output_atomically(tmp_path, "x")
    with pytest.raises(UsageError, match="No such file"):
        safeio.write_output_atomically(tmp_path / "nodir" / "x.xml", "x")
    with pytest.raises(UsageError, match="No space"):
        safeio.write_output_atomically("/dev/full", "x")


def test_truncated_gzip_reports_what_it_read(tmp_path):
    data = b"".join(b"line %d ERROR EI0006 hccl timeout\n" % i for i in range(100_000))
    g = gzip.compress(data)
    p = tmp_path / "t.log.gz"
    p.write_bytes(g[: len(g) // 2])
    with open(p, "rb") as fh:
        reader = safeio.CountingLines(gzip.GzipFile(fileobj=fh))
        n = sum(1 for line in reader if b"EI0006" in line)
    assert reader.error.startswith("truncated") and n == reader.lines and n > 10_000
    note = reader.partial_note(str(p))
    assert note.startswith(f"{p}: truncated .gz: read {n:,} lines")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every directory")
def test_unreadable_directory_is_an_error(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "a.log").write_text("x")
    os.chmod(locked, 0)
    try:
        files, errors = safeio.walk_errors(str(tmp_path))
    finally:
        os.chmod(locked, 0o755)
    assert files == [] and errors and "cannot read directory" in errors[0]


def test_walk_skips_fifos(tmp_path, fifo):
    (tmp_path / "a.log").write_text("x")
    files, errors = safeio.walk_errors(str(tmp_path))
    assert files == [str(tmp_path / "a.log")] and errors == []


def _entry(tmp_path, front: str):
    cat = tmp_path / "hccl-timeout"
    cat.mkdir(exist_ok=True)
    p = cat / "e.md"
    p.write_text(f"---\nid: e\ntitle: T\n{front}\n---\n## Symptom\nx\n")
    return p


@pytest.mark.parametrize("front,msg", [
    ("patterns: 7", "patterns must be a list"),
    ("patterns: [7]", "patterns[0] must be a mapping"),
    ("patterns: [{regex: 7}]", "patterns[0] must be a mapping with a regex string"),
    ("symptoms: {a: 1}", "symptoms must be a list"),
    ("title_zh: [a, b]", "title_zh must be a string"),
])
def test_wrong_typed_kb_entry_is_an_entry_error(tmp_path, front, msg):
    from envcheck.kb.entries import EntryError, load_kb, parse_entry

    p = _entry(tmp_path, front)
    with pytest.raises(EntryError, match=msg.replace("[", r"\[").replace("]", r"\]")):
        parse_entry(p)
    kb = load_kb(str(tmp_path))
    assert kb.entries == () and len(kb.errors) == 1


def test_kb_search_survives_wrong_types_bombs_and_fifos(tmp_path, monkeypatch):
    from envcheck.kb.search import search

    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(tmp_path / "cache"))
    kb = tmp_path / "kb"
    kb.mkdir()
    _entry(kb, "patterns: 7\nsymptoms: hccl timeout")
    cat = kb / "hccl-init"
    cat.mkdir()
    (cat / "bomb.md").write_text("---\nid: bomb\n" + BOMB.replace("a: &a", "title: &a", 1) + "---\nx\n")
    os.mkfifo(cat / "fifo.md")
    t0 = time.monotonic()
    hits = search("hccl timeout", kb)
    assert time.monotonic() - t0 < 20
    assert [h.id for h in hits] == ["e"]
