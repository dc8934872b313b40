"""Diagnose logs: find the inputs, scan them with the kb matcher, rank what they show, and hold the result.

`diagnose(paths, ...)` is the whole pipeline; `DiagnoseResult` is what the renderers format
(envcheck/render/*: `render_diagnose`). Input discovery: files, directories (recursively; FIFOs,
sockets and devices are skipped, unreadable directories become notes), gzip by magic bytes, '-' for
standard input, and with no PATH the CANN log directory ($ASCEND_PROCESS_LOG_PATH, else ~/ascend/log).

Matching is layered (each `Match` says which layer found it in `confidence`):

1. ``matched``: a kb entry's pattern matched a line;
2. ``code``: an error code in the input that the dictionary (envcheck/kb/error_codes.yaml) or an
   entry's `error_codes` links to the entry; codes in no dictionary are `unknown_codes`, the known
   ones are listed with their meaning in `codes`;
3. ``versions``: the versions the input states ("torch 2.12.0", "torch_npu 2.8.0.post1", "CANN 8.0.RC1",
   a `pip list`; envcheck/kb/claims.py reads them from the head of each input) fail a compatibility check
   (EC1xx against matrix.yaml) that links the entry; the lines the versions came from are its evidence and
   the finding its `reason`. The judge lives above this layer: `diagnose(judge_versions=...)` takes it
   (envcheck/plan/stated.py `diagnose_report` is what `envcheck diagnose` runs). A definite mismatch ranks
   below pattern and code matches and above the rest; a mere warning after everything else but benign
   warnings; a stack the matrix judges fine, or one stated twice with different versions, adds nothing;
4. ``message``: when nothing specific matched, an error line that is an instance of a message torch_npu,
   op-plugin, vllm-ascend, HCCL / HCOMM or MindSpore's Ascend backend prints (the catalogue
   envcheck/kb/messages.yaml) names the kb entries that treat that message, and the category of the
   subsystem that prints it is favoured below, as a code's is;
5. ``likely``: when nothing specific matched but error lines exist, the kb entries closest to
   those lines by the kb search index (envcheck/kb/search.py), earlier lines weighing more; in a
   pasted report also the lines that describe a symptom in words (match.SYMPTOMS: "slow", "loss
   becomes NaN", "running on the CPU", 显存不足 ...), whose taxonomy category is favoured, as the
   category of a specific error code is (a code weighs twice a described symptom). A report with neither
   error nor symptom lines is read from its sentences. The categories themselves are scored too: a naive
   Bayes model whose documents are the kb's categories (their entries' text pooled) favours the category
   whose vocabulary the lines share, which recognises failures worded unlike any single entry.
   A specific match that leaves fewer than ALTERNATIVES entries is followed by such `likely` entries too
   (two shared words at least), never ahead of it: the other causes its words point to.

Ranking follows the failure (envcheck/kb/match.py `EntryHits.sort_key`): errors over warnings,
known-benign warnings last and marked benign, specific evidence over wrapper codes (`generic: true`)
and weak patterns, then the first in time over its cascade; how-to entries (tagged
`howto`: guides, checklists) never outrank a diagnosis. With several ranks (a directory of per-rank logs or plog
folders, or one log with `[rankN]:` prefixes) `first_failure` names the rank that failed first and
the ranks that only timed out waiting for it.
"""
from __future__ import annotations

import copy
import dataclasses
import gzip
import math
import os
import re
import sys
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import IO, Any

from envcheck.errors import UsageError
from envcheck.kb.claims import HEAD_BYTES, Claim, Verdict, stated_versions
from envcheck.kb.match import (
    LAUNCHER_PREFIX,
    SEV_BENIGN,
    SEVERITY_NAMES,
    Budget,
    EntryHits,
    LineEvent,
    Matcher,
    RankEvents,
    ScanResult,
)
from envcheck.version import __version__

SCHEMA_VERSION = 1
CONFIDENCES = ("matched", "code", "versions", "message", "likely")
CLAIMS_TOTAL = 256 * 1024  # bytes of all inputs together read for stated versions (the heads of the first ones)
HOWTO_TAG = "howto"  # a guide or a checklist (bringup-checklist, loss-parity-gpu-npu, ...), not a diagnosis
LIKELY_LIMIT = 3  # entries the fallback proposes
ALTERNATIVES = 3  # a specific match with fewer entries than this is followed by `likely` alternatives up to it
CATEGORY_HINT = 0.8  # weight of the category posterior (category_scores) as a hint (unseen mined lines, dev, tune)
NB_ALPHA = 0.5  # additive smoothing of the category model (chosen on the dev half)
# thin evidence (the lines share at most VOTE_MAX_WORDS distinct words with the candidates) and a near-tie (the second
# entry within VOTE_TIE of the first): the category the first VOTE_ENTRIES entries add up to leads (_category_first).
# Chosen on the unseen mined lines (benchmarks/unseen_lines.py), dev, tune and mined; never on the eval half.
VOTE_ENTRIES = 8
VOTE_TIE = 0.9
VOTE_MAX_WORDS = 6
LIKELY_LINES = 12  # error lines the fallback reads (the first ones: the cascade comes later)
LENGTH_NORM = 0.5
CONTEXT_LINES = 40  # error and symptom lines read to break ties between equally evidenced entries
MIN_IDF = 1.0  # a word in a larger share of the entries than this idf says nothing about any of them
LINE_WORDS = 1  # distinct words an entry must share with one error line to get credit from it
CAMEL_WORDS = 1.0  # weight of the parts of a camelCase identifier the index lacks as a whole
CATEGORY_WORDS = 0.8  # weight of the category words a described symptom adds to its line's query
SYMPTOM_HINT = 0.5  # weight of a described symptom's category, relative to a specific error code's (1.0)
MESSAGE_HINT = 0.5  # weight of the category of a known message's subsystem (kb/messages.py), as SYMPTOM_HINT
MESSAGE_LINES = 200  # error lines looked up in the message catalogue (the first ones)
CODE_HINT = 1.0  # a category that specific codes or described symptoms point to outranks word matches (x top)
_READ_PIECE = 1 << 16  # bytes per read from a file or a gzip stream (a failing read loses at most this)


def confidence_label(severity: str, confidence: str, weak: bool) -> str:
    """How a match's confidence reads in a report: a known-harmless warning says so, a weak match says so."""
    if severity == "benign":
        return "benign warning"
    return f"{confidence}, weak" if weak else confidence


@dataclass(frozen=True)
class Match:
    """One kb entry the input points to: where, how often, how sure, and what to do."""

    id: str
    title: str
    category: str
    hits: int
    specificity: int
    lines: tuple[dict[str, Any], ...]
    """the first matching lines: {file, line, text}"""
    more_hits: int
    fix: str
    kb_show: str
    page: str
    confidence: str = "matched"
    """matched (a kb pattern), code (an error code linked to the entry), versions (the versions the input
    states fail a compatibility check that links the entry), message (a known message naming the entry:
    kb/messages.py), likely (closest by search)"""
    severity: str = "error"
    """of the best line it was seen on: error, plain, warning, benign (a known-harmless warning)"""
    codes: tuple[str, ...] = ()
    """error codes in the input that link to this entry"""
    reason: str = ""
    """why the entry was named when no line shows it: the compatibility finding on the stated versions"""
    weak: bool = False
    """a `matched` or `code` entry whose only evidence is a line or code printed for several causes (a `wrapper: true`
    pattern, a pattern too short to single out a cause, a generic error code): a lead to check, not a diagnosis; never
    set on a known-harmless (benign) match, which is shown as such"""

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "category": self.category, "confidence": self.confidence,
                "weak": self.weak, "severity": self.severity, "hits": self.hits, "specificity": self.specificity,
                "lines": [dict(h) for h in self.lines], "more_hits": self.more_hits, "codes": list(self.codes),
                "reason": self.reason, "fix": self.fix, "kb_show": self.kb_show, "page": self.page}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Match:
        names = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in names}
        kw["lines"] = tuple(kw.get("lines", ()))
        kw["codes"] = tuple(kw.get("codes", ()))
        return cls(**kw)


@dataclass(frozen=True)
class UnknownCode:
    """An error code found in the input that neither the dictionary nor any kb entry knows."""

    code: str
    count: int
    first: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "count": self.count, "first": dict(self.first) if self.first else None}


@dataclass(frozen=True)
class CodeInfo:
    """A known error code found in the input and what the dictionary says it means."""

    code: str
    family: str
    name: str
    meaning: str
    category: str
    generic: bool
    count: int
    first: dict[str, Any] | None
    entries: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "family": self.family, "name": self.name, "meaning": self.meaning,
                "category": self.category, "generic": self.generic, "count": self.count,
                "first": dict(self.first) if self.first else None, "entries": list(self.entries)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CodeInfo:
        names = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in names}
        kw["entries"] = tuple(kw.get("entries", ()))
        return cls(**kw)


@dataclass(frozen=True)
class DiagnoseResult:
    """The diagnosis of some inputs (its JSON form is `to_dict()`)."""

    inputs: tuple[str, ...]
    engine: str
    matches: tuple[Match, ...] = ()
    unknown_codes: tuple[UnknownCode, ...] = ()
    notes: tuple[str, ...] = ()
    stats: dict[str, Any] = field(default_factory=dict)
    envcheck_version: str = __version__
    codes: tuple[CodeInfo, ...] = ()
    """known error codes found, with their meaning (dictionary order of first appearance)"""
    first_failure: dict[str, Any] | None = None
    """{rank, host, file, line, text, timestamp, others_timed_out: [{rank, host, file, line, text}],
    others_failed: [...]} when several ranks / inputs show errors"""
    benign: tuple[dict[str, Any], ...] = ()
    """known-benign warnings seen: {why, count, file, line, text}"""

    @property
    def problem_found(self) -> bool:
        return bool([m for m in self.matches if m.severity != "benign"] or self.unknown_codes or self.codes
                    or self.stats.get("error_lines"))

    @property
    def exit_code(self) -> int:
        """2 when an input could not be read to its end (the rest is still reported); else 1 when a
        problem was found (a kb entry matched, an error code or an error line), else 0."""
        if self.stats.get("incomplete_inputs"):
            return 2
        return 1 if self.problem_found else 0

    def to_dict(self) -> dict[str, Any]:
        return {"schema_version": SCHEMA_VERSION, "envcheck_version": self.envcheck_version,
                "command": "diagnose", "inputs": list(self.inputs), "engine": self.engine,
                "matches": [m.to_dict() for m in self.matches],
                "codes": [c.to_dict() for c in self.codes],
                "unknown_codes": [c.to_dict() for c in self.unknown_codes],
                "first_failure": copy.deepcopy(self.first_failure),
                "benign": [dict(b) for b in self.benign],
                "notes": list(self.notes), "stats": dict(self.stats), "exit_code": self.exit_code}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DiagnoseResult:
        return cls(inputs=tuple(d.get("inputs", ())), engine=str(d.get("engine", "")),
                   matches=tuple(Match.from_dict(m) for m in d.get("matches", ())),
                   unknown_codes=tuple(UnknownCode(**c) for c in d.get("unknown_codes", ())),
                   notes=tuple(d.get("notes", ())), stats=dict(d.get("stats", {})),
                   envcheck_version=str(d.get("envcheck_version", __version__)),
                   codes=tuple(CodeInfo.from_dict(c) for c in d.get("codes", ())),
                   first_failure=copy.deepcopy(d.get("first_failure")),
                   benign=tuple(dict(b) for b in d.get("benign", ())))


# ---------------------------------------------------------------------------------------------- inputs

def default_log_dir() -> Path | None:
    """The CANN log directory: $ASCEND_PROCESS_LOG_PATH, else ~/ascend/log (None if neither exists)."""
    env = os.environ.get("ASCEND_PROCESS_LOG_PATH")
    for cand in ([Path(env)] if env else []) + [Path.home() / "ascend" / "log"]:
        if cand.is_dir():
            return cand
    return None


def resolve_inputs(paths: list[str], problems: list[str] | None = None) -> list[str]:
    """Expand PATH arguments to the inputs to read ('-' = stdin), in a stable order.

    A named file must be a regular file (a FIFO or a device is a usage error: reading it could block
    or never end); directories are walked, and what cannot be read there is appended to `problems`.
    """
    from envcheck.safeio import require_regular_file, walk_errors

    if not paths:
        d = default_log_dir()
        if d is None:
            raise UsageError("no PATH given and no CANN log directory found ($ASCEND_PROCESS_LOG_PATH or "
                             "~/ascend/log); pass a log file, a directory, or - to read a pasted error from stdin")
        paths = [str(d)]
    out: list[str] = []
    for p in paths:
        if p == "-":
            if sys.stdin is None:
                raise UsageError("-: there is no standard input to read")
            out.append("-")
        elif os.path.isdir(p):
            files, errors = walk_errors(p)
            out.extend(files)
            if problems is not None:
                problems.extend(errors)
        elif os.path.lexists(p):
            require_regular_file(p)  # FIFO, socket, device, dangling link: one line, exit 2
            if not os.access(p, os.R_OK):
                raise UsageError(f"{p}: permission denied")
            out.append(p)
        else:
            raise UsageError(f"{p}: no such file or directory")
    return out


class _Reader:
    """A stream read in small pieces; a read error (truncated .gz, I/O error) ends it and is kept in
    `error`, so everything before it is still scanned."""

    def __init__(self, stream: IO[bytes], piece: int = 0) -> None:
        self.stream, self.error, self.truncated = stream, "", False
        self.piece = piece  # 0: read what is asked in one call (plain files); else at most this per call
        self.head, self.head_limit = b"", 0  # the first head_limit bytes read are kept (stated versions)

    def read(self, n: int = -1) -> bytes:
        if self.error:
            return b""
        parts: list[bytes] = []
        want = n if n is not None and n >= 0 else 1 << 62
        got = 0
        # read1: one underlying read at a time, so an error after some data does not discard it
        # (BufferedReader.read(n) loses what it gathered when a later raw read raises)
        read = getattr(self.stream, "read1", self.stream.read)
        try:
            while got < want:
                piece = read(min(self.piece or want, want - got))
                if not piece:
                    break
                parts.append(piece)
                got += len(piece)
                if len(self.head) < self.head_limit:
                    self.head += piece[:self.head_limit - len(self.head)]
        except EOFError as exc:  # gzip: "Compressed file ended before the end-of-stream marker was reached"
            self.error, self.truncated = f"truncated stream ({exc})", True
        except (OSError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
            self.error = f"unreadable stream ({getattr(exc, 'strerror', None) or exc})"
        return b"".join(parts)


def _open(path: str) -> list[IO[bytes]]:
    """Streams to close, the last one to read: gzip (by magic bytes) is decompressed as it is read."""
    if path == "-":
        return [sys.stdin.buffer]
    fh = open(path, "rb")
    try:
        magic = fh.peek(2)[:2]
    except OSError:
        magic = b""
    if magic == b"\x1f\x8b":
        return [fh, gzip.GzipFile(fileobj=fh, mode="rb")]  # type: ignore[list-item]
    return [fh]


def scan(inputs: list[str], matcher: Matcher, budget: float,
         heads: list[tuple[str, bytes]] | None = None) -> ScanResult:
    """Scan every input into one ScanResult; unreadable inputs and partial reads become notes.
    With `heads`, the first bytes of the inputs (HEAD_BYTES each, CLAIMS_TOTAL in all) are appended to it
    as (label, bytes), for the versions they state."""
    result = ScanResult()
    head_left = CLAIMS_TOTAL if heads is not None else 0
    shared = Budget(budget)
    for path in inputs:
        label = _label(path)
        if result.budget_exceeded:
            result.notes.append(f"{label}: not scanned (time budget exceeded)")
            continue
        if path == "-" and sys.stdin.isatty():
            print("envcheck: reading standard input (paste the error, then Ctrl-D)", file=sys.stderr)
        try:
            streams = _open(path)
        except OSError as exc:
            result.notes.append(f"{path}: cannot read ({exc.strerror or exc})")
            result.partial = True
            continue
        reader = _Reader(streams[-1], _READ_PIECE if len(streams) > 1 else 0)
        reader.head_limit = min(HEAD_BYTES, head_left)
        before = result.lines
        try:
            matcher.scan_stream(reader, label, result, budget=shared,  # type: ignore[arg-type]
                                interactive=path == "-" and sys.stdin.isatty())
        finally:
            if path != "-":
                for s in reversed(streams):
                    s.close()
        if heads is not None and reader.head and b"\0" not in reader.head:
            heads.append((label, reader.head))
            head_left -= len(reader.head)
        if reader.error:  # the wording of safeio.CountingLines.partial_note
            kind = "truncated .gz" if len(streams) > 1 and reader.truncated else "partial read"
            result.notes.append(f"{label}: {kind}: read {result.lines - before:,} lines before the {reader.error}; "
                                "results are partial")
            result.partial = True
    return result


def _label(path: str) -> str:
    return "<stdin>" if path == "-" else path


# ---------------------------------------------------------------------------------------------- ranking

def is_howto(entry: Any) -> bool:
    """A how-to entry (a guide, a checklist: tagged `howto`) rather than the diagnosis of a failure. A migration
    entry that explains a failure (`Torch not compiled with CUDA enabled`, a CUDA extension build) is a diagnosis."""
    return entry is not None and HOWTO_TAG in entry.tags


def is_benign_entry(entry: Any) -> bool:
    """An entry about a known-harmless warning (every example of its patterns is one): no diagnosis."""
    from envcheck.kb.match import benign_reason

    examples = [x for p in entry.patterns for x in p.examples]
    return bool(examples) and all(benign_reason(x) for x in examples)


def likely_entries(errors: list[LineEvent], idx: dict[str, Any] | None, kb: Any, exclude: set[str],
                   limit: int = LIKELY_LIMIT, hint_categories: dict[str, float] | None = None,
                   min_words: int = 1) -> list[tuple[str, float, LineEvent]]:
    """The kb entries closest to the first error lines: (entry id, score, the line that weighed most).

    Each line is a query over the kb search index (exact tokens, idf-weighted); a line's scores are
    normalised by its best entry, and earlier lines weigh more (the first error in time is the
    cause, the rest its cascade). An entry needs two distinct informative words from the lines
    (one when no entry has two).
    Entries about known-harmless warnings are left out. Categories the input's specific (not generic)
    known error codes belong to (`hint_categories`: category -> weight up to 1) raise their entries.
    `min_words`: the fewest words an entry must share even when no entry shares two (2: alternatives to a
    specific match are offered only on real common ground).
    """
    if not errors or not idx:
        return []
    entries, postings = idx["entries"], idx["postings"]
    n = max(len(entries), 1)
    norms = _derived(idx).norms
    total: dict[int, float] = {}
    words: dict[int, set[str]] = {}
    best_line: dict[int, tuple[float, LineEvent]] = {}
    seen: set[str] = set()
    k = 0
    # messages first (`XxxError: ...`, `[ERROR] ...`, CANN `EI0006: ...`), each group in time order;
    # Python source lines of a traceback (`raise ValueError(`, `File "...", line 3`) are no query
    # a line that only announces the paste ("报错:") is no query either; a traceback cut before its message (after
    # such an announcement, say) has only its source lines left, and they are the query then
    errors = [ev for ev in errors if ev.symptoms or not _INTRO.match(ev.text)]
    messages = [ev for ev in errors if not _SOURCE_LINE.search(ev.text)]
    errors = messages or errors
    errors.sort(key=lambda ev: (not (ev.symptoms or (_MESSAGE.search(ev.text) and not _ANNOUNCES.search(ev.text))),
                                ev.pos))
    for ev in errors:
        key = _query_text(ev.text)
        if not key or key in seen:
            continue
        seen.add(key)
        weight = 1.0 / (1.0 + 0.5 * k)
        k += 1
        line_scores: dict[int, float] = {}
        line_words: dict[int, set[str]] = {}
        for tok, sim in query_terms(key, postings, ev.symptoms):
            plist = postings.get(tok)
            if not plist or not _informative(tok):
                continue
            idf = math.log(1.0 + n / len(plist))
            if idf < MIN_IDF:  # in a large share of the entries: says nothing
                continue
            for i, w in plist:
                line_scores[i] = line_scores.get(i, 0.0) + sim * idf * w / norms[i]
                line_words.setdefault(i, set()).add(tok)
        if LINE_WORDS > 1 and any(len(ws) >= LINE_WORDS for ws in line_words.values()):
            line_scores = {i: sc for i, sc in line_scores.items() if len(line_words[i]) >= LINE_WORDS}
        for i in line_scores:
            words.setdefault(i, set()).update(line_words[i])
        if not line_scores:
            if k >= LIKELY_LINES:
                break
            continue
        top = max(line_scores.values())
        for i, s in line_scores.items():
            contrib = weight * s / top
            total[i] = total.get(i, 0.0) + contrib
            if contrib > best_line.get(i, (0.0, ev))[0]:
                best_line[i] = (contrib, ev)
        if k >= LIKELY_LINES:
            break
    usable = {i: sc for i, sc in total.items() if entries[i]["id"] not in exclude and kb.get(entries[i]["id"])
              and not is_benign_entry(kb.get(entries[i]["id"]))}
    # two distinct words in common, unless no entry has two (then one, rather than nothing)
    need = max(min_words, 2 if any(len(words.get(i, ())) >= 2 for i in usable) else 1)
    cands = {i: sc for i, sc in usable.items() if len(words.get(i, ())) >= need}
    if not cands:
        return []
    top = max(cands.values())
    hints = hint_categories or {}
    for i in cands:
        cands[i] += CODE_HINT * hints.get(entries[i]["category"], 0.0) * top
    ranked = sorted(cands.items(), key=lambda kv: (-kv[1], entries[kv[0]]["id"]))
    shared = set().union(*(words.get(i, set()) for i in cands))
    if len(ranked) > 1 and ranked[1][1] >= VOTE_TIE * ranked[0][1] and len(shared) <= VOTE_MAX_WORDS:
        ranked = _category_first(ranked, entries)
    out = []
    for i, score in ranked:
        eid = entries[i]["id"]
        out.append((eid, score, best_line[i][1]))
        if len(out) >= limit:
            break
    return out


def _category_first(ranked: list[tuple[int, float]], entries: list[dict[str, Any]]) -> list[tuple[int, float]]:
    """`ranked` with the best entry of the category that the first VOTE_ENTRIES entries' scores add up to most
    moved first. On thin evidence a near-tie between two entries is noise, while several entries of one category
    sharing the input's few words is not: the category is then surer than any one entry."""
    votes: dict[str, float] = {}
    for i, sc in ranked[:VOTE_ENTRIES]:
        votes[entries[i]["category"]] = votes.get(entries[i]["category"], 0.0) + sc
    win = max(votes, key=lambda c: (votes[c], c == entries[ranked[0][0]]["category"]))
    lead = next(kv for kv in ranked if entries[kv[0]]["category"] == win)
    return [lead] + [kv for kv in ranked if kv is not lead]


def context_scores(events: list[LineEvent], idx: dict[str, Any] | None, ids: set[str]) -> dict[str, float]:
    """How much the input's error and symptom lines speak of each entry in `ids` (kb search index, idf-weighted,
    length-normalised): breaks ties between entries with the same evidence on the same line — a code that two
    entries list, or one line two patterns match — in favour of the entry whose words surround the failure
    (a Ray cluster named next to a device-count error; NumPy named next to an init failure)."""
    if len(ids) < 2 or not events or not idx:
        return {}
    entries, postings = idx["entries"], idx["postings"]
    want = {i for i, e in enumerate(entries) if e["id"] in ids}
    n = max(len(entries), 1)
    norms = _derived(idx).norms
    got: dict[int, float] = {}
    seen: set[str] = set()
    for ev in events[:CONTEXT_LINES]:
        for tok, sim in query_terms(_query_text(ev.text), postings, ev.symptoms):
            plist = postings.get(tok)
            if tok in seen or not plist or not _informative(tok):
                continue
            seen.add(tok)  # a word counts once however many lines repeat it
            idf = math.log(1.0 + n / len(plist))
            if idf < MIN_IDF:
                continue
            for i, w in plist:
                if i in want:
                    got[i] = got.get(i, 0.0) + sim * idf * w / norms[i]
    return {entries[i]["id"]: sc for i, sc in got.items()}


def category_scores(events: list[LineEvent], idx: dict[str, Any] | None) -> dict[str, float]:
    """P(category | the first lines' words) under complement naive Bayes whose documents are the kb's
    categories (all their entries' indexed text pooled): a category's vocabulary is larger than any one
    entry's, so it recognises a failure worded in a way no single entry is; the complement form (how unlike
    the OTHER categories the words are) is less swayed by how much text a category has."""
    if not idx or not idx["entries"]:
        return {}
    counts, totals, vocab = _derived(idx).model
    postings = idx["postings"]
    words: dict[str, float] = {}
    seen: set[str] = set()
    for ev in events[:LIKELY_LINES]:
        key = _query_text(ev.text)
        if key in seen:
            continue
        seen.add(key)
        for tok, sim in query_terms(key, postings, ev.symptoms):
            if tok in postings and _informative(tok):
                words[tok] = max(words.get(tok, 0.0), sim)
    if not words:
        return {}
    allw = {tok: sum(c.get(tok, 0.0) for c in counts.values()) for tok in words}
    grand = sum(totals.values())
    logp = {}
    for cat, c in counts.items():
        rest = grand - totals[cat]
        logp[cat] = -sum(w * math.log((allw[tok] - c.get(tok, 0.0) + NB_ALPHA) / (rest + NB_ALPHA * vocab))
                         for tok, w in words.items())
    top = max(logp.values())
    z = sum(math.exp(v - top) for v in logp.values())
    return {cat: math.exp(v - top) / z for cat, v in logp.items()}


@dataclass(frozen=True)
class _Derived:
    """What the fallback derives from one search index: per-entry length norms (`_entry_norms`) and the
    category model (category -> token -> weight, category -> total weight, vocabulary size)."""

    norms: list[float]
    model: tuple[dict[str, dict[str, float]], dict[str, float], int]


_DERIVED: dict[str, _Derived] = {}


def _derived(idx: dict[str, Any]) -> _Derived:
    """Computed once per index (keyed by its stamp: the kb files' names, sizes and mtimes). In the category
    model an entry's token weight is damped (log 1+w) so that one long entry does not speak for its category."""
    key = repr(idx.get("stamp"))
    got = _DERIVED.get(key)
    if got is None:
        entries = idx["entries"]
        counts: dict[str, dict[str, float]] = {}
        for tok, plist in idx["postings"].items():
            for i, w in plist:
                c = counts.setdefault(entries[i]["category"], {})
                c[tok] = c.get(tok, 0.0) + math.log(1.0 + w)
        totals = {cat: sum(c.values()) for cat, c in counts.items()}
        got = _Derived(_entry_norms(idx), (counts, totals, len(idx["postings"])))
        _DERIVED.clear()
        _DERIVED[key] = got
    return got


def _informative(tok: str) -> bool:
    """A query token worth looking up: not a number, not a 1-2 letter ASCII word (CJK bigrams are 2 long)."""
    return not ((len(tok) < 3 and tok.isascii()) or tok.isdigit())


def hints_from_categories(events: list[LineEvent], idx: dict[str, Any] | None, hints: dict[str, float]) -> None:
    """Add the naive-Bayes category posterior of the query lines to `hints`, at CATEGORY_HINT (a category
    the posterior gives under 5 % gets nothing)."""
    for cat, p in category_scores(events, idx).items():
        if p >= 0.05:
            hints[cat] = min(1.0, hints.get(cat, 0.0) + CATEGORY_HINT * p)


def hints_from_symptoms(symptoms: list[LineEvent], hints: dict[str, float]) -> None:
    """Add the categories of described symptoms to `hints` (category -> weight up to 1): each category once,
    at SYMPTOM_HINT, half what a specific error code weighs, since what people see is often a consequence
    (a device "not recognised" because the code forces CUDA). Slowness is what many causes end in (a CPU
    fallback, JIT compiling, a verbose log level): named on a line next to a more specific symptom it
    counts half again."""
    got: dict[str, float] = {}
    for ev in symptoms:
        for cat in ev.symptoms:
            w = SYMPTOM_HINT * (0.5 if cat == "performance" and len(ev.symptoms) > 1 else 1.0)
            got[cat] = max(got.get(cat, 0.0), w)
    for cat, w in got.items():
        hints[cat] = min(1.0, hints.get(cat, 0.0) + w)


def message_hits(errors: list[LineEvent]) -> list[tuple[LineEvent, Any]]:
    """(line, its most specific catalogue message) for the first MESSAGE_LINES error lines that are an
    instance of a message torch_npu / op-plugin / vllm-ascend / HCCL / MindSpore / the CANN runtime / TorchAir
    prints (envcheck/kb/messages.py)."""
    from envcheck.kb.messages import MessageBookError, load_messages

    try:
        book = load_messages()
    except MessageBookError:
        return []
    out = []
    for ev in errors[:MESSAGE_LINES]:
        found = book.lookup(ev.text)
        if found:
            out.append((ev, found[0].message))
    return out


def hints_from_messages(known: list[tuple[LineEvent, Any]], hints: dict[str, float]) -> None:
    """Add the categories of the known messages' subsystems to `hints`: each category once, at MESSAGE_HINT,
    the first message line weighing most (the cause comes before its cascade). A timeout line gives none: it
    says where a rank waited, which is what every cause of a stall ends in (as in `first_failure`)."""
    got: dict[str, float] = {}
    for k, (_ev, msg) in enumerate([(ev, msg) for ev, msg in known if not ev.timeout]):
        got[msg.category] = max(got.get(msg.category, 0.0), MESSAGE_HINT / (1.0 + 0.5 * k))
    for cat, w in got.items():
        hints[cat] = min(1.0, hints.get(cat, 0.0) + w)


def message_entries(known: list[tuple[LineEvent, Any]], kb: Any, exclude: set[str]) -> list[EntryHits]:
    """The kb entries the known messages name (confidence `message`), at the first line naming each."""
    out: dict[str, EntryHits] = {}
    for ev, msg in known:
        for eid in msg.entries:
            if eid in exclude or kb.get(eid) is None:
                continue
            eh = out.get(eid)
            if eh is None:
                eh = out[eid] = EntryHits(eid, quality=(ev.severity, 0, 0), pos=ev.pos)
                eh.first.append(_hit(ev))
            eh.count += 1
    return list(out.values())


def query_terms(text: str, postings: dict[str, Any] | None = None,
                categories: tuple[str, ...] = ()) -> list[tuple[str, float]]:
    """The index tokens of one line with their weight: its own tokens (1.0; a plural the index lacks as
    its singular, 0.9), the words of the categories its described symptoms point to (0.8: "the decode
    is slow" is also looked up as "performance"), and the English words the kb search glossary gives
    for Chinese words in it (0.6: 内存不足 is looked up like "memory oom")."""
    from envcheck.kb.search import GLOSSARY, camel_parts, tokens

    out: dict[str, float] = {}
    for tok in tokens(text):
        if postings is not None and tok not in postings and len(tok) > 3 and tok.endswith("s") and tok[:-1] in postings:
            out.setdefault(tok[:-1], 0.9)
        else:
            out.setdefault(tok, 1.0)
    if postings is not None:  # an identifier the kb never names is looked up by its parts (tlsStatus: tls, status)
        for word, parts in camel_parts(text):
            if word not in postings:
                for p in parts:
                    out.setdefault(p, CAMEL_WORDS)
    for cat in categories:
        for w in tokens(cat.replace("-", " ")):
            out.setdefault(w, CATEGORY_WORDS)
    for zh, en in GLOSSARY.items():
        if zh in text:
            for w in en.split():
                out.setdefault(w, 0.6)
    return list(out.items())


def _read_index(root: Path) -> dict[str, Any] | None:
    """The kb search index of `root`, None when it cannot be read (the fallback then proposes nothing)."""
    from envcheck.kb.search import load_index

    try:
        return load_index(root)
    except OSError:
        return None


def _entry_norms(idx: dict[str, Any]) -> list[float]:
    """Per entry: (total index weight) ** LENGTH_NORM, so a long entry that mentions everything
    does not win every query (as BM25 normalises by document length)."""
    sums = [0.0] * len(idx["entries"])
    for plist in idx["postings"].values():
        for i, w in plist:
            sums[i] += w
    avg = sum(sums) / max(len(sums), 1) or 1.0
    return [max(x / avg, 1e-6) ** LENGTH_NORM for x in sums]


_SOURCE_LINE = re.compile(r"^\W*(raise |File \"|\^+$|~+$|at [\w.$]+\()|^\(\w+ pid=\d+\)\s+(raise |File \")")
# a message stating a failure; Chinese error words stand in sentences (reports), not in machine records
_MESSAGE = re.compile(r"\b\w*(Error|Exception|Warning)\b:|\[ERROR\]|\bERROR\b|\bE[A-Z0-9][0-9]{4}\b|"
                      r"错误|失败|报错|异常|不支持|超时|找不到|无法|冲突|内存不足|显存不足")
# a line that only announces what follows ("报错如下:", "The error log:"), naming no error itself
_INTRO = re.compile(r"^(?![^:：]*\w(Error|Exception)[:：]).{0,60}[:：]\s*$")
# prose that announces the error below it ("执行 import x 会报错:", "I get the following error:"): its error
# word names the paste, not a failure, so it is no message (its other words may still help as context)
_ANNOUNCES = re.compile(r"(报错|错误|出错|异常|如下|日志|信息|提示|\berrors?|\bexceptions?|\bfollowing|\bbelow|"
                        r"\blogs?|\boutput)\W{0,3}[:：]\s*$", re.I)
# launcher prefixes ("(RayWorkerWrapper pid=4711)", "(VllmWorker rank=1 pid=9)", "[rank3]:") name the process, not
# the failure; then hex, numbers, timestamps, CANN's [FUNC:..][FILE:..] trailers (a path keeps its last part: _PATH)
_NOISE = re.compile(LAUNCHER_PREFIX + r"|0x[0-9a-fA-F]+|\b\d[\d.:,-]*\b|"
                    r"\[(FUNC|FILE|LINE):[^\]]*\]|\bPID:? ?\d+")


_PATH = re.compile(r"(?:/[\w.+-]+)*/([\w.+-]+)/?")  # /usr/local/Ascend/.../libhccl.so -> libhccl.so


def _query_text(text: str) -> str:
    """An error line without numbers, timestamps and CANN's [FUNC:..][FILE:..] trailers, its paths cut to their
    last part (`/var/log/ascend_seclog/ascend_install.log` says ascend_install.log, not var or log)."""
    return " ".join(_PATH.sub(r" \1 ", _NOISE.sub(" ", text)).split())[:400]


def first_failure(result: ScanResult, roots: list[str]) -> dict[str, Any] | None:
    """The rank (or input) that failed first and those that only timed out waiting for it.

    Participants are ranks where lines or paths name them (`[rank3]:`, `RankID:3`, `.../rank_3.log`),
    else inputs (a plog file each). One failed first when its first non-timeout error comes before its first timeout;
    among several, the earliest by timestamp. Needs two participants or more.
    """
    parts: dict[tuple, RankEvents] = {}
    ranked_sources = {src for (src, rank) in result.ranks if rank is not None}
    for (src, rank), ev in result.ranks.items():
        r = rank if rank is not None else _path_rank(src)
        if r is None and src in ranked_sources:
            continue  # a launcher line in one log whose other lines name their rank
        host = ev.host or _path_host(src, roots)
        key = (host, r) if r is not None else (host, src)
        cur = parts.get(key)
        if cur is None:
            parts[key] = RankEvents(r, src, host, ev.first_error, ev.first_timeout, ev.errors, ev.timeouts)
        else:  # the same rank in several files (plog + stdout): keep the earliest events
            cur.first_error = _earlier(cur.first_error, ev.first_error)
            cur.first_timeout = _earlier(cur.first_timeout, ev.first_timeout)
            cur.errors += ev.errors
            cur.timeouts += ev.timeouts
    if len(parts) < 2:
        return None
    failed, waited = [], []
    for p in parts.values():
        fe, ft = p.first_error, p.first_timeout
        if fe is not None and (ft is None or _before(fe, ft)):
            failed.append(p)
        elif ft is not None:
            waited.append(p)
    if not failed:
        return None
    failed.sort(key=lambda p: (p.first_error.ts is None, p.first_error.ts or (), p.first_error.pos))  # type: ignore[union-attr]
    first, others = failed[0], failed[1:]
    fe = first.first_error
    assert fe is not None

    def brief(p: RankEvents, ev: LineEvent | None) -> dict[str, Any]:
        return {"rank": p.rank, "host": p.host, "file": ev.source if ev else p.source,
                "line": ev.line if ev else None, "text": ev.text if ev else "",
                "timestamp": _ts_text(ev.ts) if ev else None}

    out = brief(first, fe)
    out["others_timed_out"] = [brief(p, p.first_timeout) for p in sorted(waited, key=_part_order)]
    out["others_failed"] = [brief(p, p.first_error) for p in sorted(others, key=_part_order)]
    return out


def _part_order(p: RankEvents) -> tuple:
    return (p.rank is None, p.rank if p.rank is not None else 0, p.host or "", p.source)


def _before(a: LineEvent, b: LineEvent) -> bool:
    if a.ts is not None and b.ts is not None and a.ts[0] == b.ts[0]:
        return a.ts <= b.ts
    if a.source == b.source:
        return a.line <= b.line
    return a.pos <= b.pos


def _earlier(a: LineEvent | None, b: LineEvent | None) -> LineEvent | None:
    if a is None or b is None:
        return a or b
    return a if _before(a, b) else b


def _ts_text(ts: tuple | None) -> str | None:
    if ts is None:
        return None
    y, mo, d, h, mi, s, frac = ts
    base = f"{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{s:02d}"
    return (f"{y:04d}-" if y else "") + base + (f".{str(frac)[2:8]}" if frac else "")


_PATH_RANK = re.compile(r"(?:^|[/_.-])rank[_-]?([0-9]{1,5})(?=$|[/_.-])", re.I)
_PATH_HOST = re.compile(r"^(?:host|node|server|worker|machine)[_-]?[A-Za-z0-9.-]+$|^[0-9]{1,3}(?:\.[0-9]{1,3}){3}$",
                        re.I)


def _path_rank(src: str) -> int | None:
    found = _PATH_RANK.findall(src)
    return int(found[-1]) if found else None


def _path_host(src: str, roots: list[str]) -> str | None:
    parts = Path(src).parts[:-1]
    for root in roots:
        rp = Path(root).parts
        if parts[:len(rp)] == rp:
            parts = parts[len(rp):]
            break
    for comp in reversed(parts):
        if _PATH_HOST.match(comp):
            return comp
    return None


# ---------------------------------------------------------------------------------------------- result

def build(result: ScanResult, kb: Any, engine: str, inputs: list[str], kb_root: Path | None = None,
          roots: list[str] | None = None, matcher: Matcher | None = None,
          verdicts: Sequence[tuple[str, Verdict]] = ()) -> DiagnoseResult:
    """The diagnosis; `inputs` are the PATH arguments as given (a directory is one).

    With several ranks, the entries the first failing rank's first error matches lead: the other
    ranks' timeouts are its cascade, whatever order the files were read in. `verdicts`: (input label,
    Verdict) from a judge of the versions the inputs state, shown as `versions` matches (`place_versions`)."""
    from envcheck import resources
    from envcheck.kb.codes import load_codes
    from envcheck.kb.link import fix_summary, page_url

    book = load_codes()
    kb_codes: set[str] = set()
    for e in kb.entries:
        kb_codes.update(c.upper() for c in e.error_codes)

    hits: list[tuple[EntryHits, str]] = [(eh, "matched" if eh.patterns else "code") for eh in result.ranked()]
    specific_seen = any(eh.specific and eh.severity > SEV_BENIGN for eh, _ in hits)
    if specific_seen:  # an entry only a generic (wrapper) code links to says nothing next to a specific one
        hits = [(eh, conf) for eh, conf in hits if conf != "code" or eh.specific]
    index: list[dict[str, Any] | None] = []  # the kb search index, read once, when a step needs it

    def search_index() -> dict[str, Any] | None:
        if not index:
            index.append(_read_index(Path(kb_root or resources.kb_dir())))
        return index[0]

    if not specific_seen and (result.errors or result.symptoms or result.prose):
        matched_ids = {eh.entry_id for eh, _ in hits}
        hints: dict[str, float] = {}
        for c in result.codes.values():
            info = book.get(c.code)
            if info is not None and not info.generic:
                hints[info.category] = hints.get(info.category, 0.0) + 1.0
        if hints:
            hints = {cat: n / max(hints.values()) for cat, n in hints.items()}
        hints_from_symptoms(result.symptoms, hints)
        said = message_hits(result.errors)
        hints_from_messages(said, hints)
        for eh in message_entries(said, kb, matched_ids):
            hits.append((eh, "message"))
            matched_ids.add(eh.entry_id)
        queries = list(result.errors)
        queried = {(ev.source, ev.line) for ev in queries}
        queries += [ev for ev in result.symptoms if (ev.source, ev.line) not in queried]
        if not queries:  # a report told in words only: its sentences are the query
            queries = list(result.prose)
        if CATEGORY_HINT > 0:
            hints_from_categories(queries, search_index(), hints)
        for eid, _score, ev in likely_entries(queries, search_index(), kb, matched_ids, hint_categories=hints):
            eh = EntryHits(eid, count=1, quality=(ev.severity, 0, -1), pos=ev.pos)
            eh.first.append(_hit(ev))
            hits.append((eh, "likely"))
    # a specific match that leaves the top 3 short: the entries closest to the input's words (the error lines, or
    # what the report says when its failure is one line) follow it as `likely` alternatives, never ahead of it
    alternatives: set[str] = set()
    found_ids = {eh.entry_id for eh, _ in hits}
    if specific_seen and ALTERNATIVES and len(found_ids) < ALTERNATIVES:
        at = {(e.source, e.line) for e in result.errors}
        queries = list(result.errors) + [ev for ev in result.symptoms if (ev.source, ev.line) not in at]
        if len(queries) < 2:
            queries += list(result.prose)
        for eid, _score, ev in likely_entries(queries, search_index(), kb, found_ids,
                                              limit=ALTERNATIVES - len(found_ids), min_words=2):
            eh = EntryHits(eid, count=1, quality=(ev.severity, 0, -1), pos=ev.pos)
            eh.first.append(_hit(ev))
            hits.append((eh, "likely"))
            alternatives.add(eid)
    tied = {eh.entry_id for eh, conf in hits if conf != "likely"}
    ctx = context_scores(list(result.errors) + list(result.symptoms), search_index(), tied) if len(tied) > 1 else {}
    ff = first_failure(result, roots or [])
    cause: set[str] = set()
    if ff and matcher is not None:
        cause = {r.entry_id for r in matcher.match_line(str(ff.get("text", "")))}
    # how-to entries after every diagnosis, benign last; otherwise the matcher's order, and the
    # fallback's entries (pattern flag -1) among themselves in the order of their scores
    order = {id(eh): i for i, (eh, _) in enumerate(hits)}
    # a report with no error line and nothing specific found asks a question ("how do we prove the port is
    # right?"): every entry is a guess from its words, and a guide may be the answer; otherwise how-to
    # entries follow every diagnosis
    asked = not result.errors and all(conf == "likely" for _, conf in hits)

    def usual(eh: EntryHits) -> int:
        """Where the dictionary lists the entry among a wrapper code's usual causes (0 = first, or not such)."""
        at = [info.entries.index(eh.entry_id) for c in eh.codes
              if (info := book.get(c)) is not None and info.generic and eh.entry_id in info.entries]
        return min(at, default=0)

    def key(item: tuple[EntryHits, str]) -> tuple:
        eh, conf = item
        k = eh.sort_key()
        if conf == "likely":
            k = k[:4] + (True, (0, 0), 0.0, order[id(eh)])
        else:  # the same evidence on the same line: for a wrapper code the cause the dictionary lists first, then
            # the entry the rest of the input speaks of
            k = k[:6] + (usual(eh) if conf == "code" else 0, -ctx.get(eh.entry_id, 0.0)) + k[6:]
        return (eh.severity == SEV_BENIGN, eh.entry_id in alternatives, not asked and is_howto(kb.get(eh.entry_id)),
                eh.entry_id not in cause) + k

    hits.sort(key=key)

    matches = []
    for eh, conf in hits:
        entry = kb.get(eh.entry_id)
        matches.append(Match(
            id=eh.entry_id, title=entry.title if entry else "", category=entry.category if entry else "",
            hits=eh.count, specificity=eh.specificity, lines=tuple(h.to_dict() for h in eh.first),
            more_hits=max(0, eh.count - len(eh.first)), fix=fix_summary(entry) if entry else "",
            kb_show=f"envcheck kb show {eh.entry_id}", page=page_url(entry) if entry else "",
            confidence=conf, severity=SEVERITY_NAMES.get(eh.severity, "plain"), codes=tuple(sorted(eh.codes)),
            weak=conf in ("matched", "code") and not eh.specific and eh.severity != SEV_BENIGN))
    if verdicts:
        matches = place_versions(matches, verdicts, kb)

    known, unknown = [], []
    for c in sorted(result.codes.values(), key=lambda c: c.pos):
        info = book.get(c.code)
        first = c.first.to_dict() if c.first else None
        if info is not None:
            known.append(CodeInfo(c.code, info.family, info.name, info.meaning, info.category, info.generic,
                                  c.count, first, tuple(x for x in info.entries if kb.get(x) is not None)))
        elif c.code.upper() not in kb_codes:
            unknown.append(UnknownCode(c.code, c.count, first))
    unknown.sort(key=lambda u: (-u.count, u.code))

    notes = list(result.notes)
    if kb.errors:
        notes.append(f"kb: {len(kb.errors)} entries could not be read (run envcheck kb lint)")
    benign = tuple({"why": why, "count": n, **h.to_dict()} for why, (n, h) in result.benign.items())
    stats = {"files": result.files, "bytes": result.bytes, "lines": result.lines, "cut_lines": result.cut_lines,
             "error_lines": result.error_lines, "seconds": round(result.seconds, 3),
             "budget_exceeded": result.budget_exceeded, "incomplete_inputs": bool(result.partial)}
    return DiagnoseResult(inputs=tuple(_label(p) for p in inputs), engine=engine, matches=tuple(matches),
                          unknown_codes=tuple(unknown), notes=tuple(notes), stats=stats, codes=tuple(known),
                          first_failure=ff, benign=benign)


def place_versions(matches: list[Match], verdicts: Sequence[tuple[str, Verdict]], kb: Any) -> list[Match]:
    """Add the entries the stated versions point to (`versions`), one Match per entry, to the ranked `matches`.

    A strong verdict (a definite mismatch: a failing pairing) goes below the pattern and code matches
    (lines of the failure itself; a log that got as far as a specific error ran on a stack that at least
    imported, so a stated mismatch next to it may be stale) and above the search's `likely` guesses and
    how-to entries. A weak one (a warning: "newer than the matrix", a pre-release, a driver the sources
    only half pair) is no diagnosis: it comes after every other entry but known-benign warnings. A known
    defect of a stated release (`Verdict.corroborated`) is strong where one of the text's first three
    entries shares its entry's category (the defect explains that kind of failure), weak elsewhere.
    An entry a pattern or a code already found keeps that confidence, gains the reason and moves up to
    where the verdict would go if that is higher; a `likely` entry becomes a `versions` one."""
    from envcheck.kb.link import fix_summary, page_url

    by_entry: dict[str, list[tuple[str, Verdict]]] = {}
    for label, v in verdicts:
        if kb.get(v.entry) is not None:
            by_entry.setdefault(v.entry, []).append((label, v))
    # the categories the text's own evidence points at (its first three entries): a verdict that needs
    # corroboration (a known defect of a stated release) is strong only in one of them
    told = {m.category for m in [m for m in matches if m.severity != "benign"][:3]}

    def is_strong(v: Verdict) -> bool:
        return v.strong or (v.corroborated and kb.get(v.entry).category in told)

    out = list(matches)
    for eid, vs in sorted(by_entry.items(), key=lambda kv: not any(is_strong(v) for _, v in kv[1])):
        strong = any(is_strong(v) for _, v in vs)
        lines: list[dict[str, Any]] = []
        for label, v in vs:
            for c in v.claims:
                h = {"file": label, "line": c.line, "text": c.text}
                if h not in lines:
                    lines.append(h)
        reason = "; ".join(dict.fromkeys(v.message for _, v in vs))
        old = next((m for m in out if m.id == eid), None)
        at = out.index(old) if old is not None else len(out)
        if old is not None:
            out.remove(old)
        stop = _versions_stop(out, kb, strong)
        if old is not None and old.confidence != "likely":
            out.insert(min(stop, at), dataclasses.replace(old, reason=reason))
            continue
        entry = kb.get(eid)
        out.insert(stop, Match(
            id=eid, title=entry.title, category=entry.category, hits=len(lines), specificity=0,
            lines=tuple(lines[:3]), more_hits=max(0, len(lines) - 3), fix=fix_summary(entry),
            kb_show=f"envcheck kb show {eid}", page=page_url(entry), confidence="versions",
            severity="error" if strong else "warning", reason=reason))
    return out


# where versions matches go: "first" (lead), "above-likely" (below pattern and code matches, above the search's
# guesses and how-to entries) or "last" (after every other entry but known-benign warnings)
STRONG_PLACE = "above-likely"
WEAK_PLACE = "last"


def _versions_stop(matches: list[Match], kb: Any, strong: bool) -> int:
    """Where a versions match goes in `matches` (see place_versions)."""
    place = STRONG_PLACE if strong else WEAK_PLACE
    for i, m in enumerate(matches):
        if m.severity == "benign" or (is_howto(kb.get(m.id)) and place != "last"):
            return i
        if m.confidence == "versions":
            continue
        if place == "first" or (place == "above-likely" and m.confidence == "likely"):
            return i
    return len(matches)


def _hit(ev: LineEvent) -> Any:
    from envcheck.kb.match import Hit

    return Hit(ev.source, ev.line, ev.text)


def diagnose(paths: list[str], *, kb_dir: str | None = None, engine: str = "auto", max_hits: int = 3,
             max_line: int = 64 * 1024, time_budget: float = 300.0,
             judge_versions: Callable[[dict[str, Claim]], Sequence[Verdict]] | None = None) -> DiagnoseResult:
    """Scan `paths` (files, directories, *.gz, '-'; none = the CANN log directory) against the kb.

    `judge_versions`: judges the versions each input states (envcheck.plan.stated.judge_claims); its
    verdicts become `versions` matches. Without it (this layer alone) stated versions are not read."""
    from envcheck.kb.entries import load_kb
    from envcheck.kb.match import kb_matcher

    if max_hits < 0 or time_budget <= 0 or max_line < 80 or not math.isfinite(time_budget):
        raise UsageError("--max-hits must be >= 0, --time-budget > 0 and --max-line >= 80")
    root = None
    if kb_dir:
        if not os.path.isdir(kb_dir):
            raise UsageError(f"--kb {kb_dir}: not a directory")
        root = str(Path(kb_dir).resolve())
    shown = list(paths) or [str(default_log_dir() or "")]
    problems: list[str] = []
    inputs = resolve_inputs(list(paths), problems)
    try:
        matcher = kb_matcher(root, engine)
    except RuntimeError as exc:
        raise UsageError(str(exc)) from None
    matcher = copy.copy(matcher)  # the compiled patterns are shared; the limits are this run's
    matcher.max_hits, matcher.max_line = max_hits, max_line
    heads: list[tuple[str, bytes]] | None = [] if judge_versions is not None else None
    result = scan(inputs, matcher, time_budget, heads)
    verdicts: list[tuple[str, Verdict]] = []
    if judge_versions is not None:
        verdicts = stated_verdicts(heads or [], judge_versions, result.notes)
    result.notes[:0] = matcher.notes + problems
    if problems:
        result.partial = True
    if engine == "auto" and matcher.engine == "re":
        result.notes.insert(0, "google-re2 is not installed: scanned with Python re, which is much slower on "
                               "big logs (pip install google-re2)")
    dirs = [p for p in (paths or shown) if p != "-" and os.path.isdir(p)]
    return build(result, load_kb(root), matcher.engine, shown, kb_root=Path(root) if root else None, roots=dirs,
                 matcher=matcher, verdicts=verdicts)


def stated_verdicts(heads: list[tuple[str, bytes]], judge_versions: Callable[[dict[str, Claim]], Sequence[Verdict]],
                    notes: list[str]) -> list[tuple[str, Verdict]]:
    """(label, verdict) for the versions each input's head states; a judge that fails is a note, never the end."""
    from envcheck.kb.match import cleaned, json_decoded

    out: list[tuple[str, Verdict]] = []
    for label, head in heads:
        if len(head) >= HEAD_BYTES:  # cut mid-line: the last line is not whole
            head = head[:head.rfind(b"\n") + 1]
        # without colour sequences, HTML references and JSON log wrapping, which the matcher removes too
        claims = stated_versions(json_decoded(cleaned(head)).decode("utf-8", "replace"))
        if not claims:
            continue
        try:
            out.extend((label, v) for v in judge_versions(claims))
        except Exception as exc:  # the matrix must never take the diagnosis down
            notes.append(f"{label}: the stated versions could not be judged ({type(exc).__name__}: {exc})")
    return out
