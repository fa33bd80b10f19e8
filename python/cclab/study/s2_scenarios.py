"""The S2 network (Izumi, Tarutani, Fukushima, Yokohira): a sender and a receiver joined by three
paths, each through its own network emulator (NE1-NE3), and applications that each open one
Multipath TCP connection over every path, started 0.5 s apart.

    snd =if1= ne1 ---- rcv
        =if2= ne2 ----
        =if3= ne3 ----

Each of the sender's interfaces has a queue of 1000 packets (``txqueuelen``) drained by its NIC
(``device_rate_bps``); each subflow of each application enters the interface of its path, so
every interface is shared by one subflow of every application. The paper gives no rates. The
NIC is what the applications share, so it must be the bottleneck (otherwise the interface queue
never holds anything and there is no local congestion in the paper's sense): the NIC runs at
``NIC_RATE_BPS`` and the emulators' links at ``PATH_RATE_BPS``, ten times more, so nothing queues
beyond the sender. Loss (0 or 1e-5, the paper's 0.001 %) is the emulator's, on the link to the
receiver.
"""

from __future__ import annotations

from typing import Any

from .scenario_toml import to_toml

__all__ = ["NIC_RATE_BPS", "PATH_RATE_BPS", "IFQ_PKTS", "RTT_MS", "START_GAP_S", "s2_scenario", "to_toml", "SHIPPED"]

#: Each sender interface's NIC, bit/s: the bottleneck (see the module doc).
NIC_RATE_BPS = 50_000_000
#: Each emulator's links, bit/s (10 x the NIC: no queue beyond the sender).
PATH_RATE_BPS = 500_000_000
#: The interface queue, packets (the paper's IFQ).
IFQ_PKTS = 1000
#: Round trip of each path, ms (the paper's 50 ms).
RTT_MS = 50.0
#: Applications start this far apart, s.
START_GAP_S = 0.5


def s2_scenario(n_apps: int = 3, *, cc: str = "lia", tsq: str = "paper", loss: float = 0.0,
                rtts_ms: tuple[float, ...] = (RTT_MS, RTT_MS, RTT_MS), duration_s: float = 30.0,
                nic_rate_bps: int = NIC_RATE_BPS, tsq_limit_bytes: int | None = None,
                mptcp_stack: str = "v0.9x", device_release: str | None = None,
                hystart: bool = True) -> dict[str, Any]:
    """The S2 scenario as a scenario dict: ``n_apps`` applications, one Multipath TCP connection
    each over every path (one path per entry of ``rtts_ms``), ``cc`` on every subflow, the
    sender's TSQ rule ``tsq`` ("paper": the paper's eq. 2, what its v0.92 kernel ran; "linux":
    6.18's; "fixed": eq. 3, 131072 bytes unless ``tsq_limit_bytes``; "adaptive": cclab's).
    ``mptcp_stack``: "v0.9x" (the paper's kernel) or "linux" (upstream 6.18, the kernel
    backend's); ``device_release``: the hosts' (None: the default, a NIC's); ``hystart`` False
    turns CUBIC's HyStart off on every subflow."""
    if n_apps < 1:
        raise ValueError(f"n_apps: {n_apps} is not accepted: at least 1")
    paths = range(1, len(rtts_ms) + 1)
    host: dict[str, Any] = {"device_rate_bps": nic_rate_bps, "device_queue_pkts": IFQ_PKTS, "tsq": tsq}
    if tsq_limit_bytes is not None:
        host["tsq_limit_bytes"] = tsq_limit_bytes
    if device_release is not None:
        host["device_release"] = device_release
    nodes: list[dict[str, Any]] = [{"name": "snd"}, {"name": "rcv"}]
    nodes += [{"name": f"ne{k}", "kind": "router"} for k in paths]
    links: list[dict[str, Any]] = []
    for k, rtt in zip(paths, rtts_ms):
        quarter = rtt / 4  # two links each way
        links.append({"name": f"if{k}", "endpoints": ["snd", f"ne{k}"], "rate_bps": PATH_RATE_BPS,
                      "delay_ms": quarter})
        links.append({"name": f"ne{k}", "endpoints": [f"ne{k}", "rcv"], "rate_bps": PATH_RATE_BPS,
                      "delay_ms": quarter, "loss": loss})
    flows = [{"name": f"app{a + 1}", "sender": "snd", "receiver": "rcv", "transport": "mptcp", "cc": cc,
              "start_s": round(a * START_GAP_S, 6), "paths": [["snd", f"ne{k}", "rcv"] for k in paths]}
             for a in range(n_apps)]
    for f in flows:
        if mptcp_stack != "v0.9x":
            f["mptcp_stack"] = mptcp_stack
        if not hystart:
            f["cc_params"] = {"hystart": False}
    return {
        "name": f"s2-{n_apps}-apps",
        "description": f"S2: {n_apps} MPTCP applications ({cc}) over {len(rtts_ms)} paths sharing the sender's "
                       f"interfaces (NIC {nic_rate_bps / 1e6:g} Mbit/s, IFQ {IFQ_PKTS} packets, TSQ {tsq}), "
                       f"loss {loss:g}",
        "duration_s": duration_s,
        # Sampled every 10 ms: a flow held by TSQ keeps its cwnd, so a trace of changes would
        # stop when its window does, and each application's rate once all run is read from it.
        "sim": {"trace": "interval", "trace_interval_ms": 10.0},
        # Every host's stack (`--set host.tsq=fixed` changes it): the receiver's NICs carry only
        # ACKs.
        "host": host,
        "nodes": nodes,
        "links": links,
        "flows": flows,
    }


#: The shipped scenario files made from :func:`s2_scenario` (a test keeps them equal).
SHIPPED = {"s2-three-apps": {"n_apps": 3}}
