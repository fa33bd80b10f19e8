"""The S0 study (Hozumi, Utsumi, Zabir): CUBIC on iOS vs Linux.

- Experiment A: throughput vs link error rate on the three Table 1 paths (``s0-25ms``,
  ``s0-100ms``, ``s0-550ms``), Linux ``cubic`` vs the two models of iOS, ``cubic-ios`` (the
  paper's measured constants) and ``cubic-xnu`` (Apple's own CUBIC), N runs each (paper: 10)
  with distinct seeds: the paper's Figures 4-6 with 95 % error bars.
- "Why the order": an ablation of ``cubic-xnu``'s differences from ``cubic`` on the same paths
  (``s0_ablation``), simulator only.
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
from . import s0_ablation
from .compare import STACKS, compare_with_paper
from .grid import RunSpec, grid
from .sweep import SweepResult, run_sweep

__all__ = ["S0Config", "run_s0", "PATHS", "STACKS"]

PATHS = {25: "s0-25ms", 100: "s0-100ms", 550: "s0-550ms"}
LOSSES = [0.0, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2]
B_RTTS = [25, 50, 100, 150, 200, 250, 300, 350, 400, 450, 500, 550]
B_BDP_PKTS = 275
B_BUFFER_PKTS = 325
#: Bytes on the wire per packet in S0 (948 B payload + 52 B headers).
S0_PACKET_BYTES = 1000
#: Stacks only the simulator has (the kernel backend runs the others; these and the ablation
#: then stay with the simulator).
SIM_ONLY_STACKS = ("cubic-xnu",)

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
    #: Error rates of the ablation ("why the order").
    ablation_losses: list[float] = field(default_factory=lambda: list(s0_ablation.LOSSES))
    #: Seeds per ablation cell (None: ``reps``; fewer halves its cost, the first seeds of A's).
    ablation_reps: int | None = None
    #: "sim", or "kernel": the same grid on this machine's Linux (root; real time, one run at a
    #: time, so the full grid takes hours: see docs/studies.md).
    backend: str = "sim"

    @classmethod
    def make(cls, quick: bool = False, reps: int | None = None, **kw: Any) -> "S0Config":
        if quick:
            return cls(reps=reps or 2, quick=True, losses=[0.0, 1e-4, 1e-2], b_rtts=[25, 100, 550],
                       a_duration_s=20.0, b_duration_s=60.0, ablation_losses=list(s0_ablation.QUICK_LOSSES),
                       **kw)
        return cls(reps=reps or 10, **kw)


def stacks(cfg: S0Config) -> list[str]:
    """The stacks of experiments A and B on ``cfg.backend``."""
    return [s for s in STACKS if cfg.backend == "sim" or s not in SIM_ONLY_STACKS]


def plan(cfg: S0Config) -> tuple[list[RunSpec], list[RunSpec], list[RunSpec]]:
    """The runs of experiments A and B and of the ablation (always the simulator)."""
    a: list[RunSpec] = []
    for rtt, name in PATHS.items():
        a += grid(
            name,
            {"bottleneck.loss": cfg.losses, "flows[0].cc": stacks(cfg)},
            reps=cfg.reps,
            fixed={"duration_s": cfg.a_duration_s},
            labels={"experiment": "A", "rtt_ms": rtt},
            backend=cfg.backend,
        )
    b: list[RunSpec] = []
    for rtt in cfg.b_rtts:
        rate = B_BDP_PKTS * S0_PACKET_BYTES * 8 / (rtt / 1000)
        b += grid(
            "s0-cwnd-550ms",
            {"flows[0].cc": stacks(cfg)},
            reps=1,
            fixed={
                "duration_s": cfg.b_duration_s,
                "bottleneck.rate_bps": rate,
                "bottleneck.delay_ms": rtt / 2,
                "bottleneck.queue_pkts": B_BUFFER_PKTS,
                "sim.trace": "interval",
                "sim.trace_interval_ms": 10,
            },
            labels={"experiment": "B", "rtt_ms": rtt, "rate_bps": rate},
            keep_trace=True,
            post="cclab.study.s0:cycles_of_trace",
            backend=cfg.backend,
        )
    ablation = s0_ablation.plan(PATHS, cfg.ablation_losses, cfg.ablation_reps or cfg.reps, cfg.a_duration_s,
                                cfg.quick)
    return a, b, ablation


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
    #: The ablation: rows = variants, columns = RTT x error rate (``s0_ablation.table``), the
    #: effects it reads (``s0_ablation.effects``) and the conclusion per RTT.
    ablation: pd.DataFrame = field(default_factory=pd.DataFrame)
    ablation_effects: pd.DataFrame = field(default_factory=pd.DataFrame)
    ablation_conclusion: list[str] = field(default_factory=list)
    ablation_runs: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: Distinct runs of the study (the ablation's two stacks are A's runs).
    n_runs: int = 0


def run_s0(out_dir: str | Path, cfg: S0Config, progress: Callable[[int, int], None] | None = None) -> S0Result:
    """Run the S0 study into ``out_dir`` (cache in ``out_dir/cache``): tables, figures, report."""
    import time

    from . import s0_figures

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    a_specs, b_specs, ab_specs = plan(cfg)
    # The ablation's two stacks are experiment A's runs (same scenario, seed and backend): run once.
    in_a = {_ident(s): i for i, s in enumerate(a_specs)}
    extra = [s for s in ab_specs if _ident(s) not in in_a]
    sweep = run_sweep(a_specs + b_specs + extra, out / "cache", cfg.jobs, cfg.executor, progress)
    runs = sweep.runs
    ab_runs = _ablation_runs(runs, ab_specs, in_a, len(a_specs) + len(b_specs))
    ablation = s0_ablation.table(ab_runs) if len(ab_runs) else pd.DataFrame()
    ab_effects = s0_ablation.effects(ablation, ab_runs) if len(ablation) else pd.DataFrame()
    a_runs = runs[runs["experiment"] == "A"].dropna(axis=1, how="all")
    b_runs = runs[runs["experiment"] == "B"].dropna(axis=1, how="all")
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
        "ablation": write_table(ablation, out / "tables" / "ablation"),
        "ablation_effects": write_table(ab_effects, out / "tables" / "ablation_effects"),
        "ablation_runs": write_table(ab_runs.drop(columns=["key"], errors="ignore"), out / "tables" / "ablation_runs"),
    }
    figures = s0_figures.draw_all(out / "figures", a_table, sweep, b_runs, cfg.jobs, ab_effects)
    res = S0Result(cfg, out, a_runs, a_table, b_runs, c_table, compare, figures, tables, sweep.failures,
                   time.perf_counter() - t0, ablation, ab_effects,
                   s0_ablation.conclusion(ablation, ab_effects) if len(ablation) else [], ab_runs, len(runs))
    from .report import write_s0_report

    write_s0_report(res)
    return res


def _ident(spec: RunSpec) -> tuple:
    """What makes two specs the same run (the cache key without normalising the scenario)."""
    import json

    return (str(spec.source), json.dumps(dict(spec.overrides), sort_keys=True, default=str), spec.seed, spec.backend)


def _ablation_runs(runs: pd.DataFrame, specs: list[RunSpec], in_a: dict[tuple, int], first_extra: int) -> pd.DataFrame:
    """One row per ablation spec, in order: experiment A's row for the runs it shares (relabelled),
    else the ablation's own (from ``first_extra`` on in ``runs``)."""
    rows, k = [], first_extra
    for spec in specs:
        i = in_a.get(_ident(spec))
        if i is None:
            i, k = k, k + 1
        ov = dict(spec.overrides)
        rows.append(runs.iloc[i].drop(labels=["flows[0].cc"], errors="ignore").to_dict() | dict(spec.labels)
                    | {"cc": ov.get("flows[0].cc"), "cc_params": str(ov.get("flows[0].cc_params", {}))})
    out = pd.DataFrame(rows).dropna(axis=1, how="all")
    return out.rename(columns={"bottleneck.loss": "loss"})


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


#: Cycles per (RTT, stack) in the Tables 3-6 layout, as in the paper.
C_CYCLES = 3


def cycles_of_trace(flows: pd.DataFrame) -> pd.DataFrame:
    """Method C on one B trace (run in the sweep's worker, cached): every detected cycle with the
    estimator's per-cycle fit (``cclab.infer.estimate_cubic``)."""
    from ..infer import estimate_cubic

    return estimate_cubic(flows, max_cycles=C_CYCLES).cycles


def method_c(sweep: SweepResult, b_runs: pd.DataFrame, cycles: int = C_CYCLES) -> pd.DataFrame:
    """Tables 3-6: per RTT and stack, the first ``cycles`` usable cycles' (t, W, K, W_max, W')
    and c by eq. (4), b by eq. (5), 1/c, with the least-squares c."""
    rows = []
    for _, r in b_runs[b_runs["ok"].astype(bool)].iterrows():
        cyc = sweep.post(r["key"])
        use = cyc[cyc["fit_ok"] == True].head(cycles) if "fit_ok" in cyc else cyc.iloc[0:0]  # noqa: E712
        for i, (_, c) in enumerate(use.iterrows(), 1):
            rows.append({"stack": r["cc"], "rtt_ms": r["rtt_ms"], "cycle": i, "t_s": c["t_s"], "w_pkts": c["w_pkts"],
                         "K_s": c["K_s"], "wmax_pkts": c["wmax_pkts"], "w_prime_pkts": c["w_prime_pkts"],
                         "c": c["c_eq4"], "b": c["b_eq5"], "inv_c": c["inv_c"], "c_fit": c["c_fit"],
                         "beta": c["beta"], "key": r["key"]})
    return pd.DataFrame(rows)
