"""RFC 6356's goals for coupled congestion control, on small networks: a Multipath TCP
connection takes no more than one TCP flow at a shared bottleneck, at least what TCP gets on the
best of its paths, and moves its traffic off the more congested path."""

from __future__ import annotations

import copy
from statistics import mean
from typing import Any, Iterator

import pytest

import cclab

from .conftest import needs_core

pytestmark = needs_core

_RATE, _DELAY = 20e6, 10.0  # bottleneck rate, and each link's delay (RTT 40 ms on two hops)
#: Every flow here starts established at start_s, no SYN exchanged (the model these single 60 s
#: runs were calibrated on). With the handshake the subflows and TCP flows start 40-120 ms apart
#: and the runs lock in differently in their first second: lia's connection then took 10.09
#: against TCP's 9.05 Mbit/s at the shared bottleneck, balia's 11.09 against 8.04. Which start
#: order favours whom is a sensitivity of these runs, not what they test (RFC 6356's goals).
_NO_HANDSHAKE = {"handshake": False}
#: When the TCP flows start against the connection, s. One 60 s run of drop-tail flows locks into
#: a pattern its first second sets, and a few milliseconds move it: with TCP's timers on the timer
#: wheel, lia's connection took 0.60 to 1.18 of the TCP flow at the shared bottleneck over these
#: starts (balia 0.63 to 1.47). RFC 6356's goals are about what a connection gets, not one start,
#: so each test takes the mean over these runs.
_STARTS_S = (0.0, 0.011, 0.023, 0.037, 0.051)


def _link(a: str, b: str, rate: float | None = None, **kw: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"endpoints": [a, b], "delay_ms": _DELAY, **kw}
    if rate:
        d["rate_bps"] = rate
    return d


def _shared(cc: str) -> dict[str, Any]:
    """Two subflows s-x1-b-r and s-x2-b-r, and a Reno flow t-b-r, through one bottleneck b-r."""
    return {
        "duration_s": 60,
        "nodes": [{"name": n} for n in ("s", "t", "r")] + [{"name": n, "kind": "router"} for n in ("x1", "x2", "b")],
        "links": [_link("s", "x1", 1e9), _link("s", "x2", 1e9), _link("x1", "b", 1e9, delay_ms=0.0),
                  _link("x2", "b", 1e9, delay_ms=0.0), _link("t", "b", 1e9), _link("b", "r", _RATE, queue_pkts=100)],
        "flows": [{"name": "mp", "sender": "s", "receiver": "r", "transport": "mptcp", "cc": cc,
                   "paths": [["s", "x1", "b", "r"], ["s", "x2", "b", "r"]], **_NO_HANDSHAKE},
                  {"name": "tcp", "sender": "t", "receiver": "r", "cc": "reno", **_NO_HANDSHAKE}],
    }


def _disjoint(cc: str, initial_on_congested: bool = False) -> dict[str, Any]:
    """Two disjoint bottlenecks (x1-r, x2-r); one Reno flow beside the connection on path 1,
    three on path 2. The connection's initial subflow (subflow 0) takes path 1, or path 2 with
    ``initial_on_congested``."""
    paths = [["s", "x1", "r"], ["s", "x2", "r"]]
    if initial_on_congested:
        paths.reverse()
    flows: list[dict[str, Any]] = [{"name": "mp", "sender": "s", "receiver": "r", "transport": "mptcp", "cc": cc,
                                    "paths": paths, **_NO_HANDSHAKE}]
    flows += [{"name": f"p1_{k}", "sender": "t1", "receiver": "r", "cc": "reno", "path": ["t1", "x1", "r"],
               **_NO_HANDSHAKE} for k in range(1)]
    flows += [{"name": f"p2_{k}", "sender": "t2", "receiver": "r", "cc": "reno", "path": ["t2", "x2", "r"],
               **_NO_HANDSHAKE} for k in range(3)]
    return {
        "duration_s": 60,
        "nodes": [{"name": n} for n in ("s", "t1", "t2", "r")] + [{"name": n, "kind": "router"} for n in ("x1", "x2")],
        "links": [_link("s", "x1", 1e9), _link("s", "x2", 1e9), _link("t1", "x1", 1e9), _link("t2", "x2", 1e9),
                  _link("x1", "r", _RATE, queue_pkts=100), _link("x2", "r", _RATE, queue_pkts=100)],
        "flows": flows,
    }


def _goodputs(d: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Each flow's summary, one run per start of the TCP flows (`_STARTS_S`)."""
    for start_s in _STARTS_S:
        e = copy.deepcopy(d)
        for f in e["flows"]:
            if f.get("transport") != "mptcp":
                f["start_s"] = start_s
        yield {f["flow"]: f for f in cclab.simulate(e).summary["flows"]}


def _shared_share(cc: str, **cc_params: Any) -> list[float]:
    d = _shared(cc)
    d["flows"][0]["cc_params"] = cc_params
    return [g["mp"]["goodput_bps"] / g["tcp"]["goodput_bps"] for g in _goodputs(d)]


#: Since the receivers tune their buffers as Linux does (tcp/rcvbuf.rs, 2026-11-29), balia's
#: connection takes 1.26 of the TCP flow over these starts (1.17 over ten): RFC 6356's goal is
#: missed, the cause not yet found (issue 16). Kept visible as an expected failure.
_BALIA_MISSES = pytest.mark.xfail(reason="balia takes 1.17-1.26 of TCP since receive-buffer autotuning", strict=False)


@pytest.mark.parametrize("cc", ["lia", "olia", pytest.param("balia", marks=_BALIA_MISSES)])
def test_at_a_shared_bottleneck_the_connection_takes_no_more_than_one_tcp_flow(cc: str) -> None:
    share = _shared_share(cc)
    assert mean(share) <= 1.10, f"{cc}: connection / TCP {[round(x, 2) for x in share]}"


def test_uncoupled_subflows_take_more_than_their_share() -> None:
    """The control: uncoupled subflows behave as two TCP flows (about twice the Reno flow)."""
    assert mean(_shared_share("reno")) > 1.5


def _disjoint_run(cc: str, delayed_ack: bool = True, initial_on_congested: bool = False,
                  **cc_params: Any) -> tuple[float, float]:
    """The connection's goodput over the Reno flow's on the less congested path, and its
    subflows' bytes on path 1 over path 2, each the mean over the starts."""
    d = _disjoint(cc, initial_on_congested)
    d["flows"][0]["cc_params"] = cc_params
    for f in d["flows"]:
        f["delayed_ack"] = delayed_ack
    best, split = [], []
    for g in _goodputs(d):
        sub = {s["subflow"]: s["delivered_bytes"] for s in g["mp"]["subflows"]}
        best.append(g["mp"]["goodput_bps"] / g["p1_0"]["goodput_bps"])
        split.append(sub[1] / sub[0] if initial_on_congested else sub[0] / sub[1])
    return mean(best), mean(split)


@pytest.mark.parametrize("cc", ["lia", "olia", "balia"])
def test_over_disjoint_paths_at_least_tcp_on_the_best_path_and_off_the_congested_one(cc: str) -> None:
    """RFC 6356 goals 1 and 3 for the kernel forms, every segment ACKed (see the next tests)."""
    best, split = _disjoint_run(cc, delayed_ack=False)
    assert best >= 0.9, f"{cc}: {best:.2f} of the TCP flow on the better path"
    assert split > 1.5, f"{cc}: path 1 / path 2 bytes {split:.2f}"


@pytest.mark.parametrize("cc", ["lia", "olia", "balia"])
def test_the_kernel_forms_grow_per_ack_so_delayed_acks_cost_them_against_reno(cc: str) -> None:
    """v0.9x counts one step per ACK (snd_cwnd_cnt++), 6.18's Reno the segments an ACK covers:
    with delayed ACKs the coupled connection grows at half the rate it is meant to (measured:
    lia 0.85, olia 0.80, balia 0.75 of TCP, against 1.54, 1.99, 1.69 with every segment ACKed)."""
    every, _ = _disjoint_run(cc, delayed_ack=False)
    delayed, _ = _disjoint_run(cc, delayed_ack=True)
    assert delayed < 0.7 * every, f"{cc}: {delayed:.2f} with delayed ACKs vs {every:.2f}"


@pytest.mark.parametrize("cc", ["lia", "olia", "balia"])
def test_counting_segments_the_kernel_forms_meet_goal_1_with_delayed_acks(cc: str) -> None:
    """``per_segment = true`` takes one of v0.9x's steps per segment an ACK covers, as 6.18's Reno
    counts: goals 1 and 3 with delayed ACKs (measured: lia 1.30, olia 1.52, balia 1.40 of TCP,
    against 0.85, 0.80 and 0.75 per ACK). LIA reaches it here because its initial subflow is on
    the better path (the next test)."""
    per_ack, _ = _disjoint_run(cc, delayed_ack=True)
    best, split = _disjoint_run(cc, delayed_ack=True, per_segment=True)
    assert best >= 0.9 and split > 1.5, f"{cc}: {best:.2f} of TCP on the better path, split {split:.2f}"
    assert best > 1.2 * per_ack, f"{cc}: {best:.2f} per segment vs {per_ack:.2f} per ACK"


def test_counting_segments_at_a_shared_bottleneck_takes_more_than_tcp() -> None:
    """The other side of per-segment counting, with delayed ACKs (docs/mptcp-cc.md): at one
    shared bottleneck the connections then take more than the Reno flow (measured: lia 1.46,
    olia 1.69, balia 1.30; per ACK 0.70, 0.92 and 0.84; the papers' forms, per segment too,
    1.30-1.54)."""
    shares = {cc: mean(_shared_share(cc, per_segment=True)) for cc in ("lia", "olia", "balia")}
    assert all(v > 1.1 for v in shares.values()), shares


@pytest.mark.parametrize("cc", ["lia", "balia"])
def test_the_papers_forms_meet_goal_1_with_delayed_acks(cc: str) -> None:
    """exact = true grows per segment acked, as RFC 6356 and the BALIA paper write it."""
    best, split = _disjoint_run(cc, exact=True)
    assert best >= 0.9 and split > 1.5, f"{cc}: {best:.2f} of TCP on the better path, split {split:.2f}"


def test_lia_s_kernel_form_takes_the_initial_subflow_for_the_best_path_when_windows_are_small() -> None:
    """v0.9x's ``mptcp_ccc_recalc_alpha`` ranks paths by ``(cwnd << 32) / srtt_us^2``: 0 for every
    subflow below srtt_us^2 / 2^32 packets (24 at 40 ms, 121 at 90 ms; here the windows are
    10-60 at 60-110 ms), and a tie goes to the initial subflow (``mptcp_for_each_sk`` walks newest
    first). With the initial subflow on the congested path alpha is that path's, a fraction of
    RFC 6356's, and the connection misses goal 1 (measured, delayed ACKs: 0.42 per segment, 0.35
    per ACK, 0.65 with every segment ACKed; the paper's form 1.05). Ranking the paths exactly (an
    ablation, not a parameter) gave 1.00 per segment and 1.16 with every segment ACKed."""
    kernel, _ = _disjoint_run("lia", initial_on_congested=True, per_segment=True)
    paper, split = _disjoint_run("lia", initial_on_congested=True, exact=True)
    assert kernel < 0.7, f"kernel form {kernel:.2f} of TCP on the better path"
    assert paper >= 0.9 and split > 1.5, f"paper form {paper:.2f} of TCP, split {split:.2f}"
