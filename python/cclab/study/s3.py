"""The S3 study: spurious retransmission timeouts (STOs) on a 3G radio link (the seed paper of NTT
DoCoMo; shared/docs/STUDIES.md, S3).

- (A) RTO sweep (the paper's section 4, Fig. 2): the share of connections with at least one STO
  against the RTO's initial = minimum value, on the web mix at the cell edge (static-weak) and
  near the base station (static-strong).
- (B) Detection and response (section 6, Figs. 6-8): per mobility class and content size, F-RTO
  with the Eifel response against a sender with neither, under the standard RTO (initial 3 s,
  minimum 0.5 s) and the proposed one (4 s, 4 s): STOs per MB, unneeded retransmissions per STO,
  and the throughput of connections that had one STO, with 95 % intervals.
- (C) The analytic model (section 5, Figs. 4-5): a 300 kB transfer with cwnd capped at the BDP, one
  delay spike when cwnd is w0, c/2 or c, simulated against eq. (5)-(10).
- (D) With ``backend = "kernel"``: kernel parity: 300 kB and 2 MB downloads with one delay spike,
  F-RTO on and off, on the simulator and on this machine's kernel (cclab-link runs the link), STO
  counts and unneeded retransmissions side by side.

An STO is counted from ground truth (the simulator knows whether anything the timeout resent had
been lost): per connection ``sto_count``, ``sto_detected`` and ``spurious_retrans_pkts``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from .aggregate import write_table
from .grid import RunSpec, derive_seed
from .s3_model import StoModel
from .s3_scenarios import BDP_PKTS, MOBILITIES, MSS_BYTES, SIZES_BYTES, WTCP_INITIAL_CWND_PKTS, s3_scenario
from .sweep import SweepResult, run_sweep

__all__ = ["S3Config", "run_s3", "PAPER_RESULTS", "MODEL_CASES", "plan", "spike_time", "parity_scenario"]

#: The paper's published results (sections 4 and 6).
PAPER_RESULTS = [
    ("STO share of connections, static-weak, RTO 1.5 s (Fig. 2)", "about 10 %"),
    ("STO share of connections, static-weak, RTO 4 s (Fig. 2)", "about 1 %"),
    ("STO share of connections, static-strong, RTO 4 s", "0.4 %"),
    ("STOs per MB, standard RTO, express train / static-weak (Fig. 6)", "0.36 / 0.18"),
    ("STOs per MB, proposed RTO, express train / static-weak (Fig. 6)", "0.23 / 0.01"),
    ("unneeded retransmissions per STO, 2 MB, without / with F-RTO+Eifel (Fig. 7)", "28 / 3"),
    ("unneeded retransmissions per STO, 6 kB, without F-RTO+Eifel (Fig. 7)", "1.6"),
    ("throughput gain of F-RTO+Eifel, 18 kB-2 MB, connections with one STO, pooled over mobility classes and "
     "RTO profiles as Fig. 8", "+2 % to +12 %"),
]

#: Section 5's cases: where in slow start the spike hits, as cwnd then (w0, c/2, c).
MODEL_CASES = {"w0": float(WTCP_INITIAL_CWND_PKTS), "c/2": BDP_PKTS / 2, "c": float(BDP_PKTS)}

#: Section 5's setting.
MODEL_SIZE_BYTES = 300_000
RTT_S = 0.3


@dataclass
class S3Config:
    """What to run. ``quick``: a reduced grid that runs in seconds (tests, previews)."""

    reps: int = 3
    quick: bool = False
    jobs: int | None = None
    executor: str = "local"
    #: (A) initial = minimum RTO, s (the paper: 1.5-10 s).
    rto_values_s: list[float] = field(default_factory=lambda: [0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0])
    rto_mobilities: list[str] = field(default_factory=lambda: ["static-weak", "static-strong"])
    #: (A) web-mix connections per run.
    web_connections: int = 300
    #: (A) the ablation at the cell edge: RLC settings over the preset (PDU errors 5 %, MaxDAT 6),
    #: which set how long the RLC may hold a packet (label -> radio fields).
    rto_ablations: dict[str, dict[str, Any]] = field(default_factory=lambda: {
        "PDU errors 20 %, MaxDAT 11": {"pdu_loss": 0.2, "max_dat": 11}})
    #: (B)
    mobilities: list[str] = field(default_factory=lambda: list(MOBILITIES))
    sizes: list[str] = field(default_factory=lambda: list(SIZES_BYTES))
    profiles: list[str] = field(default_factory=lambda: ["standard", "proposed"])
    detections: list[str] = field(default_factory=lambda: ["frto+eifel", "none"])
    #: (B) bytes per run and size: enough connections of a size to carry about this much.
    bytes_per_run: int = 20_000_000
    #: (C) spike lengths, s (longer than the RTO, so that it fires).
    model_taus_s: list[float] = field(default_factory=lambda: [2.0])
    #: (C) cwnd growth counted per acked segment (Linux 3.18 on: r = 2 with delayed ACKs) and per
    #: ACK (the paper's r = 1.5).
    model_ack_counting: list[str] = field(default_factory=lambda: ["acks", "segments"])
    #: "sim", or "kernel": also run (D), the kernel parity part, on both backends.
    backend: str = "sim"
    #: (D) content sizes and F-RTO settings on both backends, one spike each.
    parity_sizes: list[str] = field(default_factory=lambda: ["300KB", "2MB"])
    parity_spike: tuple[float, float] = (4.0, 6.0)

    @classmethod
    def make(cls, quick: bool = False, reps: int | None = None, **kw: Any) -> "S3Config":
        if quick:
            kw = {"rto_values_s": [1.0, 4.0], "rto_mobilities": ["static-weak"], "web_connections": 40,
                  "rto_ablations": {},
                  "mobilities": ["static-weak", "car"], "sizes": ["18KB", "300KB"], "bytes_per_run": 2_000_000,
                  "model_ack_counting": ["acks"], **kw}
            return cls(reps=reps or 1, quick=True, **kw)
        return cls(reps=reps or 3, **kw)

    @property
    def parity(self) -> bool:
        return self.backend == "kernel"


def _spec(d: dict[str, Any], rep: int, labels: dict[str, Any], keep_trace: bool = False,
          backend: str = "sim") -> RunSpec:
    return RunSpec(d, (), derive_seed(3, rep), tuple(labels.items()), keep_trace, backend=backend)


def parity_scenario(size: str, frto: bool, spike: tuple[float, float]) -> dict[str, Any]:
    """(D): one download of ``size`` over section 5's path (rates and delay, no RLC) with one delay
    spike, Linux's own timeout handling (RTO as Linux, its undo) with F-RTO on or off: what
    both backends run the same way."""
    d = s3_scenario(size_bytes=SIZES_BYTES[size], radio=False, rto_profile="linux", detection="linux",
                    duration_s=SIZES_BYTES[size] * 8 / 384e3 + 30.0, spike=spike, name=f"s3-parity-{size}")
    d["flows"][0]["frto"] = frto
    return d


def _connections_for(size_bytes: int, bytes_per_run: int) -> int:
    return max(3, min(1000, bytes_per_run // size_bytes))


def spike_time(case_w_pkts: float, ack_counting: str) -> float:
    """When cwnd first reaches ``case_w_pkts`` on section 5's path (no spike): the time of the
    first trace row at or above it (a run of a few seconds, deterministic)."""
    from ..scenario import load_scenario
    from ..sim import simulate

    d = _model_scenario(ack_counting, None, "frto+eifel", trace="ack")
    res = simulate(load_scenario(d))
    f = res.flows
    f = f[f["inflight_pkts"] > 0]  # data in flight (after the handshake)
    hit = f[f["cwnd_pkts"] >= case_w_pkts]
    if hit.empty:
        raise ValueError(f"cwnd never reaches {case_w_pkts} packets on section 5's path")
    return float(hit["t_s"].iloc[0])


def _model_scenario(ack_counting: str, spike: tuple[float, float] | None, detection: str,
                    trace: str = "change") -> dict[str, Any]:
    d = s3_scenario(size_bytes=MODEL_SIZE_BYTES, radio=False, max_cwnd_pkts=BDP_PKTS, detection=detection,
                    rto_profile="standard", duration_s=60.0, spike=spike, name="s3-model")
    d["flows"][0]["ack_counting"] = ack_counting
    d["sim"] = {"trace": trace}
    return d


def plan(cfg: S3Config, spike_times: dict[tuple[str, str], float] | None = None) -> list[RunSpec]:
    """Every run: (A) the RTO sweep, (B) detection per mobility, size and RTO profile, (C) the
    model's cases. ``spike_times``: (case, ack counting) -> when the spike hits (computed when
    not given)."""
    specs: list[RunSpec] = []
    for mob in cfg.rto_mobilities:
        for rto in cfg.rto_values_s:
            for rep in range(cfg.reps):
                d = s3_scenario(mob, connections=cfg.web_connections, sizes="web", rto_ms=1000 * rto,
                                duration_s=cfg.web_connections * 20.0, name=f"s3-web-{mob}")
                specs.append(_spec(d, rep, {"part": "rto", "mobility": mob, "rto_s": rto, "rep": rep}))
    for label, radio in cfg.rto_ablations.items():
        for rto in cfg.rto_values_s:
            for rep in range(cfg.reps):
                d = s3_scenario("static-weak", connections=cfg.web_connections, sizes="web", rto_ms=1000 * rto,
                                duration_s=cfg.web_connections * 20.0, name="s3-web-static-weak",
                                radio_overrides=radio)
                specs.append(_spec(d, rep, {"part": "rto", "mobility": f"static-weak, {label}", "rto_s": rto,
                                            "rep": rep}))
    for mob in cfg.mobilities:
        for size in cfg.sizes:
            n = _connections_for(SIZES_BYTES[size], cfg.bytes_per_run)
            for prof in cfg.profiles:
                for det in cfg.detections:
                    for rep in range(cfg.reps):
                        d = s3_scenario(mob, size_bytes=SIZES_BYTES[size], connections=n, rto_profile=prof,
                                        detection=det, duration_s=n * (SIZES_BYTES[size] * 8 / 384e3 * 3 + 20),
                                        name=f"s3-{mob}-{size}")
                        specs.append(_spec(d, rep, {"part": "detection", "mobility": mob, "size": size,
                                                    "profile": prof, "detection": det, "rep": rep}))
    for counting in cfg.model_ack_counting:
        for case, w in MODEL_CASES.items():
            t_s = (spike_times or {}).get((case, counting))
            if t_s is None:
                t_s = spike_time(w, counting)
            for tau in cfg.model_taus_s:
                for det in ("frto+eifel", "none"):
                    d = _model_scenario(counting, (t_s, tau), det)
                    specs.append(_spec(d, 0, {"part": "model", "case": case, "w_pkts": w, "spike_s": t_s,
                                              "tau_s": tau, "ack_counting": counting, "detection": det, "rep": 0},
                                       keep_trace=True))
    if cfg.parity:
        for size in cfg.parity_sizes:
            for frto in (True, False):
                for rep in range(cfg.reps):
                    for backend in ("sim", "kernel"):
                        d = parity_scenario(size, frto, cfg.parity_spike)
                        specs.append(_spec(d, rep, {"part": "parity", "size": size, "frto": frto, "backend": backend,
                                                    "rep": rep}, backend=backend))
    return specs


#: (D)'s figures per run, simulator against kernel.
PARITY_METRICS = ["rto_count", "sto_count", "sto_detected", "spurious_rto_count", "undo_count", "spurious_retrans_pkts",
                  "retrans_pkts", "goodput_bps"]


def parity_table(runs: pd.DataFrame) -> pd.DataFrame:
    """(D) Per size, F-RTO setting and backend: the mean of each figure over the repetitions."""
    sel = runs[(runs["part"] == "parity") & runs["ok"].astype(bool)] if "part" in runs and len(runs) else pd.DataFrame()
    if sel.empty:
        return pd.DataFrame()
    cols = [m for m in PARITY_METRICS if m in sel]
    t = sel.groupby(["size", "frto", "backend"], sort=True)[cols].mean().reset_index()
    t["n"] = sel.groupby(["size", "frto", "backend"], sort=True).size().to_numpy()
    return t


def connections(sweep: SweepResult, runs: pd.DataFrame) -> pd.DataFrame:
    """Every connection of every run that listed connections, with its run's labels."""
    frames = []
    label_cols = [c for c in ("part", "mobility", "rto_s", "size", "profile", "detection", "rep") if c in runs]
    for _, r in runs.iterrows():
        if not (bool(r.get("ok", True)) and r.get("has_connections") is True and isinstance(r.get("key"), str)):
            continue
        c = sweep.connections(r["key"])
        for k in label_cols:
            c[k] = r[k]
        frames.append(c)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _col(df: pd.DataFrame, name: str) -> pd.Series:
    return pd.to_numeric(df[name], errors="coerce") if name in df else pd.Series(np.nan, index=df.index)


def _share_ci(k: int, n: int) -> tuple[float, float, float]:
    """A proportion and its 95 % Wilson interval."""
    if n == 0:
        return (np.nan, np.nan, np.nan)
    p, z = k / n, 1.959964
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (p, max(0.0, mid - half), min(1.0, mid + half))


def rto_table(conns: pd.DataFrame) -> pd.DataFrame:
    """(A) Per mobility and RTO: connections, those with an STO, the share with its 95 % interval,
    RTOs in all, mean transfer time."""
    rows = []
    sel = conns[conns["part"] == "rto"] if len(conns) else conns
    for (mob, rto), g in sel.groupby(["mobility", "rto_s"], sort=True) if len(sel) else []:
        sto = _col(g, "sto_count").fillna(0)
        k, n = int((sto > 0).sum()), len(g)
        p, lo, hi = _share_ci(k, n)
        rows.append({"mobility": mob, "rto_s": rto, "connections": n, "with_sto": k, "sto_share": p,
                     "sto_share_ci95_low": lo, "sto_share_ci95_high": hi,
                     "with_rto": int((_col(g, "rto_count") > 0).sum()),
                     "completed": int(g["completion_s"].notna().sum()),
                     "transfer_time_mean_s": float(_col(g, "transfer_time_s").mean())})
    return pd.DataFrame(rows)


def detection_table(conns: pd.DataFrame) -> pd.DataFrame:
    """(B) Per mobility, size, profile and detection: STOs per MB, unneeded retransmissions per
    STO, and the goodput of connections with exactly one STO (mean, 95 % interval, n)."""
    from scipy.stats import t as student_t

    rows = []
    sel = conns[conns["part"] == "detection"] if len(conns) else conns
    keys = ["mobility", "size", "profile", "detection"]
    for k, g in sel.groupby(keys, sort=True) if len(sel) else []:
        sto = _col(g, "sto_count").fillna(0)
        mb = _col(g, "delivered_bytes").sum() / 1e6
        one = g[sto == 1]
        x = _col(one, "goodput_bps").dropna().to_numpy(float) / 1e3
        mean = float(x.mean()) if x.size else np.nan
        half = float(student_t.ppf(0.975, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size)) if x.size > 1 else np.nan
        stos = float(sto.sum())
        rows.append(dict(zip(keys, k)) | {
            "connections": len(g), "sto": int(stos), "sto_detected": int(_col(g, "sto_detected").fillna(0).sum()),
            "delivered_mb": mb, "sto_per_mb": stos / mb if mb > 0 else np.nan,
            "spurious_retrans_pkts": int(_col(g, "spurious_retrans_pkts").sum()),
            "spurious_retrans_per_sto": float(_col(g, "spurious_retrans_pkts").sum()) / stos if stos else np.nan,
            "one_sto_connections": int(x.size), "one_sto_goodput_kbps": mean,
            "one_sto_goodput_ci95_low": mean - half, "one_sto_goodput_ci95_high": mean + half,
            "goodput_kbps_all": float(_col(g, "goodput_bps").mean() / 1e3)})
    return pd.DataFrame(rows)


def one_sto_goodput(conns: pd.DataFrame) -> pd.DataFrame:
    """(B) Fig. 8 and the paper table's throughput gain (one definition for both): per content
    size and detection setting, the goodput of every connection that had exactly one STO, pooled
    over mobility classes and RTO profiles (the paper's Fig. 8 pools its measured connections):
    n, mean and Student-t 95 % interval, kbit/s. Sizes in SIZES_BYTES order."""
    from scipy.stats import t as student_t

    cols = ["size", "detection", "one_sto_connections", "one_sto_goodput_kbps", "one_sto_goodput_ci95_low",
            "one_sto_goodput_ci95_high"]
    sel = conns[conns["part"] == "detection"] if len(conns) and "part" in conns else conns.iloc[0:0]
    if not len(sel) or "sto_count" not in sel:
        return pd.DataFrame(columns=cols)
    one = sel[_col(sel, "sto_count").fillna(0) == 1]
    rows = []
    for size in [s for s in SIZES_BYTES if s in set(sel["size"])]:
        for det in ("none", "frto+eifel"):
            x = _col(one[(one["size"] == size) & (one["detection"] == det)], "goodput_bps").dropna().to_numpy(float) / 1e3
            mean = float(x.mean()) if x.size else np.nan
            half = float(student_t.ppf(0.975, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size)) if x.size > 1 else np.nan
            rows.append({"size": size, "detection": det, "one_sto_connections": int(x.size),
                         "one_sto_goodput_kbps": mean, "one_sto_goodput_ci95_low": mean - half,
                         "one_sto_goodput_ci95_high": mean + half})
    return pd.DataFrame(rows, columns=cols)


def one_sto_gains(pooled: pd.DataFrame, sizes: tuple[str, ...] = ("18KB", "300KB", "2MB")) -> dict[str, float]:
    """Per size, the pooled one-STO goodput with F-RTO+Eifel over without, minus 1 (sizes where
    either has no connection are left out)."""
    out = {}
    for size in sizes:
        on = _pick(pooled, "one_sto_goodput_kbps", size=size, detection="frto+eifel")
        off = _pick(pooled, "one_sto_goodput_kbps", size=size, detection="none")
        if on == on and off == off and off > 0:
            out[size] = on / off - 1
    return out


def model_table(runs: pd.DataFrame) -> pd.DataFrame:
    """(C) Per case, spike length and counting: simulated goodput with and without F-RTO+Eifel
    beside eq. (5)-(10) (with the measured RTT), and the unneeded retransmissions beside eq. (1)."""
    sel = runs[(runs["part"] == "model") & runs["ok"].astype(bool)] if len(runs) else runs
    rows = []
    for _, r in sel.iterrows():
        r_growth = 1.5 if r["ack_counting"] == "acks" else 2.0
        m = StoModel.at_window(BDP_PKTS, r["w_pkts"], r["tau_s"] / RTT_S, w0_pkts=WTCP_INITIAL_CWND_PKTS,
                               r=r_growth, m=0.5)
        on = r["detection"] == "frto+eifel"
        d_pkts = MODEL_SIZE_BYTES / MSS_BYTES
        rows.append({"case": r["case"], "w_pkts": r["w_pkts"], "tau_s": r["tau_s"], "ack_counting": r["ack_counting"],
                     "detection": r["detection"], "spike_s": r["spike_s"],
                     "sim_goodput_kbps": float(r.get("goodput_bps", np.nan)) / 1e3,
                     "model_goodput_kbps": StoModel.to_bps(m.throughput(d_pkts, on), MSS_BYTES, RTT_S) / 1e3,
                     "sim_rto_count": r.get("rto_count", np.nan), "sim_sto_count": r.get("sto_count", np.nan),
                     "sim_spurious_retrans_pkts": r.get("spurious_retrans_pkts", np.nan),
                     "model_unneeded_retrans_pkts": m.unneeded_retrans_pkts(on)})
    return pd.DataFrame(rows)


@dataclass
class S3Result:
    """Everything the report needs."""

    cfg: S3Config
    out_dir: Path
    runs: pd.DataFrame
    conns: pd.DataFrame
    rto: pd.DataFrame
    detection: pd.DataFrame
    model: pd.DataFrame
    compare: pd.DataFrame
    reasons: pd.DataFrame
    parity: pd.DataFrame
    figures: dict[str, Path]
    tables: dict[str, list[Path]]
    failures: pd.DataFrame
    sweep: SweepResult
    wall_s: float


def _pick(df: pd.DataFrame, col: str, **sel: Any) -> float:
    for k, v in sel.items():
        if k not in df:
            return float("nan")
        df = df[df[k] == v]
    return float(df[col].mean()) if len(df) and col in df else float("nan")


def sto_per_mb_table(det: pd.DataFrame) -> pd.DataFrame:
    """(B) STOs per MB delivered per mobility class and RTO profile, every content size and both
    detection settings pooled (Fig. 6: detection acts after a timeout, not on whether it fires)."""
    if det.empty:
        return pd.DataFrame(columns=["mobility", "profile", "sto", "delivered_mb", "sto_per_mb"])
    g = det.groupby(["mobility", "profile"], sort=False)[["sto", "delivered_mb"]].sum().reset_index()
    g["sto_per_mb"] = g["sto"] / g["delivered_mb"].where(g["delivered_mb"] > 0)
    return g


def compare_with_paper(rto: pd.DataFrame, det: pd.DataFrame, pooled: pd.DataFrame) -> pd.DataFrame:
    """The paper's published results beside ours. ``pooled``: ``one_sto_goodput``'s table, the
    throughput gain's source, as Fig. 8's."""
    pct = lambda v: f"{100 * v:.1f} %" if v == v else "n/a"  # noqa: E731
    num = lambda v: f"{v:.2f}" if v == v else "n/a"  # noqa: E731
    mb = sto_per_mb_table(det)

    def per_mb(prof: str, mob: str) -> float:
        return _pick(mb, "sto_per_mb", profile=prof, mobility=mob)

    def unneeded(size: str, d: str) -> float:
        g = det[(det["size"] == size) & (det["detection"] == d)] if len(det) else det
        s = g["sto"].sum() if len(g) else 0
        return float(g["spurious_retrans_pkts"].sum() / s) if s else float("nan")

    gains = list(one_sto_gains(pooled).values())
    ours = [pct(_pick(rto, "sto_share", mobility="static-weak", rto_s=1.5)),
            pct(_pick(rto, "sto_share", mobility="static-weak", rto_s=4.0)),
            pct(_pick(rto, "sto_share", mobility="static-strong", rto_s=4.0)),
            f"{num(per_mb('standard', 'express-train'))} / {num(per_mb('standard', 'static-weak'))}",
            f"{num(per_mb('proposed', 'express-train'))} / {num(per_mb('proposed', 'static-weak'))}",
            f"{num(unneeded('2MB', 'none'))} / {num(unneeded('2MB', 'frto+eifel'))}",
            num(unneeded("6KB", "none")),
            (f"{100 * min(gains):+.0f} % to {100 * max(gains):+.0f} %" if gains else "n/a")]
    return pd.DataFrame([{"result": what, "paper": paper, "cclab": v} for (what, paper), v in zip(PAPER_RESULTS, ours)])


def run_s3(out_dir: str | Path, cfg: S3Config, progress: Callable[[int, int], None] | None = None) -> S3Result:
    """Run the S3 study into ``out_dir`` (cache in ``out_dir/cache``): tables, figures, report."""
    from . import s3_figures

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    sweep = run_sweep(plan(cfg), out / "cache", cfg.jobs, cfg.executor, progress)
    runs = sweep.runs
    conns = connections(sweep, runs)
    rto = rto_table(conns)
    det = detection_table(conns)
    model = model_table(runs)
    pooled = one_sto_goodput(conns)
    compare = compare_with_paper(rto, det, pooled)
    reasons = undetected_reasons(conns)
    parity = parity_table(runs)
    tables = {
        "parity": write_table(parity, out / "tables" / "kernel_parity"),
        "rto": write_table(rto, out / "tables" / "sto_vs_rto"),
        "detection": write_table(det, out / "tables" / "detection"),
        "one_sto_goodput": write_table(pooled, out / "tables" / "one_sto_goodput"),
        "model": write_table(model, out / "tables" / "model_vs_sim"),
        "reasons": write_table(reasons, out / "tables" / "undetected_reasons"),
        "compare": write_table(compare, out / "tables" / "compare_with_paper"),
        "connections": write_table(conns, out / "tables" / "connections"),
        "runs": write_table(runs.drop(columns=["key"], errors="ignore"), out / "tables" / "runs"),
    }
    model_runs = runs[(runs["part"] == "model") & runs["ok"].astype(bool)] if "part" in runs else runs.iloc[0:0]
    traces = {(r["case"], r["ack_counting"], r["detection"]): sweep.trace(r["key"]) for _, r in model_runs.iterrows()}
    figures = s3_figures.draw_all(out / "figures", rto, conns, sto_per_mb_table(det), model, traces, parity, pooled)
    res = S3Result(cfg, out, runs, conns, rto, det, model, compare, reasons, parity, figures, tables, sweep.failures,
                   sweep, time.perf_counter() - t0)
    from .s3_report import write_s3_report

    write_s3_report(res)
    return res


def undetected_reasons(conns: pd.DataFrame) -> pd.DataFrame:
    """Why spurious timeouts went undetected, per detection setting: the per-connection counts
    of each reason (``sto_undetected_<reason>`` columns), summed."""
    cols = [c for c in conns.columns if c.startswith("sto_undetected_")] if len(conns) else []
    if not cols:
        return pd.DataFrame(columns=["detection", "reason", "sto"])
    sel = conns[conns["part"] == "detection"]
    t = sel.groupby("detection")[cols].sum().reset_index().melt(id_vars="detection", var_name="reason",
                                                                 value_name="sto")
    t["reason"] = t["reason"].str.removeprefix("sto_undetected_")
    return t[t["sto"] > 0].reset_index(drop=True)
