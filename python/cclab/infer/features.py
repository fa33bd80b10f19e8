"""Features of a cwnd trace that tell congestion-control algorithms apart.

The Kato et al. view (S0 method D): sample cwnd once per RTT, cwnd_i, and look at
dcwnd_i = cwnd_{i+1} - cwnd_i against cwnd_i in the growth phases: AIMD is flat at 1, HighSpeed
a rising step function, Scalable a line through the origin (1 % of cwnd), CUBIC concave then
convex around W_max, Vegas near 0 at equilibrium, BBR flat (cwnd = 2 BDP) with PROBE_RTT dips.
Every feature is a number; NaN-free (a missing quantity gets a neutral value and a flag).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .cycles import find_cycles
from .io import estimate_rtt_s, per_rtt

__all__ = ["FEATURES", "features", "kato_points"]

#: Feature names, in the order ``features`` returns them.
FEATURES = [
    "beta",             # median W'/W before the reduction (1 when no reduction)
    "has_cycles",       # 1 when at least one non-timeout reduction was seen
    "reductions_per_100rtt",
    "d_median",         # median dcwnd per RTT in growth (packets)
    "d_rel_median",     # median dcwnd / cwnd per RTT in growth
    "d_slope",          # slope of dcwnd vs cwnd in growth, normalised by the mean dcwnd
    "curvature",        # growth-phase curvature: RMS of a line fit / window range (0 = linear)
    "flat_frac",        # share of per-RTT steps with |dcwnd| <= 1 % of cwnd
    "low_frac",         # share of time at cwnd <= 4 (BBR's PROBE_RTT)
    "dip_period_s",     # median spacing of dips to <= 4 packets (0 when fewer than 2)
    "cv_late",          # coefficient of variation of cwnd in the second half
    "timeout_frac",     # share of reductions that fell below 30 % (RTO-like)
    "has_rtt",          # 1 when the trace carries srtt and min_rtt (cclab, TCP_INFO, ss)
    "qdelay",           # median queueing delay (srtt - min_rtt) / min_rtt; -1 without RTTs
    "qdelay_at_loss",   # the same just before reductions (Vegas, Veno and Westwood+ read it)
    "ai_per_rtt",       # congestion-avoidance growth per smoothed RTT (packets; -1 when none seen)
    "ai_rel",           # the same relative to cwnd (Scalable: ~1 %; -1 when none seen)
    "drop_first",       # W'/W at the first reduction, timeouts included (1 when no reduction)
]


def kato_points(trace: pd.DataFrame, rtt_s: float | None = None) -> pd.DataFrame:
    """Per-RTT (cwnd_i, dcwnd_i) pairs of the growth phases (dcwnd >= 0 steps between
    reductions), with the time of each."""
    pr = per_rtt(trace, rtt_s)
    w = pr["cwnd_pkts"].to_numpy(float)
    d = np.diff(w)
    keep = d >= 0
    return pd.DataFrame({"t_s": pr["t_s"].to_numpy()[:-1][keep], "cwnd_pkts": w[:-1][keep], "dcwnd_pkts": d[keep]})


def features(trace: pd.DataFrame) -> np.ndarray:
    """The FEATURES of one trace (columns t_s, cwnd_pkts, optional ca_state, RTT columns)."""
    rtt = estimate_rtt_s(trace)
    t = trace["t_s"].to_numpy(float)
    w = trace["cwnd_pkts"].to_numpy(float)
    dur = max(t[-1] - t[0], rtt) if len(t) else rtt
    cyc = find_cycles(trace)
    real = [c for c in cyc if not c.timeout]
    beta = float(np.median([c.beta for c in real])) if real else 1.0
    pr = per_rtt(trace, rtt)
    wp = pr["cwnd_pkts"].to_numpy(float)
    d = np.diff(wp)
    grow = d >= 0
    wg, dg = wp[:-1][grow], d[grow]
    d_med = float(np.median(dg)) if dg.size else 0.0
    d_rel = float(np.median(dg / np.maximum(wg, 1.0))) if dg.size else 0.0
    if dg.size >= 5 and np.ptp(wg) > 0:
        slope = float(np.polyfit(wg, dg, 1)[0])
        d_slope = slope * float(np.mean(wg)) / max(float(np.mean(dg)), 1e-3)
    else:
        d_slope = 0.0
    curv = []
    for c in real:
        seg = (t >= c.t0_s) & (t < c.t_end_s)
        ts, ws = t[seg], w[seg]
        if len(ts) >= 8 and np.ptp(ws) >= 3:
            resid = ws - np.polyval(np.polyfit(ts, ws, 1), ts)
            curv.append(float(np.sqrt(np.mean(resid**2)) / np.ptp(ws)))
    curvature = float(np.median(curv)) if curv else 0.0
    flat = float(np.mean(np.abs(d) <= 0.01 * np.maximum(wp[:-1], 1.0))) if d.size else 1.0
    low = w <= 4
    low_frac = float(np.mean(low)) if len(w) else 0.0
    starts = t[1:][low[1:] & ~low[:-1]] if len(w) > 1 else np.array([])
    dip = float(np.median(np.diff(starts))) if starts.size >= 2 else 0.0
    late = w[len(w) // 2 :]
    cv = float(np.std(late) / max(np.mean(late), 1e-9)) if late.size else 0.0
    to_frac = float(np.mean([c.timeout for c in cyc])) if cyc else 0.0
    has_rtt, qd, qd_loss = _queueing(trace, [c.t_reduce_s for c in real])
    ai, ai_rel = _ai_per_rtt(trace, cyc, rtt)
    drop_first = float(cyc[0].beta) if cyc else 1.0
    return np.array(
        [
            beta,
            1.0 if real else 0.0,
            100.0 * len(real) * rtt / dur,
            d_med,
            d_rel,
            d_slope,
            curvature,
            flat,
            low_frac,
            dip,
            cv,
            to_frac,
            has_rtt,
            qd,
            qd_loss,
            ai,
            ai_rel,
            drop_first,
        ],
        dtype=float,
    )


def _queueing(trace: pd.DataFrame, t_losses: list[float]) -> tuple[float, float, float]:
    """(has_rtt, median queueing delay ratio, median ratio just before the reductions)."""
    if not {"srtt_ms", "min_rtt_ms"} <= set(trace.columns):
        return 0.0, -1.0, -1.0
    srtt = pd.to_numeric(trace["srtt_ms"], errors="coerce").to_numpy(float)
    mn = pd.to_numeric(trace["min_rtt_ms"], errors="coerce").to_numpy(float)
    ok = np.isfinite(srtt) & np.isfinite(mn) & (mn > 0)
    if ok.sum() < 10:
        return 0.0, -1.0, -1.0
    base = float(np.min(mn[ok]))
    ratio = np.clip((srtt - base) / base, 0, 50)
    qd = float(np.median(ratio[ok]))
    t = trace["t_s"].to_numpy(float)
    at = [ratio[i] for i in np.searchsorted(t, t_losses) - 1 if 0 <= i < len(t) and ok[i]]
    return 1.0, qd, float(np.median(at)) if at else qd


def _ai_per_rtt(trace: pd.DataFrame, cycles: list, rtt: float) -> tuple[float, float]:
    """Additive increase in congestion avoidance, in packets per smoothed RTT, and relative to
    cwnd: the sum of the window's rises over the sum of the RTTs they took (dt / srtt), between
    reductions. Per RTT of the moment, not of the path: the queue's delay does not dilute it
    (Reno grows 1 packet per RTT however long the RTT). Congestion avoidance: cwnd >= ssthresh
    when the trace has ssthresh, else the growth of epochs that did not start with a timeout;
    with ca_state, both samples in Open or Disorder as well. Without srtt the trace's RTT estimate
    stands in (the classifier then leaves these features out). (-1, -1) when there is no such
    growth."""
    t = trace["t_s"].to_numpy(float)
    w = trace["cwnd_pkts"].to_numpy(float)
    n = len(w)
    if n < 3:
        return -1.0, -1.0
    ss = (pd.to_numeric(trace["ssthresh_pkts"], errors="coerce").to_numpy(float, copy=True)
          if "ssthresh_pkts" in trace.columns else np.full(n, np.nan))
    ss[ss >= 1e6] = np.nan  # Linux's "infinite" initial ssthresh
    if np.isfinite(ss).any():
        ok = np.isfinite(ss) & (w >= ss)
    else:  # growth samples of each epoch that did not start with a timeout
        ok = np.zeros(n, dtype=bool)
        for c in cycles:
            if not c.timeout:
                ok[c.i0 : c.i1] = True
    if "ca_state" in trace.columns:
        st = pd.to_numeric(trace["ca_state"], errors="coerce").to_numpy(float)
        ok &= np.isfinite(st) & (st <= 1)
    if "srtt_ms" in trace.columns:
        srtt = pd.to_numeric(trace["srtt_ms"], errors="coerce").to_numpy(float) / 1000.0
        srtt = np.where(np.isfinite(srtt) & (srtt > 0), srtt, rtt)
    else:
        srtt = np.full(n, rtt)
    dt = np.diff(t)
    dw = np.diff(w)
    pair = ok[:-1] & ok[1:] & (dw >= 0) & (dt > 0)
    rtts = float(np.sum(dt[pair] / srtt[:-1][pair]))
    if rtts < 5:
        return -1.0, -1.0
    grow = float(np.sum(dw[pair]))
    ai = grow / rtts
    wm = float(np.sum(w[:-1][pair] * dt[pair] / srtt[:-1][pair]) / rtts)
    return ai, ai / max(wm, 1.0)
