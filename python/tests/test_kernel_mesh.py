"""The S4 mesh chain on the real kernel (root for the runs): the chain's end hosts are namespaces,
its relays routers inside cclab-link, which runs the chain model (cclab_net::mesh) in real time;
kernel CUBIC and UDP (cclab.kernel.udp) through it against the simulator on the same scenario
and seed (issue 17 part 6, docs/kernel.md "The S4 mesh chain")."""

from __future__ import annotations

import os
import shutil

import pytest

import cclab
from cclab.kernel import netns
from cclab.kernel.backend import parity, run_kernel
from cclab.kernel.topology import flow_paths, plan_network
from cclab.scenario import load_scenario
from cclab.study.s4_scenarios import s4_scenario

root_only = pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists("/dev/net/tun") or shutil.which("ip") is None,
    reason="needs root, TUN and iproute2",
)

#: Above the one-hop capacity (39.06 Mbit/s of 1472-byte payloads, docs/mesh.md).
UDP_RATE_BPS = 60e6


def test_the_chain_is_two_namespaces_and_relays_inside_cclab_link():
    """Only n0 and the far end carry flows: they are the namespaces; the relays and the idle
    nodes are ports of the medium with no host interface (routers in cclab-link), and the flow's
    route crosses the medium hop by hop as the simulator's does."""
    sc = load_scenario(s4_scenario(3, duration_s=5))
    assert parity(sc) == []
    net = plan_network(sc.lowered())
    assert sorted(net.hosts) == ["n0", "n3"]
    (medium,) = net.media
    assert medium["kind"] == "mesh"
    assert [p is not None for p in medium["ports"]] == [True, False, False, True, False]
    fwd = next(r for r in net.routes if r["from"] == net.flows[0][0].port)
    assert [(h["from"], h["to"]) for h in fwd["links"]] == [(0, 1), (1, 2), (2, 3)]
    # The kernel's summary names the path as the simulator's does (the study's MAC columns read it).
    paths = flow_paths(sc.lowered())
    assert paths["bulk"]["fwd"] == ["mesh:n0>n1", "mesh:n1>n2", "mesh:n2>n3"]
    assert paths == cclab.simulate(sc, duration_s=0.5).summary["paths"]


@pytest.mark.parametrize("cc", ["bbr2", "bbr3"])
def test_the_kernel_refuses_bbrv2_and_says_why(cc):
    problems = parity(load_scenario(s4_scenario(2, cc=cc, duration_s=5)))
    assert len(problems) == 1
    assert f"flows[0].cc = '{cc}'" in problems[0] and "upstream Linux" in problems[0] and "cc = 'bbr'" in problems[0]


@root_only
@pytest.mark.parametrize("hops,kind", [(1, "cubic"), (3, "cubic"), (1, "udp"), (3, "udp")])
def test_kernel_goodput_over_the_chain_is_the_simulators(hops, kind):
    """Goodput within 10 % of the simulator's, same scenario and seed, 15 s (before the 1000-packet
    relay queue first overflows under CUBIC, 16-18 s in at 2-3 hops; docs/kernel.md has the 30 s
    figures per hop count). UDP at 60 Mbit/s, above the chain's capacity: the same datagrams sent,
    the chain's capacity received, the rest lost at n0's full queue."""
    udp = kind == "udp"
    d = s4_scenario(hops, cc="cubic", duration_s=15, udp_rate_bps=UDP_RATE_BPS if udp else None)
    s = cclab.simulate(d).summary
    k = run_kernel(d).summary
    fs, fk = s["flows"][0], k["flows"][0]
    assert fk["goodput_bps"] == pytest.approx(fs["goodput_bps"], rel=0.10), (fk, fs)
    # The chain ran as the model: n0 sent on the medium, every hop's station too, and cclab-link kept
    # up (the median release within 1 ms of its model time).
    lanes = {lane["name"]: lane for lane in k["links"]["links"]}
    for node in range(hops + (0 if udp else 1)):
        assert lanes[f"mesh.n{node}"]["mac"]["successes"] > 0
    assert k["links"]["lateness"]["p50_us"] < 1000
    if udp:
        us, uk = fs["udp"], fk["udp"]
        assert abs(uk["sent_pkts"] - us["sent_pkts"]) <= 2, (uk, us)
        assert uk["loss"] == pytest.approx(us["loss"], abs=0.05)
        assert lanes["mesh.n0"]["dropped_queue_full_pkts"] > 0
        assert lanes[f"mesh.n{hops}"]["mac"]["attempts"] == 0  # the receiver sends nothing back
        # Only n0's queue overflows: every relay forwards each frame it got (cclab-link stops after
        # the receiver's 2 s of in-flight counting, so the relays' queues have drained by then).
        for node in range(1, hops):
            assert lanes[f"mesh.n{node}"]["mac"]["successes"] == lanes["mesh.n0"]["mac"]["successes"]
            assert lanes[f"mesh.n{node}"]["dropped_queue_full_pkts"] == 0
    else:
        assert fk["rto_count"] == 0
    assert not [n for n in netns.list_namespaces() if n.startswith(netns.PREFIX)]
