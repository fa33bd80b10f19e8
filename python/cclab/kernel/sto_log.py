"""Per-RTO spurious-timeout facts of one kernel connection, from the BPF sock_ops program's
timeout log joined with cclab-link's ledger (what each fact means and how exact it is: sto.py's
doc). The log's events are the loader's JSON lines (crates/cclab-bpf/src/bin/cclab-cwnd-clamp.rs):
``kind`` one of ``established``, ``rto``, ``ssthresh``, ``recovered``, with the
socket's snd_una, snd_nxt, snd_cwnd, snd_ssthresh at that moment."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["sto_log_of", "rto_rows", "detection_off", "kernel_detection"]

#: How far (s) a ledger record may come before the log's event it belongs to (the two clocks
#: share CLOCK_MONOTONIC; the run's zero is known to about 0.1 ms).
SLACK_S = 0.002
_SEQ_MOD = 1 << 32
#: BPF_TCP_SYN_SENT (include/uapi/linux/bpf.h).
_SYN_SENT = 2


def sto_log_of(events: list[dict[str, Any]], port: int, t0_s: float) -> list[dict[str, Any]]:
    """The log's connections to remote ``port``, one per socket cookie in order of their first
    event: ``{"local_port", "events"}``, each event with ``t_s`` in run time (``t0_s`` is the
    run's zero, time.monotonic(); the program's clock is CLOCK_MONOTONIC too)."""
    conns: dict[int, dict[str, Any]] = {}
    for e in events:
        if e["remote_port"] != port:
            continue
        c = conns.setdefault(e["cookie"], {"local_port": e["local_port"], "events": []})
        c["events"].append({**e, "t_s": e["t_ns"] / 1e9 - t0_s})
    for c in conns.values():
        c["events"].sort(key=lambda e: e["t_ns"])
    return list(conns.values())


def kernel_detection(flow: dict[str, Any], sender: dict[str, str], receiver: dict[str, str]) -> dict[str, Any]:
    """``flow`` with the detection settings the kernel ran, from the sysctls set in the sender's
    and the receiver's namespaces (keys relative to /proc/sys, as knobs.py writes them; a
    ``kernel.sysctls`` entry overrides the flow's field): F-RTO is the sender's tcp_frto,
    timestamps and SACK need both ends' tcp_timestamps and tcp_sack, D-SACK the receiver's
    tcp_dsack."""
    def on(ns: dict[str, str], key: str, default: bool) -> bool:
        return ns[key] != "0" if key in ns else default

    both = {k: on(sender, f"net/ipv4/tcp_{k}", flow.get(k, True)) and on(receiver, f"net/ipv4/tcp_{k}", flow.get(k, True))
            for k in ("timestamps", "sack")}
    return {**flow, **both, "frto": on(sender, "net/ipv4/tcp_frto", flow.get("frto", True)),
            "dsack_undo": flow.get("dsack_undo", True) and on(receiver, "net/ipv4/tcp_dsack", True)}


def detection_off(flow: dict[str, Any]) -> str | None:
    """Why no detector can run on the kernel, as the simulator's ``sto_detection_off`` names it,
    None when one can: F-RTO (net.ipv4.tcp_frto), timestamps (the kernel's Eifel detection,
    which only timestamps turn off) and D-SACK (SACK and the receiver's net.ipv4.tcp_dsack) all
    off: ``timestamps_off`` when eifel_detection was asked for, else ``detection_off``."""
    if flow.get("frto", True) or flow.get("timestamps", True) or (flow.get("sack", True) and flow.get("dsack_undo", True)):
        return None
    return "timestamps_off" if flow.get("eifel_detection", True) else "detection_off"


@dataclass
class _Episode:
    """The undo state one RTO took (tcp_enter_loss -> tcp_init_undo) and what became of it."""

    prior: tuple[int, int]  # the values an undo restores ssthresh to
    ssthresh: int  # the last value seen
    high: int  # snd_nxt at its latest RTO (tcp_enter_loss's high_seq), relative
    rtos: list[int] = field(default_factory=list)
    undo_t_s: float | None = None
    recovered_t_s: float | None = None
    closed_t_s: float | None = None  # a reduction or the next episode ended it undetected
    lowest: int = 1 << 32  # the lowest ssthresh seen

    @property
    def unknown(self) -> bool:
        """Not undone as far as the log shows, but ssthresh never went below where an undo
        would put it (bbr: infinite throughout), so an undo would not have shown."""
        return self.undo_t_s is None and self.lowest >= max(self.prior)


def _rel(seq: int, base: int) -> int:
    return (seq - base) % _SEQ_MOD


def _current_ssthresh(ssthresh: int, cwnd: int) -> tuple[int, int]:
    """tcp_current_ssthresh (include/net/tcp.h): ssthresh in CWR or Recovery, else max(ssthresh,
    3/4 cwnd); the log does not say which state the socket was in, so both."""
    return ssthresh, max(ssthresh, (cwnd >> 1) + (cwnd >> 2))


def _episodes(ev: list[dict[str, Any]], base: int) -> tuple[list[dict[str, Any]], list[_Episode]]:
    """The RTOs (data only) in order and the episodes they began."""
    rtos: list[dict[str, Any]] = []
    eps: list[_Episode] = []
    cur: _Episode | None = None
    for e in ev:
        k = e["kind"]
        if k == "rto":
            if e["state"] == _SYN_SENT:
                continue
            una, nxt = _rel(e["snd_una"], base), _rel(e["snd_nxt"], base)
            # tcp_enter_loss takes new undo state unless this is a backed-off timeout of the
            # same Loss state (icsk_retransmits > 0 and snd_una still below high_seq).
            new = (cur is None or cur.undo_t_s is not None or cur.closed_t_s is not None
                   or e["arg0"] == 0 or una >= cur.high)
            if new:
                if cur is not None and cur.undo_t_s is None and cur.closed_t_s is None:
                    cur.closed_t_s = e["t_s"]
                prior = _current_ssthresh(e["snd_ssthresh"], e["snd_cwnd"])
                cur = _Episode(prior=prior, ssthresh=e["snd_ssthresh"], high=nxt, lowest=e["snd_ssthresh"])
                eps.append(cur)
            else:
                assert cur is not None
                cur.high = nxt
            cur.rtos.append(len(rtos))
            rtos.append({"t_s": e["t_s"], "seq": una, "snd_nxt": nxt, "cwnd_pkts": e["snd_cwnd"],
                         "ssthresh_pkts": e["snd_ssthresh"], "backoff": e["arg0"], "episode": len(eps) - 1})
        elif cur is None or cur.undo_t_s is not None or cur.closed_t_s is not None:
            continue
        elif k == "ssthresh":
            v = e["snd_ssthresh"]
            if e["arg0"] == 1:
                pass  # the first callback after an RTO: tcp_enter_loss's value
            elif v > cur.ssthresh and v in cur.prior:
                cur.undo_t_s = e["t_s"]
            elif v < cur.ssthresh:
                cur.closed_t_s = e["t_s"]  # lowered again: a fast recovery took new undo state
            cur.ssthresh, cur.lowest = v, min(cur.lowest, v)
        elif k == "recovered" and cur.recovered_t_s is None:
            cur.recovered_t_s = e["t_s"]
    return rtos, eps


def _detector(ep: _Episode, flow: dict[str, Any]) -> str:
    """Which detector undid the episode (an estimate: sto.py's doc)."""
    assert ep.undo_t_s is not None
    late = ep.recovered_t_s is not None and ep.undo_t_s > ep.recovered_t_s
    if late:
        return "dsack"
    if flow.get("timestamps", True):
        return "eifel"
    return "frto" if flow.get("frto", True) else "dsack"


def rto_rows(conn: dict[str, Any], ledger_conn: dict[str, Any] | None, flow: dict[str, Any]) -> list[dict[str, Any]]:
    """One dict per data RTO of the connection ``conn`` (``sto_log_of``'s), oldest first:
    ``t_s``, ``seq``, ``spurious`` (None without the ledger's record), ``detected`` (``frto``,
    ``eifel``, ``dsack``, ``none`` or ``unknown``), ``unneeded_pkts``, ``undetected``,
    ``frto_abort``, and the log's ``backoff``, ``cwnd_pkts``, ``ssthresh_pkts`` (before the
    timeout), ``undo_t_s``, plus ``detail``, the simulator's ``sto`` row text."""
    ev = conn["events"]
    est = next((e for e in ev if e["kind"] == "established"), None)
    if est is None:
        return []  # the socket's first events were lost: no base for its sequence numbers
    rtos, eps = _episodes(ev, est["snd_una"])
    recs = sorted(ledger_conn["retrans"], key=lambda r: r[0]) if ledger_conn else []
    dups = ledger_conn.get("dups", []) if ledger_conn else []
    # Each RTO's window: from it to the next RTO or the end of its episode.
    ends = []
    for i, r in enumerate(rtos):
        ep = eps[r["episode"]]
        stops = [x for x in (ep.undo_t_s, ep.recovered_t_s, ep.closed_t_s) if x is not None]
        if i + 1 < len(rtos):
            stops.append(rtos[i + 1]["t_s"])
        ends.append(min(stops) if stops else float("inf"))
    # A duplicate arrival counts for the RTO whose window holds the latest retransmission of its
    # segment before it (the ledger's times are run time already).
    by_seq: dict[int, list[float]] = {}
    for t_ns, seq, _len, _alive in recs:
        by_seq.setdefault(seq, []).append(t_ns / 1e9)
    unneeded = [0] * len(rtos)
    for t_ns, seq in dups:
        before = [t for t in by_seq.get(seq, []) if t <= t_ns / 1e9]
        if not before:
            continue
        t = max(before)
        for i, r in enumerate(rtos):
            if r["t_s"] - SLACK_S <= t < ends[i]:
                unneeded[i] += 1
                break
    out = []
    for i, r in enumerate(rtos):
        ep = eps[r["episode"]]
        rec = next((x for x in recs if x[1] == r["seq"] and x[0] / 1e9 >= r["t_s"] - SLACK_S), None)
        spurious = bool(rec[3]) if rec is not None else None
        if ep.undo_t_s is not None:
            detected = _detector(ep, flow)
        else:
            detected = "unknown" if ep.unknown else "none"
        why, abort = "-", "-"
        if spurious and detected == "none":
            fin = flow.get("frto", True) and flow.get("size_bytes", 0) > 0 and r["snd_nxt"] >= flow["size_bytes"]
            off = detection_off(flow)
            if off:
                why = off
            elif fin:
                why = abort = "fin"
            elif ep.recovered_t_s is None and ep.closed_t_s is None:
                why = "run_end"
            else:
                why = "other"
        row = {"t_s": r["t_s"], "seq": r["seq"], "spurious": spurious, "detected": detected,
               "unneeded_pkts": unneeded[i], "undetected": why, "frto_abort": abort, "backoff": r["backoff"],
               "cwnd_pkts": r["cwnd_pkts"], "ssthresh_pkts": r["ssthresh_pkts"], "undo_t_s": ep.undo_t_s}
        yes_no = {True: "yes", False: "no", None: "unknown"}[spurious]
        row["detail"] = (f"seq={r['seq']} spurious={yes_no} detected={detected} unneeded_pkts={unneeded[i]} "
                         f"undetected={why} frto_abort={abort}")
        out.append(row)
    return out
