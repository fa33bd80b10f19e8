"""When the kernel's receiver acknowledges each subflow's data in S2's setup with HyStart on:
one kernel run, every segment captured on both hosts from the start.

    sudo flock /tmp/cclab-kernel.lock env PYTHONPATH=$PWD/python python3 bench/s2_ack_probe.py \
        --duration 4 --out out/s2-ack.json

Per subflow (in the order they first carry data) and window of `--window-s` from the first data
segment: the data segments the receiver got, the ACKs it sent, how many segments each ACK
newly acknowledged (1: every segment; 2: every second), and the hold, from a segment's arrival
to the first ACK that covers it (p50, p90, max). On 6.18 every segment is acknowledged at once
for the first 1-1.5 s of each subflow: `tcp_grow_window` sets `icsk_ack.quick` whenever it
raises rcv_ssthresh, which it does while receive-buffer autotuning opens the window; the
simulator has no autotuning (docs/studies.md, S2, "HyStart"). `--analyse FILE` reads a saved
probe. Root only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
from s2_hystart_off import scenario  # bench/
from s2_kernel_probe import _BASE_PORT, _ns  # bench/

_PROBE = str(Path(__file__).with_name("s2_kernel_probe.py"))


def _namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith("cclab-")]


def probe(a: argparse.Namespace, out: dict) -> None:
    """Capture on every device of the run's namespaces, started as soon as they have devices."""
    end = time.monotonic() + 60
    while time.monotonic() < end and len(_namespaces()) < 2:
        time.sleep(0.01)
    # The devices come after the namespaces: take each host's once its list stops changing.
    procs = []
    for ns in _namespaces():
        devs: list[str] = []
        since = time.monotonic()
        while time.monotonic() < end and (not devs or time.monotonic() - since < a.settle_s):
            now = [line.split(":")[1].strip().split("@")[0] for line in _ns(ns, "ip", "-o", "link").splitlines()
                   if ": lo:" not in line]
            if now != devs:
                devs, since = now, time.monotonic()
            time.sleep(0.005)
        cap = Path(a.out).with_suffix(f".{ns.rsplit('-', 1)[1]}.json")
        procs.append((ns, cap, subprocess.Popen(
            ["ip", "netns", "exec", ns, sys.executable, _PROBE, "--capture", ",".join(devs),
             "--capture-s", str(a.capture_s), "--capture-out", str(cap)])))
    for ns, cap, p in procs:
        if p.wait() == 0 and cap.exists():
            out[ns.rsplit("-", 1)[1]] = json.loads(cap.read_text())
        else:
            print(f"capture in {ns} failed (exit {p.returncode})", file=sys.stderr)


def analyse(rows: list, window_s: float) -> list[dict]:
    """The receiver's capture (``rows``, s2_kernel_probe.capture's) per subflow and window."""
    data: dict = defaultdict(list)
    acks: dict = defaultdict(list)
    for t, _dev, is_out, _src, sport, dport, seq, ack, ln, *_ in rows:
        if not is_out and ln > 0 and _BASE_PORT <= dport < _BASE_PORT + 16:
            data[(dport, sport)].append((t, (seq + ln) & 0xFFFFFFFF))
        elif is_out and _BASE_PORT <= sport < _BASE_PORT + 16:
            acks[(sport, dport)].append((t, ack))
    if not data:
        return []
    t0 = min(min(v)[0] for v in data.values())
    order: dict = defaultdict(list)
    for key in sorted(data, key=lambda k: min(data[k])[0]):
        order[key[0]].append(key)
    res = []
    for port, keys in sorted(order.items()):
        for i, key in enumerate(keys):
            ds, ak = sorted(data[key]), sorted(acks.get(key, []))
            at = np.array([x[0] for x in ak], dtype=np.int64)
            adv = np.diff(np.array([x[1] for x in ak], dtype=np.int64)) % (1 << 32)
            holds, j = [], 0
            for t, end in ds:
                while j < len(ak) and ak[j][0] < t:
                    j += 1
                k = j
                while k < len(ak) and ((ak[k][1] - end) & 0xFFFFFFFF) >= 1 << 31:
                    k += 1
                if k < len(ak):
                    holds.append((t, (ak[k][0] - t) / 1e6))
            h = np.array(holds) if holds else np.zeros((0, 2))
            dt = np.array([x[0] for x in ds], dtype=np.int64)
            for w in np.arange(0.0, (max(dt) - t0) / 1e9 + window_s, window_s):
                lo, hi = t0 + w * 1e9, t0 + (w + window_s) * 1e9
                segs = int(((dt >= lo) & (dt < hi)).sum())
                if not segs:
                    continue
                m = (at[1:] >= lo) & (at[1:] < hi)
                per = Counter((adv[m] // 1424).astype(int).tolist())
                hh = h[(h[:, 0] >= lo) & (h[:, 0] < hi), 1] if len(h) else np.array([])
                res.append({"app": port - _BASE_PORT + 1, "subflow": i, "t_s": round(float(w), 3), "segs": segs,
                            "acks": int(m.sum()), "acked_1": per.get(1, 0), "acked_2": per.get(2, 0),
                            "hold_ms_p50_p90_max": [round(float(x), 3) for x in
                                                    (np.percentile(hh, [50, 90]).tolist() + [hh.max()])]
                            if len(hh) else None})
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=4.0)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--capture-s", type=float, default=2.5,
                    help="shorter than the run: the backend ends what runs in its namespaces")
    ap.add_argument("--settle-s", type=float, default=0.05,
                    help="a host's device list unchanged this long is complete")
    ap.add_argument("--window-s", type=float, default=0.25)
    ap.add_argument("--out", default="out/s2-ack.json")
    ap.add_argument("--analyse", help="analyse a saved probe instead of running")
    a = ap.parse_args()
    if a.analyse:
        saved = json.loads(Path(a.analyse).read_text())
    else:
        if os.geteuid() != 0:
            raise SystemExit("root only (the kernel backend)")
        from cclab.kernel.backend import run_kernel
        from cclab.study.grid import derive_seed

        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        saved = {}
        th = threading.Thread(target=probe, args=(a, saved), daemon=True)
        th.start()
        run_kernel(scenario(a.duration, True), seed=a.seed if a.seed is not None else derive_seed(2, 0))
        th.join(timeout=a.capture_s + 30)
        Path(a.out).write_text(json.dumps(saved))
    if "rcv" not in saved:
        raise SystemExit("no capture on the receiver (rerun; --settle-s longer)")
    for row in analyse(saved["rcv"], a.window_s):
        print(json.dumps(row))


if __name__ == "__main__":
    main()
