"""The S0 figures: throughput vs error rate (paper Figs. 4-6), cwnd over time (Fig. 8), measured
vs fitted CUBIC curves (Fig. 10). Each is written as PNG and SVG."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

__all__ = ["draw_all"]

_LABEL = {"cubic": "Linux CUBIC", "cubic-ios": "iOS-like CUBIC"}
_COLOR = {"cubic": "C0", "cubic-ios": "C3"}


def _save(fig: Any, stem: Path) -> Path:
    stem.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(stem.with_suffix(".png"))
    fig.savefig(stem.with_suffix(".svg"))
    plt.close(fig)
    return stem.with_suffix(".png")


def throughput_vs_loss(a: pd.DataFrame, rtt: int, stem: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    sub = a[a["rtt_ms"] == rtt]
    for cc, g in sub.groupby("cc"):
        g = g.sort_values("loss")
        lo = (g["goodput_mbps_mean"] - g["goodput_mbps_ci95_low"]).fillna(0)
        hi = (g["goodput_mbps_ci95_high"] - g["goodput_mbps_mean"]).fillna(0)
        ax.errorbar(g["loss"], g["goodput_mbps_mean"], yerr=[lo, hi], marker="o", ms=4, capsize=3,
                    color=_COLOR.get(cc), label=f"{_LABEL.get(cc, cc)} (n={int(g['n'].min())})")
    ax.set_xscale("symlog", linthresh=1e-6)
    ax.set_xlim(-1e-7, 2e-2)
    ax.set_xlabel("link error rate (packet loss probability)")
    ax.set_ylabel("throughput (Mbit/s)")
    ax.set_title(f"S0 experiment A: RTT {rtt} ms (mean, 95 % CI)", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return _save(fig, stem)


def cwnd_over_time(sweep: Any, b_runs: pd.DataFrame, rtt: int, stem: Path) -> Path:
    fig, ax = plt.subplots(figsize=(8, 4.2), dpi=110)
    for _, r in b_runs[(b_runs["rtt_ms"] == rtt) & b_runs["ok"].astype(bool)].iterrows():
        f = sweep.trace(r["key"])
        ax.plot(f["t_s"], f["cwnd_pkts"], lw=0.9, color=_COLOR.get(r["cc"]), label=_LABEL.get(r["cc"], r["cc"]))
    ax.set_xlabel("time (s)")
    ax.set_ylabel("cwnd (packets)")
    ax.set_title(f"S0 experiment B: cwnd over time, RTT {rtt} ms, no random loss", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, stem)


def draw_all(fig_dir: Path, a: pd.DataFrame, sweep: Any, b_runs: pd.DataFrame, c: pd.DataFrame) -> dict[str, Path]:
    """Every S0 figure; returns name -> PNG path."""
    from ..infer import estimate_cubic, plot_cubic_fit

    figs: dict[str, Path] = {}
    for i, rtt in enumerate(sorted(a["rtt_ms"].unique()) if len(a) else [], start=4):
        figs[f"fig{i}_throughput_{rtt}ms"] = throughput_vs_loss(a, int(rtt), fig_dir / f"fig{i}_throughput_{rtt}ms")
    if len(b_runs):
        rtt_b = int(b_runs["rtt_ms"].max())
        figs[f"fig8_cwnd_{rtt_b}ms"] = cwnd_over_time(sweep, b_runs, rtt_b, fig_dir / f"fig8_cwnd_{rtt_b}ms")
        for _, r in b_runs[(b_runs["rtt_ms"] == rtt_b) & b_runs["ok"].astype(bool)].iterrows():
            trace = sweep.trace(r["key"])
            stem = fig_dir / f"fig10_fit_{r['cc']}_{rtt_b}ms"
            plot_cubic_fit(estimate_cubic(trace, max_cycles=3), trace, stem.with_suffix(".png"))
            figs[stem.name] = stem.with_suffix(".png")
    return figs
