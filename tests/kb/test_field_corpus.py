"""How well `diagnose` recognises real error texts it was not written from (issue 11).

The field corpus (tests/data/field-corpus/*.yaml, README.md there) holds verbatim excerpts from
public threads, each labelled with the root cause's category and kb entry as the thread established
it. It is split by thread (sha256 of `thread`, even = dev, odd = eval). kb patterns are written from
the dev half only; the eval half measures generalisation. Per half:

  (a) the top entry's category is the labelled category (every excerpt);
  (b) the labelled entry is among the top 3 (excerpts whose `entry` is not null).

Each excerpt is diagnosed as `envcheck diagnose` does it (`envcheck.plan.stated.diagnose_report`: the kb
matcher plus the judgement of the versions the excerpt states), so the figures are what users get.

Both halves' figures are printed (`pytest -s`), and the eval figures again on the excerpts whose
category an expert reads from the text alone (`from_text: yes`, see the corpus README). The thresholds
below are what the eval half reached when a change landed on main; they are regression guards, not
targets. Sourced kb entries are kept or dropped on their merits, judged on the dev half and the tune half
of the paraphrases, never to protect a floor; a landing sets the floor to what it reaches. Twice so far that
was lower than before (EVAL_FLOORS, "a-j": 40 FAQ-sourced entries cost 3 of 81 excerpts, inside the 95 %
interval; "a-k" / "a-l" top 3 in session 5: one excerpt each; keeping a floor would have meant choosing
knowledge by the eval half). Session 6 is the third: its landing (120 mined lines, 15 entries, judged on the dev
half, the tune paraphrases and the mined lines) reached one excerpt fewer on category for A-K, A-L and A-M and one
more on top 3 for each; the dev half's category also fell, 107 -> 105 of 119, through `likely` near-ties that move
when new entries change the search index's word statistics. The issue's targets are
90 % (a) and 80 % (b); they are not reached (see the closing note of issue 11).
"""
from __future__ import annotations

import hashlib
import re
import tempfile
from pathlib import Path

import pytest
import yaml
from conftest import DATA

from envcheck.kb.entries import load_kb
from envcheck.kb.taxonomy import CATEGORIES
from envcheck.plan.stated import diagnose_report

CORPUS = DATA / "field-corpus"
FILES = sorted(CORPUS.glob("*.yaml"))
# Floors per eval population (excerpts from threads a kb entry cites left out), as (category, entry in top 3);
# issue 11's targets are 0.90 and 0.80. A floor belongs to the population it was reached on: when the corpus grows,
# the old population keeps its floor and the grown one gets the figure it reaches (a newer, harder batch of
# threads lowers the overall figure without anything getting worse, so it must not be compared with the old one).
EVAL_FLOORS = {
    # parts A-J: 54/81 and 37/64 when part J landed (floors 0.66 / 0.57); 51/81 and 37/64 after the kb grew by 40
    # entries from the projects' FAQs (session 3): the category floor went down to what that landing reached (floors
    # 0.62 / 0.57); 57/81 and 38/64 after 246 mined lines taught the kb (session 4); 58/81 and 38/64 after 176 more
    # (session 5); 58/81 and 39/64 after 120 more (session 6); 60/81 and 44/64 in session 7 (255 mined lines, the
    # fallback's category vote and hint weight; floors raised); 61/81 and 45/64 in session 8 (166 mined lines, 25
    # entries, the aclnn codes; floors raised); 61/81 and 46/64 after session 10's round-10 gate (top-3 floor raised);
    # 62/81 and 45/64 at the end of session 10; 61/81 and 46/64 in session 11, when two corrections of the
    # primary-source review of 217 more entries (lmcache-ascend-cpu-buffer-too-large, aclnn-op-missing-in-cann: an
    # example re-attributed to vLLM-Ascend's own custom operators) moved one excerpt out of the right category and one
    # entry into the top 3: landed as corrections, floors set to what that reached, when corrections from the
    # primary-source review of 8 version entries (x86_64 pip lines, vLLM-Ascend's triton-ascend pin, driver/firmware
    # order) moved one excerpt into the right category and another's entry out of the top 3: landed as corrections, not
    # withheld to keep a floor; floors set to what that reached
    # At the end of session 11 (the whole review landed, 217 entries): 62/81 and 46/64 (floors raised again); A-K
    # 71/94 and 47/68; A-L 75/99 and 51/72; A-M 89/115 and 65/87; all 95/121 and 71/93
    # End of session 15 (43 mined lines, one entry): 62/81 and 47/64 (top-3 floor raised)
    # End of session 19 (106 mined lines, one entry, two unwrapping rules): 62/81 and 48/64 (top-3 floor raised)
    "a-j": (0.76, 0.75),
    # parts A-K: 59/94 and 40/68 when part K landed; 65/94 and 41/68 in session 4; 65/94 and 40/68 in session 5 (the
    # top-3 floor went down by that one excerpt, what the landing reached); 64/94 and 41/68 in session 6 (the category
    # floor down by one excerpt); 69/94 and 45/68 in session 7 (floors raised); 70/94 and 46/68 in session 8 (floors
    # raised); 70/94 and 47/68 after session 10's round-10 gate; 71/94 and 46/68 at the end of session 10 (the review
    # corrections, as for A-J); 70/94 and 47/68 in session 11 (the review corrections, as for A-J)
    # 71/94 and 48/68 at the end of session 15 (top-3 floor raised); 71/94 and 49/68 at the end of session 19 (top-3
    # floor raised)
    "a-k": (0.75, 0.72),
    # parts A-L: 62/99 and 42/72 when part L landed (its 5 eval excerpts: 3/5, 2/4); 68/99 and 43/72 in session 4; 69/99
    # and 42/72 in session 5 (top-3 floor down by one excerpt, as for A-K); 68/99 and 43/72 in session 6 (category floor
    # down by one excerpt); 73/99 and 48/72 in session 7 (floors raised); 74/99 and 50/72 in session 8 (floors raised);
    # 74/99 and 51/72 after session 10's round-10 gate; 75/99 and 50/72 at the end of session 10 (the review
    # corrections, as for A-J); 74/99 and 51/72 in session 11 (the review corrections, as for A-J)
    # 75/99 and 52/72 at the end of session 15 (top-3 floor raised); 75/99 and 53/72 at the end of session 19 (top-3
    # floor raised)
    "a-l": (0.75, 0.73),
    # parts A-M: part M (session 5) is 26 excerpts of which 22 come from threads of general Python / PyTorch
    # projects (failures an Ascend user meets too, but not Ascend's own), so A-L stays the population to
    # compare; 81/115 and 56/87 when part M landed (its 16 eval excerpts: 13/16, 13/15); 82/115 and 55/87 at the
    # end of session 5; 81/115 and 56/87 at the end of session 6 (category floor down by one excerpt); 87/115 and
    # 62/87 at the end of session 7 (floors raised); 88/115 and 64/87 at the end of session 8 (floors raised);
    # 88/115 and 65/87 after session 10's round-10 gate; 89/115 and 64/87 at the end of session 10 (the review
    # corrections, as for A-J); 88/115 and 65/87 in session 11 (the review corrections, as for A-J); 90/115 and
    # 65/87 at the end of session 14 (106 mined lines, 8 entries; category floor raised); 90/115 and 66/87 at the end
    # of session 15 (top-3 floor raised); 90/115 and 67/87 at the end of session 19 (top-3 floor raised)
    "a-m": (0.78, 0.77),
    # parts A-N: part N (session 10) is 20 excerpts of which 15 are not Ascend threads (the issues corpus holds few
    # Ascend threads with their ending left unused); 94/122 and 70/94 when part N landed (its 7 eval excerpts: 6/7,
    # 6/7, the same with the kb and code of the session's start); 94/121 and 71/93 at the end of session 10 (n-310
    # left the eval half by the corpus rule when a kb entry came to cite its thread); 95/121 and 70/93 after the
    # review corrections (as for A-J); 94/121 and 71/93 after session 11's review corrections (as for A-J); 96/121
    # and 71/93 at the end of session 14 (category floor raised); 96/121 and 72/93 at the end of session 15 (43 mined
    # lines, one entry; top-3 floor raised); 96/121 and 72/93 at the end of session 16 (54 mined lines, one entry, about
    # 20 pieces; floors unchanged); 96/121 and 72/93 at the end of session 17 (94 mined lines, six entries, about 50
    # pieces; floors unchanged; dev 120/132 and 91/100); 96/121 and 73/93 at the end of session 19 (106 mined lines in
    # twenty families, one entry, two unwrapping rules; top-3 floor raised; dev 120/132 and 92/100)
    "all": (0.79, 0.78),
}
# letters of a closed population
POPULATIONS = {"a-j": "abcdefghij", "a-k": "abcdefghijk", "a-l": "abcdefghijkl", "a-m": "abcdefghijklm"}


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _thread_key(repo: str, num: str) -> tuple[str, str]:
    """(repo name without owner, lower-case letters and digits only, number): LlamaFactory == LLaMA-Factory."""
    return _squash(repo.split("/")[-1]), num


def cited_threads() -> set[tuple[str, str]]:
    """Threads a kb entry cites under `sources:`: an excerpt from one of them is not independent of the kb."""
    out = set()
    for e in load_kb().entries:
        for s in e.sources:
            for repo, num in re.findall(r"([A-Za-z][\w.-]*)\s*#\s*(\d+)", s):
                out.add(_thread_key(repo, num))
            for repo, num in re.findall(r"([A-Za-z][\w.-]*)/(?:issues|pull|pulls)/(\d+)", s):
                out.add(_thread_key(repo, num))
    return out


def cited_text() -> list[str]:
    """Every `sources:` line of the kb, squashed (lower-case letters and digits only)."""
    return [_squash(s) for e in load_kb().entries for s in e.sources]


def independent(thread: str, cited: set[tuple[str, str]], sources: list[str]) -> bool:
    """An issue or PR (`owner/repo#N`) no kb entry cites; a file (`owner/repo:path`) or a page (`host/path`) no
    `sources:` line names, however it is spelled (a blob URL, `owner/repo path`, `owner/repo@commit path`)."""
    m = re.match(r"^(.+?)#(\d+)$", thread)
    if m:
        return _thread_key(m.group(1), m.group(2)) not in cited
    repo, sep, path = thread.partition(":")
    if sep and "/" in repo:
        name, where = _squash(repo.split("/")[-1]), _squash(path)
        return not any(name in s and where in s for s in sources)
    return not any(_squash(thread) in s for s in sources)


def split_of(thread: str) -> str:
    return "dev" if int(hashlib.sha256(thread.encode()).hexdigest(), 16) % 2 == 0 else "eval"


def load(path: Path) -> dict:
    d = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(d, dict), path.name
    return d


@pytest.fixture(scope="module")
def outcomes() -> dict[str, list[tuple[str, bool, bool | None]]]:
    """split -> [(file, category right, entry in top 3 or None when the label has no entry)]."""
    out: dict[str, list] = {"dev": [], "eval": [], "eval-cited": [], "eval-from-text": [],
                            **{f"eval-{pop}": [] for pop in POPULATIONS}}
    cited = cited_threads()
    sources = cited_text()
    with tempfile.TemporaryDirectory() as tmp:
        for path in FILES:
            d = load(path)
            log = Path(tmp) / (path.stem + ".log")
            log.write_text(d["text"], encoding="utf-8")
            r = diagnose_report([str(log)])
            top_cat = r.matches[0].category if r.matches else None
            entry = d.get("entry")
            in_top3 = None if not entry else entry in [m.id for m in r.matches[:3]]
            half = split_of(str(d["thread"]))
            if half == "eval" and not independent(str(d["thread"]), cited, sources):
                half = "eval-cited"  # a kb entry cites the thread: not counted in the eval figures
            out[half].append((path.name, top_cat == d["category"], in_top3))
            for pop, letters in POPULATIONS.items():
                if half == "eval" and path.name[0] in letters:
                    out[f"eval-{pop}"].append((path.name, top_cat == d["category"], in_top3))
            if half == "eval" and str(d.get("from_text", "")) == "yes":
                out["eval-from-text"].append((path.name, top_cat == d["category"], in_top3))
    return out


def figures(rows: list) -> tuple[int, int, int, int]:
    cat = sum(1 for _, ok, _ in rows if ok)
    labelled = [t for _, _, t in rows if t is not None]
    return cat, len(rows), sum(labelled), len(labelled)


def test_corpus_is_well_formed():
    assert len(FILES) >= 80
    kb = load_kb()
    threads: dict[str, int] = {}
    for path in FILES:
        d = load(path)
        for key in ("source", "thread", "category", "cause", "text"):
            assert d.get(key), f"{path.name}: missing {key}"
        assert d.get("from_text") in (None, "yes", "partly", "no"), f"{path.name}: from_text {d.get('from_text')!r}"
        assert d["category"] in CATEGORIES, path.name
        if d.get("entry"):
            e = kb.get(d["entry"])
            assert e is not None, f"{path.name}: no kb entry {d['entry']}"
            assert e.category == d["category"], f"{path.name}: {d['entry']} is in {e.category}"
        threads[d["thread"]] = threads.get(d["thread"], 0) + 1
    assert max(threads.values()) <= 3  # at most 3 excerpts per thread
    assert {split_of(t) for t in threads} == {"dev", "eval"}


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of a proportion k/n: how far a figure on n excerpts can be trusted."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    d = 1 + z * z / n
    mid, half = (p + z * z / (2 * n)) / d, z * ((p * (1 - p) + z * z / (4 * n)) / n) ** 0.5 / d
    return max(0.0, mid - half), min(1.0, mid + half)


def test_wilson_interval():
    assert wilson(0, 0) == (0.0, 1.0)
    lo, hi = wilson(54, 81)
    assert round(lo, 3) == 0.559 and round(hi, 3) == 0.760  # worked by hand from the Wilson formula
    assert wilson(10, 10)[1] == 1.0 and wilson(0, 10)[0] == 0.0


def _ci(k: int, n: int) -> str:
    lo, hi = wilson(k, n)
    return f"(95 % CI {lo:.0%}-{hi:.0%})"


def test_figures_on_both_halves(outcomes):
    for half in ("dev", "eval"):
        cat, n, top3, nl = figures(outcomes[half])
        print(f"\nfield corpus {half}: top category right {cat}/{n} = {cat / max(n, 1):.0%} {_ci(cat, n)}; "
              f"expected entry in top 3 {top3}/{nl} = {top3 / max(nl, 1):.0%} {_ci(top3, nl)}")
    cat, n, top3, nl = figures(outcomes["eval-from-text"])
    print(f"field corpus eval, only excerpts whose category an expert reads from the text alone (from_text: yes): "
          f"top category right {cat}/{n} = {cat / max(n, 1):.0%} {_ci(cat, n)}; expected entry in top 3 {top3}/{nl} = "
          f"{top3 / max(nl, 1):.0%} {_ci(top3, nl)}")
    print(f"eval excerpts left out because a kb entry cites their thread: "
          f"{sorted(name for name, _, _ in outcomes['eval-cited'])}")
    for pop in POPULATIONS:
        cat, n, top3, nl = figures(outcomes[f"eval-{pop}"])
        print(f"field corpus eval, parts {pop.upper()} only (the population of an earlier floor): top category right "
              f"{cat}/{n} = {cat / max(n, 1):.0%}; expected entry in top 3 {top3}/{nl} = {top3 / max(nl, 1):.0%}")
    for population, key in (*((pop, f"eval-{pop}") for pop in POPULATIONS), ("all", "eval")):
        cat, n, top3, nl = figures(outcomes[key])
        assert n and nl
        assert cat / n >= EVAL_FLOORS[population][0], f"eval ({population}) category {cat}/{n}"
        assert top3 / nl >= EVAL_FLOORS[population][1], f"eval ({population}) top-3 entry {top3}/{nl}"


def test_no_excerpt_is_answered_with_no_known_pitfall_when_it_has_error_lines():
    """'No known pitfall' only when no error line exists: otherwise codes or closest entries."""
    with tempfile.TemporaryDirectory() as tmp:
        for path in FILES:
            d = load(path)
            log = Path(tmp) / "x.log"
            log.write_text(d["text"], encoding="utf-8")
            r = diagnose_report([str(log)])
            if r.stats["error_lines"]:
                assert r.matches or r.codes or r.unknown_codes, path.name
                assert r.exit_code == 1, path.name


def test_a_cited_file_or_page_thread_is_not_independent():
    sources = [_squash(x) for x in ["wangshuai09/Notebook QA/Error.md (a note)",
                                    "https://discuss.mindspore.cn/t/topic/1156 (forum case)"]]
    assert not independent("wangshuai09/Notebook:QA/Error.md", set(), sources)
    assert independent("wangshuai09/Notebook:QA/Other.md", set(), sources)
    assert not independent("discuss.mindspore.cn/t/topic/1156", set(), sources)
    assert independent("discuss.mindspore.cn/t/topic/1324", set(), sources)
    assert not independent("hiyouga/LLaMA-Factory#7986", {_thread_key("hiyouga/LlamaFactory", "7986")}, sources)

