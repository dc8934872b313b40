"""`envcheck smoke collective` with real gloo ranks: 2 and 4 ranks with the bandwidth table, a rank
that hangs (named by number within the timeout), ranks that fail to start, and the busbw floor."""
from __future__ import annotations

import os
import time
import uuid

import pytest

from envcheck.smoke.bandwidth import bus_factor


def survivors(mark: str) -> list[int]:
    """PIDs whose environment carries `mark` (read from /proc; psutil is not installed)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                if mark.encode() in fh.read() and int(pid) != os.getpid():
                    found.append(int(pid))
        except OSError:
            continue
    return found


@pytest.fixture
def mark(monkeypatch):
    m = f"coll-{uuid.uuid4().hex}"
    monkeypatch.setenv("ENVCHECK_TEST_MARK", m)
    yield m
    assert survivors(m) == []


def _by_code(doc):
    out: dict[str, list[dict]] = {}
    for f in doc["findings"]:
        out.setdefault(f["code"], []).append(f)
    return out


def test_two_ranks_gloo_with_bandwidth_table(cli, mark):
    r = cli("smoke", "collective", "--device", "cpu", "--nproc", "2", "--sizes", "1K,64K,1M", "--json")
    assert r.rc == 0, r.out
    f = _by_code(r.json())
    assert [x["status"] for x in f["EC401"]] == ["ok"]
    assert f["EC410"][0]["status"] == "ok" and "2 ranks initialised gloo" in f["EC410"][0]["title"]
    (wrong,) = f["EC411"]
    assert wrong["status"] == "ok"
    for op in ("all_reduce", "all_gather", "broadcast", "reduce_scatter", "barrier"):
        assert op in wrong["title"]
    assert "2/2 ranks" in wrong["title"]
    assert f["EC412"][0]["status"] == "ok"
    (bw,) = f["EC413"]
    rows = bw["data"]["rows"]
    assert {(row["op"], row["bytes"]) for row in rows} == {
        (op, n) for op in ("all_reduce", "all_gather", "reduce_scatter", "broadcast") for n in (1024, 65536, 1 << 20)}
    for row in rows:
        assert row["ok"] and row["ranks"] == 2 and row["seconds"] > 0
        assert row["algbw"] == pytest.approx(row["bytes"] / row["seconds"] / 1e9)
        assert row["busbw"] == pytest.approx(row["algbw"] * bus_factor(row["op"], 2))
    assert "busbw(GB/s)" in bw["detail"] and "all_reduce" in bw["detail"]
    assert "EC402" in f and "EC403" not in f  # the collective suite runs no operator tests


def test_plain_text_prints_the_sweep_table(cli, mark):
    r = cli("smoke", "collective", "--device", "cpu", "--nproc", "2", "--sizes", "2K")
    assert r.rc == 0
    lines = r.out.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.split()[:2] == ["op", "size"])
    rows = [ln.split() for ln in lines[head + 1:head + 5]]
    assert [(row[0], row[1], row[-1]) for row in rows] == [
        ("all_reduce", "2K", "ok"), ("all_gather", "2K", "ok"), ("reduce_scatter", "2K", "ok"),
        ("broadcast", "2K", "ok")]


@pytest.mark.slow
def test_four_ranks_gloo_text_table_and_floor_met(cli, mark):
    r = cli("smoke", "collective", "--device", "cpu", "--nproc", "4", "--sizes", "4K,256K", "--min-busbw",
            "0.000001", "-v")
    assert r.rc == 0, r.out
    assert "4 ranks initialised gloo on cpu" in r.out
    assert "correct on every rank (4/4 ranks, gloo)" in r.out
    assert "floor 1e-06 GB/s" in r.out
    table = [line.split() for line in r.out.splitlines() if line.strip().startswith(("all_reduce ", "reduce_scatter "))]
    assert {(t[0], t[1]) for t in table} >= {("all_reduce", "4K"), ("all_reduce", "256K"), ("reduce_scatter", "256K")}
    assert all(t[-1] == "ok" for t in table)


def test_busbw_below_floor_fails(cli, mark):
    r = cli("smoke", "collective", "--device", "cpu", "--nproc", "2", "--sizes", "64K", "--min-busbw", "1000000",
            "--json")
    assert r.rc == 1
    below = [x for x in _by_code(r.json())["EC413"] if x["status"] == "fail"]
    assert {x["title"].split()[0] for x in below} == {"all_reduce", "all_gather", "reduce_scatter", "broadcast"}
    assert all("below the floor 1e+06 GB/s" in x["title"] for x in below)


@pytest.mark.slow
def test_hung_rank_is_named_within_the_timeout(cli, mark, monkeypatch):
    monkeypatch.setenv("ENVCHECK_SMOKE_TEST_HANG_RANK", "1")
    t0 = time.monotonic()
    r = cli("smoke", "collective", "--device", "cpu", "--nproc", "2", "--sizes", "1K", "--timeout", "6", "--json")
    took = time.monotonic() - t0
    assert r.rc == 1
    f = _by_code(r.json())
    hung = [x for x in f["EC412"] if x["status"] == "fail"]
    assert [x["data"]["rank"] for x in hung] == [1]
    assert hung[0]["title"].startswith("rank 1 (cpu, host ") and "no progress for 6 s" in hung[0]["title"]
    assert [x["status"] for x in f["EC410"]] == ["ok"]  # set-up finished; rank 1 hung after it
    assert "rank 0 in 'all_reduce'" in hung[0]["detail"]
    assert took < 6 + 20  # start-up + the stall timeout + teardown, not the 2x process-group timeout


@pytest.mark.slow
def test_hang_at_init_among_three_ranks(cli, mark, monkeypatch):
    monkeypatch.setenv("ENVCHECK_SMOKE_TEST_HANG_RANK", "2")
    monkeypatch.setenv("ENVCHECK_SMOKE_TEST_HANG_AT", "init")
    r = cli("smoke", "collective", "--device", "cpu", "--nproc", "3", "--sizes", "1K", "--timeout", "6", "--json")
    hung = [x for x in _by_code(r.json())["EC412"] if x["status"] == "fail"]
    assert r.rc == 1 and [x["data"]["rank"] for x in hung] == [2]
    (init,) = _by_code(r.json())["EC410"]
    assert init["status"] == "skip" and "rank(s) 0, 1, 2 did not finish" in init["title"]  # 0 and 1 wait for 2


def test_ranks_that_cannot_start_their_device_are_named(cli, mark):
    r = cli("smoke", "collective", "--device", "npu", "--nproc", "2", "--sizes", "1K", "--timeout", "20", "--json")
    assert r.rc == 1
    failed = [x for x in _by_code(r.json())["EC410"] if x["status"] == "fail"]
    assert sorted(x["data"]["rank"] for x in failed) == [0, 1]
    assert all("torch_npu" in x["title"] for x in failed)
    assert failed[0]["title"].startswith("rank 0 (npu:0, host ")


def test_bad_collective_flags(cli):
    assert cli("smoke", "collective", "--nproc", "0").rc == 2
    r = cli("smoke", "collective", "--sizes", "1K,lots")
    assert r.rc == 2 and "not a size" in r.err
    assert cli("smoke", "collective", "--max-size", "1K", "--min-size", "4K").rc == 2
