"""The S4 figures: the UDP sweep (received against sent rate), TCP goodput against hops per
algorithm with the fitted power laws and the n^-1 and n^-1.5 references, the exponents with
their intervals, and Mathis's eq. (1) against the runs that lost packets. PNG and SVG each."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .s0_figures import _save  # noqa: E402
from .s4_models import MATHIS_C  # noqa: E402

__all__ = ["draw_all"]


def udp_sweep(udp: pd.DataFrame, stem: Path) -> Path:
    """Received against sent rate, one panel per (environment, spacing), a line per hop count."""
    groups = list(udp.groupby(["env", "spacing_m"], sort=True))
    cols = min(4, len(groups))
    rows = int(np.ceil(len(groups) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(max(3.4 * cols, 6.0), 3.0 * rows), dpi=110, squeeze=False, sharey=True)
    for ax, ((env, sp), g) in zip(axes.flat, groups):
        for h, gh in g.groupby("hops", sort=True):
            gh = gh.sort_values("udp_send_rate_bps")
            ax.plot(gh["udp_send_rate_bps"] / 1e6, gh["udp_receive_rate_bps"] / 1e6, marker="o", ms=3, lw=1,
                    label=f"{int(h)} hop(s)")
        lim = [g["udp_send_rate_bps"].min() / 1e6, g["udp_send_rate_bps"].max() / 1e6]
        ax.plot(lim, lim, color="0.6", lw=0.8, ls="--")
        ax.set(xscale="log", yscale="log", title=f"{env}, {sp:g} m")
        ax.grid(alpha=0.3, which="both")
    for ax in axes.flat[len(groups):]:
        ax.axis("off")
    for ax in axes[-1, :]:
        ax.set_xlabel("sent (Mbit/s)")
    for ax in axes[:, 0]:
        ax.set_ylabel("received (Mbit/s)")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("S4: UDP sweep, received against sent rate (dashed: everything arrives)", fontsize=10)
    return _save(fig, stem)


def tcp_vs_hops(tcp: pd.DataFrame, fits: pd.DataFrame, stem: Path) -> Path:
    """Goodput against hops (log-log): the clean chain per algorithm (anechoic, 1 m, or the first
    spacing), the lossy settings (CUBIC), the fitted laws, and n^-1 / n^-1.5 from one hop."""
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    sp = 1.0 if (tcp["spacing_m"] == 1.0).any() else float(tcp["spacing_m"].iloc[0])
    clean = tcp[(tcp["setting"] == "clean") & (tcp["env"] == "anechoic") & (tcp["spacing_m"] == sp)]
    curves = [(f"{cc} (clean)", g) for cc, g in clean.groupby("cc", sort=False)]
    curves += [(f"cubic, {s}", g) for s, g in tcp[tcp["setting"] != "clean"].groupby("setting", sort=False)]
    hops = np.array(sorted(tcp["hops"].unique()), float)
    for k, (label, g) in enumerate(curves):
        g = g.sort_values("hops")
        lo = (g["goodput_mbps_mean"] - g["goodput_mbps_ci95_low"]).fillna(0).clip(lower=0)
        hi = (g["goodput_mbps_ci95_high"] - g["goodput_mbps_mean"]).fillna(0).clip(lower=0)
        ax.errorbar(g["hops"], g["goodput_mbps_mean"], yerr=[lo, hi], marker="o", ms=4, capsize=2, color=f"C{k}",
                    label=label)
    first = clean[(clean["cc"] == "cubic") & (clean["hops"] == hops.min())]["goodput_mbps_mean"]
    if len(first):
        y1 = float(first.iloc[0])
        ax.plot(hops, y1 * hops ** -1.0, color="0.5", lw=0.8, ls="--", label="n^-1 from 1 hop")
        ax.plot(hops, y1 * hops ** -1.5, color="0.3", lw=0.8, ls=":", label="n^-1.5 (eq. 2)")
    ax.set(xscale="log", yscale="log", xlabel="hops", ylabel="goodput (Mbit/s)")
    ax.set_xticks(hops, [str(int(h)) for h in hops])
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    ax.set_title(f"S4: TCP goodput against hops (anechoic, {sp:g} m; mean, 95 % CI)", fontsize=10)
    return _save(fig, stem)


def exponents(fits: pd.DataFrame, stem: Path) -> Path:
    """Every fitted exponent of hops with its 95 % interval; 1 and 1.5 marked."""
    f = fits.dropna(subset=["exponent"]).reset_index(drop=True)
    labels = [f"{r.cc}, {r.setting}, {r.env}, {r.spacing_m:g} m" for r in f.itertuples()]
    fig, ax = plt.subplots(figsize=(7, 0.28 * max(len(f), 4) + 1.2), dpi=110)
    y = np.arange(len(f))
    err = np.vstack([(f["exponent"] - f["ci95_low"]).fillna(0).clip(lower=0),
                     (f["ci95_high"] - f["exponent"]).fillna(0).clip(lower=0)])
    ax.errorbar(f["exponent"], y, xerr=err, fmt="o", ms=4, capsize=2)
    for x, ls in ((1.0, "--"), (1.5, ":")):
        ax.axvline(x, color="0.4", lw=0.8, ls=ls)
    ax.set_yticks(y, labels, fontsize=7)
    ax.set_xlabel("exponent a of goodput ~ n^-a (dashed 1: capacity shared by n hops; dotted 1.5: eq. 2)")
    ax.grid(alpha=0.3, axis="x")
    ax.set_title("S4: the exponent of hops per algorithm, setting, environment and spacing", fontsize=10)
    return _save(fig, stem)


def mathis(runs: pd.DataFrame, stem: Path) -> Path:
    """Normalised goodput (Bw RTT / MSS) against the loss rate p of every TCP run that lost
    packets, with eq. (1)."""
    g = runs[(runs["p"] > 0) & runs["mean_srtt_ms"].notna()]
    fig, ax = plt.subplots(figsize=(6, 4), dpi=110)
    for k, ((setting, cc), h) in enumerate(g.groupby(["setting", "cc"], sort=False)):
        y = h["goodput_bps"] * h["mean_srtt_ms"] / 1e3 / (1448 * 8)
        ax.scatter(h["p"], y, s=12, color=f"C{k}", label=f"{cc}, {setting}")
    if len(g):
        p = np.logspace(np.log10(g["p"].min()), np.log10(g["p"].max()), 50)
        ax.plot(p, MATHIS_C / np.sqrt(p), color="0.3", lw=1, label="eq. (1), C = sqrt(3/2)")
    ax.set(xscale="log", yscale="log", xlabel="loss rate p (retransmitted / sent)",
           ylabel="Bw RTT / MSS (segments per RTT)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    ax.set_title("S4: Mathis's model against the runs that lost packets", fontsize=10)
    return _save(fig, stem)


def draw_all(fig_dir: Path, udp: pd.DataFrame, tcp: pd.DataFrame, fits: pd.DataFrame,
             tcp_runs: pd.DataFrame) -> dict[str, Path]:
    """Every S4 figure that has data; name -> PNG path, in report order."""
    out: dict[str, Path] = {}
    if len(udp):
        out["udp_sweep"] = udp_sweep(udp, fig_dir / "udp_sweep")
    if len(tcp):
        out["tcp_vs_hops"] = tcp_vs_hops(tcp, fits, fig_dir / "tcp_vs_hops")
    if len(fits) and fits["exponent"].notna().any():
        out["exponents"] = exponents(fits, fig_dir / "exponents")
    if len(tcp_runs) and "p" in tcp_runs and (tcp_runs["p"] > 0).any():
        out["mathis"] = mathis(tcp_runs, fig_dir / "mathis")
    return out
