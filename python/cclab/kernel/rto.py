"""How the kernel backend runs a flow's timeout settings (cclab issue 14, part 8), on Linux 6.18.

- ``rto_initial_ms``: per flow, by the BPF sock_ops program (crates/cclab-bpf, its reply to
  BPF_SOCK_OPS_TIMEOUT_INIT: include/net/tcp.h tcp_timeout_init, in jiffies). It is the SYN's
  RTO (net/ipv4/tcp_output.c tcp_connect_init) and so the data's until the first RTT sample.
  Without the program only the kernel's 1 s runs: another value is refused.
- ``rto_min_ms``: per flow by BPF (bpf_setsockopt TCP_BPF_RTO_MIN) from 2 jiffies up to 200 ms,
  the most net/core/filter.c bpf_sol_tcp_setsockopt takes; above that, or without the program,
  the sender namespace's sysctl net.ipv4.tcp_rto_min_us (net/ipv4/tcp.c tcp_init_sock copies it
  into each new socket): one value per sender, so flows of one sender needing it must agree.
  The kernel's RTO is srtt + max(4 mdev, rto_min) (net/ipv4/tcp_input.c tcp_set_rto,
  include/net/tcp.h __tcp_set_rto): ``rto_min_mode = "linux"``.
- ``rto_max_ms``: per socket with setsockopt(TCP_RTO_MAX_MS) (net/ipv4/tcp.c
  do_tcp_setsockopt: 1 s to 120 s), set by the sender before connecting.
- ``frto``: net.ipv4.tcp_frto of the sender's namespace; ``timestamps``: net.ipv4.tcp_timestamps.
- ``dsack_undo = false``: net.ipv4.tcp_dsack = 0 in the receiver's namespace (the receiver sends
  no D-SACK, so the sender has none to undo by), a deviation: see ``s3_deviations``.

What the kernel cannot do is either refused (``RtoPlan.problems``) or run as the nearest thing
and said so (``s3_deviations``): docs/design.md "Timeouts on the kernel" says which and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .knobs import is_udp

__all__ = ["RtoPlan", "rto_plan", "s3_deviations", "RTO_MAX_RANGE_MS", "BPF_RTO_MIN_MAX_MS", "KERNEL_RTO_INITIAL_MS"]

#: TCP_TIMEOUT_INIT (include/net/tcp.h): the initial RTO without BPF.
KERNEL_RTO_INITIAL_MS = 1000.0
#: TCP_RTO_MIN: the largest minimum RTO TCP_BPF_RTO_MIN takes, and the kernel's default.
BPF_RTO_MIN_MAX_MS = 200.0
#: What setsockopt(TCP_RTO_MAX_MS) takes (1 s .. TCP_RTO_MAX, 120 s).
RTO_MAX_RANGE_MS = (1000.0, 120_000.0)


@dataclass
class RtoPlan:
    """Per TCP flow index: what the BPF program sets, (initial_ms, min_ms), 0 = the kernel's;
    per sender host: tcp_rto_min_us in ms; per flow: how each setting runs; what cannot run."""

    bpf: dict[int, tuple[float, float]] = field(default_factory=dict)
    sysctl_min_ms: dict[str, float] = field(default_factory=dict)
    how: dict[int, dict[str, str]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def rto_plan(flows: list[dict[str, Any]], bpf_built: bool, hz: int | None,
             no_bpf_hosts: set[str] = frozenset()) -> RtoPlan:  # type: ignore[assignment]
    """Plan the RTO settings of ``flows`` (a normalised scenario's). ``bpf_built``: the sock_ops
    loader (cclab-cwnd-clamp) exists; ``hz``: the kernel's CONFIG_HZ; ``no_bpf_hosts``: senders
    whose cgroup another program owns (the S1 middleware's)."""
    plan = RtoPlan()
    owner: dict[str, int] = {}
    by_bpf_if_needed: list[int] = []  # minimum within what BPF takes: the sysctl's, else BPF
    jiffy_ms = 1000.0 / hz if hz else None
    for i, f in enumerate(flows):
        if is_udp(f):
            continue
        where, host = f"flows[{i}]", f["sender"]
        bpf_ok = bpf_built and host not in no_bpf_hosts
        why_not = ("the sender runs the S1 middleware, whose program owns its cgroup" if host in no_bpf_hosts
                   else "the BPF sock_ops loader cclab-cwnd-clamp is not built (cargo build --release -p cclab-bpf)")
        initial, rmin = float(f.get("rto_initial_ms", KERNEL_RTO_INITIAL_MS)), float(f["rto_min_ms"])
        how = {"rto_initial": "kernel", "rto_min": "sysctl"}
        want_initial = 0.0
        if initial != KERNEL_RTO_INITIAL_MS:
            if not bpf_ok:
                plan.problems.append(f"{where}.rto_initial_ms = {initial:g}: on the kernel an initial RTO other than "
                                     f"1 s is set by BPF (BPF_SOCK_OPS_TIMEOUT_INIT), and {why_not}; use the simulator "
                                     "backend or rto_initial_ms = 1000")
            elif jiffy_ms is None:
                plan.problems.append(f"{where}.rto_initial_ms = {initial:g}: the kernel takes it in jiffies and its "
                                     "CONFIG_HZ is unknown (no /proc/config.gz nor /boot/config-<release>)")
            else:
                want_initial, how["rto_initial"] = initial, "bpf"
        if jiffy_ms is not None and rmin < 2 * jiffy_ms:
            plan.problems.append(f"{where}.rto_min_ms = {rmin:g}: below the kernel's shortest timer, 2 jiffies "
                                 f"({2 * jiffy_ms:g} ms at HZ = {hz}); use at least {2 * jiffy_ms:g}")
        if rmin <= BPF_RTO_MIN_MAX_MS and bpf_ok:
            by_bpf_if_needed.append(i)
        else:
            if host in plan.sysctl_min_ms and plan.sysctl_min_ms[host] != rmin:
                j = owner[host]
                more = (f"above {BPF_RTO_MIN_MAX_MS:g} ms (the most TCP_BPF_RTO_MIN takes) " if bpf_ok else "")
                plan.problems.append(f"{where}.rto_min_ms = {rmin:g} differs from flows[{j}] on the same sender: "
                                     f"{more}the kernel's minimum RTO is the sender namespace's sysctl "
                                     "net.ipv4.tcp_rto_min_us; give the flows their own senders")
            plan.sysctl_min_ms.setdefault(host, rmin)
            owner.setdefault(host, i)
        if want_initial:
            plan.bpf[i] = (want_initial, 0.0)
        lo, hi = RTO_MAX_RANGE_MS
        rmax = float(f["rto_max_ms"])
        if not lo <= rmax <= hi:
            plan.problems.append(f"{where}.rto_max_ms = {rmax:g}: the kernel's TCP_RTO_MAX_MS takes {lo:g} to {hi:g} ms; "
                                 "use the simulator backend for another")
        how["rto_max"] = "kernel" if rmax == hi else "setsockopt"
        plan.how[i] = how
    # The rest take the namespace's value (the kernel's 200 ms unless a flow above set it), or
    # BPF when theirs differs from it.
    for i, f in enumerate(flows):
        if not is_udp(f):
            plan.sysctl_min_ms.setdefault(f["sender"], BPF_RTO_MIN_MAX_MS)
    for i in by_bpf_if_needed:
        rmin = float(flows[i]["rto_min_ms"])
        if rmin != plan.sysctl_min_ms[flows[i]["sender"]]:
            plan.bpf[i] = (plan.bpf.get(i, (0.0, 0.0))[0], rmin)
            plan.how[i]["rto_min"] = "bpf"
    # D-SACK generation is the receiver's sysctl: flows into one receiver must agree.
    seen: dict[str, int] = {}
    for i, f in enumerate(flows):
        if is_udp(f):
            continue
        j = seen.setdefault(f["receiver"], i)
        if f.get("dsack_undo", True) != flows[j].get("dsack_undo", True):
            plan.problems.append(f"flows[{i}].dsack_undo differs from flows[{j}] on the same receiver: on the kernel "
                                 "it is the receiver namespace's net.ipv4.tcp_dsack; give the flows their own receivers")
    return plan


def s3_deviations(flows: list[dict[str, Any]]) -> list[str]:
    """The timeout settings the kernel runs close to, not exactly as, asked."""
    out = []
    for i, f in enumerate(flows):
        if is_udp(f):
            continue
        where = f"flows[{i}]"
        if f.get("rto_min_mode", "linux") == "rfc6298":
            out.append(f"{where}.rto_min_mode = 'rfc6298' (RTO = max(rto_min, srtt + 4 rttvar)) runs as Linux's "
                       f"srtt + max(4 mdev, rto_min) (tcp_set_rto): with rto_min_ms = {f['rto_min_ms']:g} the kernel's "
                       "RTO is up to about srtt longer"
                       + (" (and rtt_gains = 'per_window' as Linux's once-per-RTT decay of rttvar)"
                          if f.get("rtt_gains") == "per_window" else ""))
        if not f.get("eifel_detection", True) and f["timestamps"]:
            out.append(f"{where}.eifel_detection = false runs with the kernel's timestamp undo on (tcp_may_undo -> "
                       "tcp_packet_delayed cannot be turned off apart from timestamps): set timestamps = false to "
                       "turn it off")
        if f.get("sto_response", "linux") != "linux":
            out.append(f"{where}.sto_response = {f['sto_response']!r} runs as Linux's undo (tcp_undo_cwnd_reduction: "
                       "cwnd and ssthresh back to their values before the timeout)")
        if not f.get("dsack_undo", True):
            out.append(f"{where}.dsack_undo = false runs as net.ipv4.tcp_dsack = 0 at the receiver: it sends no D-SACK, "
                       "so the sender cannot undo by one, nor use D-SACKs for RACK's reordering window")
    return out
