"""Bandwidth maths (nccl-tests formulas), size parsing and the per-rank aggregation."""
from __future__ import annotations

import math

import pytest

from envcheck.smoke import bandwidth as bw
from envcheck.smoke.collective import aggregate


@pytest.mark.parametrize("op,world,factor", [
    ("all_reduce", 2, 1.0), ("all_reduce", 8, 1.75), ("all_reduce", 1, 0.0),
    ("all_gather", 4, 0.75), ("reduce_scatter", 8, 0.875), ("all_to_all", 2, 0.5),
    ("broadcast", 8, 1.0), ("reduce", 16, 1.0),
])
def test_bus_factor_matches_nccl_tests(op, world, factor):
    assert bw.bus_factor(op, world) == pytest.approx(factor)


def test_algbw_and_busbw_in_gb_per_second():
    assert bw.algbw(2e9, 1.0) == pytest.approx(2.0)
    assert bw.busbw("all_reduce", 1e9, 0.5, 8) == pytest.approx(2.0 * 1.75)
    assert bw.busbw("all_gather", 64 * bw.MIB, 0.01, 4) == pytest.approx(64 * bw.MIB / 0.01 / 1e9 * 0.75)
    assert math.isinf(bw.algbw(10, 0.0))


def test_unknown_collective_and_bad_world_are_errors():
    with pytest.raises(ValueError, match="no bus-bandwidth factor"):
        bw.bus_factor("all_scatter", 2)
    with pytest.raises(ValueError):
        bw.bus_factor("all_reduce", 0)


@pytest.mark.parametrize("text,size", [("4096", 4096), ("1K", 1024), ("1KiB", 1024), ("64M", 64 << 20),
                                       ("64MB", 64 << 20), ("1g", 1 << 30), ("1.5K", 1536), (" 2k ", 2048)])
def test_parse_size(text, size):
    assert bw.parse_size(text) == size


@pytest.mark.parametrize("text", ["", "abc", "-1K", "0", "1.3", "1T", "K"])
def test_parse_size_rejects(text):
    with pytest.raises(ValueError):
        bw.parse_size(text)


def test_default_sweep_is_1k_to_64m_doubling():
    sizes = bw.size_sweep()
    assert sizes[0] == 1024 and sizes[-1] == 64 << 20 and len(sizes) == 17
    assert all(b == 2 * a for a, b in zip(sizes, sizes[1:]))
    with pytest.raises(ValueError):
        bw.size_sweep(1024, 512)


def test_human_size_and_table():
    assert [bw.human_size(n) for n in (1024, 64 << 20, 1 << 30, 1000)] == ["1K", "64M", "1G", "1000B"]
    rows = [{"op": "all_reduce", "bytes": 1 << 20, "seconds": 0.001, "algbw": 1.048576, "busbw": 1.048576,
             "ok": True, "note": ""},
            {"op": "reduce_scatter", "bytes": 1024, "seconds": 0.002, "algbw": 0.0005, "busbw": 0.00025,
             "ok": False, "note": "emulated"}]
    table = bw.format_table(rows).splitlines()
    assert table[0].split() == ["op", "size", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "check"]
    assert table[1].split() == ["all_reduce", "1M", "1000.0", "1.049", "1.049", "ok"]
    assert table[2].split()[-2:] == ["WRONG", "(emulated)"]
    assert bw.average_busbw(rows, "all_reduce") == pytest.approx(1.048576)
    assert bw.average_busbw(rows, "broadcast") is None


def _rank(rank, world, ok=True, seconds=0.01):
    return {"rank": rank, "world": world,
            "checks": [{"op": "all_reduce", "ok": ok, "error": "" if ok else "wrong result", "note": ""}],
            "sweep": [{"op": "all_reduce", "bytes": 1 << 20, "seconds": seconds, "ok": ok, "note": ""}]}


def test_aggregate_uses_every_rank_and_the_slowest_time():
    agg = aggregate([_rank(0, 4), _rank(1, 4, ok=False, seconds=0.04), _rank(2, 4), _rank(3, 4, seconds=0.02)])
    (chk,) = agg["checks"]
    assert chk["ok"] is False and chk["failed_ranks"] == [1] and chk["errors"] == {"1": "wrong result"}
    (row,) = agg["sweep"]
    assert row["seconds"] == pytest.approx(0.04) and row["ok"] is False and row["ranks"] == 4
    assert row["busbw"] == pytest.approx((1 << 20) / 0.04 / 1e9 * 1.5)


def test_aggregate_all_ok():
    agg = aggregate([_rank(0, 2), _rank(1, 2)])
    assert agg["world"] == 2 and agg["checks"][0]["ok"] and agg["sweep"][0]["ok"]
