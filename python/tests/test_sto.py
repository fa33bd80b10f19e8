"""Spurious timeouts through the public API and the CLI: the timer profiles and their conflicts,
the W-TCP profile, the STO counters in the summary, the ``sto`` events rows and the sweep row."""

import json

import pandas as pd
import pytest
from click.testing import CliRunner

import cclab
from cclab.cli import cli
from cclab.scenario import ScenarioError, load_scenario
from cclab.study.sweep import _metrics

from .conftest import needs_core


def spike(**flow):
    """A Reno flow held at 40 packets on 2 Mbit/s, 300 ms; at 10 s a 1.2 s delay spike."""
    return {"name": "spike", "duration_s": 20,
            "bottleneck": {"rate_bps": 2e6, "delay_ms": 150, "queue_pkts": 1000,
                           "delay_spikes": [{"start_s": 10, "duration_s": 0.01, "extra_delay_ms": 1200}]},
            "flows": [{"cc": "reno", "max_cwnd_pkts": 40, **flow}]}


def core_flow(**flow):
    return load_scenario(spike(**flow)).to_core_dict()["flows"][0]


@pytest.mark.parametrize("name,init,mn,mode", [("linux", 1000, 200, "linux"), ("standard", 3000, 500, "rfc6298"),
                                                ("proposed", 4000, 4000, "rfc6298")])
def test_rto_profiles_resolve_into_the_core_fields(name, init, mn, mode):
    d = core_flow(rto_profile=name)
    assert (d["rto_initial_ms"], d["rto_min_ms"], d["rto_min_mode"]) == (init, mn, mode)
    assert "rto_profile" not in d  # the core and the kernel backend read the fields


def test_profile_conflicts_name_both_fields():
    with pytest.raises(ScenarioError) as e:
        load_scenario(spike(rto_profile="proposed", rto_min_ms=1000))
    assert 'rto_profile = "proposed"' in str(e.value) and "rto_min_ms = 1000" in str(e.value)
    with pytest.raises(ScenarioError) as e:
        load_scenario(spike(profile="w-tcp", max_cwnd_pkts=64))
    assert 'profile = "w-tcp"' in str(e.value) and "max_cwnd_pkts" in str(e.value)
    # The same value as the profile's is no conflict, so a dumped scenario loads again.
    sc = load_scenario(spike(rto_profile="standard", rto_min_ms=500))
    assert load_scenario(sc.as_run()).flows[0].rto_initial_ms == 3000
    # "custom": the fields as given.
    assert core_flow(rto_profile="custom", rto_min_ms=1000)["rto_min_ms"] == 1000


def test_w_tcp_profile_and_reno_response():
    d = load_scenario({**spike(profile="w-tcp", sto_response="reno"),
                       "flows": [{"cc": "reno", "profile": "w-tcp", "sto_response": "reno"}]}).to_core_dict()["flows"][0]
    assert (d["max_cwnd_pkts"], d["initial_cwnd_pkts"], d["sack"], d["mss_bytes"]) == (44, 3, True, 1460)
    assert d["frto"] is False  # "reno": no detection, go-back-N


@needs_core
def test_spike_is_one_detected_sto_in_the_summary_and_events():
    r = cclab.simulate(spike(timestamps=False))
    st = r.summary["flows"][0]
    assert (st["rto_count"], st["sto_count"], st["sto_detected"]) == (1, 1, 1)
    assert st["spurious_retrans_pkts"] == st["retrans_pkts"] >= 1
    sto = r.events[r.events["kind"] == "sto"]
    assert len(sto) == 1
    assert "spurious=yes detected=frto" in sto["detail"].iloc[0]
    assert sto["t_s"].iloc[0] == r.events[r.events["kind"] == "rto"]["t_s"].iloc[0]
    m = _metrics(r)
    assert (m["sto_count"], m["sto_detected"], m["spurious_retrans_pkts"]) == (1, 1, st["retrans_pkts"])


@needs_core
def test_eifel_response_through_the_api():
    r = cclab.simulate(spike(timestamps=False, sto_response="eifel"))
    ev = r.events[r.events["kind"] == "sto_response"]
    assert len(ev) == 1 and "response=eifel" in ev["detail"].iloc[0]


@needs_core
def test_cli_prints_the_sto_line(tmp_path):
    path = tmp_path / "spike.toml"
    path.write_text("""name = "spike"
duration_s = 20
[bottleneck]
rate_bps = 2e6
delay_ms = 150
queue_pkts = 1000
delay_spikes = [{start_s = 10, duration_s = 0.01, extra_delay_ms = 1200}]
[[flows]]
cc = "reno"
max_cwnd_pkts = 40
""")
    r = CliRunner().invoke(cli, ["run", str(path), "-o", str(tmp_path / "o"), "--set", "flows[0].frto=false",
                                 "--set", "flows[0].timestamps=false", "--set", "flows[0].rto_profile=linux"])
    assert r.exit_code == 0, r.output
    # Neither F-RTO nor timestamps: go-back-N, then every retransmission D-SACKed (RFC 3708).
    assert "1 RTOs, 1 spurious (1 detected)" in r.output
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["flows"][0]["sto_count"] == 1 and s["flows"][0]["spurious_retrans_pkts"] > 10
    ev = pd.read_parquet(tmp_path / "o" / "events.parquet")
    assert "detected=dsack" in ev[ev["kind"] == "sto"]["detail"].iloc[0]


def test_per_window_gains_keep_rttvar_behind_the_w_tcp_queue():
    """flows[].rtt_gains: per sample, RTTVAR is gone within a round trip behind W-TCP's steady
    queue and single RLC retransmissions fire the standard timer; per window (RFC 7323 Appendix
    G) far fewer do. Per window needs RFC 6298's estimator."""
    from cclab.study.s3_scenarios import s3_scenario

    def stos(gains: str) -> int:
        d = s3_scenario("static-weak", size_bytes=2_000_000, connections=4, rto_profile="standard",
                        detection="frto+eifel", duration_s=400.0)
        d["flows"][0]["rtt_gains"] = gains
        d["seed"] = 11
        return sum(c["sto_count"] for c in cclab.simulate(d).summary["flows"][0]["connections"])

    per_sample, per_window = stos("per_sample"), stos("per_window")
    assert per_sample >= 3 and per_window < per_sample / 2, (per_sample, per_window)
    with pytest.raises(ScenarioError, match="rtt_gains"):
        cclab.simulate({"duration_s": 1, "bottleneck": {"rate_bps": "1Mbps", "delay_ms": 10},
                        "flows": [{"cc": "reno", "rtt_gains": "per_window"}]})
