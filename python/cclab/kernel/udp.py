"""UDP constant-bit-rate traffic for the kernel backend (a flow with ``transport = "udp"``), the
twin of the simulator's ``crates/cclab-sim/src/udp.rs``. Run inside a namespace:

    ip netns exec NS python -m cclab.kernel.udp recv --port 5001 --go-file GO --until-s 20
    ip netns exec NS python -m cclab.kernel.udp send --dst 10.78.0.1 --port 5001 --rate-bps 4e6 \\
        --payload-bytes 1472 --go-file GO --until-s 20

Both wait for the run's time zero (CLOCK_MONOTONIC seconds, shared by every namespace) in the go
file. The sender writes datagram k at zero + start_s + k * payload_bits / rate (late ones go out
at once, none is skipped), each carrying its number and its send time; it stops at zero +
until_s or after ``--size`` bytes and prints its totals as JSON. The receiver counts what arrives
by zero + until_s, counts later arrivals (until ``--grace-s`` more) as in flight at the end, and
prints its totals as JSON; ``udp_stats`` turns the two into the simulator's ``udp`` summary object.
A datagram carries a 16-byte header (number, send time), so payloads below 16 bytes go out as 16.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import struct
import sys
import time

import numpy as np

__all__ = ["main", "UDP_IP_HEADER_BYTES"]

#: IPv4 (20) and UDP (8) headers around the payload.
UDP_IP_HEADER_BYTES = 28
_HEADER = struct.Struct("!QQ")  # datagram number, send time (CLOCK_MONOTONIC ns)


def _wait_zero(go_file: str, ready_file: str | None) -> float:
    if ready_file:
        open(ready_file, "w").close()
    limit = time.monotonic() + 60
    while not os.path.exists(go_file) or not open(go_file).read().strip():
        if time.monotonic() > limit:
            raise SystemExit(f"no time zero in {go_file} after 60 s")
        time.sleep(0.002)
    return float(open(go_file).read())


def _send(a: argparse.Namespace) -> dict:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    zero = _wait_zero(a.go_file, a.ready_file)
    start = zero + a.start_s
    end = zero + a.until_s
    payload = max(a.payload_bytes, _HEADER.size)
    interval = payload * 8 / a.rate_bps
    limit = -(-a.size // payload) if a.size > 0 else None
    pad = b"\0" * (payload - _HEADER.size)
    k = sent_bytes = refused = 0
    while limit is None or k < limit:
        due = start + k * interval
        if due > end:
            break
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        n = payload if limit is None or k + 1 < limit else a.size - k * payload
        data = _HEADER.pack(k, time.monotonic_ns()) + pad
        try:
            s.sendto(data[: max(n, _HEADER.size)], (a.dst, a.port))
        except OSError:  # ENOBUFS: the interface queue refused it (lost there, as in the simulator)
            refused += 1
        sent_bytes += n
        k += 1
    s.close()
    active_s = k * interval
    return {"sent_pkts": k, "sent_bytes": sent_bytes, "active_s": active_s, "refused_pkts": refused}


def _recv(a: argparse.Namespace) -> dict:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    s.bind(("0.0.0.0", a.port))
    zero = _wait_zero(a.go_file, a.ready_file)
    end = zero + a.until_s
    stop = end + a.grace_s
    owd_ns: list[int] = []
    received = received_bytes = reordered = late = 0
    highest = -1
    last_arrival = None
    while True:
        left = stop - time.monotonic()
        if left <= 0:
            break
        s.settimeout(left)
        try:
            data = s.recv(1 << 16)
        except socket.timeout:
            break
        now = time.monotonic_ns()
        if len(data) < _HEADER.size:
            continue
        seq, sent_ns = _HEADER.unpack_from(data)
        if now > end * 1e9:
            late += 1
            continue
        received += 1
        received_bytes += len(data)
        if seq < highest:
            reordered += 1
        else:
            highest = seq
        owd_ns.append(now - sent_ns)
        last_arrival = now / 1e9 - zero
    s.close()
    out = {"received_pkts": received, "received_bytes": received_bytes, "reordered_pkts": reordered,
           "late_pkts": late, "last_arrival_s": last_arrival}
    if owd_ns:
        v = np.asarray(owd_ns, dtype=np.float64) / 1e6
        out.update(owd_mean_ms=float(v.mean()), owd_min_ms=float(v.min()), owd_max_ms=float(v.max()),
                   **{f"owd_p{q}_ms": float(np.quantile(v, q / 100, method="inverted_cdf")) for q in (50, 95, 99)})
    return out


def udp_stats(tx: dict, rx: dict) -> dict:
    """The simulator's ``udp`` summary object from the sender's and the receiver's totals."""
    in_flight = rx.get("late_pkts", 0)
    lost = max(0, tx["sent_pkts"] - rx["received_pkts"] - in_flight)
    known = tx["sent_pkts"] - in_flight
    secs = tx["active_s"]
    rate = lambda b: b * 8 / secs if secs > 0 else 0.0  # noqa: E731
    return {
        "sent_pkts": tx["sent_pkts"], "sent_bytes": tx["sent_bytes"],
        "received_pkts": rx["received_pkts"], "received_bytes": rx["received_bytes"],
        "lost_pkts": lost, "in_flight_pkts": in_flight, "loss": lost / known if known > 0 else 0.0,
        "send_rate_bps": rate(tx["sent_bytes"]), "receive_rate_bps": rate(rx["received_bytes"]),
        "reordered_pkts": rx["reordered_pkts"],
        **{k: rx.get(k) for k in ("owd_mean_ms", "owd_min_ms", "owd_p50_ms", "owd_p95_ms", "owd_p99_ms", "owd_max_ms")},
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m cclab.kernel.udp", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("send", "recv"):
        c = sub.add_parser(name)
        c.add_argument("--port", type=int, required=True)
        c.add_argument("--go-file", required=True, help="The run's time zero (CLOCK_MONOTONIC s) appears here.")
        c.add_argument("--ready-file", default=None, help="Created once waiting for time zero.")
        c.add_argument("--until-s", type=float, required=True, help="The run's end, s after zero.")
        if name == "send":
            c.add_argument("--dst", required=True)
            c.add_argument("--rate-bps", type=float, required=True, help="Payload rate.")
            c.add_argument("--payload-bytes", type=int, default=1472)
            c.add_argument("--start-s", type=float, default=0.0)
            c.add_argument("--size", type=int, default=0, help="Payload bytes in all; 0: until the end.")
        else:
            c.add_argument("--grace-s", type=float, default=2.0,
                           help="Listen this long after the end: arrivals then were in flight.")
    a = p.parse_args(argv)
    print(json.dumps(_send(a) if a.cmd == "send" else _recv(a)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
