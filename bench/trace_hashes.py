"""Hash the core's output tables for a fixed set of scenarios, to prove a refactor leaves every
trace bit-identical: run once before the change (`--write FILE`), once after (`--check FILE`).

    python bench/trace_hashes.py --write /tmp/before.json
    python bench/trace_hashes.py --check /tmp/before.json

The set: every shipped dumbbell scenario (10 s each) and mixes that exercise access links,
several senders and receivers, every algorithm family, ECN, outages and Gilbert-Elliott loss.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from typing import Any

import numpy as np

from cclab import _core
from cclab.scenario import load_scenario, shipped_scenarios


def _mixes() -> dict[str, dict[str, Any]]:
    access = lambda d, r=None: {"delay_ms": d, **({"rate_bps": r} if r else {})}  # noqa: E731
    base = {"duration_s": 10, "bottleneck": {"rate_bps": 20e6, "delay_ms": 10, "queue_pkts": 100, "loss": 1e-4}}
    hosts = {
        "senders": [{"name": "a", "access": access(2, 50e6)}, {"name": "b", "access": access(15)},
                    {"name": "c"}],
        "receivers": [{"name": "x", "access": {"delay_ms": 1, "reverse": {"delay_ms": 4, "loss": 0.01}}},
                      {"name": "y"}],
    }
    algos = ["reno", "cubic", "bbr", "bbr2", "bbr3", "westwood", "vegas", "cubic-xnu", "htcp", "illinois"]
    out: dict[str, dict[str, Any]] = {}
    out["mix-hosts"] = {**base, **hosts, "flows": [
        {"sender": s, "receiver": r, "cc": c, "start_s": k * 0.5}
        for k, (s, r, c) in enumerate([("a", "x", "cubic"), ("b", "y", "reno"), ("c", "x", "bbr"),
                                       ("a", "y", "bbr2")])]}
    for c in algos:
        out[f"algo-{c}"] = {**base, "flows": [{"cc": c}, {"cc": c, "start_s": 1.0}]}
    out["ecn"] = {**base, "bottleneck": {**base["bottleneck"], "ecn_threshold_pkts": 20},
                  "flows": [{"cc": "cubic", "ecn": "on"}, {"cc": "bbr2", "ecn": "low"}]}
    out["outage-ge"] = {**base, "bottleneck": {"rate_bps": 10e6, "delay_ms": 30, "queue_bytes": 150000,
                                               "loss_model": {"kind": "gilbert_elliott", "p_good_bad": 0.001,
                                                              "p_bad_good": 0.3, "loss_bad": 0.5},
                                               "outages": [{"start_s": 3, "duration_s": 1.5}],
                                               "delay_spikes": [{"start_s": 6, "duration_s": 1,
                                                                 "extra_delay_ms": 400}]},
                        "flows": [{"cc": "cubic", "sack": False}, {"cc": "reno", "timestamps": False}]}
    out["trace-ack"] = {**base, "sim": {"trace": "ack"}, "flows": [{"cc": "cubic", "size_bytes": 2_000_000}]}
    # Windows of 10^4 to 10^5 segments (the retransmission queue's indices, tcp/skb.rs): a huge
    # initial window into a small queue; large windows at 2 Gbit/s with bursts of loss, a delay
    # spike (spurious RTOs and undos), SACK and NewReno, CUBIC and BBR. No send buffer: Linux's
    # 4 MiB tcp_wmem[2] would cap the flights at about 2800 segments (tcp/sndbuf.rs).
    out["window-initial"] = {"duration_s": 1, "host": {"sndbuf": "unlimited"},
                             "bottleneck": {"rate_bps": 1e9, "delay_ms": 5, "queue_pkts": 50},
                             "flows": [{"cc": "cubic", "initial_cwnd_pkts": 100_000}]}
    out["window-large"] = {"duration_s": 4, "host": {"sndbuf": "unlimited"}, "bottleneck": {
        "rate_bps": 2e9, "delay_ms": 40, "queue_pkts": 15000,
        "loss_model": {"kind": "gilbert_elliott", "p_good_bad": 2e-5, "p_bad_good": 0.05, "loss_bad": 0.5},
        "delay_spikes": [{"start_s": 2.5, "duration_s": 0.3, "extra_delay_ms": 300}]},
        "flows": [{"cc": "cubic", "initial_cwnd_pkts": 5000}, {"cc": "reno", "sack": False, "initial_cwnd_pkts": 3000},
                  {"cc": "bbr", "start_s": 0.5}]}
    return out


def scenarios() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in shipped_scenarios():
        out[f"shipped-{name}"] = load_scenario(name, duration_s=10)
    for name, d in _mixes().items():
        out[name] = load_scenario({"name": name, **d})
    return out


def digest(core_json: str, ignore: frozenset[str] = frozenset()) -> dict[str, str]:
    """Hashes of the tables and the counters; `ignore` leaves out columns and per-flow or
    per-link counters by name (a newly added one, to check that nothing else moved)."""
    raw = _core.simulate(core_json, None)
    out = {}
    for table in ("flows", "links", "events"):
        h = hashlib.sha256()
        for col in sorted(set(raw[table]) - ignore):
            v = raw[table][col]
            h.update(col.encode())
            h.update(np.ascontiguousarray(v).tobytes() if isinstance(v, np.ndarray) else json.dumps(v).encode())
        out[table] = h.hexdigest()[:16]
    stats = {k: raw[k] for k in ("flow_stats", "link_stats", "link_names", "events_processed")}
    for k in ("flow_stats", "link_stats"):
        stats[k] = [{c: v for c, v in row.items() if c not in ignore} for row in stats[k]]
    out["stats"] = hashlib.sha256(json.dumps(stats, sort_keys=True).encode()).hexdigest()[:16]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", help="write the hashes to this JSON file")
    g.add_argument("--check", help="compare with the hashes in this JSON file")
    ap.add_argument("--ignore", default="", metavar="COL,...",
                    help="columns and counters to leave out (new ones, when the reference predates them)")
    a = ap.parse_args()
    ignore = frozenset(c for c in a.ignore.split(",") if c)
    got = {name: digest(sc.to_core_json(), ignore) for name, sc in scenarios().items()}
    if a.write:
        with open(a.write, "w") as f:
            json.dump(got, f, indent=1, sort_keys=True)
        print(f"{len(got)} scenarios hashed -> {a.write}")
        return 0
    with open(a.check) as f:
        want = json.load(f)
    bad = [n for n in want if want[n] != got.get(n)]
    for n in bad:
        print(f"DIFFERENT {n}: {want[n]} -> {got.get(n)}")
    print(f"{len(want) - len(bad)} of {len(want)} scenarios bit-identical")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
