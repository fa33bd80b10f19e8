"""The Multipath TCP flow's scenario form (``transport = "mptcp"``, ``paths``): checked by the
scenario model and by the core's lowering, which gives each subflow its own route."""

from __future__ import annotations

import copy

import pytest

import cclab
from cclab.scenario import ScenarioError

_BASE = {
    "duration_s": 5,
    "nodes": [{"name": "snd"}, {"name": "rcv"}, {"name": "ne1", "kind": "router"}, {"name": "ne2", "kind": "router"}],
    "links": [
        {"endpoints": ["snd", "ne1"], "rate_bps": 20e6, "delay_ms": 10},
        {"endpoints": ["ne1", "rcv"], "delay_ms": 15},
        {"endpoints": ["snd", "ne2"], "rate_bps": 20e6, "delay_ms": 10},
        {"endpoints": ["ne2", "rcv"], "delay_ms": 15},
    ],
    "flows": [{"transport": "mptcp", "cc": "cubic", "paths": [["snd", "ne1", "rcv"], ["snd", "ne2", "rcv"]]}],
}


def _with(**flow: object) -> dict:
    d = copy.deepcopy(_BASE)
    d["flows"][0].update(flow)
    d["flows"][0] = {k: v for k, v in d["flows"][0].items() if v is not None}
    return d


def test_each_subflow_has_its_own_route() -> None:
    lw = cclab.load_scenario(_BASE).lowered()
    f = lw["flows"][0]
    assert [s["fwd_nodes"] for s in f["subflows"]] == [["snd", "ne1", "rcv"], ["snd", "ne2", "rcv"]]
    assert [s["rev_nodes"] for s in f["subflows"]] == [["rcv", "ne1", "snd"], ["rcv", "ne2", "snd"]]
    assert f["fwd_nodes"] == f["subflows"][0]["fwd_nodes"]


@pytest.mark.parametrize(
    ("flow", "field", "words"),
    [
        ({"paths": None}, "flows[0]", "needs paths"),
        ({"transport": "tcp"}, "flows[0]", 'only for transport = "mptcp"'),
        ({"path": ["snd", "ne1", "rcv"]}, "flows[0]", "not for a Multipath TCP flow"),
        ({"paths": [["snd", "ne1", "rcv"], ["snd", "ne1", "rcv"]]}, "flows[0].paths[1]", "the same path as paths[0]"),
        ({"paths": [["snd", "ne9", "rcv"]]}, "flows[0].paths[0][1]", "not a node"),
        ({"paths": [["rcv", "ne1", "snd"]]}, "flows[0].paths[0][0]", "starts at"),
        ({"paths": []}, "flows[0].paths", "at least 1"),
    ],
)
def test_bad_paths_name_the_field(flow: dict, field: str, words: str) -> None:
    with pytest.raises(ScenarioError) as e:
        cclab.load_scenario(_with(**flow))
    assert field in str(e.value) and words in str(e.value)
