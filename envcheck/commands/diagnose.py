"""`envcheck diagnose PATH... | -`: scan error output and logs, name the matching kb pitfalls."""
from __future__ import annotations

import argparse
import copy
import gzip
import json
import os
import sys
import zlib
from pathlib import Path
from typing import IO, Any, Iterator

from envcheck.errors import UsageError

EPILOG = """\
PATH may be a file, a directory (searched recursively), a gzip file (detected by its magic
bytes, e.g. rotated *.log.gz) or '-' for standard input (paste a traceback, end with Ctrl-D).
With no PATH the CANN log directory is scanned: $ASCEND_PROCESS_LOG_PATH, else ~/ascend/log.
Binary files are skipped with a note; lines longer than --max-line bytes are cut.

Exit status: 1 a kb entry matched or an error code was found (a problem was found),
0 nothing matched, 2 usage or input error (missing path, unreadable file, bad flag).
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = EPILOG
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("paths", nargs="*", metavar="PATH", help="files, directories, *.gz, or - for stdin")
    p.add_argument("--kb", metavar="DIR", default=None, help="use another kb directory (default: the shipped kb)")
    p.add_argument("--max-hits", type=int, default=3, metavar="N", help="matching lines shown per entry (default 3)")
    p.add_argument("--time-budget", type=float, default=300.0, metavar="SEC",
                   help="stop scanning after SEC seconds and report what was found (default 300)")
    p.add_argument("--max-line", type=int, default=64 * 1024, metavar="BYTES",
                   help="cut lines longer than this (default 65536)")
    p.add_argument("--engine", choices=("auto", "re2", "re"), default="auto",
                   help="regex engine: re2 (fast, linear time; default when installed) or Python re")


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


def scan(inputs: list[str], matcher: Any, budget: float) -> Any:
    """Scan every input into one ScanResult; unreadable inputs become notes."""
    from envcheck.kb.match import Budget, ScanResult

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


def build(result: Any, kb: Any, engine: str, inputs: list[str]) -> dict[str, Any]:
    """The JSON-ready diagnosis; `inputs` are the PATH arguments as given (a directory is one)."""
    from envcheck.kb.link import fix_summary, page_url
    from envcheck.redact import scrub
    from envcheck.version import __version__

    known: set[str] = set()
    for e in kb.entries:
        known.update(e.error_codes)
    matches = []
    for eh in result.ranked():
        entry = kb.get(eh.entry_id)
        matches.append({
            "id": eh.entry_id,
            "title": entry.title if entry else "",
            "category": entry.category if entry else "",
            "hits": eh.count,
            "specificity": eh.specificity,
            "lines": [h.to_dict() for h in eh.first],
            "more_hits": max(0, eh.count - len(eh.first)),
            "fix": fix_summary(entry) if entry else "",
            "kb_show": f"envcheck kb show {eh.entry_id}",
            "page": page_url(entry) if entry else "",
        })
    unknown = [{"code": c.code, "count": c.count, "first": c.first.to_dict() if c.first else None}
               for c in result.unknown_codes(known)]
    notes = list(result.notes)
    if kb.errors:
        notes.append(f"kb: {len(kb.errors)} entries could not be read (run envcheck kb lint)")
    found = bool(matches or unknown)
    return scrub({
        "schema_version": 1,
        "envcheck_version": __version__,
        "command": "diagnose",
        "inputs": [_label(p) for p in inputs],
        "engine": engine,
        "matches": matches,
        "unknown_codes": unknown,
        "notes": notes,
        "stats": {"files": result.files, "bytes": result.bytes, "lines": result.lines,
                  "cut_lines": result.cut_lines, "seconds": round(result.seconds, 3),
                  "budget_exceeded": result.budget_exceeded},
        "exit_code": 1 if found else 0,
    })


def render_text(d: dict[str, Any], verbose: bool = False, color: bool = False) -> str:
    def bold(s: str) -> str:
        return f"\x1b[1m{s}\x1b[0m" if color else s

    st = d["stats"]
    where = (f"{st['files']} input{'s' if st['files'] != 1 else ''} "
             f"({st['lines']:,} lines, {st['bytes'] / 1e6:.1f} MB, {st['seconds']:.2f} s)")
    out = []
    if d["matches"]:
        n = len(d["matches"])
        out.append(f"envcheck diagnose: {n} matching kb entr{'ies' if n != 1 else 'y'} in {where}")
    else:
        out.append(f"envcheck diagnose: no known pitfall found in {where}")
    for i, m in enumerate(d["matches"], 1):
        out.append("")
        out.append(f"{i:2d}. {bold(m['id'])}  [{m['category']}]  {m['hits']} hit{'s' if m['hits'] != 1 else ''}")
        if m["title"]:
            out.append(f"    {m['title']}")
        for h in m["lines"]:
            out.append(f"    {h['file']}:{h['line']}: {h['text']}")
        if m["more_hits"]:
            out.append(f"    … {m['more_hits']} more hit{'s' if m['more_hits'] != 1 else ''}")
        if verbose:
            out.append(f"    specificity: {m['specificity']}")
        fix = (m["fix"] or "").splitlines()
        if fix:
            out.append(f"    fix: {fix[0]}")
            out.extend(f"         {line}" for line in fix[1:])
        out.append(f"    more: {m['kb_show']}; site: {m['page']}")
    if d["unknown_codes"]:
        out.append("")
        out.append("Error codes no kb entry knows yet (worth a kb entry):")
        for c in d["unknown_codes"]:
            first = c["first"] or {}
            out.append(f"    {c['code']:<9} ×{c['count']:<5} {first.get('file')}:{first.get('line')}: {first.get('text')}")
    if d["notes"]:
        out.append("")
        out.append("Notes:")
        out.extend(f"    {n}" for n in d["notes"])
    return "\n".join(out) + "\n"


def run(args: argparse.Namespace) -> int:
    from envcheck.kb.entries import load_kb
    from envcheck.kb.match import kb_matcher

    if args.max_hits < 0 or args.time_budget <= 0 or args.max_line < 80:
        raise UsageError("--max-hits must be >= 0, --time-budget > 0 and --max-line >= 80")
    root = None
    if args.kb:
        if not os.path.isdir(args.kb):
            raise UsageError(f"--kb {args.kb}: not a directory")
        root = str(Path(args.kb).resolve())
    shown = list(args.paths) or [str(default_log_dir() or "")]
    inputs = resolve_inputs(list(args.paths))
    try:
        matcher = kb_matcher(root, args.engine)
    except RuntimeError as exc:
        raise UsageError(str(exc)) from None
    matcher = copy.copy(matcher)  # the compiled patterns are shared; the limits are this run's
    matcher.max_hits, matcher.max_line = args.max_hits, args.max_line
    result = scan(inputs, matcher, args.time_budget)
    result.notes[:0] = matcher.notes
    if args.engine == "auto" and matcher.engine == "re":
        result.notes.insert(0, "google-re2 is not installed: scanned with Python re, which is much slower on "
                               "big logs (pip install google-re2)")
    data = build(result, load_kb(root), matcher.engine, shown)
    if args.junit:
        from envcheck.commands._output import write_text

        write_text(args.junit, _junit(data))
    if args.json:
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    else:
        from envcheck.render.text import use_color

        sys.stdout.write(render_text(data, verbose=args.verbose, color=use_color(args.color, sys.stdout)))
    sys.stdout.flush()
    return int(data["exit_code"])


def _junit(d: dict[str, Any]) -> str:
    """One failing testcase per matched entry, through the report's JUnit renderer."""
    from envcheck.model import Facts, Finding, Report, Status, ev
    from envcheck.render import render

    findings = [Finding(code="diagnose", slug=m["id"], status=Status.FAIL, title=m["title"] or m["id"],
                        evidence=tuple(ev(f"{h['file']}:{h['line']}", h["text"]) for h in m["lines"]),
                        fix=m["fix"], kb=(m["id"],), section="Diagnose") for m in d["matches"]]
    return render(Report(Facts(), findings, d["envcheck_version"], command="diagnose"), "junit")
