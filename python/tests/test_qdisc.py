"""Queue disciplines on any link (RED, CoDel, FQ-CoDel, PIE; crates/cclab-net/src/qdisc) and
DCTCP over ECN marking, through scenario files and the simulator."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

import cclab
from cclab.result import jain_index
from cclab.scenario import ScenarioError, load_scenario

from .conftest import needs_core

pytestmark = needs_core

#: Goodput per link rate at 1500-byte packets with timestamps (1448 payload bytes of 1500).
PAYLOAD = 1448 / 1500


def one_flow(qdisc: Any, cc: str = "cubic", duration_s: float = 30) -> dict[str, Any]:
    return {"name": f"q-{qdisc}", "duration_s": duration_s,
            "bottleneck": {"rate_bps": "20Mbps", "delay_ms": 20, "queue_pkts": 1000, "qdisc": qdisc},
            "flows": [{"cc": cc}]}


def queue_delay_ms(r: cclab.RunResult, after_s: float = 5.0) -> np.ndarray:
    rows = r.links[(r.links["link"] == "bottleneck.fwd") & (r.links["t_s"] > after_s)]
    return rows["queue_bytes"].to_numpy() * 8 / 20e6 * 1e3


def test_codel_keeps_the_standing_queue_near_its_target():
    """A bulk CUBIC flow over a 1000-packet buffer: drop-tail fills it (about half a second of
    queue); CoDel holds the standing queue (the least delay over each 100 ms interval) at or
    below its 5 ms target, and drops only a few packets doing it."""
    tail = queue_delay_ms(cclab.simulate(one_flow("drop_tail")))
    r = cclab.simulate(one_flow("codel"))
    d = queue_delay_ms(r)
    standing = d[: len(d) // 10 * 10].reshape(-1, 10).min(axis=1)  # 10 samples of 10 ms: one interval
    assert np.median(tail) > 300
    assert np.percentile(standing, 95) <= 5.5, np.percentile(standing, 95)
    assert np.mean(d) < 5.0 and np.percentile(d, 90) < 10, (np.mean(d), np.percentile(d, 90))
    link = r.summary["links"][0]
    assert 0 < link["dropped_aqm_pkts"] < 100 and link["dropped_queue_full_pkts"] == 0
    assert r.summary["flows"][0]["goodput_bps"] > 0.9 * 20e6 * PAYLOAD
    drops = r.events[r.events["kind"] == "drop"]
    assert len(drops) == link["dropped_aqm_pkts"] and drops["detail"].str.contains("reason=aqm").all()


@pytest.mark.parametrize("qdisc", ["red", "pie", "fq_codel"])
def test_every_aqm_keeps_the_queue_short(qdisc):
    r = cclab.simulate(one_flow(qdisc, duration_s=20))
    assert np.median(queue_delay_ms(r)) < 30, qdisc
    assert r.summary["links"][0]["dropped_aqm_pkts"] > 0
    assert r.summary["flows"][0]["goodput_bps"] > 0.85 * 20e6 * PAYLOAD


def test_fq_codel_shares_equally_between_flows_of_different_rtt():
    """Two CUBIC flows, RTT 14 ms and 90 ms: drop-tail gives the short one twice the long
    one's rate; FQ-CoDel's per-flow queues give near-equal shares."""
    def run(qdisc: str) -> list[float]:
        d = {"duration_s": 40, "senders": [{"name": "near", "access": {"delay_ms": 2}},
                                           {"name": "far", "access": {"delay_ms": 40}}],
             "bottleneck": {"rate_bps": "20Mbps", "delay_ms": 5, "queue_pkts": 500, "qdisc": qdisc},
             "flows": [{"sender": "near"}, {"sender": "far"}]}
        return [f["goodput_bps"] for f in cclab.simulate(d).summary["flows"]]

    near, far = run("drop_tail")
    assert near > 1.8 * far
    near, far = run("fq_codel")
    assert far == pytest.approx(near, rel=0.2), (near, far)
    assert jain_index([near, far]) > 0.98


def test_parking_lot_with_fair_queuing_meets_max_min_fairness():
    """Reno with equal RTTs over three bottlenecks, each FQ-CoDel with a 25 ms target (half the
    RTT: deep enough for one Reno flow to keep its link busy): every flow within 10 % of its
    max-min share (long 5, cross 5 / 15 / 25 Mbit/s, as goodput)."""
    q = {"kind": "fq_codel", "target_ms": 25, "interval_ms": 250}
    r = cclab.simulate("parking-lot", **{f"links[{i}].qdisc": q for i in range(3)})
    got = {f["flow"]: f["goodput_bps"] / 1e6 for f in r.summary["flows"]}
    for name, share in (("long", 5), ("cross1", 5), ("cross2", 15), ("cross3", 25)):
        assert got[name] == pytest.approx(share * PAYLOAD, rel=0.10), (name, got)


def test_dctcp_holds_the_queue_near_the_marking_threshold():
    """cc = "dctcp" turns ECN on by itself (Linux's TCP_CONG_NEEDS_ECN) with the precise CE
    echo of a DCTCP receiver; with step marking at K = 20 the queue stays near K, nothing is
    retransmitted, and the link stays full."""
    d = {"duration_s": 10, "sim": {"trace_interval_ms": 1},
         "bottleneck": {"rate_bps": "100Mbps", "delay_ms": 1, "queue_pkts": 200, "ecn_threshold_pkts": 20},
         "flows": [{"cc": "dctcp"}]}
    r = cclab.simulate(d)
    rows = r.links[(r.links["link"] == "bottleneck.fwd") & (r.links["t_s"] > 1)]
    assert 10 <= rows["queue_pkts"].mean() <= 30, rows["queue_pkts"].mean()
    assert rows["queue_pkts"].max() < 60
    f = r.summary["flows"][0]
    assert f["retrans_pkts"] == 0 and f["cwr_count"] > 50
    assert f["goodput_bps"] > 0.95 * 100e6 * PAYLOAD


def test_qdisc_errors_name_their_field():
    def problems(d: dict[str, Any]) -> dict[str, str]:
        with pytest.raises(ScenarioError) as e:
            load_scenario(d)
        return dict(e.value.problems)

    p = problems(one_flow("fifo"))
    assert "fifo" in p["bottleneck.qdisc"] and "fq_codel" in p["bottleneck.qdisc"]
    p = problems(one_flow({"kind": "codel", "target_ms": -1}))
    assert "bottleneck.qdisc.target_ms" in p, p
    p = problems(one_flow({"kind": "pie", "tupdate": 15}))
    assert any(k.startswith("bottleneck.qdisc") for k in p), p
    d = copy.deepcopy(one_flow({"kind": "red"}))
    d["bottleneck"]["ecn_threshold_pkts"] = 10
    p = problems(d)
    assert "ecn_threshold_pkts" in next(iter(p)), p
    sc = load_scenario(one_flow({"kind": "codel", "target_ms": "2.5ms"}))
    assert sc.to_core_dict()["bottleneck"]["fwd"]["qdisc"] == {"kind": "codel", "target_ms": 2.5}
    assert "qdisc" not in sc.to_core_dict()["bottleneck"]["rev"], "the ACK direction keeps drop-tail"
