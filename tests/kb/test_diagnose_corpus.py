"""Real error texts, each labelled with its category: the top kb entry must have that category.

Runs against the real kb (kb/), so it checks the kb content and the ranking together.
"""
from __future__ import annotations

import pytest
from conftest import DATA

from envcheck.kb.entries import load_kb
from envcheck.kb.match import kb_matcher

CORPUS = DATA / "diagnose" / "corpus"
CASES = sorted(CORPUS.glob("*__*.txt"))


def taxonomy() -> set[str]:
    # The package's copy of the TAXONOMY.md ids (test_kb_tooling checks it against the file).
    from envcheck.kb.taxonomy import CATEGORIES

    return set(CATEGORIES)


def test_corpus_covers_every_category():
    labels = {p.name.split("__")[0] for p in CASES}
    assert len(CASES) >= 30
    assert labels == taxonomy()


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_top_entry_has_the_labelled_category(path):
    expected = path.name.split("__")[0]
    result = kb_matcher().scan_text(path.read_text(encoding="utf-8"), source=path.name)
    ranked = result.ranked()
    kb = load_kb()
    got = [(e.entry_id, kb.get(e.entry_id).category) for e in ranked[:3]]
    assert ranked, f"no kb entry matched {path.name}"
    assert got[0][1] == expected, f"{path.name}: top entries {got}"
