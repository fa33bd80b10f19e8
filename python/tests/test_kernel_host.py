"""A host's stack below TCP on the real kernel (root): the interface queue as htb + pfifo on the
sender's TUN, TCP Small Queues as 6.18 runs them, against the simulator's model
(crates/cclab-net/src/host.rs, crates/cclab-sim/src/tcp/tsq.rs)."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

import cclab
from cclab.kernel.backend import parity, run_kernel
from cclab.kernel.topology import plan_network
from cclab.scenario import load_scenario

root_only = pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists("/dev/net/tun") or shutil.which("ip") is None
    or shutil.which("tc") is None,
    reason="needs root, TUN, iproute2 and tc",
)


def _nic(rate: str, flows: int, queue_pkts: int = 1000) -> dict:
    return {"name": "nic", "duration_s": 10, "sim": {"trace": "interval"},
            "host": {"device_rate_bps": rate, "device_queue_pkts": queue_pkts},
            "bottleneck": {"rate_bps": "200Mbps", "delay_ms": 25, "queue_pkts": 2000},
            "flows": [{"cc": "cubic", "name": f"app{k}", "start_s": 0.5 * k} for k in range(flows)]}


def _device(r: cclab.RunResult) -> dict:
    links = r.summary["links"]
    links = links["links"] if isinstance(links, dict) else links
    return next(x for x in links if x.get("link", x.get("name")) == "sender.device")


def test_simulator_only_stack_settings_are_refused_or_recorded_on_the_kernel():
    """pacing_shift other than 10 cannot be set: refused. Another TSQ rule runs as Linux's, with
    its tsq_limit_bytes as the cap: a deviation in the summary, not a refusal."""
    sc = load_scenario({**_nic("10Mbps", 1), "host": {"device_rate_bps": "10Mbps", "tsq": "fixed",
                                                       "pacing_shift": 8}})
    problems = " ".join(parity(sc))
    assert "pacing_shift = 8" in problems and "tsq" not in problems
    for tsq in ("fixed", "paper", "adaptive"):
        sc = load_scenario({**_nic("10Mbps", 1), "host": {"device_rate_bps": "10Mbps", "tsq": tsq}})
        assert parity(sc) == []
        dev = plan_network(sc.lowered()).deviations
        assert any(f"tsq = {tsq!r} (simulator-only) runs as Linux's TSQ" in x for x in dev), dev
        assert any("device_release = 'end' runs as 'start'" in x for x in dev), dev
    # The ablation that models the kernel backend's device is no deviation there.
    sc = load_scenario({**_nic("10Mbps", 1), "host": {"device_rate_bps": "10Mbps", "device_release": "start"}})
    assert plan_network(sc.lowered()).deviations == []


def test_a_cubic_c_the_kernel_cannot_run_exactly_is_a_deviation():
    """tcp_cubic's C is bic_scale x 10 / 1024: cubic-ios's 0.25 runs as 0.2539; 0.4 is exact."""
    from cclab.kernel.backend import flow_deviations

    dev = flow_deviations({"flows": [{"cc": "cubic-ios", "cc_params": {}},
                                     {"cc": "cubic", "cc_params": {"c": 0.4}}, {"cc": "reno", "cc_params": {}}]})
    assert dev == ["flows[0].cc_params.c runs as 0.25390625 (the kernel's C is bic_scale x 10 / 1024)"]


@root_only
def test_one_flow_behind_a_5mbit_nic_matches_the_simulator():
    """TSQ's floor binds (two skbs of two segments): goodput, the bytes below TCP and what the
    NIC sent agree. Measured: goodput and NIC bytes within 1 %, below-TCP bytes 7408 (kernel)
    against 7432 (the simulator, 1448-byte segments where the kernel's carry 1436). Above the
    floor the limit follows the pacing rate, so cwnd, which a lossless flow keeps where slow
    start left it, and the two slow starts still differ (docs/design.md).

    Not yet understood: the kernel holds 7408 bytes below TCP in every sample, the simulator 7456
    in about half of its samples and one segment more (8904) in the others. Which level the
    median lands on depends on the timer phase: it was 7456 when the data started at 0, and is
    8904 since the handshake starts it at 50 ms (as it was before the handshake with
    start_s = 0.05). So the kernel's level is compared with the simulator's lower one, and the
    simulator's time at it is bounded from below. Levels held in under a tenth of the samples
    are left out: a GSO skb never spans two write-queue skbs (45 segments each), so every 45th
    segment leaves as a one-segment skb and the simulator shows other levels now and then (2 %
    of the samples at 5176 and 6 % at 9736 bytes)."""
    sc = load_scenario(_nic("5Mbps", 1))
    k, s = run_kernel(sc), cclab.simulate(sc)
    gk, gs = k.summary["flows"][0]["goodput_bps"], s.summary["flows"][0]["goodput_bps"]
    assert gk == pytest.approx(gs, rel=0.05)
    late = lambda r: r.flows[r.flows["t_s"] > 2]["below_tcp_bytes"].dropna()  # noqa: E731
    levels = late(s).value_counts()
    levels = levels[levels >= 0.1 * levels.sum()]
    low_key = levels.index.min()
    low = float(low_key)
    assert float(np.nanmedian(late(k))) == pytest.approx(low, rel=0.10)
    assert levels[low_key] >= 0.4 * len(late(s)), levels.head()
    assert _device(k)["tx_bytes"] == pytest.approx(_device(s)["tx_bytes"], rel=0.05)
    assert _device(k)["dropped_queue_full_pkts"] == _device(s)["dropped_queue_full_pkts"] == 0


@root_only
def test_a_full_interface_queue_is_local_congestion_on_both():
    """Three flows and a 4-packet pfifo: the queue overflows on both backends and the flows
    enter CWR (the simulator without a retransmission timeout, the kernel with at most one). The
    counts differ (see docs/design.md)."""
    sc = load_scenario(_nic("50Mbps", 3, queue_pkts=4))
    k, s = run_kernel(sc), cclab.simulate(sc)
    for r in (k, s):
        assert _device(r)["dropped_queue_full_pkts"] > 0
        assert sum(f["cwr_count"] for f in r.summary["flows"]) > 0
        assert sum(f["goodput_bps"] for f in r.summary["flows"]) > 30e6
    # The simulator takes no timeout; the kernel now and then one (1 run of about 4 on a loaded
    # machine: a refused retransmission waits TCP_RESOURCE_PROBE_INTERVAL).
    assert sum(f["rto_count"] for f in s.summary["flows"]) == 0
    assert sum(f["rto_count"] for f in k.summary["flows"]) <= 1
