"""Networks beyond the dumbbell: the general form (nodes, links, routes, paths), its checks, the
one lowering both backends build from, and what flows get on it."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cclab.scenario import ScenarioError, load_scenario

from .conftest import needs_core

pytestmark = needs_core


def two_paths(rate1: str = "10Mbps", rate2: str = "30Mbps") -> dict[str, Any]:
    """One sender and one receiver joined by two disjoint paths, through p1 and through p2."""
    return {
        "name": "two-paths",
        "duration_s": 20,
        "nodes": [{"name": "s"}, {"name": "d"}, {"name": "p1", "kind": "router"}, {"name": "p2", "kind": "router"}],
        "links": [
            {"endpoints": ["s", "p1"], "rate_bps": rate1, "delay_ms": 10, "queue_pkts": 100},
            {"endpoints": ["p1", "d"], "delay_ms": 10},
            {"endpoints": ["s", "p2"], "rate_bps": rate2, "delay_ms": 5, "queue_pkts": 200},
            {"endpoints": ["p2", "d"], "delay_ms": 5},
        ],
        "flows": [
            {"name": "via-p1", "sender": "s", "receiver": "d", "cc": "cubic", "path": ["s", "p1", "d"]},
            {"name": "via-p2", "sender": "s", "receiver": "d", "cc": "cubic", "path": ["s", "p2", "d"]},
        ],
    }


def problems(data: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ScenarioError) as e:
        load_scenario(data)
    return dict(e.value.problems)


def test_two_disjoint_paths_each_carry_their_own_capacity():
    from cclab import simulate

    r = simulate(two_paths())
    got = {f["flow"]: f["goodput_bps"] / 1e6 for f in r.summary["flows"]}
    assert got["via-p1"] == pytest.approx(10 * 0.97, rel=0.05), got
    assert got["via-p2"] == pytest.approx(30 * 0.97, rel=0.05), got
    paths = r.summary["paths"]
    assert paths["via-p1"]["fwd"] == ["s-p1.fwd", "p1-d.fwd"]
    assert paths["via-p2"]["rev"] == ["p2-d.rev", "s-p2.rev"]
    assert paths["via-p2"]["fwd_nodes"] == ["s", "p2", "d"]
    # Each path's queue holds only its own flow's packets: p1's link never sees p2's flow.
    tx = {lk["link"]: lk["tx_bytes"] for lk in r.summary["links"]}
    assert tx["s-p1.fwd"] < 0.4 * tx["s-p2.fwd"]


def test_unpinned_flows_follow_the_shortest_path_and_static_routes():
    d = two_paths()
    for f in d["flows"]:
        f.pop("path")
    net = load_scenario(d).lowered()
    names = [link["name"] for link in net["links"]]
    # Both paths have two hops: the tie goes to the link declared first (through p1).
    assert [names[h["element"]] for h in net["flows"][0]["fwd"]] == ["s-p1.fwd", "p1-d.fwd"]
    d["nodes"][0]["routes"] = {"d": "p2"}  # s sends d's packets through p2
    net = load_scenario(d).lowered()
    assert [names[h["element"]] for h in net["flows"][0]["fwd"]] == ["s-p2.fwd", "p2-d.fwd"]
    # The ACKs follow d's routing table: the shortest way back, through p1.
    assert [names[h["element"]] for h in net["flows"][0]["rev"]] == ["p1-d.rev", "s-p1.rev"]
    assert net["flows"][0]["ack_link"] == "p1-d"


@pytest.mark.parametrize(
    "mutate, field, words",
    [
        (lambda d: d["links"][1].update(endpoints=["p1", "nowhere"]), "links[1].endpoints[1]", "not a node"),
        (lambda d: d["nodes"].append({"name": "lonely", "kind": "router"}), "nodes[4]", "dangling"),
        (lambda d: d["flows"][0].update(path=["s", "p1", "p2", "d"]), "flows[0].path[2]", "medium joins"),
        (lambda d: d["flows"][0].update(path=["s", "p1", "s", "d"]), "flows[0].path[2]", "loop"),
        (lambda d: d["flows"][0].update(path=["s", "p1"]), "flows[0].path[1]", "ends at \"d\""),
        (lambda d: d["flows"][0].update(receiver="p1", path=None), "flows[0].receiver", "no receiver named"),
        (lambda d: (d["flows"][0].pop("path"), d["nodes"][2].update(routes={"d": "s"}),
                    d["nodes"][0].update(routes={"d": "p1"})), "flows[0]", "loop"),
        (lambda d: (d["flows"][0].pop("path"), d["flows"][0].update(receiver="z"),
                    d["nodes"].extend([{"name": "z"}, {"name": "q", "kind": "router"}]),
                    d["links"].append({"endpoints": ["q", "z"], "delay_ms": 1})), "flows[0]", "unreachable"),
        (lambda d: d.update(bottleneck={"rate_bps": "1Mbps"}), "nodes", "not both"),
        (lambda d: d.update(senders=[{"name": "s"}]), "senders", "general form"),
    ],
)
def test_bad_topologies_are_named(mutate, field, words):
    d = copy.deepcopy(two_paths())
    mutate(d)
    p = problems(d)
    assert field in p, p
    assert words in p[field], p


def test_validate_names_a_bad_topology_with_exit_code_2(tmp_path: Path):
    bad = tmp_path / "loop.toml"
    bad.write_text(
        'duration_s = 5\n'
        '[[nodes]]\nname = "a"\n[[nodes]]\nname = "b"\n[[nodes]]\nname = "r"\nkind = "router"\n'
        '[[links]]\nendpoints = ["a", "r"]\ndelay_ms = 1\n'
        '[[links]]\nendpoints = ["r", "b"]\ndelay_ms = 1\n'
        '[[flows]]\nsender = "a"\nreceiver = "b"\npath = ["a", "r", "a", "b"]\n')
    out = subprocess.run([sys.executable, "-m", "cclab", "validate", str(bad)], capture_output=True, text=True)
    assert out.returncode == 2, out
    assert "flows[0].path[2]" in out.stdout + out.stderr
    assert "loop" in out.stdout + out.stderr


def test_the_dumbbell_lowers_to_the_general_form():
    d = {"duration_s": 5, "bottleneck": {"rate_bps": "20Mbps", "delay_ms": 10},
         "senders": [{"name": "a", "access": {"delay_ms": 3}}, {"name": "b"}],
         "receivers": [{"name": "x"}], "flows": [{"sender": "a"}, {"sender": "b"}]}
    net = load_scenario(d).lowered()
    assert [n["name"] for n in net["nodes"]] == ["a", "b", "x", "bottleneck.left", "bottleneck.right"]
    # Do-nothing access links are wires with no model: not simulated, no rows in the traces.
    assert [link["name"] for link in net["links"]] == ["bottleneck.fwd", "bottleneck.rev", "a.access.fwd",
                                                       "a.access.rev"]
    assert net["flows"][0]["fwd_nodes"] == ["a", "bottleneck.left", "bottleneck.right", "x"]
    assert [net["links"][h["element"]]["name"] for h in net["flows"][1]["fwd"]] == ["bottleneck.fwd"]
    assert net["links"][3]["field"] == "senders[0].access.reverse"


def test_shipped_scenarios_give_the_reference_traces():
    """data/trace_hashes.json holds hashes of every output table (bench/trace_hashes.py): taken
    before the general form existed, the dumbbells' flows and links tables are unchanged through
    the lowering, the qdisc-capable links and DCTCP (rewritten once, for the renames drop /
    ack_drop and dropped_random_pkts / dropped_queue_full_pkts / dropped_aqm_pkts, after checking
    that undoing the renames gives the old hashes). Any change to TCP or the links that moves a
    trace shows here; the file is then rewritten on purpose."""
    here = Path(__file__).parent
    out = subprocess.run([sys.executable, str(here.parent.parent / "bench" / "trace_hashes.py"), "--check",
                          str(here / "data" / "trace_hashes.json")], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "scenarios bit-identical" in out.stdout and "DIFFERENT" not in out.stdout


def test_parking_lot_with_drop_tail_reno_penalises_the_long_flow():
    """Drop-tail queues and Reno: the long flow, which loses packets at three bottlenecks,
    gets well under its max-min share (5 Mbit/s); each cross flow takes the rest of its link."""
    from cclab import simulate

    r = simulate("parking-lot", duration_s=30)
    g = {f["flow"]: f["goodput_bps"] / 1e6 for f in r.summary["flows"]}
    assert g["long"] < 0.7 * 5, g
    for name, cap in (("cross1", 10), ("cross2", 20), ("cross3", 30)):
        assert g[name] + g["long"] == pytest.approx(cap * 0.96, rel=0.05), g
    assert json.dumps(r.summary["paths"]["long"]["fwd"]).count("b") >= 3


def wlan_cell(n: int, overhead_us: float = 100) -> dict[str, Any]:
    """n stations and an access point on one shared channel, the AP wired to a server."""
    return {
        "name": f"cell-{n}", "duration_s": 30,
        "nodes": [{"name": f"sta{i}"} for i in range(n)] + [{"name": "ap", "kind": "router"}, {"name": "srv"}],
        "media": [{"name": "cell", "nodes": [f"sta{i}" for i in range(n)] + ["ap"], "rate_bps": "20Mbps",
                   "delay_ms": 0.01, "queue_pkts": 100, "overhead_us": overhead_us}],
        "links": [{"endpoints": ["ap", "srv"], "rate_bps": "1Gbps", "delay_ms": 20, "queue_pkts": 1000}],
        "flows": [{"sender": f"sta{i}", "receiver": "srv", "cc": "cubic"} for i in range(n)],
    }


def test_a_shared_channel_is_a_multi_port_medium_on_the_path():
    """Uploads from stations through an AP on one shared channel: the channel's airtime is the
    bottleneck (20 Mbit/s plus 100 us per frame: 1500-byte data frames and the ACKs), each
    port is a lane of the links table, and paths name the crossings."""
    from cclab import simulate

    r = simulate(wlan_cell(2))
    g = [f["goodput_bps"] / 1e6 for f in r.summary["flows"]]
    # Per data frame of 1500 B: 0.6 ms of bits + 0.1 ms; per delayed ACK (every second frame):
    # 0.026 ms + 0.1 ms. Payload 1448 B per 0.763 ms of air: 15.2 Mbit/s.
    assert sum(g) == pytest.approx(15.2, rel=0.03), g
    assert min(g) > 0.45 * sum(g)
    lanes = list(r.links["link"].cat.categories)
    assert lanes == ["ap-srv.fwd", "ap-srv.rev", "cell.sta0", "cell.sta1", "cell.ap"]
    assert r.summary["paths"]["flow0"]["fwd"] == ["cell:sta0>ap", "ap-srv.fwd"]
    assert r.summary["paths"]["flow1"]["rev"] == ["ap-srv.rev", "cell:ap>sta1"]
    by = {lk["link"]: lk for lk in r.summary["links"]}
    assert by["cell.ap"]["tx_bytes"] > 0 and by["cell.sta0"]["tx_bytes"] > 10 * by["cell.ap"]["tx_bytes"]


def test_an_access_point_with_no_more_turns_than_a_station_drops_acks():
    """S1's mechanism in its simplest form: the AP has one turn per round like any station and
    must carry every station's ACKs, so with more stations its queue overflows with ACKs."""
    from cclab import simulate

    drops = {}
    for n in (1, 8):
        r = simulate(wlan_cell(n))
        drops[n] = next(lk for lk in r.summary["links"] if lk["link"] == "cell.ap")["dropped_queue_full_pkts"]
        acks = r.events[r.events["kind"] == "ack_drop"]
        assert len(acks) == drops[n]
    assert drops[1] == 0 and drops[8] > 1000, drops


def test_media_errors_are_named():
    d = wlan_cell(2)
    d["media"][0]["nodes"].append("nowhere")
    assert "media[0].nodes[3]" in problems(d)
    d = wlan_cell(2)
    d["media"][0]["rate_bps"] = 0
    assert "media[0].rate_bps" in problems(d)
    d = wlan_cell(2)
    d["links"].append({"endpoints": ["sta0", "ap"], "delay_ms": 1})
    assert "already joined" in problems(d)["media[0].nodes"]


def dcf_cell(n: int, **cell: Any) -> dict[str, Any]:
    """n stations and an access point in one 802.11g DCF cell, the AP wired to a server."""
    d = wlan_cell(n)
    d["media"] = [{"name": "cell", "kind": "dcf", "nodes": [f"sta{i}" for i in range(n)] + ["ap"], **cell}]
    return d


def test_a_dcf_cell_carries_uploads_and_its_ap_queue_drops_acks():
    """The 802.11 cell on the path: one station gets about what the airtime closed form gives
    TCP on 802.11g (~23 Mbit/s), six share about the same total while the AP's queue, holding
    only ACKs, drops a large part of them (ns-3 3.44 on this setup: 45-56 % at N >= 5, total
    flat at 23-24 Mbit/s)."""
    from cclab import simulate

    one = simulate(dcf_cell(1, queue_pkts=100))
    assert one.summary["flows"][0]["goodput_bps"] / 1e6 == pytest.approx(23, rel=0.08)
    six = simulate(dcf_cell(6, queue_pkts=100, queue_pkts_by_node={"ap": 30}))
    total = sum(f["goodput_bps"] for f in six.summary["flows"]) / 1e6
    assert total == pytest.approx(23, rel=0.12)
    ap = next(lk for lk in six.summary["links"] if lk["link"] == "cell.ap")
    assert ap["dropped_queue_full_pkts"] / (ap["dropped_queue_full_pkts"] + ap["enqueued_pkts"]) > 0.2
    assert six.summary["paths"]["flow5"]["fwd"] == ["cell:sta5>ap", "ap-srv.fwd"]


def test_dcf_rate_adaptation_turns_collisions_into_low_rates():
    """ARF on the cell: one station and the AP rarely collide and stay near 54 Mbit/s; with four
    uploading stations collisions step every sender down and the total collapses, where the
    constant-rate cell holds its total. Off by default: the core spec does not carry it."""
    from cclab import simulate

    def total(n: int, mode: str) -> float:
        d = dcf_cell(n, queue_pkts=100, rate_adaptation=mode)
        d["duration_s"] = 20
        return sum(f["goodput_bps"] for f in simulate(d).summary["flows"]) / 1e6

    assert total(1, "arf") == pytest.approx(total(1, "none"), rel=0.02)
    assert total(4, "arf") < 0.5 * total(4, "none")
    spec = load_scenario(dcf_cell(2)).media[0].core_spec()
    assert not any(k.startswith(("rate_adaptation", "arf_", "aarf_")) for k in spec), spec
    spec = load_scenario(dcf_cell(2, rate_adaptation="aarf", arf_success_threshold=12)).media[0].core_spec()
    assert (spec["rate_adaptation"], spec["arf_success_threshold"]) == ("aarf", 12)
    assert "arf_failure_threshold" not in spec


def test_dcf_errors_are_named():
    assert "media[0].queue_pkts_by_node" in str(problems(dcf_cell(2, queue_pkts_by_node={"nobody": 3})))
    assert "frame_error_rates" in str(problems(dcf_cell(2, frame_error_rates=[0.1])))
    assert "standard" in str(problems(dcf_cell(2, standard="802.11ax")))
    assert "retry_limit" in str(problems(dcf_cell(2, retry_limit=0)))
    assert "media[0].rate_adaptation" in problems(dcf_cell(2, rate_adaptation="minstrel"))
    assert "media[0].arf_failure_threshold" in problems(dcf_cell(2, arf_failure_threshold=0))
    # The core's checks: a top rate outside the standard's set, AARF's bound below its minimum.
    assert "media[0].data_rate_bps" in problems(dcf_cell(2, rate_adaptation="arf", data_rate_bps=50e6))
    assert "media[0].aarf_max_success_threshold" in problems(
        dcf_cell(2, rate_adaptation="aarf", arf_success_threshold=20, aarf_max_success_threshold=15))
    d = wlan_cell(2)
    d["media"][0]["rate_bps"] = 0
    assert "media[0].rate_bps" in str(problems(d))
