"""Diagnose logs: find the inputs, scan them with the kb matcher, and hold the result.

`diagnose(paths, ...)` is the whole pipeline; `DiagnoseResult` is what the renderers format
(envcheck/render/*: `render_diagnose`). Input discovery: files, directories (recursively; FIFOs,
sockets and devices are skipped), gzip by magic bytes, '-' for standard input, and with no PATH
the CANN log directory ($ASCEND_PROCESS_LOG_PATH, else ~/ascend/log).
"""
from __future__ import annotations

import copy
import gzip
import os
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterator

from envcheck.errors import UsageError
from envcheck.kb.match import Budget, Matcher, ScanResult
from envcheck.version import __version__

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Match:
    """One kb entry that matched: where, how often, and what to do."""

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

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "category": self.category, "hits": self.hits,
                "specificity": self.specificity, "lines": [dict(h) for h in self.lines],
                "more_hits": self.more_hits, "fix": self.fix, "kb_show": self.kb_show, "page": self.page}


@dataclass(frozen=True)
class UnknownCode:
    """An error code found in the input that no kb entry lists."""

    code: str
    count: int
    first: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "count": self.count, "first": dict(self.first) if self.first else None}


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

    @property
    def exit_code(self) -> int:
        """1 when a kb entry matched or an error code was found (a problem was found), else 0."""
        return 1 if (self.matches or self.unknown_codes) else 0

    def to_dict(self) -> dict[str, Any]:
        return {"schema_version": SCHEMA_VERSION, "envcheck_version": self.envcheck_version,
                "command": "diagnose", "inputs": list(self.inputs), "engine": self.engine,
                "matches": [m.to_dict() for m in self.matches],
                "unknown_codes": [c.to_dict() for c in self.unknown_codes],
                "notes": list(self.notes), "stats": dict(self.stats), "exit_code": self.exit_code}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DiagnoseResult:
        return cls(inputs=tuple(d.get("inputs", ())), engine=str(d.get("engine", "")),
                   matches=tuple(Match(**{k: (tuple(v) if k == "lines" else v) for k, v in m.items()})
                                 for m in d.get("matches", ())),
                   unknown_codes=tuple(UnknownCode(**c) for c in d.get("unknown_codes", ())),
                   notes=tuple(d.get("notes", ())), stats=dict(d.get("stats", {})),
                   envcheck_version=str(d.get("envcheck_version", __version__)))


def default_log_dir() -> Path | None:
    """The CANN log directory: $ASCEND_PROCESS_LOG_PATH, else ~/ascend/log (None if neither exists)."""
    env = os.environ.get("ASCEND_PROCESS_LOG_PATH")
    for cand in ([Path(env)] if env else []) + [Path.home() / "ascend" / "log"]:
        if cand.is_dir():
            return cand
    return None


def resolve_inputs(paths: list[str]) -> list[str]:
    """Expand PATH arguments to the inputs to read ('-' = stdin), in a stable order."""
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
            out.extend(_walk(p))
        elif os.path.exists(p):
            if not os.access(p, os.R_OK):
                raise UsageError(f"{p}: permission denied")
            out.append(p)
        else:
            raise UsageError(f"{p}: no such file or directory")
    return out


def _walk(top: str) -> Iterator[str]:
    """Regular files under top, sorted; FIFOs, sockets and devices are left alone (they may block)."""
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if os.path.isfile(path):
                yield path


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


def scan(inputs: list[str], matcher: Matcher, budget: float) -> ScanResult:
    """Scan every input into one ScanResult; unreadable inputs become notes."""
    result = ScanResult()
    shared = Budget(budget)
    for path in inputs:
        if result.budget_exceeded:
            result.notes.append(f"{_label(path)}: not scanned (time budget exceeded)")
            continue
        if path == "-" and sys.stdin.isatty():
            print("envcheck: reading standard input (paste the error, then Ctrl-D)", file=sys.stderr)
        try:
            streams = _open(path)
        except OSError as exc:
            result.notes.append(f"{path}: cannot read ({exc.strerror or exc})")
            continue
        try:
            matcher.scan_stream(streams[-1], _label(path), result, budget=shared,
                                interactive=path == "-" and sys.stdin.isatty())
        except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
            result.notes.append(f"{_label(path)}: read error ({exc}); results for it may be partial")
        finally:
            if path != "-":
                for s in reversed(streams):
                    s.close()
    return result


def _label(path: str) -> str:
    return "<stdin>" if path == "-" else path


def build(result: ScanResult, kb: Any, engine: str, inputs: list[str]) -> DiagnoseResult:
    """The diagnosis; `inputs` are the PATH arguments as given (a directory is one)."""
    from envcheck.kb.link import fix_summary, page_url

    known: set[str] = set()
    for e in kb.entries:
        known.update(e.error_codes)
    matches = []
    for eh in result.ranked():
        entry = kb.get(eh.entry_id)
        matches.append(Match(
            id=eh.entry_id, title=entry.title if entry else "", category=entry.category if entry else "",
            hits=eh.count, specificity=eh.specificity, lines=tuple(h.to_dict() for h in eh.first),
            more_hits=max(0, eh.count - len(eh.first)), fix=fix_summary(entry) if entry else "",
            kb_show=f"envcheck kb show {eh.entry_id}", page=page_url(entry) if entry else ""))
    unknown = [UnknownCode(c.code, c.count, c.first.to_dict() if c.first else None)
               for c in result.unknown_codes(known)]
    notes = list(result.notes)
    if kb.errors:
        notes.append(f"kb: {len(kb.errors)} entries could not be read (run envcheck kb lint)")
    stats = {"files": result.files, "bytes": result.bytes, "lines": result.lines, "cut_lines": result.cut_lines,
             "seconds": round(result.seconds, 3), "budget_exceeded": result.budget_exceeded}
    return DiagnoseResult(inputs=tuple(_label(p) for p in inputs), engine=engine, matches=tuple(matches),
                          unknown_codes=tuple(unknown), notes=tuple(notes), stats=stats)


def diagnose(paths: list[str], *, kb_dir: str | None = None, engine: str = "auto", max_hits: int = 3,
             max_line: int = 64 * 1024, time_budget: float = 300.0) -> DiagnoseResult:
    """Scan `paths` (files, directories, *.gz, '-'; none = the CANN log directory) against the kb."""
    from envcheck.kb.entries import load_kb
    from envcheck.kb.match import kb_matcher

    if max_hits < 0 or time_budget <= 0 or max_line < 80:
        raise UsageError("--max-hits must be >= 0, --time-budget > 0 and --max-line >= 80")
    root = None
    if kb_dir:
        if not os.path.isdir(kb_dir):
            raise UsageError(f"--kb {kb_dir}: not a directory")
        root = str(Path(kb_dir).resolve())
    shown = list(paths) or [str(default_log_dir() or "")]
    inputs = resolve_inputs(list(paths))
    try:
        matcher = kb_matcher(root, engine)
    except RuntimeError as exc:
        raise UsageError(str(exc)) from None
    matcher = copy.copy(matcher)  # the compiled patterns are shared; the limits are this run's
    matcher.max_hits, matcher.max_line = max_hits, max_line
    result = scan(inputs, matcher, time_budget)
    result.notes[:0] = matcher.notes
    if engine == "auto" and matcher.engine == "re":
        result.notes.insert(0, "google-re2 is not installed: scanned with Python re, which is much slower on "
                               "big logs (pip install google-re2)")
    return build(result, load_kb(root), matcher.engine, shown)
