"""The S3 figures: the STO share against the RTO (the paper's Fig. 2), STOs per MB per mobility
class and RTO profile (Fig. 6), unneeded retransmissions per STO and the throughput of connections
with one STO per content size, with and without F-RTO+Eifel (Figs. 7, 8), the analytic model
against the simulation (Figs. 4, 5) and cwnd around the spike. PNG and SVG each; the paper's
published points are drawn as black crosses."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .s0_figures import _save  # noqa: E402
from .s3_scenarios import MOBILITIES, SIZES_BYTES  # noqa: E402

__all__ = ["draw_all"]

_PAPER = dict(marker="x", color="k", ms=7, mew=1.5, ls="none")
_DET = {"frto+eifel": "F-RTO + Eifel response", "none": "neither (RFC 2988, go-back-N)"}


def sto_vs_rto(rto: pd.DataFrame, stem: Path) -> Path:
    """Fig. 2: the share of connections with an STO against the initial = minimum RTO."""
    fig, ax = plt.subplots(figsize=(6.4, 4), dpi=110)
    for k, (mob, g) in enumerate(rto.groupby("mobility", sort=False)):
        g = g.sort_values("rto_s")
        y = 100 * g["sto_share"]
        err = np.vstack([(y - 100 * g["sto_share_ci95_low"]).clip(lower=0),
                         (100 * g["sto_share_ci95_high"] - y).clip(lower=0)])
        ax.errorbar(g["rto_s"], y, yerr=err, marker="o", ms=4, capsize=2, color=f"C{k}", label=f"cclab, {mob}")
    ax.plot([1.5, 4.0], [10.0, 1.0], label="paper, static-weak", **_PAPER)
    ax.plot([4.0], [0.4], label="paper, static-strong", **(_PAPER | {"marker": "+"}))
    ax.set(xlabel="RTO initial = minimum (s)", ylabel="connections with an STO (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title("S3 (Fig. 2): STO share of web-mix connections against the RTO (95 % CI)", fontsize=10)
    return _save(fig, stem)


def sto_per_mb(g: pd.DataFrame, stem: Path) -> Path:
    """Fig. 6: STOs per MB per mobility class, standard against proposed RTO (``g``:
    :func:`cclab.study.s3.sto_per_mb_table`)."""
    mobs = [m for m in MOBILITIES if m in set(g["mobility"])]
    x = np.arange(len(mobs))
    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    profs = list(dict.fromkeys(g["profile"]))
    w = 0.8 / max(len(profs), 1)
    for k, prof in enumerate(profs):
        h = g[g["profile"] == prof].set_index("mobility").reindex(mobs)
        ax.bar(x + (k - (len(profs) - 1) / 2) * w, h["sto_per_mb"], w, color=f"C{k}", label=f"cclab, {prof} RTO")
    paper = {("standard", "express-train"): 0.36, ("standard", "static-weak"): 0.18,
             ("proposed", "express-train"): 0.23, ("proposed", "static-weak"): 0.01}
    first = True
    for (prof, mob), v in paper.items():
        if mob in mobs and prof in profs:
            k = profs.index(prof)
            ax.plot(mobs.index(mob) + (k - (len(profs) - 1) / 2) * w, v, label="paper" if first else None, **_PAPER)
            first = False
    ax.set_xticks(x, mobs, fontsize=8)
    ax.set_ylabel("STOs per MB")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=7)
    ax.set_title("S3 (Fig. 6): spurious timeouts per MB per mobility class", fontsize=10)
    return _save(fig, stem)


def _by_size(conns: pd.DataFrame) -> tuple[list[str], pd.DataFrame]:
    d = conns[conns["part"] == "detection"]
    sizes = [s for s in SIZES_BYTES if s in set(d["size"])]
    return sizes, d


def unneeded_retrans(conns: pd.DataFrame, stem: Path) -> Path:
    """Fig. 7: unneeded retransmissions per STO per content size, with and without F-RTO+Eifel
    (every mobility class and RTO profile pooled)."""
    sizes, d = _by_size(conns)
    x = np.arange(len(sizes))
    fig, ax = plt.subplots(figsize=(6.4, 4), dpi=110)
    for k, det in enumerate(["none", "frto+eifel"]):
        h = d[d["detection"] == det].groupby("size").agg(s=("sto_count", "sum"), r=("spurious_retrans_pkts", "sum"))
        h = h.reindex(sizes)
        ax.bar(x + (k - 0.5) * 0.38, h["r"] / h["s"].where(h["s"] > 0), 0.38, color=f"C{k}",
               label=f"cclab, {_DET[det]}")
        for i, s in enumerate(sizes):
            n = h.loc[s, "s"]
            ax.annotate(f"n={int(n) if n == n else 0}", (i + (k - 0.5) * 0.38, 0), ha="center", va="bottom", fontsize=6)
    paper = {("2MB", 0): 28.0, ("6KB", 0): 1.6, ("2MB", 1): 3.0}
    for j, ((s, k), v) in enumerate(paper.items()):
        if s in sizes:
            ax.plot(sizes.index(s) + (k - 0.5) * 0.38, v, label="paper" if j == 0 else None, **_PAPER)
    ax.set_xticks(x, sizes)
    ax.set(xlabel="content size", ylabel="unneeded retransmissions per STO (packets)")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=7)
    ax.set_title("S3 (Fig. 7): packets the receiver got twice, per spurious timeout", fontsize=10)
    return _save(fig, stem)


def one_sto_throughput(pooled: pd.DataFrame, stem: Path) -> Path:
    """Fig. 8: goodput of connections with exactly one STO, mean and 95 % interval, per content
    size, with and without F-RTO+Eifel (``pooled``: s3.one_sto_goodput's table, every mobility
    class and RTO profile pooled; the paper table's gain is read from the same table)."""
    sizes = list(dict.fromkeys(pooled["size"]))
    x = np.arange(len(sizes))
    fig, ax = plt.subplots(figsize=(6.4, 4), dpi=110)
    for k, det in enumerate(["none", "frto+eifel"]):
        h = pooled[pooled["detection"] == det].set_index("size").reindex(sizes)
        means = h["one_sto_goodput_kbps"].to_numpy(float)
        errs = np.nan_to_num(h["one_sto_goodput_ci95_high"].to_numpy(float) - means)
        ax.bar(x + (k - 0.5) * 0.38, means, 0.38, yerr=errs, capsize=3, color=f"C{k}", label=f"cclab, {_DET[det]}")
        for i, n in enumerate(h["one_sto_connections"].fillna(0).astype(int)):
            ax.annotate(f"n={n}", (i + (k - 0.5) * 0.38, 0), ha="center", va="bottom", fontsize=6)
    ax.set_xticks(x, sizes)
    ax.set(xlabel="content size", ylabel="goodput (kbit/s)")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=7)
    ax.set_title("S3 (Fig. 8): throughput of connections with one STO (paper: +2..12 % for 18 kB-2 MB)",
                 fontsize=10)
    return _save(fig, stem)


def model_vs_sim(model: pd.DataFrame, stem: Path) -> Path:
    """Figs. 4-5: goodput of the 300 kB transfer per case, the model's eq. (5)-(10) beside the
    simulation, with and without F-RTO+Eifel; a panel per cwnd counting."""
    countings = list(dict.fromkeys(model["ack_counting"]))
    fig, axes = plt.subplots(1, len(countings), figsize=(5.2 * len(countings), 4), dpi=110, squeeze=False,
                             sharey=True)
    for ax, counting in zip(axes[0], countings):
        m = model[model["ack_counting"] == counting]
        cases = list(dict.fromkeys(m["case"]))
        x = np.arange(len(cases))
        for k, det in enumerate(["none", "frto+eifel"]):
            h = m[m["detection"] == det].groupby("case", sort=False).mean(numeric_only=True).reindex(cases)
            ax.bar(x + (k - 0.5) * 0.38, h["sim_goodput_kbps"], 0.38, color=f"C{k}", alpha=0.85,
                   label=f"simulated, {_DET[det]}")
            ax.plot(x + (k - 0.5) * 0.38, h["model_goodput_kbps"], marker="_", ms=22, mew=2.5, ls="none",
                    color="k" if k else "0.45", label=f"model, {_DET[det]}")
        r = "1.5 (per ACK, the paper)" if counting == "acks" else "2 (per segment, Linux 3.18+)"
        ax.set_xticks(x, [f"spike at w = {c}" for c in cases], fontsize=8)
        ax.set_title(f"slow-start growth r = {r}", fontsize=9)
        ax.grid(alpha=0.3, axis="y")
    axes[0, 0].set_ylabel("goodput of 300 kB (kbit/s)")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("S3 (Figs. 4-5): one spurious timeout in slow start, model against simulation", fontsize=10)
    return _save(fig, stem)


def spike_cwnd(traces: dict[tuple[str, str, str], pd.DataFrame], stem: Path) -> Path:
    """cwnd and ssthresh around the spike of the c/2 case, with and without F-RTO+Eifel."""
    fig, ax = plt.subplots(figsize=(7, 3.8), dpi=110)
    keys = [k for k in traces if k[0] == "c/2"]
    counting = keys[0][1] if keys else None
    for k, det in enumerate(["none", "frto+eifel"]):
        f = traces.get(("c/2", counting, det)) if counting else None
        if f is None or f.empty:
            continue
        ax.step(f["t_s"], f["cwnd_pkts"], where="post", color=f"C{k}", label=f"cwnd, {_DET[det]}")
    ax.set(xlabel="time (s)", ylabel="cwnd (packets)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(f"S3: cwnd through a spurious timeout at w = c/2 (counting: {counting})", fontsize=10)
    return _save(fig, stem)


def parity(t: pd.DataFrame, stem: Path) -> Path:
    """(D): simulator against kernel per size and F-RTO setting, a panel per figure."""
    metrics = [m for m in ("rto_count", "sto_count", "spurious_retrans_pkts", "goodput_bps") if m in t]
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.3 * len(metrics), 3.6), dpi=110, squeeze=False)
    groups = list(dict.fromkeys(zip(t["size"], t["frto"])))
    x = np.arange(len(groups))
    for ax, m in zip(axes[0], metrics):
        for k, backend in enumerate(["sim", "kernel"]):
            h = t[t["backend"] == backend].set_index(["size", "frto"]).reindex(groups)
            scale = 1e3 if m == "goodput_bps" else 1.0
            ax.bar(x + (k - 0.5) * 0.38, h[m] / scale, 0.38, color=f"C{k}", label=backend)
        ax.set_xticks(x, [f"{s}\nF-RTO {'on' if f else 'off'}" for s, f in groups], fontsize=7)
        ax.set_title(m.replace("_bps", " (kbit/s)"), fontsize=9)
        ax.grid(alpha=0.3, axis="y")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("S3 (D): one delay spike, the simulator beside the kernel", fontsize=10)
    return _save(fig, stem)


def draw_all(fig_dir: Path, rto: pd.DataFrame, conns: pd.DataFrame, per_mb: pd.DataFrame, model: pd.DataFrame,
             traces: dict[tuple[str, str, str], pd.DataFrame], parity_t: pd.DataFrame | None = None,
             one_sto: pd.DataFrame | None = None) -> dict[str, Path]:
    """Every S3 figure that has data; name -> PNG path, in report order."""
    out: dict[str, Path] = {}
    if len(rto):
        out["sto_vs_rto"] = sto_vs_rto(rto, fig_dir / "sto_vs_rto")
    det = conns[conns["part"] == "detection"] if len(conns) and "part" in conns else pd.DataFrame()
    if len(det) and "sto_count" in det:
        out["sto_per_mb"] = sto_per_mb(per_mb, fig_dir / "sto_per_mb")
        out["unneeded_retrans"] = unneeded_retrans(conns, fig_dir / "unneeded_retrans")
        if one_sto is not None and len(one_sto):
            out["one_sto_throughput"] = one_sto_throughput(one_sto, fig_dir / "one_sto_throughput")
    if len(model):
        out["model_vs_sim"] = model_vs_sim(model, fig_dir / "model_vs_sim")
    if traces:
        out["spike_cwnd"] = spike_cwnd(traces, fig_dir / "spike_cwnd")
    if parity_t is not None and len(parity_t):
        out["parity"] = parity(parity_t, fig_dir / "parity")
    return out
