"""Workloads: a flow's connections one after another (docs/scenario.md "Workloads")."""

import tomllib

import pytest

from cclab.scenario import ScenarioError, load_scenario
from cclab.sim import simulate

from .conftest import needs_core


def load_scenario_text(text: str):
    return load_scenario(tomllib.loads(text))

WEB = """
name = "web"
duration_s = 60
[bottleneck]
rate_bps = "1Mbps"
delay_ms = 50
[[flows]]
name = "web"
size_bytes = 30000
[flows.workload]
connections = 5
think_time_s = 0.5
"""


@needs_core
def test_connections_are_listed_and_summed():
    res = simulate(load_scenario_text(WEB))
    st = res.summary["flows"][0]
    conns = st["connections"]
    assert [c["conn"] for c in conns] == [0, 1, 2, 3, 4]
    assert all(c["delivered_bytes"] == 30000 for c in conns)
    assert st["delivered_bytes"] == 150000
    assert st["completion_s"] == pytest.approx(conns[-1]["completion_s"])
    for a, b in zip(conns, conns[1:]):
        assert b["start_s"] == pytest.approx(a["completion_s"] + 0.5)
    kinds = res.events["kind"].tolist()
    assert kinds.count("conn_start") == 5


@pytest.mark.parametrize("patch, field", [
    ('[flows.workload]\nconnections = 0', "connections"),
    ('[flows.workload]\nconnections = 2\nsizes = "mail"', "sizes"),
    ('[flows.workload]\nconnections = 2\nsizes = [{min_bytes = 10, max_bytes = 5, share = 1}]', "max_bytes"),
])
def test_bad_workloads_name_the_field(patch, field):
    text = WEB.split("[flows.workload]")[0] + patch
    with pytest.raises(ScenarioError) as e:
        load_scenario_text(text)
    assert "workload" in str(e.value) and field in str(e.value)


def test_several_connections_need_a_size():
    text = WEB.replace("size_bytes = 30000\n", "")
    with pytest.raises(ScenarioError, match="need a size"):
        load_scenario_text(text)
