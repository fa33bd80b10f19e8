"""Figures of a run: cwnd and ssthresh over time, queue occupancy."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

if TYPE_CHECKING:
    from .result import RunResult

__all__ = ["plot_cwnd", "plot_queue"]


def plot_cwnd(result: "RunResult", path: str | Path) -> Path:
    """cwnd (solid) and ssthresh (dashed, hidden while infinite) per flow over time; a
    Multipath TCP connection's subflows each get a line, named ``<flow> subflow <k>``."""
    fig, ax = plt.subplots(figsize=(9, 4.5), dpi=110)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    # A Multipath TCP connection has a line per subflow (its rows share the flow's name).
    f = result.flows
    multi = set(f.loc[f["subflow"] > 0, "flow"])
    for i, ((flow, sub), rows) in enumerate(f.groupby(["flow", "subflow"], observed=True)):
        name = f"{flow} subflow {int(sub)}" if flow in multi else str(flow)
        c = colors[i % len(colors)]
        ax.step(rows["t_s"], rows["cwnd_pkts"], where="post", color=c, lw=1.0, label=f"{name} cwnd")
        ss = rows["ssthresh_pkts"].astype("float64")
        if ss.notna().any():
            ax.step(rows["t_s"], ss, where="post", color=c, lw=0.9, ls="--", alpha=0.7, label=f"{name} ssthresh")
    ax.set_xlim(0, result.scenario.duration_s)
    title = f"{result.scenario.name}: cwnd and ssthresh (seed {result.seed})"
    return _finish(fig, ax, "window (packets)", title, path)


def plot_queue(result: "RunResult", path: str | Path) -> Path:
    """Queue occupancy (packets) of every link over time."""
    fig, ax = plt.subplots(figsize=(9, 3.5), dpi=110)
    for name, rows in result.links.groupby("link", observed=True):
        ax.plot(rows["t_s"], rows["queue_pkts"], lw=0.8, label=str(name))
    return _finish(fig, ax, "queue (packets)", f"{result.scenario.name}: queue occupancy", path)


def _finish(fig: "plt.Figure", ax: "plt.Axes", ylabel: str, title: str, path: str | Path) -> Path:
    """Common labels, grid and legend of a time-series figure; save it and free it."""
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.set_ylim(bottom=0)
    if len(ax.get_lines()):
        ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    p = Path(path)
    fig.savefig(p)
    plt.close(fig)
    return p
