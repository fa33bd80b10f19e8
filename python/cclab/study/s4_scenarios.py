"""The S4 network: five 802.11s mesh nodes in a line on one channel (2.4 GHz HT40, MCS 11), a flow
from ``n0`` to the node 1-4 hops away over static routes (the chain needs no HWMP path selection:
its one path is fixed). docs/mesh.md has the model and its measurements.

    n0 -- n1 -- n2 -- n3 -- n4        spacing_m apart, every node on the air of every other
"""

from __future__ import annotations

from typing import Any

from .scenario_toml import to_toml

__all__ = ["N_NODES", "s4_scenario", "to_toml", "SHIPPED"]

#: Nodes in the chain (the paper's five).
N_NODES = 5


def s4_scenario(hops: int, *, cc: str = "cubic", spacing_m: float = 1.0, environment: str = "anechoic",
                duration_s: float = 100.0, udp_rate_bps: float | None = None, ampdu: bool = False,
                frame_error_rate: float | None = None, retry_limit: int | None = None) -> dict[str, Any]:
    """The chain with one flow over ``hops`` hops as a scenario dict: TCP with ``cc``, or with
    ``udp_rate_bps`` a UDP constant-bit-rate stream. ``frame_error_rate`` and ``retry_limit``
    override the environment's per-attempt loss and the MAC's attempts (the residual per-hop
    loss that remains is what makes TCP fall faster than 1/n)."""
    if not 1 <= hops < N_NODES:
        raise ValueError(f"hops: {hops} is not accepted: 1..{N_NODES - 1}")
    dst = f"n{hops}"
    nodes: list[dict[str, Any]] = []
    for k in range(N_NODES):
        node: dict[str, Any] = {"name": f"n{k}"}
        if k not in (0, hops):
            node["kind"] = "router"
        routes: dict[str, str] = {}
        if k < hops:
            routes[dst] = f"n{k + 1}"
        if k > 0:
            routes["n0"] = f"n{k - 1}"
        node["routes"] = routes
        nodes.append(node)
    mesh: dict[str, Any] = {"name": "mesh", "kind": "mesh", "nodes": [f"n{k}" for k in range(N_NODES)],
                            "spacing_m": spacing_m, "mcs": 11, "channel_width_mhz": 40, "band_ghz": 2.4,
                            "ampdu": ampdu, "environment": environment, "queue_pkts": 1000}
    if frame_error_rate is not None:
        mesh["frame_error_rate"] = frame_error_rate
    if retry_limit is not None:
        mesh["retry_limit"] = retry_limit
    if udp_rate_bps is None:
        flow: dict[str, Any] = {"name": "bulk", "sender": "n0", "receiver": dst, "cc": cc}
        what = f"{cc.upper()} over {hops} hop(s)"
    else:
        flow = {"name": "cbr", "sender": "n0", "receiver": dst, "transport": "udp", "rate_bps": udp_rate_bps}
        what = f"UDP at {udp_rate_bps / 1e6:g} Mbit/s over {hops} hop(s)"
    return {
        "name": f"s4-chain-{hops}hop",
        "description": f"S4: {what} of a 5-node 802.11s chain (HT40 MCS 11, {spacing_m:g} m spacing, {environment})",
        "duration_s": duration_s,
        "nodes": nodes,
        "media": [mesh],
        "flows": [flow],
    }


#: The shipped scenario files :func:`s4_scenario` makes (a test keeps them equal).
SHIPPED = {f"s4-chain-{h}hop": {"hops": h} for h in range(1, N_NODES)}
