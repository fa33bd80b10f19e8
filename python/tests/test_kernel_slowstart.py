"""CUBIC's slow-start exit against the real kernel (root): HyStart's ACK train on a lossless
44 Mbit/s, 100 ms path (issue 13). Both exit where the ACK train of the burst that starts a
round outlasts half the minimum RTT: 320 + ~190 packets."""

from __future__ import annotations

import os
import shutil

import pytest

import cclab
from cclab.kernel.backend import run_kernel

root_only = pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists("/dev/net/tun") or shutil.which("ip") is None,
    reason="needs root, TUN and iproute2",
)

_PATH = {
    "name": "kslowstart",
    "duration_s": 2.0,
    "sim": {"trace": "interval", "trace_interval_ms": 10},
    "bottleneck": {"rate_bps": "44Mbps", "delay_ms": 50, "queue_bytes": 1500000},
    "flows": [{"cc": "cubic", "mss_bytes": 1448}],
}


def _first_ssthresh(f) -> tuple[int, float]:
    """(ssthresh, t_s) of the first finite ssthresh, t_s from the first data in flight."""
    t0 = float(f[f["inflight_pkts"] > 0]["t_s"].iloc[0])
    s = f[f["ssthresh_pkts"].notna() & (f["ssthresh_pkts"] < 2**31 - 1)].iloc[0]
    return int(s["ssthresh_pkts"]), float(s["t_s"]) - t0


@root_only
def test_slow_start_ends_where_the_kernel_s_does():
    """First ssthresh within 5 % and its time within 0.05 s of the kernel's, times counted from
    the first data sent (the kernel's data starts after the handshake).

    The kernel's ACK train breaks when the host holds ACKs back for more than 2 ms
    (`hystart_ack_delta_us`), as a machine busy with other work does now and then; HyStart then
    exits later, by delay, with a larger window. So the kernel gets up to five runs and one must
    match; the simulator is deterministic."""
    s_ss, s_t = _first_ssthresh(cclab.simulate(_PATH).flows)
    kernel = []
    for _ in range(5):
        k_ss, k_t = _first_ssthresh(run_kernel(_PATH).flows)
        kernel.append((k_ss, round(k_t, 3)))
        if abs(s_ss - k_ss) <= 0.05 * k_ss and abs(s_t - k_t) <= 0.05:
            break
    else:
        pytest.fail(f"simulator {s_ss} at {s_t:.3f} s; kernel runs {kernel}")
    # Never the delay exit at 272-288 of the simulator before the HyStart round fix.
    assert s_ss > 450
