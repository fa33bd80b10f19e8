"""The kernel backend's per-RTO spurious-timeout rows (cclab/kernel/sto_log.py) from a made-up
sock_ops timeout log and cclab-link ledger: what counts as an undo, which RTOs share an episode,
which duplicate arrivals an RTO is charged with. Needs nothing (no root, no kernel)."""

from __future__ import annotations

from cclab.kernel.sto import flow_sto_facts
from cclab.kernel.sto_log import detection_off, kernel_detection, rto_rows, sto_log_of

ISN = 2**32 - 1000  # sequence numbers wrap during the connection
INF = 0x7FFFFFFF


def _ev(kind: str, t_s: float, una: int = 0, nxt: int = 0, cwnd: int = 10, ssthresh: int = INF,
        arg0: int = 0, state: int = 1, cookie: int = 7, rport: int = 5201) -> dict:
    """A log event; ``una``/``nxt`` relative to ISN + 1, t_s since the run's zero (at 100 s)."""
    return {"t_ns": int((100 + t_s) * 1e9), "cookie": cookie, "kind": kind, "local_port": 40000,
            "remote_port": rport, "snd_una": (ISN + 1 + una) % 2**32, "snd_nxt": (ISN + 1 + nxt) % 2**32,
            "snd_cwnd": cwnd, "snd_ssthresh": ssthresh, "arg0": arg0, "arg1": 100, "state": state,
            "packets_out": 0}


def _loss(t_s: float, **k: int) -> dict:
    """The first callback after an RTO: ssthresh as tcp_enter_loss left it (arg0 1)."""
    return _ev("ssthresh", t_s, arg0=1, **k)


def _conn(*events: dict) -> dict:
    return sto_log_of([_ev("established", 0.01), *events], 5201, 100.0)[0]


def _ledger(retrans: list, dups: list) -> dict:
    return {"flow": "10.0.0.1:40000>10.0.1.1:5201", "retrans": retrans, "dups": dups, "syn_ns": [0],
            "retrans_pkts": len(retrans), "unneeded_retrans_pkts": sum(r[3] for r in retrans),
            "dup_delivered_pkts": len(dups), "dropped_data_pkts": 0}


def test_an_undo_restores_ssthresh_to_its_value_before_the_timeout():
    # cwnd 100, ssthresh 60 before the RTO: prior_ssthresh = max(60, 75) = 75; the timeout's 70
    # (cubic), then the undo's 75.
    c = _conn(_ev("rto", 5.0, una=14480, nxt=160000, cwnd=100, ssthresh=60),
              _loss(5.0001, una=14480, nxt=160000, cwnd=1, ssthresh=70),
              _ev("ssthresh", 5.3, una=20000, nxt=170000, cwnd=100, ssthresh=75),
              _ev("recovered", 5.4, una=170000, nxt=180000, ssthresh=75))
    led = _ledger([[int(5.0002e9), 14480, 1448, True]], [[int(5.2e9), 14480]])
    (row,) = rto_rows(c, led, {"timestamps": True, "frto": True})
    assert (row["seq"], row["spurious"], row["detected"], row["unneeded_pkts"]) == (14480, True, "eifel", 1)
    assert row["t_s"] == __import__("pytest").approx(5.0) and row["undo_t_s"] == __import__("pytest").approx(5.3)
    assert row["detail"] == "seq=14480 spurious=yes detected=eifel unneeded_pkts=1 undetected=- frto_abort=-"
    # Without timestamps the same undo is F-RTO's; after the Loss state ended, a D-SACK's.
    assert rto_rows(c, led, {"timestamps": False, "frto": True})[0]["detected"] == "frto"
    late = _conn(_ev("rto", 5.0, una=14480, nxt=160000, cwnd=100, ssthresh=60),
                 _loss(5.0001, cwnd=1, ssthresh=70),
                 _ev("recovered", 5.4, una=170000, ssthresh=70),
                 _ev("ssthresh", 5.6, una=180000, ssthresh=75))
    assert rto_rows(late, led, {"timestamps": True})[0]["detected"] == "dsack"


def test_a_rise_to_another_value_or_a_new_reduction_is_no_undo():
    c = _conn(_ev("rto", 5.0, una=0, nxt=100000, cwnd=100, ssthresh=60),
              _loss(5.0001, cwnd=1, ssthresh=70),
              _ev("ssthresh", 6.0, ssthresh=71),  # not 60 nor 75: e.g. an application-limited raise
              _ev("ssthresh", 7.0, ssthresh=40),  # a fast recovery: the episode's undo state is gone
              _ev("ssthresh", 8.0, ssthresh=75))
    (row,) = rto_rows(c, _ledger([[int(5.0001e9), 0, 1448, True]], []), {"frto": True, "timestamps": False})
    assert (row["spurious"], row["detected"], row["undetected"]) == (True, "none", "other")


def test_backed_off_timeouts_share_the_first_ones_episode_and_one_undo_detects_both():
    c = _conn(_ev("rto", 5.0, una=0, nxt=50000, cwnd=40, ssthresh=INF),
              _loss(5.0001, cwnd=1, ssthresh=28),
              _ev("rto", 5.8, una=0, nxt=50000, cwnd=1, ssthresh=28, arg0=1),
              _ev("ssthresh", 6.5, una=30000, nxt=60000, ssthresh=INF),
              # a later RTO after the undo: a new episode, nothing undoes it
              _ev("rto", 9.0, una=90000, nxt=99000, cwnd=50, ssthresh=INF),
              _loss(9.0001, cwnd=1, ssthresh=35))
    led = _ledger([[int(5.0001e9), 0, 1448, True], [int(5.8001e9), 0, 1448, True], [int(5.9e9), 1448, 1448, True],
                   [int(9.0001e9), 90000, 1448, False]],
                  [[int(5.3e9), 0], [int(6.0e9), 0], [int(6.1e9), 1448], [int(7.0e9), 0]])
    rows = rto_rows(c, led, {"frto": True, "timestamps": True})
    assert [r["detected"] for r in rows] == ["eifel", "eifel", "none"]
    assert [r["backoff"] for r in rows] == [0, 1, 0]
    assert [r["spurious"] for r in rows] == [True, True, False]
    # Each duplicate counts for the RTO whose window holds the latest copy sent before it: the
    # first two for the first RTO (copy at 5.0001 s) and the second (5.8001 s) ...; the one at
    # 7 s too (its latest copy is the second RTO's).
    assert [r["unneeded_pkts"] for r in rows] == [1, 3, 0]
    assert rows[2]["undetected"] == "-"  # not spurious


def test_the_reason_an_undetected_spurious_rto_went_undetected():
    def one(flow: dict, *more: dict, nxt: int = 50000) -> str:
        c = _conn(_ev("rto", 5.0, una=0, nxt=nxt, cwnd=40, ssthresh=INF), _loss(5.0001, ssthresh=28), *more)
        return rto_rows(c, _ledger([[int(5.0001e9), 0, 1448, True]], []), flow)[0]["undetected"]

    off = {"frto": False, "timestamps": False, "dsack_undo": False}
    assert one(off) == "timestamps_off"
    assert one({**off, "eifel_detection": False}) == "detection_off"
    assert one({"frto": True, "size_bytes": 50000}) == "fin"
    assert one({"frto": True, "size_bytes": 0}) == "run_end"  # still in Loss at the end
    assert one({"frto": True}, _ev("recovered", 6.0, una=50000)) == "other"
    # bbr: ssthresh stays infinite, so an undo would not show.
    c = _conn(_ev("rto", 5.0, una=0, nxt=9000, cwnd=40, ssthresh=INF))
    assert rto_rows(c, None, {})[0]["detected"] == "unknown" and rto_rows(c, None, {})[0]["spurious"] is None


def test_syn_timeouts_and_other_ports_are_left_out_and_flows_sharing_a_sender_get_their_own_facts():
    log = [_ev("established", 0.01), _ev("rto", 0.5, state=2),  # SYN_SENT
           _ev("rto", 5.0, una=0, nxt=9000, cwnd=40, ssthresh=INF), _loss(5.0001, ssthresh=28),
           _ev("established", 0.02, cookie=8, rport=5202)]
    assert [len(c["events"]) for c in sto_log_of(log, 5201, 100.0)] == [4]
    f = flow_sto_facts({"first_total_rto": 1}, [_ledger([[int(5.0001e9), 0, 1448, True]], [[int(5.1e9), 0]])],
                       "10.0.1.1", 5201, None, log=sto_log_of(log, 5201, 100.0), flow={"frto": True})
    assert (f["sto_count"], f["sto_detected"], f["spurious_retrans_pkts"]) == (1, 0, 1)
    assert f["spurious_rto_count"] is None and f["sto"]["source"] == "sock_ops log"
    assert [r["detail"].split()[1] for r in f["rows"]] == ["spurious=yes"]
    other = flow_sto_facts({}, [], "10.0.1.1", 5202, None, log=sto_log_of(log, 5202, 100.0), flow={})
    assert (other["sto_count"], other["rows"]) == (0, [])


def test_the_kernels_detection_settings_come_from_both_namespaces_sysctls():
    f = {"frto": True, "timestamps": True, "sack": True, "dsack_undo": True}
    got = kernel_detection(f, {"net/ipv4/tcp_frto": "0", "net/ipv4/tcp_timestamps": "1"},
                           {"net/ipv4/tcp_timestamps": "0", "net/ipv4/tcp_dsack": "0"})
    assert (got["frto"], got["timestamps"], got["sack"], got["dsack_undo"]) == (False, False, True, False)
    assert detection_off(got) == "timestamps_off" and detection_off(f) is None
