"""ECN on the real kernel (root): cclab-link CE-marks real IPv4 headers at the link's
ecn_threshold_pkts, a kernel CUBIC flow with flows[].ecn = "on" (net.ipv4.tcp_ecn = 1 in its
namespaces) reduces on the echoes without a retransmission, as the simulator's flow does."""

from __future__ import annotations

import os
import shutil

import pytest

import cclab
from cclab.kernel import netns
from cclab.kernel.backend import parity, run_kernel
from cclab.scenario import load_scenario

root_only = pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists("/dev/net/tun") or shutil.which("ip") is None,
    reason="needs root, TUN and iproute2",
)


def _marking(ecn: str = "on", duration_s: float = 10) -> dict:
    """20 Mbit/s, 20 ms (BDP 33 packets), a 500-packet queue marking at K = 20."""
    return {
        "name": "kecn",
        "duration_s": duration_s,
        "sim": {"trace": "interval", "trace_interval_ms": 10},
        "bottleneck": {"rate_bps": "20Mbps", "delay_ms": 10, "queue_pkts": 500, "ecn_threshold_pkts": 20},
        "flows": [{"cc": "cubic", "mss_bytes": 1448, "ecn": ecn}],
    }


def test_parity_refuses_ecn_low_and_mixed_ecn_on_one_sender():
    assert any("ecn = 'low'" in p and "upstream" in p for p in parity(load_scenario(_marking("low"))))
    two = {**_marking(), "flows": [{"cc": "cubic", "ecn": "on"}, {"cc": "cubic", "ecn": "off"}]}
    assert any("flows[1].ecn" in p and "same sender" in p for p in parity(load_scenario(two)))
    assert parity(load_scenario(_marking())) == []


@root_only
def test_kernel_cubic_reacts_to_marks_without_retransmissions_like_the_simulator():
    r = run_kernel(_marking())
    st = r.summary["flows"][0]
    fwd = r.links[r.links["link"] == "bottleneck.fwd"]
    assert r.summary["knobs"], "tcp_ecn set in the namespaces"
    assert fwd["ce_marks"].iloc[-1] > 0, "cclab-link marked real packets"
    assert st["delivered_ce_pkts"] > 0, "tcpi_delivered_ce: the sender saw ECE"
    assert st["retrans_pkts"] == 0 and fwd["drops"].iloc[-1] == 0
    assert (r.flows["ca_state"] == "cwr").any()
    late = fwd[fwd["t_s"] >= 2]
    assert late["queue_pkts"].max() <= 45, "the queue stays near K = 20"
    sim = cclab.simulate(_marking())
    sim_st = sim.summary["flows"][0]
    print(f"kernel: goodput {st['goodput_bps'] / 1e6:.2f} Mbit/s, delivered_ce {st['delivered_ce_pkts']}, "
          f"ce_marks {fwd['ce_marks'].iloc[-1]}, mean queue {late['queue_pkts'].mean():.1f}; "
          f"sim: goodput {sim_st['goodput_bps'] / 1e6:.2f}, ce_marks {sim.links['ce_marks'].max()}, "
          f"mean queue {sim.links[(sim.links['link'] == 'bottleneck.fwd') & (sim.links['t_s'] >= 2)]['queue_pkts'].mean():.1f}")
    assert st["goodput_bps"] == pytest.approx(sim_st["goodput_bps"], rel=0.08)
    assert not [n for n in netns.list_namespaces() if n.startswith("cclab-") and "kecn" in n]
