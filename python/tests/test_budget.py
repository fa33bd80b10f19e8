"""A run's budget (issue 18): ``sim.max_events`` and ``sim.max_wall_s``. A run that reaches one
stops with a ScenarioError naming the field, the budget and the simulated time it reached; a run
within its budget is bit-identical whatever the budget."""

from __future__ import annotations

import re
import subprocess
import sys

import pandas as pd
import pytest

import cclab
from cclab.scenario import DEFAULT_MAX_EVENTS, ScenarioError, load_scenario
from cclab.study import grid, run_sweep

from .conftest import needs_core

pytestmark = needs_core


def test_the_event_budget_stops_a_run_with_the_field_named(small):
    full = cclab.simulate(small)
    n = full.summary["run"]["events_processed"]
    with pytest.raises(ScenarioError) as e:
        cclab.simulate(small, **{"sim.max_events": n // 2})
    [(field, message)] = e.value.problems
    assert field == "sim.max_events"
    m = re.fullmatch(rf"{n // 2} events reached at t = ([\d.]+) s of 5 s; raise sim.max_events or shorten duration_s",
                     message)
    assert m and 0 < float(m[1]) < 5, message
    assert str(e.value) == f"sim.max_events: {message}"


def test_a_run_within_its_budget_is_bit_identical(small):
    full = cclab.simulate(small)
    n = full.summary["run"]["events_processed"]
    exact = cclab.simulate(small, **{"sim.max_events": n, "sim.max_wall_s": 3600})
    assert exact.summary["run"]["events_processed"] == n
    pd.testing.assert_frame_equal(full.flows, exact.flows)
    pd.testing.assert_frame_equal(full.events, exact.events)
    with pytest.raises(ScenarioError, match="sim.max_events"):
        cclab.simulate(small, **{"sim.max_events": n - 1})


def test_the_wall_budget_stops_a_run_with_the_field_named(small):
    with pytest.raises(ScenarioError) as e:
        cclab.simulate(small, **{"duration_s": 100_000, "sim.max_wall_s": 0.05})
    [(field, message)] = e.value.problems
    assert field == "sim.max_wall_s"
    assert re.fullmatch(r"0.05 s of wall-clock time reached at t = [\d.]+ s of 100000 s \(\d+ events\); "
                        r"raise sim.max_wall_s or shorten duration_s", message), message


def test_budgets_are_checked_when_loaded(small):
    assert load_scenario(small).sim.max_events == DEFAULT_MAX_EVENTS
    assert load_scenario(small).sim.max_wall_s is None
    assert load_scenario(small, **{"sim.max_wall_s": "1500ms"}).sim.max_wall_s == 1.5
    for field, bad in [("sim.max_events", 0), ("sim.max_events", -5), ("sim.max_events", 1.5),
                       ("sim.max_wall_s", 0), ("sim.max_wall_s", float("nan")), ("sim.max_wall_s", "inf")]:
        with pytest.raises(ScenarioError) as e:
            load_scenario(small, **{field: bad})
        assert [p for p, _ in e.value.problems] == [field], (field, bad)


def test_the_cli_prints_the_budget_error_and_exits_2(tmp_path):
    r = subprocess.run([sys.executable, "-m", "cclab", "run", "s0-25ms", "--set", "sim.max_events=20000",
                        "-o", str(tmp_path / "out")], capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    err = " ".join(r.stderr.split())
    assert re.search(r"sim\.max_events: 20000 events reached at t = [\d.]+ s of 100 s; raise sim.max_events", err), err
    assert "internal error" not in err and "Traceback" not in err


def test_a_sweep_reports_an_over_budget_run_and_finishes_the_others(tmp_path):
    base = {"name": "budget", "duration_s": 2, "sim": {"max_events": 20_000},
            "bottleneck": {"rate_bps": "10Mbps", "delay_ms": 10, "queue_pkts": 100}, "flows": [{"cc": "cubic"}]}
    specs = grid(base, {"duration_s": [1, 30, 2]}, reps=1)
    res = run_sweep(specs, tmp_path, jobs=2)
    assert res.runs["ok"].tolist() == [True, False, True]
    [error] = res.failures["error"].tolist()
    assert "sim.max_events: 20000 events reached" in error and "of 30 s" in error
    # Not cached: raising the budget runs it.
    again = run_sweep(grid({**base, "sim": {"max_events": 10**6}}, {"duration_s": [30]}, reps=1), tmp_path)
    assert again.runs["ok"].tolist() == [True]
