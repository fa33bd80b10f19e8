"""Multipath TCP flows (``transport = "mptcp"``) on the kernel: upstream Linux 6.18 MPTCP with its
in-kernel path manager, one subflow per entry of the flow's ``paths``.

How subflow k is made to cross path k's links both ways (docs/kernel.md, "Multipath TCP"):

- Subflow 0 is the connection's first subflow: the sender connects from its interface on
  ``paths[0]``'s first link to the receiver's interface on its last link, routed as any TCP flow
  (``topology.py``).
- A later subflow whose path ends on a receiver link no earlier subflow ends on is *announced*
  by the receiver: a ``signal`` endpoint on that interface's address; the sender's path manager
  answers the ADD_ADDR by connecting to it from the address its routing picks (the kernel's
  "any" local address, net/mptcp/pm_kernel.c fill_local_address_any), which a /32 route through
  the sender's interface on the path's first link makes that interface's.
- A later subflow that ends on ``paths[0]``'s receiver interface but starts on a sender link no
  earlier subflow starts on is *opened* by the sender: a ``subflow`` endpoint on that
  interface's address, which the path manager connects to the connection's first remote address
  (pm_kernel.c fill_remote_addresses_vec, non-fullmesh).
- Every later subflow also gets a source-and-destination policy rule at both ends (``ip rule from
  A to B lookup T``, T holding one /32 route out of the path's interface), so its data and its
  ACKs leave by the interfaces of its own path even when a host reaches that address otherwise.
  cclab-link then carries each (interface, interface) pair across its own path's links.
- Other layouts (a later subflow ending where an announced one ends, or starting and ending on
  the interfaces of an earlier one) cannot be told apart by addresses: refused, naming
  ``flows[i].paths[k]``.

The path-manager limits are exact (``subflows`` = n - 1 on both ends, ``add_addr_accepted`` =
the number of announced addresses at the sender), so the connection opens exactly one subflow per
path. Endpoints and limits are per namespace, the limits apply to each connection
(net/mptcp/pm_kernel.c reads them per connection when it opens or accepts a subflow): several
Multipath TCP flows between the same two hosts over the same paths share them, each connection
opening its own subflow per path; other flows sharing a host with one are refused.

Subflows run uncoupled: TCP_CONGESTION on the MPTCP socket sets every subflow's algorithm
(net/mptcp/sockopt.c mptcp_setsockopt_sol_tcp_congestion, and mptcp_sockopt_sync_locked for
subflows joining later); upstream has no LIA, OLIA or BALIA, so a coupled ``cc`` runs as Reno
subflows (on one path each of them is Reno), a deviation the summary records
(``coupled_deviations``).
"""

from __future__ import annotations

import ctypes
import os
import socket
import struct
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .tcpinfo import TCP_INFO_LEN, parse_tcp_info

if TYPE_CHECKING:
    from .topology import Interface

__all__ = ["COUPLED_ALGORITHMS", "IPPROTO_MPTCP", "Subflow", "configure", "coupled_deviations", "flow_problems",
           "is_mptcp", "plan_subflows", "read_mptcp_info", "read_subflows", "stack_deviations"]

#: include/uapi/linux/in.h
IPPROTO_MPTCP = 262
#: include/linux/socket.h; getsockopt names from include/uapi/linux/mptcp.h
SOL_MPTCP = 284
MPTCP_INFO, MPTCP_TCPINFO, MPTCP_SUBFLOW_ADDRS = 1, 2, 3
#: Coupled congestion controls (RFC 6356 LIA, OLIA, BALIA): the simulator's only.
COUPLED_ALGORITHMS = ("lia", "olia", "balia")
#: Algorithms an MPTCP subflow runs on this kernel (its built-ins).
_UNCOUPLED = ("reno", "cubic", "bbr")
#: Most subflows a connection may have (include/net/mptcp.h MPTCP_PM_ADDR_MAX is 8, and the
#: scenario allows 8 paths).
_MAX_SUBFLOWS = 8

# struct mptcp_subflow_data: u32 size_subflow_data, num_subflows, size_kernel, size_user.
_SFD = struct.Struct("=IIII")
# struct mptcp_subflow_addrs: two unions of sockaddr_storage (128 bytes each); a sockaddr_in is
# family u16, port u16 (network order), addr 4 bytes.
_ADDRS_LEN = 256
# struct mptcp_info: mptcpi_bytes_acked (u64) at 72, mptcpi_retransmits (u32) at 44, 96 bytes.
_MPTCP_INFO_LEN = 96


def is_mptcp(flow: dict[str, Any]) -> bool:
    """Whether a flow of a normalised scenario is a Multipath TCP connection."""
    return flow.get("transport", "tcp") == "mptcp"


def coupled_deviations(d: dict[str, Any]) -> list[str]:
    """The Multipath TCP flows of ``d`` whose coupled ``cc`` runs as uncoupled Reno subflows."""
    return [f"flows[{i}].cc = {f['cc']!r} (coupled) runs as uncoupled 'reno' on every subflow: upstream Linux MPTCP "
            "has no coupled congestion control; on a single path LIA, OLIA and BALIA are Reno, but subflows "
            "sharing a bottleneck take one Reno share each"
            for i, f in enumerate(d["flows"]) if is_mptcp(f) and f["cc"] in COUPLED_ALGORITHMS]


def stack_deviations(d: dict[str, Any]) -> list[str]:
    """The Multipath TCP flows of ``d`` that ask for v0.9x's stack: the kernel runs upstream's."""
    return [f"flows[{i}].mptcp_stack = 'v0.9x' runs as 'linux': the kernel is upstream Linux MPTCP (its scheduler "
            "hands 64 KB bursts to the subflow with the shortest linger time; its receiver's ACKs wait for the "
            "application's read); set mptcp_stack = 'linux' to pair the simulator with it"
            for i, f in enumerate(d["flows"]) if is_mptcp(f) and f.get("mptcp_stack", "v0.9x") != "linux"]


def flow_problems(d: dict[str, Any], middleware_hosts: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """What in the Multipath TCP flows of ``d`` (the normalised scenario) the kernel cannot run,
    each naming the field and what to use instead. Needs no root: checked before anything is made."""
    problems = []
    owner: dict[tuple[str, str], int] = {}
    for i, f in enumerate(d["flows"]):
        if not is_mptcp(f):
            continue
        where = f"flows[{i}]"
        if f["initial_cwnd_pkts"] != 10:
            problems.append(f"{where}.initial_cwnd_pkts = {f['initial_cwnd_pkts']}: on the kernel it is a route "
                            "metric, not set on a Multipath TCP flow's per-subflow routes; leave it at 10 or use the simulator")
        if f["sender"] in middleware_hosts:
            problems.append(f"{where}: a Multipath TCP flow on a middleware host ({f['sender']!r}) is not built on the "
                            "kernel; use the simulator backend")
        # Endpoints and limits are per namespace, and upstream applies the limits to each
        # connection: Multipath TCP flows on one host share them, so they must agree on
        # everything the endpoints and rules encode (the same two hosts, the same paths in the
        # same order).
        for role in ("sender", "receiver"):
            j = owner.setdefault((role, f[role]), i)
            if j == i:
                continue
            g = d["flows"][j]
            if (g["sender"], g["receiver"]) != (f["sender"], f["receiver"]):
                problems.append(f"{where}.{role} = {f[role]!r}: flows[{j}] is a Multipath TCP flow on the same {role} "
                                f"to or from another host ({g['sender']!r} -> {g['receiver']!r}); the kernel's "
                                "path-manager endpoints are per host (namespace), so their subflows would mix: give "
                                "Multipath TCP flows sharing a host the same sender and receiver, or their own hosts")
            elif g["paths"] != f["paths"]:
                problems.append(f"{where}.paths differs from flows[{j}].paths (both Multipath TCP from "
                                f"{f['sender']!r} to {f['receiver']!r}): on the kernel the connections share the "
                                "hosts' path-manager endpoints and policy rules, which encode the paths in order; "
                                f"give flows[{i}] the same paths as flows[{j}], or its own hosts")
            break
    return problems


@dataclass
class Subflow:
    """Subflow k of a Multipath TCP flow on the kernel: the interfaces its path starts and ends on
    and how the connection comes to open it."""

    k: int
    #: Node names of the data's path, sender first (the flow's ``paths[k]``).
    path: list[str]
    #: The sender's interface on the path's first link (the subflow's source address).
    snd: Interface
    #: The receiver's interface on the path's last link (the subflow's destination address).
    rcv: Interface
    #: The receiver's interface its ACKs leave by (the reverse path's first link).
    ack: Interface
    #: "initial" (the connection's first), "signal" (announced by the receiver) or "subflow"
    #: (opened by the sender from a ``subflow`` endpoint to the first remote address).
    how: str

    @property
    def table(self) -> int:
        """Routing table of this subflow's policy rule (the same number at both ends)."""
        return 100 + self.k


def plan_subflows(i: int, f: dict[str, Any], interfaces: dict[tuple[str, str], Interface]
                  ) -> tuple[list[Subflow], list[str]]:
    """The subflows of lowered flow ``f`` (scenario index ``i``), or the problems why the kernel
    cannot open one subflow per path."""
    out: list[Subflow] = []
    problems: list[str] = []
    for k, sf in enumerate(f["subflows"][:_MAX_SUBFLOWS]):
        snd = interfaces.get((f["sender"], sf["sender_link"]))
        rcv = interfaces.get((f["receiver"], sf["receiver_link"]))
        ack = interfaces.get((f["receiver"], sf["ack_link"]))
        if snd is None or rcv is None or ack is None:
            problems.append(f"flows[{i}].paths[{k}]: no interface for its first or last link on the kernel")
            continue
        if k == 0:
            how = "initial"
        elif all(rcv is not s.rcv for s in out):
            how = "signal"
        elif rcv is out[0].rcv and all(snd is not s.snd for s in out):
            how = "subflow"
        else:
            j = next(s.k for s in out if s.rcv is rcv)
            problems.append(
                f"flows[{i}].paths[{k}]: ends on {f['receiver']}'s link {rcv.link!r} as paths[{j}] does"
                + (f" and starts on {f['sender']}'s link {snd.link!r} as an earlier path does" if j == 0 else "")
                + "; on the kernel subflows are told apart by their addresses (one per host interface): each path "
                "after the first must end on a receiver link no earlier path ends on (the receiver announces its "
                "address), or end on paths[0]'s last link and start on a sender link no earlier path starts on "
                "(the sender opens it from that address)")
            continue
        out.append(Subflow(k=k, path=list(sf["fwd_nodes"]), snd=snd, rcv=rcv, ack=ack, how=how))
    return out, problems


def _ip(ns: str, *args: str) -> None:
    r = subprocess.run(["ip", "-n", ns, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"ip -n {ns} {' '.join(args)}: {r.stderr.strip()}")


def configure(snd_ns: str, rcv_ns: str, subflows: list[Subflow]) -> dict[str, dict[str, str]]:
    """Path-manager limits, endpoints and per-subflow policy routing in the sender's and the
    receiver's namespaces (after their interfaces are up). Returns what was set, per namespace,
    for the summary's ``knobs``."""
    extra = len(subflows) - 1
    announced = [s for s in subflows if s.how == "signal"]
    _ip(snd_ns, "mptcp", "limits", "set", "subflows", str(extra), "add_addr_accepted", str(len(announced)))
    _ip(rcv_ns, "mptcp", "limits", "set", "subflows", str(extra), "add_addr_accepted", "0")
    snd_knobs = {"mptcp limits": f"subflows {extra} add_addr_accepted {len(announced)}"}
    rcv_knobs = {"mptcp limits": f"subflows {extra} add_addr_accepted 0"}
    for s in subflows[1:]:
        if s.how == "signal":
            _ip(rcv_ns, "mptcp", "endpoint", "add", s.rcv.addr, "dev", s.rcv.dev, "signal")
            rcv_knobs[f"mptcp endpoint {s.rcv.addr}"] = f"dev {s.rcv.dev} signal (subflow {s.k})"
        else:
            _ip(snd_ns, "mptcp", "endpoint", "add", s.snd.addr, "dev", s.snd.dev, "subflow")
            snd_knobs[f"mptcp endpoint {s.snd.addr}"] = f"dev {s.snd.dev} subflow (subflow {s.k})"
        dst = s.rcv.addr if s.how == "signal" else subflows[0].rcv.addr
        for ns, src, to, dev, knobs in ((snd_ns, s.snd.addr, dst, s.snd.dev, snd_knobs),
                                        (rcv_ns, dst, s.snd.addr, s.ack.dev, rcv_knobs)):
            _ip(ns, "route", "add", f"{to}/32", "dev", dev, "src", src, "table", str(s.table))
            _ip(ns, "rule", "add", "from", src, "to", to, "lookup", str(s.table), "pref", str(1000 + s.k))
            knobs[f"rule from {src} to {to}"] = f"table {s.table}: dev {dev} (subflow {s.k})"
    return {snd_ns: snd_knobs, rcv_ns: rcv_knobs}


_libc = ctypes.CDLL(None, use_errno=True)


def _getsockopt_in(sock: socket.socket, name: int, header: bytes, size: int) -> bytes:
    """getsockopt(SOL_MPTCP, name) with ``header`` as input: the kernel reads struct
    mptcp_subflow_data from the buffer (net/mptcp/sockopt.c mptcp_get_subflow_data), which
    Python's socket.getsockopt cannot pass."""
    buf = ctypes.create_string_buffer(header, size)
    n = ctypes.c_uint32(size)
    if _libc.getsockopt(sock.fileno(), SOL_MPTCP, name, buf, ctypes.byref(n)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return buf.raw[:n.value]


def _sockaddr_in(raw: bytes, off: int) -> tuple[str, int]:
    port, = struct.unpack_from("!H", raw, off + 2)
    return socket.inet_ntoa(raw[off + 4:off + 8]), port


def read_subflows(sock: socket.socket, max_subflows: int = _MAX_SUBFLOWS
                  ) -> list[tuple[tuple[str, int], tuple[str, int], dict[str, int]]]:
    """Each subflow's (local address, remote address, tcp_info fields) from two getsockopt calls
    (SOL_MPTCP MPTCP_SUBFLOW_ADDRS, then MPTCP_TCPINFO; both list the subflows in the
    connection's order). Retried when a subflow came or went between the two."""
    for _ in range(3):
        raw_a = _getsockopt_in(sock, MPTCP_SUBFLOW_ADDRS, _SFD.pack(_SFD.size, 0, 0, _ADDRS_LEN),
                               _SFD.size + max_subflows * _ADDRS_LEN)
        raw_t = _getsockopt_in(sock, MPTCP_TCPINFO, _SFD.pack(_SFD.size, 0, 0, TCP_INFO_LEN),
                               _SFD.size + max_subflows * TCP_INFO_LEN)
        _, n_a, _, size_a = _SFD.unpack_from(raw_a)
        _, n_t, _, size_t = _SFD.unpack_from(raw_t)
        if n_a != n_t:
            continue
        n = min(n_a, max_subflows)
        out = []
        for j in range(n):
            a = _SFD.size + j * size_a
            t = _SFD.size + j * size_t
            out.append((_sockaddr_in(raw_a, a), _sockaddr_in(raw_a, a + 128), parse_tcp_info(raw_t[t:t + size_t])))
        return out
    return []


def read_mptcp_info(sock: socket.socket) -> dict[str, int]:
    """The connection's ``struct mptcp_info`` counters cclab uses (bytes, from the MPTCP level)."""
    raw = sock.getsockopt(SOL_MPTCP, MPTCP_INFO, _MPTCP_INFO_LEN)
    if len(raw) < 80:
        return {"bytes_acked": 0, "bytes_sent": 0, "bytes_retrans": 0, "retransmits": 0}
    retransmits, = struct.unpack_from("=I", raw, 44)
    bytes_retrans, bytes_sent, _, bytes_acked = struct.unpack_from("=QQQQ", raw, 48)
    return {"bytes_acked": bytes_acked, "bytes_sent": bytes_sent, "bytes_retrans": bytes_retrans,
            "retransmits": retransmits}
