"""The kernel backend end to end (root): real Linux TCP in cclab- namespaces behind cclab-link,
TCP_INFO sampled into the flows schema; parity refusals; nothing left behind."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import cclab
from cclab.kernel import netns
from cclab.kernel.backend import parity, run_kernel
from cclab.kernel.netns import KernelUnavailable
from cclab.scenario import load_scenario

root_only = pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists("/dev/net/tun") or shutil.which("ip") is None,
    reason="needs root, TUN and iproute2",
)


def _path(loss: float, duration_s: float) -> dict:
    return {
        "name": "kpath",
        "duration_s": duration_s,
        "sim": {"trace": "interval", "trace_interval_ms": 10},
        "bottleneck": {"rate_bps": "20Mbps", "delay_ms": 50, "queue_pkts": 200, "loss": loss},
        "flows": [{"cc": "cubic", "mss_bytes": 1448}],
    }


@root_only
def test_lossless_cubic_fills_the_link_and_traces_tcp_info(tmp_path):
    r = run_kernel(_path(0.0, 10))
    ceiling = 20e6 * 1448 / 1500  # payload rate at 1500-byte packets
    g = r.summary["flows"][0]["goodput_bps"]
    # Over the whole run, including slow start on a 100 ms path.
    assert g > 0.85 * ceiling
    f = r.flows
    late = f[f["t_s"] > 5]
    rate = (late["delivered_bytes"].iloc[-1] - late["delivered_bytes"].iloc[0]) * 8 / (late["t_s"].iloc[-1] - late["t_s"].iloc[0])
    assert abs(rate - ceiling) / ceiling < 0.05  # steady state within 5 % of the link
    assert np.nanmedian(f["min_rtt_ms"]) == pytest.approx(100.0, abs=1.0)
    assert f["t_s"].diff().median() == pytest.approx(0.01, abs=0.002)
    assert r.summary["backend"] == "kernel" and r.summary["knobs"]
    paths = r.write(tmp_path / "out")
    assert paths["traces"].is_file() and Path(paths["cwnd"]).stat().st_size > 10_000
    assert not [n for n in netns.list_namespaces() if n.startswith("cclab-") and "kpath" in n]


@root_only
def test_lossy_cubic_goodput_matches_the_simulator():
    duration = 60.0  # ~100 loss epochs: a single run within ~8 % (1 sigma) of the mean
    k = run_kernel(_path(0.01, duration)).summary
    sims = [cclab.simulate(_path(0.01, duration), seed=s).summary["flows"][0]["goodput_bps"] for s in range(1, 6)]
    kg, sg = k["flows"][0]["goodput_bps"], float(np.mean(sims))
    assert abs(kg - sg) / sg < 0.20, (kg, sims)


def test_parity_refuses_what_the_kernel_cannot_do(monkeypatch):
    sc = load_scenario({**_path(0.0, 5), "flows": [{"cc": "vegas"}, {"cc": "cubic", "max_cwnd_pkts": 100}]})
    problems = parity(sc)
    assert any("flows[0].cc = 'vegas'" in p and "simulator" in p for p in problems)
    assert any("flows[1].max_cwnd_pkts" in p for p in problems)
    with pytest.raises(KernelUnavailable, match="vegas"):
        run_kernel(sc)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(KernelUnavailable, match="needs root"):
        run_kernel(_path(0.0, 5))
