"""Class 12 (issue 14): hang attribution does not depend on load. A stalled rank is named only when
others progressed past it, and a rank that keeps computing is slow, not hung; the import probe
honours --timeout for a hang; a --python that hangs at start-up ends within --timeout."""
from __future__ import annotations

import sys
import time

from envcheck.smoke import importability
from envcheck.smoke.launch import RankState, _behind


def _rank(n: int, phases: list[str], busy_t: float) -> RankState:
    st = RankState(n, "cpu")
    st.phases, st.busy_t = list(phases), busy_t
    return st


def test_the_rank_others_progressed_past_is_named():
    now = 100.0
    a = _rank(0, ["start", "import", "init", "initialised", "all_reduce"], busy_t=90)
    b = _rank(1, ["start", "import", "init", "initialised"], busy_t=90)
    assert _behind([a, b], now, 6) == [1]


def test_tied_ranks_a_busy_one_is_not_hung():
    now = 100.0
    idle = _rank(0, ["start", "import", "init"], busy_t=80)
    busy = _rank(1, ["start", "import", "init"], busy_t=99.5)
    assert _behind([idle, busy], now, 6) == [0]
    assert _behind([_rank(0, ["start"], 99.8), _rank(1, ["start"], 99.9)], now, 6) == [0, 1]  # no evidence


def test_import_probe_gives_up_on_a_hanging_interpreter_within_the_timeout(tmp_path):
    py = tmp_path / "py_hang"
    py.write_text("#!/bin/sh\nexec sleep 100000\n")
    py.chmod(0o755)
    t0 = time.monotonic()
    res = importability.probe(str(py), timeout=120, idle_timeout=2)
    assert time.monotonic() - t0 < 30  # not the 60-120 s hard limit
    assert res.plain.timed_out and not res.torch_ok


def test_import_probe_lets_a_busy_import_finish(tmp_path):
    # an interpreter whose start-up computes for longer than the idle timeout (a loaded machine)
    py = tmp_path / "py_busy"
    py.write_text(f"#!/bin/sh\n{sys.executable} -c 'import time\nt=time.process_time()\n"
                  f"while time.process_time()-t<3: pass' && exec {sys.executable} \"$@\"\n")
    py.chmod(0o755)
    res = importability.probe(str(py), timeout=120, idle_timeout=1.5)
    assert not res.plain.timed_out and "installed" in res.plain.info


def test_a_python_that_hangs_at_startup_is_a_finding_not_exit_2(tmp_path, cli):
    """Issue 14 (12): the interpreter exists but never answers: EC001 says so (exit 1), within the timeout."""
    import time as _time

    hang = tmp_path / "python"
    hang.write_text("#!/bin/sh\nexec sleep 100000\n")
    hang.chmod(0o755)
    t0 = _time.monotonic()
    r = cli("--no-smoke", "--python", str(hang), "--timeout", "2", "--json")
    assert _time.monotonic() - t0 < 60
    assert r.rc == 1, r.err
    (ec001,) = [f for f in r.json()["findings"] if f["code"] == "EC001"]
    assert ec001["status"] == "error" and "hung at start-up" in ec001["title"] + str(ec001["evidence"])
