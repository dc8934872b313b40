"""`envcheck kb search|show|new|lint`: the pitfall knowledge base from the command line.

The kb used is, in order: `--kb DIR`, `$ENVCHECK_KB_DIR`, the kb shipped with envcheck.
Exit status: search 0 (found) / 1 (nothing matched); show 0; new 0; lint 0 (clean) / 1 (problems);
2 for bad input (unknown id, missing folder, bad flag values).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from envcheck.errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from envcheck.kb.new import Draft

GATE_FLAGS = (  # flag, kb gate key (envcheck/kb/gate.py), help
    ("--torch-npu", "torch_npu", "torch_npu version, e.g. 2.12.0"),
    ("--cann", "cann", "CANN version, e.g. 8.5.0"),
    ("--driver", "driver", "NPU driver (HDK) version, e.g. 25.0.rc1.1"),
    ("--torch", "torch", "PyTorch version, e.g. 2.6.0"),
    ("--python-version", "python", "Python version, e.g. 3.10 (--python is a PATH elsewhere)"),
    ("--mindspore", "mindspore", "MindSpore version, e.g. 2.3.1"),
    ("--chip", "chip", "NPU chip as npu-smi prints it (910B4) or a chip family (a2)"),
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="kb_command", metavar="SUBCOMMAND")
    s = _sub(sub, "search", "ranked search over titles (en/zh), symptoms, error codes and body")
    s.add_argument("query", nargs="+", help="words, an error code (EI0006, ERR02200) or Chinese text")
    s.add_argument("--limit", type=int, default=10, metavar="N", help="at most N results (default 10)")
    s = _sub(sub, "show", "print one entry (title, Chinese summary, symptoms, fix, page)")
    s.add_argument("id", help="entry id, e.g. cann-env-not-loaded")
    s.add_argument("--color", choices=("auto", "always", "never"), default=argparse.SUPPRESS,
                   help="colour (auto: TTY and no NO_COLOR)")
    g = s.add_argument_group("versions", "judge the entry's version gates (applies_to, gated fixes) for these versions")
    for flag, dest, help_ in GATE_FLAGS:
        g.add_argument(flag, dest=dest, metavar="V", default=None, help=help_)
    s = _sub(sub, "new", "scaffold a new entry file that passes `kb lint` (never overwrites)")
    _new_arguments(s)
    s = _sub(sub, "lint", "check entries: schema, ids, categories, check ids, patterns, sections, links")
    s.add_argument("path", nargs="?", help="kb folder or one entry file (default: the kb in use)")
    s.add_argument("--no-probe", dest="probe", action="store_false",
                   help="skip timing each pattern on crafted near-miss inputs (in a child process)")


def _sub(sub: argparse._SubParsersAction, name: str, help_: str) -> argparse.ArgumentParser:
    sp = sub.add_parser(name, help=help_, description=help_)
    sp.add_argument("--kb", metavar="DIR", default=argparse.SUPPRESS,
                    help="use the kb in DIR (default: $ENVCHECK_KB_DIR, else the shipped kb)")
    if name != "new":
        sp.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
    return sp


def _new_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--id", default="", help="slug (default: made from --title)")
    s.add_argument("--title", default="", help="English title")
    s.add_argument("--title-zh", default="", help="Chinese title")
    s.add_argument("--category", default="", help="one TAXONOMY.md id, e.g. env-not-loaded")
    s.add_argument("--summary-zh", default="", help="short Chinese summary of symptom and fix")
    for flag, help_ in (("--symptom", "what the user sees (repeatable)"),
                        ("--check", "check code whose failure links here, e.g. EC201 (repeatable)"),
                        ("--error-code", "error code the entry explains, e.g. EI0006 (repeatable)"),
                        ("--example", "a real error line --regex must match (repeatable)"),
                        ("--tag", "tag (repeatable)"), ("--source", "source URL (repeatable)")):
        s.add_argument(flag, action="append", default=[], help=help_)
    s.add_argument("--regex", default="", help="pattern identifying the pitfall in error output")
    s.add_argument("--interactive", action="store_true",
                   help="prompt for missing values (the default when stdin is a terminal)")


def kb_root(args: argparse.Namespace) -> Path:
    from envcheck import resources

    given = getattr(args, "kb", None) or os.environ.get("ENVCHECK_KB_DIR")
    root = Path(given) if given else resources.kb_dir()
    if not root.is_dir():
        raise UsageError(f"kb folder {root} does not exist")
    return root


def run(args: argparse.Namespace) -> int:
    cmd = getattr(args, "kb_command", None)
    if cmd is None:
        raise UsageError("missing subcommand: envcheck kb {search,show,new,lint} (see envcheck kb --help)")
    return {"search": _search, "show": _show, "new": _new, "lint": _lint}[cmd](args)


def _search(args: argparse.Namespace) -> int:
    from envcheck.kb.search import search

    if args.limit < 1:
        raise UsageError("--limit must be at least 1")
    query = " ".join(args.query)
    hits = search(query, kb_root(args), limit=args.limit)
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps({"query": query, "results": [h.to_dict() for h in hits]},
                                    ensure_ascii=False, indent=2) + "\n")
        return 0 if hits else 1
    if not hits:
        sys.stderr.write(f"no kb entries match {query!r}\n")
        return 1
    for n, h in enumerate(hits, 1):
        codes = ", ".join(h.error_codes + h.checks)
        sys.stdout.write(f"{n:>2}. {h.id}  [{h.category}]{'  ' + codes if codes else ''}\n"
                         f"    {h.title}\n    {h.title_zh}\n")
    sys.stdout.write(f"\nRead one with: envcheck kb show {hits[0].id}\n")
    return 0


def _show(args: argparse.Namespace) -> int:
    from envcheck.kb import show
    from envcheck.kb.entries import load_kb

    kb = load_kb(kb_root(args))
    e = kb.get(args.id)
    if e is None:
        import difflib

        close = difflib.get_close_matches(args.id, [x.id for x in kb.entries], n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; try `envcheck kb search {args.id}`"
        raise UsageError(f"no kb entry {args.id!r}{hint}")
    versions = _gate_versions(args)
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps(show.to_dict(e, versions=versions), ensure_ascii=False, indent=2) + "\n")
    else:
        mode = getattr(args, "color", "auto")
        color = mode == "always" or (mode == "auto" and sys.stdout.isatty() and not os.environ.get("NO_COLOR"))
        sys.stdout.write(show.render(e, color=color, versions=versions))
    return 0


def _gate_versions(args: argparse.Namespace) -> dict[str, str] | None:
    """The versions given with the gate flags, validated (a bad one is a usage error); None when none.
    --chip accepts a name npu-smi prints (mapped to its family through the matrix) or a family."""
    from envcheck.kb.gate import ASCEND_KEYS
    from envcheck.versions import VersionError, parse_ascend, parse_pep440

    out: dict[str, str] = {}
    for flag, key, _ in GATE_FLAGS:
        value = getattr(args, key, None)
        if value is None:
            continue
        if key == "chip":
            out[key] = _chip_family(value)
            continue
        try:
            (parse_ascend if key in ASCEND_KEYS else parse_pep440)(value)
        except VersionError as exc:
            raise UsageError(f"{flag}: {exc}") from None
        out[key] = value
    return out or None


def _chip_family(chip: str) -> str:
    from envcheck import matrix

    try:
        fam = matrix.load().chip_family(chip)
    except Exception:  # no matrix: take the value as a family name
        fam = None
    return fam.family if fam is not None else chip.strip().lower()


def _new(args: argparse.Namespace) -> int:
    from envcheck import resources
    from envcheck.kb import new

    given = getattr(args, "kb", None) or os.environ.get("ENVCHECK_KB_DIR")
    if not given and resources.kb_dir().resolve().is_relative_to(resources._DATA.resolve()):
        raise UsageError("the installed kb is read-only: pass --kb DIR (your checkout's kb/)")
    d = new.Draft(id=args.id, title=args.title, title_zh=args.title_zh, category=args.category,
                  summary_zh=args.summary_zh, symptoms=list(args.symptom), checks=list(args.check),
                  error_codes=list(args.error_code), regex=args.regex, examples=list(args.example),
                  tags=list(args.tag), sources=list(args.source))
    if args.interactive or sys.stdin.isatty():
        _prompt(d)
    d.id = d.id or new.slugify(d.title)
    root = kb_root(args)
    path = new.write(d, root)
    problems = _lint_one(path)
    if problems:  # e.g. an unknown check id: remove the file this command just created
        path.unlink()
        raise UsageError("the entry would not pass `kb lint`: " + "; ".join(p.message for p in problems))
    sys.stdout.write(f"wrote {path}\nNext: fill in the sections, then run `envcheck kb lint`.\n")
    return 0


def _lint_one(path: Path) -> list:
    from envcheck.checks import known_codes
    from envcheck.kb.lint import lint_path

    return lint_path(path, known_codes())


def _prompt(d: Draft) -> None:
    """Ask for every value the flags left empty (one line each; lists: comma-separated)."""
    from envcheck.kb.taxonomy import CATEGORIES

    asks = [("title", "English title"), ("title_zh", "Chinese title (中文标题)"),
            ("category", f"category ({', '.join(CATEGORIES)})"), ("id", "id (empty: from the title)"),
            ("summary_zh", "Chinese summary (现象：…… 解决：……)"), ("symptoms", "symptoms (comma-separated)"),
            ("checks", "check codes (comma-separated, may be empty)"),
            ("error_codes", "error codes (comma-separated, may be empty)"),
            ("regex", "regex (may be empty)"), ("examples", "example lines for the regex (use ' || ' between)"),
            ("tags", "tags (comma-separated)"), ("sources", "source URLs (comma-separated)")]
    for attr, label in asks:
        cur = getattr(d, attr)
        if cur or (attr == "examples" and not d.regex):
            continue
        try:
            sys.stderr.write(f"{label}: ")
            sys.stderr.flush()
            answer = input().strip()
        except EOFError:
            raise UsageError(f"no value for {attr} (stdin closed)") from None
        if isinstance(cur, list):
            sep = "||" if attr == "examples" else ","
            setattr(d, attr, [x.strip() for x in answer.split(sep) if x.strip()])
        else:
            setattr(d, attr, answer)


def _lint(args: argparse.Namespace) -> int:
    from envcheck.kb.entries import entry_files
    from envcheck.kb.lint import lint_path

    if args.path is not None:
        path = Path(args.path)
        if not path.exists():
            raise UsageError(f"{path} does not exist")
    else:
        path = kb_root(args)
    from envcheck.checks import known_codes

    problems = lint_path(path, known_codes(), probe=args.probe)
    n = 1 if path.is_file() else len(entry_files(path))
    if getattr(args, "json", False):
        doc = {"ok": not problems, "entries": n, "problems": [p.to_dict() for p in problems]}
        sys.stdout.write(json.dumps(doc, ensure_ascii=False, indent=2) + "\n")
    else:
        for p in problems:
            sys.stdout.write(p.format() + "\n")
        files = len({p.path for p in problems})
        msg = (f"{len(problems)} problem(s) in {files} of {n} entries" if problems
               else f"{n} entries, no problems")
        (sys.stderr if problems else sys.stdout).write(f"kb lint: {msg}\n")
    return 1 if problems else 0
