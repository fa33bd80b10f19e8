"""The Ray executor runs the same sweep unchanged (a local Ray instance); skipped when Ray is not
installed (pip install 'cclab[ray]')."""

from __future__ import annotations

import pytest

from cclab.study import grid, run_sweep

from .conftest import needs_core

SMALL = {
    "name": "sweep-small",
    "duration_s": 3,
    "bottleneck": {"rate_bps": "10Mbps", "delay_ms": 10, "queue_pkts": 100},
    "flows": [{"cc": "cubic"}],
}


@needs_core
def test_ray_executor_runs_the_same_sweep(tmp_path):
    ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'cclab[ray]'")
    specs = grid(SMALL, {"bottleneck.loss": [0.0, 1e-3]}, reps=1)
    local = run_sweep(specs, None, jobs=1).runs
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        remote = run_sweep(specs, tmp_path, executor="ray").runs
    finally:
        ray.shutdown()
    assert remote["ok"].all() and not remote["cached"].any()
    assert remote["goodput_bps"].tolist() == local["goodput_bps"].tolist()
