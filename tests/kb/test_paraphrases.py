"""Is every kb entry found when a user describes its failure in their own words? (issue 11)

tests/data/diagnose/paraphrases.yaml holds, for every kb entry, two short user-style reports written
for this test (not field data): what the user ran and saw, sometimes an error line (a realistic
variant, not the entry's pattern example), one of the two in Chinese for about a third of the entries.
Each report is diagnosed as a pasted file, and per half (sha256 of the entry id, even = "tune", the first
half: kb text was improved from its misses; odd = "held-out", the second half: never used to change the
kb, it shows whether those fixes generalise) we measure:

  (a) the top entry's category is the entry's category;
  (b) the entry is among the top 3.

Reports of an entry about a known-harmless warning (`is_benign_entry`: every pattern example is a line the
benign lexicon names) are held to what issue 11 asks of such lines instead: recognised and shown as harmless,
never first. They are not in (a) and (b); every one of them must list its entry as a benign match.

Both halves' figures are printed (`pytest -s`). The floors are what each half reached when they were
set, rounded down; they may only be raised. A floor belongs to the population of entries it was reached on
(paraphrase-populations.yaml): up to session 8 one population of 303 entries, judged as the whole set was before.
Entries added since are printed as "new" until their session lands and names them with the figures they reached,
so that a new entry's honest miss is seen as such and does not cost knowledge elsewhere.
"""
from __future__ import annotations

import hashlib
import re
import tempfile
from pathlib import Path

import pytest
import yaml
from conftest import DATA

from envcheck.kb.diagnose import diagnose, is_benign_entry
from envcheck.kb.entries import load_kb

PARAPHRASES = DATA / "diagnose" / "paraphrases.yaml"
POPULATIONS = DATA / "diagnose" / "paraphrase-populations.yaml"
# floors: (top category right, entry in top 3) per half, as reached when set (rounded down)
# reached: (168, 173 / 178; 170, 174 / 180) in session 3, (211, 215 / 220; 205, 211 / 216) in session 4,
# (240, 244 / 250; 221, 227 / 232) in session 5
# (session 8, when the populations were closed: entries to session 8, tune 298, 302 / 308; held-out 282, 288 / 296)
# (session 9: its five entries, tune 4, 4 / 4; held-out 6, 6 / 6)
# (session 10: the two entries written in session 9 that passed session 10's gate; both fall in the held-out half,
# 4, 4 / 4; the tune half has no report of them, so that floor has nothing to guard). The three entries written
# and landed in session 10 (round-10 gate) are their own population: all in the held-out half, 5, 5 / 6 (the second
# report of engine-cuda-package-on-npu-host ranks ascend-stack-version-pins first and its entry outside the top 3;
# held-out, so left as it is)
# (session 13: the seven entries written by its miners and landed through the gate, reports by the lead: tune 8, 8 / 8;
# held-out 6, 6 / 6)
# (session 14: the eight entries landed through its gate - one written by a session-13 miner and held back then, six
# by its own miners, one by the lead - reports by the lead: tune 10, 10 / 10; held-out 6, 6 / 6)
# (session 15: the one entry landed through its gate, written by a miner, reports by the lead: it falls in the
# held-out half, 2, 2 / 2; the tune half has none, so that floor has nothing to guard)
# (session 16: the one entry landed through its gate, deepep-npu-token-capacity-exceeded, written by a miner, reports by
# the lead: held-out, 2, 2 / 2; two more new entries with reports were held back at the gate)
# (session 17: the six entries landed through its gate, five written by miners of this session and one
# (deepspeed-op-not-implemented-on-npu) passed on its one retry, reports by the lead: tune 2, 2 / 2 (one entry);
# held-out 10, 10 / 10 (five entries); torch-npu-getenv-patch-stale-environ was held back with its reports)
# (session 19: the one entry landed through its gate, triton-kernel-jit-on-first-request, written by a miner, reports
# by the lead: held-out, 2, 1 / 2 (the English report, the warmup warning quoted in prose, ranks it fourth, below
# three other performance entries; held-out, so left as it is); the tune half has none, so that floor has nothing
# to guard; dcp-async-save-needs-cpu-backend was held back with its reports: it took a held-out report of an older
# entry out of its top 3)
FLOORS = {("entries to session 8", "tune"): (0.96, 0.97), ("entries to session 8", "held-out"): (0.95, 0.97),
          ("entries of session 9", "tune"): (1.0, 1.0), ("entries of session 9", "held-out"): (1.0, 1.0),
          ("entries of session 10", "tune"): (1.0, 1.0), ("entries of session 10", "held-out"): (1.0, 1.0),
          ("entries written in session 10", "tune"): (0.83, 0.83),
          ("entries written in session 10", "held-out"): (0.83, 0.83),
          ("entries written in session 13", "tune"): (1.0, 1.0),
          ("entries written in session 13", "held-out"): (1.0, 1.0),
          ("entries landed in session 14", "tune"): (1.0, 1.0),
          ("entries landed in session 14", "held-out"): (1.0, 1.0),
          ("entries landed in session 15", "tune"): (1.0, 1.0),
          ("entries landed in session 15", "held-out"): (1.0, 1.0),
          ("entries landed in session 16", "tune"): (1.0, 1.0),
          ("entries landed in session 16", "held-out"): (1.0, 1.0),
          ("entries landed in session 17", "tune"): (1.0, 1.0),
          ("entries landed in session 17", "held-out"): (1.0, 1.0),
          ("entries landed in session 19", "tune"): (1.0, 1.0),
          ("entries landed in session 19", "held-out"): (1.0, 0.5)}
CJK = re.compile(r"[\u4e00-\u9fff]")


def half_of(entry_id: str) -> str:
    return "tune" if int(hashlib.sha256(entry_id.encode()).hexdigest(), 16) % 2 == 0 else "held-out"


def load_populations() -> dict[str, list[str]]:
    d = yaml.safe_load(POPULATIONS.read_text(encoding="utf-8"))
    assert isinstance(d, dict) and isinstance(d.get("populations"), dict)
    return d["populations"]


def load_reports() -> dict[str, list[str]]:
    d = yaml.safe_load(PARAPHRASES.read_text(encoding="utf-8"))
    assert isinstance(d, dict) and isinstance(d.get("reports"), dict)
    return d["reports"]


@pytest.fixture(scope="module")
def outcomes() -> dict[str, list[tuple[str, int, bool, bool, bool]]]:
    """half -> [(entry id, report index, category right, entry in top 3, any entry proposed)]; the reports of
    known-harmless warnings under "benign" as (entry id, report index, recognised as harmless, _, _)."""
    kb = load_kb()
    out: dict[str, list[tuple[str, int, bool, bool, bool]]] = {"tune": [], "held-out": [], "benign": []}
    with tempfile.TemporaryDirectory() as tmp:
        for eid, texts in load_reports().items():
            entry = kb.get(eid)
            assert entry is not None, eid
            for i, text in enumerate(texts):
                log = Path(tmp) / f"{eid}-{i}.txt"
                log.write_text(text, encoding="utf-8")
                r = diagnose([str(log)])
                if is_benign_entry(entry):
                    seen = any(m.id == eid and m.severity == "benign" for m in r.matches) and bool(r.benign)
                    out["benign"].append((eid, i, seen, seen, bool(r.matches)))
                    continue
                top_cat = r.matches[0].category if r.matches else None
                out[half_of(eid)].append((eid, i, top_cat == entry.category, eid in [m.id for m in r.matches[:3]],
                                          bool(r.matches)))
    return out


def test_every_entry_has_two_reports_and_a_third_have_chinese():
    reports = load_reports()
    ids = {e.id for e in load_kb().entries}
    assert set(reports) == ids, f"missing: {sorted(ids - set(reports))}, unknown: {sorted(set(reports) - ids)}"
    for eid, texts in reports.items():
        assert isinstance(texts, list) and len(texts) == 2 and all(isinstance(t, str) and t.strip() for t in texts), eid
        assert texts[0].strip() != texts[1].strip(), eid
    zh = sum(1 for texts in reports.values() if any(CJK.search(t) for t in texts))
    assert len(reports) / 4 <= zh, zh  # Chinese reports for at least a quarter of the entries
    only_zh = [eid for eid, texts in reports.items() if all(CJK.search(t) for t in texts)]
    assert not only_zh, f"every entry keeps an English report: {only_zh}"
    assert {half_of(e) for e in reports} == {"tune", "held-out"}


def test_reports_do_not_copy_the_entry_title():
    """A report that contains its entry's title verbatim measures nothing."""
    kb = load_kb()
    for eid, texts in load_reports().items():
        e = kb.get(eid)
        assert e is not None
        for t in texts:
            assert e.title.lower() not in t.lower(), eid
            assert e.title_zh not in t, eid


def test_populations_name_existing_entries_once():
    ids = {e.id for e in load_kb().entries}
    seen: set[str] = set()
    for name, members in load_populations().items():
        assert members and set(members) <= ids, f"{name}: not in the kb: {sorted(set(members) - ids)}"
        assert not seen & set(members), f"{name}: in two populations: {sorted(seen & set(members))}"
        seen |= set(members)
        assert {(name, half) for half in ("tune", "held-out")} <= set(FLOORS), f"{name} has no floor"


def test_figures_on_both_halves(outcomes):
    populations = load_populations()
    population_of = {eid: name for name, ids in populations.items() for eid in ids}  # an entry not named: "new"
    got = {}
    for half in ("tune", "held-out"):
        rows = outcomes[half]
        for population in ("all", *populations, "new"):
            sub = [row for row in rows if population in ("all", population_of.get(row[0], "new"))]
            if not sub:
                continue
            cat = sum(1 for row in sub if row[2])
            top3 = sum(1 for row in sub if row[3])
            none = sum(1 for row in sub if not row[4])
            n = len(sub)
            label = half if population == "all" else f"{half}, {population}"
            print(f"\nparaphrases {label}: top category right {cat}/{n} = {cat / n:.0%}; entry in top 3 {top3}/{n} = "
                  f"{top3 / n:.0%}; no entry proposed at all {none}/{n}")
            got[(population, half)] = (cat, top3, n)
    benign = outcomes["benign"]
    missed = [(eid, i) for eid, i, seen, _, _ in benign if not seen]
    print(f"paraphrases of known-harmless warnings shown as harmless: {len(benign) - len(missed)}/{len(benign)}")
    for key, (cat_floor, top3_floor) in FLOORS.items():  # every figure printed first
        if key not in got:  # a population whose entries all fall in the other half (split by entry id)
            members = populations[key[0]]
            assert not any(row[0] in members for row in outcomes[key[1]]), key
            continue
        cat, top3, n = got[key]
        assert cat / n >= cat_floor, f"{key} category {cat}/{n}"
        assert top3 / n >= top3_floor, f"{key} top-3 {top3}/{n}"
    assert benign and not missed, missed
