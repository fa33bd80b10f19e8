"""Sweeps: distinct seeds, caching (a rerun computes nothing, a changed field recomputes only
that), failure isolation (a run the core rejects, a worker that dies), determinism."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from cclab.study import aggregate, grid, run_one, run_sweep
from cclab.study.grid import derive_seed

from .conftest import needs_core

SMALL = {
    "name": "sweep-small",
    "duration_s": 3,
    "bottleneck": {"rate_bps": "10Mbps", "delay_ms": 10, "queue_pkts": 100},
    "flows": [{"cc": "cubic"}],
}


def test_seeds_are_distinct_and_stable():
    seeds = [derive_seed(1, r) for r in range(100)]
    assert len(set(seeds)) == 100
    assert seeds == [derive_seed(1, r) for r in range(100)]
    assert derive_seed(2, 0) != derive_seed(1, 0)


@needs_core
def test_cache_recomputes_only_what_changed(tmp_path):
    specs = grid(SMALL, {"bottleneck.loss": [0.0, 1e-3]}, reps=2)
    first = run_sweep(specs, tmp_path, jobs=2)
    assert len(first.runs) == 4 and not first.runs["cached"].any()
    again = run_sweep(specs, tmp_path, jobs=2)
    assert again.runs["cached"].all()
    pd.testing.assert_series_equal(first.runs["goodput_bps"], again.runs["goodput_bps"])
    changed = grid(SMALL, {"bottleneck.loss": [0.0, 3e-3]}, reps=2)
    third = run_sweep(changed, tmp_path, jobs=2)
    assert third.runs["cached"].tolist() == [True, True, False, False]
    assert (tmp_path / first.runs["key"].iloc[0] / "result.json").is_file()


@needs_core
def test_a_failed_run_is_reported_and_the_rest_finish(tmp_path):
    specs = grid(SMALL, {"flows[0].cc": ["cubic", "no-such-cc", "reno"]}, reps=1)
    res = run_sweep(specs, tmp_path, jobs=2)
    assert res.runs["ok"].tolist() == [True, False, True]
    assert len(res.failures) == 1 and "no-such-cc" in res.failures["error"].iloc[0]
    agg = aggregate(res.runs, ["flows[0].cc"], ["goodput_bps"])
    assert set(agg["flows[0].cc"]) == {"cubic", "reno"}
    assert (agg.set_index("flows[0].cc")["n"] == 1).all()


def _dies_on_reno(spec, cache_dir):
    """A runner whose worker process dies (as on a crash in native code) for the reno run."""
    if dict(spec.labels)["flows[0].cc"] == "reno":
        os._exit(3)
    return run_one(spec, cache_dir)


@needs_core
def test_a_dead_worker_loses_only_its_own_run(tmp_path):
    specs = grid(SMALL, {"flows[0].cc": ["cubic", "reno", "bbr", "vegas"]}, reps=1)
    res = run_sweep(specs, tmp_path, jobs=2, runner=_dies_on_reno)
    assert res.runs["ok"].tolist() == [True, False, True, True]
    assert "worker process died" in res.failures["error"].iloc[0]
    assert res.runs["goodput_bps"].notna().sum() == 3


@needs_core
def test_sweeps_are_deterministic():
    specs = grid(SMALL, {"bottleneck.loss": [2e-2]}, reps=3)
    cols = ["goodput_bps", "retrans_pkts"]
    a = [tuple(r) for r in run_sweep(specs, None, jobs=1).runs[cols].to_numpy()]
    b = [tuple(r) for r in run_sweep(specs, None, jobs=2).runs[cols].to_numpy()]
    assert a == b and len(set(a)) == 3  # same seeds, same results; distinct seeds, distinct runs





@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/net/tun"), reason="kernel runs need root and TUN")
def test_kernel_backend_sweeps_run_one_at_a_time_and_cache_apart(tmp_path):
    specs = grid(SMALL, {"flows[0].cc": ["cubic", "bbr"]}, backend="kernel")
    sim_keys = [s.key() for s in grid(SMALL, {"flows[0].cc": ["cubic", "bbr"]})]
    first = run_sweep(specs, tmp_path, jobs=4)  # forced to one at a time
    assert first.runs["ok"].all(), first.failures
    assert not set(first.runs["key"]) & set(sim_keys)  # a kernel run is cached apart from the simulator's
    assert (first.runs["goodput_bps"] > 5e6).all()  # a 10 Mbit/s path
    again = run_sweep(specs, tmp_path)
    assert again.runs["cached"].all()
    with pytest.raises(ValueError, match="one at a time"):
        run_sweep(specs, tmp_path, executor="ray")
