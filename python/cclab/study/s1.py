"""The S1 study (Shimada, Yamaguchi, Oguchi): N Android terminals uploading with CUBIC through one
802.11g access point to a server 512 ms away, with and without the cooperative cwnd-clamping
middleware.

- Scaling (Fig. 4): total throughput against N, both terminal classes, middleware off; N = 1..6
  as in the paper, up to 20 in the full study.
- Middleware (Figs. 5, 11, 12): N = 3 and 6, off / the S3.2 table / "before" / "improved" /
  "improved" switched on only above a terminal count (the paper's future work); total and
  per-terminal throughput, Jain's fairness index, and the paper's published gains beside ours.
- The cell's MAC beside throughput (``s1_mac``): each station's mean PHY rate (the AP's and the
  terminals'), the collision probability, retry-limit and AP queue drops, per grid point and per
  station (``tables/stations``); the report says what differs from the paper with these numbers.
- cwnd traces (Figs. 6-10): one run per variant at N = 6.
- The collapse, explained: the paper's total falls with N, a full 802.11 model (ns-3) and the
  baseline here do not. Each ablation knob changes one mechanism (AP queue, the terminal's
  queue and TSQ, the minimum RTO, the MAC retry limit, ACK airtime, data rate, the terminal's
  per-packet cost); the report shows which turns a fall with N on or off.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from .aggregate import aggregate, write_table
from .grid import RunSpec, derive_seed
from .s1_stagger import beside_the_paper, stagger_figure, stagger_gains
from .s1_parity import middleware_gains, parity_figure, parity_table
from .s1_mac import MAC_RUN_METRICS, add_mac_columns, stations_table
from .s1_scenarios import TERMINALS, s1_scenario
from .sweep import SweepResult, run_sweep

__all__ = ["S1Config", "run_s1", "MIDDLEWARE_VARIANTS", "ABLATIONS", "PAPER_GAINS", "jain_index"]

#: Middleware settings per variant (None: off). ``min_terminals``: switched on only above it.
MIDDLEWARE_VARIANTS: dict[str, dict[str, Any] | None] = {
    "off": None,
    "s32": {"table": "s32"},
    "before": {"table": "before"},
    "improved": {"table": "improved"},
    "improved-above-3": {"table": "improved", "min_terminals": 4},
}

#: The paper's published results: (class, N, what, value). Gains of "improved" over "off".
PAPER_GAINS = [
    ("smartphone", 3, "throughput gain, improved vs off", 0.32),
    ("smartphone", 6, "throughput gain, improved vs off", 3.17),
    ("tablet", 6, "throughput gain, improved vs off", 0.21),
    ("tablet", 3, "throughput gain, improved vs off", -0.22),
    ("smartphone", 6, "fairness gain, improved vs off", 0.18),
    ("tablet", 6, "fairness gain, improved vs off", 0.55),
]


def _each_flow(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def f(d: dict[str, Any]) -> None:
        for fl in d["flows"]:
            fl[key] = value
    return f


def _cell(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def f(d: dict[str, Any]) -> None:
        d["media"][0][key] = value
    return f


def _terminals_host(**kw: Any) -> Callable[[dict[str, Any]], None]:
    def f(d: dict[str, Any]) -> None:
        for node in d["nodes"]:
            if "host" in node:
                node["host"] = {**node["host"], **kw}
    return f


def _ap_queue(pkts: int) -> Callable[[dict[str, Any]], None]:
    def f(d: dict[str, Any]) -> None:
        d["media"][0]["queue_pkts_by_node"] = {"ap": pkts}
    return f


#: Ablation knobs: name -> (mechanism, what it changes in the scenario). Each runs on the
#: smartphone class, middleware off, N in the scaling grid.
ABLATIONS: dict[str, tuple[str, Callable[[dict[str, Any]], None]]] = {
    "baseline": ("the S1 network as shipped", lambda d: None),
    "ap_queue_10": ("AP queue 10 packets (100 as shipped)", _ap_queue(10)),
    "ap_queue_1000": ("AP queue 1000 packets", _ap_queue(1000)),
    "station_tsq_linux": ("terminals run 6.18's TSQ (Linux 3.4 had none)", _terminals_host(tsq="linux")),
    "station_queue_50": ("terminal queue 50 packets (txqueuelen 1000 as shipped)",
                         lambda d: d["media"][0].update(queue_pkts=50)),
    "rto_min_1000ms": ("minimum RTO 1 s (200 ms as shipped)", _each_flow("rto_min_ms", 1000)),
    "retry_limit_2": ("MAC retry limit 2 attempts (7 as shipped)", _cell("retry_limit", 2)),
    "frame_errors_10pct": ("10 % frame error rate on every station", _cell("frame_error_rate", 0.1)),
    "control_rate_1mbps": ("MAC Acks at 1 Mbit/s (24 as shipped): more airtime per exchange",
                           _cell("control_rate_bps", 1_000_000)),
    "data_rate_11mbps": ("data frames at 11 Mbit/s (a rate adaptation stuck low)", _cell("data_rate_bps", 11_000_000)),
    "cpu_5mbps": ("terminal CPU takes 5 Mbit/s of packets (30 as shipped)",
                  _terminals_host(device_rate_bps=5_000_000)),
    "no_delayed_ack": ("the server ACKs every segment (twice the ACKs through the AP)", _each_flow("delayed_ack", False)),
    "rate_adaptation_arf": ("every station adapts its PHY rate with ARF (54 Mbit/s fixed as shipped): "
                            "collisions count as failures", _cell("rate_adaptation", "arf")),
    "rate_adaptation_aarf": ("every station adapts its PHY rate with AARF", _cell("rate_adaptation", "aarf")),
    "per_ack_growth": ("one cwnd growth step per ACK, as the phones' Linux 3.4 (per acked segment as shipped)",
                       _each_flow("ack_counting", "acks")),
}


@dataclass
class S1Config:
    """What to run. ``quick``: a reduced grid that runs in seconds (tests, previews)."""

    reps: int = 5
    quick: bool = False
    jobs: int | None = None
    executor: str = "local"
    duration_s: float = 60.0
    scaling_n: list[int] = field(default_factory=lambda: [1, 2, 3, 4, 5, 6, 8, 10, 15, 20])
    middleware_n: list[int] = field(default_factory=lambda: [3, 6])
    ablation_n: list[int] = field(default_factory=lambda: [1, 2, 3, 4, 5, 6])
    ablations: list[str] = field(default_factory=lambda: list(ABLATIONS))
    variants: list[str] = field(default_factory=lambda: list(MIDDLEWARE_VARIANTS))
    #: The cell's rate control for the scaling and middleware grids: "none" (54 Mbit/s fixed,
    #: the ns-3 setup: no collapse) and "arf" (the mechanism the ablation finds for the collapse).
    rates: list[str] = field(default_factory=lambda: ["none", "arf"])
    #: Start schedules for the fairness ablation (``s1_stagger``): terminal k starts at k times
    #: each (0: all at once), middleware off and improved, at ``stagger_n``, both rate controls.
    stagger_s: list[float] = field(default_factory=lambda: [0.0, 2.0, 5.0])
    stagger_n: list[int] = field(default_factory=lambda: [3, 6])
    #: "sim", or "kernel": the scaling and middleware grids on this machine's Linux (root; real
    #: time, one run at a time; the ablation stays with the simulator, whose knobs the kernel
    #: does not all have).
    backend: str = "sim"

    @classmethod
    def make(cls, quick: bool = False, reps: int | None = None, **kw: Any) -> "S1Config":
        if kw.get("backend") == "kernel":
            kw = {"ablations": [], "stagger_s": [], **kw}
        if quick:
            kw = {"duration_s": 30.0, "scaling_n": [1, 3, 6], "ablation_n": [1, 6], "stagger_s": [0.0, 2.0], **kw}
            return cls(reps=reps or 1, quick=True, **kw)
        return cls(reps=reps or 5, **kw)


def _spec(d: dict[str, Any], rep: int, labels: dict[str, Any], keep_trace: bool = False,
          backend: str = "sim") -> RunSpec:
    return RunSpec(d, (), derive_seed(1, rep), tuple(labels.items()), keep_trace, backend=backend)


def plan(cfg: S1Config) -> list[RunSpec]:
    """Every run of the study: scaling, middleware variants, ablation."""
    specs: list[RunSpec] = []
    for rates in cfg.rates:
        for terminal in TERMINALS:
            for n in cfg.scaling_n:
                for rep in range(cfg.reps):
                    d = s1_scenario(n, terminal, duration_s=cfg.duration_s, rate_adaptation=rates)
                    specs.append(_spec(d, rep, {"part": "scaling", "rates": rates, "terminal": terminal,
                                                "n_terminals": n, "variant": "off", "rep": rep}, backend=cfg.backend))
            for n in cfg.middleware_n:
                for v in cfg.variants:
                    mw = MIDDLEWARE_VARIANTS[v]
                    for rep in range(cfg.reps):
                        d = s1_scenario(n, terminal, duration_s=cfg.duration_s, middleware=mw, rate_adaptation=rates)
                        specs.append(_spec(d, rep, {"part": "middleware", "rates": rates, "terminal": terminal,
                                                    "n_terminals": n, "variant": v, "rep": rep},
                                           keep_trace=(rep == 0 and n == max(cfg.middleware_n)), backend=cfg.backend))
    if cfg.backend == "kernel":
        # Each kernel run's simulator twin: the same scenario and seed, each labelled with its
        # backend as S2's and S4's kernel parts are (``s1_parity``).
        specs = [dataclasses.replace(s, labels=(*s.labels, ("backend", "kernel"))) for s in specs] + [
            dataclasses.replace(s, backend="sim", keep_trace=False, labels=(*s.labels, ("backend", "sim")))
            for s in specs]
    for rates in cfg.rates if cfg.stagger_s else []:
        for terminal in TERMINALS:
            for n in cfg.stagger_n:
                for stagger in cfg.stagger_s:
                    for v in ("off", "improved"):
                        for rep in range(cfg.reps):
                            d = s1_scenario(n, terminal, duration_s=cfg.duration_s, middleware=MIDDLEWARE_VARIANTS[v],
                                            rate_adaptation=rates, start_stagger_s=stagger)
                            specs.append(_spec(d, rep, {"part": "stagger", "rates": rates, "terminal": terminal,
                                                        "n_terminals": n, "variant": v, "start_stagger_s": stagger,
                                                        "rep": rep}))
    for name in cfg.ablations:
        _, change = ABLATIONS[name]
        for n in cfg.ablation_n:
            for rep in range(cfg.reps):
                d = copy.deepcopy(s1_scenario(n, "smartphone", duration_s=cfg.duration_s))
                change(d)
                specs.append(_spec(d, rep, {"part": "ablation", "rates": "none", "terminal": "smartphone",
                                            "n_terminals": n, "variant": "off", "ablation": name, "rep": rep}))
    return specs


def jain_index(x: np.ndarray) -> float:
    """Jain's fairness index (sum x)^2 / (k sum x^2): 1 when all are equal, 1/k when one has all."""
    x = np.asarray(x, float)
    return float(x.sum() ** 2 / (len(x) * (x**2).sum())) if len(x) and (x**2).sum() > 0 else float("nan")


def _per_run(runs: pd.DataFrame) -> pd.DataFrame:
    """Total throughput and Jain's index per run from the per-flow columns."""
    ok = runs[runs["ok"].astype(bool)].copy()
    cols = sorted((c for c in ok.columns if c.startswith("flow") and c.endswith("_goodput_bps")),
                  key=lambda c: int(c[4:].split("_")[0]))
    totals, jains = [], []
    for _, r in ok.iterrows():
        x = np.array([r[c] for c in cols if pd.notna(r.get(c))], float)
        if not len(x) and pd.notna(r.get("goodput_bps")):
            x = np.array([r["goodput_bps"]], float)
        totals.append(x.sum() / 1e6)
        jains.append(jain_index(x))
    return ok.assign(total_mbps=totals, jain=jains)


@dataclass
class S1Result:
    """Everything the report needs."""

    cfg: S1Config
    out_dir: Path
    runs: pd.DataFrame
    scaling: pd.DataFrame
    middleware: pd.DataFrame
    ablation: pd.DataFrame
    #: Per grid point and station of the cell: mean PHY rate, collision probability, drops.
    stations: pd.DataFrame
    collapse: pd.DataFrame
    compare: pd.DataFrame
    figures: dict[str, Path]
    tables: dict[str, list[Path]]
    failures: pd.DataFrame
    sweep: SweepResult
    wall_s: float
    #: Kernel runs beside their simulator twins per grid point, and the middleware's gains on each
    #: backend (``s1_parity``; empty on the simulator backend).
    parity: pd.DataFrame = field(default_factory=pd.DataFrame)
    parity_gains: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: The fairness ablation: per start stagger, Jain's index and total off and improved (``s1_stagger``).
    stagger: pd.DataFrame = field(default_factory=pd.DataFrame)


def collapse_table(ablation: pd.DataFrame) -> pd.DataFrame:
    """Per ablation: total at N = 1, the peak and where, the total at the largest N, and the fall
    from the peak to the largest N (the paper's curve falls by about half from its peak at 3)."""
    rows = []
    for name, g in ablation.groupby("ablation", sort=False):
        g = g.sort_values("n_terminals")
        m = g.set_index("n_terminals")["total_mbps_mean"]
        peak_n = int(m.idxmax())
        last_n = int(m.index.max())
        rows.append({"ablation": name, "mechanism": ABLATIONS[name][0], "total_n1_mbps": float(m.iloc[0]),
                     "peak_mbps": float(m.max()), "peak_n": peak_n, f"total_n{last_n}_mbps": float(m.loc[last_n]),
                     "fall_from_peak": float(1 - m.loc[last_n] / m.max())})
    return pd.DataFrame(rows)


def compare_with_paper(mw: pd.DataFrame) -> pd.DataFrame:
    """The paper's published gains beside ours (mean totals and Jain's index of improved vs off),
    one column per rate control of the cell (``cclab_<rates>``)."""
    rows = []
    for terminal, n, what, paper in PAPER_GAINS:
        row = {"terminal": terminal, "n_terminals": n, "result": what, "paper": paper}
        for rates in dict.fromkeys(mw["rates"]):
            sub = mw[(mw["rates"] == rates) & (mw["terminal"] == terminal) & (mw["n_terminals"] == n)]
            sub = sub.set_index("variant")
            col = "jain_mean" if what.startswith("fairness") else "total_mbps_mean"
            row[f"cclab_{rates}"] = (float(sub.loc["improved", col] / sub.loc["off", col] - 1)
                                     if {"improved", "off"} <= set(sub.index) else float("nan"))
        rows.append(row)
    return pd.DataFrame(rows)


def run_s1(out_dir: str | Path, cfg: S1Config, progress: Callable[[int, int], None] | None = None) -> S1Result:
    """Run the S1 study into ``out_dir`` (cache in ``out_dir/cache``): tables, figures, report."""
    from . import s1_figures

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    sweep = run_sweep(plan(cfg), out / "cache", cfg.jobs, cfg.executor, progress)
    runs = add_mac_columns(_per_run(sweep.runs))
    # The study's own runs: on the kernel backend the simulator twins are only for the parity.
    own = runs[runs["backend"] != "sim"] if "backend" in runs else runs
    metrics = ["total_mbps", "jain", *MAC_RUN_METRICS]
    def agg(part: str, by: list[str]) -> pd.DataFrame:
        rows = own[own["part"] == part] if "part" in own else own.iloc[0:0]
        return aggregate(rows, by, metrics) if len(rows) else pd.DataFrame()

    scaling = agg("scaling", ["rates", "terminal", "n_terminals"])
    middleware = agg("middleware", ["rates", "terminal", "n_terminals", "variant"])
    stagger = stagger_gains(agg("stagger", ["rates", "terminal", "n_terminals", "start_stagger_s", "variant"]))
    ablation = agg("ablation", ["ablation", "n_terminals"])
    if len(ablation):
        order = {a: i for i, a in enumerate(ABLATIONS)}
        ablation = ablation.sort_values(["ablation", "n_terminals"], key=lambda s: s.map(order) if s.name == "ablation" else s)
    collapse = collapse_table(ablation) if len(ablation) else pd.DataFrame()
    compare = beside_the_paper(compare_with_paper(middleware) if len(middleware) else pd.DataFrame(), stagger)
    per_terminal = own[own["part"] == "middleware"].drop(columns=["key"], errors="ignore")
    grids = own[own["part"].isin(["scaling", "middleware"])] if "part" in own else own.iloc[0:0]
    stations = stations_table(grids, ["part", "rates", "terminal", "n_terminals", "variant"]) if len(grids) else \
        pd.DataFrame()
    tables = {
        "scaling": write_table(scaling, out / "tables" / "scaling"),
        "middleware": write_table(middleware, out / "tables" / "middleware"),
        "ablation": write_table(ablation, out / "tables" / "ablation"),
        "collapse": write_table(collapse, out / "tables" / "collapse"),
        "stations": write_table(stations, out / "tables" / "stations"),
        "compare": write_table(compare, out / "tables" / "compare_with_paper"),
        "stagger": write_table(stagger, out / "tables" / "stagger"),
        "runs": write_table(runs.drop(columns=["key"], errors="ignore"), out / "tables" / "runs"),
    }
    parity = parity_table(runs)
    gains = middleware_gains(parity)
    if len(parity):
        tables |= {"kernel_parity": write_table(parity, out / "tables" / "kernel_parity"),
                   "kernel_parity_gains": write_table(gains, out / "tables" / "kernel_parity_gains")}
    figures = s1_figures.draw_all(out / "figures", scaling, middleware, ablation, per_terminal, sweep,
                                  own[own["part"] == "middleware"])
    if (fig := parity_figure(parity, out / "figures" / "kernel_parity")) is not None:
        figures["kernel_parity"] = fig
    if (fig := stagger_figure(stagger, out / "figures" / "stagger")) is not None:
        figures["stagger"] = fig
    res = S1Result(cfg, out, runs, scaling, middleware, ablation, stations, collapse, compare, figures, tables,
                   sweep.failures, sweep, time.perf_counter() - t0, parity, gains, stagger)
    from .s1_report import write_s1_report

    write_s1_report(res)
    return res
