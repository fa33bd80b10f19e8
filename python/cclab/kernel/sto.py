"""Spurious-timeout facts of a kernel run, per flow and per RTO, with the simulator's names
(cclab issue 14, part 4 on the kernel).

Two sources, joined per connection:

- cclab-link's ledger (crates/cclab-emu/src/ledger.rs), the ground truth of the link: for every
  retransmitted data segment it took in, whether an earlier copy had been delivered or was still
  inside the link then; every data segment it handed to the receiver a second time.
- the BPF sock_ops program's timeout log (crates/cclab-bpf/bpf/cwnd_clamp.bpf.c, read through
  ``CwndClamp(sto_log=...)``), the kernel's own view, per socket: each RTO
  (BPF_SOCK_OPS_RTO_CB, from net/ipv4/tcp_timer.c tcp_write_timeout() before tcp_enter_loss():
  snd_una, snd_nxt, cwnd and ssthresh before the timeout, icsk_retransmits), each change of
  snd_ssthresh, when snd_una reached the RTO's snd_nxt, the ISN.

Per RTO (``rto_rows``), the simulator's ``sto`` events row (docs/scenario.md, "Retransmission
timeouts"):

- ``seq``: snd_una at the RTO, relative to ISN + 1 (exact).
- ``spurious``: the ledger's record of that segment's retransmission (the first at or after the
  RTO): an earlier copy had been delivered or was still inside the link (exact, but for a copy
  still in the link that the link drops later, which counts as alive here).
- ``detected``: an undo ended the RTO's episode. net/ipv4/tcp_input.c tcp_undo_cwnd_reduction()
  sets ssthresh = max(ssthresh, prior_ssthresh), and tcp_enter_loss() took prior_ssthresh =
  tcp_current_ssthresh() = ssthresh, or max(ssthresh, 3/4 cwnd) (in Open, Disorder or Loss),
  before the timeout: the episode's first RTO's values, which the log has. The episode is undone
  when ssthresh rises to one of those two values before anything lowers it again (a fast
  recovery) or a new episode begins (an RTO with icsk_retransmits 0, or after snd_una passed
  the last one's snd_nxt): exact for algorithms whose ssthresh the timeout lowers (reno, cubic);
  not visible when the timeout leaves ssthresh where the undo puts it (bbr, whose ssthresh stays
  infinite, or a cwnd of 2-3): ``detected=unknown`` when nothing changed.
- which detector: an estimate from the flow's settings and the kernel's order
  (tcp_process_loss tries the timestamps, tcp_try_undo_loss(sk, false), before F-RTO): an undo
  by the ACK that ends the Loss state or earlier is ``eifel`` with timestamps, else ``frto`` with
  F-RTO, else ``dsack``; a later one (tcp_try_undo_dsack) is ``dsack``. The kernel counts which
  (TCPSpuriousRTOs, TCPLossUndo, TCPDSACKUndo) only per namespace.
- ``unneeded_pkts``: data segments the receiver got twice whose latest copy before that arrival
  was retransmitted between this RTO and the next, or the end of its episode (undo, or snd_una
  reached its snd_nxt) (exact up to the sub-ms offset of the two clocks).
- ``undetected`` (a spurious, undetected RTO): ``timestamps_off`` or ``detection_off`` (frto,
  timestamps and D-SACK all off, named as the simulator names it), ``fin`` (F-RTO on but the RTO's snd_nxt was the transfer's end: no new data to send),
  ``run_end`` (still in Loss at the run's end), else ``other`` (the kernel does not say whether
  F-RTO gave up on a duplicate ACK or for lack of window); ``frto_abort`` is ``fin`` in the
  second case, else ``-``.

Per flow:

- ``rto_count``: tcpi_total_rto (exact; it also counts the SYN's timeouts).
- ``sto_count``: the RTOs that were spurious; ``sto_detected``: those detected (from the log,
  exact as above, any number of flows per sender); ``spurious_retrans_pkts``: the spurious RTOs'
  ``unneeded_pkts`` (the simulator's definition).
- ``spurious_rto_count`` (TcpExtTCPSpuriousRTOs: F-RTO's detections) and ``undo_count``
  (TCPLossUndo + TCPFullUndo + TCPDSACKUndo + TCPPartialUndo) are the sender namespace's
  counters (net/ipv4/proc.c): given only when the flow is its sender's only TCP flow, else None
  (``tcp_counters`` in the summary has the namespace's numbers).

Without the log (cclab-cwnd-clamp not built, or an S1 middleware host, whose program owns the
cgroup) the older estimate stands: each RTO is found as the sampled interval where
tcpi_total_rto grew, and its retransmission as the lowest-sequence retransmission the link took
in during that interval; ``sto_detected`` = min(sto_count, TCPLossUndo), only for a sender's
sole flow; no per-RTO rows.
"""

from __future__ import annotations

import subprocess
from typing import Any

from .sto_log import rto_rows, sto_log_of

__all__ = ["read_tcpext", "flow_sto_facts", "rto_rows", "sto_log_of", "TCPEXT_KEPT", "UNDO_COUNTERS"]

UNDO_COUNTERS = ("TCPLossUndo", "TCPFullUndo", "TCPDSACKUndo", "TCPPartialUndo")
#: The TcpExt counters kept in the summary (per namespace).
TCPEXT_KEPT = UNDO_COUNTERS + ("TCPSpuriousRTOs", "TCPTimeouts", "TCPLossProbes", "TCPDSACKOldSent",
                               "TCPDSACKOfoSent", "TCPDSACKRecv", "TCPDSACKOfoRecv", "TCPSackRecoveryFail",
                               # tcp_cubic.c hystart_update(): which HyStart detector ended slow start, at what cwnd
                               "TCPHystartTrainDetect", "TCPHystartTrainCwnd", "TCPHystartDelayDetect",
                               "TCPHystartDelayCwnd")
#: How far (s) a link's record may lie outside the sampled interval (the two clocks share the
#: run's zero to about 0.1 ms; a retransmission reaches the link microseconds after the timer).
_SLACK_S = 0.002


def parse_netstat(text: str) -> dict[str, int]:
    """The TcpExt counters of /proc/net/netstat (pairs of header and value lines)."""
    lines = text.splitlines()
    for head, vals in zip(lines[::2], lines[1::2]):
        if head.startswith("TcpExt:") and vals.startswith("TcpExt:"):
            return {k: int(v) for k, v in zip(head.split()[1:], vals.split()[1:])}
    return {}


def read_tcpext(ns: str) -> dict[str, int]:
    """The kept TcpExt counters of namespace ``ns`` (0 for any this kernel lacks)."""
    out = subprocess.run(["ip", "netns", "exec", ns, "cat", "/proc/net/netstat"], capture_output=True,
                         text=True, check=True).stdout
    got = parse_netstat(out)
    return {k: got.get(k, 0) for k in TCPEXT_KEPT}


def _conn(ledger: list[dict[str, Any]], dst: str, port: int, local_port: int | None = None) -> dict[str, Any] | None:
    """The ledger's connection whose data goes to ``dst:port`` (from ``local_port`` when given)."""
    want = f">{dst}:{port}"
    got = [c for c in ledger if c["flow"].endswith(want)
           and (local_port is None or c["flow"].split(">")[0].endswith(f":{local_port}"))]
    return got[0] if len(got) == 1 else None


def _sampled_rtos(totals: dict[str, Any], c: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The estimate without the log: each RTO found by tcpi_total_rto's growth between samples,
    its retransmission as the lowest-sequence one the link took in then."""
    recs = sorted(c["retrans"], key=lambda r: r[0]) if c else []
    used: set[int] = set()
    rtos = []
    prev = int(totals.get("first_total_rto", 0))
    for t0, t1, total in totals.get("rto_windows", []):
        for _ in range(int(total) - prev):
            cands = [(r[1], r[0], k) for k, r in enumerate(recs)
                     if k not in used and t0 - _SLACK_S <= r[0] / 1e9 <= t1 + _SLACK_S]
            if not cands:
                rtos.append({"t_s": t1, "spurious": None, "seq": None})
                continue
            seq, t_ns, k = min(cands)
            used.add(k)
            rtos.append({"t_s": t_ns / 1e9, "spurious": bool(recs[k][3]), "seq": seq})
        prev = int(total)
    return rtos


def flow_sto_facts(totals: dict[str, Any], ledger: list[dict[str, Any]], dst: str, port: int,
                   counters: dict[str, int] | None, log: list[dict[str, Any]] | None = None,
                   flow: dict[str, Any] | None = None) -> dict[str, Any]:
    """The summary fields of one TCP flow (see the module's doc). ``totals``: the sender's last
    line (``rto_windows``: [[t_prev_s, t_s, total_rto], ...] where tcpi_total_rto grew;
    ``first_total_rto``); ``counters``: its sender namespace's TcpExt, None when shared;
    ``log``: the flow's connections in the sock_ops program's timeout log (``sto_log_of``), None
    when the program did not run for it; ``flow``: the scenario's flow (its detection settings
    and size). With the log, ``rows`` holds the per-RTO ``sto`` events rows (t_s, detail)."""
    c = _conn(ledger, dst, port)
    out: dict[str, Any] = {
        "spurious_rto_count": counters["TCPSpuriousRTOs"] if counters else None,
        "undo_count": sum(counters[k] for k in UNDO_COUNTERS) if counters else None,
    }
    sto: dict[str, Any] = {"syn_rto_count": int(totals.get("first_total_rto", 0)),
                           "syn_times_s": [t / 1e9 for t in c["syn_ns"]] if c else []}
    if log is not None:
        rows = [r for conn in log
                for r in rto_rows(conn, _conn(ledger, dst, port, conn["local_port"]), flow or {})]
        rows.sort(key=lambda r: r["t_s"])
        spur = [r for r in rows if r["spurious"]]
        out.update(sto_count=len(spur), sto_detected=sum(r["detected"] not in ("none", "unknown") for r in spur),
                   spurious_retrans_pkts=sum(r["unneeded_pkts"] for r in spur))
        out["rows"] = [{"t_s": r["t_s"], "detail": r["detail"]} for r in rows]
        sto.update(source="sock_ops log", rtos=[{k: v for k, v in r.items() if k != "detail"} for r in rows],
                   unmatched=sum(1 for r in rows if r["spurious"] is None),
                   detected_unknown=sum(1 for r in spur if r["detected"] == "unknown"))
    else:
        rtos = _sampled_rtos(totals, c)
        n = sum(1 for r in rtos if r["spurious"])
        out.update(sto_count=n if c else None, spurious_retrans_pkts=int(c["dup_delivered_pkts"]) if c else None,
                   sto_detected=min(n, counters["TCPLossUndo"]) if counters and c else None)
        sto.update(source="sampled", rtos=rtos, unmatched=sum(1 for r in rtos if r["spurious"] is None))
    sto.update(link_retrans_pkts=int(c["retrans_pkts"]) if c else None,
               unneeded_retrans_pkts=int(c["unneeded_retrans_pkts"]) if c else None,
               dup_delivered_pkts=int(c["dup_delivered_pkts"]) if c else None,
               dropped_data_pkts=int(c["dropped_data_pkts"]) if c else None)
    out["sto"] = sto
    return out
