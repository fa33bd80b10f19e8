"""The 3G radio link (docs/scenario.md#radio-links): scenario fields, defaults, inheritance by
the reverse direction, field-named errors, and runs on the simulator."""

import pytest

import cclab
from cclab.kernel.topology import plan_network
from cclab.scenario import ScenarioError, load_scenario

from .conftest import needs_core

BASE = {
    "name": "radio",
    "duration_s": 60,
    "bottleneck": {"radio": {"pdu_loss": 0.05, "max_dat": 3}, "queue_pkts": 100},
    "flows": [{"cc": "cubic"}],
}


def with_bottleneck(**fields):
    return {**BASE, "bottleneck": {**BASE["bottleneck"], **fields}}


def test_radio_gives_the_3g_link_and_the_reverse_inherits_field_by_field():
    sc = load_scenario(with_bottleneck(reverse={"radio": {"max_dat": 5}}))
    core = sc.to_core_dict()["bottleneck"]
    fwd, rev = core["fwd"], core["rev"]
    assert (fwd["rate_bps"], rev["rate_bps"]) == (384_000, 64_000)
    assert fwd["delay_ms"] == rev["delay_ms"] == 150.0
    assert fwd["radio"] == {"pdu_loss_model": {"kind": "bernoulli", "p": 0.05}, "max_dat": 3}
    assert rev["radio"] == {"pdu_loss_model": {"kind": "bernoulli", "p": 0.05}, "max_dat": 5}
    # Rates and delay given are kept; a mobility class alone is one line.
    sc = load_scenario(with_bottleneck(radio="car", rate_bps="2Mbps", delay_ms=40))
    core = sc.to_core_dict()["bottleneck"]
    assert core["fwd"]["rate_bps"] == core["rev"]["rate_bps"] == 2_000_000
    assert core["fwd"]["radio"] == core["rev"]["radio"] == {"mobility": "car"}
    # No radio: nothing changes in what the core reads.
    plain = load_scenario({**BASE, "bottleneck": {"rate_bps": "1Mbps"}}).to_core_dict()["bottleneck"]
    assert "radio" not in plain["fwd"] and "radio" not in plain["rev"]


@pytest.mark.parametrize(("fields", "path", "words"), [
    ({"radio": "bike"}, "bottleneck.radio", "static-strong, static-weak, walking, car, express-train"),
    ({"radio": {"max_dat": 0}}, "bottleneck.radio.max_dat", "greater than or equal to 1"),
    ({"radio": {"max_dat": 41}}, "bottleneck.radio.max_dat", "less than or equal to 40"),
    ({"radio": {"pdu_loss": 1.5}}, "bottleneck.radio.pdu_loss", "less than or equal to 1"),
    ({"radio": {"rlc_retx_interval_ms": 0}}, "bottleneck.radio.rlc_retx_interval_ms", "greater than 0"),
    ({"radio": {"pdu_size": 40}}, "bottleneck.radio.pdu_size", "pdu_bytes"),
    ({"radio": {"spike_duration_min_ms": 500, "spike_duration_mean_ms": 100}},
     "bottleneck.radio.spike_duration_mean_ms", "at least spike_duration_min_ms"),
    ({"radio": {"pdu_loss": 0.1, "pdu_loss_model": {"kind": "bernoulli", "p": 0.1}}}, "bottleneck.radio",
     "not both"),
    ({"reverse": {"radio": {"mobility": "car"}}}, "bottleneck.reverse.radio.mobility", "forward direction"),
    ({"reverse": {"radio": {"spike_rate_per_s": 1}}}, "bottleneck.reverse.radio.spike_rate_per_s", "both"),
])
def test_errors_name_the_field(fields, path, words):
    with pytest.raises(ScenarioError) as e:
        load_scenario(with_bottleneck(**fields))
    problems = dict(e.value.problems)
    assert path in problems, e.value.problems
    assert words in problems[path]


def test_radio_on_explicit_links():
    sc = load_scenario({
        "name": "net", "duration_s": 10,
        "nodes": [{"name": "server"}, {"name": "phone"}],
        "links": [{"name": "air", "endpoints": ["server", "phone"], "radio": {"mobility": "walking"}}],
        "flows": [{"cc": "reno"}],
    })
    link = sc.to_core_dict()["links"][0]
    assert (link["fwd"]["rate_bps"], link["rev"]["rate_bps"]) == (384_000, 64_000)


@needs_core
def test_the_emulators_spec_carries_the_radio_on_both_directions():
    sc = load_scenario({
        "name": "net", "duration_s": 10,
        "nodes": [{"name": "server"}, {"name": "phone"}],
        "links": [{"name": "air", "endpoints": ["server", "phone"], "radio": {"mobility": "walking"}}],
        "flows": [{"cc": "reno"}],
    })
    plan = plan_network(sc.lowered())
    radios = {ln["name"]: ln.get("radio") for ln in plan.links}
    assert radios == {"air.fwd": {"mobility": "walking"}, "air.rev": {"mobility": "walking"}}


@needs_core
def test_runs_and_the_links_table_counts_rlc_discards():
    r = cclab.simulate(load_scenario(with_bottleneck(radio={"pdu_loss": 0.05, "max_dat": 2})))
    down = r.summary["links"][0]
    assert down["link"] == "bottleneck.fwd"
    # 1 - (1 - 0.05^2)^36 = 8.6 % of the 1500 B packets are discarded.
    share = down["dropped_rlc_pkts"] / down["enqueued_pkts"]
    assert 0.05 < share < 0.13, down
    last = r.links[r.links["link"] == "bottleneck.fwd"]["drops"].iloc[-1]
    assert 0 < last <= down["dropped_rlc_pkts"]
    assert (r.events[r.events["kind"] == "drop"]["detail"].str.contains("rlc")).any()
    # Without the radio the summary has no RLC counter at all (existing summaries unchanged).
    plain = cclab.simulate(load_scenario({**BASE, "bottleneck": {"rate_bps": "384kbps", "delay_ms": 150}}))
    assert "dropped_rlc_pkts" not in plain.summary["links"][0]


@needs_core
def test_shipped_s3_static_weak_runs():
    sc = load_scenario("s3-static-weak")
    assert sc.bottleneck.radio.mobility == "static-weak"
    r = cclab.simulate("s3-static-weak", duration_s=60)
    f = r.summary["flows"][0]
    assert 250e3 < f["goodput_bps"] < 384e3
    # Many RLC retransmissions at the cell edge: the RTT stays far above its 300 ms floor.
    assert f["mean_srtt_ms"] > 700
