"""The matching code on text no kb entry was written from (benchmarks/unseen_lines.py): each session's mined lines,
diagnosed with today's code against the kb of that session's start (taken from git history). Guards code changes
(envcheck/kb/, the error-code dictionary, the message catalogue); the kb's own growth cannot move these figures.
`pytest -s` prints them."""
from __future__ import annotations

import functools
import importlib.util
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# population (kb at START, lines mined up to END): (lines, category floor, entry-in-top-3 floor), as reached when set
FLOORS = {
    "8d74450..1498957": (176, 0.58, 0.65),  # session 5's lines: 103/176, 81/123 at the end of session 7
    "1498957..3b189e9": (166, 0.66, 0.56),  # session 6's: 110/166, 74/131
    "3b189e9..eb75049": (255, 0.63, 0.66),  # session 7's: 161/255, 121/183
    "d252493..c6c873e": (166, 0.48, 0.58),  # session 8's: 80/166, 56/95 (78/166, 52/95 with session 8's start code)
    "3983f98..06595c8": (124, 0.61, 0.68),  # session 9's: 76/124, 57/83 (76/124, 55/83 with session 9's start code)
    "7bb5464..caf7d63": (40, 0.47, 0.60),  # session 10's: 19/40, 14/23
    "de637f6..8cf2d3a": (75, 0.65, 0.72),  # session 13's: 49/75, 31/43 (measured in session 14, same code)
    "65be408..0ceaa59": (106, 0.61, 0.66),  # session 14's: 65/106, 42/63
    "d559784..6ba7fac": (43, 0.67, 0.80),  # session 15's: 29/43, 21/26
    "3c2f530..b5e4ead": (54, 0.61, 0.68),  # session 16's: 33/54, 31/45
    "890b33b..0c75f1b": (94, 0.48, 0.65),  # session 17's: 46/94, 38/58
    "55def4b..0e56781": (106, 0.68, 0.67),  # session 19's: 73/106, 68/101 (session 18 landed none)
}


@functools.cache
def _bench():
    spec = importlib.util.spec_from_file_location("unseen_lines", REPO / "benchmarks" / "unseen_lines.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _has_history() -> bool:
    try:
        for c in {c for spec in FLOORS for c in spec.split("..")}:
            _bench().git("cat-file", "-e", f"{c}^{{commit}}")
    except (OSError, subprocess.CalledProcessError):
        return False
    return True


def test_the_benchmark_measures_exactly_the_populations_with_a_floor():
    # a default that drifts from these (an open `..HEAD` range) would take a later session's lines into a closed one
    assert set(_bench().DEFAULT_COMMITS) == set(FLOORS)


@pytest.mark.skipif(not _has_history(), reason="needs the repository's git history (a shallow or exported tree)")
@pytest.mark.parametrize("spec", sorted(FLOORS))
def test_unseen_lines_keep_their_floor(spec, tmp_path):
    lines, cat_floor, top3_floor = FLOORS[spec]
    fams, n, cat, known, top3 = _bench().measure(spec, tmp_path)
    print(f"\nunseen lines {spec}: {fams} families, category {cat}/{n}; entry in top 3 {top3}/{known}")
    assert n == lines, f"{spec}: the population changed ({n} lines)"
    assert cat / n >= cat_floor, f"{spec}: category {cat}/{n}"
    assert top3 / known >= top3_floor, f"{spec}: entry in top 3 {top3}/{known}"
