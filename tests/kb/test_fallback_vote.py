"""The fallback's category vote on thin evidence (envcheck.kb.diagnose._category_first)."""
from __future__ import annotations

from envcheck.kb.diagnose import VOTE_ENTRIES, _category_first

ENTRIES = [{"id": f"e{i}", "category": cat} for i, cat in enumerate(
    ["checkpoint", "out-of-memory", "out-of-memory", "out-of-memory", "hccl-init"])]


def test_the_category_several_close_entries_share_leads():
    ranked = [(0, 1.0), (1, 0.95), (2, 0.9), (3, 0.8), (4, 0.5)]
    got = _category_first(ranked, ENTRIES)
    assert got[0] == (1, 0.95)  # the best out-of-memory entry (2.65 in all) ahead of the lone checkpoint one (1.0)
    assert sorted(got) == sorted(ranked) and got[1:] == [(0, 1.0), (2, 0.9), (3, 0.8), (4, 0.5)]


def test_a_lone_leader_keeps_its_place_when_its_category_adds_up_most():
    ranked = [(0, 3.0), (1, 1.0), (2, 0.9)]
    assert _category_first(ranked, ENTRIES) == ranked


def test_only_the_first_entries_vote():
    entries = [{"id": "a", "category": "numerics"}] + [{"id": f"b{i}", "category": "performance"}
                                                       for i in range(VOTE_ENTRIES + 5)]
    ranked = [(0, 1.0)] + [(i, 0.01) for i in range(1, VOTE_ENTRIES + 6)]
    assert _category_first(ranked, entries)[0] == (0, 1.0)  # 7 x 0.01 never outweighs 1.0
