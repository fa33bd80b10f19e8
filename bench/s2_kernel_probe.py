"""What the kernel backend's sending host holds below TCP in S2's setup with HyStart off
(bench/s2_hystart_off.py's kernel run): one run, sampled from outside while it runs.

    sudo flock /tmp/cclab-kernel.lock env PYTHONPATH=$PWD/python python3 bench/s2_kernel_probe.py \
        --duration 10 --out out/s2-probe.json

Once all nine subflows are up (and `--settle-s` more), for `--sample-s` seconds:
- `ss -tmni` in the sender's namespace every 50 ms: per subflow cwnd, srtt, pacing rate,
  unacked, and skmem's `t` (sk_wmem_alloc: truesize of its skbs below TCP);
- `tc -s -j qdisc` on each of its devices: the pfifo's backlog (bytes and skbs);
- the segments the devices hand to the TUN and the ACKs coming back, `--capture-s` seconds
  (AF_PACKET with kernel timestamps, taken where `dev_queue_xmit_nit` clones a segment: after
  htb and the GSO segmentation in `validate_xmit_skb`). Segments of one flow back to back within
  `--burst-gap-us` are one GSO skb.
- `ss -Mmni` in the receiver's namespace: what each connection holds unread.
Prints per application: skb sizes (segments), sk_wmem_alloc, payload below TCP and its share,
share of each device's bytes, srtt, the RTT from the device's handover to the ACK, how much data
was acknowledged after the receiver sent no ACK for 20 ms, and cwnd over the run; per device the
time from one skb's handover to the next over the first's transmission time. `--sysctl` sets
per-namespace sysctls on both hosts (an ablation), `--analyse FILE` reads a saved probe. Root
only.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import re
import select
import socket
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from pktparse import SO_TIMESTAMPNS, tcp_segment  # bench/
from s2_hystart_off import scenario  # bench/

_BASE_PORT = 5201  # cclab.kernel.backend._BASE_PORT: flow k listens on 5201 + k
_ETH_P_ALL = 0x0003
_PACKET_OUTGOING = 4


def capture(devs: list[str], seconds: float, out: str) -> None:
    """In the namespace: each IPv4/TCP packet on ``devs`` for ``seconds``, one JSON row each
    (t_ns realtime, dev, out (bool), src, sport, dport, seq, ack, payload bytes)."""
    socks = {}
    for d in devs:
        # Protocol 0 until bound: a socket made with ETH_P_ALL takes every device's packets.
        s = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, 0)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 20)
        s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        s.bind((d, _ETH_P_ALL))
        socks[s.fileno()] = (s, d)
    rows = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        r, _, _ = select.select(list(socks), [], [], 0.05)
        for fd in r:
            s, _ = socks[fd]
            while True:
                try:
                    data, anc, _, addr = s.recvmsg(96, 64, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    break
                except OSError as e:  # ENETDOWN: the device is not up yet, or going away
                    if e.errno != errno.ENETDOWN:
                        raise
                    break
                seg = tcp_segment(data, anc)
                if seg is None:
                    continue
                t_ns, src, sport, dport, seq, ack, payload, tot = seg
                rows.append([t_ns, addr[0], addr[2] == _PACKET_OUTGOING, src, sport, dport, seq, ack, payload, tot])
    Path(out).write_text(json.dumps(rows))


def _ns(ns: str, *cmd: str) -> str:
    return subprocess.run(["ip", "netns", "exec", ns, *cmd], capture_output=True, text=True).stdout


_SS_NUM = {k: re.compile(p) for k, p in {
    "cwnd": r"\bcwnd:(\d+)", "rtt_ms": r"\brtt:([\d.]+)/", "unacked": r"\bunacked:(\d+)",
    "wmem_alloc": r"skmem:\(r\d+,rb\d+,t(\d+),",
    "wmem_queued": r",w(\d+),", "sndbuf": r",tb(\d+),", "notsent": r"\bnotsent:(\d+)", "mss": r"\bmss:(\d+)",
    "min_rtt_ms": r"\bminrtt:([\d.]+)", "snd_wnd": r"\bsnd_wnd:(\d+)",
    "rwnd_limited_pct": r"\brwnd_limited:\d+ms\(([\d.]+)%\)", "busy_ms": r"\bbusy:(\d+)ms"}.items()}


def ss_sample(ns: str) -> list[dict]:
    """Per established TCP socket to a flow's port: the numbers above (missing ones 0)."""
    rows = []
    for line in _ns(ns, "ss", "-tmniOH", "state", "established").splitlines():
        parts = line.split()
        if len(parts) < 5:
            continue
        local, peer = parts[2], parts[3]
        port = int(peer.rsplit(":", 1)[1])
        if not _BASE_PORT <= port < _BASE_PORT + 16:
            continue
        r = {"app": port - _BASE_PORT + 1, "local": local, "peer": peer}
        for k, rx in _SS_NUM.items():
            m = rx.search(line)
            r[k] = float(m.group(1)) if m else 0.0
        m = re.search(r"\bpacing_rate ([\d.]+)([KMG]?)bps", line)
        r["pacing_bps"] = float(m.group(1)) * {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}[m.group(2)] if m else 0.0
        rows.append(r)
    return rows


def msk_sample(ns: str, sender: bool = False) -> list[dict]:
    """The Multipath TCP sockets of the receiver's namespace (or the sender's): per application,
    skmem's r (the bytes its connection holds unread: the msk's sk_rmem_alloc), rb (its receive
    buffer), tb (sk_sndbuf) and w (sk_wmem_queued)."""
    rows = []
    for line in _ns(ns, "ss", "-MmniOH", "state", "established").splitlines():
        parts = line.split()
        m = re.search(r"skmem:\(r(\d+),rb(\d+),t\d+,tb(\d+),f\d+,w(\d+),", line)
        if len(parts) < 5 or not m:
            continue
        port = int(parts[3 if sender else 2].rsplit(":", 1)[1])
        if _BASE_PORT <= port < _BASE_PORT + 16:
            rows.append({"app": port - _BASE_PORT + 1, **dict(zip(("rmem", "rcvbuf", "sndbuf", "wmem_queued"),
                                                                 map(int, m.groups())))})
    return rows


def qdisc_sample(ns: str, devs: list[str]) -> dict[str, dict]:
    out = {}
    for d in devs:
        for q in json.loads(_ns(ns, "tc", "-s", "-j", "qdisc", "show", "dev", d) or "[]"):
            if q.get("kind") == "pfifo":
                out[d] = {"backlog_bytes": q.get("backlog", 0), "qlen": q.get("qlen", 0),
                          "sent_bytes": q.get("bytes", 0), "sent_pkts": q.get("packets", 0)}
    return out


def features(ns: str, devs: list[str]) -> dict[str, dict]:
    """The offload features of the sender's devices (`ethtool -k`, through pyroute2)."""
    code = ("import json,sys\nfrom pyroute2.ethtool import Ethtool\ne=Ethtool()\nout={}\n"
            "for d in sys.argv[1:]:\n f=e.get_features(d).features\n"
            " out[d]={k:f[k].enable for k in ('tx-generic-segmentation','tx-tcp-segmentation',"
            "'tx-scatter-gather','generic-receive-offload') if k in f}\nprint(json.dumps(out))")
    return json.loads(_ns(ns, sys.executable, "-c", code, *devs) or "{}")


def _find_ns(host: str, timeout_s: float) -> str:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        for line in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.splitlines():
            name = line.split()[0]
            if name.startswith("cclab-") and name.endswith(f"-{host}"):
                return name
        time.sleep(0.2)
    raise SystemExit(f"no namespace for {host}")


def probe(a: argparse.Namespace, out: dict) -> None:
    ns = _find_ns("snd", 60)
    rns = _find_ns("rcv", 10)
    end = time.monotonic() + 60
    while time.monotonic() < end and len(ss_sample(ns)) < 9:
        time.sleep(0.25)
    devs = [line.split(":")[1].strip().split("@")[0] for line in _ns(ns, "ip", "-o", "link").splitlines()
            if ": lo:" not in line]
    out["devices"] = devs
    out["features"] = features(ns, devs)
    time.sleep(a.settle_s)
    cap = Path(a.out).with_suffix(".capture.json")
    capp = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, __file__, "--capture", ",".join(devs),
                             "--capture-s", str(a.capture_s), "--capture-out", str(cap)])
    ss_rows, q_rows, msk_rows = [], [], []
    t0 = time.monotonic()
    while time.monotonic() - t0 < a.sample_s:
        t = time.monotonic() - t0
        ss_rows += [{**r, "t": t} for r in ss_sample(ns)]
        q_rows += [{"t": t, "dev": d, **v} for d, v in qdisc_sample(ns, devs).items()]
        msk_rows += [{**r, "t": t} for r in msk_sample(rns)]
        time.sleep(0.05)
    capp.wait()
    out["ss"] = ss_rows
    out["qdisc"] = q_rows
    out["msk"] = msk_rows
    out["capture"] = json.loads(cap.read_text())


def analyse(out: dict, gap_us: float, nic_bps: float = 50e6) -> dict:
    """Per application: the figures the module's docstring lists."""
    res: dict = {}
    ss = out["ss"]
    for app in sorted({r["app"] for r in ss}):
        rs = [r for r in ss if r["app"] == app]
        res[app] = {k: float(np.mean([r.get(k, np.nan) for r in rs])) for k in
                    ("cwnd", "rtt_ms", "min_rtt_ms", "unacked", "pacing_bps", "wmem_alloc", "notsent", "mss",
                     "snd_wnd", "rwnd_limited_pct")}
        res[app]["tso_segs_expected"] = res[app]["pacing_bps"] / 8 / 1024 / max(res[app]["mss"], 1)
    # Data segments out, by device and application; bursts of one flow = one GSO skb.
    cap = sorted(out["capture"], key=lambda r: (r[1], r[0]))
    seg_out = [r for r in cap if r[2] and r[8] > 0 and _BASE_PORT <= r[5] < _BASE_PORT + 16]
    by_dev: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    skbs: dict[int, list[int]] = defaultdict(list)
    last: dict[str, tuple] = {}
    # Per device, each skb's handover time and wire bytes, in order.
    handovers: dict[str, list[list[int]]] = defaultdict(list)
    for t, dev, _, src, sport, dport, seq, _, ln, *wire in seg_out:
        app = dport - _BASE_PORT + 1
        by_dev[dev][app] += ln
        key = (src, sport, dport)
        p = last.get(dev)
        if p and p[1] == key and t - p[0] <= gap_us * 1000 and seq == p[2]:
            skbs[app][-1] += 1
            handovers[dev][-1][1] += wire[0] if wire else ln + 72
        else:
            skbs[app].append(1)
            handovers[dev].append([t, wire[0] if wire else ln + 72])
        last[dev] = (t, key, seq + ln)
    # htb's debt: the time from one skb's handover to the next, over the first's transmission
    # time at the NIC's rate (1: the next skb, of any flow, waits out the first's).
    ratios = [((b[0] - a[0]) / 1e9) / (a[1] * 8 / nic_bps) for h in handovers.values() for a, b in zip(h, h[1:])]
    device = {"handover_gap_over_tx_time_p10_p50_p90":
              [float(x) for x in np.percentile(ratios, [10, 50, 90])] if ratios else None}
    for app in res:
        s = np.array(skbs.get(app, [0]))
        res[app]["skb_segs_mean"] = float(s.mean())
        res[app]["skb_segs_p10_p50_p90"] = [float(x) for x in np.percentile(s, [10, 50, 90])]
        res[app]["share_of_device_bytes"] = float(np.mean(
            [v.get(app, 0) / max(sum(v.values()), 1) for v in by_dev.values()]))
        # Payload below TCP: sk_wmem_alloc less 832 B per skb of the median size.
        per_skb = res[app]["skb_segs_p10_p50_p90"][1] * 1424 + 832
        n_skb = max(1, round(res[app]["wmem_alloc"] / per_skb))
        res[app]["payload_below_bytes"] = res[app]["wmem_alloc"] - 832 * n_skb
    total = sum(res[app]["payload_below_bytes"] for app in res)
    for app in res:
        res[app]["payload_below_share"] = res[app]["payload_below_bytes"] / max(total, 1)
    # RTT from the handover to the TUN to the first ACK that covers the segment.
    pend: dict[tuple, list] = defaultdict(list)
    rtts: dict[int, list[float]] = defaultdict(list)
    for t, dev, is_out, src, sport, dport, seq, ack, ln, *_ in sorted(cap, key=lambda r: r[0]):
        if is_out and ln > 0:
            pend[(sport, dport)].append((seq + ln, t))
        elif not is_out:
            key = (dport, sport)
            q = pend.get(key)
            while q and ((ack - q[0][0]) & 0xFFFFFFFF) < 1 << 31:
                end_seq, ts = q.pop(0)
                rtts[key[1] - _BASE_PORT + 1].append((t - ts) / 1e6)
    # ACKs per subflow: gaps, and the share of data acknowledged by ACKs that came after a gap
    # over 20 ms (the receiver held its ACKs: delayed ACK, backlog).
    acks: dict[tuple, list] = defaultdict(list)
    for t, dev, is_out, src, sport, dport, seq, ack, ln, *_ in cap:
        if not is_out and _BASE_PORT <= sport < _BASE_PORT + 16:
            acks[(dport, sport)].append((t, ack))
    late: dict[int, list[float]] = defaultdict(list)
    for (_, port), xs in acks.items():
        xs.sort()
        t = np.array([x[0] for x in xs], dtype=np.int64)
        adv = np.diff(np.array([x[1] for x in xs], dtype=np.int64)) % (1 << 32)
        gap = np.diff(t) / 1e6
        if adv.sum():
            late[port - _BASE_PORT + 1].append(float(adv[gap > 20].sum() / adv.sum()))
            late[-(port - _BASE_PORT + 1)].append(float(gap.max()))
    for app in res:
        res[app]["acked_after_gap_over_20ms"] = float(np.mean(late.get(app, [np.nan])))
        res[app]["max_ack_gap_ms"] = float(np.max(late.get(-app, [np.nan])))
    for app in res:
        r = np.array(rtts.get(app, [np.nan]))
        res[app]["rtt_from_device_ms_mean"] = float(np.nanmean(r))
        res[app]["rtt_from_device_ms_min"] = float(np.nanmin(r))
    for app in res:
        m = [r for r in out.get("msk", []) if r["app"] == app]
        if m:
            res[app]["rcv_unread_bytes_mean_max"] = [float(np.mean([r["rmem"] for r in m])),
                                                     float(np.max([r["rmem"] for r in m]))]
            res[app]["rcv_rcvbuf_bytes"] = float(np.mean([r["rcvbuf"] for r in m]))
    fl = out.get("flows_cwnd")
    if fl:
        for app in res:
            res[app]["cwnd_at_s"] = fl.get(f"app{app}")
    res["device"] = {**device, "features": out.get("features")}
    q = out["qdisc"]
    res["qdisc"] = {"backlog_bytes_mean": float(np.mean([r["backlog_bytes"] for r in q])),
                    "qlen_mean": float(np.mean([r["qlen"] for r in q]))}
    return res


def cwnd_at(flows, times=(0.45, 1.0, 2.0, 5.0, 9.9)) -> dict[str, dict[float, float]]:
    """Mean cwnd of each application's subflows at ``times`` (s)."""
    out = {}
    for name, g in flows.groupby("flow", observed=True):
        out[str(name)] = {t: float(g[(g.t_s - t).abs() < 0.006]["cwnd_pkts"].mean()) for t in times}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--settle-s", type=float, default=2.0, help="after all subflows are up")
    ap.add_argument("--sample-s", type=float, default=3.0)
    ap.add_argument("--capture-s", type=float, default=0.5)
    ap.add_argument("--burst-gap-us", type=float, default=20.0)
    ap.add_argument("--hystart", action="store_true", help="keep HyStart on")
    ap.add_argument("--out", default="out/s2-probe.json")
    ap.add_argument("--trace-interval-ms", type=float, default=10.0,
                    help="how often each sender samples its subflows (CPU on a small machine)")
    ap.add_argument("--sysctl", action="append", default=[], help="KEY=VALUE for both namespaces ([kernel.sysctls])")
    ap.add_argument("--capture", help=argparse.SUPPRESS)
    ap.add_argument("--capture-out", help=argparse.SUPPRESS)
    ap.add_argument("--analyse", help="analyse a saved probe instead of running")
    a = ap.parse_args()
    if a.capture:
        capture(a.capture.split(","), a.capture_s, a.capture_out)
        return
    if a.analyse:
        print(json.dumps(analyse(json.loads(Path(a.analyse).read_text()), a.burst_gap_us), indent=1))
        return
    if os.geteuid() != 0:
        raise SystemExit("root only (the kernel backend)")
    import cclab  # noqa: F401
    from cclab.kernel.backend import run_kernel
    from cclab.study.grid import derive_seed
    from cclab.study.s2 import steady_rates

    d = scenario(a.duration, a.hystart)
    d["sim"]["trace_interval_ms"] = a.trace_interval_ms
    if a.sysctl:
        d["kernel"] = {"sysctls": dict(kv.split("=", 1) for kv in a.sysctl)}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    out: dict = {}
    th = threading.Thread(target=probe, args=(a, out), daemon=True)
    th.start()
    seed = a.seed if a.seed is not None else derive_seed(2, 0)
    r = run_kernel(d, seed=seed)
    th.join(timeout=30)
    out["steady_mbps"] = steady_rates(r.flows)["steady_mbps"].tolist()
    r.flows.to_csv(Path(a.out).with_suffix(".flows.csv"), index=False)
    out["flows_cwnd"] = cwnd_at(r.flows)
    Path(a.out).write_text(json.dumps(out))
    print("load:", os.getloadavg())
    print("steady Mbit/s:", np.round(out["steady_mbps"], 2))
    print(json.dumps(analyse(out, a.burst_gap_us), indent=1))


if __name__ == "__main__":
    main()
