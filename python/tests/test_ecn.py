"""ECN from the scenario to the traces: flows[].ecn, links' ecn_threshold_pkts, the ce_marks column,
the "cwr" events and ca_state "cwr"; bad values named; kernel.tcp_ecn replaced by flows[].ecn."""

import pytest

import cclab
from cclab.kernel.knobs import namespace_sysctls
from cclab.scenario import ScenarioError, load_scenario

from .conftest import needs_core


def marking(ecn="on", cc="cubic", k=20, **flow):
    return {
        "name": "ecn",
        "duration_s": 10,
        "bottleneck": {"rate_bps": "20Mbps", "delay_ms": 10, "queue_pkts": 500, "ecn_threshold_pkts": k},
        "flows": [{"cc": cc, "ecn": ecn, **flow}],
    }


def problems(data):
    with pytest.raises(ScenarioError) as e:
        load_scenario(data)
    return dict(e.value.problems)


def test_ecn_fields_reach_the_core_json():
    core = load_scenario(marking()).to_core_dict()
    assert core["flows"][0]["ecn"] == "on"
    assert core["bottleneck"]["fwd"]["ecn_threshold_pkts"] == 20
    assert core["bottleneck"]["rev"]["ecn_threshold_pkts"] is None, "not inherited by the ACK direction"
    plain = load_scenario({"duration_s": 1, "bottleneck": {"rate_bps": "1Mbps"}, "flows": [{}]}).to_core_dict()
    assert plain["flows"][0]["ecn"] == "off" and plain["bottleneck"]["fwd"]["ecn_threshold_pkts"] is None


def test_bad_ecn_values_are_named_with_what_is_accepted():
    p = problems(marking(ecn="yes"))
    assert "'off', 'on' or 'low'" in p["flows[0].ecn"]
    p = problems(marking(k=0))
    assert "greater than or equal to 1" in p["bottleneck.ecn_threshold_pkts"]
    p = problems(marking(k=500))
    assert "below queue_pkts (500)" in p["bottleneck.ecn_threshold_pkts"]


def test_kernel_tcp_ecn_points_to_flows_ecn():
    data = {**marking(), "kernel": {"tcp_ecn": 1}}
    p = problems(data)
    assert 'flows[].ecn = "on"' in p["kernel.tcp_ecn"]
    # flows[].ecn drives the sysctl at both ends on the kernel backend; "off" keeps the default.
    sc = load_scenario(marking())
    f = sc.to_core_dict()["flows"][0]
    assert namespace_sysctls(f, sc.kernel.model_dump(), sender=True)["net/ipv4/tcp_ecn"] == "1"
    assert namespace_sysctls(f, sc.kernel.model_dump(), sender=False)["net/ipv4/tcp_ecn"] == "1"
    off = load_scenario(marking(ecn="off")).to_core_dict()["flows"][0]
    assert "net/ipv4/tcp_ecn" not in namespace_sysctls(off, sc.kernel.model_dump(), sender=True)


@needs_core
@pytest.mark.parametrize("cc", ["reno", "cubic"])
def test_marking_link_gives_cwr_without_loss(cc):
    r = cclab.simulate(marking(cc=cc))
    st = r.summary["flows"][0]
    assert st["retrans_pkts"] == 0 and st["cwr_count"] > 5
    assert (r.flows["ca_state"] == "cwr").any() and not (r.flows["ca_state"] == "recovery").any()
    assert (r.events["kind"] == "cwr").sum() == st["cwr_count"]
    fwd = r.links[r.links["link"] == "bottleneck.fwd"]
    assert fwd["ce_marks"].iloc[-1] > 0 and fwd["ce_marks"].is_monotonic_increasing
    assert fwd[fwd["t_s"] >= 2]["queue_pkts"].max() <= 40, "after slow start the queue stays near K = 20"
    assert st["goodput_bps"] > 0.9 * 20e6 * 1448 / 1500


@needs_core
def test_ecn_off_on_a_marking_link_marks_nothing():
    r = cclab.simulate(marking(ecn="off"))
    assert r.links["ce_marks"].max() == 0 and r.summary["flows"][0]["cwr_count"] == 0
    assert r.summary["flows"][0]["retrans_pkts"] > 0, "drop-tail at 500 packets instead"
