"""``cclab kernel monitor``: sample the TCP_INFO of chosen sockets of any process, through
sock_diag (pyroute2's DiagSocket; ~2 ms per dump here), into cclab's flows schema.

Sockets are seen in the network namespace the monitor runs in (``netns`` enters one first).
Only established connections are sampled; filters select by local/remote port and remote address.
"""

from __future__ import annotations

import socket
import time
from typing import Any

import pandas as pd

from .tcpinfo import TRACE_COLUMNS, to_trace_row

__all__ = ["monitor"]

_ESTABLISHED = 1
_INET_DIAG_INFO = 2  # extension bit (1 << (INET_DIAG_INFO - 1))


def _matches(m: Any, sport: int | None, dport: int | None, dst: str | None) -> bool:
    if m["idiag_state"] != _ESTABLISHED:
        return False
    if sport is not None and m["idiag_sport"] != sport:
        return False
    if dport is not None and m["idiag_dport"] != dport:
        return False
    return dst is None or m["idiag_dst"] == dst


def monitor(
    duration_s: float,
    interval_ms: float = 10.0,
    sport: int | None = None,
    dport: int | None = None,
    dst: str | None = None,
    netns: str | None = None,
) -> pd.DataFrame:
    """Sample matching sockets every ``interval_ms`` for ``duration_s``; one row per socket and
    sample, with ``flow`` = "src:sport->dst:dport"."""
    from pyroute2 import DiagSocket

    if netns is not None:
        from pyroute2 import netns as nsmod

        nsmod.setns(netns)
    rows: list[dict[str, Any]] = []
    with DiagSocket() as ds:
        ds.bind()
        t0 = time.monotonic()
        nxt = t0
        while True:
            now = time.monotonic()
            if now - t0 > duration_s:
                break
            for m in ds.get_sock_stats(family=socket.AF_INET, extensions=_INET_DIAG_INFO):
                if not _matches(m, sport, dport, dst):
                    continue
                info = m.get_attr("INET_DIAG_INFO")
                if info is None:
                    continue
                ti = {k[5:]: v for k, v in dict(info).items() if k.startswith("tcpi_")}
                row = to_trace_row(now - t0, ti)
                row["flow"] = f"{m['idiag_src']}:{m['idiag_sport']}->{m['idiag_dst']}:{m['idiag_dport']}"
                rows.append(row)
            nxt += interval_ms / 1000.0
            time.sleep(max(0.0, nxt - time.monotonic()))
    return pd.DataFrame(rows, columns=["flow", *TRACE_COLUMNS])
