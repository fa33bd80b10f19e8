"""The S2 figures: per-application throughput per TSQ rule at loss 0 and 1e-5 (paper Figs. 2 and
4), every subflow's cwnd over the first 3 s (Fig. 3), the coupled congestion controls, and the
adaptive rule on three setups. PNG and SVG each."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .s0_figures import _save  # noqa: E402

__all__ = ["draw_all"]


def _apps(df: pd.DataFrame) -> list[str]:
    """The applications with a steady rate column (``app<k>_steady_mbps_mean``), in order."""
    suffix = "_steady_mbps_mean"
    return sorted((c[: -len(suffix)] for c in df.columns if c.startswith("app") and c.endswith(suffix)),
                  key=lambda a: int(a[3:]))


def _bars(ax: plt.Axes, g: pd.DataFrame, label_col: str) -> None:
    """Grouped bars: one group per row of ``g`` (labelled by ``label_col``), one bar per app."""
    apps = [a for a in _apps(g) if g[f"{a}_steady_mbps_mean"].notna().any()]
    width = 0.8 / max(len(apps), 1)
    x = np.arange(len(g))
    for k, a in enumerate(apps):
        m = g[f"{a}_steady_mbps_mean"].to_numpy(float)
        lo = (m - g[f"{a}_steady_mbps_ci95_low"].to_numpy(float))
        hi = (g[f"{a}_steady_mbps_ci95_high"].to_numpy(float) - m)
        err = np.nan_to_num(np.vstack([lo, hi]).clip(min=0))
        ax.bar(x + (k - (len(apps) - 1) / 2) * width, m, width, yerr=err, capsize=2, label=a.upper())
    ax.set_xticks(x, [str(v) for v in g[label_col]], fontsize=8)
    ax.grid(alpha=0.3, axis="y")


def per_app(tsq: pd.DataFrame, stem: Path) -> Path:
    """Figs. 2 and 4: each application's throughput per TSQ rule, one panel per loss rate."""
    losses = sorted(dict.fromkeys(tsq["loss"]))
    fig, axes = plt.subplots(1, len(losses), figsize=(5.5 * len(losses), 3.4), dpi=110, sharey=True, squeeze=False)
    for ax, loss in zip(axes[0], losses):
        _bars(ax, tsq[tsq["loss"] == loss], "tsq")
        ax.set_title(f"loss {loss:g}" + (" (Fig. 2)" if loss == 0 else " (Fig. 4)"), fontsize=9)
        ax.set_xlabel("TSQ rule")
    axes[0, 0].set_ylabel("throughput (Mbit/s)")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("S2: each application's throughput once all three run (LIA, 3 paths, RTT 50 ms; mean, 95 % CI)",
                 fontsize=10)
    return _save(fig, stem)


def cwnd_first_3s(traces: dict[str, Path], stem: Path) -> Path:
    """Fig. 3: the cwnd of every application's subflows over the first 3 s, one panel per rule."""
    rules = [r for r in ("paper", "fixed", "linux", "adaptive", "off") if r in traces]
    fig, axes = plt.subplots(len(rules), 1, figsize=(8, 2.2 * max(len(rules), 1)), dpi=110, sharex=True,
                             squeeze=False)
    for ax, rule in zip(axes[:, 0], rules):
        f = pd.read_parquet(traces[rule], columns=["flow", "subflow", "t_s", "cwnd_pkts"])
        f = f[f["t_s"] <= 3.0]
        for k, (flow, g) in enumerate(f.groupby("flow", observed=True, sort=True)):
            for sub, h in g.groupby("subflow", sort=True):
                ax.plot(h["t_s"], h["cwnd_pkts"], lw=0.8, color=f"C{k}", ls=["-", "--", ":", "-."][int(sub) % 4],
                        label=f"{str(flow).upper()} subflow {int(sub) + 1}")
        ax.set_ylabel("cwnd (pkts)")
        ax.set_title(f"TSQ rule: {rule}", fontsize=9, loc="left")
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("time (s)")
    axes[0, 0].legend(fontsize=6, ncol=3)
    fig.suptitle("S2 Fig. 3: cwnd of every subflow, first 3 s (loss 0, first run)", fontsize=10)
    return _save(fig, stem)


def by_group(df: pd.DataFrame, group: str, title: str, stem: Path) -> Path:
    """Jain's index and the total per ``group`` value, one bar per TSQ rule."""
    groups = list(dict.fromkeys(df[group]))
    rules = list(dict.fromkeys(df["tsq"]))
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.2), dpi=110, squeeze=False)
    width = 0.8 / max(len(rules), 1)
    x = np.arange(len(groups))
    for k, rule in enumerate(rules):
        sub = df[df["tsq"] == rule].set_index(group).reindex(groups)
        for ax, m in zip(axes[0], ("jain", "steady_total_mbps")):
            ax.bar(x + (k - (len(rules) - 1) / 2) * width, sub[f"{m}_mean"], width, label=rule)
    for ax, ylabel in zip(axes[0], ("Jain's index", "total once all run (Mbit/s)")):
        ax.set_xticks(x, groups, fontsize=8)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3, axis="y")
    axes[0, 0].set_ylim(0, 1.02)
    axes[0, 0].axhline(0.99, color="0.5", lw=0.8, ls="--")
    axes[0, 0].legend(fontsize=7, title="TSQ", title_fontsize=7)
    fig.suptitle(title, fontsize=10)
    return _save(fig, stem)


def draw_all(fig_dir: Path, tsq: pd.DataFrame, cc: pd.DataFrame, setups: pd.DataFrame,
             traces: dict[str, Path]) -> dict[str, Path]:
    """Every S2 figure that has data; name -> PNG path, in report order."""
    out: dict[str, Path] = {}
    if len(tsq):
        out["fig2_fig4_per_app"] = per_app(tsq, fig_dir / "fig2_fig4_per_app")
    if traces:
        out["fig3_cwnd"] = cwnd_first_3s(traces, fig_dir / "fig3_cwnd")
    if len(cc):
        out["cc"] = by_group(cc, "cc", "S2: coupled congestion control (3 applications, loss 1e-5)", fig_dir / "cc")
    if len(setups):
        out["setups"] = by_group(setups, "setup", "S2: the adaptive rule on three setups (LIA, loss 0)",
                                 fig_dir / "setups")
    return out
