"""The handshake through the public API: flows[].handshake, the nth loss model, the events and the
summary's established_s (docs/scenario.md, "The handshake")."""

from __future__ import annotations

import pytest

import cclab
from cclab.scenario import ScenarioError, load_scenario

from .conftest import needs_core

pytestmark = needs_core


def _path(**flow) -> dict:
    return {
        "name": "hs",
        "duration_s": 4,
        "bottleneck": {"rate_bps": "10Mbps", "delay_ms": 25, "loss_model": {"kind": "nth", "pkts": [1]}},
        "flows": [{"cc": "cubic", "size_bytes": 100_000, **flow}],
    }


def test_a_lost_syn_delays_establishment_by_the_initial_rto():
    r = cclab.simulate(_path())
    st = r.summary["flows"][0]
    # The SYN timer (1 s, 250 jiffies from jiffy 0) runs at the timer wheel's bucket, jiffy 256.
    assert st["established_s"] == pytest.approx(1.074096, abs=1e-6)
    assert st["completion_s"] > st["established_s"] and st["delivered_bytes"] == 100_000
    kinds = list(r.events["kind"])
    for k in ("syn", "handshake_drop", "syn_retrans", "established"):
        assert k in kinds, kinds
    assert r.flows["t_s"].min() == pytest.approx(st["established_s"])


def test_without_the_handshake_the_flow_starts_established_and_the_syn_is_not_there_to_lose():
    r = cclab.simulate(_path(handshake=False))
    st = r.summary["flows"][0]
    assert st["established_s"] == 0.0
    # The first data segment is the packet the link loses now.
    drops = r.events[r.events["kind"] == "drop"]
    assert list(drops["detail"])[0].endswith("seq=0")
    assert not r.events["kind"].isin(["syn", "established"]).any()


def test_a_udp_flow_has_no_establishment_and_takes_no_handshake_field():
    d = _path()
    d["flows"] = [{"transport": "udp", "rate_bps": "1Mbps"}]
    assert cclab.simulate(d).summary["flows"][0]["established_s"] is None
    d["flows"][0]["handshake"] = False
    with pytest.raises(ScenarioError, match="handshake"):
        load_scenario(d)


def test_nth_takes_packet_numbers_from_1():
    d = _path()
    d["bottleneck"]["loss_model"] = {"kind": "nth", "pkts": [0]}
    with pytest.raises(ScenarioError, match="pkts"):
        load_scenario(d)


def test_the_timer_wheel_setting_and_the_tick_grid():
    """[sim] timer_wheel, jiffies_at_zero and tick_phase_us (docs/scenario.md, "Timers")."""
    # Without the wheel the SYN timer runs at its expiry jiffy: exactly 1 s.
    d = _path()
    d["sim"] = {"timer_wheel": False}
    assert cclab.simulate(d).summary["flows"][0]["established_s"] == pytest.approx(1.050096, abs=1e-6)
    # Zero at jiffy 5: the SYN's 250 jiffies expire at 255 and run at 256, 1.004 s after zero.
    d["sim"] = {"jiffies_at_zero": 5}
    assert cclab.simulate(d).summary["flows"][0]["established_s"] == pytest.approx(1.004 + 0.050096, abs=1e-6)
    # 2 ms into jiffy 5: jiffy 256 begins 1.002 s after zero.
    d["sim"] = {"jiffies_at_zero": 5, "tick_phase_us": 2000}
    assert cclab.simulate(d).summary["flows"][0]["established_s"] == pytest.approx(1.002 + 0.050096, abs=1e-6)
    # The phase is below one tick (4000 us at HZ = 250).
    d["sim"] = {"tick_phase_us": 4000}
    with pytest.raises(ScenarioError, match="tick_phase_us"):
        load_scenario(d)


def test_the_first_write_follows_the_handshakes_last_ack():
    """A queue of 10 packets takes the initial window whole only if the handshake's last ACK has
    left it first: as on the kernel (sniffed: the kernel backend's sender writes 50-400 us
    after that ACK), not when both arrive in the same instant (first_write_delay_us = 0)."""
    def run(delay_us: float) -> cclab.RunResult:
        return cclab.simulate({"name": "iw", "duration_s": 0.2, "sim": {"trace": "change"},
                               "bottleneck": {"rate_bps": "20Mbps", "delay_ms": 5, "queue_pkts": 10},
                               "flows": [{"cc": "reno", "first_write_delay_us": delay_us}]})

    def first_drop_s(r: cclab.RunResult) -> float:
        d = r.events[r.events["kind"] == "drop"]
        return float(d["t_s"].min()) if len(d) else float("inf")

    together, after = run(0.0), run(50.0)
    assert first_drop_s(together) < 0.0105  # the initial window's last packet, at once
    assert first_drop_s(after) > 0.02  # slow start's second round overflows it, not the first
    assert after.summary["flows"][0]["established_s"] == pytest.approx(0.010, abs=5e-4)
    with pytest.raises(ScenarioError, match="first_write_delay_us"):
        load_scenario({**_path(), "flows": [{"cc": "cubic", "first_write_delay_us": -1}]})


def test_a_delayed_first_write_still_arms_the_retransmission_timer():
    """The whole initial window lost (packets 3-12 on the forward link: SYN 1, ACK 2): only the
    sender's timer armed at the first write (a loss probe, then the RTO) recovers it."""
    d = _path(first_write_delay_us=200.0)
    d["bottleneck"]["loss_model"] = {"kind": "nth", "pkts": list(range(3, 13))}
    st = cclab.simulate(d).summary["flows"][0]
    assert st["retrans_pkts"] >= 10 and st["delivered_bytes"] == 100_000, st
