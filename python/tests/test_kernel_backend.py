"""The kernel backend end to end (root): real Linux TCP in cclab- namespaces behind cclab-link,
TCP_INFO sampled into the flows schema; parity refusals; nothing left behind."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import cclab
from cclab.kernel import clamp, netns
from cclab.kernel.backend import parity, run_kernel
from cclab.kernel.bpfcc import BPF_CUBIC, available, object_path
from cclab.kernel.knobs import cubic_plan, namespace_sysctls
from cclab.kernel.netns import KernelUnavailable
from cclab.scenario import ScenarioError, load_scenario

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
    # The links table, sampled by cclab-link in the simulator's columns and link names.
    lk = r.links
    assert list(lk["link"].cat.categories) == ["bottleneck.fwd", "bottleneck.rev"]
    fwd = lk[lk["link"] == "bottleneck.fwd"]
    assert fwd["t_s"].diff().median() == pytest.approx(0.01, abs=0.001)
    assert 0 < fwd["queue_pkts"].max() <= 200 and fwd["tx_bytes"].is_monotonic_increasing
    assert fwd["drops"].iloc[-1] <= r.summary["links"]["links"][0]["dropped_queue_full_pkts"]
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
    sc = load_scenario({**_path(0.0, 5), "senders": [{"name": "a"}, {"name": "b"}],
                        "flows": [{"cc": "vegas", "sender": "a"},
                                  {"cc": "cubic", "sender": "b", "cc_params": {"c": 0.3, "beta": 0.8}},
                                  {"cc": "cubic-ios", "sender": "b", "initial_cwnd_pkts": 4},
                                  {"cc": "cubic", "sender": "a", "cc_params": {"hystart": False}},
                                  {"cc": "cubic", "sender": "a", "cc_params": {"hystart": True}},
                                  {"cc": "bbr", "sender": "a", "cc_params": {"high_gain": 700}, "max_cwnd_pkts": 100}]})
    problems = parity(sc)
    assert any("flows[0].cc = 'vegas'" in p and "simulator" in p for p in problems)
    # flows[1] and [2] both run cclab_cubic (C != 410/1024), whose parameters are global.
    assert any("flows[2].cc_params.c" in p and "cclab_cubic parameters are global" in p for p in problems)
    assert any("flows[2].initial_cwnd_pkts = 4 differs from flows[1]" in p for p in problems)
    assert any("flows[4].cc_params.hystart" in p and "module parameters are global" in p for p in problems)
    assert any("flows[5].cc_params" in p and "bbr" in p for p in problems)
    assert not any("max_cwnd_pkts" in p for p in problems)  # the BPF clamp does it
    assert len(problems) == 5, problems
    with pytest.raises(KernelUnavailable, match="vegas"):
        run_kernel(sc)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(KernelUnavailable, match="needs root"):
        run_kernel(_path(0.0, 5))


def test_parity_refuses_a_flow_without_its_handshake():
    problems = parity(load_scenario({**_path(0.0, 5), "flows": [{"cc": "cubic", "handshake": False}]}))
    assert len(problems) == 1 and problems[0].startswith("flows[0].handshake = False: the kernel always"), problems


def test_cubic_with_another_c_is_planned_as_cclab_cubic():
    flows = load_scenario({**_path(0.0, 5), "flows": [{"cc": "cubic-ios"}, {"cc": "cubic"},
                                                      {"cc": "cubic", "cc_params": {"c": 0.25, "beta": 0.8}}]}
                          ).to_core_dict()["flows"]
    module, bpf, names, problems = cubic_plan(flows)
    assert problems == [] and module == {}
    assert bpf == {"bic_scale": 26, "beta": 819}  # round(0.25 * 1024 / 10), round(0.8 * 1024)
    assert names == {0: "cclab_cubic", 1: "cubic", 2: "cclab_cubic"}


def test_kernel_settings_become_namespace_sysctls():
    sc = load_scenario({**_path(0.0, 5), "kernel": {"tcp_limit_output_bytes": "256KiB",
                                                     "sysctls": {"net.ipv4.tcp_recovery": 0}},
                        "flows": [{"cc": "cubic", "ecn": "on"}]})
    f = sc.to_core_dict()["flows"][0]
    snd = namespace_sysctls(f, sc.kernel.model_dump(), sender=True)
    assert snd["net/ipv4/tcp_limit_output_bytes"] == str(256 * 1024)
    assert snd["net/ipv4/tcp_ecn"] == "1" and snd["net/ipv4/tcp_recovery"] == "0"
    assert snd["net/ipv4/tcp_no_metrics_save"] == "1" and snd["net/ipv4/tcp_frto"] == "2"
    assert "net/ipv4/tcp_frto" not in namespace_sysctls(f, sc.kernel.model_dump(), sender=False)
    with pytest.raises(ScenarioError, match="kernel.tcp_ecn"):  # replaced by flows[].ecn
        load_scenario({**_path(0.0, 5), "kernel": {"tcp_ecn": 1}})
    with pytest.raises(ScenarioError, match="per-namespace net"):
        load_scenario({**_path(0.0, 5), "kernel": {"sysctls": {"vm.swappiness": 1}}})


@root_only
def test_window_cap_initcwnd_and_module_params_on_the_kernel():
    """max_cwnd_pkts through the BPF clamp, initial_cwnd_pkts as a route metric, and CUBIC's beta
    as a global module parameter that is restored afterwards."""
    beta_file = Path("/sys/module/tcp_cubic/parameters/beta")
    before = beta_file.read_text()
    sc = {**_path(0.0, 6), "flows": [{"cc": "cubic", "max_cwnd_pkts": 20, "initial_cwnd_pkts": 4,
                                      "cc_params": {"beta": 0.8}}]}
    r = run_kernel(sc)
    assert beta_file.read_text() == before
    assert r.summary["global_knobs"] == {"tcp_cubic": {"beta": 819}}
    assert r.summary["cwnd_clamp"]["applied_pkts"] == [20]
    cw = r.flows["cwnd_pkts"]
    assert cw.iloc[0] == 4  # the first sample precedes the first ACK (100 ms RTT)
    assert cw.max() == 20 and (cw == 20).mean() > 0.8
    # Window-limited: 20 packets per 100 ms round trip, as the simulator with the same cap.
    g = r.summary["flows"][0]["goodput_bps"]
    s = cclab.simulate(sc).summary["flows"][0]["goodput_bps"]
    assert g == pytest.approx(20 * 1448 * 8 / 0.1, rel=0.12)
    assert abs(g - s) / s < 0.05, (g, s)
    left = {c.name: (c / "cgroup.procs").read_text().split() for c in clamp.cgroup2_root().glob("cclab-*")}
    assert not left, f"cgroups left (name: pids in them): {left}"


@root_only
def test_module_beta_sets_the_reduction_on_the_kernel():
    beta_file = Path("/sys/module/tcp_cubic/parameters/beta")
    before = beta_file.read_text()
    ratios = {}
    for beta in (0.7, 0.85):
        # 3e-3: enough losses in 20 s (~1 per second) at windows well above 20 packets.
        sc = {**_path(3e-3, 20), "flows": [{"cc": "cubic", "cc_params": {"beta": beta}}]}
        f = run_kernel(sc).flows
        st = f["ca_state"].astype(str).to_numpy()
        cw, ss = f["cwnd_pkts"].to_numpy(), f["ssthresh_pkts"].to_numpy(dtype=float, na_value=np.nan)
        r = [ss[i] / cw[i - 1] for i in range(1, len(st))
             if st[i] == "recovery" and st[i - 1] == "open" and cw[i - 1] >= 20]
        assert len(r) >= 5, (beta, r)
        ratios[beta] = float(np.median(r))
    assert beta_file.read_text() == before
    assert ratios[0.7] == pytest.approx(0.7, abs=0.03)
    assert ratios[0.85] == pytest.approx(0.85, abs=0.03)


@root_only
def test_an_outage_gives_the_simulators_timeouts_at_the_same_time():
    """The emulator's time zero is the flows' (cclab-link `start`), so a scheduled outage hits
    both backends at the same moment: same RTO count (tcpi_total_rto), and on both the first RTO
    fires after the last ACK (within one RTT, 100 ms, of the outage), a tail loss probe (2 srtt)
    and one RTO: measured 3.70 s in the simulator, 3.70-3.85 s on the kernel."""
    sc = {**_path(0.0, 8), "bottleneck": {"rate_bps": "20Mbps", "delay_ms": 50, "queue_pkts": 200,
                                          "outages": [{"start_s": 3, "duration_s": 2}]}}
    k = run_kernel(sc)
    s = cclab.simulate(sc)
    assert k.summary["flows"][0]["rto_count"] == s.summary["flows"][0]["rto_count"] >= 1
    for r in (s, k):
        before = r.flows[r.flows["t_s"] < 3.0].iloc[-1]
        rto_s, srtt_s = before["rto_ms"] / 1000, before["srtt_ms"] / 1000
        t_rto = r.events[r.events["kind"] == "rto"]["t_s"].min()
        assert 3.0 + rto_s <= t_rto <= 3.1 + 2 * srtt_s + rto_s + 0.2, (r.summary["backend"], t_rto, rto_s, srtt_s)
    lk = k.links[k.links["link"] == "bottleneck.fwd"]
    during = lk[(lk["t_s"] > 3.1) & (lk["t_s"] < 4.9)]["tx_bytes"]
    assert during.max() == during.min()  # nothing crosses the link during the outage


@root_only
def test_two_senders_with_access_links_share_the_bottleneck():
    sc = {"name": "multi", "duration_s": 6, "sim": {"trace": "interval", "trace_interval_ms": 10},
          "bottleneck": {"rate_bps": "20Mbps", "delay_ms": 20, "queue_pkts": 200},
          "senders": [{"name": "a", "access": {"rate_bps": "100Mbps", "delay_ms": 5}},
                      {"name": "b", "access": {"rate_bps": "100Mbps", "delay_ms": 30}}],
          "receivers": [{"name": "x"}, {"name": "y"}],
          "flows": [{"cc": "cubic", "sender": "a", "receiver": "x"},
                    {"cc": "bbr", "sender": "b", "receiver": "y", "start_s": 1}]}
    r = run_kernel(sc)
    g = [f["goodput_bps"] for f in r.summary["flows"]]
    assert all(x > 2e6 for x in g) and sum(g) > 0.8 * 20e6 * 1448 / 1500
    rtt = r.flows.groupby("flow", observed=True)["min_rtt_ms"].min()
    # flow1 starts into flow0's standing queue (up to 120 ms), so only its floor is exact.
    assert rtt["flow0"] == pytest.approx(50, abs=1.5) and 98.5 < rtt["flow1"] < 100 + 125
    assert r.flows[r.flows["flow"] == "flow1"]["t_s"].min() >= 1.0
    tx = r.links.groupby("link", observed=True)["tx_bytes"].max()
    # Both access links feed the bottleneck (which drops or still queues the difference).
    assert tx["a.access.fwd"] > 0 and tx["b.access.fwd"] > 0
    assert tx["bottleneck.fwd"] <= tx["a.access.fwd"] + tx["b.access.fwd"]


@root_only
@pytest.mark.skipif(not object_path().is_file(), reason="cclab_cubic not built (make bpf: clang, bpftool)")
def test_ios_like_cubic_runs_on_the_kernel_as_cclab_cubic():
    """cubic-ios (C 0.25, beta 0.8) through the BPF congestion control: the S0 estimator reads
    the paper's constants back from the kernel's cwnd, as from the simulator's."""
    from cclab.infer import estimate_cubic

    sc = {**_path(0.0, 45), "bottleneck": {"rate_bps": "20Mbps", "delay_ms": 100, "queue_pkts": 300},
          "flows": [{"cc": "cubic-ios"}]}
    r = run_kernel(sc)
    assert r.summary["tcp_congestion"] == {"flow0": BPF_CUBIC}
    assert r.summary["global_knobs"] == {"cclab_cubic": {"bic_scale": 26, "beta": 819}}
    assert BPF_CUBIC not in available()  # unregistered after the run
    e = estimate_cubic(r)
    assert e.c.value == pytest.approx(26 * 10 / 1024, rel=0.10)
    assert e.beta.value == pytest.approx(819 / 1024, abs=0.02)


def test_parity_refuses_stretch_acks():
    problems = parity(load_scenario({**_path(0.0, 5), "flows": [{"cc": "cubic", "ack_every_pkts": 8}]}))
    assert len(problems) == 1, problems
    assert problems[0].startswith("flows[0].ack_every_pkts = 8: the receiver ACKs as Linux"), problems
