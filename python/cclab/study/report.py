"""A self-contained HTML report: figures inline (base64 PNG), tables, the scenario files, the
seeds and the version, and a paragraph per figure saying what it shows."""

from __future__ import annotations

import base64
import html
import os
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["write_s0_report"]

_CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ddd}
.tw{overflow-x:auto}table{border-collapse:collapse;font-size:.85em;margin:.8em 0}td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
figure{margin:1.2em 0}figure img{max-width:100%;border:1px solid #eee}figcaption{font-size:.9em;color:#444}
pre{background:#f7f7f7;padding:.7em;overflow-x:auto;font-size:.8em}.meta{color:#666;font-size:.9em}
"""


def _img(path: Path) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode()
    return f'<img alt="{html.escape(Path(path).stem)}" src="data:image/png;base64,{data}">'


def _table(df: pd.DataFrame, digits: int = 3) -> str:
    if df is None or df.empty:
        return "<p><em>(empty)</em></p>"
    body = df.to_html(index=False, float_format=lambda x: f"{x:.{digits}g}", border=0, na_rep="")
    return f"<div class='tw'>{body}</div>"


def _figure(path: Path, caption: str) -> str:
    return f"<figure>{_img(path)}<figcaption>{html.escape(caption)}</figcaption></figure>"


def _page_head(study: str) -> list[str]:
    """The opening of study ``study``'s report page, up to its body."""
    return [f"<!doctype html><html><head><meta charset='utf-8'><title>cclab study {study}</title>",
            f"<style>{_CSS}</style></head><body>"]


def _write_page(out_dir: Path, parts: list[str]) -> Path:
    """Write a report page's parts to ``out_dir/report.html``; returns its path."""
    out = Path(out_dir) / "report.html"
    out.write_text("\n".join(parts), encoding="utf-8")
    return out


def _ablation_section(res: Any) -> list[str]:
    """ "Why the order: ablation": the conclusion per RTT, the figure and the tables."""
    ab = getattr(res, "ablation", None)
    if ab is None or ab.empty:
        return []
    n = int(ab["n"].min()) if "n" in ab else 0
    parts = ["<h2>Why the order: ablation</h2>",
             "<p>Which of Apple's CUBIC's differences from Linux CUBIC make the throughput order at each RTT. "
             "Every difference is a switch (docs/cubic-xnu.md, docs/studies.md): rows <code>xnu-&hellip;</code> are "
             "<code>cubic-xnu</code> with one difference taken away, <code>xnu-linux-form</code> with all its "
             "cc differences taken away at once, <code>linux+&hellip;</code> are <code>cubic</code> with one XNU "
             "difference added where Linux has a switch for it, <code>ios9&hellip;</code> are XNU's settings in the "
             "paper's iOS 9.3.2 era. Cells: mean goodput in Mbit/s over "
             f"{n} seeds (the seeds of experiment A), on experiment A's paths; simulator.</p>",
             "<h3>Conclusion</h3>"]
    parts += [f"<p>{html.escape(c)}</p>" for c in res.ablation_conclusion]
    for name, path in res.figures.items():
        if name == "ablation":
            parts.append(_figure(path, (
                "Each variant's goodput against Linux cubic, % averaged over the error rates, per RTT. The dashed "
                "line is cubic-xnu: an xnu- bar that moves from it to 0 is a difference that makes the order; a "
                "linux+ bar that moves from 0 towards it is the same difference seen from Linux. Grey bars are a "
                "receiver ACK policy met by both stacks, also against cubic with the usual receiver; cubic-xnu "
                "against cubic under the same policy is in the conclusion and in vs_pair_pct below.")))
    parts += ["<p>Mean goodput (Mbit/s) per variant, RTT and error rate:</p>", _table(ab, 4),
              "<p>What the conclusion reads: per RTT, the variant's goodput against cubic (% of cubic, mean over "
              "the error rates); the share of cubic-xnu's gap to cubic that an xnu- row takes away or a linux+ row "
              "adds, over the error rates where that gap is significant; its order against cubic per error rate "
              "(+ above, - below, = level: the 95 % interval of the difference, paired over the seeds, holds 0) and "
              "at how many error rates that order differs from cubic-xnu's.</p>",
              _table(res.ablation_effects, 3)]
    return parts


def write_s0_report(res: Any) -> Path:
    """Write ``res.out_dir/report.html`` for an S0 result."""
    from .. import __version__
    from ..scenario import shipped_scenarios
    from .grid import derive_seed

    cfg = res.cfg
    parts = [
        *_page_head("s0"),
        "<h1>S0: CUBIC on iOS vs Linux</h1>",
        f"<p class='meta'>cclab {html.escape(__version__)} &middot; "
        f"{'Linux kernel (' + html.escape(os.uname().release) + ')' if cfg.backend == 'kernel' else 'simulator'} backend &middot; "
        f"{'quick grid' if cfg.quick else 'full grid'} &middot; {cfg.reps} runs per point (seeds derived from "
        f"base seed 1 and the repetition index) &middot; {res.n_runs} runs in "
        f"{res.wall_s:.1f} s &middot; {len(res.failures)} failed</p>",
        f"<p class='meta'>Seeds of repetitions 0..{cfg.reps - 1}: "
        f"{', '.join(str(derive_seed(1, r)) for r in range(cfg.reps))} (every grid point uses the same "
        "seeds; experiment B uses repetition 0's).</p>",
        "<p>Reproduction of Hozumi, Utsumi and Zabir: Linux CUBIC against two models of iOS, an iOS-like CUBIC "
        "(Linux's code with the paper's measured constants: beta 0.8, C 0.25; preset <code>cubic-ios</code>) and "
        "Apple's own CUBIC as XNU's <code>tcp_cubic.c</code> codes it (<code>cubic-xnu</code>, xnu-11417, on our "
        "Linux TCP core), through a Dummynet-like link with random loss and a drop-tail buffer.</p>",
    ]
    if cfg.backend == "kernel":
        parts.append("<p class='meta'>The kernel has no <code>cubic-xnu</code>: experiments A and B ran "
                     "<code>cubic</code> and <code>cubic-ios</code> on the kernel; the ablation ran on the "
                     "simulator.</p>")
    if len(res.failures):
        parts += ["<h2>Failed runs</h2>", _table(res.failures[[c for c in res.failures.columns if c != "key"]])]
    parts += ["<h2>Comparison with the paper</h2>",
              "<p>The paper's published, qualitative results beside what this run of cclab found (the paper "
              "plots throughput in Figs. 4-6 but prints no numbers, so its order is what can be compared; "
              "each iOS model against Linux CUBIC).</p>",
              _table(res.compare)]
    parts.append("<h2>Experiment A: throughput vs link error rate</h2>")
    for name, path in res.figures.items():
        if name.startswith(("fig4", "fig5", "fig6")):
            rtt = name.rsplit("_", 1)[-1]
            parts.append(_figure(path, (
                f"Throughput against the link error rate on the {rtt} path of the paper's Table 1, Linux CUBIC, "
                "the iOS-like CUBIC and Apple's CUBIC (cubic-xnu), mean of the runs with a 95 % confidence interval "
                "(Student t); the title gives the paper's order. The x axis is logarithmic above 1e-6 and linear "
                "below, so the lossless point sits at the left edge.")))
    parts += ["<p>Aggregated table (mean, standard deviation, 95 % CI per grid point):</p>", _table(res.a_table)]
    parts += _ablation_section(res)
    parts.append("<h2>Experiment B: cwnd over time</h2>")
    for name, path in res.figures.items():
        if name.startswith("fig8"):
            parts.append(_figure(path, (
                "cwnd of the stacks over time on a lossless path (paper Fig. 8 / Table 2): losses come only from "
                "the drop-tail buffer overflowing, at about BDP + buffer = 600 packets. The iOS-like stack cuts the "
                "window less (beta 0.8) and grows it more slowly (C 0.25), so its cycles are shallower and longer; "
                "cubic-xnu cuts to 0.7 W with C 0.4, as Linux.")))
    parts += [_table(pd.read_csv(res.tables["experiment_b"][0]))]
    parts.append("<h2>Method C: CUBIC's parameters from the cwnd traces</h2>")
    for name, path in res.figures.items():
        if name.startswith("fig10"):
            parts.append(_figure(path, (
                f"Measured cwnd (grey) and the fitted W(t) = c (t - K)^3 + W_max per usable cycle (red), for "
                f"{'Linux CUBIC' if '_cubic_' in name else 'Apple CUBIC (cubic-xnu)' if 'xnu' in name else 'the iOS-like CUBIC'} "
                "at the longest RTT (paper Fig. 10). "
                "The title gives the median estimate over cycles with its 95 % interval.")))
    parts += ["<p>Tables 3-6 layout: per RTT and stack, the first three usable cycles' t, W, K, W_max, W' "
              "and c by eq. (4), b by eq. (5), 1/c, and the least-squares c.</p>",
              _table(res.c_table.drop(columns=["key"], errors="ignore"))]
    parts.append("<h2>Scenario files</h2>")
    shipped = shipped_scenarios()
    for name in ("s0-25ms", "s0-100ms", "s0-550ms", "s0-cwnd-550ms"):
        if name in shipped:
            parts.append(f"<h3>{name}.toml</h3><pre>{html.escape(shipped[name].read_text())}</pre>")
    parts.append("<p class='meta'>Grid: error rates "
                 f"{', '.join(f'{x:g}' for x in cfg.losses)}; A duration {cfg.a_duration_s:g} s; B RTTs "
                 f"{', '.join(map(str, cfg.b_rtts))} ms, duration {cfg.b_duration_s:g} s. The overrides of every run "
                 "are in tables/experiment_a_runs.csv.</p>")
    parts.append("</body></html>")
    return _write_page(res.out_dir, parts)
