"""The S2 report: one self-contained HTML page with the figures, the tables, the paper's results
beside ours, and the account of the differences."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pandas as pd

from .report import _figure, _page_head, _table, _write_page

__all__ = ["write_s2_report"]

_CAPTIONS = {
    "fig2_fig4_per_app": "Each application's throughput once all run (from 2 s to the end: the bytes its subflows "
                         "delivered) per TSQ rule (three LIA applications started 0.5 s apart over "
                         "three paths, RTT 50 ms, the sender's NICs the bottleneck), loss 0 (paper Fig. 2) and 1e-5 "
                         "(Fig. 4); mean of the runs with a 95 % confidence interval.",
    "fig3_cwnd": "cwnd of every subflow of every application over the first 3 s (paper Fig. 3): colour the "
                 "application, line style the path.",
    "cc": "LIA, OLIA, BALIA and uncoupled CUBIC (what upstream Linux MPTCP runs) under the paper's rule and the "
          "adaptive one, loss 1e-5: Jain's index over the applications and the total. At loss 0 they do not "
          "differ: every subflow is held by TSQ while still in slow start, and its cwnd stops there. At 1e-5 a "
          "subflow at about 16 Mbit/s loses about one packet a minute, so the coupled algorithms rarely act and "
          "give the same shares; the TSQ rule decides. CUBIC's HyStart leaves slow start earlier, before the "
          "first application's lead is as large.",
    "setups": "The adaptive rule against the paper's and Linux's on the paper's setup, with unequal RTTs (20/50/100 ms) "
              "and with five applications. The dashed line is Jain's index 0.99.",
}


def _mechanism(res: Any) -> str:
    """What the runs say about why the first application keeps its share."""
    t = res.tsq
    if t is None or t.empty:
        return "<p><em>The TSQ part was not run.</em></p>"
    z = t[t["loss"] == 0].set_index("tsq")

    def get(rule: str, col: str) -> float:
        return float(z.loc[rule, col]) if rule in z.index and col in z.columns else float("nan")

    parts = [
        "<p>Under a limit that follows each socket's own rate (the paper's eq. 2 and Linux's rule), a flow's bytes in "
        "the interface queue grow with its cwnd, and the queue, a FIFO, serves each flow in proportion to what it "
        "holds there. Nothing is lost, so nothing evens the shares out: whichever subflow is ahead when the others "
        f"start stays ahead. Measured: Jain's index {get('paper', 'jain_mean'):.3f} under the paper's rule and "
        f"{get('linux', 'jain_mean'):.3f} under Linux's, APP1's share {get('paper', 'app1_share_mean'):.2f} and "
        f"{get('linux', 'app1_share_mean'):.2f}.</p>",
        f"<p>The ablations: a fixed limit gives {get('fixed', 'jain_mean'):.3f} (every socket holds the same bytes); "
        f"no TSQ at all gives {get('off', 'jain_mean'):.3f} (the queue fills, local drops put the flows that hit them "
        f"in CWR); cclab's adaptive rule gives {get('adaptive', 'jain_mean'):.3f} with a total of "
        f"{get('adaptive', 'steady_total_mbps_mean'):.1f} Mbit/s against {get('paper', 'steady_total_mbps_mean'):.1f} under the "
        "paper's rule. The adaptive rule levels both what decides the FIFO's shares: the limit, and the skb size "
        "(tcp_tso_autosize also reads the pacing rate, and a socket may go one skb over its limit; levelling the "
        "limit alone left 18.6/14.9/14.9 Mbit/s in a three-flow test).</p>",
    ]
    return "".join(parts)


def _kernel_section(res: Any) -> list[str]:
    """The kernel part beside the simulator, and the rows the kernel cannot run."""
    from .s2 import KERNEL_NOT_RUNNABLE

    cfg = res.cfg
    k = res.kernel
    parts = ["<h2>The simulator beside the kernel</h2>",
             f"<p>What upstream Linux 6.18 runs exactly: the paper's setup with uncoupled CUBIC on every subflow and "
             f"Linux's TSQ, HyStart on and off, {cfg.kernel_reps} paired repetitions of {cfg.kernel_duration_s:g} s "
             "on the simulator and on this machine's kernel (network namespaces, cclab-link; the kernel's own path "
             "manager and scheduler; docs/kernel.md, \"Multipath TCP\"). The simulator runs upstream's Multipath TCP "
             "(<code>mptcp_stack = \"linux\"</code>: 64 KB bursts into the subflow with the shortest linger time, "
             "ACKs on the application's read) and the kernel backend's device (<code>device_release = \"start\"</code>). "
             "Each application's throughput once all run (from 2 s to the end): mean, standard deviation, least and "
             "most over the repetitions; the last row per loss and HyStart setting is kernel / simulator of the "
             "means.</p>"]
    if len(k):
        parts.append(_table(k))
    else:
        parts.append("<p><em>No kernel run succeeded.</em></p>")
    parts += ["<p>With no loss each subflow's cwnd stops growing in its first second (HyStart, or TSQ leaves it "
              "not cwnd-limited), and each interface's FIFO serves the sockets in turns, each turn one socket's skbs "
              "below TCP: app 1's subflow sends one 64 KB burst a turn (an skb per mapping, cut into GSO skbs that "
              "never span two), the others two small skbs. With HyStart off that is the whole story, and the "
              "simulator gives the kernel's common split (measured: within 10 % on the means of ten 30 s runs; "
              "some kernel runs give a later application more). With HyStart on the split is set in each subflow's "
              "first second: the receiver acknowledges every segment at once while receive-buffer "
              "autotuning opens its window (tcp_grow_window's quick ACKs), which the simulator models since "
              "2026-11-29; app 2 then comes to the kernel's means, app 1 stays above them and app 3 below "
              "(docs/studies.md, S2, \"HyStart\").</p>",
              "<h3>Rows the kernel does not run</h3>",
              _table(pd.DataFrame(KERNEL_NOT_RUNNABLE, columns=["rows", "why not on the kernel"]))]
    return parts


def write_s2_report(res: Any) -> Path:
    """Write ``res.out_dir/report.html`` for an S2 result."""
    from .. import __version__
    from .s2 import SETUPS, TSQ_VARIANTS
    from .s2_scenarios import s2_scenario, to_toml

    cfg = res.cfg
    parts = [
        *_page_head("s2"),
        "<h1>S2: Multipath TCP fairness and TCP Small Queues</h1>",
        f"<p class='meta'>cclab {html.escape(__version__)} &middot; "
        f"{'simulator and kernel backends' if cfg.kernel else 'simulator backend'} &middot; "
        f"{'quick grid' if cfg.quick else 'full grid'} &middot; {cfg.reps} run(s) per point &middot; "
        f"{len(res.runs)} runs in {res.wall_s:.1f} s &middot; {len(res.failures)} failed &middot; "
        f"{cfg.duration_s:g} s per run</p>",
        "<p>Reproduction of Izumi, Tarutani, Fukushima and Yokohira: three applications, each a Multipath TCP "
        "connection with LIA over three paths (RTT 50 ms), start 0.5 s apart on one sender whose interfaces "
        "(queue 1000 packets) they share. The paper finds that the first application keeps most of the throughput "
        "because the TSQ limit grows with cwnd, and that a fixed limit of 131072 bytes makes them equal. Its future "
        "work, a limit that adapts so that throughput is fair, is cclab's <code>tsq = \"adaptive\"</code>.</p>",
    ]
    if len(res.failures):
        shown = res.failures[[c for c in ("part", "setup", "cc", "tsq", "loss", "error") if c in res.failures.columns]]
        parts += ["<h2>Failed runs</h2>", _table(shown)]
    parts += ["<h2>The paper beside cclab</h2>", _table(res.compare),
              "<h2>Why: the mechanism, by ablation</h2>", _mechanism(res)]
    for name in ("fig2_fig4_per_app", "fig3_cwnd"):
        if name in res.figures:
            parts.append(_figure(res.figures[name], _CAPTIONS[name]))
    parts += [_table(res.tsq), "<h3>Mean cwnd per subflow, 1.5-3 s (loss 0, first run)</h3>",
              _table(pd.DataFrame(res.cwnd))]
    parts.append("<h2>Coupled congestion control</h2>")
    if "cc" in res.figures:
        parts.append(_figure(res.figures["cc"], _CAPTIONS["cc"]))
    parts += [_table(res.cc), "<h2>The adaptive rule on three setups</h2>"]
    if "setups" in res.figures:
        parts.append(_figure(res.figures["setups"], _CAPTIONS["setups"]))
    parts.append(_table(res.setups))
    if cfg.kernel:
        parts += _kernel_section(res)
    parts += ["<h2>Settings</h2><h3>TSQ rules</h3><ul>"]
    parts += [f"<li><b>{k}</b>: {html.escape(v)}</li>" for k, v in TSQ_VARIANTS.items()]
    parts += ["</ul><h3>Setups</h3><ul>"]
    parts += [f"<li><b>{k}</b>: {html.escape(str(v))}</li>" for k, v in SETUPS.items()]
    parts += ["</ul><h3>The scenario (paper's setup)</h3>",
              f"<pre>{html.escape(to_toml(s2_scenario(3, duration_s=cfg.duration_s)))}</pre>", "</body></html>"]
    return _write_page(res.out_dir, parts)
