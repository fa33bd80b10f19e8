"""The run's tables without pandas (cclab/tables.py): the Parquet files are what
``DataFrame.to_parquet`` would write, the DataFrames what the files read back as, and writing
a run imports neither pandas nor pyplot."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import cclab
from cclab.result import RunResult
from cclab.tables import Column, Table

PYTHON_DIR = str(Path(cclab.__file__).resolve().parent.parent)

UDP_ONLY = {"name": "udp-only", "duration_s": 1, "bottleneck": {"rate_bps": "10Mbps", "delay_ms": 10, "queue_pkts": 50},
            "flows": [{"transport": "udp", "rate_bps": "1Mbps"}]}


@pytest.fixture(scope="module")
def runs() -> dict[str, RunResult]:
    # A lossy run (retransmissions, infinite ssthresh before the first loss, NaN before the
    # first RTT sample), a multipath run (subflows), and one with no TCP rows nor events.
    return {
        "lossy": cclab.simulate("s0-25ms", duration_s=3, **{"bottleneck.loss": 1e-2}),
        "mptcp": cclab.simulate("s2-three-apps", duration_s=2),
        "empty": cclab.simulate(UDP_ONLY),
    }


@pytest.mark.parametrize("name", ["lossy", "mptcp", "empty"])
@pytest.mark.parametrize("table", ["flows", "links", "events"])
def test_parquet_is_what_pandas_writes(runs: dict[str, RunResult], name: str, table: str, tmp_path: Path) -> None:
    r = runs[name]
    r.table(table).write_parquet(tmp_path / "ours.parquet")  # from the numpy columns
    getattr(r, table).to_parquet(tmp_path / "theirs.parquet", index=False)
    ours, theirs = pq.read_table(tmp_path / "ours.parquet"), pq.read_table(tmp_path / "theirs.parquet")
    assert ours.schema.equals(theirs.schema, check_metadata=True), (ours.schema, theirs.schema)
    assert ours.equals(theirs)


def test_files_read_back_as_the_dataframes(tmp_path: Path) -> None:
    r = cclab.simulate("s0-25ms", duration_s=3, **{"bottleneck.loss": 1e-2})
    paths = r.write(tmp_path, figures=False)
    assert not r._frames  # written from the numpy columns: no DataFrame was built
    for key, table in (("traces", "flows"), ("links", "links"), ("events", "events")):
        pd.testing.assert_frame_equal(pd.read_parquet(paths[key]), getattr(r, table))
    ss = r.flows["ssthresh_pkts"]
    assert ss.dtype == "Int64" and ss.isna().any() and ss.notna().any()
    assert r.flows["retrans_pkts"].max() > 0 and r.flows["pacing_rate_bps"].isna().any()
    assert r.events["detail"].dtype == "string"


def test_summary_means_per_flow(runs: dict[str, RunResult]) -> None:
    r = runs["mptcp"]
    g = r.flows.groupby("flow", observed=True)
    for st in r.summary["flows"]:
        rows = r.flows[r.flows["flow"] == st["flow"]]
        assert len(rows), st["flow"]
        assert st["mean_cwnd_pkts"] == pytest.approx(g["cwnd_pkts"].mean()[st["flow"]], rel=1e-12)
        assert st["mean_srtt_ms"] == pytest.approx(np.nanmean(rows["srtt_ms"]), rel=1e-12)
    assert all(st["mean_cwnd_pkts"] is None for st in runs["empty"].summary["flows"])


def test_many_categories_take_wider_codes(tmp_path: Path) -> None:
    names = [f"f{i:03d}" for i in range(300)]
    t = Table({"flow": Column.category(np.array([0, 299, -1, 5]), names), "x": Column(np.arange(4.0))})
    assert t["flow"].codes().dtype == np.int16
    t.write_parquet(tmp_path / "ours.parquet")
    t.to_pandas().to_parquet(tmp_path / "theirs.parquet", index=False)
    ours, theirs = pq.read_table(tmp_path / "ours.parquet"), pq.read_table(tmp_path / "theirs.parquet")
    assert ours.equals(theirs) and ours.schema.equals(theirs.schema, check_metadata=True)
    assert t.to_pandas()["flow"].isna().tolist() == [False, False, True, False]


def test_dataframes_given_or_changed_are_what_is_written(runs: dict[str, RunResult], tmp_path: Path) -> None:
    r = runs["lossy"]
    # As the kernel backend builds it: DataFrames, figures drawn from them.
    given = RunResult(r.scenario, r.seed, r.flows.copy(), r.links.copy(), r.events.copy(), dict(r.summary))
    paths = given.write(tmp_path / "given")
    assert paths["cwnd"].stat().st_size > 0 and paths["queue"].stat().st_size > 0
    pd.testing.assert_frame_equal(pd.read_parquet(paths["traces"]), r.flows)
    # A DataFrame changed after it was built is the one written.
    changed = RunResult(r.scenario, r.seed, r.table("flows"), r.table("links"), r.table("events"), r.summary)
    changed.flows = changed.flows[changed.flows["t_s"] < 1.0].reset_index(drop=True)
    got = pd.read_parquet(changed.write(tmp_path / "changed", figures=False)["traces"])
    assert len(got) == len(changed.flows) < len(r.flows)


def test_writing_a_run_imports_neither_pandas_nor_pyplot(tmp_path: Path) -> None:
    code = (
        "import sys, cclab\n"
        f"r = cclab.simulate('s0-25ms', duration_s=2)\n"
        f"paths = r.write({str(tmp_path)!r})\n"
        "assert {'cwnd', 'queue', 'traces', 'links', 'events', 'summary'} <= set(paths), paths\n"
        "print(sorted(m for m in ('pandas', 'matplotlib.pyplot') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": PYTHON_DIR}, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
    assert (tmp_path / "cwnd.png").stat().st_size > 0
