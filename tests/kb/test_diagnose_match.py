"""The matcher behind `envcheck diagnose` and kb linking, against a small fixture kb of its own."""
from __future__ import annotations

import io
import time

import pytest
from conftest import DATA

from envcheck.kb.entries import load_kb
from envcheck.kb.match import (
    GENERIC_SPEC,
    Matcher,
    Rule,
    ScanResult,
    _blocks,
    kb_matcher,
    line_severity,
    rules_from_entries,
    specificity,
)

FIXTURE_KB = DATA / "diagnose" / "kb"
EVIL_KB = DATA / "diagnose" / "kb-evil"
ENGINES = ["re2", "re"]

LIBHCCL = "ImportError: libhccl.so: cannot open shared object file: No such file or directory"
OOM = ("RuntimeError: NPU out of memory. Tried to allocate 5.03 GiB (NPU 3; 60.96 GiB total capacity; "
       "49.47 GiB already allocated)")
SOCKET = ("[ERROR] HCCL(137309,all_reduce_test):2025-12-24-16:19:45.416.014 [hccl_socket_manager.cc:813] "
          "[137400][Wait][LinkEstablish]wait socket establish timeout, role[0] rank[0] timeout[120 s]")
NOISE = ("[INFO] RUNTIME(2082291,python3):2024-07-04-14:14:25.036.721 [stars_engine.cc:1321]2082291 "
         "ProcLogicCqReport:[INIT][DEFAULT]Task run ok, device_id=0, stream_id=2, task_id={i}")


def matcher(engine: str = "re2", kb=FIXTURE_KB, **kw) -> Matcher:
    return Matcher(rules_from_entries(load_kb(str(kb)).entries), engine=engine, **kw)


def scan(m: Matcher, text: str | bytes, workers: int | None = None, budget: float = 60) -> ScanResult:
    data = text.encode() if isinstance(text, str) else text
    r = ScanResult()
    m.scan_stream(io.BytesIO(data), "t.log", r, budget=budget, workers=workers)
    return r


@pytest.mark.parametrize("regex, expected", [
    ("abc", 3),
    (r"lib(hccl|ascendcl)\.so: cannot", 18),  # 3 + min(4, 8) + 11
    ("a|bcd", 1),
    ("(foo)?bar", 3),
    (r"[^a\]]+x{2}", 2),
    (r"ERR[0-9]{5}", 3),
    (r"\[Wait\]\d+", 6),
    ("x*y+.", 1),
])
def test_specificity_counts_required_literals(regex, expected):
    assert specificity(regex) == expected


@pytest.mark.parametrize("engine", ENGINES)
def test_finds_entries_with_line_numbers_and_ranks_specific_first(engine):
    lines = [NOISE.format(i=i) for i in range(10)]
    lines[2] = "EZ9999: Inner Error!"
    lines[4] = "EZ9999: Inner Error!"
    lines[5] = "EZ9999: Inner Error!"
    lines[7] = LIBHCCL
    r = scan(matcher(engine), "\n".join(lines) + "\n")
    ranked = r.ranked()
    assert [e.entry_id for e in ranked] == ["fx-libs-missing", "fx-inner-error"]  # specific beats frequent
    assert [(h.source, h.line) for h in ranked[0].first] == [("t.log", 8)]
    assert ranked[1].count == 3 and [h.line for h in ranked[1].first] == [3, 5, 6]
    assert r.lines == 10 and r.files == 1


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("chunk", [64, 97, 1 << 20])
def test_line_numbers_exact_across_block_boundaries(engine, chunk):
    lines = [NOISE.format(i=i) for i in range(300)]
    needles = {17: LIBHCCL, 150: OOM, 151: OOM, 299: SOCKET}
    for k, v in needles.items():
        lines[k] = v
    m = matcher(engine, chunk=chunk, max_hits=10)
    r = scan(m, "\n".join(lines))  # no trailing newline: the last line still counts
    got = {h.line: e.entry_id for e in r.entries.values() for h in e.first}
    assert got == {18: "fx-libs-missing", 151: "fx-npu-oom", 152: "fx-npu-oom", 300: "fx-socket-timeout"}
    assert r.lines == 300


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_thread_pool_merges_blocks_in_input_order(workers):
    lines = [NOISE.format(i=i) for i in range(2000)]
    for k in (5, 700, 1300, 1999):
        lines[k] = OOM
    m = matcher("re2", chunk=4096, max_hits=10)
    r = scan(m, "\n".join(lines) + "\n", workers=workers)
    assert [h.line for h in r.entries["fx-npu-oom"].first] == [6, 701, 1301, 2000]


@pytest.mark.parametrize("engine", ENGINES)
def test_long_lines_are_cut_not_loaded(engine):
    long_tail = "A" * 300_000 + " " + LIBHCCL  # the needle lies beyond the cut
    long_head = OOM + " " + "B" * 300_000  # the needle is at the start: kept
    text = "\n".join(["start", long_tail, long_head, SOCKET]) + "\n"
    m = matcher(engine, chunk=65536, max_line=4096)
    r = scan(m, text)
    assert "fx-libs-missing" not in r.entries
    assert [h.line for h in r.entries["fx-npu-oom"].first] == [3]
    assert [h.line for h in r.entries["fx-socket-timeout"].first] == [4]
    assert r.cut_lines == 2 and r.lines == 4
    assert len(r.entries["fx-npu-oom"].first[0].text) < 1000  # excerpts are short too


def test_blocks_memory_is_bounded_by_chunk_plus_max_line():
    data = b"x" * 1_000_000 + b"\nshort\n" + b"y" * 50 + b"\n"
    blocks = list(_blocks(io.BytesIO(data), 8192, 1000))
    assert max(len(b) for b, *_ in blocks) <= 8192 + 1001
    joined = b"".join(b[s:e] for b, s, e, _ in blocks)
    assert joined == b"x" * 1000 + b"\nshort\n" + b"y" * 50 + b"\n"
    assert sum(c for *_, c in blocks) == 1


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 7, 16, 64, 4096])
@pytest.mark.parametrize("max_line", [4, 10, 1000])
def test_blocks_reassemble_lines_for_any_read_size(chunk, max_line):
    lines = [b"", b"a", b"bb", b"ccc" * 5, b"", b"dddd", b"e" * 40, b"f"]
    data = b"\n".join(lines)  # no trailing newline
    got = b"".join(b[s:e] for b, s, e, _ in _blocks(io.BytesIO(data), chunk, max_line)).split(b"\n")[:-1]
    # matching only ever looks at a line's first max_line bytes; a line is cut physically when it
    # does not fit in one read, so no line held in memory is longer than the larger of the two
    assert [line[:max_line] for line in got] == [line[:max_line] for line in lines]
    assert max(len(line) for line in got) <= max(max_line, chunk)
    cuts = sum(c for *_, c in _blocks(io.BytesIO(data), chunk, max_line))
    assert cuts <= sum(len(line) > max_line for line in lines)
    if chunk <= max_line:
        assert cuts == sum(len(line) > max_line for line in lines)


@pytest.mark.parametrize("engine", ENGINES)
def test_binary_input_is_skipped_with_a_note(engine):
    r = ScanResult()
    ok = matcher(engine).scan_stream(io.BytesIO(b"\x7fELF\x00\x01" + LIBHCCL.encode()), "a.bin", r)
    assert ok is False and not r.entries and r.notes == ["a.bin: binary file skipped"]


@pytest.mark.parametrize("engine", ENGINES)
def test_error_codes_known_and_unknown(engine):
    text = "\n".join([
        "EI0006: Getting socket times out. Reason: 1. The remote does not initiate a connect request.",
        "EQ4321: [PID: 1] 2025-01-01-00:00:00.000.000 something new",
        "[ERROR] 2025-01-15-20:59:48 (PID:6038, Device:0, RankID:-1) ERR03005 GRAPH internal error",
        "EQ4321: again",
        "module_name=E39999 while HCCL_E10001 and EXCEPTION and 0xE12345a are not codes",
    ])
    r = scan(matcher(engine), text)
    known = {c for e in load_kb(str(FIXTURE_KB)).entries for c in e.error_codes}
    assert set(r.codes) == {"EI0006", "EQ4321", "ERR03005", "E39999"}
    unknown = r.unknown_codes(known)
    assert [(c.code, c.count, c.first.line) for c in unknown] == [("EQ4321", 2, 2), ("E39999", 1, 5),
                                                                  ("ERR03005", 1, 3)]
    assert r.entries["fx-socket-timeout"].count == 1


def test_an_entry_error_code_alone_links_weakly():
    r = scan(matcher(), "something failed\nERR02011 DIST timeout error\n")
    e = r.entries["fx-notify-timeout"]
    assert e.count == 1 and e.specificity == len("ERR02011")


@pytest.mark.parametrize("engine", ENGINES)
def test_pattern_never_spans_lines(engine):
    # [^']+ must not run across a newline into the next line's quote
    text = ("The operator 'aten::x\nfoo' is not currently supported on the NPU backend and will fall back to run "
            "on the CPU\n")
    assert "fx-cpu-fallback" not in scan(matcher(engine), text).entries


def test_catastrophic_pattern_under_python_re_stops_at_the_budget():
    m = matcher("re", kb=EVIL_KB)
    text = "step 1: loss is nan\n" + "x" * 40 + "z\n" + "step 3: loss is nan\n"
    t0 = time.monotonic()
    r = scan(m, text, budget=1.0)
    elapsed = time.monotonic() - t0
    assert elapsed < 5, elapsed
    assert r.budget_exceeded and any("time budget exceeded" in n for n in r.notes)
    assert [h.line for h in r.entries["fx-evil"].first] == [1]  # found before the stall is kept


def test_catastrophic_pattern_is_linear_under_re2():
    m = matcher("re2", kb=EVIL_KB)
    text = ("x" * 5000 + "z\n") * 200 + "step 3: loss is nan\n"
    t0 = time.monotonic()
    r = scan(m, text, budget=30)
    assert time.monotonic() - t0 < 5
    assert not r.budget_exceeded and [h.line for h in r.entries["fx-evil"].first] == [201]


def test_budget_is_checked_between_blocks():
    m = matcher("re2", chunk=1024)
    r = scan(m, (NOISE + "\n") * 10_000, budget=1e-9)
    assert r.budget_exceeded and r.bytes < 100_000


@pytest.mark.parametrize("engine", ENGINES)
def test_anchored_patterns_match_at_every_line_start_and_end(engine):
    m = Matcher([Rule("anchored", "^\\[ERROR\\] HCCL.*failed$", 20)], engine=engine, chunk=64)
    text = "[ERROR] HCCL x failed\nnot [ERROR] HCCL y failed\n[ERROR] HCCL z failed later\n[ERROR] HCCL w failed\n"
    r = scan(m, text * 3)
    assert r.entries["anchored"].count == 6
    assert [h.line for h in r.entries["anchored"].first] == [1, 4, 5]


def test_unsupported_pattern_is_skipped_with_a_note():
    rules = [Rule("bad", "(?<=x)y", 1), Rule("good", "needle", 6)]
    m = Matcher(rules, engine="re2")
    assert [r.entry_id for r in m.rules] == ["good"] and "bad" in m.notes[0]
    assert [r.entry_id for r in m.match_line("a needle here")] == ["good"]


@pytest.mark.parametrize("engine", ENGINES)
def test_patterns_that_would_break_the_combined_prefilter_are_skipped(engine):
    rules = [Rule("unbalanced", "a)(b", 2), Rule("empty", "x*", 0), Rule("good", "needle", 6)]
    m = Matcher(rules, engine=engine)
    assert [r.entry_id for r in m.rules] == ["good"]
    assert len(m.notes) == 2 and "matches empty text" in m.notes[1]
    r = scan(m, "hay\nneedle\nhay\n")
    assert list(r.entries) == ["good"] and r.entries["good"].count == 1


def test_engines_agree_on_the_fixture_examples():
    kb = load_kb(str(FIXTURE_KB))
    examples = [(e.id, x) for e in kb.entries for p in e.patterns for x in p.examples]
    for engine in ENGINES:
        m = matcher(engine)
        for eid, x in examples:
            assert eid in {r.entry_id for r in m.match_line(x)}, (engine, eid, x)


def test_scan_text_for_short_evidence():
    r = matcher().scan_text("Traceback (most recent call last):\n  ...\n" + LIBHCCL, source="finding")
    assert [(e.entry_id, e.first[0].source, e.first[0].line) for e in r.ranked()] == [
        ("fx-libs-missing", "finding", 3)]


def test_without_re2_auto_falls_back_to_python_re(monkeypatch):
    import envcheck.kb.match as match

    monkeypatch.setattr(match, "_re2", None)
    m = matcher("auto")
    assert m.engine == "re"
    assert [e.entry_id for e in scan(m, LIBHCCL + "\n").ranked()] == ["fx-libs-missing"]
    with pytest.raises(RuntimeError, match="google-re2 is not installed"):
        matcher("re2")


def test_cli_without_re2_reports_a_usage_error(monkeypatch, cli):
    import envcheck.kb.match as match

    monkeypatch.setattr(match, "_re2", None)
    match.kb_matcher.cache_clear()
    try:
        r = cli("diagnose", "--kb", str(FIXTURE_KB), "--engine", "re2", "-")
    finally:
        match.kb_matcher.cache_clear()
    assert r.rc == 2 and "google-re2 is not installed" in r.err


def test_cli_notes_the_slow_fallback(monkeypatch, cli, tmp_path):
    import envcheck.kb.match as match

    log = tmp_path / "x.log"
    log.write_text(LIBHCCL + "\n")
    monkeypatch.setattr(match, "_re2", None)
    match.kb_matcher.cache_clear()
    try:
        d = cli("diagnose", "--kb", str(FIXTURE_KB), "--json", str(log)).json()
    finally:
        match.kb_matcher.cache_clear()
    assert d["engine"] == "re" and d["notes"][0].startswith("google-re2 is not installed")
    assert [m["id"] for m in d["matches"]] == ["fx-libs-missing"]


class _SlowPaste(io.RawIOBase):
    """A user pasting a traceback: the text arrives after a pause."""

    def __init__(self, text: bytes, pause: float) -> None:
        self.parts, self.pause = [text], pause

    def read(self, n: int = -1) -> bytes:
        time.sleep(self.pause)
        return self.parts.pop() if self.parts else b""


@pytest.mark.parametrize("interactive, exceeded", [(True, False), (False, True)])
def test_waiting_for_pasted_input_does_not_spend_the_budget(interactive, exceeded):
    r = ScanResult()
    matcher().scan_stream(_SlowPaste(LIBHCCL.encode() + b"\n", 0.3), "<stdin>", r, budget=0.2,
                          interactive=interactive)
    assert r.budget_exceeded is exceeded
    assert ("fx-libs-missing" in r.entries) is not exceeded


@pytest.mark.parametrize("engine", ENGINES)
def test_a_wrapper_pattern_names_its_entry_only_when_nothing_specific_does(engine):
    """`wrapper: true` marks a line printed for several causes (PyTorch's `Failed to load the backend extension`
    for any exception in torch_npu's import): the entry is still named when that line is all there is, but a
    specific pattern on any error line outranks it, even a later one."""
    wrap = "RuntimeError: Failed to load the backend extension: torch_npu. You can disable extension auto-loading"
    rules = [Rule("wrapped", r"Failed to load the backend extension: torch_npu", 45, wrapper=True),
             Rule("cause", r"libhccl\.so: cannot open shared object file", 40)]
    both = f"{wrap}\n{LIBHCCL}\n"
    assert [e.entry_id for e in scan(Matcher(rules, engine=engine), both).ranked()] == ["cause", "wrapped"]
    alone = scan(Matcher(rules, engine=engine), wrap + "\n").ranked()
    assert [e.entry_id for e in alone] == ["wrapped"] and alone[0].by_pattern and not alone[0].specific
    # the same rule without the mark: the earlier line's entry comes first, as for any two specific patterns
    plain = [Rule("wrapped", rules[0].regex, 45), rules[1]]
    assert [e.entry_id for e in scan(Matcher(plain, engine=engine), both).ranked()] == ["wrapped", "cause"]


def test_no_wrapper_line_of_the_kb_outranks_a_specific_line_of_another_entry():
    """Every `wrapper: true` pattern of the shipped kb, pasted with the example line of a specific pattern of another
    category (as severe, matching no wrapper rule), before it or after it: the specific entry ranks above the
    wrapper's. Three partner entries per wrapper, the first in the kb's order."""
    kb, m = load_kb(), kb_matcher()
    wrappers = [(e, p) for e in kb.entries for p in e.patterns if p.wrapper]
    assert wrappers, "no pattern of the shipped kb is marked wrapper: true (the kb reads the mark)"
    specific = [(e, ex) for e in kb.entries for p in e.patterns
                if not p.wrapper and specificity(p.regex) >= GENERIC_SPEC for ex in p.examples[:1]]
    checked = 0
    for w_entry, w in wrappers:
        line = w.examples[0]
        partners = [(e, ex) for e, ex in specific if e.category != w_entry.category
                    and line_severity(ex) >= line_severity(line)
                    and not any(r.wrapper or r.entry_id == w_entry.id for r in m.match_line(ex))][:3]
        assert partners, w.regex
        for e, ex in partners:
            for text in (f"{line}\n{ex}\n", f"{ex}\n{line}\n"):
                ids = [h.entry_id for h in m.scan_text(text).ranked()]
                assert ids.index(e.id) < ids.index(w_entry.id), (w.regex, e.id, ids[:4])
                checked += 1
    assert checked >= 6 * len(wrappers)
