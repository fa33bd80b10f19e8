"""Figures of a run: cwnd and ssthresh over time, queue occupancy.

Drawn with matplotlib's object-oriented API on an Agg canvas: no pyplot (its import and a
backend switch that would change a notebook's), no pandas (the run's numpy columns).
``figure_data`` (what to draw) does not import matplotlib; ``draw`` does.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from .result import RunResult

__all__ = ["plot_cwnd", "plot_queue", "figure_data", "draw"]


def plot_cwnd(result: "RunResult", path: str | Path) -> Path:
    """cwnd (solid) and ssthresh (dashed, hidden while infinite) per flow over time; a
    Multipath TCP connection's subflows each get a line, named ``<flow> subflow <k>``."""
    return draw("cwnd", cwnd_lines(result), path)


def plot_queue(result: "RunResult", path: str | Path) -> Path:
    """Queue occupancy (packets) of every link over time."""
    return draw("queue", queue_lines(result), path)


def figure_data(result: "RunResult") -> dict[str, dict[str, Any]]:
    """What each figure of ``RunResult.write`` draws (``cwnd.png``, ``queue.png``), as plain
    numpy arrays and strings (picklable: cclab/figure_worker.py draws them in another process)."""
    return {"cwnd": cwnd_lines(result), "queue": queue_lines(result)}


def cwnd_lines(result: "RunResult") -> dict[str, Any]:
    """The cwnd figure's lines: per (flow, subflow) its times, cwnd and ssthresh (None when
    always infinite), in ``groupby(["flow", "subflow"])`` order."""
    f = result.table("flows")
    flow, names = f["flow"].values, f["flow"].categories
    sub = np.asarray(f["subflow"].values, dtype=np.int64)
    t, cwnd = f["t_s"].values, f["cwnd_pkts"].values
    ss = f["ssthresh_pkts"]
    ssthresh = ss.values.astype(np.float64) if ss.mask is None else np.where(ss.mask, np.nan, ss.values)
    # A Multipath TCP connection has a line per subflow (its rows share the flow's name).
    multi = set(flow[sub > 0].tolist())
    lines = []
    for code, k, rows in _groups(flow, sub):
        name = f"{names[code]} subflow {k}" if code in multi else str(names[code])
        s = ssthresh[rows]
        lines.append((name, t[rows], cwnd[rows], s if np.any(~np.isnan(s)) else None))
    return {"lines": lines, "duration_s": result.scenario.duration_s,
            "title": f"{result.scenario.name}: cwnd and ssthresh (seed {result.seed})"}


def queue_lines(result: "RunResult") -> dict[str, Any]:
    """The queue figure's lines: per link its times and queue lengths."""
    lk = result.table("links")
    link, names = lk["link"].values, lk["link"].categories
    t, queue = lk["t_s"].values, lk["queue_pkts"].values
    lines = [(str(names[code]), t[rows], queue[rows])
             for code, _, rows in _groups(link, np.zeros(len(link), dtype=np.int64))]
    return {"lines": lines, "title": f"{result.scenario.name}: queue occupancy"}


def draw(kind: str, data: dict[str, Any], path: str | Path) -> Path:
    """Draw the ``cwnd`` or ``queue`` figure of ``figure_data`` into ``path`` (PNG)."""
    if kind == "cwnd":
        from matplotlib import rcParams

        fig, ax = _figure(4.5)
        colors = rcParams["axes.prop_cycle"].by_key()["color"]
        for i, (name, t, cwnd, ssthresh) in enumerate(data["lines"]):
            c = colors[i % len(colors)]
            ax.step(t, cwnd, where="post", color=c, lw=1.0, label=f"{name} cwnd")
            if ssthresh is not None:
                ax.step(t, ssthresh, where="post", color=c, lw=0.9, ls="--", alpha=0.7, label=f"{name} ssthresh")
        ax.set_xlim(0, data["duration_s"])
        return _finish(fig, ax, "window (packets)", data["title"], path)
    if kind == "queue":
        fig, ax = _figure(3.5)
        for name, t, queue in data["lines"]:
            ax.plot(t, queue, lw=0.8, label=name)
        return _finish(fig, ax, "queue (packets)", data["title"], path)
    raise ValueError(f"figure kind {kind!r}: expected 'cwnd' or 'queue'")


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


def _figure(height_in: float) -> tuple["Figure", "Axes"]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, height_in), dpi=110)
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def _finish(fig: "Figure", ax: "Axes", ylabel: str, title: str, path: str | Path) -> Path:
    """Common labels, grid and legend of a time-series figure; save it."""
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.set_ylim(bottom=0)
    if len(ax.get_lines()):
        ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    # tight_layout leaves a placeholder layout engine, for which savefig would draw the figure
    # once more (without rendering) before drawing it: the layout is done, so no engine.
    fig.set_layout_engine(None)
    p = Path(path)
    fig.savefig(p)
    return p
