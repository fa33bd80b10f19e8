"""The S3 network: a server downloading to a terminal over a 3G (IMT-2000) radio bearer, 384 kbit/s
down and 64 kbit/s up, 300 ms base RTT, RLC acknowledged mode and the mobility class's delay
spikes (docs/scenario.md#radio-links); TCP with the paper's W-TCP profile (cwnd at most 64 KB,
initial window 4 KB, SACK, MTU 1500).

    server ==(radio bearer: 384k down / 64k up, RLC AM, spikes)== terminal

A workload of connections one after another (docs/scenario.md "Workloads") gives the per-connection
figures: the web mix of section 4, or a fixed content size of section 6.
"""

from __future__ import annotations

from typing import Any

from .scenario_toml import to_toml

__all__ = ["s3_scenario", "SHIPPED", "to_toml", "MOBILITIES", "SIZES_BYTES", "DETECTION", "BDP_PKTS",
           "WTCP_MAX_CWND_PKTS", "WTCP_INITIAL_CWND_PKTS", "MSS_BYTES"]

#: The paper's mobility classes (its Table 3), the radio link's presets.
MOBILITIES = ("static-strong", "static-weak", "walking", "car", "express-train")

#: The paper's content sizes (section 6: mail, web, video), kB = 1000 bytes.
SIZES_BYTES = {"6KB": 6_000, "18KB": 18_000, "300KB": 300_000, "2MB": 2_000_000}

#: W-TCP (the paper's ref. 17; `profile = "w-tcp"`, docs/scenario.md): cwnd at most 64 KB and an
#: initial window of 4 KB in 1460-byte segments (MTU 1500). The builder writes the fields out
#: (section 5 caps cwnd at the BDP instead).
WTCP_MAX_CWND_PKTS = 44
WTCP_INITIAL_CWND_PKTS = 3
MSS_BYTES = 1460

#: The path's BDP at 384 kbit/s x 300 ms in 1460-byte segments (the paper: "at most 10 packets").
BDP_PKTS = 10

#: Spurious-timeout handling per setting: the paper's server with F-RTO and the Eifel response,
#: and without either (a plain RFC 2988 sender: no detection, go-back-N, cwnd 1 and ssthresh
#: halved).
DETECTION: dict[str, dict[str, Any]] = {
    "frto+eifel": {"frto": True, "eifel_detection": True, "dsack_undo": True, "sto_response": "eifel"},
    "none": {"frto": False, "eifel_detection": False, "dsack_undo": False, "sto_response": "reno"},
    "linux": {},
}


def s3_scenario(mobility: str = "static-weak", *, size_bytes: int = 0, connections: int = 1,
                sizes: str = "fixed", think_time_s: float = 1.0, rto_profile: str = "standard",
                detection: str = "linux", duration_s: float = 600.0, max_cwnd_pkts: int = WTCP_MAX_CWND_PKTS,
                initial_cwnd_pkts: int = WTCP_INITIAL_CWND_PKTS, rto_ms: float | None = None,
                radio: bool = True, spike: tuple[float, float] | None = None, name: str | None = None,
                radio_overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The 3G download as a scenario dict.

    ``rto_ms`` sets the initial and minimum RTO to one value (section 4's sweep, RFC 6298's
    minimum rule as the paper's server) instead of ``rto_profile``. ``radio = False`` leaves out
    the RLC and the random spikes (section 5's line emulator: rates and delay only); ``spike``
    adds one scheduled delay spike (start_s, duration_s) on the downlink; ``radio_overrides`` sets
    fields of the radio table over the class's preset (e.g. ``pdu_loss``, ``max_dat``)."""
    if mobility not in MOBILITIES:
        raise ValueError(f"mobility: {mobility!r} is not accepted: one of {', '.join(MOBILITIES)}")
    bottleneck: dict[str, Any] = {"queue_pkts": 100}
    if radio:
        bottleneck["radio"] = {"mobility": mobility}
        bottleneck["radio"] |= radio_overrides or {}
    else:
        bottleneck |= {"rate_bps": 384_000, "delay_ms": 150, "reverse": {"rate_bps": 64_000}}
    if spike is not None:
        # The model's spike: the downlink delivers nothing for tau. The packets leaving in the
        # spike's first 40 ms (a 1500-byte packet takes 31 ms at 384 kbit/s, so at least one) are
        # held tau longer, and the link never reorders, so everything behind them waits too.
        bottleneck["delay_spikes"] = [{"start_s": spike[0], "duration_s": 0.04, "extra_delay_ms": 1000 * spike[1]}]
    flow: dict[str, Any] = {"name": "download", "cc": "reno", "size_bytes": size_bytes, "mss_bytes": MSS_BYTES,
                            "max_cwnd_pkts": max_cwnd_pkts, "initial_cwnd_pkts": initial_cwnd_pkts, "sack": True,
                            **DETECTION[detection]}
    if rto_ms is not None:
        flow |= {"rto_initial_ms": rto_ms, "rto_min_ms": rto_ms, "rto_min_mode": "rfc6298"}
    else:
        flow["rto_profile"] = rto_profile
    if connections > 1 or sizes != "fixed":
        flow["workload"] = {"connections": connections, "sizes": sizes, "think_time_s": think_time_s,
                            "think_time_dist": "exponential"}
    what = f"{sizes} mix" if sizes != "fixed" else f"{size_bytes / 1000:g} kB" if size_bytes else "bulk"
    return {
        "name": name or f"s3-{mobility}",
        "description": f"S3: {connections} download(s) ({what}) over a 3G link ({mobility}), W-TCP, Reno",
        "duration_s": duration_s,
        "bottleneck": bottleneck,
        "flows": [flow],
    }


#: Shipped scenario files :func:`s3_scenario` makes (a test keeps them equal).
SHIPPED: dict[str, dict[str, Any]] = {
    "s3-walk-2MB": {"mobility": "walking", "size_bytes": 2_000_000, "duration_s": 120.0, "name": "s3-walk-2MB"},
    "s3-web-static-weak": {"mobility": "static-weak", "connections": 200, "sizes": "web", "duration_s": 1800.0,
                           "name": "s3-web-static-weak"},
}
