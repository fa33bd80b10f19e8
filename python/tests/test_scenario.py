import json

import pytest

from cclab.scenario import ScenarioError, load_scenario, shipped_scenarios

from .conftest import needs_core


def base(**flow):
    return {
        "duration_s": 10,
        "bottleneck": {"rate_bps": "10Mbps", "delay_ms": 20, "queue_pkts": 100},
        "flows": [flow or {}],
    }


def problems(data):
    with pytest.raises(ScenarioError) as e:
        load_scenario(data)
    return dict(e.value.problems)


def test_every_shipped_scenario_loads():
    names = shipped_scenarios()
    assert {"s0-25ms", "s0-100ms", "s0-550ms", "s0-25ms-ios", "s0-cwnd-550ms"} <= set(names)
    for name in names:
        load_scenario(name)


def test_defaults_and_units():
    sc = load_scenario(base())
    f = sc.flows[0]
    assert (f.name, f.sender, f.receiver, f.cc, f.mss_bytes) == ("flow0", "sender", "receiver", "cubic", 1448)
    core = sc.to_core_dict()
    fwd, rev = core["bottleneck"]["fwd"], core["bottleneck"]["rev"]
    assert fwd["rate_bps"] == 10_000_000 and fwd["delay_ms"] == 20.0
    assert rev == {**fwd, "loss_model": {"kind": "none"}}, "the ACK direction copies rate, delay, queue"


def test_loss_folds_into_loss_model_and_reverse_overrides():
    d = base()
    d["bottleneck"]["loss"] = 1e-3
    d["bottleneck"]["reverse"] = {"rate_bps": "1Mbps", "loss": 0.01}
    core = load_scenario(d).to_core_dict()["bottleneck"]
    assert core["fwd"]["loss_model"] == {"kind": "bernoulli", "p": 1e-3}
    assert core["rev"]["loss_model"] == {"kind": "bernoulli", "p": 0.01}
    assert core["rev"]["rate_bps"] == 1_000_000 and core["rev"]["delay_ms"] == 20.0


def test_core_json_is_json():
    assert json.loads(load_scenario("s0-25ms").to_core_json())["flows"][0]["max_cwnd_pkts"] == 200


def test_negative_rate():
    d = base()
    d["bottleneck"]["rate_bps"] = "-5Mbps"
    p = problems(d)
    assert "greater than 0" in p["bottleneck.rate_bps"]


@pytest.mark.parametrize("loss", [-0.1, 1.5])
def test_loss_outside_unit_interval(loss):
    d = base()
    d["bottleneck"]["loss"] = loss
    assert "bottleneck.loss" in problems(d)


def test_zero_mss():
    p = problems(base(mss_bytes=0))
    assert "greater than or equal to 64" in p["flows[0].mss_bytes"]


def test_unknown_key_lists_accepted_keys():
    p = problems(base(colour="red"))
    assert "unknown key" in p["flows[0].colour"] and "mss_bytes" in p["flows[0].colour"]


def test_unknown_sender():
    p = problems(base(sender="nobody"))
    assert "no sender named 'nobody'" in p["flows[0].sender"]


def test_both_queue_limits():
    d = base()
    d["bottleneck"]["queue_bytes"] = 10_000
    assert "either queue_pkts or queue_bytes" in problems(d)["bottleneck"]


def test_every_bad_field_is_reported_at_once():
    d = base(mss_bytes=0, start_s=-1)
    d["bottleneck"]["loss"] = 2
    assert {"flows[0].mss_bytes", "flows[0].start_s", "bottleneck.loss"} <= set(problems(d))


def test_bad_unit_string():
    d = base()
    d["duration_s"] = "5 parsecs"
    assert "not a time unit" in problems(d)["duration_s"]


def test_toml_syntax_error_names_the_line(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text("duration_s = 10\n[bottleneck\n")
    with pytest.raises(ScenarioError) as e:
        load_scenario(f)
    assert "line 2" in str(e.value)


def test_overrides_by_dotted_path():
    sc = load_scenario("s0-25ms", **{"bottleneck.loss": 1e-3, "flows[0].cc": "reno", "seed": 9})
    assert sc.bottleneck.loss == 1e-3 and sc.flows[0].cc == "reno" and sc.seed == 9


@needs_core
def test_unknown_algorithm_is_named():
    p = problems(base(cc="tahoe"))
    assert "unknown congestion control" in p["flows[0].cc"] and "cubic" in p["flows[0].cc"]


@needs_core
def test_bad_cc_param_is_named():
    p = problems(base(cc="cubic", cc_params={"beta": 1.5}))
    assert "0 < beta < 1" in p["flows[0].cc_params.beta"]


def test_capacity_trace_is_read_relative_to_the_file(tmp_path):
    (tmp_path / "lte.down").write_text("1\n2\n3\n")
    f = tmp_path / "s.toml"
    f.write_text('duration_s = 1\n[bottleneck]\ncapacity_trace = "lte.down"\n[[flows]]\n')
    core = load_scenario(f).to_core_dict()
    assert core["bottleneck"]["fwd"]["capacity_trace_text"] == "1\n2\n3\n"
    assert core["bottleneck"]["fwd"]["rate_bps"] is None


def test_papercuts_from_trying_odd_values():
    """Issue 18's findings: true for a number, an overflowing quantity, a flow that never starts,
    a 100 kB bad value, and the unit the figures are labelled in."""
    assert load_scenario(base(start_s=0)).bottleneck.rate_bps == 10e6
    assert load_scenario({**base(), "bottleneck": {"rate_bps": "10Mbit/s"}}).bottleneck.rate_bps == 10e6
    p = problems({**base(), "bottleneck": {"rate_bps": "10Mbps", "loss": True}})
    assert p == {"bottleneck.loss": "true is not accepted: a number, not true/false"}
    assert "start_s" in " ".join(problems(base(start_s=True)))
    p = problems({**base(), "bottleneck": {"rate_bps": "1e400Mbps"}})
    assert "finite" in p["bottleneck.rate_bps"]
    p = problems(base(start_s=10))
    assert "not before the run's end" in p["flows[0].start_s"]
    p = problems(base(cc="x" * 100_000))
    assert len(p["flows[0].cc"]) < 400
    p = problems(base(mss_bytes="y" * 100_000))
    assert len(p["flows[0].mss_bytes"]) < 400 and "100002 characters" in p["flows[0].mss_bytes"]
    # Booleans stay booleans where a field takes them.
    assert load_scenario(base(sack=False, cc_params={"fast_convergence": True})).flows[0].sack is False


def test_a_scenario_error_survives_pickling():
    """A process pool sends a worker's ScenarioError back pickled; it must arrive whole."""
    import pickle

    e = ScenarioError([("flows[0].cc", "'x' is not accepted"), ("duration_s", "must be > 0")], "my.toml")
    back = pickle.loads(pickle.dumps(e))
    assert isinstance(back, ScenarioError) and back.problems == e.problems and str(back) == str(e)


@needs_core
def test_tso_defer_is_a_host_switch():
    """``[host] tso_defer`` (tcp_tso_should_defer) is a boolean; anything else names the field.
    On, a lossless bulk flow runs and sends what it sent without it (deferral only moves when
    segments leave)."""
    from cclab.sim import simulate

    assert "host.tso_defer" in problems({**base(), "host": {"tso_defer": "sometimes"}})
    runs = [simulate(load_scenario({**base(), "duration_s": 3, "host": {"tso_defer": on}})) for on in (False, True)]
    sent = [r.summary["flows"][0]["goodput_bps"] for r in runs]
    assert sent[1] == pytest.approx(sent[0], rel=0.05)
