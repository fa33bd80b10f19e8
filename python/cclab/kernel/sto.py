"""Spurious-timeout facts of a kernel run, per flow, with the simulator's names (cclab issue 14,
part 4 on the kernel).

Ground truth comes from cclab-link's ledger (crates/cclab-emu/src/ledger.rs): for every
retransmitted data segment it took in, whether an earlier copy had been delivered or was still
inside the link then, and how many data segments the receiver was handed twice. The kernel's own
view comes from tcp_info (tcpi_total_rto, sampled every trace interval) and the namespace's TcpExt
counters (/proc/net/netstat, net/ipv4/proc.c).

- ``rto_count``: tcpi_total_rto (exact; it also counts the SYN's timeouts).
- ``sto_count``: data RTOs that were spurious: an RTO retransmits the head segment (snd_una,
  net/ipv4/tcp_timer.c tcp_retransmit_timer -> tcp_retransmit_skb of the write queue's head);
  it is spurious when that segment's earlier copy was delivered or still in the link. Each RTO
  is found as the sampled interval where tcpi_total_rto grew, and its retransmission as the
  lowest-sequence retransmission the link took in during that interval (an estimate only when
  another retransmission of lower sequence falls in the same interval; ``unmatched`` counts
  RTOs with none). The SYN's timeouts are left out (``syn_rto_count``).
- ``spurious_retrans_pkts``: data segments the receiver was handed twice (exact).
- ``spurious_rto_count``: the sender namespace's TcpExtTCPSpuriousRTOs (F-RTO's detections,
  net/ipv4/tcp_input.c tcp_try_undo_loss); ``undo_count``: TCPLossUndo + TCPFullUndo +
  TCPDSACKUndo + TCPPartialUndo; ``sto_detected``: min(sto_count, TCPLossUndo), the undos of a
  Loss state (by F-RTO, timestamps or D-SACK): an estimate, as the kernel counts undos, not
  which RTO each undid. Namespace counters belong to a flow only when it is the only TCP flow
  its sender sends; otherwise these three are None and ``tcp_counters`` in the summary has the
  namespace's numbers.
"""

from __future__ import annotations

import subprocess
from typing import Any

__all__ = ["read_tcpext", "flow_sto_facts", "TCPEXT_KEPT", "UNDO_COUNTERS"]

UNDO_COUNTERS = ("TCPLossUndo", "TCPFullUndo", "TCPDSACKUndo", "TCPPartialUndo")
#: The TcpExt counters kept in the summary (per namespace).
TCPEXT_KEPT = UNDO_COUNTERS + ("TCPSpuriousRTOs", "TCPTimeouts", "TCPLossProbes", "TCPDSACKOldSent",
                               "TCPDSACKOfoSent", "TCPDSACKRecv", "TCPDSACKOfoRecv", "TCPSackRecoveryFail")
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


def _conn(ledger: list[dict[str, Any]], dst: str, port: int) -> dict[str, Any] | None:
    """The ledger's connection whose data goes to ``dst:port``."""
    want = f">{dst}:{port}"
    got = [c for c in ledger if c["flow"].endswith(want)]
    return got[0] if len(got) == 1 else None


def flow_sto_facts(totals: dict[str, Any], ledger: list[dict[str, Any]], dst: str, port: int,
                   counters: dict[str, int] | None) -> dict[str, Any]:
    """The summary fields of one TCP flow (see the module's doc). ``totals``: the sender's last
    line (``rto_windows``: [[t_prev_s, t_s, total_rto], ...] where tcpi_total_rto grew;
    ``first_total_rto``); ``counters``: its sender namespace's TcpExt, None when shared."""
    c = _conn(ledger, dst, port)
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
    sto = sum(1 for r in rtos if r["spurious"])
    out: dict[str, Any] = {
        "sto_count": sto if c else None,
        "spurious_retrans_pkts": int(c["dup_delivered_pkts"]) if c else None,
        "spurious_rto_count": counters["TCPSpuriousRTOs"] if counters else None,
        "undo_count": sum(counters[k] for k in UNDO_COUNTERS) if counters else None,
        "sto_detected": min(sto, counters["TCPLossUndo"]) if counters and c else None,
    }
    out["sto"] = {
        "syn_rto_count": int(totals.get("first_total_rto", 0)),
        "syn_times_s": [t / 1e9 for t in c["syn_ns"]] if c else [],
        "rtos": rtos,
        "unmatched": sum(1 for r in rtos if r["spurious"] is None),
        "link_retrans_pkts": int(c["retrans_pkts"]) if c else None,
        "unneeded_retrans_pkts": int(c["unneeded_retrans_pkts"]) if c else None,
        "dropped_data_pkts": int(c["dropped_data_pkts"]) if c else None,
    }
    return out
