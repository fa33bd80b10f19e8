"""Sweeps (caching, failure isolation, determinism, Ray), aggregation, and the S0 study end to
end with its report opened in headless Chromium."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pandas as pd
import pytest

from cclab.study import aggregate, grid, run_sweep
from cclab.study.sweep import derive_seed

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


@needs_core
def test_a_failed_run_is_reported_and_the_rest_finish(tmp_path):
    specs = grid(SMALL, {"flows[0].cc": ["cubic", "no-such-cc", "reno"]}, reps=1)
    res = run_sweep(specs, tmp_path, jobs=2)
    assert res.runs["ok"].tolist() == [True, False, True]
    assert len(res.failures) == 1 and "no-such-cc" in res.failures["error"].iloc[0]
    agg = aggregate(res.runs, ["flows[0].cc"], ["goodput_bps"])
    assert set(agg["flows[0].cc"]) == {"cubic", "reno"}


@needs_core
def test_sweeps_are_deterministic():
    specs = grid(SMALL, {"bottleneck.loss": [2e-2]}, reps=3)
    cols = ["goodput_bps", "retrans_pkts"]
    a = [tuple(r) for r in run_sweep(specs, None, jobs=1).runs[cols].to_numpy()]
    b = [tuple(r) for r in run_sweep(specs, None, jobs=2).runs[cols].to_numpy()]
    assert a == b and len(set(a)) == 3  # same seeds, same results; distinct seeds, distinct runs


def test_aggregate_gives_mean_std_and_ci():
    runs = pd.DataFrame({"g": ["a"] * 4 + ["b"] * 2, "x": [1.0, 2.0, 3.0, 4.0, 10.0, 10.0], "ok": True})
    agg = aggregate(runs, ["g"], ["x"]).set_index("g")
    assert agg.loc["a", "x_mean"] == 2.5 and agg.loc["a", "n"] == 4
    assert agg.loc["a", "x_std"] == pytest.approx(1.29099, rel=1e-4)
    # t(0.975, 3) = 3.182: half-width 3.182 * 1.291 / 2
    assert agg.loc["a", "x_ci95_high"] - 2.5 == pytest.approx(3.1824 * 1.29099 / 2, rel=1e-3)
    assert agg.loc["b", "x_ci95_low"] == agg.loc["b", "x_ci95_high"] == 10.0


@needs_core
def test_ray_executor_runs_the_same_sweep(tmp_path):
    ray = pytest.importorskip("ray")
    specs = grid(SMALL, {"bottleneck.loss": [0.0, 1e-3]}, reps=1)
    local = run_sweep(specs, None, jobs=1).runs
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        remote = run_sweep(specs, tmp_path, executor="ray").runs
    finally:
        ray.shutdown()
    assert remote["goodput_bps"].tolist() == local["goodput_bps"].tolist()


@needs_core
def test_study_s0_quick_writes_every_figure_table_and_a_report_chromium_opens(tmp_path):
    out = tmp_path / "s0"
    r = subprocess.run([sys.executable, "-m", "cclab", "study", "s0", "--quick", "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    figs = out / "figures"
    for name in ("fig4_throughput_25ms", "fig5_throughput_100ms", "fig6_throughput_550ms", "fig8_cwnd_550ms",
                 "fig10_fit_cubic_550ms", "fig10_fit_cubic-ios_550ms"):
        assert (figs / f"{name}.png").stat().st_size > 10_000, name
    for name in ("experiment_a", "experiment_b", "method_c", "compare_with_paper"):
        assert (out / "tables" / f"{name}.csv").is_file() and (out / "tables" / f"{name}.parquet").is_file()
    c = pd.read_csv(out / "tables" / "method_c.csv")
    linux = c[c["stack"] == "cubic"]
    assert len(linux) >= 3 and linux["c"].between(0.35, 0.42).all()
    report = out / "report.html"
    text = report.read_text()
    assert text.count("data:image/png;base64,") >= 6 and "Comparison with the paper" in text
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed (make setup installs it)")
    shot = tmp_path / "report.png"
    run = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1200,2400",
         "--enable-logging=stderr", "--v=0", f"--screenshot={shot}", report.as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert shot.is_file() and shot.stat().st_size > 50_000, run.stderr[-2000:]
    assert "Uncaught" not in run.stderr and "CONSOLE(" not in run.stderr, run.stderr[-2000:]
    from PIL import Image

    img = Image.open(shot).convert("L")
    lo, hi = img.getextrema()
    assert hi - lo > 100  # not a blank page
