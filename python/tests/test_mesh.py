"""The 802.11s mesh chain medium (``kind = "mesh"``): it loads, its errors name the field, it
runs, and the shipped S4 chains carry a CUBIC flow whose goodput falls with hops."""

from __future__ import annotations

from typing import Any

import pytest

from cclab.scenario import MeshMedium, ScenarioError, load_scenario

from .conftest import needs_core

pytestmark = needs_core


def chain(hops: int, **mesh: Any) -> dict[str, Any]:
    """Five nodes n0..n4 on one mesh chain; a CUBIC flow n0 -> n{hops} along the chain."""
    nodes = []
    for i in range(5):
        routes = {}
        if i < hops:
            routes[f"n{hops}"] = f"n{i + 1}"
        if i > 0:
            routes["n0"] = f"n{i - 1}"
        nodes.append({"name": f"n{i}", "kind": "host" if i in (0, hops) else "router", "routes": routes})
    return {
        "name": f"chain-{hops}",
        "duration_s": 10,
        "nodes": nodes,
        "media": [{"name": "mesh", "kind": "mesh", "nodes": [f"n{i}" for i in range(5)], **mesh}],
        "flows": [{"name": "bulk", "sender": "n0", "receiver": f"n{hops}", "cc": "cubic"}],
    }


def problems(data: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ScenarioError) as e:
        load_scenario(data)
    return dict(e.value.problems)


def test_the_mesh_kind_loads_with_its_defaults_and_lowers_to_the_core_spec():
    sc = load_scenario(chain(2, spacing_m=0.5, ampdu=True, environment="campus"))
    m = sc.media[0]
    assert isinstance(m, MeshMedium)
    assert (m.mcs, m.channel_width_mhz, m.guard_interval_ns, m.band_ghz) == (11, 40, 800, 2.4)
    spec = m.core_spec()
    assert spec["spacing_m"] == 0.5 and spec["ampdu"] is True and spec["environment"] == "campus"
    # Environment values left out stay out, so the core fills them from the preset.
    assert not {"path_loss_exponent", "positions_m", "reference_loss_db"} & set(spec), spec
    core = sc.to_core_dict()["media"][0]
    assert (core["kind"], core["nodes"][0]) == ("mesh", "n0")


def test_mesh_errors_are_named():
    assert "media[0].mcs" in problems(chain(1, mcs=16))
    assert "media[0].channel_width_mhz" in problems(chain(1, channel_width_mhz=80))
    assert "media[0].environment" in problems(chain(1, environment="forest"))
    assert "media[0].band_ghz" in problems(chain(1, band_ghz=6))
    assert "media[0].spacing_m" in problems(chain(1, spacing_m=0))
    assert "positions_m" in str(problems(chain(1, positions_m=[0.0, 1.0])))
    assert "positions_m" in str(problems(chain(1, positions_m=[0.0, 1.0, 1.0, 2.0, 3.0])))
    assert "media[0].ampdu_max_frames" in problems(chain(1, ampdu_max_frames=65))
    assert "media[0].frame_error_rate" in problems(chain(1, frame_error_rate=1.5))
    assert "media[0].unknown_field" in str(problems(chain(1, unknown_field=3)))


def test_cubic_over_the_chain_runs_and_falls_with_hops():
    from cclab import simulate

    got = []
    for hops in (1, 2, 4):
        r = simulate(chain(hops, queue_pkts=1000))
        got.append(r.summary["flows"][0]["goodput_bps"] / 1e6)
    assert 20 < got[0] < 39.8, got
    assert got[0] > got[1] > got[2], got
    assert got[2] == pytest.approx(got[0] / 4, rel=0.35), got


def test_the_s4_scenarios_ship_and_load():
    from cclab.scenario import shipped_scenarios

    shipped = shipped_scenarios()
    for h in (1, 2, 3, 4):
        sc = load_scenario(shipped[f"s4-chain-{h}hop"])
        assert sc.flows[0].receiver == f"n{h}" and sc.media[0].kind == "mesh"
        assert sc.duration_s == 100


def test_a_mesh_run_is_repeatable_bit_for_bit():
    from cclab import simulate

    def run(seed: int):
        r = simulate(load_scenario("s4-chain-2hop", duration_s=3, seed=seed))
        return r.flows, r.links

    (fa, la), (fb, lb) = run(1), run(1)
    assert fa.equals(fb) and la.equals(lb)
    fc, _ = run(2)
    assert not fa.equals(fc)
