"""The S2 study (Izumi, Tarutani, Fukushima, Yokohira): Multipath TCP applications sharing the
sender's interfaces, and how TCP Small Queues decide their throughput.

- TSQ rules (Figs. 2 and 4): three LIA applications started 0.5 s apart, loss 0 and 1e-5; the
  paper's rule (its eq. 2, the v0.92 kernel's), Linux 6.18's, the fixed 131072 bytes of eq. 3,
  cclab's adaptive rule (the paper's future work), and no TSQ at all (the interface queue then
  fills and local congestion control acts: the ablation of the paper's mechanism).
- cwnd (Fig. 3): every subflow of every application over the first 3 s, paper's rule vs fixed.
- Coupled congestion control: LIA, OLIA, BALIA and uncoupled CUBIC (what upstream Linux runs).
- The adaptive rule on two more setups: unequal RTTs (20/50/100 ms) and five applications.
- Kernel (``backend = "kernel"``): what upstream Linux 6.18 runs exactly, uncoupled CUBIC under
  Linux's TSQ, on the simulator and on this machine's kernel (the same scenario and seed, paired
  repetitions): each application's throughput once all run, side by side. The other rows need
  what only the simulator has (coupled congestion control, the paper's, fixed, adaptive TSQ):
  ``KERNEL_NOT_RUNNABLE`` says why.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from .aggregate import aggregate, write_table
from .grid import RunSpec, derive_seed
from .s1 import jain_index
from .s2_scenarios import s2_scenario
from .sweep import SweepResult, run_sweep

__all__ = ["S2Config", "run_s2", "TSQ_VARIANTS", "SETUPS", "PAPER_RESULTS", "KERNEL_NOT_RUNNABLE", "kernel_table",
           "kernel_scenario"]

#: TSQ rules the study compares: name -> what it is.
TSQ_VARIANTS: dict[str, str] = {
    "paper": "the paper's rule (eq. 2: min(262144, max(8704, 2 MSS w / RTT / 1024))), its v0.92 kernel's",
    "linux": "Linux 6.18's tcp_small_queue_check (about 1 ms at the pacing rate, at least 2 skbs)",
    "fixed": "a fixed limit of 131072 bytes (eq. 3)",
    "adaptive": "cclab's equal share: every socket on an interface reads the fastest pacing rate there",
    "off": "no TSQ: a socket may fill the interface queue (local drops, CWR)",
}

#: The loss rate of the congestion-control comparison (the paper's Fig. 4).
CC_LOSS = 1e-5

#: Setups for the adaptive rule: name -> s2_scenario arguments.
SETUPS: dict[str, dict[str, Any]] = {
    "paper": {"n_apps": 3},
    "unequal-rtt": {"n_apps": 3, "rtts_ms": (20.0, 50.0, 100.0)},
    "five-apps": {"n_apps": 5},
}

#: The study's rows the kernel backend cannot run as they are, and why (docs/kernel.md,
#: "Multipath TCP"; the kernel part runs uncoupled CUBIC under Linux's TSQ instead).
KERNEL_NOT_RUNNABLE = [
    ("cc = lia, olia, balia", "upstream Linux MPTCP has no coupled congestion control: each subflow is an "
                              "independent TCP socket with the system's algorithm"),
    ("tsq = paper", "the v0.92 kernel's rule (eq. 2) is not in 6.18"),
    ("tsq = fixed", "6.18 has no fixed limit: tcp_limit_output_bytes only caps its pacing-rate rule"),
    ("tsq = adaptive", "cclab's rule, simulator only"),
    ("tsq = off", "6.18's TSQ cannot be switched off (tcp_limit_output_bytes at its largest still leaves the "
                  "pacing-rate rule)"),
]

#: The paper's published results, as (result, the paper's value or words).
PAPER_RESULTS = [
    ("APP1's share of the total, paper's rule (default), loss 0", "most of it (Fig. 2)"),
    ("Jain's index, fixed 131072 bytes, loss 0", "equal throughputs (Fig. 2)"),
    ("mean cwnd of APP2 and APP3's subflows, 1.5-3 s, paper's rule", "about 200 (Fig. 3)"),
    ("mean cwnd of APP2 and APP3's subflows, 1.5-3 s, fixed", "about 400 (Fig. 3)"),
]


@dataclass
class S2Config:
    """What to run. ``quick``: a reduced grid that runs in seconds (tests, previews)."""

    reps: int = 5
    quick: bool = False
    jobs: int | None = None
    executor: str = "local"
    duration_s: float = 30.0
    losses: list[float] = field(default_factory=lambda: [0.0, 1e-5])
    tsqs: list[str] = field(default_factory=lambda: list(TSQ_VARIANTS))
    ccs: list[str] = field(default_factory=lambda: ["lia", "olia", "balia", "cubic"])
    setups: list[str] = field(default_factory=lambda: list(SETUPS))
    #: "sim", or "kernel": also run the kernel part (uncoupled CUBIC, Linux's TSQ) on both
    #: backends, ``kernel_reps`` paired repetitions of ``kernel_duration_s`` at each of
    #: ``kernel_losses`` (root; real time, one kernel run at a time).
    backend: str = "sim"
    kernel_reps: int = 5
    kernel_duration_s: float = 30.0
    kernel_losses: list[float] = field(default_factory=lambda: [0.0])

    @classmethod
    def make(cls, quick: bool = False, reps: int | None = None, **kw: Any) -> "S2Config":
        if quick:
            kw = {"duration_s": 10.0, "kernel_duration_s": 10.0, **kw}
            return cls(reps=reps or 1, quick=True, **kw)
        return cls(reps=reps or 5, **kw)

    @property
    def kernel(self) -> bool:
        return self.backend == "kernel"


def _spec(d: dict[str, Any], rep: int, labels: dict[str, Any], keep_trace: bool = False,
          backend: str = "sim") -> RunSpec:
    return RunSpec(d, (), derive_seed(2, rep), tuple(labels.items()), keep_trace, post="cclab.study.s2:steady_rates",
                   backend=backend)


#: Steady state starts this long after the last application started, s.
SETTLE_S = 1.0


def steady_rates(flows: pd.DataFrame) -> pd.DataFrame:
    """Each application's throughput once all run: bytes its subflows delivered (acked at the
    subflow level) from the last start (the n-th application starts at (n - 1) x 0.5 s) plus
    ``SETTLE_S`` to the end of the trace, Mbit/s. A trace row holds from its time on."""
    from .s2_scenarios import START_GAP_S

    apps = list(dict.fromkeys(flows["flow"].astype(str)))
    t0 = (len(apps) - 1) * START_GAP_S + SETTLE_S
    t1 = float(flows["t_s"].max())
    rows = []
    for app, g in flows.groupby(flows["flow"].astype(str), sort=False):
        got = 0
        for _, h in g.groupby("subflow"):
            h = h.sort_values("t_s")
            before = h[h["t_s"] <= t0]["delivered_bytes"]
            got += int(h["delivered_bytes"].iloc[-1]) - (int(before.iloc[-1]) if len(before) else 0)
        rows.append({"flow": app, "steady_mbps": got * 8 / max(t1 - t0, 1e-9) / 1e6})
    return pd.DataFrame(rows)


def plan(cfg: S2Config) -> list[RunSpec]:
    """Every run: TSQ rules x loss (LIA), congestion controls x TSQ, the adaptive rule's setups."""
    specs: list[RunSpec] = []
    for loss in cfg.losses:
        for tsq in cfg.tsqs:
            for rep in range(cfg.reps):
                d = s2_scenario(3, cc="lia", tsq=tsq, loss=loss, duration_s=cfg.duration_s)
                specs.append(_spec(d, rep, {"part": "tsq", "setup": "paper", "cc": "lia", "tsq": tsq, "loss": loss,
                                            "n_apps": 3, "rep": rep}, keep_trace=rep == 0 and loss == 0))
    # At loss 0 no subflow leaves slow start before TSQ holds it (its cwnd then stops growing), so
    # the algorithms differ only once packets are lost: this part runs at the paper's 1e-5.
    for cc in cfg.ccs:
        for tsq in ("paper", "adaptive"):
            for rep in range(cfg.reps):
                d = s2_scenario(3, cc=cc, tsq=tsq, loss=CC_LOSS, duration_s=cfg.duration_s)
                specs.append(_spec(d, rep, {"part": "cc", "setup": "paper", "cc": cc, "tsq": tsq, "loss": CC_LOSS,
                                            "n_apps": 3, "rep": rep}))
    for setup in cfg.setups:
        if setup == "paper":
            continue  # the "tsq" part has it
        for tsq in ("paper", "linux", "adaptive"):
            for rep in range(cfg.reps):
                d = s2_scenario(cc="lia", tsq=tsq, duration_s=cfg.duration_s, **SETUPS[setup])
                specs.append(_spec(d, rep, {"part": "setup", "setup": setup, "cc": "lia", "tsq": tsq, "loss": 0.0,
                                            "n_apps": SETUPS[setup]["n_apps"], "rep": rep}))
    if cfg.kernel:
        for loss, hystart in ((loss, h) for loss in cfg.kernel_losses for h in (True, False)):
            d = kernel_scenario(loss, cfg.kernel_duration_s, hystart)
            for rep in range(cfg.kernel_reps):
                for backend in ("sim", "kernel"):
                    specs.append(_spec(d, rep, {"part": "kernel", "setup": "paper", "cc": "cubic", "tsq": "linux",
                                                "loss": loss, "hystart": hystart, "n_apps": 3, "backend": backend,
                                                "rep": rep},
                                       keep_trace=rep == 0, backend=backend))
    return specs


def kernel_scenario(loss: float, duration_s: float, hystart: bool = True) -> dict[str, Any]:
    """The kernel part's scenario: the paper's setup as upstream Linux 6.18 runs it, uncoupled
    CUBIC under Linux's TSQ, with upstream's Multipath TCP in the simulator (``mptcp_stack =
    "linux"``) and the kernel backend's device (htb + TUN: ``device_release = "start"``); with
    HyStart on (the default) or off on every subflow (on the kernel, tcp_cubic's module
    parameter for the run)."""
    return s2_scenario(3, cc="cubic", tsq="linux", loss=loss, duration_s=duration_s, mptcp_stack="linux",
                       device_release="start", hystart=hystart)


def kernel_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The kernel part: per loss and backend, each application's throughput once all run (mean,
    standard deviation, least and most over the repetitions), the total and Jain's index, and
    the runs; then per loss a row ``kernel / sim`` of the means' ratios."""
    sel = runs[runs["part"] == "kernel"] if "part" in runs and len(runs) else pd.DataFrame()
    if sel.empty:
        return pd.DataFrame()
    apps = sorted(c for c in sel.columns if c.startswith("app") and c.endswith("_steady_mbps") and sel[c].notna().any())
    rows = []
    sel = sel.assign(hystart=sel["hystart"].fillna(True).astype(bool)) if "hystart" in sel else sel.assign(hystart=True)
    for (loss, hystart), g in sel.groupby(["loss", "hystart"], sort=True):
        means = {}
        for backend in ("sim", "kernel"):
            b = g[g["backend"] == backend]
            row: dict[str, Any] = {"loss": loss, "hystart": hystart, "backend": backend, "runs": len(b)}
            for c in [*apps, "steady_total_mbps", "jain"]:
                v = b[c].to_numpy(float) if len(b) else np.array([])
                name = c.replace("_steady_mbps", "").replace("_mbps", "")
                row[f"{name}_mean"] = float(np.mean(v)) if len(v) else np.nan
                if c in apps:
                    row[f"{name}_sd"] = float(np.std(v, ddof=1)) if len(v) > 1 else np.nan
                    row[f"{name}_min"] = float(np.min(v)) if len(v) else np.nan
                    row[f"{name}_max"] = float(np.max(v)) if len(v) else np.nan
            means[backend] = row
            rows.append(row)
        ratio: dict[str, Any] = {"loss": loss, "hystart": hystart, "backend": "kernel / sim", "runs": np.nan}
        for k, v in means["kernel"].items():
            if k.endswith("_mean"):
                s = means["sim"].get(k, np.nan)
                ratio[k] = v / s if s == s and s else np.nan
        rows.append(ratio)
    return pd.DataFrame(rows)


def per_run(runs: pd.DataFrame, sweep: SweepResult | None = None) -> pd.DataFrame:
    """Per run: each application's throughput over the whole run (``app1_mbps``...) and once all
    run (``app1_steady_mbps``..., from the cached :func:`steady_rates`), the totals, and over the
    steady rates Jain's index and APP1's share."""
    ok = runs[runs["ok"].astype(bool)].copy() if "ok" in runs else runs.copy()
    n_max = int(ok["n_apps"].max()) if len(ok) else 0
    apps = np.full((len(ok), n_max), np.nan)
    steady = np.full((len(ok), n_max), np.nan)
    for i, (_, r) in enumerate(ok.iterrows()):
        for a in range(int(r["n_apps"])):
            apps[i, a] = r.get(f"flow{a}_goodput_bps", np.nan) / 1e6
        if sweep is not None and isinstance(r.get("key"), str):
            st = sweep.post(r["key"])["steady_mbps"].to_numpy(float)
            steady[i, : len(st)] = st
    for a in range(n_max):
        ok[f"app{a + 1}_mbps"] = apps[:, a]
        ok[f"app{a + 1}_steady_mbps"] = steady[:, a]
    ok["total_mbps"] = np.nansum(apps, axis=1)
    total = np.nansum(steady, axis=1)
    ok["steady_total_mbps"] = total
    ok["jain"] = [jain_index(row[~np.isnan(row)]) for row in steady]
    ok["app1_share"] = steady[:, 0] / np.where(total > 0, total, np.nan) if n_max else []
    return ok


def cwnd_window(trace: Path, t0_s: float = 1.5, t1_s: float = 3.0) -> pd.DataFrame:
    """Mean cwnd of each application's subflows between ``t0_s`` and ``t1_s`` (Fig. 3's reading)."""
    f = pd.read_parquet(trace, columns=["flow", "subflow", "t_s", "cwnd_pkts"])
    w = f[(f["t_s"] >= t0_s) & (f["t_s"] <= t1_s)]
    return w.groupby(["flow", "subflow"], observed=True)["cwnd_pkts"].mean().reset_index()


@dataclass
class S2Result:
    """Everything the report needs."""

    cfg: S2Config
    out_dir: Path
    runs: pd.DataFrame
    tsq: pd.DataFrame
    cc: pd.DataFrame
    setups: pd.DataFrame
    cwnd: pd.DataFrame
    compare: pd.DataFrame
    figures: dict[str, Path]
    tables: dict[str, list[Path]]
    failures: pd.DataFrame
    sweep: SweepResult
    wall_s: float
    traces: dict[str, Path] = field(default_factory=dict)
    #: the kernel part beside the simulator (``kernel_table``; empty on the simulator backend)
    kernel: pd.DataFrame = field(default_factory=pd.DataFrame)


def _traces(runs: pd.DataFrame, sweep: SweepResult) -> dict[str, Path]:
    """The kept traces of the TSQ part (loss 0, first repetition), by TSQ rule."""
    out: dict[str, Path] = {}
    if "part" not in runs:
        return out
    rows = runs[(runs["part"] == "tsq") & (runs["loss"] == 0) & (runs["rep"] == 0)]
    for _, r in rows.iterrows():
        p = Path(sweep.trace_path(r["key"]))
        if p.is_file():
            out[str(r["tsq"])] = p
    return out


def compare_with_paper(tsq: pd.DataFrame, cwnd: pd.DataFrame) -> pd.DataFrame:
    """The paper's results beside ours (means over the runs)."""
    def at(rule: str, col: str) -> float:
        sub = tsq[(tsq["tsq"] == rule) & (tsq["loss"] == 0)]
        return float(sub[col].iloc[0]) if len(sub) and col in sub else float("nan")

    def later_cwnd(rule: str) -> float:
        sub = cwnd[(cwnd["tsq"] == rule) & (cwnd["flow"].astype(str).isin(["app2", "app3"]))] if len(cwnd) else cwnd
        return float(sub["cwnd_pkts"].mean()) if len(sub) else float("nan")

    ours = [at("paper", "app1_share_mean"), at("fixed", "jain_mean"), later_cwnd("paper"), later_cwnd("fixed")]
    rows = [{"result": what, "paper": paper, "cclab": v} for (what, paper), v in zip(PAPER_RESULTS, ours)]
    rows.append({"result": "Jain's index, cclab's adaptive rule, loss 0", "paper": "future work",
                 "cclab": at("adaptive", "jain_mean")})
    return pd.DataFrame(rows)


def run_s2(out_dir: str | Path, cfg: S2Config, progress: Callable[[int, int], None] | None = None) -> S2Result:
    """Run the S2 study into ``out_dir`` (cache in ``out_dir/cache``): tables, figures, report."""
    from . import s2_figures

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    sweep = run_sweep(plan(cfg), out / "cache", cfg.jobs, cfg.executor, progress)
    runs = per_run(sweep.runs, sweep)
    n_max = int(runs["n_apps"].max()) if len(runs) else 0
    metrics = ["total_mbps", "steady_total_mbps", "jain", "app1_share"] + \
        [f"app{a + 1}{k}_mbps" for a in range(n_max) for k in ("", "_steady")]

    def agg(part: str, by: list[str]) -> pd.DataFrame:
        rows = runs[runs["part"] == part] if "part" in runs else runs.iloc[0:0]
        return aggregate(rows, by, metrics) if len(rows) else pd.DataFrame()

    tsq = agg("tsq", ["tsq", "loss"])
    cc = agg("cc", ["cc", "tsq"])
    setups = pd.concat([tsq[tsq["loss"] == 0].assign(setup="paper") if len(tsq) else tsq,
                        agg("setup", ["setup", "tsq"])], ignore_index=True)
    setups = setups[setups["tsq"].isin(["paper", "linux", "adaptive"])] if len(setups) else setups
    traces = _traces(runs, sweep)
    cwnd = pd.concat([cwnd_window(p).assign(tsq=rule) for rule, p in traces.items()], ignore_index=True) \
        if traces else pd.DataFrame(columns=["flow", "subflow", "cwnd_pkts", "tsq"])
    compare = compare_with_paper(tsq, cwnd) if len(tsq) else pd.DataFrame()
    tables = {
        "tsq": write_table(tsq, out / "tables" / "tsq"),
        "cc": write_table(cc, out / "tables" / "cc"),
        "setups": write_table(setups, out / "tables" / "setups"),
        "cwnd": write_table(cwnd, out / "tables" / "cwnd_first_3s"),
        "compare": write_table(compare, out / "tables" / "compare_with_paper"),
        "runs": write_table(runs.drop(columns=["key"], errors="ignore"), out / "tables" / "runs"),
    }
    kernel = kernel_table(runs)
    if cfg.kernel:
        tables["kernel"] = write_table(kernel, out / "tables" / "kernel_parity")
        tables["kernel_not_runnable"] = write_table(
            pd.DataFrame(KERNEL_NOT_RUNNABLE, columns=["rows", "why not on the kernel"]),
            out / "tables" / "kernel_not_runnable")
    figures = s2_figures.draw_all(out / "figures", tsq, cc, setups, traces)
    res = S2Result(cfg, out, runs, tsq, cc, setups, cwnd, compare, figures, tables, sweep.failures, sweep,
                   time.perf_counter() - t0, traces, kernel)
    from .s2_report import write_s2_report

    write_s2_report(res)
    return res
