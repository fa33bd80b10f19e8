"""``struct tcp_info`` of Linux 6.18 (include/uapi/linux/tcp.h), read with getsockopt(TCP_INFO),
and its mapping to cclab's flows trace schema."""

from __future__ import annotations

import socket
import struct
from typing import Any

__all__ = ["read_tcp_info", "parse_tcp_info", "read_meminfo", "to_trace_row", "TRACE_COLUMNS", "TCP_INFO_LEN"]

# Offsets in bytes (include/uapi/linux/tcp.h, struct tcp_info): 8 one-byte fields, then u32s
# from tcpi_rto (8) to tcpi_total_retrans (100), u64 tcpi_pacing_rate (104) ...; u16
# tcpi_total_rto at 240 (6.7+). 6.18 returns 280 bytes (AccECN counters follow).
_FIELDS: dict[str, tuple[int, str]] = {
    "state": (0, "B"),
    "ca_state": (1, "B"),
    "retransmits": (2, "B"),
    "backoff": (4, "B"),
    "rto": (8, "I"),
    "snd_mss": (16, "I"),
    "unacked": (24, "I"),
    "sacked": (28, "I"),
    "lost": (32, "I"),
    "retrans": (36, "I"),
    "rtt": (68, "I"),
    "rttvar": (72, "I"),
    "snd_ssthresh": (76, "I"),
    "snd_cwnd": (80, "I"),
    "total_retrans": (100, "I"),
    "pacing_rate": (104, "Q"),
    "bytes_acked": (120, "Q"),
    "segs_out": (136, "I"),              # segments sent, data or not, retransmissions included
    "min_rtt": (148, "I"),
    "data_segs_out": (156, "I"),         # data segments sent, retransmissions included
    "delivery_rate": (160, "Q"),
    "delivered": (192, "I"),
    "delivered_ce": (196, "I"),          # segments delivered by ACKs with ECE (tcp_count_delivered)
    "bytes_sent": (200, "Q"),
    "bytes_retrans": (208, "Q"),
    "total_rto": (240, "H"),             # since Linux 6.7: RTO expirations, exact
    "total_rto_recoveries": (242, "H"),  # recoveries that started with an RTO
}
_LEN = 248
#: Bytes of struct tcp_info read (the fields above; 6.18's struct is 280).
TCP_INFO_LEN = _LEN

#: Columns written by the kernel backend (the simulator's flows schema plus delivery_rate_bps).
TRACE_COLUMNS = [
    "t_s", "cwnd_pkts", "ssthresh_pkts", "inflight_pkts", "srtt_ms", "rttvar_ms", "min_rtt_ms", "rto_ms",
    "delivered_bytes", "retrans_pkts", "ca_state", "pacing_rate_bps", "below_tcp_bytes", "sndbuf_bytes", "wmem_queued_bytes", "delivery_rate_bps",
]

#: getsockopt(SOL_SOCKET, SO_MEMINFO) (include/uapi/asm-generic/socket.h) and the index of
#: SK_MEMINFO_WMEM_ALLOC (include/uapi/linux/sock_diag.h) in the u32 array it returns.
_SO_MEMINFO = 55
_SK_MEMINFO_WMEM_ALLOC = 2
_SK_MEMINFO_SNDBUF = 3
_SK_MEMINFO_WMEM_QUEUED = 5
_SK_MEMINFO_VARS = 9


def read_meminfo(sock: socket.socket) -> dict[str, int]:
    """``SO_MEMINFO``'s send side, bytes: ``wmem_alloc`` (skbs below TCP), ``sndbuf``
    (``sk_sndbuf``) and ``wmem_queued`` (``sk_wmem_queued``: what the socket holds until it is
    acknowledged, skb overhead included)."""
    raw = sock.getsockopt(socket.SOL_SOCKET, _SO_MEMINFO, 4 * _SK_MEMINFO_VARS)
    return {name: struct.unpack_from("=I", raw, 4 * i)[0]
            for name, i in (("wmem_alloc", _SK_MEMINFO_WMEM_ALLOC), ("sndbuf", _SK_MEMINFO_SNDBUF),
                            ("wmem_queued", _SK_MEMINFO_WMEM_QUEUED))}


def read_tcp_info(sock: socket.socket) -> dict[str, int]:
    """The fields above, in the kernel's units (us, bytes, bytes/s, packets)."""
    return parse_tcp_info(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _LEN))


def parse_tcp_info(raw: bytes) -> dict[str, int]:
    """The fields above from a struct tcp_info as the kernel copied it (0 past its end)."""
    out = {}
    for name, (off, fmt) in _FIELDS.items():
        size = struct.calcsize(fmt)
        out[name] = struct.unpack_from("=" + fmt, raw, off)[0] if off + size <= len(raw) else 0
    return out


def to_trace_row(t_s: float, ti: dict[str, int]) -> dict[str, Any]:
    """One flows-table row from a TCP_INFO sample (ssthresh NaN while infinite)."""
    ssth = ti["snd_ssthresh"]
    return {
        "t_s": t_s,
        "cwnd_pkts": ti["snd_cwnd"],
        "ssthresh_pkts": float("nan") if ssth >= 0x7FFFFFFF else ssth,
        "inflight_pkts": ti["unacked"] - ti["sacked"] - ti["lost"] + ti["retrans"],
        "srtt_ms": ti["rtt"] / 1000.0,
        "rttvar_ms": ti["rttvar"] / 1000.0,
        "min_rtt_ms": ti["min_rtt"] / 1000.0,
        "rto_ms": ti["rto"] / 1000.0,
        "delivered_bytes": ti["bytes_acked"],
        "retrans_pkts": ti["total_retrans"],
        "ca_state": ti["ca_state"],
        "pacing_rate_bps": ti["pacing_rate"] * 8.0,
        "below_tcp_bytes": ti.get("wmem_alloc", float("nan")),
        "sndbuf_bytes": ti.get("sndbuf", float("nan")),
        "wmem_queued_bytes": ti.get("wmem_queued", float("nan")),
        "delivery_rate_bps": ti["delivery_rate"] * 8.0,
    }
