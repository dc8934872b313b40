"""Diagnose mined lines against the kb as it was BEFORE they were mined: a clean measure of the matching code.

Usage: python benchmarks/unseen_lines.py [--kb-at COMMIT[..END] ...] [--misses]

The mined lines (tests/data/diagnose/mined/) were learnt by the kb once they were recorded, so diagnosing them with
today's kb measures what the kb was taught. This script takes, for each COMMIT, the mined files added after it (up
to END, default HEAD) and diagnoses their lines with TODAY's code against the kb/ tree of that commit (`git
archive`): text that kb had never seen. A change to the matching code (envcheck/kb/) that helps here generalises;
one that only helps the lines it was written from does not. (The error-code dictionary and the message catalogue
are today's: they are code-side data; entries they name that the old kb lacks are left out by diagnose.)

Default: DEFAULT_COMMITS below, the lines of sessions 5 to 10, 13 to 17 and 19, each against the kb of its session's
start; each population is closed at the commit that added its last family. A later session measures its own lines
with `--kb-at START..HEAD` (53199fe is where session 9 ended). Needs the repository's git history.
Prints, per commit: lines whose top entry has the right category, and lines whose labelled entry (when that
entry existed at the commit) is among the top 3.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import yaml  # noqa: E402

from envcheck.kb.entries import load_kb  # noqa: E402
from envcheck.plan.stated import diagnose_report  # noqa: E402

MINED = "tests/data/diagnose/mined"
DEFAULT_COMMITS = ("8d74450..1498957", "1498957..3b189e9", "3b189e9..eb75049", "d252493..c6c873e", "3983f98..06595c8",
                   "7bb5464..caf7d63", "de637f6..8cf2d3a", "65be408..0ceaa59", "d559784..6ba7fac", "3c2f530..b5e4ead",
                   "890b33b..0c75f1b",
                   "55def4b..0e56781")


def git(*args: str) -> bytes:
    return subprocess.run(["git", "-C", str(REPO), *args], check=True, capture_output=True).stdout


def added_since(commit: str, end: str) -> list[str]:
    out = git("diff", "--name-only", "--diff-filter=A", commit, end, "--", MINED).decode()
    return sorted(p for p in out.split() if p.endswith(".yaml"))


def old_kb(commit: str, into: Path) -> Path:
    with tarfile.open(fileobj=BytesIO(git("archive", commit, "kb"))) as tar:
        if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4 / 3.12: refuse links and paths outside `into`
            tar.extractall(into, filter="data")
        else:  # pragma: no cover - our own history: trusted content
            tar.extractall(into)
    return into / "kb"


def measure(spec: str, work: Path, misses: bool = False) -> tuple[int, int, int, int, int]:
    """(families, lines, lines with the right category, lines whose entry existed then, those with it in the top 3)."""
    commit, _, end = spec.partition("..")
    files = added_since(commit, end or "HEAD")
    if not files:
        return 0, 0, 0, 0, 0
    kbdir = old_kb(commit, work / commit)
    kb = load_kb(str(kbdir))
    log = work / "line.log"
    n = cat = known = top3 = 0
    for f in files:
        for i, d in enumerate(yaml.safe_load((REPO / f).read_text(encoding="utf-8"))["lines"]):
            log.write_text(d["text"], encoding="utf-8")
            r = diagnose_report([str(log)], kb_dir=str(kbdir))
            ok = bool(r.matches) and r.matches[0].category == d["category"]
            n += 1
            cat += ok
            hit = None
            if d.get("entry") and kb.get(d["entry"]) is not None:
                hit = d["entry"] in [m.id for m in r.matches[:3]]
                known += 1
                top3 += hit
            if misses and (not ok or hit is False):
                got = [f"{m.id}/{m.category}/{m.confidence}" for m in r.matches[:3]]
                print(f"  {Path(f).stem}[{i}] want {d['category']}/{d.get('entry')} got {got}")
    return len(files), n, cat, known, top3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kb-at", nargs="*", default=list(DEFAULT_COMMITS), metavar="COMMIT[..END]")
    ap.add_argument("--misses", action="store_true", help="print each line that is wrong")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for c in a.kb_at:
            fams, n, cat, known, top3 = measure(c, Path(tmp), a.misses)
            if not n:
                print(f"{c}: no mined files were added")
                continue
            print(f"{c}: {fams} families, {n} lines: category {cat}/{n} = {cat / n:.0%}; "
                  f"entry in top 3 {top3}/{known} (entries that existed then)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
