"""CUBIC's parameters from a cwnd trace: the S0 paper's method C, automated, plus a fit.

Per loss epoch (see ``cycles.py``) the window grows as

    W(t) = c (t - K)^3 + W_max                     (2)   t: time since the reduction ended
    K    = cbrt(b (W_max - W'))                    (3)

so that c = (W(t) - W_max) / (t - K)^3 (4), b = K^3 / (W_max - W') (5) and, at t = 0, b = 1/c (6).

Time runs from the end of the reduction, where W = W' (the paper's t = 0 of eq. (6); with Linux
this is the end of fast recovery, about one RTT after the loss, where CUBIC's epoch starts).
The paper read t, W, K, W_max and W' off its plots by eye. Here each epoch's growth is fitted by
robust least squares (soft-L1 loss, so samples taken in recovery or at a cap do not drag it) to
(2) with c, K and W_max free; W_max is then the plateau (where the slope is 0), as the paper
defines it, which with CUBIC's fast convergence lies below the window at the previous loss. From
the fit come the paper's table columns: K and W_max; W' from the data; (t, W) the last growth
sample (in the convex part, as in the paper's tables); then c by (4), b by (5) and 1/c.

Two ratios are reported: ``beta`` = W' / (window just before the reduction), the multiplicative
decrease (Linux 0.7, the iOS stack ~0.8), and ``w_prime_over_wmax`` = W' / W_max(plateau), the
paper's Table 3-4 ratio (~0.82 for Linux with fast convergence).

A cycle enters the summary when its growth was seen past the fitted plateau (t > K: the concave
part alone trades c against K and W_max) and its fit converged with a c interval narrower than c; the summary is the median over cycles with a bootstrap 95 % interval of the median
(fixed seed: deterministic), or the single cycle's fit interval when only one cycle qualifies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .cycles import Cycle, find_cycles, window_cap
from .io import estimate_rtt_s, load_trace

__all__ = ["Estimate", "CubicEstimate", "estimate_cubic", "cubic_from_table", "fit_cycle", "CycleFit"]


@dataclass(frozen=True)
class Estimate:
    """A value with its 95 % confidence interval (NaN bounds when unknown)."""

    value: float
    ci_low: float
    ci_high: float

    def to_dict(self) -> dict[str, float | None]:
        def f(x: float) -> float | None:
            return None if x is None or not math.isfinite(x) else float(x)

        return {"value": f(self.value), "ci_low": f(self.ci_low), "ci_high": f(self.ci_high)}


@dataclass(frozen=True)
class CycleFit:
    """The least-squares fit of one epoch: parameters, 95 % intervals, residual RMS."""

    c: Estimate
    K_s: Estimate
    wmax_pkts: Estimate
    rms_pkts: float
    n: int


@dataclass
class CubicEstimate:
    """CUBIC's parameters estimated from a trace."""

    c: Estimate
    beta: Estimate
    b: Estimate
    K_s: Estimate
    wmax_pkts: Estimate
    #: One row per cycle: the paper's Table 3/4 columns (t_s, w_pkts, K_s, wmax_pkts,
    #: w_prime_pkts), eqs. (4)/(5) (c_eq4, b_eq5, inv_c), beta and the fit with its interval.
    cycles: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: The trace's window cap, if it sits on one (the papers' "max window").
    cap_pkts: float | None = None
    #: Whether enough cycles were usable for c, b, K and W_max (at least MIN_USABLE_CYCLES);
    #: beta needs only reductions and stands whenever a non-timeout reduction was seen.
    reliable: bool = True
    #: How many cycles were found, how many were usable, and why the others were not.
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """As JSON: c, b, K and W_max are null when the estimate is not reliable (``note`` says
        why); the per-cycle rows keep every cycle's own fit."""
        rows = self.cycles.replace({np.nan: None}).to_dict(orient="records")
        shown = lambda e: e.to_dict() if self.reliable else {"value": None, "ci_low": None, "ci_high": None}  # noqa: E731
        return {
            "reliable": self.reliable,
            "note": self.note,
            "c": shown(self.c),
            "beta": self.beta.to_dict(),
            "b": shown(self.b),
            "K_s": shown(self.K_s),
            "wmax_pkts": shown(self.wmax_pkts),
            "cap_pkts": self.cap_pkts,
            "cycles": rows,
        }


#: Growth samples per cycle given to the fit (more are thinned evenly).
_MAX_FIT_POINTS = 300

#: Usable cycles needed before c, b, K and W_max are reported (the paper read 3 per trace).
MIN_USABLE_CYCLES = 3


def _model(tau: np.ndarray, c: float, K: float, wm: float) -> np.ndarray:
    return c * (tau - K) ** 3 + wm


def _profile_start(tau: np.ndarray, w: np.ndarray) -> tuple[float, float, float]:
    """Start for the fit: for each K on a grid, (c, W_max) by linear least squares (the model
    is linear in them); keep the K with the smallest residual and c > 0."""
    ks = np.linspace(0.0, 1.5 * float(tau[-1]) + 1e-3, 241)
    x = (tau[None, :] - ks[:, None]) ** 3  # (k, n)
    xm = x.mean(axis=1, keepdims=True)
    wmn = w.mean()
    sxx = ((x - xm) ** 2).sum(axis=1)
    sxy = ((x - xm) * (w - wmn)[None, :]).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(sxx > 0, sxy / sxx, np.nan)
    wm = wmn - c * xm[:, 0]
    resid = ((c[:, None] * x + wm[:, None] - w[None, :]) ** 2).sum(axis=1)
    resid[~(c > 0)] = np.inf
    i = int(np.argmin(resid))
    if not np.isfinite(resid[i]):
        return 0.4, float(tau[-1]), float(np.max(w))
    return float(c[i]), float(ks[i]), float(wm[i])


def fit_cycle(tau: np.ndarray, w: np.ndarray, friendly: np.ndarray | None = None) -> CycleFit | None:
    """Fit W(tau) = c (tau - K)^3 + W_max to one epoch's growth (tau: s since the reduction).
    Robust (soft-L1) least squares started from a profile search over K. ``friendly``: the
    window CUBIC's TCP-friendly region would give at each sample (see :func:`_friendly_pkts`);
    the model is then max(cubic, friendly), as bictcp_update's target. None when there are too
    few points or the fit fails."""
    from scipy.optimize import least_squares
    from scipy.stats import t as student_t

    if len(tau) < 8 or np.ptp(w) < 2:
        return None
    c0, k0, wm0 = _profile_start(tau, w)

    def model(p: np.ndarray) -> np.ndarray:
        m = _model(tau, p[0], p[1], p[2])
        return m if friendly is None else np.maximum(m, friendly)

    def jac(p: np.ndarray) -> np.ndarray:
        d = tau - p[1]
        j = np.column_stack([d**3, -3.0 * p[0] * d**2, np.ones_like(d)])
        if friendly is not None:
            j[friendly > _model(tau, p[0], p[1], p[2])] = 0.0  # there the friendly line sets W
        return j

    try:
        r = least_squares(
            lambda p: model(p) - w,
            x0=[max(c0, 1e-5), min(max(k0, 0.0), 1e4), min(max(wm0, 0.0), 1e7)],
            jac=jac,
            bounds=([1e-6, 0.0, 0.0], [1e4, 1e4, 1e7]),
            loss="soft_l1",
            f_scale=1.0,
            max_nfev=100,
        )
    except ValueError:
        return None
    if r.status < 0:
        return None
    res = r.fun
    dof = len(w) - 3
    s2 = float(res @ res) / max(dof, 1)
    J = jac(r.x)
    try:
        cov = np.linalg.inv(J.T @ J) * s2
        se = np.sqrt(np.clip(np.diag(cov), 0, None))
    except np.linalg.LinAlgError:
        se = np.full(3, np.nan)
    q = float(student_t.ppf(0.975, max(dof, 1)))
    est = [Estimate(float(v), float(v - q * e), float(v + q * e)) for v, e in zip(r.x, se)]
    return CycleFit(c=est[0], K_s=est[1], wmax_pkts=est[2], rms_pkts=math.sqrt(s2), n=len(w))


def kernel_beta_scale(beta: float) -> int:
    """tcp_cubic.c's ``beta_scale`` for a multiplicative decrease ``beta`` (read as the kernel's
    ``beta``/1024, rounded): ``8 * (1024 + beta) / 3 / (1024 - beta)`` in integers, at least 1."""
    b = min(1023, max(1, round(beta * 1024)))
    return max(1, 8 * (1024 + b) // 3 // (1024 - b))


def _friendly_pkts(t: np.ndarray, srtt_s: np.ndarray, t0_s: float, w_prime: float, beta: float) -> np.ndarray:
    """The window of CUBIC's TCP-friendly region over one epoch (Linux 6.18 tcp_cubic.c
    bictcp_update, tcp_friendliness on): from W' at the epoch's start it grows by one packet
    per cwnd x beta_scale / 8 packets acked, about a window per round trip, so by
    8 / beta_scale packets per round trip, integrated over the samples' smoothed RTT. The
    kernel's beta_scale is integer (`8 * (1024 + beta) / 3 / (1024 - beta)`, truncated twice),
    not 8 (1 + beta) / 3 (1 - beta): at beta 0.6 it is 10, not 10.67, and the line rises 0.8
    packets per round trip where RFC 8312's 3 (1 - beta) / (1 + beta) says 0.75."""
    if not (0.0 < beta < 1.0):
        return np.full_like(t, -np.inf)
    k = 8.0 / kernel_beta_scale(beta)
    dt = np.diff(np.concatenate([[t0_s], t]))
    rtts = np.where(np.isfinite(srtt_s) & (srtt_s > 0), srtt_s, np.nan)
    rounds = np.nancumsum(np.clip(dt, 0.0, None) / rtts)
    return w_prime + k * rounds


def _cycle_row(trace_t: np.ndarray, trace_w: np.ndarray, cyc: Cycle, cap: float | None,
               lag_s: np.ndarray | None = None, srtt_s: np.ndarray | None = None) -> dict[str, Any]:
    t = trace_t[cyc.i0 : cyc.i1]
    w = trace_w[cyc.i0 : cyc.i1]
    keep = np.ones_like(w, dtype=bool) if cap is None else w < cap - 0.5
    friendly = None
    if srtt_s is not None and len(t):
        friendly = _friendly_pkts(t, srtt_s[cyc.i0 : cyc.i1], cyc.t0_s, cyc.w_prime_pkts, cyc.beta)
    tau, wg = t[keep] - cyc.t0_s, w[keep]
    if lag_s is not None:
        # The window trails CUBIC's curve by the queueing delay (see _window_lag_s); it trails
        # the friendly line the same way (cwnd closes on either target over a round trip).
        tau = tau - lag_s[cyc.i0 : cyc.i1][keep]
    if friendly is not None:
        friendly = np.interp(tau + cyc.t0_s, t, friendly, left=-np.inf)
    if len(tau) > _MAX_FIT_POINTS:  # evenly thinned: the fit needs shape, not every sample
        pick = np.linspace(0, len(tau) - 1, _MAX_FIT_POINTS).round().astype(int)
        tau, wg = tau[pick], wg[pick]
        friendly = friendly[pick] if friendly is not None else None
    fit = fit_cycle(tau, wg, friendly)
    row: dict[str, Any] = {
        "t_reduce_s": cyc.t_reduce_s,
        "t0_s": cyc.t0_s,
        "t_end_s": cyc.t_end_s,
        "w_before_pkts": cyc.wmax_pkts,
        "w_prime_pkts": cyc.w_prime_pkts,
        "beta": cyc.beta,
        "timeout": cyc.timeout,
        "n_samples": int(len(wg)),
    }
    reached_cap = cap is not None and bool(np.any(w >= cap - 0.5))
    if fit is None:
        why = "timeout" if cyc.timeout else "capped" if reached_cap else "too_short"
        return row | {"fit_ok": False, "rejected": why}
    K, wm, c = fit.K_s.value, fit.wmax_pkts.value, fit.c.value
    # The paper's (t, W): the last growth sample (convex part when the plateau was passed).
    t_pt, w_pt = (float(tau[-1]), float(wg[-1])) if len(tau) else (math.nan, math.nan)
    denom = (t_pt - K) ** 3
    c_eq4 = (w_pt - wm) / denom if abs(t_pt - K) > 0.05 * max(K, 1e-9) and denom != 0 else math.nan
    b_eq5 = K**3 / (wm - cyc.w_prime_pkts) if wm > cyc.w_prime_pkts else math.nan
    # Only an epoch seen past its plateau pins the curve down: the concave part alone trades c
    # against K and W_max (and ACK clocking at growing RTT flattens it).
    checks = (
        ("timeout", not cyc.timeout),
        ("capped" if reached_cap else "plateau_not_passed", t_pt > K),
        ("wide_interval", math.isfinite(fit.c.ci_low) and (fit.c.ci_high - fit.c.ci_low) < c),
        ("no_growth_above_w_prime", wm > cyc.w_prime_pkts),
    )
    why = next((name for name, passed in checks if not passed), None)
    ok = why is None
    return row | {
        "t_s": t_pt,
        "w_pkts": w_pt,
        "K_s": K,
        "wmax_pkts": wm,
        "w_prime_over_wmax": cyc.w_prime_pkts / wm if wm > 0 else math.nan,
        "c_eq4": c_eq4,
        "b_eq5": b_eq5,
        "inv_c": 1.0 / c_eq4 if c_eq4 and math.isfinite(c_eq4) else math.nan,
        "c_fit": c,
        "c_fit_ci_low": fit.c.ci_low,
        "c_fit_ci_high": fit.c.ci_high,
        "K_fit_ci_low": fit.K_s.ci_low,
        "K_fit_ci_high": fit.K_s.ci_high,
        "fit_rms_pkts": fit.rms_pkts,
        "fit_ok": bool(ok),
        "rejected": why,
    }


def _window_lag_s(df: pd.DataFrame) -> np.ndarray | None:
    """How far the window trails CUBIC's curve at each sample, s: the queueing delay, srtt -
    min RTT. Linux's bictcp_update (net/ipv4/tcp_cubic.c, 6.18) aims at the curve one delay_min
    ahead, W(t + delay_min), and closes the gap over about one round trip of ACKs
    (cnt = cwnd / (target - cwnd)), so the window at t is about W(t + delay_min - RTT(t)) =
    W(t - (RTT(t) - delay_min)). With a deep queue that lag grows with the window, which bends
    the observed curve and reads c low. Measured on simulated CUBIC (C 0.4, 300-packet BDP,
    150 s) without / with the shift: 200 ms and a 3-BDP queue -2.5 % / +1.2 %; 550 ms, 2 BDP
    -5.1 % / +3.3 %; 25 ms, 3 BDP -0.7 % / -0.3 %; the kernel trace cubic_20M_200ms_q500 (C =
    410/1024) 0.3918 / 0.4020. The over-correction at 550 ms says the lag is shorter than the
    whole queueing delay there (not explained yet). None (no shift) without RTT columns. The
    TCP-friendly region is modelled beside it (:func:`_friendly_pkts`, docs/inference.md)."""
    if not {"srtt_ms", "min_rtt_ms"} <= set(df.columns):
        return None
    lag = (df["srtt_ms"].to_numpy(float) - df["min_rtt_ms"].to_numpy(float)) / 1000.0
    return np.where(np.isfinite(lag), np.clip(lag, 0.0, None), 0.0)


def _summary(values: np.ndarray, single_ci: tuple[float, float] | None = None) -> Estimate:
    v = values[np.isfinite(values)]
    if v.size == 0:
        return Estimate(math.nan, math.nan, math.nan)
    med = float(np.median(v))
    if v.size == 1:
        lo, hi = single_ci if single_ci else (math.nan, math.nan)
        return Estimate(med, lo, hi)
    rng = np.random.default_rng(0)
    boots = np.median(rng.choice(v, size=(2000, v.size), replace=True), axis=1)
    return Estimate(med, float(np.quantile(boots, 0.025)), float(np.quantile(boots, 0.975)))


def estimate_cubic(trace: Any, *, rtt_ms: float | None = None, max_cycles: int | None = None) -> CubicEstimate:
    """Estimate CUBIC's c, beta, b, K and W_max from a trace (anything ``load_trace`` reads, or
    a flows DataFrame / RunResult). ``max_cycles`` keeps the first N usable cycles (the paper
    used 3). ``rtt_ms`` is accepted for symmetry with other estimators and recorded; the
    method needs no RTT."""
    df = load_trace(trace)
    t = df["t_s"].to_numpy(float)
    w = df["cwnd_pkts"].to_numpy(float)
    cap = window_cap(w, t, estimate_rtt_s(df))
    lag = _window_lag_s(df)
    srtt = df["srtt_ms"].to_numpy(float) / 1000.0 if "srtt_ms" in df else None
    rows = [_cycle_row(t, w, cyc, cap, lag, srtt) for cyc in find_cycles(df)]
    cycles = pd.DataFrame(rows)
    if cycles.empty:
        nan = Estimate(math.nan, math.nan, math.nan)
        return CubicEstimate(nan, nan, nan, nan, nan, cycles, cap, reliable=False,
                             note="no loss cycle found: the window never fell and grew again")
    cycles.insert(0, "cycle", np.arange(1, len(cycles) + 1))
    good = cycles[cycles.get("fit_ok", False) == True]  # noqa: E712 (pandas mask)
    if max_cycles is not None:
        good = good.head(max_cycles)
    single = None
    if len(good) == 1:
        single = (float(good["c_fit_ci_low"].iloc[0]), float(good["c_fit_ci_high"].iloc[0]))
    col = lambda name: good[name].to_numpy(float) if name in good else np.array([])  # noqa: E731
    non_to = cycles[~cycles["timeout"]]
    est = CubicEstimate(
        c=_summary(col("c_fit"), single),
        beta=_summary(non_to["beta"].to_numpy(float)),
        b=_summary(col("b_eq5")),
        K_s=_summary(col("K_s")),
        wmax_pkts=_summary(col("wmax_pkts")),
        cycles=cycles,
        cap_pkts=cap,
    )
    est.reliable, est.note = _verdict(cycles, len(good), cap)
    if rtt_ms is not None:
        est.cycles.attrs["rtt_ms"] = rtt_ms
    else:
        est.cycles.attrs["rtt_ms"] = estimate_rtt_s(df) * 1000
    return est


_REASONS = {
    "timeout": "ended by a timeout",
    "capped": "held at the window cap",
    "too_short": "too short to fit",
    "plateau_not_passed": "cut before their plateau",
    "wide_interval": "fitted too loosely",
    "no_growth_above_w_prime": "never grew above W'",
}


def _verdict(cycles: pd.DataFrame, used: int, cap: float | None) -> tuple[bool, str]:
    """Whether c, b, K and W_max can be reported, and a sentence saying what the cycles were."""
    n = len(cycles)
    why = cycles["rejected"].dropna().value_counts() if "rejected" in cycles else pd.Series(dtype=int)
    parts = [f"{int(k)} {_REASONS.get(str(r), str(r))}" for r, k in why.items()]
    text = f"{n} cycles found, {used} usable (seen past their plateau)"
    if parts:
        text += "; the others: " + ", ".join(parts)
    if cap:
        text += f"; window cap at {cap:g} packets"
    if used < MIN_USABLE_CYCLES:
        return False, (f"no reliable estimate of c, b, K and W_max: {text}; at least {MIN_USABLE_CYCLES} usable "
                       "cycles are needed (a longer trace, more loss or no window cap gives more)")
    return True, text


def cubic_from_table(rows: pd.DataFrame | Sequence[dict[str, float]]) -> pd.DataFrame:
    """Eqs. (4) and (5) on rows of the paper's Table 3/4 layout (t_s, w_pkts, K_s, wmax_pkts,
    w_prime_pkts): adds c, b and 1/c, the layout of Tables 5/6."""
    df = pd.DataFrame(rows).copy()
    df["c"] = (df["w_pkts"] - df["wmax_pkts"]) / (df["t_s"] - df["K_s"]) ** 3
    df["b"] = df["K_s"] ** 3 / (df["wmax_pkts"] - df["w_prime_pkts"])
    df["inv_c"] = 1.0 / df["c"]
    return df

