"""The socket send buffer (``[host] sndbuf``, ``tcp_wmem_bytes``; crates/cclab-sim/src/tcp/sndbuf.rs):
what the kernel measured on the fidelity grid's ``reno-550ms-deep`` (20 Mbit/s, 550 ms, a queue of
two bandwidth-delay products) is what the simulator now does. With Linux's 4 MiB ``tcp_wmem[2]``
the writer keeps at most 2/3 of it queued, the flight stops near 1800 segments and the queue never
overflows (kernel: 0 retransmissions, at most 1797 in flight, cwnd 3596); with a 32 MiB cap, or
no buffer at all, slow start overflows the queue (kernel with 32 MiB: 2772 retransmissions)."""

from __future__ import annotations

import pytest

import cclab
from cclab.fidelity import grid
from cclab.kernel.backend import parity
from cclab.scenario import ScenarioError, load_scenario

from .conftest import needs_core

pytestmark = needs_core


def _reno_550ms(**host) -> dict:
    case = {c.name: c for c in grid()}["reno-550ms-deep"]
    return {**case.scenario, "duration_s": 25, "seed": 1, "host": host}


def _run(**host):
    r = cclab.simulate(_reno_550ms(**host))
    return r.summary["flows"][0], r.flows


def test_linuxs_send_buffer_caps_the_flight_below_the_queue() -> None:
    f, tr = _run()
    assert f["retrans_pkts"] == 0
    assert 1700 <= tr["inflight_pkts"].max() <= 1850
    # The trace shows why: sk_sndbuf from 2 x 10 x 2304 at connect up to tcp_wmem[2], and the
    # writer keeping about 2/3 of it queued (the kernel's median on this case: 2832560 bytes).
    assert tr["sndbuf_bytes"].iloc[0] == 46080 and tr["sndbuf_bytes"].max() == 4 << 20
    late = tr[tr["t_s"] > 10]
    assert late["wmem_queued_bytes"].median() == pytest.approx(2 / 3 * (4 << 20), rel=0.02)
    # Slow start goes on while cwnd < 2 x the most packets out (tcp_is_cwnd_limited): the
    # kernel's run stops at 3596 with 1797 out.
    assert 3400 <= tr["cwnd_pkts"].max() <= 3700


@pytest.mark.parametrize("host", [{"sndbuf": "unlimited"}, {"tcp_wmem_bytes": [4096, 16384, 33554432]}])
def test_without_the_cap_slow_start_overflows_the_queue(host: dict) -> None:
    f, tr = _run(**host)
    assert f["retrans_pkts"] > 1000
    assert tr["inflight_pkts"].max() > 2700


def test_without_a_send_buffer_its_columns_are_empty() -> None:
    _, tr = _run(sndbuf="unlimited")
    assert tr["sndbuf_bytes"].isna().all() and tr["wmem_queued_bytes"].isna().all()


def test_the_two_ways_without_a_cap_agree() -> None:
    """A buffer that never binds and no buffer send the same data (the writer always keeps
    more than cwnd written ahead)."""
    a, _ = _run(sndbuf="unlimited")
    b, _ = _run(tcp_wmem_bytes=[4096, 16384, 1 << 30])
    assert b["goodput_bps"] == pytest.approx(a["goodput_bps"], rel=0.02)


def test_bad_send_buffer_settings_name_the_field() -> None:
    with pytest.raises(ScenarioError, match=r"host\.tcp_wmem_bytes"):
        load_scenario(_reno_550ms(tcp_wmem_bytes=[16384, 4096, 4194304]))
    with pytest.raises(ScenarioError, match=r"host\.sndbuf"):
        load_scenario(_reno_550ms(sndbuf="huge"))


def test_no_send_buffer_is_simulator_only() -> None:
    problems = parity(load_scenario(_reno_550ms(sndbuf="unlimited")))
    assert any("sndbuf = 'unlimited' is simulator-only" in p for p in problems)
    assert not any("sndbuf" in p for p in parity(load_scenario(_reno_550ms())))


def test_a_blocking_writer_keeps_the_buffer_fuller_than_a_polling_one() -> None:
    """``flows[].writer``: poll() grants a write only at 2/3 full or less, so a poll-driven
    writer holds ~2/3 of sk_sndbuf; blocking sends copy until sk_sndbuf and sleep until 1/3 is
    free, so the buffer swings between 2/3 and full (the recorded kernel traces' sender)."""
    queued = {}
    for writer in ("poll", "blocking"):
        d = _reno_550ms()
        d["flows"] = [{**d["flows"][0], "writer": writer}]
        tr = cclab.simulate(d).flows
        late = tr[tr["t_s"] > 10]
        queued[writer] = late["wmem_queued_bytes"] / late["sndbuf_bytes"]
    assert queued["poll"].max() < 0.70
    assert queued["blocking"].median() > 0.75 and queued["blocking"].max() > 0.95
