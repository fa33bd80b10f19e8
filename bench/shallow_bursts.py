"""What reaches the bottleneck, and what it drops, on a shallow-buffer case: the kernel (sniffed)
against the simulator (issue 13, "shallow-buffer misses"; docs/design.md, "Fidelity").

    sudo flock /tmp/cclab-kernel.lock env PYTHONPATH=python python3 bench/shallow_bursts.py \
        reno-100ms-shallow --seed 1 -o out/bursts

Runs the fidelity case on the kernel while an AF_PACKET socket in each of the run's namespaces
records every TCP segment on the TUNs (kernel timestamps): the data the sender's kernel hands to
cclab-link (after GSO segmentation) and the data cclab-link delivers to the receiver. cclab-link
is FIFO and the case lossless, so a sent segment missing from the delivered sequence (matched in
order) was dropped by the bottleneck queue. Then runs the simulator paired with that kernel run
(fidelity.paired), once per `--set` variant, with its drop events. Prints, per backend: goodput,
retransmissions, the sizes of the sender's bursts (segments less than `--gap-us` apart) and the
drops per loss episode (drops within one RTT of the episode's first). `--kernel-dir DIR` reuses a
saved kernel run (kernel.json, sniff.parquet) instead of running one.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from cclab import fidelity  # noqa: E402
from pktparse import SO_TIMESTAMPNS, tcp_segment  # noqa: E402  (bench/)

_ETH_P_ALL, _CLONE_NEWNET = 0x0003, 0x40000000


def _sniff(ns: str, stop: threading.Event, rows: list[tuple]) -> None:
    """Record every IPv4 TCP segment seen in namespace ``ns`` (not on lo) until ``stop``."""
    libc = ctypes.CDLL(None, use_errno=True)
    # `ip netns add` creates the file, then bind-mounts the namespace on it: retry until then.
    for _ in range(200):
        with open(f"/var/run/netns/{ns}") as f:
            if libc.setns(f.fileno(), _CLONE_NEWNET) == 0:
                break
        time.sleep(0.005)
    else:
        print(f"sniffer: cannot enter {ns}", file=sys.stderr)
        return
    s = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(_ETH_P_ALL))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 24)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.settimeout(0.2)
    while not stop.is_set():
        try:
            data, anc, _, addr = s.recvmsg(128, 64)
        except socket.timeout:
            continue
        except OSError:
            break
        seg = None if addr[0] == "lo" else tcp_segment(data, anc)
        if seg is None:
            continue
        t_ns, _, sport, dport, seq, ack, payload, _ = seg
        rows.append((ns, addr[0], addr[2], t_ns, sport, dport, seq, ack, payload))
    s.close()


def kernel_run(case: fidelity.Case, seed: int, out: Path) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """The kernel run of ``case`` with every namespace sniffed; saved into ``out``."""
    from cclab.kernel.backend import run_kernel
    from cclab.scenario import load_scenario

    d = {**case.scenario, "seed": seed}
    stop, rows, threads, seen = threading.Event(), [], [], set()
    mark = f"cclab-{os.getpid() % 100000}"

    def watch() -> None:
        while not stop.is_set():
            for ns in os.listdir("/var/run/netns") if os.path.isdir("/var/run/netns") else []:
                if ns.startswith(mark) and ns not in seen:
                    seen.add(ns)
                    t = threading.Thread(target=_sniff, args=(ns, stop, rows), daemon=True)
                    t.start()
                    threads.append(t)
            time.sleep(0.005)

    print(f"load before the kernel run: {open('/proc/loadavg').read().split()[:3]}")
    w = threading.Thread(target=watch, daemon=True)
    w.start()
    k = run_kernel(load_scenario(d))
    stop.set()
    w.join()
    for t in threads:
        t.join()
    pk = pd.DataFrame(rows, columns=["ns", "ifname", "pkttype", "t_ns", "sport", "dport", "seq", "ack", "payload"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "kernel.json").write_text(json.dumps(k.summary, default=str))
    pk.to_parquet(out / "sniff.parquet")
    k.flows.to_parquet(out / "kernel_flows.parquet")
    return k.summary, pk, k.flows


def kernel_packets(pk: pd.DataFrame) -> tuple[pd.DataFrame, float]:
    """The data segments the sender handed to the link, each with ``dropped``, times from the
    first one (s); and the time of the first, in ns."""
    data = pk[pk["payload"] > 0]
    sent = data[data["pkttype"] == 4].sort_values("t_ns")  # PACKET_OUTGOING: leaving a namespace
    sender_ns = sent["ns"].mode().iloc[0]
    sent = sent[sent["ns"] == sender_ns]
    got = data[(data["pkttype"] == 0) & (data["ns"] != sender_ns)].sort_values("t_ns")  # PACKET_HOST
    # FIFO, no loss but the queue's: match in order. A delivered segment the sender's capture
    # missed (its socket buffer overflowed) is skipped when it is not among the next segments sent.
    g = list(zip(got["seq"], got["payload"]))
    sl = list(zip(sent["seq"], sent["payload"]))
    j, dropped = 0, []
    for i, sp in enumerate(sl):
        while j < len(g) and g[j] != sp and g[j] not in sl[i:i + 200]:
            j += 1
        if j < len(g) and g[j] == sp:
            dropped.append(False)
            j += 1
        else:
            dropped.append(True)
    t0 = int(sent["t_ns"].iloc[0])
    return pd.DataFrame({"t_s": (sent["t_ns"].to_numpy() - t0) / 1e9, "seq": sent["seq"].to_numpy(),
                         "dropped": dropped}), t0


def bursts(t_s: np.ndarray, gap_us: float) -> np.ndarray:
    """Burst sizes: runs of segments less than ``gap_us`` apart."""
    if len(t_s) == 0:
        return np.array([], dtype=int)
    edges = np.flatnonzero(np.diff(t_s) * 1e6 >= gap_us) + 1
    return np.diff(np.concatenate([[0], edges, [len(t_s)]]))


def episodes(drop_t: np.ndarray, rtt_s: float) -> np.ndarray:
    """Drops per loss episode: drops within one RTT of the episode's first."""
    sizes, start, n = [], None, 0
    for t in np.sort(drop_t):
        if start is None or t - start > rtt_s:
            if start is not None:
                sizes.append(n)
            start, n = t, 0
        n += 1
    if start is not None:
        sizes.append(n)
    return np.array(sizes, dtype=int)


def reductions(flows: pd.DataFrame) -> str:
    """Each change of ssthresh (a window reduction): time, and the new ssthresh."""
    ss = pd.to_numeric(flows["ssthresh_pkts"], errors="coerce")
    ss = ss.where((ss > 0) & (ss < 1e6))
    ch = flows[ss.notna() & (ss != ss.shift())]
    return ", ".join(f"{t:.2f}s->{int(v)}" for t, v in zip(ch["t_s"], pd.to_numeric(ch["ssthresh_pkts"])))


def _describe(label: str, goodput: float, retrans: float, burst: np.ndarray | None, eps: np.ndarray,
              drop_runs: np.ndarray | None) -> None:
    print(f"{label}: goodput {goodput:.2f} Mbit/s, retrans {retrans:.0f}, loss episodes {len(eps)}, "
          f"drops per episode {eps.tolist()}")
    if burst is not None and len(burst):
        q = np.percentile(burst, [50, 90, 99])
        hist = np.bincount(np.minimum(burst, 20))
        print(f"  bursts: {len(burst)}, mean {burst.mean():.2f} segs, p50/p90/p99 {q[0]:.0f}/{q[1]:.0f}/{q[2]:.0f}, "
              f"max {burst.max()}; count by size (1..19, 20+): {hist[1:].tolist()}")
    if drop_runs is not None and len(drop_runs):
        print(f"  drops per burst that lost any: mean {drop_runs.mean():.2f}, max {drop_runs.max()}, "
              f"counts (1..): {np.bincount(drop_runs)[1:].tolist()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("case")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-o", "--out", type=Path, default=Path("out/bursts"))
    ap.add_argument("--kernel-dir", type=Path, help="reuse a saved kernel run instead of running one")
    ap.add_argument("--kernel-sysctl", action="append", default=[], metavar="KEY=VALUE",
                    help="a per-namespace sysctl for the kernel run ([kernel] sysctls), e.g. "
                         "net.ipv4.tcp_backlog_ack_defer=0; repeatable")
    ap.add_argument("--gap-us", type=float, default=100.0, help="segments closer than this form one burst")
    ap.add_argument("--set", dest="variants", action="append", default=[], metavar="FIELD=VALUE[,..]",
                    help="a simulator variant: fields of the flow, or host.FIELD (repeatable; one more run each)")
    a = ap.parse_args()
    case = next(c for c in fidelity.grid() if c.name == a.case)
    if a.kernel_sysctl:
        sysctls = dict(kv.split("=", 1) for kv in a.kernel_sysctl)
        case = fidelity.Case(case.name, {**case.scenario, "kernel": {"sysctls": {k: int(v) if v.isdigit() else v for k, v in sysctls.items()}}},
                             case.kind)
    out = a.out / f"{a.case}-seed{a.seed}"
    if a.kernel_dir:
        summ = json.loads((a.kernel_dir / "kernel.json").read_text())
        pk = pd.read_parquet(a.kernel_dir / "sniff.parquet")
        kflows = pd.read_parquet(a.kernel_dir / "kernel_flows.parquet")
    else:
        summ, pk, kflows = kernel_run(case, a.seed, out)
    rtt_s = case.scenario["bottleneck"]["delay_ms"] * 2 / 1e3
    f = summ["flows"][0]
    if len(pk):
        kp, _ = kernel_packets(pk)
        b = bursts(kp["t_s"].to_numpy(), a.gap_us)
        burst_id = np.repeat(np.arange(len(b)), b)
        runs = kp.groupby(burst_id)["dropped"].sum().to_numpy()
        _describe("kernel", f["goodput_bps"] / 1e6, f["retrans_pkts"], b,
                  episodes(kp.loc[kp["dropped"], "t_s"].to_numpy(), rtt_s), runs[runs > 0].astype(int))
        print(f"  mean cwnd {pd.to_numeric(kflows['cwnd_pkts']).mean():.1f}; reductions (ssthresh): {reductions(kflows)}")
    else:
        print(f"kernel: goodput {f['goodput_bps'] / 1e6:.2f} Mbit/s, retrans {f['retrans_pkts']} (no capture)")
    from cclab.scenario import load_scenario
    from cclab.sim import simulate

    d = fidelity.paired({**case.scenario, "seed": a.seed}, summ)
    for v in [""] + a.variants:
        dv = {**d, "flows": [dict(x) for x in d["flows"]]}
        for kv in filter(None, v.split(",")):
            key, val = kv.split("=", 1)
            value = json.loads(val) if val[:1].isdigit() or val in ("true", "false") else val
            if key.startswith("host."):
                dv["host"] = {**dv.get("host", {}), key[5:]: value}
            else:
                dv["flows"][0][key] = value
        s = simulate(load_scenario(dv))
        fs = s.summary["flows"][0]
        ev = s.events
        drops = ev[(ev["kind"] == "drop")]["t_s"].to_numpy()
        # The simulator's segments leave in zero time: a burst is the drops at one instant.
        runs = np.unique(drops, return_counts=True)[1] if len(drops) else np.array([], dtype=int)
        _describe(f"simulator {v or '(default)'}", fs["goodput_bps"] / 1e6, fs["retrans_pkts"], None,
                  episodes(drops, rtt_s), runs)
        print(f"  mean cwnd {s.flows['cwnd_pkts'].mean():.1f}; reductions (ssthresh): {reductions(s.flows)}")


if __name__ == "__main__":
    main()
