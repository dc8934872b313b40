"""Match error text and logs against kb patterns: one RE2 prefilter over big chunks, exact per-line checks.

The scan is built for untrusted, gigabyte-sized logs:

* input is read in large chunks (``CHUNK`` bytes) that end on a line boundary, so memory stays
  bounded whatever the file size; a line longer than ``max_line`` bytes is cut there and the rest
  of it is skipped without being kept;
* with ``google-re2`` (linear-time DFA, no backtracking) all patterns are combined into one
  prefilter that runs over whole chunks; only lines it hits are confirmed pattern by pattern with
  an ``re2.Set``. Without re2 a pure-Python ``re`` engine checks line by line (slower);
* every scan has a time budget: it is checked between chunks and lines, and the Python engine is
  also interrupted inside a regex by a timer signal (``_sre`` checks signals), so one
  catastrophically backtracking pattern stops the scan at the budget instead of stalling it.

Patterns are in the common subset of Python ``re`` and POSIX ERE (see kb/CONTRIBUTING), so the
same text works for RE2, ``re`` and ``grep -E``.
"""
from __future__ import annotations

import functools
import os
import re
import signal
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import IO, Iterable, Iterator, Sequence

CHUNK = 8 << 20  # bytes read at a time
MAX_LINE = 64 << 10  # bytes of one line kept for matching; the rest is cut
EXCERPT = 400  # characters of a matching line kept for display
BINARY_PROBE = 8192  # bytes inspected for a NUL to call a file binary
DEFAULT_BUDGET = 300.0  # seconds per scan
SPECIFIC_ENOUGH = 32  # literal characters beyond which a pattern counts as fully specific

# Error codes that identify a failure without any kb pattern: CANN's `EI0006`, `EE9999`, `E39999`
# (level E, a module character, four digits) and torch_npu's `ERR01007` (submodule + error type).
CODE_REGEXES = (r"\bE[0-9A-Z][0-9]{4}\b", r"\bERR[0-9]{5}\b")
_CODE_RE = re.compile("|".join(CODE_REGEXES).encode())

try:  # google-re2: DFA-based, linear time, wheels for x86_64 and aarch64
    import re2 as _re2
except ImportError:  # pragma: no cover - exercised by forcing engine="re"
    _re2 = None


class Budget:
    """A scan's time budget, shared by every stream of one scan."""

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds


class BudgetExceeded(Exception):
    """The scan ran past its time budget; `partial` holds what the interrupted block found."""

    partial: "_Block | None" = None


@dataclass(frozen=True)
class Rule:
    """One kb pattern: which entry it belongs to and how specific it is."""

    entry_id: str
    regex: str
    specificity: int


@dataclass(frozen=True)
class Hit:
    """One matching line."""

    source: str
    line: int
    text: str

    def to_dict(self) -> dict:
        return {"file": self.source, "line": self.line, "text": self.text}


@dataclass
class EntryHits:
    """Everything one kb entry matched during a scan."""

    entry_id: str
    count: int = 0
    specificity: int = 0
    order: int = 0
    first: list[Hit] = field(default_factory=list)
    patterns: set[str] = field(default_factory=set)

    def sort_key(self) -> tuple:
        # more specific patterns first, then more hits, then whatever showed up first in the input.
        # Past SPECIFIC_ENOUGH literal characters a pattern is as good as unique: a longer literal
        # (often a warning quoted whole) must not outrank an error matched on more lines.
        return (-min(self.specificity, SPECIFIC_ENOUGH), -self.count, self.order, self.entry_id)


@dataclass
class CodeHits:
    code: str
    count: int = 0
    first: Hit | None = None


@dataclass
class ScanResult:
    """Accumulated over every input of one scan."""

    entries: dict[str, EntryHits] = field(default_factory=dict)
    codes: dict[str, CodeHits] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    files: int = 0
    bytes: int = 0
    lines: int = 0
    cut_lines: int = 0
    budget_exceeded: bool = False
    seconds: float = 0.0
    _seq: int = 0

    def ranked(self) -> list[EntryHits]:
        return sorted(self.entries.values(), key=EntryHits.sort_key)

    def unknown_codes(self, known: Iterable[str]) -> list[CodeHits]:
        known_set = {k.upper() for k in known}
        rest = [c for c in self.codes.values() if c.code.upper() not in known_set]
        return sorted(rest, key=lambda c: (-c.count, c.code))


def specificity(regex: str) -> int:
    """Literal characters every match must contain (an alternation counts its weakest branch)."""
    return _Spec(regex).alt()


class _Spec:
    """A tiny recursive-descent walk over the regex subset kb patterns use."""

    def __init__(self, s: str) -> None:
        self.s, self.i = s, 0

    def _peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def alt(self) -> int:
        best = [self.seq()]
        while self._peek() == "|":
            self.i += 1
            best.append(self.seq())
        return min(best)

    def seq(self) -> int:
        total = 0
        while self._peek() not in ("", "|", ")"):
            n = self.atom()
            c = self._peek()
            if c in ("*", "?"):
                n, self.i = 0, self.i + 1
            elif c == "+":
                self.i += 1
            elif c == "{":
                m = re.match(r"\{([0-9]*)(,[0-9]*)?\}", self.s[self.i:])
                if m:
                    n = n * int(m.group(1)) if m.group(1) else 0
                    self.i += m.end()
            if self._peek() == "?":  # lazy suffix (not in the subset, but harmless)
                self.i += 1
            total += n
        return total

    def atom(self) -> int:
        c = self.s[self.i]
        if c == "\\":
            nxt = self.s[self.i + 1:self.i + 2]
            self.i += 2
            return 0 if nxt in ("d", "D", "s", "S", "w", "W", "b", "B", "A", "Z", "") else 1
        if c == "[":
            self.i += 1
            if self._peek() == "^":
                self.i += 1
            if self._peek() == "]":
                self.i += 1
            while self._peek() not in ("", "]"):
                self.i += 2 if self._peek() == "\\" else 1
            self.i += 1
            return 0
        if c == "(":
            self.i += 1
            if self.s.startswith("?:", self.i):
                self.i += 2
            n = self.alt()
            if self._peek() == ")":
                self.i += 1
            return n
        self.i += 1
        return 0 if c in ".^$" else 1


def rules_from_entries(entries: Iterable) -> list[Rule]:
    """One Rule per pattern of every kb entry, plus one per CANN / torch_npu code in `error_codes`.

    A code alone is weak evidence (`EZ9999` is an internal error that many failures end in), so
    its specificity is just its length: any real pattern of another entry outranks it.
    """
    out = []
    for e in entries:
        for p in e.patterns:
            if p.regex:
                out.append(Rule(e.id, p.regex, specificity(p.regex)))
        for code in e.error_codes:
            if _CODE_RE.fullmatch(code.encode()):
                out.append(Rule(e.id, rf"\b{code}\b", len(code)))
    return out


@dataclass
class _Block:
    """What one block of lines matched, with line numbers relative to the block (0-based)."""

    newlines: int = 0
    entries: dict[str, list] = field(default_factory=dict)  # id -> [count, spec, patterns, [(line, text)]]
    codes: dict[str, list] = field(default_factory=dict)  # code -> [count, (line, text)]


class Matcher:
    """All kb patterns compiled once; scans text, files and streams."""

    def __init__(self, rules: Sequence[Rule], engine: str = "auto", max_hits: int = 3,
                 max_line: int = MAX_LINE, chunk: int = CHUNK) -> None:
        if engine == "auto":
            engine = "re2" if _re2 is not None else "re"
        if engine == "re2" and _re2 is None:
            raise RuntimeError("google-re2 is not installed (pip install google-re2)")
        if engine not in ("re2", "re"):
            raise ValueError(f"unknown regex engine {engine!r}")
        self.engine, self.max_hits, self.max_line, self.chunk = engine, max_hits, max_line, chunk
        self.notes: list[str] = []
        self.rules: list[Rule] = []
        (self._compile_re2 if engine == "re2" else self._compile_re)(list(rules))

    # -- compilation -------------------------------------------------------------------------
    def _compile_re2(self, rules: list[Rule]) -> None:
        opts = _re2.Options()
        opts.never_nl = True  # a match never spans lines, even through [^x] classes
        opts.never_capture = True
        opts.max_mem = 64 << 20  # room for the combined DFA; past it RE2 falls back to slower NFA
        self._set = _re2.Set.SearchSet(opts)
        for r in rules:
            try:
                rx = _re2.compile(r.regex.encode(), opts)
                _re2.compile(f"(?:{r.regex})".encode(), opts)  # must also stand inside the combined prefilter
            except _re2.error as exc:
                self.notes.append(f"pattern of {r.entry_id} skipped (RE2 cannot compile it: {exc}): {r.regex}")
                continue
            if self._matches_empty(r, rx.search(b"")):
                continue
            self._set.Add(r.regex.encode())
            self.rules.append(r)
        parts = [f"(?:{r.regex})" for r in self.rules] + list(CODE_REGEXES)
        self._pre = _re2.compile(("(?m)" + "|".join(parts)).encode(), opts)
        if self.rules:
            self._set.Compile()

    def _compile_re(self, rules: list[Rule]) -> None:
        self._res = []
        for r in rules:
            try:
                rx = re.compile(r.regex.encode())
                re.compile(f"(?:{r.regex})".encode())  # must also stand inside the combined prefilter
            except re.error as exc:
                self.notes.append(f"pattern of {r.entry_id} skipped (does not compile: {exc}): {r.regex}")
                continue
            if self._matches_empty(r, rx.search(b"")):
                continue
            self._res.append(rx)
            self.rules.append(r)
        parts = [f"(?:{r.regex})" for r in self.rules] + list(CODE_REGEXES)
        self._pre_re = re.compile("|".join(parts).encode(), re.M)  # ^ after each newline, as with RE2

    def _matches_empty(self, r: Rule, m: object) -> bool:
        """A pattern matching empty text would match every line: skip it, say so."""
        if m is not None:
            self.notes.append(f"pattern of {r.entry_id} skipped (it matches empty text, so every line): {r.regex}")
        return m is not None

    # -- public API --------------------------------------------------------------------------
    def scan_text(self, text: str, source: str = "<text>", budget: float = DEFAULT_BUDGET) -> ScanResult:
        import io

        result = ScanResult()
        data = text.encode("utf-8", "replace")
        workers = None if len(data) > self.chunk else 1  # no thread pool for short evidence
        self.scan_stream(io.BytesIO(data), source, result, budget=budget, workers=workers)
        return result

    def match_line(self, line: str | bytes) -> list[Rule]:
        """Rules matching one line (no budget: for short text only)."""
        b = line.encode("utf-8", "replace") if isinstance(line, str) else line
        return [self.rules[i] for i in self._confirm(b[:self.max_line].rstrip(b"\r\n"))]

    def scan_stream(self, stream: IO[bytes], source: str, result: ScanResult,
                    budget: "float | Budget" = DEFAULT_BUDGET, workers: int | None = None,
                    interactive: bool = False) -> bool:
        """Scan one binary stream into `result`. False when it was skipped as binary.

        With RE2, blocks are scanned by a small thread pool (RE2 releases the GIL) while the
        next block is read; results are merged in input order, so line numbers stay exact.
        `budget` is seconds or a Budget shared by several streams; with `interactive` (a pasted
        traceback on stdin) time spent waiting for input does not count against it.
        """
        budget = budget if isinstance(budget, Budget) else Budget(budget)
        if workers is None:
            workers = min(4, os.cpu_count() or 1) if self.engine == "re2" else 1
        started = time.monotonic()
        blocks = _blocks(stream, self.chunk, self.max_line)
        state = {"line_base": 0, "first": True}
        scan = self._scan_block_re2 if self.engine == "re2" else self._scan_block_re
        pool = ThreadPoolExecutor(workers) if workers > 1 else None
        pending: deque = deque()
        try:
            while True:
                waited = time.monotonic()
                try:
                    block, start, end, cut = next(blocks)
                except StopIteration:
                    break
                if interactive:
                    budget.deadline += time.monotonic() - waited
                if state["first"]:
                    state["first"] = False
                    if b"\0" in block[start:start + BINARY_PROBE]:
                        result.notes.append(f"{source}: binary file skipped")
                        return False
                    result.files += 1
                if time.monotonic() > budget.deadline:
                    raise BudgetExceeded
                result.bytes += end - start
                result.cut_lines += cut
                if pool is None:
                    with _alarm(budget.deadline if self.engine == "re" else None):
                        found = scan(block, start, end, budget.deadline)
                    self._merge(found, source, state, result)
                    continue
                pending.append(pool.submit(scan, block, start, end, budget.deadline))
                while len(pending) > workers:
                    self._merge(pending.popleft().result(), source, state, result)
            while pending:
                self._merge(pending.popleft().result(), source, state, result)
        except BudgetExceeded as exc:
            if exc.partial is not None:
                self._merge(exc.partial, source, state, result)
            result.budget_exceeded = True
            result.notes.append(f"{source}: time budget exceeded after line {state['line_base']}; "
                                "results are partial")
        finally:
            for f in pending:
                f.cancel()
            if pool is not None:
                pool.shutdown(wait=True)
            blocks.close()
            result.lines += state["line_base"]
            result.seconds += time.monotonic() - started
        if state["first"]:  # empty input still counts as read
            result.files += 1
        return True

    # -- scanning ----------------------------------------------------------------------------
    def _scan_block_re2(self, buf: bytes, start: int, end: int, deadline: float) -> _Block:
        """Lines buf[start:end] (ending in a newline) through the RE2 prefilter, hits confirmed."""
        out = _Block(newlines=buf.count(b"\n", start, end))
        try:
            self._search_re2(buf, start, end, deadline, out)
        except BudgetExceeded as exc:
            exc.partial = out
            raise
        return out

    def _search_re2(self, buf: bytes, start: int, end: int, deadline: float, out: _Block) -> None:
        search, pos, n = self._pre.search, start, 0
        cpos, cline = start, 0  # newlines counted up to cpos
        while pos < end:
            m = search(buf, pos, end)
            if m is None:
                break
            hit = m.start()
            ls = buf.rfind(b"\n", start, hit) + 1 or start
            le = buf.find(b"\n", hit, end)
            le = end if le < 0 else le
            cline += buf.count(b"\n", cpos, ls)
            cpos = ls
            self._record(buf[ls:min(le, ls + self.max_line)], cline, out)
            pos = le + 1
            n += 1
            if n % 256 == 0 and time.monotonic() > deadline:
                raise BudgetExceeded

    def _scan_block_re(self, buf: bytes, start: int, end: int, deadline: float) -> _Block:
        """Lines buf[start:end] one by one through the Python re prefilter, hits confirmed."""
        out = _Block(newlines=buf.count(b"\n", start, end))
        try:
            self._search_re(buf, start, end, deadline, out)
        except BudgetExceeded as exc:
            exc.partial = out
            raise
        return out

    def _search_re(self, buf: bytes, start: int, end: int, deadline: float, out: _Block) -> None:
        search, pos, n = self._pre_re.search, start, 0
        while pos < end:
            le = buf.find(b"\n", pos)
            le = end if le < 0 else le
            if search(buf, pos, min(le, pos + self.max_line)):
                self._record(buf[pos:min(le, pos + self.max_line)], n, out)
            pos = le + 1
            n += 1
            if n % 1024 == 0 and time.monotonic() > deadline:
                raise BudgetExceeded

    def _confirm(self, line: bytes) -> list[int]:
        if self.engine == "re2":
            return sorted(self._set.Match(line) or ()) if self.rules else []
        return [i for i, rx in enumerate(self._res) if rx.search(line)]

    def _record(self, line: bytes, rel: int, out: _Block) -> None:
        if line.endswith(b"\r"):
            line = line[:-1]
        matched = self._confirm(line)
        codes = _CODE_RE.findall(line)
        if not matched and not codes:
            return
        text = None
        for code in dict.fromkeys(c.decode() for c in codes):
            ch = out.codes.get(code)
            if ch is None:
                text = text or _excerpt(line)
                out.codes[code] = [1, (rel, text)]
            else:
                ch[0] += 1
        for i in matched:
            rule = self.rules[i]
            eh = out.entries.get(rule.entry_id)
            if eh is None:
                eh = out.entries[rule.entry_id] = [0, 0, set(), [], -1]
            eh[1] = max(eh[1], rule.specificity)
            eh[2].add(rule.regex)
            if eh[4] == rel:  # another pattern of the same entry on the same line
                continue
            eh[4] = rel
            eh[0] += 1
            if len(eh[3]) < self.max_hits:
                text = text or _excerpt(line)
                eh[3].append((rel, text))

    def _merge(self, blk: _Block, source: str, state: dict, result: ScanResult) -> None:
        base = state["line_base"]
        for code, (count, (rel, text)) in blk.codes.items():
            ch = result.codes.setdefault(code, CodeHits(code))
            ch.count += count
            ch.first = ch.first or Hit(source, base + rel + 1, text)
        for eid, (count, spec, pats, firsts, _) in blk.entries.items():
            eh = result.entries.get(eid)
            if eh is None:
                result._seq += 1
                eh = result.entries[eid] = EntryHits(eid, order=result._seq)
            eh.count += count
            eh.specificity = max(eh.specificity, spec)
            eh.patterns |= pats
            for rel, text in firsts[:max(0, self.max_hits - len(eh.first))]:
                eh.first.append(Hit(source, base + rel + 1, text))
        state["line_base"] = base + blk.newlines


def _excerpt(line: bytes) -> str:
    text = line.decode("utf-8", "replace").strip()
    return text if len(text) <= EXCERPT else text[:EXCERPT] + " …"


def _blocks(stream: IO[bytes], chunk: int, max_line: int) -> Iterator[tuple[bytes, int, int, int]]:
    """(buffer, start, end, lines cut): buffer[start:end] is whole lines, each ending in a newline.

    Big reads are passed on without copying; only a line split across two reads is joined
    into a small buffer of its own. A line longer than `max_line` keeps its first `max_line`
    bytes and the rest is read and dropped, so memory is bounded by about `chunk + max_line`
    per block in flight whatever the input looks like.
    """
    tail, skipping = b"", False
    while True:
        data = stream.read(chunk)
        if not data:
            break
        start = 0
        if skipping or tail:
            nl = data.find(b"\n")
            if nl < 0:  # the pending line goes on past this read
                if not skipping:
                    tail += data[:max_line - len(tail) + 1]
                    if len(tail) > max_line:
                        yield _cut(tail, max_line)
                        tail, skipping = b"", True
                continue
            if not skipping:
                head = tail + data[:min(nl + 1, max_line - len(tail) + 1)]
                if head.endswith(b"\n"):
                    yield head, 0, len(head), 0
                else:
                    yield _cut(head, max_line)
            tail, skipping, start = b"", False, nl + 1
        last = data.rfind(b"\n", start)
        if last >= 0:
            yield data, start, last + 1, 0
            start = last + 1
        if len(data) - start >= max_line:  # the start of an over-long line: keep its head only
            yield _cut(data[start:start + max_line], max_line)
            skipping = True
        elif start < len(data):
            tail = data[start:]
    if tail:
        yield tail + b"\n", 0, len(tail) + 1, 0


def _cut(head: bytes, max_line: int) -> tuple[bytes, int, int, int]:
    line = head[:max_line] + b"\n"
    return line, 0, len(line), 1


class _alarm:
    """Interrupt a running Python regex at the deadline (main thread, POSIX only; else a no-op)."""

    def __init__(self, deadline: float | None) -> None:
        self.deadline = deadline
        self.active = (deadline is not None and hasattr(signal, "setitimer")
                       and threading.current_thread() is threading.main_thread())

    def __enter__(self) -> "_alarm":
        if self.active:
            remaining = max(self.deadline - time.monotonic(), 0.001)  # type: ignore[operator]
            self.old = signal.signal(signal.SIGALRM, _raise_budget)
            signal.setitimer(signal.ITIMER_REAL, remaining)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.active:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.old)


def _raise_budget(signum: int, frame: object) -> None:
    raise BudgetExceeded


@functools.lru_cache(maxsize=4)
def kb_matcher(root: str | None = None, engine: str = "auto") -> Matcher:
    """The matcher for a kb directory (default: the shipped kb), compiled once per process."""
    from envcheck.kb.entries import load_kb

    kb = load_kb(root)
    return Matcher(rules_from_entries(kb.entries), engine=engine)
