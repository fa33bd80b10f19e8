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
    # The kernel's data starts after the handshake; times count from the first data sent. (The
    # kernel's ACK train breaks when the host is loaded enough to hold ACKs back for 2 ms; then
    # it leaves slow start later, by loss, and this test fails for the host, not the model.)
    k_ss, k_t = _first_ssthresh(run_kernel(_PATH).flows)
    s_ss, s_t = _first_ssthresh(cclab.simulate(_PATH).flows)
    assert abs(s_ss - k_ss) <= 0.05 * k_ss, (s_ss, k_ss)
    assert abs(s_t - k_t) <= 0.05, (s_t, k_t)
