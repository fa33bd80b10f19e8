"""One captured IPv4 TCP segment from an AF_PACKET socket, for the bench scripts that sniff the
kernel backend's TUNs (shallow_bursts.py, s2_kernel_probe.py)."""

from __future__ import annotations

import socket
import struct

#: SO_TIMESTAMPNS: the kernel's receive time of each captured packet, in the ancillary data.
SO_TIMESTAMPNS = 35


def tcp_segment(data: bytes, anc: list) -> tuple[int, str, int, int, int, int, int, int] | None:
    """(t_ns, source address, sport, dport, seq, ack, payload bytes, IP total length) of a
    captured packet, or None when it is not IPv4 TCP. ``anc``: recvmsg()'s ancillary data with
    SO_TIMESTAMPNS on (t_ns 0 without it)."""
    if len(data) < 40 or data[0] >> 4 != 4 or data[9] != 6:
        return None
    t_ns = 0
    for level, typ, val in anc:
        if level == socket.SOL_SOCKET and typ == SO_TIMESTAMPNS:
            sec, nsec = struct.unpack("qq", val[:16])
            t_ns = sec * 1_000_000_000 + nsec
    ihl = (data[0] & 15) * 4
    tot = struct.unpack("!H", data[2:4])[0]
    sport, dport, seq, ack = struct.unpack("!HHII", data[ihl:ihl + 12])
    doff = (data[ihl + 12] >> 4) * 4
    return (t_ns, socket.inet_ntoa(data[12:16]), sport, dport, seq, ack, tot - ihl - doff, tot)
