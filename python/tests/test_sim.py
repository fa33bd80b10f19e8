import numpy as np
import pandas as pd
import pytest

import cclab
from cclab.result import CA_STATES

from .conftest import needs_core

pytestmark = needs_core

FLOW_COLUMNS = [
    "run", "flow", "subflow", "t_s", "cwnd_pkts", "ssthresh_pkts", "inflight_pkts", "srtt_ms",
    "rttvar_ms", "min_rtt_ms", "rto_ms", "delivered_bytes", "retrans_pkts", "ca_state", "pacing_rate_bps", "below_tcp_bytes",
    "sndbuf_bytes", "wmem_queued_bytes",
]


def test_simulate_returns_dataframes(small):
    r = cclab.simulate(small)
    assert list(r.flows.columns) == FLOW_COLUMNS
    assert list(r.links.columns) == ["run", "link", "t_s", "queue_pkts", "queue_bytes", "drops", "tx_bytes", "ce_marks"]
    assert list(r.events.columns) == ["run", "t_s", "flow", "kind", "detail"]
    assert len(r.flows) > 100 and r.flows["t_s"].is_monotonic_increasing
    assert set(r.flows["ca_state"].unique()) <= set(CA_STATES)
    assert (r.events["kind"] == "drop").any() and (r.events["kind"] == "fast_retransmit").any()
    st = r.summary["flows"][0]
    assert 0 < st["goodput_bps"] < 64e6 and st["retrans_pkts"] > 0


def test_same_seed_same_trace_other_seed_differs(small):
    a = cclab.simulate(small, seed=3)
    b = cclab.simulate(small, seed=3)
    c = cclab.simulate(small, seed=4)
    pd.testing.assert_frame_equal(a.flows, b.flows)
    assert not a.flows["cwnd_pkts"].equals(c.flows["cwnd_pkts"])


def test_write_outputs(tmp_path, small):
    r = cclab.simulate(small)
    paths = r.write(tmp_path)
    flows = pd.read_parquet(paths["traces"])
    assert list(flows.columns) == FLOW_COLUMNS
    assert len(flows) == len(r.flows)
    for k in ("links", "events", "summary", "cwnd"):
        assert paths[k].exists() and paths[k].stat().st_size > 0
    import json

    s = json.loads(paths["summary"].read_text())
    assert {"cclab_version", "backend", "seed", "scenario", "flows", "links", "run"} <= set(s)
    assert {"goodput_bps", "retrans_pkts", "rto_count", "delivered_bytes"} <= set(s["flows"][0])
    assert s["scenario"]["flows"][0]["cc"] == "cubic"


def test_progress_callback_and_interrupt(small):
    seen = []
    cclab.simulate(small, progress=seen.append)
    assert seen and seen[-1] == 1.0

    def boom(_frac):
        raise KeyboardInterrupt

    d = dict(small, duration_s=60)
    with pytest.raises(KeyboardInterrupt):
        cclab.simulate(d, progress=boom)


def test_fixed_size_flow_completes(small):
    d = dict(small)
    d["flows"] = [{"cc": "reno", "size_bytes": "2MB"}]
    r = cclab.simulate(d)
    st = r.summary["flows"][0]
    assert st["delivered_bytes"] == 2_000_000 and st["completion_s"] is not None
    assert np.isclose(st["goodput_bps"], 2_000_000 * 8 / st["completion_s"])
