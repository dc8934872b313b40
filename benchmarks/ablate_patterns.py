"""How `envcheck diagnose` does on a wording its patterns have never seen (issue 11), measured on development data.

A user's error line often says what a kb entry's patterns were written for in other words. What diagnose then
answers comes from its other layers: the error-code dictionary, the catalogue of torch_npu / CANN / vLLM-Ascend
messages, and the ranked fallback over the kb search index (`likely`). This script measures those layers alone:
for each labelled excerpt of the development data (the field corpus's dev half and the mined lines of
tests/data/diagnose/mined/), it removes the `patterns:` of the excerpt's own labelled entry from a copy of the kb and
diagnoses the excerpt against that copy. The other entries keep their patterns, so a pattern of a neighbouring entry
that fires on the line is part of what a user would get too.

It prints, per data set, how often the top entry's category is the labelled one and how often the labelled entry
is in the top 3, with and without the ablation. The field corpus's eval half is never read here: this figure is
for tuning the fallback on development data only.

    python benchmarks/ablate_patterns.py            # both data sets
    python benchmarks/ablate_patterns.py --only dev # the field corpus's dev half
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# the corpora are read by the tests' own loaders, so the split rule (and with it the promise never to read the
# evaluation half) has one definition
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "kb")]

from test_field_corpus import FILES, load, split_of  # noqa: E402
from test_mined_lines import items as mined_items  # noqa: E402

from envcheck import resources  # noqa: E402
from envcheck.plan.stated import diagnose_report  # noqa: E402


def items(only: str | None) -> list[tuple[str, str, str, str]]:
    """(data set, category, entry, text) for every labelled development item with an entry."""
    out = []
    if only in (None, "dev"):
        for d in map(load, FILES):
            if split_of(str(d["thread"])) == "dev" and d.get("entry"):
                out.append(("field-dev", d["category"], d["entry"], d["text"]))
    if only in (None, "mined"):
        out += [("mined", d["category"], d["entry"], d["text"]) for _, d in mined_items() if d.get("entry")]
    return out


def strip_patterns(path: Path, symptoms: bool = False) -> None:
    """Rewrite one entry file with `patterns: []` (and `symptoms: []` with `symptoms`; front matter re-dumped, body
    kept)."""
    text = path.read_text(encoding="utf-8")
    _, fm, body = text.split("---\n", 2)
    meta = yaml.safe_load(fm)
    meta["patterns"] = []
    if symptoms:
        meta["symptoms"] = []
    path.write_text("---\n" + yaml.safe_dump(meta, allow_unicode=True, sort_keys=False) + "---\n" + body,
                    encoding="utf-8")


def diagnose_text(text: str, tmp: Path, kb_dir: str | None) -> tuple[str | None, list[str]]:
    log = tmp / "excerpt.log"
    log.write_text(text, encoding="utf-8")
    r = diagnose_report([str(log)], kb_dir=kb_dir)
    return (r.matches[0].category if r.matches else None), [m.id for m in r.matches[:3]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=("dev", "mined"))
    ap.add_argument("--symptoms", action="store_true",
                    help="remove the entry's `symptoms:` too (they often quote the lines the entry was written from)")
    args = ap.parse_args()
    kb = resources.kb_dir()
    files = {p.stem: p for p in kb.rglob("*.md") if p.parent != kb}
    rows = items(args.only)
    by_entry: dict[str, list[tuple[str, str, str, str]]] = {}
    for r in rows:
        by_entry.setdefault(r[2], []).append(r)
    tally: dict[tuple[str, str], list[int]] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = Path(tmpd)
        os.environ["XDG_CACHE_HOME"] = str(tmp / "cache")  # the ablated indexes never reach the user's cache
        for n, (eid, group) in enumerate(sorted(by_entry.items())):
            if eid not in files:
                continue
            ab = tmp / f"kb{n}"
            shutil.copytree(kb, ab)
            strip_patterns(ab / files[eid].relative_to(kb), args.symptoms)
            for ds, cat, entry, text in group:
                for mode, kb_dir in (("full", None), ("ablated", str(ab))):
                    top_cat, top3 = diagnose_text(text, tmp, kb_dir)
                    t = tally.setdefault((ds, mode), [0, 0, 0])
                    t[0] += top_cat == cat
                    t[1] += entry in top3
                    t[2] += 1
            shutil.rmtree(ab)
    for (ds, mode), (cat, top3, n) in sorted(tally.items()):
        print(f"{ds:10} {mode:8} category {cat}/{n} = {cat / n:.0%}   entry in top 3 {top3}/{n} = {top3 / n:.0%}")
    print(f"({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
