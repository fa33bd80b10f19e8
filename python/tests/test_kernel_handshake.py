"""The handshake on both backends (root): with the flow's first packet, its SYN, lost at the link
(``loss_model = { kind = "nth", pkts = [1] }``: the simulator's link and cclab-link run the same
model, counting from the run's start), the kernel resends the SYN after the initial RTO (1 s,
``TCP_TIMEOUT_INIT``) and so does the simulator; the connection is established one round trip
later on both and the data starts after it. The RTO the data starts with is the handshake's on
both: from the timestamp echo, or without timestamps the 3 s fallback.

How close the two SYN retransmissions are: the kernel's SYN timer is a timer_list on the timer
wheel (kernel/time/timer.c ``calc_wheel_index``): 250 jiffies fall in level 1, whose buckets are 8
jiffies (32 ms), and the timer runs at the next bucket after its expiry, 1 to 8 jiffies late
depending on jiffies at ``connect()``, which is random against the run's zero. The simulator runs
the same wheel (crates/cclab-sim/src/tcp/clock.rs); paired with the kernel run (its
``kernel_clock``: jiffies at zero and the tick phase; its SYN at the kernel's ``connect_s``) it
resends the SYN at the same tick, and the two are within 10 ms. Unpaired (jiffies 0 at zero) the
simulator's SYN goes again at 1.024 s.
"""

from __future__ import annotations

import os
import shutil

import pytest

import cclab
from cclab.kernel.backend import run_kernel

from .conftest import needs_core

root_only = pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists("/dev/net/tun") or shutil.which("ip") is None,
    reason="needs root, TUN and iproute2",
)

pytestmark = [needs_core, root_only]

#: The path's round trip for the 60-byte SYN and SYN-ACK (20 Mbit/s, 50 ms each way).
_RTT_S = 0.100 + 2 * 60 * 8 / 20e6


def _lost_syn(timestamps: bool) -> dict:
    return {
        "name": "ksyn",
        "duration_s": 3,
        "sim": {"trace": "interval", "trace_interval_ms": 10},
        "bottleneck": {"rate_bps": "20Mbps", "delay_ms": 50, "queue_pkts": 200,
                       "loss_model": {"kind": "nth", "pkts": [1]}},
        "flows": [{"cc": "cubic", "size_bytes": 300_000, "timestamps": timestamps}],
    }


def _paired(sc: dict, k) -> dict:
    """``sc`` for the simulator, on the kernel run's tick grid, its SYN when the kernel's went."""
    clock = k.summary["kernel_clock"]
    assert clock is not None, "the kernel backend read no kernel_clock (root and /proc/timer_list)"
    return {**sc, "sim": {**sc["sim"], "jiffies_at_zero": clock["jiffies_at_zero"],
                          "tick_phase_us": clock["tick_phase_us"], "kernel_hz": clock["hz"]},
            "flows": [{**sc["flows"][0], "start_s": k.summary["flows"][0]["connect_s"]}]}


@pytest.mark.parametrize("timestamps", [True, False])
def test_a_lost_syn_is_resent_after_the_initial_rto_on_both_backends(timestamps: bool) -> None:
    sc = _lost_syn(timestamps)
    k = run_kernel(sc)
    s = cclab.simulate(sc)
    ks, ss = k.summary["flows"][0], s.summary["flows"][0]
    # The simulator, unpaired: SYN at 0, lost; 250 jiffies from jiffy 0 run at jiffy 256 (the
    # wheel's bucket), 1.024 s; established one round trip later.
    ev = s.events
    assert list(ev[ev["kind"] == "syn_retrans"]["t_s"]) == [1.024]
    assert ss["established_s"] == pytest.approx(1.024 + _RTT_S, abs=1e-3)
    # Paired with the kernel run: the same tick, so the same retransmission within 10 ms.
    p = cclab.simulate(_paired(sc, k))
    ps = p.summary["flows"][0]
    late_s = ks["established_s"] - ps["established_s"]
    print(f"kernel established {late_s * 1e3:.2f} ms after the paired simulator "
          f"(connect at {ks['connect_s'] * 1e3:.2f} ms, clock {k.summary['kernel_clock']})")
    assert abs(late_s) <= 0.010, (ks["established_s"], ps["established_s"])
    # The kernel's retransmission came after the initial RTO, within the wheel's 8 jiffies.
    assert 1.0 + _RTT_S < ks["established_s"] - ks["connect_s"] <= 1.0 + _RTT_S + 8 * 0.004 + 0.005
    # One SYN was lost on the link on both (the kernel's counter is cclab-link's).
    assert k.summary["links"]["links"][0]["dropped_random_pkts"] == 1
    assert s.summary["links"][0]["dropped_random_pkts"] == 1
    # Data after establishment on both, and the RTO it starts with is the handshake's.
    for r, est in ((s, ss["established_s"]), (k, ks["established_s"])):
        f = r.flows[r.flows["delivered_bytes"] > 1]  # the kernel counts the SYN as one byte acked
        assert f["t_s"].min() > est + 0.09, (r.summary["backend"], f["t_s"].min(), est)
    kf = k.flows[k.flows["t_s"] < ks["established_s"] + 0.05]["rto_ms"].iloc[0]
    sf = s.flows["rto_ms"].iloc[0]
    want = 3000.0 if not timestamps else 300.0
    assert sf == pytest.approx(want, abs=5.0) and kf == pytest.approx(want, abs=5.0), (sf, kf)


def test_the_kernel_clock_offset_is_read_inside_a_tick(tmp_path) -> None:
    """jiffies.py takes /proc/timer_list's reading only away from a tick's edges."""
    from cclab.kernel.jiffies import jiffies_offset, kernel_clock

    f = tmp_path / "timer_list"
    f.write_bytes(b"Timer List Version: v0.10\nnow at 1002000000 nsecs\n\ncpu: 0\njiffies: 4294667546\n")
    assert jiffies_offset(250, path=f) == 4294667546 - 250  # 1.002 s: mid-tick 250
    f.write_bytes(b"now at 1000000100 nsecs\njiffies: 4294667546\n")  # at an edge: refused
    assert jiffies_offset(250, tries=2, path=f) is None
    assert kernel_clock(1.0015, 250, 7) == {"hz": 250, "jiffies_at_zero": 257, "tick_phase_us": 1500.0}
    # The real file (root): a reading is found and stays the same between two reads.
    from cclab.kernel.clamp import kernel_hz

    hz = kernel_hz() or 250
    a, b = jiffies_offset(hz), jiffies_offset(hz)
    assert a is not None and a == b
