"""Aggregation: mean, standard deviation and the Student-t 95 % interval per grid point; tables
as CSV and Parquet."""

from __future__ import annotations

import pandas as pd
import pytest

from cclab.study import aggregate, write_table


def test_aggregate_gives_mean_std_and_ci():
    runs = pd.DataFrame({"g": ["a"] * 4 + ["b"] * 2, "x": [1.0, 2.0, 3.0, 4.0, 10.0, 10.0], "ok": True})
    agg = aggregate(runs, ["g"], ["x"]).set_index("g")
    assert agg.loc["a", "x_mean"] == 2.5 and agg.loc["a", "n"] == 4
    assert agg.loc["a", "x_std"] == pytest.approx(1.29099, rel=1e-4)
    # t(0.975, 3) = 3.182: half-width 3.182 * 1.291 / 2
    assert agg.loc["a", "x_ci95_high"] - 2.5 == pytest.approx(3.1824 * 1.29099 / 2, rel=1e-3)
    assert agg.loc["b", "x_ci95_low"] == agg.loc["b", "x_ci95_high"] == 10.0


def test_failed_runs_are_left_out_and_counted():
    runs = pd.DataFrame({"g": ["a", "a", "a"], "x": [1.0, 3.0, None], "ok": [True, True, False]})
    agg = aggregate(runs, ["g"], ["x"]).set_index("g")
    assert agg.loc["a", "n"] == 2 and agg.loc["a", "n_failed"] == 1 and agg.loc["a", "x_mean"] == 2.0
    assert agg["n_failed"].dtype.kind == "i"  # a count, not 1.0


def test_tables_are_written_as_csv_and_parquet(tmp_path):
    df = pd.DataFrame({"loss": [0.0, 1e-4], "goodput_mbps_mean": [60.5, 20.25]})
    csv, pq = write_table(df, tmp_path / "t" / "experiment_a")
    pd.testing.assert_frame_equal(pd.read_csv(csv), df)
    pd.testing.assert_frame_equal(pd.read_parquet(pq), df)
