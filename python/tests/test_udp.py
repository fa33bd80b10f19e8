"""UDP constant-bit-rate flows (``transport = "udp"``) in scenarios and results."""

from __future__ import annotations

import pytest

import cclab
from cclab.scenario import ScenarioError, load_scenario

from .conftest import needs_core


def scenario(*flows, rate="10Mbps", queue_pkts=50, duration_s=5):
    return {
        "name": "udp",
        "duration_s": duration_s,
        "bottleneck": {"rate_bps": rate, "delay_ms": 20, "queue_pkts": queue_pkts},
        "flows": list(flows),
    }


def problems(data):
    with pytest.raises(ScenarioError) as e:
        load_scenario(data)
    return dict(e.value.problems)


def test_udp_fields_load_with_units_and_defaults():
    sc = load_scenario(scenario({"transport": "udp", "rate_bps": "2.5Mbps"}))
    f = sc.flows[0]
    assert (f.transport, f.rate_bps, f.payload_bytes) == ("udp", 2.5e6, 1472)
    core = sc.to_core_dict()["flows"][0]
    assert core["rate_bps"] == 2_500_000 and core["transport"] == "udp"
    tcp = load_scenario(scenario({})).to_core_dict()["flows"][0]
    assert "rate_bps" not in tcp and tcp["transport"] == "tcp"


@pytest.mark.parametrize(
    ("flow", "needle"),
    [
        ({"transport": "udp"}, "needs rate_bps"),
        ({"transport": "udp", "rate_bps": "1Mbps", "cc": "bbr"}, "not for a UDP flow: cc"),
        ({"transport": "udp", "rate_bps": "1Mbps", "mss_bytes": 1000, "sack": False}, "UDP flow: mss_bytes, sack"),
        ({"rate_bps": "1Mbps"}, 'only for transport = "udp"'),
        ({"transport": "udp", "rate_bps": "1Mbps", "payload_bytes": 70000}, "65507"),
        ({"transport": "quic"}, "tcp"),
    ],
)
def test_bad_udp_flows_name_the_field(flow, needle):
    p = problems(scenario(flow))
    assert any(k.startswith("flows[0]") for k in p), p
    assert any(needle in v for v in p.values()), p


@needs_core
def test_a_udp_flow_beside_tcp_reports_rate_loss_and_delay():
    r = cclab.simulate(scenario({"cc": "cubic"}, {"name": "cbr", "transport": "udp", "rate_bps": "4Mbps",
                                                 "payload_bytes": 1000}, duration_s=10))
    tcp, udp = r.summary["flows"]
    assert "udp" not in tcp and udp["flow"] == "cbr"
    u = udp["udp"]
    assert u["send_rate_bps"] == pytest.approx(4e6)
    assert u["sent_pkts"] == u["received_pkts"] + u["lost_pkts"] + u["in_flight_pkts"]
    # 20 ms + 0.82 ms of serialisation when the queue is empty; the queue the TCP flow builds
    # (up to 50 packets of 1.2 ms) adds to it.
    assert u["owd_min_ms"] == pytest.approx(20.8224, abs=1e-3)
    assert u["owd_min_ms"] < u["owd_p50_ms"] <= u["owd_p99_ms"] <= u["owd_max_ms"] < 20.83 + 50 * 1.2
    assert udp["goodput_bps"] == pytest.approx(u["receive_rate_bps"])
    assert tcp["goodput_bps"] + udp["goodput_bps"] < 10e6
    # Only the TCP flow has rows in the flows table; the UDP flow's drops are events of its own.
    assert set(r.flows["flow"].unique()) == {"flow0"}
    drops = r.events[(r.events["flow"] == "cbr") & (r.events["kind"] == "drop")]
    assert len(drops) == u["lost_pkts"]


@needs_core
def test_offered_above_capacity_is_cut_to_the_link_rate():
    r = cclab.simulate(scenario({"transport": "udp", "rate_bps": "20Mbps"}, duration_s=10))
    u = r.summary["flows"][0]["udp"]
    carried = 10e6 * 1472 / 1500
    assert u["receive_rate_bps"] == pytest.approx(carried, rel=0.01)
    assert u["loss"] == pytest.approx(1 - carried / 20e6, abs=0.01)


@needs_core
def test_a_loaded_scenario_loads_again_with_overrides():
    """A Scenario object (every field set, at its default or not) reloads with overrides, for
    TCP and UDP flows alike (the sweep and cclab.simulate(sc, **overrides) do this)."""
    sc = load_scenario(scenario({"cc": "reno"}, {"transport": "udp", "rate_bps": "2Mbps"}))
    again = load_scenario(sc, duration_s=2)
    assert again.duration_s == 2 and again.flows[1].rate_bps == 2e6 and again.flows[0].cc == "reno"
    assert cclab.simulate(sc, duration_s=1).summary["flows"][1]["udp"]["sent_pkts"] > 0
