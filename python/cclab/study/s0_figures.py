"""The S0 figures: throughput vs error rate (paper Figs. 4-6), cwnd over time (Fig. 8), measured
vs fitted CUBIC curves (Fig. 10), and the ablation of cubic-xnu against cubic ("why the order"). Each is written as PNG and SVG; they are drawn in parallel
(one process per figure, every core)."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

__all__ = ["draw_all", "throughput_vs_loss", "cwnd_over_time", "cubic_fit", "ablation_bars"]

_LABEL = {"cubic": "Linux CUBIC", "cubic-ios": "iOS-like CUBIC (beta 0.8, C 0.25)",
          "cubic-xnu": "Apple CUBIC (XNU tcp_cubic.c)"}
_COLOR = {"cubic": "C0", "cubic-ios": "C3", "cubic-xnu": "C2"}
#: The paper's published order per RTT (Figs. 4-6 give no numbers, only this).
_PAPER = {25: "paper: iOS above Linux", 100: "paper: iOS above below 1e-4, Linux above from 1e-4",
          550: "paper: Linux above iOS"}


def _save(fig: Any, stem: Path, rect: tuple[float, float, float, float] | None = None) -> Path:
    stem.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout(rect=rect)
    fig.savefig(stem.with_suffix(".png"))
    fig.savefig(stem.with_suffix(".svg"))
    plt.close(fig)
    return stem.with_suffix(".png")


def throughput_vs_loss(a: pd.DataFrame, rtt: int, stem: Path) -> Path:
    """Figs. 4-6: mean throughput per error rate with its 95 % interval, both stacks."""
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
    ax.set_ylim(bottom=0)
    ax.set_xlabel("link error rate (packet loss probability)")
    ax.set_ylabel("throughput (Mbit/s)")
    ax.set_title(f"S0 experiment A: RTT {rtt} ms (mean, 95 % CI)\n{_PAPER.get(rtt, '')}", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return _save(fig, stem)


def cwnd_over_time(traces: list[tuple[str, Path]], rtt: int, stem: Path) -> Path:
    """Fig. 8: cwnd over time of each (stack, flows.parquet) on the lossless path."""
    fig, ax = plt.subplots(figsize=(8, 4.2), dpi=110)
    for cc, path in traces:
        f = pd.read_parquet(path, columns=["t_s", "cwnd_pkts"])
        ax.plot(f["t_s"], f["cwnd_pkts"], lw=0.9, color=_COLOR.get(cc), label=_LABEL.get(cc, cc))
    ax.set_xlabel("time (s)")
    ax.set_ylabel("cwnd (packets)")
    ax.set_title(f"S0 experiment B: cwnd over time, RTT {rtt} ms, no random loss", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, stem)


def cubic_fit(trace_path: Path, stem: Path) -> Path:
    """Fig. 10: measured cwnd and the fitted curves (``cclab.infer.plot_cubic_fit``), PNG and SVG."""
    from ..infer import estimate_cubic, plot_cubic_fit

    trace = pd.read_parquet(trace_path)
    est = estimate_cubic(trace, max_cycles=3)
    stem.parent.mkdir(parents=True, exist_ok=True)
    plot_cubic_fit(est, trace, stem.with_suffix(".png"))
    plot_cubic_fit(est, trace, stem.with_suffix(".svg"))
    return stem.with_suffix(".png")


def ablation_bars(effects: pd.DataFrame, stem: Path) -> Path:
    """Per RTT, each ablation variant's mean goodput difference to Linux ``cubic`` (% of cubic,
    averaged over the error rates): cubic-xnu's bar is the gap to explain; an ``xnu-`` bar that
    moves towards 0 is a difference that makes it."""
    rtts = sorted(effects["rtt_ms"].unique())
    names = list(dict.fromkeys(effects["variant"]))
    fig, axes = plt.subplots(1, len(rtts), figsize=(3.6 * len(rtts), 0.32 * len(names) + 1.4), dpi=110,
                             sharey=True, squeeze=False)
    kind_color = {"stack": "C2", "xnu-": "C1", "xnu-all": "C4", "linux+": "C0", "receiver": "C7", "ios9": "C3"}
    for ax, rtt in zip(axes[0], rtts):
        g = effects[effects["rtt_ms"] == rtt].set_index("variant").reindex(names)
        y = range(len(names))
        ax.barh(list(y), g["vs_cubic_pct"], color=[kind_color.get(k, "C7") for k in g["kind"]])
        xg = float(g.loc["cubic-xnu", "vs_cubic_pct"]) if "cubic-xnu" in g.index else 0.0
        ax.axvline(0, color="k", lw=0.8)
        ax.axvline(xg, color="C2", lw=0.8, ls="--")
        ax.set_title(f"RTT {rtt} ms", fontsize=10)
        ax.set_xlabel("goodput vs Linux cubic (%)")
        ax.grid(alpha=0.3, axis="x")
    axes[0][0].set_yticks(list(range(len(names))), names, fontsize=8)
    axes[0][0].invert_yaxis()
    from matplotlib.patches import Patch

    what = {"stack": "as shipped", "xnu-": "cubic-xnu minus one difference", "xnu-all": "cubic-xnu minus all",
            "linux+": "cubic plus one XNU difference", "receiver": "receiver ACK policy", "ios9": "XNU of iOS 9"}
    kinds = list(dict.fromkeys(effects["kind"]))
    fig.legend([Patch(color=kind_color.get(k, "C7")) for k in kinds], [what.get(k, k) for k in kinds],
               loc="lower center", ncol=min(len(kinds), 3), fontsize=8, frameon=False)
    fig.suptitle("Why the order: cubic-xnu's differences, one at a time (mean over error rates)", fontsize=10)
    return _save(fig, stem, rect=(0, 0.07, 1, 1))


def _draw(task: tuple[Any, ...]) -> Path:
    fn, *args = task
    return fn(*args)


def draw_all(fig_dir: Path, a: pd.DataFrame, sweep: Any, b_runs: pd.DataFrame, jobs: int | None = None,
             ablation_effects: pd.DataFrame | None = None) -> dict[str, Path]:
    """Every S0 figure; returns name -> PNG path (in a fixed order)."""
    tasks: dict[str, tuple[Any, ...]] = {}
    for i, rtt in enumerate(sorted(a["rtt_ms"].unique()) if len(a) else [], start=4):
        name = f"fig{i}_throughput_{int(rtt)}ms"
        tasks[name] = (throughput_vs_loss, a, int(rtt), fig_dir / name)
    ok_b = b_runs[b_runs["ok"].astype(bool)] if len(b_runs) else b_runs
    if len(ok_b):
        rtt_b = int(ok_b["rtt_ms"].max())
        longest = ok_b[ok_b["rtt_ms"] == rtt_b]
        traces = [(r["cc"], sweep.trace_path(r["key"])) for _, r in longest.iterrows()]
        tasks[f"fig8_cwnd_{rtt_b}ms"] = (cwnd_over_time, traces, rtt_b, fig_dir / f"fig8_cwnd_{rtt_b}ms")
        for cc, path in traces:
            name = f"fig10_fit_{cc}_{rtt_b}ms"
            tasks[name] = (cubic_fit, path, fig_dir / name)
    if ablation_effects is not None and len(ablation_effects):
        tasks["ablation"] = (ablation_bars, ablation_effects, fig_dir / "ablation")
    jobs = min(jobs or os.cpu_count() or 1, max(len(tasks), 1))
    if jobs <= 1:
        return {name: _draw(t) for name, t in tasks.items()}
    with ProcessPoolExecutor(max_workers=jobs) as ex:
        return dict(zip(tasks, ex.map(_draw, tasks.values())))
