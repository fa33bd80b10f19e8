"""Figures of inference: measured vs fitted CUBIC curves (the S0 paper's Fig. 10) and the Kato
et al. (cwnd_i, dcwnd_i) scatter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .cubic import CubicEstimate  # noqa: E402
from .features import kato_points  # noqa: E402
from .io import load_trace  # noqa: E402

__all__ = ["plot_cubic_fit", "plot_kato"]


def plot_cubic_fit(estimate: CubicEstimate, trace: Any, path: str | Path, max_cycles: int = 6) -> Path:
    """The trace's cwnd (grey) with each usable cycle's fitted W(t) = c (t - K)^3 + W_max drawn
    over its growth phase, and the estimate in the title."""
    df = load_trace(trace)
    fig, ax = plt.subplots(figsize=(9, 4.5), dpi=110)
    ax.plot(df["t_s"], df["cwnd_pkts"], color="0.55", lw=0.9, label="measured cwnd")
    cyc = estimate.cycles
    shown = 0
    if not cyc.empty and "fit_ok" in cyc:
        for _, r in cyc[cyc["fit_ok"] == True].iterrows():  # noqa: E712
            if shown >= max_cycles:
                break
            t_origin, t_end = float(r["t0_s"]), float(r["t_end_s"])
            tau = np.linspace(0, max(t_end - t_origin, 0.1), 200)
            fit = r["c_fit"] * (tau - r["K_s"]) ** 3 + r["wmax_pkts"]
            ax.plot(t_origin + tau, fit, color="C3", lw=1.4, label="fitted c(t-K)^3+Wmax" if shown == 0 else None)
            shown += 1
    c, beta = estimate.c, estimate.beta
    ax.set_title(
        f"CUBIC fit: c = {c.value:.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}], "
        f"beta = {beta.value:.3f}, b = {estimate.b.value:.2f}, K = {estimate.K_s.value:.2f} s",
        fontsize=10,
    )
    ax.set_xlabel("time (s)")
    ax.set_ylabel("cwnd (packets)")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out)
    plt.close(fig)
    return out


def plot_kato(trace: Any, path: str | Path, rtt_s: float | None = None, label: str | None = None) -> Path:
    """Kato et al.'s scatter: per-RTT window increase dcwnd_i against cwnd_i in growth phases."""
    pts = kato_points(load_trace(trace), rtt_s)
    fig, ax = plt.subplots(figsize=(6, 4.5), dpi=110)
    ax.scatter(pts["cwnd_pkts"], pts["dcwnd_pkts"], s=6, alpha=0.5, color="C0")
    ax.set_xlabel("cwnd_i (packets)")
    ax.set_ylabel("dcwnd_i = cwnd_{i+1} - cwnd_i (packets per RTT)")
    ax.set_title(f"Kato et al. scatter{': ' + label if label else ''} ({len(pts)} RTTs)", fontsize=10)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out)
    plt.close(fig)
    return out
