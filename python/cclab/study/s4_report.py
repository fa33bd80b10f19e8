"""The S4 report: one self-contained HTML page with the figures, the tables, the paper's results
beside ours, and which mechanism makes the chain fall as n^-1 or as n^-1.5."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from .report import _figure, _page_head, _table, _write_page

__all__ = ["write_s4_report"]

_CAPTIONS = {
    "udp_sweep": "A UDP stream from n0 over 1-4 hops, 10 kbit/s to 10 Mbit/s: what arrives against what is sent. The "
                 "chain carries every rate below its capacity; the knee is the capacity of the hop count.",
    "tcp_vs_hops": "TCP goodput against hops on log axes. Clean chain: CUBIC, BBR, BBRv2; lossy hops: CUBIC with a "
                   "per-attempt frame error floor and fewer MAC attempts. Dashed: n^-1 from the one-hop figure (the "
                   "channel's capacity shared by n hops), dotted: n^-1.5 (the paper's eq. 2). The residual per-hop "
                   "loss p each setting leaves is measured in the table 'Residual per-hop loss'.",
    "exponents": "The fitted exponent a of goodput ~ n^-a over every run, with its 95 % interval.",
    "mathis": "Mathis's eq. (1) against the runs that lost packets: normalised goodput against the loss rate.",
}


def _mechanism(res: Any) -> str:
    f = res.fits
    if f is None or f.empty:
        return "<p><em>No TCP run.</em></p>"
    clean = f[(f["setting"] == "clean") & (f["cc"] == "cubic")]["exponent"]
    lossy = f[f["setting"] != "clean"]
    parts = ["<p>On a clean chain every hop is one more transmitter on the same channel: the hops take turns, so "
             "the chain's capacity is the one-hop capacity divided by n and TCP, which keeps the chain busy, follows "
             "it (n^-1)."]
    if len(clean):
        parts.append(f" Measured: CUBIC's exponent {clean.min():.2f}-{clean.max():.2f} over the spacings and "
                     "environments run.")
    parts.append(" The paper's n^-1.5 (eq. 2) assumes instead that each hop loses a fraction p of packets end to end "
                 "and TCP is limited by loss (Mathis), not by capacity. The ablation makes exactly that change: the "
                 "same chain with a per-attempt frame error floor and fewer MAC attempts, so that some loss is left "
                 "after the MAC's retries.")
    if len(lossy):
        txt = ", ".join(f"{html.escape(str(r.setting))}: {r.exponent:.2f}" for r in lossy.itertuples())
        parts.append(f" Exponents with residual per-hop loss: {txt}.")
    r = getattr(res, "residual", None)
    if r is not None and len(r) and r["mac_residual_loss_mean"].notna().any():
        p = r.groupby("setting", sort=False)["mac_residual_loss_mean"].mean()
        txt = ", ".join(f"{html.escape(str(k))}: {v:.4f}" for k, v in p.items() if v == v)
        parts.append(f" Residual per-hop loss the MAC left, measured (mean over hops and hop counts): {txt}.")
    t = res.tcp
    sub = t[(t["setting"] == "clean") & (t["cc"] == "cubic") & (t["env"] == "anechoic")] if len(t) else t
    if len(sub) and sub["spacing_m"].nunique() > 1:
        spread = sub.groupby("hops")["goodput_mbps_mean"].agg(lambda x: x.max() / x.min() - 1).max()
        parts.append(f" Node spacing ({sub['spacing_m'].min():g}-{sub['spacing_m'].max():g} m) moves CUBIC's goodput "
                     f"by at most {100 * spread:.1f} % at any hop count: at these distances every node senses every "
                     "other and the SNR is far above MCS 11's needs (docs/mesh.md), so there are no hidden terminals "
                     "and no residual loss.")
    parts.append(" The campus environment costs airtime (background load) and retries, not residual loss.</p>")
    return "".join(parts)


def write_s4_report(res: Any) -> Path:
    """Write ``res.out_dir/report.html`` for an S4 result."""
    from .. import __version__
    from .s4 import LOSSY
    from .s4_scenarios import s4_scenario, to_toml

    cfg = res.cfg
    parts = [
        *_page_head("s4"),
        "<h1>S4: TCP over a multi-hop 802.11s mesh chain</h1>",
        f"<p class='meta'>cclab {html.escape(__version__)} &middot; "
        f"{'simulator and kernel backends' if cfg.kernel else 'simulator backend'} &middot; "
        f"{'quick grid' if cfg.quick else 'full grid'} &middot; {cfg.reps} TCP run(s) per point &middot; "
        f"{len(res.runs)} runs in {res.wall_s:.1f} s &middot; {len(res.failures)} failed &middot; TCP "
        f"{cfg.duration_s:g} s, UDP {cfg.udp_duration_s:g} s per run</p>",
        "<p>Five 802.11s nodes in a line on one channel (2.4 GHz HT40, MCS 11, no aggregation), a flow from n0 to the "
        "node 1-4 hops away over static routes; node spacing and the environment (anechoic room, noisy campus) as in "
        "the paper. The paper finds that throughput falls with hops about as its eq. (2) predicts (n^-1.5) and that "
        "CUBIC, BBR and BBRv2 are about equal.</p>",
    ]
    if len(res.failures):
        shown = res.failures[[c for c in ("part", "env", "spacing_m", "hops", "cc", "setting", "backend", "error")
                              if c in res.failures.columns]]
        parts += ["<h2>Failed runs</h2>", _table(shown)]
    parts += ["<h2>The paper beside cclab</h2>", _table(res.compare),
              "<h2>n^-1 or n^-1.5: the mechanism, by ablation</h2>", _mechanism(res)]
    for name in ("tcp_vs_hops", "exponents"):
        if name in res.figures:
            parts.append(_figure(res.figures[name], _CAPTIONS[name]))
    parts += ["<h3>Residual per-hop loss</h3>",
              "<p>CUBIC, anechoic, 1 m. Per hop of the flow's data path, the MPDUs its sending node dropped at the "
              "retry limit per MPDU settled (acknowledged or dropped; summary.json <code>links[].mac."
              "residual_loss</code>), averaged over the path's hops (<code>mac_residual_loss</code>) and its largest "
              "hop (<code>_max</code>); <code>nominal_p</code> is the floor's fer<sup>attempts</sup>, which "
              "collisions add to; <code>p</code> the loss TCP saw, retransmitted / sent. A relay's counters include "
              "the ACKs it sends back.</p>", _table(res.residual),
              "<h3>Fits of goodput against hops</h3>", _table(res.fits), "<h3>TCP per point</h3>", _table(res.tcp),
              "<h2>Mathis's model</h2>"]
    if "mathis" in res.figures:
        parts.append(_figure(res.figures["mathis"], _CAPTIONS["mathis"]))
    parts += [_table(res.mathis), "<h2>UDP sweep</h2>"]
    if "udp_sweep" in res.figures:
        parts.append(_figure(res.figures["udp_sweep"], _CAPTIONS["udp_sweep"]))
    parts.append(_table(res.udp))
    if len(res.kernel):
        parts += ["<h2>The simulator beside the kernel</h2>",
                  f"<p>The clean chain (1 m, anechoic), {cfg.kernel_duration_s:g} s per run, on the simulator and on "
                  "this machine's kernel with the same scenario and seed: the chain's end hosts are network "
                  "namespaces, its relays routers inside cclab-link, which runs the same chain model in real time. "
                  f"The kernel's CUBIC and BBR (BBRv1: upstream Linux has no BBRv2), and UDP at "
                  f"{cfg.kernel_udp_rate_bps / 1e6:g} Mbit/s (above the chain's capacity; <code>udp</code>). Goodput "
                  "means over the repetitions; <code>kernel_over_sim</code> their ratio. docs/kernel.md says what "
                  "differs (the receiver's ACK rate, which costs airtime on a shared channel).</p>",
                  _table(res.kernel)]
    parts += ["<h2>Settings</h2><h3>Lossy hops</h3><ul>"]
    parts += [f"<li><b>{k}</b>: frame error rate {fer:g} per attempt, {att} MAC attempts</li>"
              for k, (fer, att) in LOSSY.items()]
    parts += ["</ul><h3>The scenario (2 hops)</h3>",
              f"<pre>{html.escape(to_toml(s4_scenario(2, duration_s=cfg.duration_s)))}</pre>", "</body></html>"]
    return _write_page(res.out_dir, parts)
