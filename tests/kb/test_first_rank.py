"""`diagnose` names the rank that failed first and the ranks that only timed out waiting for it.

Fixture (tests/data/diagnose/multirank): 8 ranks on two hosts; rank 5 (node-b) hits an AI Core
exception at 10:02:11, the seven others report HCCL execution timeouts (TaskExecStage Timeout, EI0002,
torch watchdog, ERR02011) about 1800 s later. Once as per-rank logs in host folders, once as one
interleaved log with `[rankN]:` prefixes.
"""
from __future__ import annotations

import json
import shutil

from conftest import DATA

from envcheck.kb.diagnose import DiagnoseResult, diagnose
from envcheck.render import render

MULTI = DATA / "diagnose" / "multirank"
OTHERS = [0, 1, 2, 3, 4, 6, 7]


def test_per_rank_directory_names_the_first_rank_and_host():
    r = diagnose([str(MULTI / "per-rank")])
    ff = r.first_failure
    assert ff is not None
    assert (ff["rank"], ff["host"]) == (5, "node-b")
    assert ff["file"].endswith("node-b/rank_5.log") and ff["line"] == 3
    assert "Aicore kernel execute failed" in ff["text"] and ff["timestamp"].startswith("2025-03-04 10:02:11")
    assert [w["rank"] for w in ff["others_timed_out"]] == OTHERS
    assert {w["host"] for w in ff["others_timed_out"]} == {"node-a", "node-b"}
    assert ff["others_failed"] == []
    # the cause leads; the other ranks' timeouts are its cascade
    assert r.matches[0].id == "aicore-exception" and r.matches[0].confidence == "matched"
    assert "hccl-timeout" in [m.id for m in r.matches[1:]]


def test_interleaved_log_with_rank_prefixes():
    r = diagnose([str(MULTI / "interleaved.log")])
    ff = r.first_failure
    assert ff is not None and ff["rank"] == 5 and ff["host"] is None
    assert ff["line"] == 18 and "Aicore kernel execute failed" in ff["text"]
    assert [w["rank"] for w in ff["others_timed_out"]] == OTHERS
    assert r.matches[0].id == "aicore-exception"


def test_file_order_does_not_decide(tmp_path):
    # the failing rank's file sorts last and carries no host folder; timestamps decide
    for p in sorted((MULTI / "per-rank").rglob("*.log")):
        name = "zz_rank_5.log" if p.name == "rank_5.log" else p.name
        shutil.copy(p, tmp_path / name)
    ff = diagnose([str(tmp_path)]).first_failure
    assert ff is not None and ff["rank"] == 5 and ff["file"].endswith("zz_rank_5.log")


def test_all_ranks_timing_out_names_nobody(tmp_path):
    for p in sorted((MULTI / "per-rank").rglob("*.log")):
        if p.name != "rank_5.log":
            shutil.copy(p, tmp_path / p.name)
    r = diagnose([str(tmp_path)])
    assert r.first_failure is None
    assert r.matches[0].id == "hccl-timeout"


def test_single_rank_has_no_first_failure():
    r = diagnose([str(MULTI / "per-rank" / "node-b" / "rank_5.log")])
    assert r.first_failure is None and r.matches[0].id == "aicore-exception"


def test_every_renderer_shows_it():
    r = diagnose([str(MULTI / "per-rank")])
    text = render(r, "text")
    assert "First failure: rank 5 on node-b at " in text
    assert "7 others only timed out waiting for it: rank 0 on node-a, rank 1 on node-a" in text
    md = render(r, "markdown")
    assert "### First failure" in md and "**rank 5 on node-b**" in md
    junit = render(r, "junit")
    assert 'name="first failure: rank 5"' in junit and "rank 5 failed first" in junit
    d = json.loads(render(r, "json"))
    assert d["first_failure"]["rank"] == 5
    assert DiagnoseResult.from_dict(r.to_dict()).to_dict() == r.to_dict()  # lossless round trip


def test_benign_warning_on_a_waiting_rank_is_not_its_failure():
    r = diagnose([str(MULTI / "per-rank")])
    assert 2 in [w["rank"] for w in r.first_failure["others_timed_out"]]
    (b,) = r.benign
    assert b["file"].endswith("rank_2.log") and b["line"] == 1
    benign = [m for m in r.matches if m.severity == "benign"]
    assert all(r.matches.index(m) > r.matches.index(n) for m in benign for n in r.matches if n.severity != "benign")
