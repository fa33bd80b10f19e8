"""Traffic for the kernel backend: a bulk (or fixed-size) TCP sender that samples its own
socket's TCP_INFO, and a receiver that drains. Run inside a namespace:

    ip netns exec NS python -m cclab.kernel.traffic recv --port 5001 --rcvbuf 0
    ip netns exec NS python -m cclab.kernel.traffic send --dst 10.78.0.1 --port 5001 --cc cubic \\
        --mss 1448 --duration 20 --interval-ms 10 --out flow0.csv

The sender sets the congestion control per socket (TCP_CONGESTION), the MSS (TCP_MAXSEG) and the
buffers (SO_SNDBUF/SO_RCVBUF when > 0), writes as fast as the socket takes data (or ``--size``
bytes: 64 KiB at a time, after poll() says the socket is writable, or with ``--writer
blocking`` in blocking sends), samples TCP_INFO every ``--interval-ms`` from a thread (about
1 us per call) and writes one CSV row per sample in cclab's flows schema, plus a last line of
totals on stdout as JSON.

With ``--mptcp`` both ends open Multipath TCP sockets (IPPROTO_MPTCP); the sender's options apply
to every subflow, and each sample is a row per subflow (getsockopt SOL_MPTCP MPTCP_TCPINFO), its
``subflow`` column the index in ``--subflows`` (``LOCAL>REMOTE`` address pairs, the scenario's
paths in order) of the subflow's addresses (MPTCP_SUBFLOW_ADDRS). The receiver then also counts
the bytes it had by the run's end (``--go-file`` and ``--until-s``).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import socket
import struct
import sys
import threading
import time

from .mptcp import IPPROTO_MPTCP, read_mptcp_info, read_subflows
from .tcpinfo import TRACE_COLUMNS, read_meminfo, read_tcp_info, to_trace_row

__all__ = ["main"]

_CHUNK = 1 << 16
#: setsockopt(IPPROTO_TCP, TCP_RTO_MAX_MS) (include/uapi/linux/tcp.h, Linux 6.15+): the
#: socket's maximum RTO, 1 s to 120 s.
TCP_RTO_MAX_MS = 44


def _wait_zero(go_file: str) -> float:
    """The run's time zero (CLOCK_MONOTONIC s) once the backend writes it into ``go_file``."""
    wait_until = time.monotonic() + 60
    while not os.path.exists(go_file) or not open(go_file).read().strip():
        if time.monotonic() > wait_until:
            raise SystemExit(f"no time zero in {go_file} after 60 s")
        time.sleep(0.002)
    return float(open(go_file).read())


def _recv(port: int, rcvbuf: int, ready_file: str | None, mptcp: bool = False, go_file: str | None = None,
          until_s: float | None = None) -> None:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP if mptcp else 0)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if rcvbuf > 0:
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    srv.bind(("0.0.0.0", port))
    srv.listen(8)
    if ready_file:
        open(ready_file, "w").close()
    conn, _ = srv.accept()
    total = 0
    # The bytes the application had by the run's end (zero + until_s), when told the run's zero.
    end = _wait_zero(go_file) + until_s if go_file and until_s is not None else None
    by_end = None
    while True:
        b = conn.recv(1 << 20)
        if end is not None and by_end is None and time.monotonic() >= end:
            by_end = total
        if not b:
            break
        total += len(b)
    conn.close()
    srv.close()
    print(json.dumps({"received_bytes": total, "received_by_end_bytes": total if by_end is None else by_end}),
          flush=True)


def _subflow_map(spec: str) -> dict[tuple[str, str], int]:
    """``LOCAL>REMOTE,...`` -> {(local, remote): subflow index}."""
    return {tuple(x.split(">")): k for k, x in enumerate(spec.split(",")) if x}  # type: ignore[misc]


def _send(a: argparse.Namespace) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP if a.mptcp else 0)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, a.cc.encode())
    if a.mss > 0:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, a.mss)
    if a.sndbuf > 0:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, a.sndbuf)
    if a.rto_max_ms > 0:
        s.setsockopt(socket.IPPROTO_TCP, TCP_RTO_MAX_MS, a.rto_max_ms)
    zero = None
    if a.go_file:  # started by the kernel backend: wait for the run's time zero
        if a.ready_file:
            open(a.ready_file, "w").close()
        zero = _wait_zero(a.go_file)
        time.sleep(max(0.0, zero + a.start_s - time.monotonic()))
    deadline = time.monotonic() + 10
    t_connect = time.monotonic()  # the first SYN
    while True:
        try:
            s.connect((a.dst, a.port))
            break
        except (ConnectionRefusedError, OSError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    t_connected = time.monotonic()
    # Rows count from the run's zero when there is one (then t_s is run time), else from connect.
    t0 = zero if zero is not None else t_connected
    rows: list[dict] = []
    stop = threading.Event()
    which = _subflow_map(a.subflows) if a.mptcp else {}
    last: dict[int, dict[str, int]] = {}  # subflow -> its latest tcp_info (kept if it closes early)
    strangers: set[str] = set()  # subflows on addresses of no path (should not happen)
    # Where tcpi_total_rto grew: [[previous sample's t, this sample's t, total]], and its value at
    # the first sample (the SYN's timeouts), for the spurious-timeout facts (sto.py).
    rto = {"first": None, "last": 0, "last_t": 0.0, "windows": []}

    def note_rto(t: float, total: int) -> None:
        if rto["first"] is None:
            rto["first"] = total
        elif total > rto["last"]:
            rto["windows"].append([rto["last_t"], t, total])
        rto["last"], rto["last_t"] = total, t

    def sample_subflows() -> None:
        t = time.monotonic() - t0
        for (local, _), (remote, _), ti in read_subflows(s):
            k = which.get((local, remote))
            if k is None:
                strangers.add(f"{local}>{remote}")
                continue
            last[k] = ti
            # Below TCP and the send buffer per subflow: not readable from the MPTCP socket.
            ti.update(wmem_alloc=float("nan"), sndbuf=float("nan"), wmem_queued=float("nan"))
            rows.append({**to_trace_row(t, ti), "subflow": k})

    def sample() -> None:
        period = a.interval_ms / 1000.0
        nxt = time.monotonic()
        while not stop.is_set():
            if a.mptcp:
                sample_subflows()
            else:
                ti = read_tcp_info(s)
                ti.update(read_meminfo(s))
                t = time.monotonic() - t0
                note_rto(t, ti["total_rto"])
                rows.append(to_trace_row(t, ti))
            nxt += period
            time.sleep(max(0.0, nxt - time.monotonic()))

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    buf = b"\0" * _CHUNK
    sent = 0
    t_first_write = None  # when the first send() was called (the simulator's first_write_delay_us)
    end = t_connected + a.duration if zero is None else zero + a.until_s
    if a.writer == "poll":
        s.settimeout(0.2)  # CPython polls for POLLOUT before each send
    while time.monotonic() < end and (a.size == 0 or sent < a.size):
        if a.writer == "blocking":
            # A blocking socket: send() sleeps inside the kernel (sk_stream_wait_memory) until
            # sk_stream_write_space wakes it, with no poll() first. SO_SNDTIMEO bounds the sleep
            # by the run's end only: a shorter one would wake the writer early, and it would
            # then refill the buffer before a third of it is free.
            left_us = max(1000, int((end - time.monotonic()) * 1e6))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", left_us // 1_000_000, left_us % 1_000_000))
        if t_first_write is None:
            # The kernel sends the initial window within this first call (a blocking one may
            # return only when the whole chunk is in: not the time to take).
            t_first_write = time.monotonic()
        try:
            n = s.send(buf if a.size == 0 else buf[: min(_CHUNK, a.size - sent)])
            sent += n
        except (socket.timeout, BlockingIOError):
            continue
    # A fixed-size transfer ends when its last byte is acknowledged (tcpi_bytes_acked counts the
    # SYN too), not when the socket took it: the trace and the timeout facts cover the transfer.
    while not a.mptcp and a.size > 0 and time.monotonic() < end and read_tcp_info(s)["bytes_acked"] < a.size + 1:
        time.sleep(a.interval_ms / 1000.0)
    if a.mptcp:
        stop.set()
        th.join()
        sample_subflows()
        final = _mptcp_totals(read_mptcp_info(s), last)
        final["unknown_subflows"] = sorted(strangers)
    else:
        final = read_tcp_info(s)
        stop.set()
        th.join()
        t = time.monotonic() - t0
        note_rto(t, final["total_rto"])
        rows.append(to_trace_row(t, final))
    with open(a.out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=TRACE_COLUMNS + (["subflow"] if a.mptcp else []))
        w.writeheader()
        w.writerows(rows)
    elapsed = time.monotonic() - t_connected
    s.close()
    print(json.dumps({"sent_bytes": sent, "elapsed_s": elapsed, "connected_s": t_connected - t0, "connect_s": t_connect - t0,
                      "first_write_s": None if t_first_write is None else t_first_write - t0, "samples": len(rows),
                      **{k: final[k] for k in ("bytes_acked", "total_retrans", "total_rto", "delivered_ce")},
                      **({k: final[k] for k in ("subflows", "unknown_subflows")} if a.mptcp else {}),
                      **({} if a.mptcp else {"first_total_rto": rto["first"] or 0, "rto_windows": rto["windows"]})}),
          flush=True)


def _mptcp_totals(info: dict[str, int], last: dict[int, dict[str, int]]) -> dict:
    """A Multipath TCP connection's totals: bytes acked at the MPTCP level (data sequence), the
    other counters summed over its subflows, and each subflow's own (its last tcp_info)."""
    return {"bytes_acked": info["bytes_acked"] + 1,  # + 1: read as tcpi_bytes_acked, which counts the SYN
            **{key: sum(ti[key] for ti in last.values()) for key in ("total_retrans", "total_rto", "delivered_ce")},
            "subflows": {str(k): {key: last[k][key] for key in ("bytes_acked", "data_segs_out", "segs_out",
                                                                "total_retrans", "total_rto")}
                         for k in sorted(last)}}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m cclab.kernel.traffic", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("recv")
    r.add_argument("--port", type=int, required=True)
    r.add_argument("--rcvbuf", type=int, default=0)
    r.add_argument("--ready-file", default=None)
    r.add_argument("--mptcp", action="store_true", help="Listen with a Multipath TCP socket.")
    r.add_argument("--go-file", default=None, help="With --until-s: also count the bytes received by zero + until.")
    r.add_argument("--until-s", type=float, default=None)
    s = sub.add_parser("send")
    s.add_argument("--dst", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--cc", default="cubic")
    s.add_argument("--mss", type=int, default=0)
    s.add_argument("--sndbuf", type=int, default=0)
    s.add_argument("--rto-max-ms", type=int, default=0, help="The socket's maximum RTO (TCP_RTO_MAX_MS); 0: 120 s.")
    s.add_argument("--duration", type=float, default=None, help="Send for this long after connecting.")
    s.add_argument("--go-file", default=None, help="Wait for the run's time zero (CLOCK_MONOTONIC s) in this file; "
                   "connect at zero + --start-s, stop at zero + --until-s; rows count from zero.")
    s.add_argument("--ready-file", default=None, help="With --go-file: created once the sender waits.")
    s.add_argument("--start-s", type=float, default=0.0)
    s.add_argument("--until-s", type=float, default=None)
    s.add_argument("--size", type=int, default=0)
    s.add_argument("--interval-ms", type=float, default=10.0)
    s.add_argument("--writer", choices=("poll", "blocking"), default="poll",
                   help="poll: poll() then a non-blocking 64 KiB send (iperf3's loop; the buffer stays near 2/3 "
                        "full); blocking: blocking sends (between 2/3 and full).")
    s.add_argument("--out", required=True)
    s.add_argument("--mptcp", action="store_true", help="Connect with a Multipath TCP socket; rows per subflow.")
    s.add_argument("--subflows", default="", help="With --mptcp: LOCAL>REMOTE address pairs, subflow 0 first.")
    a = p.parse_args(argv)
    if a.cmd == "send" and (a.duration is None) == (a.go_file is None or a.until_s is None):
        p.error("send: give --duration, or --go-file with --until-s")
    if a.cmd == "recv":
        _recv(a.port, a.rcvbuf, a.ready_file, a.mptcp, a.go_file, a.until_s)
    else:
        _send(a)


if __name__ == "__main__":
    main(sys.argv[1:])
