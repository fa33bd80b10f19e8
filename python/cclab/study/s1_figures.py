"""The S1 figures: total throughput vs N (paper Fig. 4), the AP's PHY rate and the collision
probability vs N (fixed rate against ARF), the middleware variants' totals (Figs. 5,
11) and fairness (Fig. 12), per-terminal throughput, cwnd traces per variant (Figs. 6-10), and
the ablation's total-vs-N curves. PNG and SVG each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .s0_figures import _save  # noqa: E402

__all__ = ["draw_all"]

_COLOR = {"smartphone": "C0", "tablet": "C3"}


def _err(g: pd.DataFrame, m: str) -> list[Any]:
    lo = (g[f"{m}_mean"] - g[f"{m}_ci95_low"]).fillna(0).clip(lower=0)
    hi = (g[f"{m}_ci95_high"] - g[f"{m}_mean"]).fillna(0).clip(lower=0)
    return [lo, hi]


def scaling(s: pd.DataFrame, stem: Path) -> Path:
    """Fig. 4: total throughput against the number of terminals, middleware off."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    for (rates, terminal), g in s.groupby(["rates", "terminal"]):
        g = g.sort_values("n_terminals")
        ax.errorbar(g["n_terminals"], g["total_mbps_mean"], yerr=_err(g, "total_mbps"), marker="o", ms=4, capsize=3,
                    color=_COLOR.get(terminal), ls="-" if rates == "none" else "--",
                    label=f"{terminal}s, {'54 Mbit/s fixed' if rates == 'none' else rates.upper() + ' rate control'}")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("terminals on the AP (N)")
    ax.set_ylabel("total throughput (Mbit/s)")
    ax.set_title("S1 Fig. 4: total throughput vs N, middleware off (mean, 95 % CI)", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, stem)


def per_rate_control(rates: list[str], draw: Any, xlabel: str, ylabel: str, title: str, stem: Path) -> Path:
    """One panel per rate control of the cell ("none": 54 Mbit/s fixed, else its name), each drawn
    by ``draw(ax, rates)``; the first panel has the y label and the legend."""
    fig, axes = plt.subplots(1, len(rates), figsize=(5.2 * len(rates), 3.9), dpi=110, squeeze=False)
    for ax, r in zip(axes[0], rates):
        draw(ax, r)
        ax.set_title("54 Mbit/s fixed" if r == "none" else f"{r.upper()} rate control", fontsize=9)
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(ylabel)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    return _save(fig, stem)


def mac_vs_n(s: pd.DataFrame, stem: Path) -> Path:
    """The AP's mean PHY rate and the cell's collision probability against N, middleware off:
    54 Mbit/s fixed (solid) against ARF (dashed), per terminal class."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.9), dpi=110)
    for (rates, terminal), g in s.groupby(["rates", "terminal"]):
        g = g.sort_values("n_terminals")
        kw = dict(marker="o", ms=4, capsize=3, color=_COLOR.get(terminal), ls="-" if rates == "none" else "--",
                  label=f"{terminal}s, {'54 Mbit/s fixed' if rates == 'none' else rates.upper()}")
        for ax, m in zip(axes, ("ap_rate_mbps", "collision_prob")):
            if f"{m}_mean" in g and g[f"{m}_mean"].notna().any():
                ax.errorbar(g["n_terminals"], g[f"{m}_mean"], yerr=_err(g, m), **kw)
    axes[0].set_ylabel("AP's mean PHY rate (Mbit/s)")
    axes[0].set_ylim(0, 58)
    axes[1].set_ylabel("collision probability per attempt (cell)")
    axes[1].set_ylim(bottom=0)
    for ax in axes:
        ax.set_xlabel("terminals on the AP (N)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle("S1: the AP's PHY rate and the cell's collisions vs N, middleware off (mean, 95 % CI)", fontsize=10)
    return _save(fig, stem)


def variants(mw: pd.DataFrame, metric: str, ylabel: str, title: str, stem: Path) -> Path:
    """Figs. 5, 11 (total) and 12 (Jain's index): one bar per variant, grouped by class and N."""
    groups = [(t, n) for t in sorted(mw["terminal"].unique()) for n in sorted(mw["n_terminals"].unique())]
    names = list(dict.fromkeys(mw["variant"]))
    fig, ax = plt.subplots(figsize=(8, 4.2), dpi=110)
    w = 0.8 / max(len(names), 1)
    for i, v in enumerate(names):
        sub = mw[mw["variant"] == v].set_index(["terminal", "n_terminals"])
        ys = [sub[f"{metric}_mean"].get(g, np.nan) for g in groups]
        lo = [sub[f"{metric}_mean"].get(g, np.nan) - sub[f"{metric}_ci95_low"].get(g, np.nan) for g in groups]
        hi = [sub[f"{metric}_ci95_high"].get(g, np.nan) - sub[f"{metric}_mean"].get(g, np.nan) for g in groups]
        err = np.nan_to_num(np.clip(np.array([lo, hi], float), 0, None))
        ax.bar(np.arange(len(groups)) + i * w - 0.4 + w / 2, ys, w, yerr=err, capsize=2, label=v)
    ax.set_xticks(range(len(groups)), [f"{t}s\nN={n}" for t, n in groups], fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=7, ncol=3)
    return _save(fig, stem)


def per_terminal(runs: pd.DataFrame, stem: Path) -> Path:
    """Per-terminal throughput at the largest N, repetition 0, one panel per class."""
    n = int(runs["n_terminals"].max())
    sub = runs[(runs["n_terminals"] == n) & (runs["rep"] == 0)]
    classes = sorted(sub["terminal"].unique())
    fig, axes = plt.subplots(1, max(len(classes), 1), figsize=(4.2 * max(len(classes), 1), 3.8), dpi=110,
                             squeeze=False)
    for ax, terminal in zip(axes[0], classes):
        names = list(dict.fromkeys(sub["variant"]))
        w = 0.8 / max(len(names), 1)
        for i, v in enumerate(names):
            r = sub[(sub["terminal"] == terminal) & (sub["variant"] == v)]
            if r.empty:
                continue
            r = r.iloc[0]
            ys = [r.get(f"flow{k}_goodput_bps", np.nan) / 1e6 for k in range(n)]
            ax.bar(np.arange(n) + i * w - 0.4 + w / 2, ys, w, label=v)
        ax.set_xticks(range(n), [f"t{k + 1}" for k in range(n)])
        ax.set_title(f"{terminal}s, N={n}", fontsize=9)
        ax.set_ylabel("throughput (Mbit/s)")
        ax.grid(alpha=0.3, axis="y")
    axes[0][0].legend(fontsize=7)
    return _save(fig, stem)


def cwnd_traces(traces: list[tuple[str, Path]], title: str, stem: Path) -> Path:
    """Figs. 6-10: every terminal's cwnd over time, one panel per variant."""
    fig, axes = plt.subplots(len(traces), 1, figsize=(8, 2.0 * max(len(traces), 1)), dpi=110, sharex=True,
                             squeeze=False)
    for ax, (variant, path) in zip(axes[:, 0], traces):
        f = pd.read_parquet(path, columns=["flow", "t_s", "cwnd_pkts"])
        for flow, g in f.groupby("flow", observed=True):
            ax.plot(g["t_s"], g["cwnd_pkts"], lw=0.7, label=str(flow))
        ax.set_ylabel("cwnd (pkts)")
        ax.set_title(variant, fontsize=9, loc="left")
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("time (s)")
    axes[0, 0].legend(fontsize=6, ncol=6)
    fig.suptitle(title, fontsize=10)
    return _save(fig, stem)


def ablation(ab: pd.DataFrame, stem: Path) -> Path:
    """The ablation: total throughput vs N per knob, the baseline in every panel."""
    names = list(dict.fromkeys(ab["ablation"]))
    cols = 4
    rows = int(np.ceil(len(names) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.5 * rows), dpi=110, sharey=True, squeeze=False)
    base = ab[ab["ablation"] == "baseline"].sort_values("n_terminals")
    for ax, name in zip(axes.flat, names):
        g = ab[ab["ablation"] == name].sort_values("n_terminals")
        if name != "baseline" and len(base):
            ax.plot(base["n_terminals"], base["total_mbps_mean"], color="0.6", lw=1, label="baseline")
        ax.errorbar(g["n_terminals"], g["total_mbps_mean"], yerr=_err(g, "total_mbps"), marker="o", ms=3, capsize=2,
                    color="C1", label=name)
        ax.set_title(name, fontsize=8)
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
    for ax in axes.flat[len(names):]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel("total (Mbit/s)")
    for ax in axes[-1, :]:
        ax.set_xlabel("N")
    fig.suptitle("S1 ablation: total throughput vs N, one mechanism changed per panel (smartphones, middleware off)",
                 fontsize=10)
    return _save(fig, stem)


def draw_all(fig_dir: Path, s: pd.DataFrame, mw: pd.DataFrame, ab: pd.DataFrame, per_run: pd.DataFrame,
             sweep: Any, mw_runs: pd.DataFrame) -> dict[str, Path]:
    """Every S1 figure that has data; name -> PNG path, in report order."""
    out: dict[str, Path] = {}
    if len(s):
        out["fig4_scaling"] = scaling(s, fig_dir / "fig4_scaling")
        if "ap_rate_mbps_mean" in s and s["ap_rate_mbps_mean"].notna().any():
            out["mac_vs_n"] = mac_vs_n(s, fig_dir / "mac_vs_n")
    for rates in dict.fromkeys(mw["rates"]) if len(mw) else []:
        sub = mw[mw["rates"] == rates]
        label = "54 Mbit/s fixed" if rates == "none" else f"{rates.upper()} rate control"
        out[f"fig5_11_total_{rates}"] = variants(
            sub, "total_mbps", "total throughput (Mbit/s)",
            f"S1 Figs. 5/11: total throughput per middleware variant, {label} (mean, 95 % CI)",
            fig_dir / f"fig5_11_total_{rates}")
        out[f"fig12_jain_{rates}"] = variants(sub, "jain", "Jain's fairness index",
                                              f"S1 Fig. 12: Jain's index per middleware variant, {label}",
                                              fig_dir / f"fig12_jain_{rates}")
        out[f"per_terminal_{rates}"] = per_terminal(per_run[per_run["rates"] == rates], fig_dir / f"per_terminal_{rates}")
    kept = mw_runs[mw_runs.get("key").notna()] if len(mw_runs) else mw_runs
    groups = kept[["rates", "terminal"]].drop_duplicates().itertuples(index=False) if len(kept) else []
    for rates, terminal in groups:
        n = int(kept["n_terminals"].max())
        rows = kept[(kept["rates"] == rates) & (kept["terminal"] == terminal) & (kept["n_terminals"] == n)
                    & (kept["rep"] == 0)]
        traces = [(r["variant"], sweep.trace_path(r["key"])) for _, r in rows.iterrows()
                  if Path(sweep.trace_path(r["key"])).is_file()]
        if traces:
            name = f"fig6_10_cwnd_{terminal}_{rates}"
            out[name] = cwnd_traces(traces, f"S1 Figs. 6-10: cwnd of every terminal, {terminal}s, N={n}, "
                                            f"{'54 Mbit/s fixed' if rates == 'none' else rates.upper()}", fig_dir / name)
    if len(ab):
        out["ablation"] = ablation(ab, fig_dir / "ablation")
    return out
