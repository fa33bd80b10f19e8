"""The S0 study (Hozumi, Utsumi, Zabir): CUBIC on iOS vs Linux.

- Experiment A: throughput vs link error rate on the three Table 1 paths (``s0-25ms``,
  ``s0-100ms``, ``s0-550ms``), Linux ``cubic`` vs ``cubic-ios``, N runs each (paper: 10) with
  distinct seeds: the paper's Figures 4-6 with 95 % error bars.
- Experiment B: cwnd over time with no random loss (Table 2, Figure 8) at RTT 25..550 ms. The
  paper gives no capacity and a 1000-packet buffer, with which a lossless path never drops below
  the 1000-packet window cap; as in the shipped ``s0-cwnd-550ms`` we keep the cap and use
  BDP = 275 packets and a 325-packet buffer at every RTT, so cycles peak near 600 packets, as
  the paper's Tables 3-4 show.
- Method C: CUBIC's parameters from the B traces (``cclab.infer.estimate_cubic``): the layout of
  Tables 3-6 (three cycles per RTT) and measured vs fitted curves (Figure 10).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from .aggregate import aggregate, write_table
from .sweep import RunSpec, SweepResult, grid, run_sweep

__all__ = ["S0Config", "run_s0", "PATHS", "STACKS"]

PATHS = {25: "s0-25ms", 100: "s0-100ms", 550: "s0-550ms"}
STACKS = {"cubic": "Linux CUBIC", "cubic-ios": "iOS-like CUBIC (beta 0.8, C 0.25)"}
LOSSES = [0.0, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2]
B_RTTS = [25, 50, 100, 150, 200, 250, 300, 350, 400, 450, 500, 550]
B_BDP_PKTS = 275
B_BUFFER_PKTS = 325
#: Bytes on the wire per packet in S0 (948 B payload + 52 B headers).
S0_PACKET_BYTES = 1000

#: The paper's published results (qualitative), for the comparison table.
PAPER = {
    "25ms": "iOS above Linux at every error rate",
    "100ms": "iOS above Linux below ~1e-4, Linux above iOS from ~1e-4 on (crossover near 1e-4)",
    "550ms": "Linux above iOS",
    "c_linux": (0.37, 0.40),
    "c_ios": (0.20, 0.28),
    "b_linux": (2.6, 3.0),
    "b_ios": (3.5, 4.7),
}


@dataclass
class S0Config:
    """What to run. ``quick``: a reduced grid that runs in seconds (for tests and previews)."""

    reps: int = 10
    quick: bool = False
    jobs: int | None = None
    executor: str = "local"
    losses: list[float] = field(default_factory=lambda: list(LOSSES))
    b_rtts: list[int] = field(default_factory=lambda: list(B_RTTS))
    a_duration_s: float = 100.0
    b_duration_s: float = 100.0

    @classmethod
    def make(cls, quick: bool = False, reps: int | None = None, **kw: Any) -> "S0Config":
        if quick:
            return cls(reps=reps or 2, quick=True, losses=[0.0, 1e-4, 1e-2], b_rtts=[25, 100, 550],
                       a_duration_s=20.0, b_duration_s=60.0, **kw)
        return cls(reps=reps or 10, **kw)


def plan(cfg: S0Config) -> tuple[list[RunSpec], list[RunSpec]]:
    """The runs of experiments A and B."""
    a: list[RunSpec] = []
    for rtt, name in PATHS.items():
        a += grid(
            name,
            {"bottleneck.loss": cfg.losses, "flows[0].cc": list(STACKS)},
            reps=cfg.reps,
            fixed={"duration_s": cfg.a_duration_s},
            labels={"rtt_ms": rtt},
        )
    b: list[RunSpec] = []
    for rtt in cfg.b_rtts:
        rate = B_BDP_PKTS * S0_PACKET_BYTES * 8 / (rtt / 1000)
        b += grid(
            "s0-cwnd-550ms",
            {"flows[0].cc": list(STACKS)},
            reps=1,
            fixed={
                "duration_s": cfg.b_duration_s,
                "bottleneck.rate_bps": rate,
                "bottleneck.delay_ms": rtt / 2,
                "bottleneck.queue_pkts": B_BUFFER_PKTS,
                "sim.trace": "interval",
                "sim.trace_interval_ms": 10,
            },
            labels={"rtt_ms": rtt, "rate_bps": rate},
            keep_trace=True,
        )
    return a, b


@dataclass
class S0Result:
    """Everything the report needs."""

    cfg: S0Config
    out_dir: Path
    a_runs: pd.DataFrame
    a_table: pd.DataFrame
    b_runs: pd.DataFrame
    c_table: pd.DataFrame
    compare: pd.DataFrame
    figures: dict[str, Path]
    tables: dict[str, list[Path]]
    failures: pd.DataFrame
    wall_s: float


def run_s0(out_dir: str | Path, cfg: S0Config, progress: Callable[[int, int], None] | None = None) -> S0Result:
    """Run the S0 study into ``out_dir`` (cache in ``out_dir/cache``): tables, figures, report."""
    import time

    from . import s0_figures

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    a_specs, b_specs = plan(cfg)
    sweep = run_sweep(a_specs + b_specs, out / "cache", cfg.jobs, cfg.executor, progress)
    runs = sweep.runs
    a_runs = runs[runs["flows[0].cc"].notna() & runs.get("rate_bps", pd.Series(np.nan, index=runs.index)).isna()]
    b_runs = runs[runs.get("rate_bps", pd.Series(np.nan, index=runs.index)).notna()]
    a_runs = a_runs.rename(columns={"flows[0].cc": "cc", "bottleneck.loss": "loss"})
    b_runs = b_runs.rename(columns={"flows[0].cc": "cc"})
    a_runs = a_runs.assign(goodput_mbps=a_runs["goodput_bps"] / 1e6 if "goodput_bps" in a_runs else np.nan)
    a_table = aggregate(a_runs, ["rtt_ms", "cc", "loss"], ["goodput_mbps", "retrans_pkts", "rto_count"])
    c_table = method_c(sweep, b_runs)
    compare = compare_with_paper(a_table, c_table)
    tables = {
        "experiment_a": write_table(a_table, out / "tables" / "experiment_a"),
        "experiment_a_runs": write_table(a_runs.drop(columns=["key"], errors="ignore"), out / "tables" / "experiment_a_runs"),
        "experiment_b": write_table(b_summary(sweep, b_runs), out / "tables" / "experiment_b"),
        "method_c": write_table(c_table, out / "tables" / "method_c"),
        "compare": write_table(compare, out / "tables" / "compare_with_paper"),
    }
    figures = s0_figures.draw_all(out / "figures", a_table, sweep, b_runs, c_table)
    res = S0Result(cfg, out, a_runs, a_table, b_runs, c_table, compare, figures, tables, sweep.failures,
                   time.perf_counter() - t0)
    from .report import write_s0_report

    write_s0_report(res)
    return res


def b_summary(sweep: SweepResult, b_runs: pd.DataFrame) -> pd.DataFrame:
    """Table 2: the B paths and what each run's cwnd did."""
    rows = []
    for _, r in b_runs[b_runs["ok"].astype(bool)].iterrows():
        f = sweep.trace(r["key"])
        w = f["cwnd_pkts"].to_numpy(float)
        rows.append({"rtt_ms": r["rtt_ms"], "cc": r["cc"], "rate_mbps": r["rate_bps"] / 1e6,
                     "buffer_pkts": B_BUFFER_PKTS, "max_window_pkts": 1000,
                     "goodput_mbps": r["goodput_bps"] / 1e6, "max_cwnd_pkts": float(w.max()),
                     "mean_cwnd_pkts": float(w.mean()), "reductions": int(r.get("fast_retransmit_count", 0))})
    return pd.DataFrame(rows).sort_values(["cc", "rtt_ms"]).reset_index(drop=True)


def method_c(sweep: SweepResult, b_runs: pd.DataFrame, cycles: int = 3) -> pd.DataFrame:
    """Tables 3-6: per RTT and stack, the first ``cycles`` usable cycles' (t, W, K, W_max, W')
    and c by eq. (4), b by eq. (5), 1/c, with the fit's c."""
    from ..infer import estimate_cubic

    rows = []
    for _, r in b_runs[b_runs["ok"].astype(bool)].iterrows():
        est = estimate_cubic(sweep.trace(r["key"]), max_cycles=cycles)
        cyc = est.cycles
        use = cyc[cyc["fit_ok"] == True].head(cycles) if "fit_ok" in cyc else cyc.iloc[0:0]  # noqa: E712
        for i, (_, c) in enumerate(use.iterrows(), 1):
            rows.append({"stack": r["cc"], "rtt_ms": r["rtt_ms"], "cycle": i, "t_s": c["t_s"], "w_pkts": c["w_pkts"],
                         "K_s": c["K_s"], "wmax_pkts": c["wmax_pkts"], "w_prime_pkts": c["w_prime_pkts"],
                         "c": c["c_eq4"], "b": c["b_eq5"], "inv_c": c["inv_c"], "c_fit": c["c_fit"],
                         "beta": c["beta"], "key": r["key"]})
    return pd.DataFrame(rows)


def _winner(a: pd.DataFrame, rtt: int) -> tuple[str, list[str]]:
    """Who is faster at each error rate: "iOS", "Linux", or "tie" when the 95 % intervals overlap
    (or the means are within 0.5 %, as on a lossless path where both fill the link)."""
    sub = a[a["rtt_ms"] == rtt].set_index(["loss", "cc"])
    verdict, marks = [], []
    for loss in sorted({i[0] for i in sub.index}):
        try:
            li, io = sub.loc[(loss, "cubic")], sub.loc[(loss, "cubic-ios")]
        except KeyError:
            continue
        lm, im = li["goodput_mbps_mean"], io["goodput_mbps_mean"]
        overlap = not (li["goodput_mbps_ci95_high"] < io["goodput_mbps_ci95_low"]
                       or io["goodput_mbps_ci95_high"] < li["goodput_mbps_ci95_low"])
        if abs(lm - im) <= 0.005 * max(lm, im) or overlap:
            w = "tie"
        else:
            w = "iOS" if im > lm else "Linux"
        marks.append(w)
        verdict.append(f"{loss:g}: {w}")
    wins = {w for w in marks if w != "tie"}
    if not wins:
        s = "no significant difference at any error rate"
    elif wins == {"iOS"}:
        s = "iOS above Linux where they differ (" + ", ".join(v for v in verdict if v.endswith("iOS")) + ")"
    elif wins == {"Linux"}:
        s = "Linux above iOS where they differ (" + ", ".join(v for v in verdict if v.endswith("Linux")) + ")"
    else:
        s = "mixed: " + "; ".join(v for v in verdict if not v.endswith("tie"))
    return s, verdict


def compare_with_paper(a: pd.DataFrame, c: pd.DataFrame) -> pd.DataFrame:
    """The paper's published qualitative results beside ours."""
    rows = []
    for rtt in PATHS:
        ours, detail = _winner(a, rtt) if len(a) else ("(no data)", [])
        rows.append({"result": f"throughput order at {rtt} ms", "paper": PAPER[f"{rtt}ms"], "cclab": ours,
                     "detail": "; ".join(detail)})
    for stack, key in (("cubic", "linux"), ("cubic-ios", "ios")):
        sub = c[c["stack"] == stack] if len(c) else c
        for p in ("c", "b"):
            lo, hi = PAPER[f"{p}_{key}"]
            if len(sub):
                v = sub[p].dropna()
                ours = f"{v.min():.3f}-{v.max():.3f} (median {v.median():.3f})"
            else:
                ours = "(no usable cycles)"
            rows.append({"result": f"{p} of {STACKS[stack]}", "paper": f"{lo}-{hi}", "cclab": ours, "detail": ""})
    return pd.DataFrame(rows)
