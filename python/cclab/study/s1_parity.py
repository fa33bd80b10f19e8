"""S1 on the kernel beside the simulator.

With ``backend = "kernel"`` every kernel run of the scaling and middleware grids has a simulator
twin: the same scenario and seed, run by the simulator; each carries a ``backend`` label, as S2's
and S4's kernel parts do. This module pairs them: per grid point the mean total throughput and Jain's
index on each backend, their ratio, and the middleware's gain (improved over off) on each; and a
figure of total throughput against N on both backends.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from .s1_figures import per_rate_control

__all__ = ["parity_table", "middleware_gains", "parity_figure"]

_KEYS = ["part", "rates", "terminal", "n_terminals", "variant"]


def parity_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per grid point: runs on each backend, mean total (Mbit/s) and Jain's index on each, and
    kernel over simulator. Empty when no run has a twin."""
    if runs.empty or not {"part", "backend"} <= set(runs.columns):
        return pd.DataFrame()
    rows = runs[runs["ok"].astype(bool) & runs["part"].isin(["scaling", "middleware"]) & runs["backend"].notna()]
    if set(rows["backend"]) != {"kernel", "sim"}:
        return pd.DataFrame()
    g = rows.groupby([*_KEYS, "backend"], sort=False).agg(runs=("total_mbps", "size"),
                                                         total_mbps=("total_mbps", "mean"), jain=("jain", "mean"))
    t = g.unstack("backend")
    t.columns = [f"{m}_{b}" for m, b in t.columns]
    t = t.reset_index()
    t["kernel_over_sim"] = t["total_mbps_kernel"] / t["total_mbps_sim"]
    cols = [*_KEYS, "runs_kernel", "runs_sim", "total_mbps_kernel", "total_mbps_sim", "kernel_over_sim",
            "jain_kernel", "jain_sim"]
    return t[[c for c in cols if c in t]]


def middleware_gains(parity: pd.DataFrame) -> pd.DataFrame:
    """The improved middleware's change of the mean total and of Jain's index against off, per rate
    control, class and N, on each backend."""
    if parity.empty:
        return pd.DataFrame()
    mw = parity[parity["part"] == "middleware"]
    out = []
    for (rates, terminal, n), g in mw.groupby(["rates", "terminal", "n_terminals"], sort=False):
        v = g.set_index("variant")
        if not {"improved", "off"} <= set(v.index):
            continue
        row = {"rates": rates, "terminal": terminal, "n_terminals": n}
        for b in ("kernel", "sim"):
            row[f"throughput_gain_{b}"] = v.loc["improved", f"total_mbps_{b}"] / v.loc["off", f"total_mbps_{b}"] - 1
            row[f"fairness_gain_{b}"] = v.loc["improved", f"jain_{b}"] / v.loc["off", f"jain_{b}"] - 1
        out.append(row)
    return pd.DataFrame(out)


def parity_figure(parity: pd.DataFrame, stem: Path) -> Path | None:
    """Total throughput against N, middleware off, kernel (solid) and simulator (dashed), one panel
    per rate control."""
    s = parity[parity["part"] == "scaling"] if len(parity) else parity
    if s.empty:
        return None

    def draw(ax: Any, r: str) -> None:
        for i, (terminal, g) in enumerate(s[s["rates"] == r].groupby("terminal", sort=True)):
            g = g.sort_values("n_terminals")
            for b, ls in (("kernel", "-"), ("sim", "--")):
                ax.plot(g["n_terminals"], g[f"total_mbps_{b}"], ls=ls, marker="o", ms=4, color=f"C{3 * i}",
                        label=f"{terminal}s, {'kernel' if b == 'kernel' else 'simulator'}")
        ax.set_ylim(bottom=0)

    return per_rate_control(list(dict.fromkeys(s["rates"])), draw, "terminals on the AP (N)", "total throughput (Mbit/s)",
                            "S1 on the kernel (solid) and the simulator (dashed): same scenarios, same seeds, "
                            "middleware off", stem)
