"""The S1 report: one self-contained HTML page with the figures, the tables, the paper's numbers
beside ours, and the ablation's account of the collapse."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pandas as pd

from .report import _figure, _page_head, _table, _write_page
from .s1_narrative import differences_html

__all__ = ["write_s1_report"]

_CAPTIONS = {
    "fig4_scaling": "Total throughput of N terminals uploading through one 802.11g AP (RTT 512 ms), middleware off, "
                    "mean of the runs with a 95 % confidence interval; solid: every station at 54 Mbit/s (ns-3's "
                    "setup), dashed: ARF rate control. The paper's Fig. 4 peaks at 3 smartphones and 2 tablets and "
                    "falls beyond.",
    "fig5_11_total": "Total throughput per middleware variant at N = 3 and 6 (paper Figs. 5 and 11): off, the S3.2 "
                     "table, \"before\", \"improved\", and \"improved\" switched on only above 3 terminals.",
    "mac_vs_n": "The AP's mean PHY rate over its attempts (left) and the collision probability per attempt over "
                "all the cell's stations (right) against N, middleware off; solid: 54 Mbit/s fixed, dashed: ARF. "
                "ARF reads each collision as a bad channel and steps down, the AP (which carries every ACK) "
                "among the first.",
    "fig12_jain": "Jain's fairness index f = (sum x)^2 / (k sum x^2) over the terminals' throughputs (paper Fig. 12).",
    "per_terminal": "Each terminal's throughput at the largest N, first repetition, per variant.",
    "ablation": "One mechanism changed per panel, total throughput against N (smartphones, middleware off); the grey "
                "line is the baseline. A knob that turns the paper's fall with N on makes its curve peak early and "
                "drop.",
}


def _collapse_text(res: Any) -> str:
    c = res.collapse
    if c is None or c.empty:
        return "<p><em>No ablation was run.</em></p>"
    falls = c[c["fall_from_peak"] > 0.2]
    base = c[c["ablation"] == "baseline"]
    parts = []
    if len(base):
        b = base.iloc[0]
        parts.append(f"<p>Baseline: {b['total_n1_mbps']:.1f} Mbit/s with one terminal, peak {b['peak_mbps']:.1f} "
                     f"at N = {int(b['peak_n'])}, a fall of {100 * b['fall_from_peak']:.0f} % from the peak to the "
                     "largest N. As in ns-3 3.44 on the same setup (45-56 % of the AP's ACKs dropped at N &ge; 5, "
                     "total flat at 23-24 Mbit/s), the AP's queue fills with ACKs but cumulative ACKs lose "
                     "little, so the total does not collapse.</p>")
    if len(falls):
        names = ", ".join(f"<code>{html.escape(n)}</code> ({100 * f:.0f} %)"
                          for n, f in zip(falls["ablation"], falls["fall_from_peak"]))
        parts.append(f"<p>Knobs whose curve falls by more than 20 % from its peak: {names}.</p>")
    else:
        parts.append("<p>No knob in this ablation makes the total fall by more than 20 % from its peak: none of "
                     "these mechanisms alone reproduces the paper's collapse in this model. The table gives each "
                     "knob's figures.</p>")
    return "".join(parts)


#: The report's compact tables: mean per grid point (the CSV tables have every statistic).
_SHOWN = {"total_mbps_mean": "total Mbit/s", "jain_mean": "Jain", "ap_rate_mbps_mean": "AP rate Mbit/s",
          "terminal_rate_mbps_mean": "terminal rate Mbit/s", "terminal_rate_min_mbps_mean": "slowest terminal Mbit/s",
          "collision_prob_mean": "collision p", "retry_drops_mean": "retry-limit drops",
          "ap_queue_drops_pkts_mean": "AP queue drops", "count_share_mean": "terminals heard / N"}


def _compact(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    if df is None or df.empty:
        return df
    cols = [c for c in _SHOWN if c in df and df[c].notna().any()]
    return df[[k for k in keys if k in df] + ["n", *cols]].rename(columns=_SHOWN)


def _station_rates(stations: pd.DataFrame) -> pd.DataFrame:
    """Each station's mean PHY rate per variant at the middleware grid's largest N (ARF if run)."""
    mw = stations[stations["part"] == "middleware"] if stations is not None and len(stations) else None
    if mw is None or mw.empty:
        return pd.DataFrame()
    rates = "arf" if "arf" in set(mw["rates"]) else str(mw["rates"].iloc[0])
    sub = mw[(mw["rates"] == rates) & (mw["n_terminals"] == mw["n_terminals"].max())]
    t = sub.pivot_table(index=["terminal", "station"], columns="variant", values="rate_mbps", sort=False)
    return t[list(dict.fromkeys(sub["variant"]))].reset_index().rename_axis(columns=None)


def _figure_and_table(res: Any, fig: str, caption: str, table: pd.DataFrame, names: dict[str, str]) -> list[str]:
    """The figure ``fig`` (when drawn) and ``table`` with its columns renamed for the page."""
    return ([_figure(res.figures[fig], caption)] if fig in res.figures else []) + [_table(table.rename(columns=names))]


def _parity_html(res: Any) -> list[str]:
    """The kernel beside the simulator: every kernel run has a simulator twin (same scenario and seed)."""
    p = getattr(res, "parity", None)
    if p is None or p.empty:
        return []
    ratio = p["kernel_over_sim"].dropna()
    out = ["<h2>The kernel beside the simulator</h2>",
           f"<p>Every kernel run above has a simulator twin: the same scenario and seed. Kernel over simulator, "
           f"mean total throughput per grid point: median {ratio.median():.2f}, range {ratio.min():.2f}-"
           f"{ratio.max():.2f} over {len(ratio)} points. The kernel's figures are the study's; the twins are in "
           "<code>tables/kernel_parity.csv</code>.</p>"]
    out += _figure_and_table(res, "kernel_parity", "Total throughput against N, middleware off: the kernel through "
                             "cclab-link's cell (solid) and the simulator (dashed).", p,
                             {"total_mbps_kernel": "kernel Mbit/s", "total_mbps_sim": "simulator Mbit/s",
                              "kernel_over_sim": "kernel / sim", "jain_kernel": "Jain kernel", "jain_sim": "Jain sim"})
    g = getattr(res, "parity_gains", None)
    if g is not None and len(g):
        out += ["<p>The improved middleware against off, on each backend (relative change of the mean total and of "
                "Jain's index):</p>", _table(g)]
    return out


def write_s1_report(res: Any) -> Path:
    """Write ``res.out_dir/report.html`` for an S1 result."""
    from .. import __version__
    from .s1 import ABLATIONS, MIDDLEWARE_VARIANTS
    from .s1_scenarios import TERMINALS, s1_scenario, to_toml

    cfg = res.cfg
    parts = [
        *_page_head("s1"),
        "<h1>S1: cooperative cwnd clamping for terminals on one WLAN AP</h1>",
        f"<p class='meta'>cclab {html.escape(__version__)} &middot; "
        f"{'Linux kernel' if cfg.backend == 'kernel' else 'simulator'} backend &middot; "
        f"{'quick grid' if cfg.quick else 'full grid'} &middot; {cfg.reps} run(s) per point &middot; "
        f"{len(res.runs)} runs in {res.wall_s:.1f} s &middot; {len(res.failures)} failed &middot; "
        f"{cfg.duration_s:g} s per run</p>",
        "<p>Reproduction of Shimada, Yamaguchi and Oguchi: N Android terminals upload with CUBIC through one "
        "802.11g access point (an 802.11 DCF cell: contention, backoff, collisions, retries, MAC Acks) and a wired "
        "path with a 512 ms round trip to a server. A middleware on each terminal counts the terminals on the AP "
        "and keeps cwnd within a range from equations 2-5 and a table indexed by RTT minus min RTT.</p>",
    ]
    if len(res.failures):
        shown = res.failures[[c for c in ("part", "terminal", "n_terminals", "variant", "ablation", "error")
                              if c in res.failures.columns]]
        parts += ["<h2>Failed runs</h2>", _table(shown)]
    parts += ["<h2>The paper beside cclab</h2>",
              "<p>The paper's published gains of the improved middleware over no middleware, and what this study "
              "measured (relative change of the mean total throughput or Jain's index).</p>", _table(res.compare)]
    parts.append(differences_html(res))
    parts += _parity_html(res)
    if "fig4_scaling" in res.figures:
        parts += ["<h2>Total throughput and the cell's MAC against N</h2>",
                  _figure(res.figures["fig4_scaling"], _CAPTIONS["fig4_scaling"])]
    if "mac_vs_n" in res.figures:
        parts.append(_figure(res.figures["mac_vs_n"], _CAPTIONS["mac_vs_n"]))
    if len(res.scaling):
        parts += ["<p>Per N, middleware off (means over the runs): total throughput; the PHY rate of the AP and of "
                  "the terminals (the mean of each one's mean rate, and the slowest); the collision probability "
                  "per attempt over the cell; frames dropped at the MAC retry limit; packets the AP's full queue "
                  "refused. Every statistic is in <code>tables/scaling.csv</code>, each station's in "
                  "<code>tables/stations.csv</code>.</p>",
                  _table(_compact(res.scaling, ["rates", "terminal", "n_terminals"]))]
    for rates in dict.fromkeys(res.middleware["rates"]) if len(res.middleware) else []:
        parts.append(f"<h2>Middleware, {'54 Mbit/s fixed (the ns-3 setup)' if rates == 'none' else rates.upper() + ' rate control'}</h2>")
        for stem in ("fig5_11_total", "fig12_jain", "per_terminal"):
            if f"{stem}_{rates}" in res.figures:
                parts.append(_figure(res.figures[f"{stem}_{rates}"], _CAPTIONS[stem]))
        parts.append(_table(_compact(res.middleware[res.middleware["rates"] == rates],
                                     ["terminal", "n_terminals", "variant"])))
        for name, path in res.figures.items():
            if name.startswith("fig6_10") and name.endswith(f"_{rates}"):
                parts.append(_figure(path, "cwnd of every terminal per middleware variant at the largest N of the "
                                           "middleware grid (paper Figs. 6-10)."))
    rates_tab = _station_rates(res.stations)
    if len(rates_tab):
        parts += ["<h3>Each station's PHY rate per variant</h3><p>Mean PHY rate (Mbit/s) of the AP and of each "
                  "terminal at the middleware grid's largest N, per variant (ARF when it was run): clamping cwnd "
                  "leaves fewer collisions, so ARF keeps higher rates.</p>", _table(rates_tab)]
    st = getattr(res, "stagger", None)
    if st is not None and len(st):
        parts += ["<h2>Fairness, explained by ablation: the start schedule</h2>",
                  "<p>Terminal k starts at k times the stagger; middleware off against the improved table. "
                  "The paper's fairness gains (+18 % smartphones, +55 % tablets at N = 6) need terminals that "
                  "start one after another; <code>tables/stagger.csv</code> has every figure.</p>"]
        parts += _figure_and_table(res, "stagger", "Jain's index against the start stagger: middleware off (dashed) "
                                   "and improved (solid).", st,
                                   {"start_stagger_s": "stagger s", "jain_off": "Jain off", "jain_improved":
                                    "Jain improved", "jain_gain": "fairness gain", "total_mbps_off": "total off",
                                    "total_mbps_improved": "total improved", "total_mbps_gain": "throughput gain"})
    parts += ["<h2>The collapse, explained by ablation</h2>", _collapse_text(res)]
    if "ablation" in res.figures:
        parts.append(_figure(res.figures["ablation"], _CAPTIONS["ablation"]))
    parts += [_table(res.collapse)]
    parts += ["<h2>Settings</h2><h3>Terminal classes</h3><ul>"]
    parts += [f"<li><b>{t}</b>: {html.escape(c['description'])}</li>" for t, c in TERMINALS.items()]
    parts += ["</ul><h3>Middleware variants</h3><ul>"]
    parts += [f"<li><b>{v}</b>: {html.escape(str(m))}</li>" for v, m in MIDDLEWARE_VARIANTS.items()]
    parts += ["</ul><h3>Ablation knobs</h3><ul>"]
    parts += [f"<li><b>{a}</b>: {html.escape(m)}</li>" for a, (m, _) in ABLATIONS.items()]
    parts += ["</ul><h3>The scenario (N = 3 smartphones)</h3>",
              f"<pre>{html.escape(to_toml(s1_scenario(3, 'smartphone', duration_s=cfg.duration_s)))}</pre>",
              "</body></html>"]
    return _write_page(res.out_dir, parts)
