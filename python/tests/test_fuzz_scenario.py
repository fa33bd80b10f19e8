"""Fuzzed scenarios (issue 18, part 2): random mutations of small valid scenarios, as dicts and as
TOML text, either run or raise ScenarioError naming fields of the scenario as written; never
another exception, a panic or a hang, and what load_scenario accepts, simulate runs.

Deterministic (derandomize=True) and sized for CI; bench/fuzz.py runs the same strategies for
10^5 cases. Below them, one regression test per finding the fuzzer made."""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from cclab import simulate
from cclab.scenario import ScenarioError, load_scenario

from . import fuzzing as fz
from .conftest import needs_core

TRACE_DIR = Path(tempfile.mkdtemp(prefix="cclab-fuzz-"))
atexit.register(shutil.rmtree, TRACE_DIR, ignore_errors=True)
for _name, _content in fz.TRACE_FILES.items():
    (TRACE_DIR / _name).write_bytes(_content)

def ci(n: int) -> settings:
    """Deterministic settings for ``n`` cases."""
    return settings(max_examples=n, derandomize=True, database=None, deadline=None,
                    suppress_health_check=list(HealthCheck))


@needs_core
@ci(450)
@given(fz.scenario_dicts(TRACE_DIR, max_flows=50))
def test_scenario_dicts_run_or_name_their_fields(case):
    outcome, detail = fz.judge_scenario(case, case)
    assert outcome in fz.GOOD, detail


@needs_core
@ci(200)
@given(fz.toml_texts())
def test_scenario_files_run_or_name_their_fields(tmp_path_factory, text):
    p = tmp_path_factory.mktemp("toml") / "s.toml"
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    outcome, detail = fz.judge_scenario(p, fz.toml_data(text), duration_s=0.1)
    assert outcome in fz.GOOD, detail


def problems(data, **kw):
    with pytest.raises(ScenarioError) as e:
        load_scenario(data, **kw)
    return dict(e.value.problems)


def base(**flow):
    return {"duration_s": 0.2, "bottleneck": {"rate_bps": "10Mbps", "delay_ms": 5}, "flows": [flow or {}]}


# -- Regressions: one per finding ------------------------------------------------------------------
@needs_core
@pytest.mark.parametrize(("name", "needle"), [
    ("empty.csv", "no delivery opportunit"), ("text.csv", "is not a whole number of milliseconds"),
    ("columns.csv", "is not a whole number of milliseconds"), ("decreasing.csv", "must not decrease"),
    ("binary.csv", "is not text"), ("utf16.csv", "is not text"),
])
def test_a_bad_capacity_trace_is_refused_by_load_not_by_simulate(name, needle):
    d = base()
    d["bottleneck"] = {"capacity_trace": str(TRACE_DIR / name)}
    p = problems(d)
    assert needle in p["bottleneck.capacity_trace"]
    d["bottleneck"]["capacity_trace"] = str(TRACE_DIR / "good.trace")
    simulate(d)


def test_a_scenario_file_not_in_utf8_is_named(tmp_path):
    f = tmp_path / "s.toml"
    f.write_bytes('duration_s = 1\n[bottleneck]\nrate_bps = "1Mbps"\n[[flows]]\n'.encode("utf-16"))
    assert "is not UTF-8" in problems(f)["scenario"]


@pytest.mark.parametrize("field", ["duration_s", "bottleneck.delay_ms", "flows[0].start_s", "flows[0].rto_min_ms"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_numbers_are_refused_by_every_float_field(field, value):
    p = problems(base(), **{field: value})
    assert field in p


@needs_core
def test_non_finite_numbers_in_fields_without_bounds():
    d = {"duration_s": 0.2, "nodes": [{"name": "a"}, {"name": "b"}],
         "media": [{"name": "m", "kind": "mesh", "nodes": ["a", "b"], "tx_power_dbm": float("inf")}],
         "flows": [{"sender": "a", "receiver": "b"}]}
    assert "finite" in problems(d)["media[0].tx_power_dbm"]


def test_duration_has_an_upper_bound():
    for v in (1e300, 2**64, "1e12s"):
        assert "1000000" in problems(base(), duration_s=v)["duration_s"]
    load_scenario(base(), duration_s=1e6)


@pytest.mark.parametrize(("rate", "ok"), [(0.4, False), (1.5, False), (999.5, False), (1, True), (1000.5, True),
                                          ("1.5kbps", True), ("2000Gbps", False), (1e12, True), (5.4e15, False)])
def test_rates_below_one_kbps_are_not_rounded(rate, ok):
    if ok:
        load_scenario(base(), **{"bottleneck.rate_bps": rate})
    else:
        msg = problems(base(), **{"bottleneck.rate_bps": rate})["bottleneck.rate_bps"]
        assert "is not accepted" in msg and any(w in msg for w in ("at least 1 bit/s", "whole number", "at most 1e+12"))


@needs_core
def test_validate_names_every_bad_field_including_the_algorithm():
    p = problems(base(cc="CUBIC"), duration_s=-1)
    assert set(p) == {"duration_s", "flows[0].cc"}
    assert "unknown congestion control 'CUBIC'" in p["flows[0].cc"] and "cubic" in p["flows[0].cc"]


def test_a_bad_cc_param_value_is_named_once():
    p = problems(base(cc_params={"beta": [1]}))
    assert list(p) == ["flows[0].cc_params"] and "'beta' = [1] is not accepted" in p["flows[0].cc_params"]


@needs_core
@pytest.mark.parametrize(("field", "value", "path"), [
    ("bottleneck.queue_pkts", 2**32, "bottleneck.queue_pkts"),
    ("bottleneck.reverse", {"queue_pkts": 2**40}, "bottleneck.reverse.queue_pkts"),
    ("flows[0].size_bytes", 2**64, "flows[0].size_bytes"),
    ("seed", 2**63 - 1, None),
])
def test_numbers_beyond_the_cores_types_name_the_field(field, value, path):
    if path is None:
        load_scenario(base(), **{field: value})
        return
    p = problems(base(), **{field: value})
    assert path in p and "is not accepted: a whole number from 0 to" in p[path], p
    assert not any(s in p[path] for s in ("line 1", "column", "u32", "u64", "fwd"))


def test_unknown_keys_do_not_list_internal_ones():
    p = problems({**base(), "bogus": 1})
    assert "duration_s" in p["bogus"] and "base_dir" not in p["bogus"]


@needs_core
def test_core_paths_are_mapped_to_the_scenarios():
    from cclab.scenario import core_problem

    class E(Exception):
        def __init__(self, field):
            self.field, self.message = field, "m"

    assert core_problem(E("bottleneck.fwd.queue_pkts"))[0] == "bottleneck.queue_pkts"
    assert core_problem(E("links[2].rev.loss_model"))[0] == "links[2].reverse.loss_model"
    assert core_problem(E("senders[0].access.rev"))[0] == "senders[0].access.reverse"
    assert core_problem(E("media[1].spec.cw_min"))[0] == "media[1].cw_min"
    assert core_problem(E("bottleneck.fwd.capacity_trace_text"))[0] == "bottleneck.capacity_trace"


@needs_core
def test_simulate_turns_a_core_config_error_into_a_scenario_error(monkeypatch):
    from cclab import _core

    sc = load_scenario(base())
    raw = json.loads(sc.to_core_json())
    raw["bottleneck"]["fwd"]["queue_pkts"] = 0
    monkeypatch.setattr(type(sc), "to_core_json", lambda self: json.dumps(raw))
    with pytest.raises(ScenarioError) as e:
        simulate(sc)
    assert e.value.problems[0][0] == "bottleneck.queue_pkts"
    assert issubclass(_core.ConfigError, ValueError)


@needs_core
def test_many_flows():
    d = base()
    d["flows"] = [{"name": f"f{i}", "cc": ("cubic", "reno", "bbr")[i % 3]} for i in range(1000)]
    r = simulate(d, duration_s=0.05)
    assert len(r.summary["flows"]) == 1000


@needs_core
def test_the_cores_checks_report_every_flows_problem_not_only_the_first():
    d = base()
    d["flows"] = [{"cc": "cubic", "cc_params": {"beta": 5}}, {"cc": "reno", "cc_params": {"nope": 1}}, {}]
    p = problems(d)
    assert set(p) == {"flows[0].cc_params.beta", "flows[1].cc_params.nope"}, p


def test_cli_validate_goes_on_past_an_unreadable_file_and_names_every_field(tmp_path):
    import subprocess
    import sys

    binary = tmp_path / "binary.toml"
    binary.write_bytes(bytes(range(256)))
    two = tmp_path / "two.toml"
    two.write_text('duration_s = -1\n[bottleneck]\nrate_bps = "1Mbps"\n[[flows]]\ncc = "CUBIC"\n')
    good = tmp_path / "good.toml"
    good.write_text('duration_s = 1\n[bottleneck]\nrate_bps = "1Mbps"\n[[flows]]\n')
    r = subprocess.run([sys.executable, "-m", "cclab", "validate", str(binary), str(two), str(good)],
                       capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    err = " ".join(r.stderr.split())
    assert "scenario: not a TOML file: byte 0x80" in err
    assert "duration_s: -1 is not accepted" in err and "flows[0].cc: unknown congestion control 'CUBIC'" in err
    assert f"{good}: ok" in " ".join(r.stdout.split())


@pytest.mark.parametrize("value", [b"64Mbps", {1, 2}, 3j, object()])
def test_a_value_no_scenario_file_can_hold_is_named(value):
    d = base()
    d["bottleneck"]["rate_bps"] = value
    d["flows"][0]["cc_params"] = {1: 2}
    p = problems(d)
    assert "is not accepted: a value of type" in p["bottleneck.rate_bps"]
    assert "keys are strings" in p["flows[0].cc_params"]


@needs_core
def test_a_round_trip_that_takes_no_time_is_refused():
    # Before: accepted, and the simulator sent and acknowledged forever at t = 0 until the
    # process ran out of memory.
    d = {"duration_s": 0.2, "nodes": [{"name": "a"}, {"name": "b"}],
         "links": [{"endpoints": ["a", "b"], "loss": 0.01}], "flows": [{"sender": "a", "receiver": "b"}]}
    assert "round trip takes no time" in problems(d)["flows[0]"]
    d["links"][0]["reverse"] = {"delay_ms": "1us"}
    load_scenario(d)
    d["links"][0]["reverse"] = {}
    d["flows"][0] = {"sender": "a", "receiver": "b", "transport": "udp", "rate_bps": "1Mbps"}
    simulate(d)  # a UDP stream keeps its own clock


@needs_core
def test_a_udp_stream_faster_than_one_tbps_is_refused():
    # Before: 5.4 Pbit/s was accepted and sent a datagram every nanosecond, for ever in effect.
    d = base()
    d["flows"] = [{"transport": "udp", "rate_bps": 5.4e15}]
    assert "at most 1e+12 bit/s" in problems(d)["flows[0].rate_bps"]


@needs_core
def test_a_run_past_its_budget_is_a_named_error_not_a_hang():
    """bench/fuzz.py's hangs at 10^5 cases were many-flow runs past the watchdog on a loaded
    machine: now each run has the core's wall-time budget (sim.max_wall_s = limit_s), and one
    that reaches it, or the case's own sim.max_events, is a clean error naming the field."""
    many = {**base(), "duration_s": 5, "bottleneck": {"rate_bps": "1Gbps", "delay_ms": 5},
            "flows": [{"cc": "cubic", "start_s": i * 1e-3} for i in range(100)]}
    outcome, detail = fz.judge_scenario(many, many, limit_s=0.01)
    assert outcome == "budget" and "sim.max_wall_s: 0.01 s of wall-clock time reached" in detail, detail
    own = {**base(), "sim": {"max_events": 50}}
    outcome, detail = fz.judge_scenario(own, own)
    assert outcome == "budget" and "sim.max_events: 50 events reached" in detail, detail
    assert "budget" in fz.GOOD


@pytest.mark.parametrize("name", ["\ud800", "a\x00b"])
def test_a_capacity_trace_name_no_file_system_takes_is_named(name):
    """bench/fuzz.py at 2*10^4 cases: a lone surrogate in the path was a UnicodeEncodeError."""
    d = base()
    d["bottleneck"] = {"capacity_trace": name}
    p = problems(d)
    assert "is not a usable file name" in p["bottleneck.capacity_trace"]


def test_the_judge_tells_a_quoted_user_value_from_the_cores_internal_names() -> None:
    """The 10^5-case run flagged "duration_s: 'rev' is not a time" as naming no field: 'rev' was
    the fuzzed value, not the core's name for a reverse link."""
    from .fuzzing import names_a_field

    assert names_a_field("duration_s", "'rev' is not a time; accepted: a number of s", {"duration_s": "rev"})
    assert not names_a_field("bottleneck.rate_bps", "bottleneck.fwd: invalid value", {"bottleneck": {}})
    assert not names_a_field("bottleneck.rev.delay_ms", "must be >= 0", {"bottleneck": {}})
