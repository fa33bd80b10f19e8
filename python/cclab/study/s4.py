"""The S4 study: TCP over a multi-hop 802.11s mesh chain (five nodes, one channel, HT40 MCS 11).

- UDP sweep: a constant-bit-rate stream from 10 kbit/s to 10 Mbit/s (log-spaced, 10 s each),
  sent against received rate per hop count and node spacing (what the chain carries).
- TCP: CUBIC, BBR and BBRv2 per hop count, spacing and environment (100 s each).
- Lossy hops: the same chain with residual per-hop loss (a per-attempt frame error floor and
  fewer MAC attempts), the mechanism that turns the clean chain's n^-1 into the paper's n^-1.5.
  Each TCP run's row has the residual per-hop loss the MAC left on the flow's data path
  (``mac_residual_loss``: the mean over its hops of each sending node's retry-limit drops per
  MPDU settled, summary.json's ``links[].mac.residual_loss``), shown per setting and hop count
  beside the floor's nominal ``fer ** attempts``.
- Fits: the exponent of hops (goodput ~ n^-a, 95 % interval) per algorithm, spacing and
  environment, and Mathis's eq. (1) (its constant C, and the exponent of p freed) over the runs
  that lost packets; the paper's results beside ours.
- Kernel (``backend = "kernel"``): the clean chain per hop count with the kernel's CUBIC and BBR
  (upstream Linux has no BBRv2) and a UDP stream above capacity, each run by the simulator and by
  this machine's kernel through cclab-link (the same scenario and seed): goodput side by side.
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
from .s4_models import fit_mathis, fit_power_law
from .s4_scenarios import s4_scenario
from .sweep import SweepResult, run_sweep

__all__ = ["S4Config", "run_s4", "kernel_table", "LOSSY", "PAPER_RESULTS", "NS3_GOODPUT_MBPS"]

#: Residual per-hop loss settings: name -> (frame error rate per attempt, MAC attempts).
LOSSY: dict[str, tuple[float, int]] = {
    "fer0.35-4att": (0.35, 4),
    "fer0.4-4att": (0.40, 4),
}

#: ns-3 3.44's 802.11s chain at HT40 MCS 11, TCP goodput per hop count (issue 17), Mbit/s.
NS3_GOODPUT_MBPS = {1: 28.8, 2: 15.7, 3: 11.1, 4: 7.7}

#: The paper's published results.
PAPER_RESULTS = [
    ("exponent a of goodput ~ n^-a, clean chain (CUBIC, 1 m, anechoic)", "about 1.5 (eq. 2)"),
    ("exponent a, lossy hops (CUBIC, the lossier setting)", "about 1.5 (eq. 2)"),
    ("largest / smallest goodput among CUBIC, BBR, BBRv2, mean over hops", "about equal (about 1)"),
    ("Mathis C fitted on the lossy hops (CUBIC, the lossier setting)", "eq. (1): sqrt(3/2) = 1.22"),
]


@dataclass
class S4Config:
    """What to run. ``quick``: a reduced grid that runs in seconds (tests, previews)."""

    reps: int = 3
    quick: bool = False
    jobs: int | None = None
    executor: str = "local"
    duration_s: float = 100.0
    udp_duration_s: float = 10.0
    hops: list[int] = field(default_factory=lambda: [1, 2, 3, 4])
    spacings_m: list[float] = field(default_factory=lambda: [0.2, 0.5, 1.0, 2.0])
    environments: list[str] = field(default_factory=lambda: ["anechoic", "campus"])
    ccs: list[str] = field(default_factory=lambda: ["cubic", "bbr", "bbr2"])
    #: The paper's sweep (10 kbit/s to 10 Mbit/s, log-spaced) and two rates beyond it: the clean
    #: chain carries more than 10 Mbit/s of UDP at every hop count, so the paper's range shows no knee.
    udp_rates_bps: list[float] = field(default_factory=lambda: [float(x) for x in np.logspace(4, 7, 13)] + [2e7, 4e7])
    lossy: list[str] = field(default_factory=lambda: list(LOSSY))
    #: "sim", or "kernel": also run the kernel part on both backends.
    backend: str = "sim"
    #: Kernel part: the algorithms the kernel has (no BBRv2 upstream), a UDP rate above the
    #: one-hop capacity (39 Mbit/s of payload), the length of each run.
    kernel_ccs: list[str] = field(default_factory=lambda: ["cubic", "bbr"])
    kernel_udp_rate_bps: float = 60e6
    kernel_duration_s: float = 30.0

    @classmethod
    def make(cls, quick: bool = False, reps: int | None = None, **kw: Any) -> "S4Config":
        if quick:
            kw = {"duration_s": 20.0, "udp_duration_s": 5.0, "spacings_m": [1.0], "environments": ["anechoic"],
                  "udp_rates_bps": [1e4, 1e5, 1e6, 1e7, 4e7], "kernel_duration_s": 20.0, **kw}
            return cls(reps=reps or 1, quick=True, **kw)
        return cls(reps=reps or 3, **kw)

    @property
    def kernel(self) -> bool:
        return self.backend == "kernel"


def _spec(d: dict[str, Any], rep: int, labels: dict[str, Any], backend: str = "sim") -> RunSpec:
    return RunSpec(d, (), derive_seed(4, rep), tuple(labels.items()), backend=backend)


def plan(cfg: S4Config) -> list[RunSpec]:
    """Every run: the UDP sweep, TCP per algorithm, the lossy hops."""
    specs: list[RunSpec] = []
    for env in cfg.environments:
        for sp in cfg.spacings_m:
            for h in cfg.hops:
                for rate in cfg.udp_rates_bps:
                    d = s4_scenario(h, spacing_m=sp, environment=env, duration_s=cfg.udp_duration_s,
                                    udp_rate_bps=round(rate))
                    specs.append(_spec(d, 0, {"part": "udp", "env": env, "spacing_m": sp, "hops": h,
                                              "rate_bps": round(rate), "cc": "udp", "setting": "clean", "rep": 0}))
                for cc in cfg.ccs:
                    for rep in range(cfg.reps):
                        d = s4_scenario(h, cc=cc, spacing_m=sp, environment=env, duration_s=cfg.duration_s)
                        specs.append(_spec(d, rep, {"part": "tcp", "env": env, "spacing_m": sp, "hops": h, "cc": cc,
                                                    "setting": "clean", "rep": rep}))
    for name in cfg.lossy:
        fer, attempts = LOSSY[name]
        for h in cfg.hops:
            for rep in range(cfg.reps):
                d = s4_scenario(h, duration_s=cfg.duration_s, frame_error_rate=fer, retry_limit=attempts)
                specs.append(_spec(d, rep, {"part": "lossy", "env": "anechoic", "spacing_m": 1.0, "hops": h,
                                            "cc": "cubic", "setting": name, "rep": rep}))
    if cfg.kernel:
        for h in cfg.hops:
            for cc in [*cfg.kernel_ccs, "udp"]:
                udp = cc == "udp"
                d = s4_scenario(h, cc="cubic" if udp else cc, duration_s=cfg.kernel_duration_s,
                                udp_rate_bps=cfg.kernel_udp_rate_bps if udp else None)
                for rep in range(cfg.reps):
                    for backend in ("sim", "kernel"):
                        specs.append(_spec(d, rep, {"part": "kernel", "env": "anechoic", "spacing_m": 1.0, "hops": h,
                                                    "cc": cc, "setting": "clean", "backend": backend, "rep": rep},
                                           backend=backend))
    return specs


def kernel_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The kernel part: per hop count and algorithm (``udp``: the stream above capacity), the mean
    goodput over the repetitions on each backend, kernel / simulator, and the runs on each."""
    sel = runs[(runs["part"] == "kernel") & runs["ok"].astype(bool)] if "part" in runs and len(runs) else pd.DataFrame()
    if sel.empty or "goodput_bps" not in sel:
        return pd.DataFrame()
    g = sel.assign(goodput_mbps=pd.to_numeric(sel["goodput_bps"], errors="coerce") / 1e6)
    t = g.pivot_table(index=["hops", "cc"], columns="backend", values="goodput_mbps", aggfunc=["mean", "count"])
    out = pd.DataFrame(index=t.index)
    for b in ("sim", "kernel"):
        out[f"goodput_mbps_{b}"] = t[("mean", b)] if ("mean", b) in t else np.nan
        out[f"runs_{b}"] = t[("count", b)] if ("count", b) in t else 0
    out["kernel_over_sim"] = out["goodput_mbps_kernel"] / out["goodput_mbps_sim"]
    return out.reset_index()


def _with_loss(runs: pd.DataFrame) -> pd.DataFrame:
    ok = runs[runs["ok"].astype(bool)].copy() if "ok" in runs else runs.copy()
    if "goodput_bps" in ok:
        ok["goodput_mbps"] = ok["goodput_bps"] / 1e6
    if {"retrans_pkts", "sent_pkts"} <= set(ok.columns):
        ok["p"] = ok["retrans_pkts"] / ok["sent_pkts"].where(ok["sent_pkts"] > 0)
    return ok


def hop_fits(tcp: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per group: the exponent of hops of goodput ~ n^-a over every run, its 95 % interval, R^2."""
    rows = []
    for keys, g in tcp.groupby(by, sort=False):
        keys = keys if isinstance(keys, tuple) else (keys,)
        row = dict(zip(by, keys))
        try:
            f = fit_power_law(g["hops"].to_numpy(float), g["goodput_bps"].to_numpy(float))
            row |= {"exponent": f.exponent, "ci95_low": f.exponent_ci95[0], "ci95_high": f.exponent_ci95[1],
                    "r2": f.r2, "n_points": f.n_points}
        except ValueError as e:
            row |= {"exponent": np.nan, "note": str(e)}
        rows.append(row)
    return pd.DataFrame(rows)


def mathis_fits(runs: pd.DataFrame) -> pd.DataFrame:
    """Mathis's eq. (1) per setting (clean, each lossy one) and algorithm over the TCP runs that
    retransmitted (p > 0). On the clean chain TCP is limited by capacity, not loss (its few
    losses are queue overflows behind a long queue), so C comes out far above sqrt(3/2) there."""
    rows = []
    for (setting, cc), g in runs.groupby(["setting", "cc"], sort=False):
        g = g[(g["p"] > 0) & g["mean_srtt_ms"].notna()]
        row: dict[str, Any] = {"setting": setting, "cc": cc, "n_runs": len(g)}
        try:
            f = fit_mathis(g["p"].to_numpy(float), g["goodput_bps"].to_numpy(float), 1448,
                           g["mean_srtt_ms"].to_numpy(float) / 1e3)
            row |= {"c": f.c, "c_ci95_low": f.c_ci95[0], "c_ci95_high": f.c_ci95[1],
                    "p_exponent": f.p_exponent.exponent, "p_exponent_ci95_low": f.p_exponent.exponent_ci95[0],
                    "p_exponent_ci95_high": f.p_exponent.exponent_ci95[1]}
        except ValueError as e:
            row["note"] = str(e)
        rows.append(row)
    return pd.DataFrame(rows)


#: The residual-loss table's figures: per-hop residual loss (mean over the hops, the largest hop),
#: the collision probability per attempt, the loss TCP saw.
_RESIDUAL = ["mac_residual_loss", "mac_residual_loss_max", "mac_collision_prob", "p"]


def residual_loss_table(tcp_runs: pd.DataFrame) -> pd.DataFrame:
    """Per setting (clean, each lossy one) and hop count, for CUBIC on the anechoic chain at 1 m,
    means over the runs: the residual per-hop loss p the MAC left on the data path (each run: the
    mean over its hops, and its largest hop), beside the frame error floor's nominal
    ``fer ** attempts`` (0 on the clean chain; collisions add to the measured one), the collision
    probability per attempt and the loss TCP saw (retransmitted / sent)."""
    cols = ["setting", "hops", "n", "nominal_p"] + [f"{m}_mean" for m in _RESIDUAL]
    sel = tcp_runs[(tcp_runs["cc"] == "cubic") & (tcp_runs["env"] == "anechoic") & (tcp_runs["spacing_m"] == 1.0)] \
        if len(tcp_runs) else tcp_runs
    if sel.empty:
        return pd.DataFrame(columns=cols)
    t = aggregate(sel, ["setting", "hops"], _RESIDUAL)
    t["nominal_p"] = [LOSSY[s][0] ** LOSSY[s][1] if s in LOSSY else 0.0 for s in t["setting"]]
    return t.reindex(columns=cols).reset_index(drop=True)


@dataclass
class S4Result:
    """Everything the report needs."""

    cfg: S4Config
    out_dir: Path
    runs: pd.DataFrame
    udp: pd.DataFrame
    tcp: pd.DataFrame
    fits: pd.DataFrame
    mathis: pd.DataFrame
    compare: pd.DataFrame
    #: per setting and hop count, the residual per-hop loss the MAC left (``residual_loss_table``)
    residual: pd.DataFrame
    figures: dict[str, Path]
    tables: dict[str, list[Path]]
    failures: pd.DataFrame
    sweep: SweepResult
    wall_s: float
    #: the kernel part beside the simulator (``kernel_table``; empty on the simulator backend)
    kernel: pd.DataFrame = field(default_factory=pd.DataFrame)


def compare_with_paper(tcp: pd.DataFrame, fits: pd.DataFrame, mathis: pd.DataFrame, cfg: S4Config) -> pd.DataFrame:
    def exponent(**sel: Any) -> float:
        f = fits
        for k, v in sel.items():
            f = f[f[k] == v] if k in f else f.iloc[0:0]
        return float(f["exponent"].iloc[0]) if len(f) else float("nan")

    clean = tcp[(tcp["setting"] == "clean") & (tcp["env"] == "anechoic") & (tcp["spacing_m"] == 1.0)]
    ratio = float("nan")
    if len(clean) and clean["cc"].nunique() > 1:
        m = clean.pivot_table(index="hops", columns="cc", values="goodput_mbps_mean")
        ratio = float((m.max(axis=1) / m.min(axis=1)).mean())
    lossiest = cfg.lossy[-1] if cfg.lossy else None
    c = mathis[(mathis["cc"] == "cubic") & (mathis["setting"] == lossiest)]["c"] \
        if len(mathis) and "c" in mathis else pd.Series(dtype=float)
    ours = [exponent(setting="clean", cc="cubic", env="anechoic", spacing_m=1.0),
            exponent(setting=lossiest, cc="cubic") if lossiest else float("nan"), ratio,
            float(c.iloc[0]) if len(c) else float("nan")]
    rows = [{"result": what, "paper": paper, "cclab": v} for (what, paper), v in zip(PAPER_RESULTS, ours)]
    for h, ns3 in NS3_GOODPUT_MBPS.items():
        sub = clean[(clean["cc"] == "cubic") & (clean["hops"] == h)]
        rows.append({"result": f"CUBIC goodput at {h} hop(s), Mbit/s (clean, 1 m)", "paper": f"ns-3 3.44: {ns3}",
                     "cclab": float(sub["goodput_mbps_mean"].iloc[0]) if len(sub) else float("nan")})
    return pd.DataFrame(rows)


def run_s4(out_dir: str | Path, cfg: S4Config, progress: Callable[[int, int], None] | None = None) -> S4Result:
    """Run the S4 study into ``out_dir`` (cache in ``out_dir/cache``): tables, figures, report."""
    from . import s4_figures

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    sweep = run_sweep(plan(cfg), out / "cache", cfg.jobs, cfg.executor, progress)
    runs = _with_loss(sweep.runs)
    part = runs["part"] if "part" in runs else pd.Series("", index=runs.index)
    udp_runs, tcp_runs = runs[part == "udp"], runs[part.isin(["tcp", "lossy"])]
    udp = udp_runs[[c for c in ("env", "spacing_m", "hops", "rate_bps", "udp_send_rate_bps", "udp_receive_rate_bps",
                                "udp_loss", "udp_owd_p50_ms", "udp_owd_p99_ms") if c in udp_runs]].reset_index(drop=True)
    tcp = aggregate(tcp_runs, ["setting", "env", "spacing_m", "cc", "hops"],
                    ["goodput_mbps", "p", "mean_srtt_ms", "mac_residual_loss"]) if len(tcp_runs) else pd.DataFrame()
    residual = residual_loss_table(tcp_runs)
    fits = hop_fits(tcp_runs, ["setting", "env", "spacing_m", "cc"]) if len(tcp_runs) else pd.DataFrame()
    mathis = mathis_fits(tcp_runs) if len(tcp_runs) else pd.DataFrame()
    compare = compare_with_paper(tcp, fits, mathis, cfg) if len(tcp) else pd.DataFrame()
    kernel = kernel_table(runs)
    tables = {
        "udp": write_table(udp, out / "tables" / "udp_sweep"),
        "tcp": write_table(tcp, out / "tables" / "tcp"),
        "fits": write_table(fits, out / "tables" / "hop_fits"),
        "mathis": write_table(mathis, out / "tables" / "mathis_fits"),
        "compare": write_table(compare, out / "tables" / "compare_with_paper"),
        "residual": write_table(residual, out / "tables" / "residual_loss"),
        **({"kernel": write_table(kernel, out / "tables" / "kernel_parity")} if cfg.kernel else {}),
        "runs": write_table(runs.drop(columns=["key"], errors="ignore"), out / "tables" / "runs"),
    }
    figures = s4_figures.draw_all(out / "figures", udp, tcp, fits, tcp_runs)
    res = S4Result(cfg, out, runs, udp, tcp, fits, mathis, compare, residual, figures, tables, sweep.failures,
                   sweep, time.perf_counter() - t0, kernel)
    from .s4_report import write_s4_report

    write_s4_report(res)
    return res
