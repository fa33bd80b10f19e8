"""The sweep's row file (cclab.study.rows): the table built from disk equals pd.DataFrame of the
rows in order, whatever order they arrived in and however the batches split them; the file is
removed when the sweep ends, and one left by a killed driver by the next sweep."""

from __future__ import annotations

import fcntl
import random

import numpy as np
import pandas as pd
import pytest

from cclab.study.rows import PREFIX, RowLog, remove_stale


def _rows(n: int, rng: random.Random) -> list[dict]:
    """Rows as a sweep makes them: ok runs with metrics, failed ones with an error and no
    metrics, metrics sometimes None or absent, an int column with gaps, labels of mixed kinds."""
    out = []
    for i in range(n):
        row = {"loss": rng.choice([0.0, 1e-4, 1e-3]), "cc": rng.choice(["cubic", "reno"]), "rep": i % 7,
               "seed": rng.getrandbits(56)}
        if rng.random() < 0.2:
            row |= {"ok": False, "error": f"ConfigError: bad {i}", "cached": False}
        else:
            row |= {"key": f"{i:024x}", "ok": True, "error": None, "goodput_bps": rng.random() * 1e7,
                    "rto_count": rng.randrange(5), "has_connections": rng.random() < 0.5, "cached": rng.random() < 0.3}
            if rng.random() < 0.1:
                row["mean_srtt_ms"] = None
            elif rng.random() < 0.5:
                row["mean_srtt_ms"] = rng.random() * 100
            if i > n // 2:
                row["flow1_goodput_bps"] = rng.random()  # a column first seen late
        out.append(row)
    return out


@pytest.mark.parametrize("batch_rows", [1, 3, 64, 10_000])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_table_from_disk_equals_the_rows_in_memory(tmp_path, batch_rows, seed):
    rng = random.Random(seed)
    rows = _rows(300, rng)
    arrival = list(range(len(rows)))
    rng.shuffle(arrival)
    with RowLog(tmp_path, batch_rows=batch_rows) as log:
        for i in arrival:
            log.add(i, rows[i])
        got = log.table(len(rows))
    want = pd.DataFrame(rows)
    assert list(got.columns) == list(want.columns)
    pd.testing.assert_frame_equal(got, want)


def test_a_batch_where_a_metric_is_all_none_still_gives_a_float_column(tmp_path):
    rows = [{"x": None}, {"x": None}, {"x": 1.5}, {"x": 2.5}]
    with RowLog(tmp_path, batch_rows=2) as log:
        for i, r in enumerate(rows):
            log.add(i, r)
        got = log.table(4)
    assert got["x"].dtype == np.float64
    pd.testing.assert_frame_equal(got, pd.DataFrame(rows))


def test_a_missing_or_doubled_row_is_an_error(tmp_path):
    with RowLog(tmp_path) as log:
        log.add(0, {"a": 1})
        log.add(0, {"a": 2})
        with pytest.raises(RuntimeError, match="2 rows for 3 runs"):
            log.table(3)


def test_no_rows_no_file_left(tmp_path):
    with RowLog(tmp_path) as log:
        assert log.path is not None and log.path.exists()
        assert log.table(0).empty
    assert not list(tmp_path.glob(f"{PREFIX}*"))
    with RowLog(None) as log:  # no cache directory: an anonymous file
        log.add(0, {"a": 1})
        assert log.table(1)["a"].tolist() == [1]


def test_a_killed_drivers_file_is_removed_by_the_next_sweep_and_a_live_ones_kept(tmp_path):
    stale = tmp_path / f"{PREFIX}999999-dead.pickle"
    stale.write_bytes(b"x")
    live = tmp_path / f"{PREFIX}1-live.pickle"
    with open(live, "wb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert remove_stale(tmp_path) == [stale]
        assert live.exists()
    with RowLog(tmp_path):
        assert not stale.exists()


def test_a_cache_that_cannot_be_written_falls_back_to_an_anonymous_file(tmp_path):
    (tmp_path / "file").write_text("")
    with RowLog(tmp_path / "file" / "cache") as log:  # no directory can be made there, even by root
        assert log.path is None
        log.add(0, {"a": 1})
        assert log.table(1)["a"].tolist() == [1]
