"""The S1 network (Shimada, Yamaguchi, Oguchi): N Android terminals upload with CUBIC through one
802.11g access point, and a wired path with a round trip of 512 ms (Dummynet in the paper) to
a server.

    t1 ..\\
    t2 ---- cell (802.11g DCF) ---- ap ==== wan (256 ms each way) ==== srv
    tN ../

Terminal classes (``TERMINALS``): what the paper's phones and tablets are, as parameters. The
paper (Table 2) gives Nexus 5 (Android 5.1.1) and Nexus 7 (Android 6.0), both on Linux 3.4, and
says the tablet is the more capable device (CPU, memory). What follows from that, and what is
assumed, is in docs/studies.md ("S1 terminal classes"):

- Linux 3.4 has no TCP Small Queues (3.6 added them): ``tsq = "off"`` for both;
- the station's transmit queue is the interface's ``txqueuelen`` (1000 on Android's wlan0) and,
  in the cell, the station's DCF queue: a full queue is local congestion for TCP;
- the per-packet cost of the terminal's CPU, as the rate its driver can take packets
  (``device_rate_bps``): assumed, 30 Mbit/s for the smartphone and unlimited for the tablet;
  the ablation shows what it changes.
"""

from __future__ import annotations

from typing import Any

from .scenario_toml import to_toml

__all__ = ["TERMINALS", "AP_QUEUE_PKTS", "WAN_RTT_MS", "s1_scenario", "to_toml", "SHIPPED"]

#: Round trip of the wired part (Dummynet), ms.
WAN_RTT_MS = 512.0
#: The access point's transmit queue, packets (the Planex MZK-MF300N's is not published; ns-3's
#: WifiMacQueue default is 500 packets, small home routers hold 50-200).
AP_QUEUE_PKTS = 100

#: Terminal classes: the stack below TCP and the station's queue in the cell.
TERMINALS: dict[str, dict[str, Any]] = {
    "smartphone": {
        "description": "Nexus 5, Android 5.1.1, Linux 3.4: no TSQ, txqueuelen 1000, a CPU that "
                       "takes packets at 30 Mbit/s (assumed)",
        "short": "phones",
        "station_queue_pkts": 1000,
        "host": {"tsq": "off", "device_rate_bps": 30_000_000, "device_queue_pkts": 1000},
    },
    "tablet": {
        "description": "Nexus 7, Android 6.0, Linux 3.4: no TSQ, txqueuelen 1000, a CPU that "
                       "does not limit the cell",
        "short": "tablets",
        "station_queue_pkts": 1000,
        "host": {"tsq": "off"},
    },
}


def s1_scenario(n: int, terminal: str = "smartphone", *, duration_s: float = 60.0,
                ap_queue_pkts: int = AP_QUEUE_PKTS, cc: str = "cubic",
                middleware: dict[str, Any] | None = None, rate_adaptation: str = "none",
                start_stagger_s: float = 0.0) -> dict[str, Any]:
    """The S1 scenario with ``n`` terminals of class ``terminal``, as a scenario dict (every
    field a scenario file takes; ``load_scenario`` and ``--set`` work on it). ``rate_adaptation``:
    the cell's ("none": 54 Mbit/s fixed, as ns-3's ConstantRate; "arf", "aarf").
    ``start_stagger_s``: terminal k (from 0) starts uploading at k times this (0: all at once)."""
    if start_stagger_s < 0:
        raise ValueError(f"start_stagger_s: {start_stagger_s}; at least 0")
    if terminal not in TERMINALS:
        raise ValueError(f"terminal: {terminal!r} is not a terminal class; one of {sorted(TERMINALS)}")
    if n < 1:
        raise ValueError(f"n: {n} terminals; at least 1")
    cls = TERMINALS[terminal]
    names = [f"t{i}" for i in range(1, n + 1)]
    d: dict[str, Any] = {
        "name": f"s1-{cls['short']}-{n}",
        "description": f"S1: {n} {terminal}(s) ({cls['description']}) upload with {cc} through one 802.11g AP "
                       f"to a server {WAN_RTT_MS:g} ms away",
        "duration_s": duration_s,
        "nodes": [{"name": t, "host": dict(cls["host"])} for t in names]
        + [{"name": "ap", "kind": "router"}, {"name": "srv"}],
        "media": [{
            "name": "cell", "kind": "dcf", "standard": "802.11g", "nodes": [*names, "ap"],
            "queue_pkts": cls["station_queue_pkts"], "queue_pkts_by_node": {"ap": ap_queue_pkts},
        }],
        "links": [{"name": "wan", "endpoints": ["ap", "srv"], "rate_bps": "100Mbps",
                   "delay_ms": WAN_RTT_MS / 2, "queue_pkts": 1000}],
        "flows": [{"name": t, "sender": t, "receiver": "srv", "cc": cc} for t in names],
    }
    if start_stagger_s > 0:
        for k, f in enumerate(d["flows"]):
            f["start_s"] = k * start_stagger_s
    if rate_adaptation != "none":
        d["media"][0]["rate_adaptation"] = rate_adaptation
    if middleware is not None:
        d["middleware"] = dict(middleware)
    return d


#: The shipped scenario files (python/cclab/scenarios/<name>.toml): name -> (n, terminal).
SHIPPED = {f"s1-{c['short']}-{n}": (n, t) for t, c in TERMINALS.items() for n in (3, 6)}


if __name__ == "__main__":  # python -m cclab.study.s1_scenarios: rewrite the shipped files
    from pathlib import Path

    here = Path(__file__).resolve().parent.parent / "scenarios"
    for name, (n, t) in SHIPPED.items():
        head = (f"Written by `python -m cclab.study.s1_scenarios` from s1_scenario({n}, {t!r}); do not edit.\n"
                "S1: terminals -> 802.11g DCF cell -> AP -> wired, 512 ms round trip -> server.")
        (here / f"{name}.toml").write_text(to_toml(s1_scenario(n, t), head))
        print(here / f"{name}.toml")
