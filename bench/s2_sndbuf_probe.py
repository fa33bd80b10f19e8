"""S2's start on the kernel, HyStart on (the study's kernel part): how much data upstream MPTCP
gives each subflow while its slow start runs. One run of `cclab.study.s2.kernel_scenario`,
sampled from outside every `--every-ms` from the first subflow on: per subflow (`ss -tmni` in
the sender's namespace) cwnd, unacked, sk_sndbuf (skmem tb), sk_wmem_queued (w) and notsent;
per connection (`ss -Mmni`) the msk's sk_sndbuf and sk_wmem_queued.

    sudo flock /tmp/cclab-kernel.lock env PYTHONPATH=$PWD/python python3 bench/s2_sndbuf_probe.py \\
        --duration 4 --out out/s2-sndbuf.json

Prints, per application and subflow, those figures at 0.1 s steps over the first `--until-s`
seconds (the simulator's are its flows trace: `sndbuf_bytes`, `wmem_queued_bytes`). Root only.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from pathlib import Path

import numpy as np
from s2_kernel_probe import _find_ns, msk_sample, ss_sample  # bench/

def sample(a: argparse.Namespace, out: dict) -> None:
    ns = _find_ns("snd", 60)
    sub, msk = [], []
    t0 = None
    end = time.monotonic() + a.duration + 30
    while time.monotonic() < end:
        rows = ss_sample(ns)
        if rows and t0 is None:
            t0 = time.monotonic()
        if t0 is not None:
            t = time.monotonic() - t0
            if t > a.until_s:
                break
            sub += [{**r, "t": t} for r in rows]
            msk += [{**r, "t": t} for r in msk_sample(ns, sender=True)]
        time.sleep(a.every_ms / 1000)
    out["subflows"], out["msk"] = sub, msk


#: Fields printed in KB (the others are counts).
_KB = {"sndbuf", "wmem_queued", "notsent"}


def table(rows: list[dict], key: tuple, fields: tuple, until_s: float) -> None:
    """Per ``key``, the latest sample's ``fields`` at each 0.1 s step up to ``until_s``."""
    for k in sorted({tuple(r[x] for x in key) for r in rows}):
        rs = [r for r in rows if tuple(r[x] for x in key) == k]
        line = []
        for t in np.arange(0.1, until_s + 1e-9, 0.1):
            before = [r for r in rs if r["t"] <= t]
            if before:
                r = before[-1]
                line.append(f"{t:.1f}:" + "/".join(f"{r[f] / (1000 if f in _KB else 1):.0f}" for f in fields))
        print(k, " ".join(line))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=4.0)
    ap.add_argument("--until-s", type=float, default=2.0)
    ap.add_argument("--every-ms", type=float, default=20.0)
    ap.add_argument("--out", default="out/s2-sndbuf.json")
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("root only (the kernel backend)")
    from cclab.kernel.backend import run_kernel
    from cclab.study.s2 import kernel_scenario

    d = kernel_scenario(0.0, a.duration, hystart=True)
    out: dict = {}
    th = threading.Thread(target=sample, args=(a, out), daemon=True)
    th.start()
    run_kernel(d, seed=1)
    th.join(timeout=30)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out))
    print("per subflow (app, local address): cwnd / unacked / sndbuf KB / wmem_queued KB / notsent KB")
    table(out["subflows"], ("app", "local"), ("cwnd", "unacked", "sndbuf", "wmem_queued", "notsent"), a.until_s)
    print("per connection: msk sndbuf KB / wmem_queued KB")
    table(out["msk"], ("app",), ("sndbuf", "wmem_queued"), a.until_s)


if __name__ == "__main__":
    main()
