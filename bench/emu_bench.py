#!/usr/bin/env python3
"""Benchmark of cclab-link (root): TCP throughput through the emulator with an unlimited rate at
0 ms and 50 ms one-way delay, versus two namespaces joined directly by a veth pair (the
ceiling); the emulator's CPU per Gbit/s; and the added-delay error (release lateness against
the model, from the emulator's stats, and the kernel's handshake RTT through a 50 ms link).

    make bench-emu                       # or: python3 bench/emu_bench.py --seconds 8

Namespaces are named cclab-bench-<pid>-* and always removed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from cclab.kernel.link import LinkEmulator  # noqa: E402

A, B = "10.78.0.1", "10.78.1.1"

SINK = """
import socket, sys, json, time
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((sys.argv[1], 9100)); l.listen(4); l.settimeout(20)
c, _ = l.accept(); buf = bytearray(1 << 20); got = 0; marks = []
t0 = time.monotonic()
while True:
    n = c.recv_into(buf)
    if not n: break
    got += n; marks.append((time.monotonic() - t0, got))
print(json.dumps({"marks": marks[:: max(1, len(marks) // 4000)] + marks[-1:]}))
"""

SEND = """
import socket, sys, time
time.sleep(0.3)
s = socket.create_connection((sys.argv[1], 9100), timeout=20)
buf = b"x" * (1 << 20); end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    s.sendall(buf)
s.close()
"""

HANDSHAKES = """
import socket, struct, sys, json, time
l = socket.socket(); l.bind((sys.argv[2], 0)); l.close()
rtts = []
for i in range(int(sys.argv[3])):
    s = socket.create_connection((sys.argv[1], 9101), timeout=2)
    info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    rtts.append(struct.unpack_from("I", info, 68)[0] / 1e3)
    s.close(); time.sleep(0.005)
print(json.dumps({"rtts_ms": rtts}))
"""

LISTEN = """
import socket, sys, time
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((sys.argv[1], 9101)); l.listen(512); l.settimeout(1)
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    try:
        l.accept()[0].close()
    except socket.timeout:
        pass
"""


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def make_ns(names: list[str]) -> None:
    for n in names:
        ip("netns", "add", n)
        ip("netns", "exec", n, "sh", "-c",
           "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6; "
           "echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6; ip link set lo up; "
           "echo '4096 131072 67108864' > /proc/sys/net/ipv4/tcp_rmem; "
           "echo '4096 131072 67108864' > /proc/sys/net/ipv4/tcp_wmem")


def del_ns(names: list[str]) -> None:
    for n in names:
        subprocess.run(["ip", "netns", "del", n], capture_output=True)


def in_ns(ns: str, code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", code, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def bulk(a: str, b: str, seconds: float) -> float:
    """Goodput in Gbit/s of one TCP bulk flow a -> b, after the first second."""
    sink = in_ns(b, SINK, B)
    send = in_ns(a, SEND, B, str(seconds))
    send.communicate(timeout=seconds + 30)
    out, err = sink.communicate(timeout=30)
    if sink.returncode != 0:
        raise RuntimeError(err)
    marks = json.loads(out)["marks"]
    t1, b1 = next(m for m in marks if m[0] >= 1.0)
    t2, b2 = marks[-1]
    return (b2 - b1) * 8 / (t2 - t1) / 1e9


def cpu_s(pid: int) -> float:
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def veth(seconds: float, tag: str) -> float:
    a, b = f"{tag}-va", f"{tag}-vb"
    make_ns([a, b])
    try:
        ip("link", "add", "va", "netns", a, "type", "veth", "peer", "name", "vb", "netns", b)
        ip("-n", a, "addr", "add", A, "peer", B, "dev", "va")
        ip("-n", b, "addr", "add", B, "peer", A, "dev", "vb")
        ip("-n", a, "link", "set", "va", "up")
        ip("-n", b, "link", "set", "vb", "up")
        return bulk(a, b, seconds)
    finally:
        del_ns([a, b])


def emulated(seconds: float, tag: str, delay_ms: float, handshakes: int = 0,
             rate_bps: int | None = None, args: tuple[str, ...] = (), steer: bool = True) -> dict:
    a, b = f"{tag}-ea", f"{tag}-eb"
    make_ns([a, b])
    try:
        spec = {
            "seed": 1,
            "ports": [{"name": "a", "netns": a, "dev": "cl0", "addrs": [A]},
                      {"name": "b", "netns": b, "dev": "cl0", "addrs": [B]}],
            "links": [{"name": "fwd", "delay_ms": delay_ms, "rate_bps": rate_bps},
                      {"name": "rev", "delay_ms": delay_ms}],
            "routes": [{"from": "a", "to": "b", "links": ["fwd"]},
                       {"from": "b", "to": "a", "links": ["rev"]}],
        }
        with LinkEmulator(spec, args=args, steer=steer) as emu:
            ip("-n", a, "addr", "add", A, "peer", B, "dev", "cl0")
            ip("-n", b, "addr", "add", B, "peer", A, "dev", "cl0")
            res: dict = {}
            if handshakes:
                lis = in_ns(b, LISTEN, B, "30")
                hs = in_ns(a, HANDSHAKES, B, A, str(handshakes))
                out, err = hs.communicate(timeout=60)
                lis.kill()
                lis.communicate()
                rtts = json.loads(out)["rtts_ms"]
                errs = sorted(abs(r - 2 * delay_ms) * 1e3 for r in rtts)
                res["rtt_err_us_median"] = statistics.median(errs)
                res["rtt_err_us_p99"] = errs[min(len(errs) - 1, int(0.99 * len(errs)))]
            assert emu.proc is not None
            c0, t0 = cpu_s(emu.proc.pid), time.monotonic()
            gbps = bulk(a, b, seconds)
            cpu = (cpu_s(emu.proc.pid) - c0) / (time.monotonic() - t0)
        st = emu.stats or {}
        fwd = st["links"][0]
        res.update(gbps=gbps, cpu_cores=cpu, cpu_per_gbps=cpu / gbps if gbps else float("nan"),
                   lateness=st["lateness"], fwd=fwd, behind_events=st["behind_events"],
                   tun_rx=[p["rx_pkts"] for p in st["ports"]])
        return res
    finally:
        del_ns([a, b])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seconds", type=float, default=6.0, help="length of each bulk transfer")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--rt-priority", type=int, default=0, help="cclab-link --rt-priority")
    ap.add_argument("--no-steer", action="store_true",
                    help="do not pin cclab-link to one CPU and steer receive processing (RPS) to the others")
    ap.add_argument("--no-veth", action="store_true", help="skip the veth ceiling")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("emu_bench: must run as root (namespaces, TUN)")
    tag = f"cclab-bench-{os.getpid()}"
    out: dict = {}
    if not args.no_veth:
        print("veth ceiling ...", flush=True)
        out["veth_gbps"] = veth(args.seconds, tag)
        print(f"  {out['veth_gbps']:.2f} Gbit/s", flush=True)
    extra = ("--rt-priority", str(args.rt_priority))
    for d, rate in ((0, None), (50, None), (50, 1_000_000_000)):
        what = f"{rate / 1e9:g} Gbit/s" if rate else "unlimited rate"
        print(f"cclab-link, {what}, {d} ms each way ...", flush=True)
        r = emulated(args.seconds, tag, d, handshakes=200 if d and not rate else 0, rate_bps=rate,
                     args=extra, steer=not args.no_steer)
        out[f"link_{d}ms" + (f"_{rate // 10**6}mbps" if rate else "")] = r
        lat = r["lateness"]
        print(f"  {r['gbps']:.2f} Gbit/s, emulator CPU {r['cpu_cores']:.2f} cores "
              f"({r['cpu_per_gbps']:.2f} cores per Gbit/s); release lateness (us) "
              f"p50/p99/max {lat['p50_us']:.0f}/{lat['p99_us']:.0f}/{lat['max_us']:.0f}; "
              f"behind events {r['behind_events']}", flush=True)
        if "rtt_err_us_median" in r:
            print(f"  idle handshake RTT error vs {2 * d} ms: median {r['rtt_err_us_median']:.0f} "
                  f"us, p99 {r['rtt_err_us_p99']:.0f} us", flush=True)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
