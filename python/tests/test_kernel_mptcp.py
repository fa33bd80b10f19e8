"""Multipath TCP on the real kernel (upstream Linux 6.18 MPTCP, root): one connection, a subflow
per path, each crossing its own path's links; and the refusals, which need no root."""

from __future__ import annotations

import copy
import os
import shutil
from typing import Any

import pytest

from cclab.kernel import netns
from cclab.kernel.backend import parity, run_kernel
from cclab.kernel.mptcp import coupled_deviations, flow_problems
from cclab.scenario import ScenarioError, load_scenario

root_only = pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists("/dev/net/tun") or shutil.which("ip") is None,
    reason="needs root, TUN and iproute2",
)

_RATE_BPS = 10e6


def disjoint(n: int = 2, duration_s: float = 6) -> dict[str, Any]:
    """A sender and a receiver joined by ``n`` disjoint paths through routers ne1..ne<n>: 10 Mbit/s
    each, RTTs 20, 30, 40 ms (10 + 5k ms each way, split over the path's two links)."""
    nodes = [{"name": "snd"}, {"name": "rcv"}] + [{"name": f"ne{k + 1}", "kind": "router"} for k in range(n)]
    links = []
    for k in range(n):
        one_way = 10 + 5 * k
        links += [{"endpoints": ["snd", f"ne{k + 1}"], "rate_bps": _RATE_BPS, "delay_ms": one_way / 2,
                   "queue_pkts": 100},
                  {"endpoints": [f"ne{k + 1}", "rcv"], "delay_ms": one_way / 2}]
    return {"name": "mptcp-disjoint", "duration_s": duration_s, "nodes": nodes, "links": links,
            "flows": [{"name": "mp", "transport": "mptcp", "cc": "cubic",
                       "paths": [["snd", f"ne{k + 1}", "rcv"] for k in range(n)]}]}


@root_only
@pytest.mark.parametrize("n", [2, 3])
def test_each_subflow_carries_data_over_its_own_path(n: int) -> None:
    r = run_kernel(disjoint(n), duration_s=6)
    f = r.summary["flows"][0]
    subs = f["subflows"]
    assert [s["subflow"] for s in subs] == list(range(n))
    assert [s["path"] for s in subs] == [["snd", f"ne{k + 1}", "rcv"] for k in range(n)]
    assert set(subs[0]) == {"subflow", "path", "delivered_bytes", "goodput_bps", "sent_pkts", "retrans_pkts"}
    assert f["unknown_subflows"] == []
    total = sum(s["delivered_bytes"] for s in subs)
    for s in subs:
        assert s["delivered_bytes"] > 0.5 / n * total, subs  # every path carries a fair part
    # The connection moves more than one path can carry (each path's payload rate ~9.7 Mbit/s).
    assert f["goodput_bps"] > 1.3 * _RATE_BPS * 0.97 if n == 2 else f["goodput_bps"] > 2.2 * _RATE_BPS * 0.97, f
    # Subflow-level acks add up to what the receiving application got (within what was in flight at the end).
    assert total == pytest.approx(f["delivered_bytes"], rel=0.05)
    # Per-link byte counts from cclab-link: path k's links carry subflow k's data (with headers,
    # retransmissions and what was in flight at the end: measured 1.12x), and its ACKs come back
    # on them.
    links = {lk["name"]: lk for lk in r.summary["links"]["links"]}
    for s in subs:
        k = s["subflow"]
        for name in (f"snd-ne{k + 1}.fwd", f"ne{k + 1}-rcv.fwd"):
            assert 1.0 <= links[name]["delivered_bytes"] / s["delivered_bytes"] <= 1.25, (name, links[name], s)
        for name in (f"ne{k + 1}-rcv.rev", f"snd-ne{k + 1}.rev"):
            assert 0 < links[name]["delivered_bytes"] < 0.1 * s["delivered_bytes"], (name, links[name], s)
    # Trace rows for every subflow, from the first second on.
    rows = r.flows.groupby("subflow")["t_s"]
    assert sorted(rows.groups) == list(range(n))
    assert all(c > 100 for c in rows.count())
    assert not [x for x in netns.list_namespaces() if x.startswith(netns.PREFIX)]


def test_coupled_congestion_control_runs_as_reno_with_a_deviation() -> None:
    """LIA, OLIA and BALIA are the simulator's: upstream MPTCP runs uncoupled subflows, so a
    coupled cc runs as Reno on every subflow, recorded as a deviation (no root to check)."""
    d = load_scenario(disjoint()).to_core_dict()
    for cc in ("lia", "olia", "balia"):
        d["flows"][0]["cc"] = cc
        assert flow_problems(d) == []
        dev = coupled_deviations(d)
        assert len(dev) == 1 and dev[0].startswith(f"flows[0].cc = {cc!r} (coupled) runs as uncoupled 'reno'"), dev
    d["flows"][0]["cc"] = "cubic"
    assert coupled_deviations(d) == []


def test_coupled_congestion_control_passes_parity() -> None:
    """The same through the backend's check, once the scenario form knows the coupled algorithms."""
    d = disjoint()
    d["flows"][0]["cc"] = "lia"
    try:
        sc = load_scenario(d)
    except ScenarioError:
        pytest.skip("this build's core does not know cc = 'lia' yet")
    assert parity(sc) == []


def _shared_ends() -> dict[str, Any]:
    """Three paths: two leave the sender by one link and part at router a (ending on different
    receiver links), the third meets the first at router m (ending on the same receiver link)."""
    d = {"name": "mptcp-shared", "duration_s": 5,
         "nodes": [{"name": "snd"}, {"name": "rcv"}] + [{"name": x, "kind": "router"} for x in ("a", "b", "c", "m")],
         "links": [{"endpoints": e, "rate_bps": _RATE_BPS, "delay_ms": 5}
                   for e in (["snd", "a"], ["a", "m"], ["a", "c"], ["c", "rcv"], ["m", "rcv"], ["snd", "b"],
                             ["b", "m"])],
         "flows": [{"name": "mp", "transport": "mptcp", "cc": "cubic",
                    "paths": [["snd", "a", "m", "rcv"], ["snd", "a", "c", "rcv"], ["snd", "b", "m", "rcv"]]}]}
    return d


def test_paths_told_apart_by_addresses_are_accepted() -> None:
    """paths[1] shares the first link but ends on another receiver link (announced); paths[2]
    ends where paths[0] does but starts on another sender link (opened by the sender)."""
    assert parity(load_scenario(_shared_ends())) == []


def test_paths_the_kernel_cannot_tell_apart_are_refused() -> None:
    """Two paths with the same first and last links differ only inside: no address tells their
    subflows apart. Refused naming flows[0].paths[k], before anything is made."""
    d = copy.deepcopy(_shared_ends())
    d["links"].append({"endpoints": ["b", "a"], "rate_bps": _RATE_BPS, "delay_ms": 5})
    d["flows"][0]["paths"].append(["snd", "b", "a", "m", "rcv"])
    problems = parity(load_scenario(d))
    assert len(problems) == 1 and problems[0].startswith("flows[0].paths[3]: ends on rcv's link 'm-rcv' as paths[0]"), \
        problems
    # Also a path ending where an announced one ends.
    d = copy.deepcopy(_shared_ends())
    d["links"].append({"endpoints": ["b", "c"], "rate_bps": _RATE_BPS, "delay_ms": 5})
    d["flows"][0]["paths"].append(["snd", "b", "c", "rcv"])
    problems = parity(load_scenario(d))
    assert len(problems) == 1 and "flows[0].paths[3]: ends on rcv's link 'c-rcv' as paths[1]" in problems[0], problems


def test_mptcp_flows_sharing_hosts_need_the_same_paths() -> None:
    """Several Multipath TCP flows between the same two hosts over the same paths share the
    hosts' endpoints and limits (upstream's limits are per connection): accepted. Other paths, or
    another host at the other end, would need other endpoints: refused naming the field."""
    d = disjoint(3)
    d["flows"].append({**copy.deepcopy(d["flows"][0]), "name": "mp2"})
    assert parity(load_scenario(d)) == []
    d["flows"][1]["paths"] = d["flows"][1]["paths"][::-1]
    problems = parity(load_scenario(d))
    assert len(problems) == 1 and problems[0].startswith("flows[1].paths differs from flows[0].paths"), problems
    d = disjoint(2)
    d["nodes"].append({"name": "rcv2"})
    d["links"].append({"endpoints": ["ne1", "rcv2"], "delay_ms": 5})
    d["links"].append({"endpoints": ["ne2", "rcv2"], "delay_ms": 5})
    d["flows"][0].update(sender="snd", receiver="rcv")
    d["flows"].append({**copy.deepcopy(d["flows"][0]), "name": "mp2", "sender": "snd", "receiver": "rcv2",
                       "paths": [["snd", "ne1", "rcv2"], ["snd", "ne2", "rcv2"]]})
    problems = parity(load_scenario(d))
    assert any(p.startswith("flows[1].sender = 'snd': flows[0] is a Multipath TCP flow on the same sender")
               for p in problems), problems


@root_only
def test_subflows_on_shared_first_and_last_links() -> None:
    """The layout above on the kernel: three subflows, each over its own path (a announced
    address, a sender endpoint), each path's private link carrying only its subflow."""
    r = run_kernel(_shared_ends(), duration_s=5)
    f = r.summary["flows"][0]
    subs = f["subflows"]
    assert f["unknown_subflows"] == []
    assert all(s["delivered_bytes"] > 0.1 * f["delivered_bytes"] for s in subs), subs
    links = {lk["name"]: lk["delivered_bytes"] for lk in r.summary["links"]["links"]}
    # Private links: a-m carries only subflow 0, a-c only subflow 1, snd-b only subflow 2; the
    # shared ones their sum (with headers, retransmissions and what was in flight at the end:
    # 1.0-1.4x; a subflow on another path would give 0 or about 2x).
    for name, ks in (("a-m.fwd", [0]), ("a-c.fwd", [1]), ("c-rcv.fwd", [1]), ("snd-b.fwd", [2]), ("b-m.fwd", [2]),
                     ("snd-a.fwd", [0, 1]), ("m-rcv.fwd", [0, 2])):
        assert 1.0 <= links[name] / sum(subs[k]["delivered_bytes"] for k in ks) <= 1.4, (name, links[name], subs)
    # ACKs return on each path reversed: subflow 1's by c, not by m (the receiver's policy rule).
    assert 0 < links["a-c.rev"] < 0.1 * subs[1]["delivered_bytes"]
    assert not [x for x in netns.list_namespaces() if x.startswith(netns.PREFIX)]
