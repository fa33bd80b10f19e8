"""S3's timeout machinery on the real kernel (cclab issue 14, part 8): per-flow initial and
minimum RTO through the BPF sock_ops program, the settings the kernel cannot run (refused or
deviations), and the spurious-timeout facts from cclab-link's ledger and the kernel's counters.
The runs need root, TUN and the built cclab-cwnd-clamp; the planning tests need nothing."""

from __future__ import annotations

import os
import shutil

import pytest

import cclab
from cclab.kernel import clamp
from cclab.kernel.backend import run_kernel
from cclab.kernel.rto import rto_plan, s3_deviations
from cclab.kernel.sto import flow_sto_facts, parse_netstat

root_only = pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists("/dev/net/tun") or shutil.which("ip") is None or not clamp.is_built(),
    reason="needs root, TUN, iproute2 and cclab-cwnd-clamp (cargo build --release -p cclab-bpf)",
)


def _flow(**k: object) -> dict:
    return {"sender": "a", "receiver": "b", "rto_min_ms": 200.0, "rto_initial_ms": 1000.0, "rto_max_ms": 120000.0,
            "timestamps": True, **k}


def test_minimum_rto_is_bpf_up_to_200_ms_and_the_senders_sysctl_above():
    p = rto_plan([_flow(rto_min_ms=4000.0), _flow(), _flow(rto_min_ms=100.0, rto_initial_ms=3000.0)], True, 250)
    assert p.problems == []
    assert p.sysctl_min_ms == {"a": 4000.0}
    # flows[1] keeps 200 ms, which differs from its namespace's 4 s: BPF sets it.
    assert p.bpf == {1: (0.0, 200.0), 2: (3000.0, 100.0)}
    assert [p.how[i]["rto_min"] for i in range(3)] == ["sysctl", "bpf", "bpf"]
    # A default flow needs no BPF at all.
    assert rto_plan([_flow()], True, 250).bpf == {}


def test_what_the_kernel_cannot_set_is_refused_with_the_reason():
    two_above = rto_plan([_flow(rto_min_ms=4000.0), _flow(rto_min_ms=300.0)], True, 250).problems
    assert len(two_above) == 1 and "flows[1].rto_min_ms = 300 differs from flows[0]" in two_above[0]
    assert "TCP_BPF_RTO_MIN" in two_above[0] and "tcp_rto_min_us" in two_above[0]
    no_bpf = rto_plan([_flow(rto_initial_ms=3000.0)], False, 250).problems
    assert len(no_bpf) == 1 and "flows[0].rto_initial_ms = 3000" in no_bpf[0] and "not built" in no_bpf[0]
    mw = rto_plan([_flow(rto_initial_ms=3000.0)], True, 250, {"a"}).problems
    assert "middleware" in mw[0]
    assert "2 jiffies" in rto_plan([_flow(rto_min_ms=5.0)], True, 250).problems[0]
    assert "TCP_RTO_MAX_MS" in rto_plan([_flow(rto_min_ms=200.0, rto_max_ms=500.0)], True, 250).problems[0]
    mixed = rto_plan([_flow(dsack_undo=False), _flow(dsack_undo=True)], True, 250).problems
    assert "flows[1].dsack_undo differs" in mixed[0]


def test_settings_the_kernel_runs_otherwise_are_deviations():
    devs = s3_deviations([_flow(rto_min_mode="rfc6298", eifel_detection=False, sto_response="reno",
                                dsack_undo=False),
                          _flow(eifel_detection=False, timestamps=False), _flow()])
    assert len(devs) == 4 and all(d.startswith("flows[0].") for d in devs)
    assert "srtt + max(4 mdev, rto_min)" in devs[0]
    assert "timestamps = false" in devs[1]
    assert "tcp_dsack = 0" in devs[3]


def test_sto_facts_match_each_rto_to_the_head_retransmission_in_its_interval():
    ledger = [{"flow": "10.0.0.1:40000>10.0.1.1:5201", "dup_delivered_pkts": 3, "retrans_pkts": 5,
               "unneeded_retrans_pkts": 4, "dropped_data_pkts": 1, "syn_ns": [1_000_000],
               "retrans": [[2_005_000_000, 9000, 1448, True], [2_006_000_000, 10448, 1448, True],
                           [2_001_000_000, 7552, 1448, True],  # lowest sequence in the interval: the head
                           [5_003_000_000, 50000, 1448, False]]}]
    totals = {"first_total_rto": 0, "rto_windows": [[1.995, 2.005, 1], [4.995, 5.005, 2], [7.0, 7.01, 3]]}
    tcpext = {**dict.fromkeys(("TCPLossUndo", "TCPFullUndo", "TCPDSACKUndo", "TCPPartialUndo"), 0),
              "TCPSpuriousRTOs": 1, "TCPLossUndo": 1, "TCPDSACKUndo": 1}
    f = flow_sto_facts(totals, ledger, "10.0.1.1", 5201, tcpext)
    assert [r["spurious"] for r in f["sto"]["rtos"]] == [True, False, None]
    assert f["sto"]["rtos"][0]["seq"] == 7552 and f["sto"]["unmatched"] == 1
    assert (f["sto_count"], f["sto_detected"], f["spurious_retrans_pkts"]) == (1, 1, 3)
    assert (f["spurious_rto_count"], f["undo_count"]) == (1, 2)
    shared = flow_sto_facts(totals, ledger, "10.0.1.1", 5201, None)
    assert shared["spurious_rto_count"] is None and shared["sto_detected"] is None and shared["sto_count"] == 1
    assert flow_sto_facts(totals, ledger, "10.0.1.1", 5202, None)["sto_count"] is None


def test_netstat_tcpext_is_read_by_name():
    text = "TcpExt: SyncookiesSent TCPSpuriousRTOs\nTcpExt: 0 7\nIpExt: InNoRoutes\nIpExt: 1\n"
    assert parse_netstat(text) == {"SyncookiesSent": 0, "TCPSpuriousRTOs": 7}


def _base(duration_s: float, **bottleneck: object) -> dict:
    return {"name": "ks3", "duration_s": duration_s, "sim": {"trace": "interval", "trace_interval_ms": 10},
            "bottleneck": {"rate_bps": "10Mbps", "delay_ms": 50, "queue_pkts": 100, **bottleneck},
            "flows": [{"cc": "cubic"}]}


def _wheel_granule_s(delay_s: float, hz: int) -> float:
    """How late a timer_list timer armed ``delay_s`` ahead may fire: the timer wheel rounds its
    expiry up to its level's granule, 8**level jiffies, level n holding delays below 64 * 8**n
    jiffies (kernel/time/timer.c, LVL_CLK_SHIFT 3, LVL_BITS 6: "up to 12.5 % late")."""
    j, lvl = delay_s * hz, 0
    while j >= 64 * 8**lvl:
        lvl += 1
    return 8**lvl / hz


@root_only
@pytest.mark.parametrize("initial_ms", [3000, 1000])
def test_the_initial_rto_times_the_syns_retransmission(initial_ms):
    """An outage holds the first SYN in the link; the kernel sends it again after the initial
    RTO (the sock_ops program's reply, 3 s; the kernel's own 1 s, then 2 s more), as cclab-link
    saw them come in: never early, and late by at most the timer wheel's granule (the RTO timer
    is a timer_list: measured 3.120 s for 3 s, 256 ms granule; 1.008 then 1.024 s for 1 s, 32 ms).
    6.18 does not back off the first SYN timeouts: net.ipv4.tcp_syn_linear_timeouts (default 4)
    SYNs go at the initial RTO each (net/ipv4/tcp_timer.c tcp_retransmit_timer), measured
    0, 1.008, 2.032, 3.056, 4.080 s."""
    hz = clamp.kernel_hz() or 250
    sc = _base(7, outages=[{"start_s": 0, "duration_s": 4.5}])
    sc["flows"] = [{"cc": "cubic", "rto_initial_ms": initial_ms}]
    r = run_kernel(sc)
    f = r.summary["flows"][0]
    syns = f["sto"]["syn_times_s"]
    first = initial_ms / 1000
    assert first - 0.002 <= syns[1] - syns[0] <= first + _wheel_granule_s(first, hz) + 0.005, syns
    if initial_ms == 1000:  # linear, not backed off
        assert first - 0.002 <= syns[2] - syns[1] <= first + _wheel_granule_s(first, hz) + 0.005, syns
    assert f["sto"]["syn_rto_count"] == len(syns) - 1
    how = r.summary["rto_settings"]["how"][f["flow"]]
    assert how["rto_initial"] == ("bpf" if initial_ms != 1000 else "kernel")
    if initial_ms != 1000:
        assert r.summary["rto_settings"]["bpf"]["counts"]["initial_replied"] >= 1


@root_only
def test_minimum_rto_per_flow_by_sysctl_above_200_ms_and_bpf_below():
    """tcpi_rto is srtt + max(4 mdev, rto_min) (tcp_set_rto): about srtt + 4 s for the flow whose
    4 s minimum is its sender's sysctl, srtt + 100 ms for the one BPF gives 100 ms (each within
    6 % + 2 jiffies, medians over the samples after 2 s)."""
    sc = {**_base(6), "senders": [{"name": "a"}, {"name": "b"}],
          "flows": [{"cc": "cubic", "sender": "a", "rto_min_ms": 4000},
                    {"cc": "cubic", "sender": "b", "rto_min_ms": 100, "rto_max_ms": 5000}]}
    r = run_kernel(sc)
    how = r.summary["rto_settings"]["how"]
    names = [f["flow"] for f in r.summary["flows"]]
    assert how[names[0]]["rto_min"] == "sysctl" and how[names[1]]["rto_min"] == "bpf"
    assert how[names[1]]["rto_max"] == "setsockopt"  # TCP_RTO_MAX_MS, accepted by the sender's socket
    for name, rmin in zip(names, (4000, 100)):
        g = r.flows[(r.flows["flow"] == name) & (r.flows["t_s"] > 2)]
        over = (g["rto_ms"] - g["srtt_ms"]).median()
        assert over == pytest.approx(rmin, abs=0.06 * rmin + 8), (name, over)


def _spike(frto: bool, timestamps: bool) -> dict:
    """10 Mbit/s, RTT 100 ms, 100 packets of queue; from 5 s, 0.2 s of packets get 0.9 s more delay."""
    sc = _base(10, delay_spikes=[{"start_s": 5, "duration_s": 0.2, "extra_delay_ms": 900}])
    sc["flows"] = [{"cc": "cubic", "frto": frto, "timestamps": timestamps,
                    # no D-SACK undo either (the kernel: tcp_dsack = 0 at the receiver)
                    **({} if frto or timestamps else {"dsack_undo": False})}]
    return sc


def _sto_rows(r) -> list[str]:
    """The details of a run's ``sto`` events rows, in time order."""
    e = r.events[r.events["kind"] == "sto"].sort_values("t_s")
    return list(e["detail"])


def _facts(detail: str) -> dict[str, str]:
    """A ``sto`` row's facts but its sequence number (which the two backends number alike but
    reach at different times)."""
    return {k: v for k, v in (x.split("=", 1) for x in detail.split()) if k != "seq"}


@root_only
@pytest.mark.parametrize("timestamps", [False, True])
def test_a_delay_spike_gives_one_spurious_rto_that_the_kernel_undoes(timestamps):
    """A 0.9 s delay spike on a steady flow (RTO about 0.39 s): one RTO, fired while the data was
    still in the link, so the ledger calls it spurious, and the receiver gets its retransmission
    twice. With timestamps the kernel undoes it by Eifel detection first (tcp_process_loss tries
    tcp_try_undo_loss(sk, false) before F-RTO: TCPLossUndo, not TCPSpuriousRTOs); without, F-RTO
    proves it spurious (TCPSpuriousRTOs). The simulator does the same: one RTO, the same undo.
    Measured: the kernel's RTO at 5.75-5.76 s, the simulator's at 5.69-5.70 s (the kernel's timer
    is a timer-wheel timer, up to 32 ms late at this RTO)."""
    r = run_kernel(_spike(True, timestamps))
    f = r.summary["flows"][0]
    assert (f["rto_count"], f["sto_count"], f["sto"]["unmatched"]) == (1, 1, 0), f
    assert (f["sto_detected"], f["undo_count"], f["spurious_rto_count"]) == (1, 1, 0 if timestamps else 1), f
    assert f["spurious_retrans_pkts"] >= 1 and f["sto"]["unneeded_retrans_pkts"] >= f["spurious_retrans_pkts"], f
    sim = cclab.simulate(_spike(True, timestamps))
    s = sim.summary["flows"][0]
    assert (s["rto_count"], s["undo_count"], s["spurious_rto_count"]) == (1, 1, f["spurious_rto_count"]), s
    # One sto row each, with the same facts: spurious, detected by the timestamps (or F-RTO),
    # the RTO's one retransmission received twice (measured 1 on both).
    (k_row,), (s_row,) = _sto_rows(r), _sto_rows(sim)
    assert _facts(k_row) == _facts(s_row), (k_row, s_row)
    assert _facts(k_row)["spurious"] == "yes" and _facts(k_row)["detected"] == ("eifel" if timestamps else "frto")
    assert f["sto"]["source"] == "sock_ops log" and f["sto"]["rtos"][0]["undo_t_s"] > f["sto"]["rtos"][0]["t_s"]


@root_only
def test_without_frto_timestamps_or_dsack_the_spurious_rto_goes_undetected():
    """The same spike with F-RTO, timestamps and D-SACKs off: the kernel cannot tell, stays in
    Loss and resends the window go-back-N: every one of those the receiver gets twice (measured
    152-186 segments)."""
    r = run_kernel(_spike(False, False))
    f = r.summary["flows"][0]
    assert (f["rto_count"], f["sto_count"], f["sto"]["unmatched"]) == (1, 1, 0), f
    assert (f["spurious_rto_count"], f["undo_count"], f["sto_detected"]) == (0, 0, 0), f
    assert f["spurious_retrans_pkts"] >= 20, f
    (row,) = _sto_rows(r)
    # As the simulator names it: eifel_detection is on but timestamps are off.
    assert "spurious=yes detected=none" in row and "undetected=timestamps_off" in row, row
    assert int(_facts(row)["unneeded_pkts"]) == f["spurious_retrans_pkts"]
    # The simulator's row has the same facts; how many segments go twice depends on the window
    # at the spike (measured: kernel 152-186, simulator 153).
    (s_row,) = _sto_rows(cclab.simulate(_spike(False, False)))
    drop = lambda d: {k: v for k, v in _facts(d).items() if k != "unneeded_pkts"}  # noqa: E731
    assert drop(row) == drop(s_row), (row, s_row)


@root_only
def test_an_rto_after_real_loss_is_not_spurious():
    """A 10-packet transfer whose first flight, tail-loss probe and first two RTO retransmissions
    the link drops (cclab-link's nth loss, by ingress number, as the simulator's): three RTOs of
    one backed-off run, none spurious (every earlier copy of the head was dropped), as in the
    simulator (measured: kernel 0.62, 1.26, 2.51 s; simulator 0.61, 1.22, 2.43 s)."""
    sc = _base(6, loss_model={"kind": "nth", "pkts": list(range(3, 16))})
    sc["flows"] = [{"cc": "cubic", "size_bytes": 10 * 1448}]
    r = run_kernel(sc)
    sim = cclab.simulate(sc)
    k_rows, s_rows = _sto_rows(r), _sto_rows(sim)
    assert len(k_rows) == len(s_rows) == r.summary["flows"][0]["rto_count"] == 3, (k_rows, s_rows)
    assert all(_facts(x)["spurious"] == "no" and _facts(x)["detected"] == "none" for x in k_rows + s_rows)
    assert r.summary["flows"][0]["sto_count"] == 0 and r.summary["flows"][0]["delivered_bytes"] == 10 * 1448


@root_only
def test_two_flows_of_one_sender_each_get_their_own_sto_facts():
    """The same spike under two flows of one sender: the namespace's counters are no longer
    theirs (spurious_rto_count None), but the log is per socket: each flow has its RTO rows and
    an exact sto_detected."""
    sc = _spike(True, True)
    sc["flows"] = [{"cc": "cubic"}, {"cc": "cubic"}]
    r = run_kernel(sc)
    for f in r.summary["flows"]:
        rows = list(r.events[(r.events["kind"] == "sto") & (r.events["flow"] == f["flow"])]["detail"])
        assert f["spurious_rto_count"] is None and f["sto_detected"] is not None, f
        assert len(rows) == f["rto_count"] >= 1 and f["sto_count"] == sum("spurious=yes" in x for x in rows), rows
        assert f["sto_detected"] == sum("spurious=yes" in x and "detected=eifel" in x for x in rows), rows
