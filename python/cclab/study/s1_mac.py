"""The S1 cell's MAC per run and per station: the PHY rate each station used (``mean_rate_bps``,
where ARF's stepping down shows), its collision probability and retry-limit drops, and the AP's
queue drops, from the sweep's ``<lane>.mac.<field>`` columns (summary.json's ``links[].mac``).

Per run (:func:`add_mac_columns`), for the cell's access point ``ap`` and its terminals:
``ap_rate_mbps``, ``terminal_rate_mbps`` (the mean over the terminals of each one's mean rate),
``terminal_rate_min_mbps``, ``collision_prob`` (all the cell's collisions over all its attempts),
``ap_collision_prob``, ``retry_drops`` (frames the cell dropped at the retry limit),
``ap_queue_drops_pkts`` (packets refused by the AP's full queue: the terminals' ACKs and the
middleware's relayed broadcasts); with the middleware on, ``count_share``: the mean count of
terminals it heard at its steps over N (1: every step counted every terminal).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

__all__ = ["MAC_RUN_METRICS", "add_mac_columns", "stations_table"]

#: The per-run MAC columns :func:`add_mac_columns` adds (aggregated beside throughput).
MAC_RUN_METRICS = ["ap_rate_mbps", "terminal_rate_mbps", "terminal_rate_min_mbps", "collision_prob",
                   "ap_collision_prob", "retry_drops", "ap_queue_drops_pkts", "count_share"]

_COL = re.compile(r"^(?P<medium>[^.]+)\.(?P<node>[^.]+)\.mac\.(?P<field>\w+)$")
AP = "ap"


def _stations(columns: pd.Index) -> dict[str, str]:
    """Station node -> its lane (``<medium>.<node>``) among the run table's MAC columns."""
    out: dict[str, str] = {}
    for c in columns:
        m = _COL.match(str(c))
        if m:
            out.setdefault(m["node"], f"{m['medium']}.{m['node']}")

    def order(node: str) -> tuple[bool, int, str]:  # the AP, then t1, t2, ..., t10 in number order
        digits = "".join(ch for ch in node if ch.isdigit())
        return (node != AP, int(digits) if digits else 0, node)

    return {node: out[node] for node in sorted(out, key=order)}


def add_mac_columns(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with :data:`MAC_RUN_METRICS` (NaN where a run has no MAC counters, e.g. one read
    back from a cache written before they were recorded)."""
    lanes = _stations(runs.columns)
    terminals = [lane for node, lane in lanes.items() if node != AP]
    ap = lanes.get(AP)

    def col(lane: str | None, field: str) -> pd.Series:
        key = f"{lane}.mac.{field}" if lane else ""
        return pd.to_numeric(runs[key], errors="coerce") if key in runs else pd.Series(np.nan, index=runs.index)

    def over(field: str) -> pd.DataFrame:
        return pd.concat([col(lane, field) for lane in lanes.values()], axis=1) if lanes else pd.DataFrame(
            index=runs.index)

    rates = pd.concat([col(t, "mean_rate_bps") for t in terminals], axis=1) if terminals else None
    attempts, collisions = over("attempts"), over("collisions")
    queue = f"{ap}.dropped_queue_full_pkts"
    has = attempts.notna().any(axis=1) if lanes else pd.Series(False, index=runs.index)
    out = {
        "ap_rate_mbps": col(ap, "mean_rate_bps") / 1e6,
        "terminal_rate_mbps": rates.mean(axis=1) / 1e6 if rates is not None else np.nan,
        "terminal_rate_min_mbps": rates.min(axis=1) / 1e6 if rates is not None else np.nan,
        "collision_prob": (collisions.sum(axis=1) / attempts.sum(axis=1).replace(0, np.nan)).where(has),
        "ap_collision_prob": col(ap, "collision_prob"),
        "retry_drops": over("retry_drops").sum(axis=1, min_count=1).where(has),
        "ap_queue_drops_pkts": (pd.to_numeric(runs[queue], errors="coerce").fillna(0) if queue in runs
                                else pd.Series(np.nan, index=runs.index)).where(has),
    }
    heard = "middleware_terminals_mean"
    out["count_share"] = (pd.to_numeric(runs[heard], errors="coerce") / runs["n_terminals"]
                          if heard in runs and "n_terminals" in runs else pd.Series(np.nan, index=runs.index))
    return runs.assign(**out)


def _mean(g: pd.DataFrame, key: str) -> float:
    x = pd.to_numeric(g[key], errors="coerce") if key in g else pd.Series(dtype=float)
    return float(x.mean()) if x.notna().any() else float("nan")


def stations_table(runs: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """One row per ``by`` group and station: the mean over the group's runs of the station's
    mean PHY rate (Mbit/s), collision probability, retry-limit drops and queue drops."""
    lanes = _stations(runs.columns)
    rows = []
    for keys, g in runs.groupby(by, sort=True):
        keys = keys if isinstance(keys, tuple) else (keys,)
        for node, lane in lanes.items():
            key = f"{lane}.mac.mean_rate_bps"
            rate = pd.to_numeric(g[key], errors="coerce") if key in g else pd.Series(dtype=float)
            if rate.notna().sum() == 0:  # a station of a larger N than this group's
                continue
            rows.append(dict(zip(by, keys)) | {
                "station": node, "runs": int(rate.notna().sum()), "rate_mbps": float(rate.mean()) / 1e6,
                "collision_prob": _mean(g, f"{lane}.mac.collision_prob"),
                "retry_drops": _mean(g, f"{lane}.mac.retry_drops"),
                "queue_drops_pkts": _mean(g, f"{lane}.dropped_queue_full_pkts")})
    return pd.DataFrame(rows)
