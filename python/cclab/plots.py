"""Figures of a run: cwnd and ssthresh over time, queue occupancy.

Drawn with matplotlib's object-oriented API on an Agg canvas: no pyplot (its import and a
backend switch that would change a notebook's), no pandas (the run's numpy columns).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from matplotlib import rcParams
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from .result import RunResult

__all__ = ["plot_cwnd", "plot_queue"]


def plot_cwnd(result: "RunResult", path: str | Path) -> Path:
    """cwnd (solid) and ssthresh (dashed, hidden while infinite) per flow over time; a
    Multipath TCP connection's subflows each get a line, named ``<flow> subflow <k>``."""
    fig, ax = _figure(4.5)
    colors = rcParams["axes.prop_cycle"].by_key()["color"]
    f = result.table("flows")
    flow, names = f["flow"].values, f["flow"].categories
    sub = np.asarray(f["subflow"].values, dtype=np.int64)
    t, cwnd = f["t_s"].values, f["cwnd_pkts"].values
    ss = f["ssthresh_pkts"]
    ssthresh = ss.values.astype(np.float64) if ss.mask is None else np.where(ss.mask, np.nan, ss.values)
    # A Multipath TCP connection has a line per subflow (its rows share the flow's name).
    multi = set(flow[sub > 0].tolist())
    for i, (code, k, rows) in enumerate(_groups(flow, sub)):
        name = f"{names[code]} subflow {k}" if code in multi else str(names[code])
        c = colors[i % len(colors)]
        ax.step(t[rows], cwnd[rows], where="post", color=c, lw=1.0, label=f"{name} cwnd")
        if np.any(~np.isnan(ssthresh[rows])):
            ax.step(t[rows], ssthresh[rows], where="post", color=c, lw=0.9, ls="--", alpha=0.7,
                    label=f"{name} ssthresh")
    ax.set_xlim(0, result.scenario.duration_s)
    title = f"{result.scenario.name}: cwnd and ssthresh (seed {result.seed})"
    return _finish(fig, ax, "window (packets)", title, path)


def plot_queue(result: "RunResult", path: str | Path) -> Path:
    """Queue occupancy (packets) of every link over time."""
    fig, ax = _figure(3.5)
    lk = result.table("links")
    link, names = lk["link"].values, lk["link"].categories
    t, queue = lk["t_s"].values, lk["queue_pkts"].values
    for code, _, rows in _groups(link, np.zeros(len(link), dtype=np.int64)):
        ax.plot(t[rows], queue[rows], lw=0.8, label=str(names[code]))
    return _finish(fig, ax, "queue (packets)", f"{result.scenario.name}: queue occupancy", path)


def _groups(codes: np.ndarray, sub: np.ndarray) -> list[tuple[int, int, np.ndarray]]:
    """The rows of each (category code, subflow) pair present, in the order of
    ``groupby(["flow", "subflow"], observed=True)``: by code, then subflow; rows in order."""
    codes = np.asarray(codes, dtype=np.int64)
    keep = np.flatnonzero(codes >= 0)
    order = keep[np.lexsort((sub[keep], codes[keep]))]  # stable: rows stay in time order
    out = []
    if len(order) == 0:
        return out
    c, s = codes[order], sub[order]
    starts = np.flatnonzero(np.r_[True, (c[1:] != c[:-1]) | (s[1:] != s[:-1])])
    for a, b in zip(starts, np.r_[starts[1:], len(order)]):
        out.append((int(c[a]), int(s[a]), order[a:b]))
    return out


def _figure(height_in: float) -> tuple[Figure, "Axes"]:
    fig = Figure(figsize=(9, height_in), dpi=110)
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def _finish(fig: Figure, ax: "Axes", ylabel: str, title: str, path: str | Path) -> Path:
    """Common labels, grid and legend of a time-series figure; save it."""
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
    return p
