"""CUBIC's parameters from a cwnd trace: the S0 paper's method C, automated, plus a fit.

Per loss epoch (see ``cycles.py``) the window grows as

    W(t) = c (t - K)^3 + W_max                     (2)   t: time since the reduction ended
    K    = cbrt(b (W_max - W'))                    (3)

so that c = (W(t) - W_max) / (t - K)^3 (4), b = K^3 / (W_max - W') (5) and, at t = 0, b = 1/c (6).

Time runs from the end of the reduction, where W = W' (the paper's t = 0 of eq. (6); with Linux
this is the end of fast recovery, about one RTT after the loss, where CUBIC's epoch starts).
The paper read t, W, K, W_max and W' off its plots by eye. Here each epoch's growth is fitted by
robust least squares (soft-L1 loss, so samples taken in recovery or at a cap do not drag it) to
(2) with c, K and W_max free, through a model of how Linux's window follows the curve
(``follow.py``: the kernel's rounded target, the TCP-friendly line, and when the window steps);
W_max is then the plateau (where the slope is 0), as the paper defines it, which with CUBIC's
fast convergence lies below the window at the previous loss. From the fit come the paper's table
columns: K and W_max; W' from the data; (t, W) the last growth sample (in the convex part, as in
the paper's tables, t its time on the curve); then c by (4), b by (5) and 1/c.

Two ratios are reported: ``beta`` = W' / (window just before the reduction), the multiplicative
decrease (Linux 0.7, the iOS stack ~0.8), and ``w_prime_over_wmax`` = W' / W_max(plateau), the
paper's Table 3-4 ratio (~0.82 for Linux with fast convergence).

A cycle enters the summary when its growth was seen past the fitted plateau (t > K: the concave
part alone trades c against K and W_max) and its fit converged with a c interval narrower than
c; the summary is the median over cycles with a bootstrap 95 % interval of the median (fixed
seed: deterministic), or the single cycle's fit interval when only one cycle qualifies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from .cycles import Cycle, find_cycles, window_cap
from .follow import (
    HALF_PKT,
    curve_times,
    friendly_pkts,
    kernel_betas,
    kernel_beta_scale,
    round_trip_s,
    step_times,
    target_lead_s,
    toward_plateau,
)
from .io import estimate_rtt_s, load_trace

__all__ = ["Estimate", "CubicEstimate", "estimate_cubic", "cubic_from_table", "fit_cycle", "CycleFit",
           "kernel_beta_scale"]


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
    #: The last sample's time on the curve (s since the epoch's start, as K): where the fit
    #: placed it, after the window's lag behind the target.
    t_last_s: float = math.nan
    #: The share of samples where the fit has the TCP-friendly line set the window.
    friendly_share: float = 0.0


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
    """The kernel's target: the curve rounded toward its plateau (see follow.toward_plateau)."""
    return toward_plateau(c * (tau - K) ** 3) + wm


def _model_jac(tau: np.ndarray, c: float, K: float) -> np.ndarray:
    d = tau - K
    inside = np.abs(c * d**3) > HALF_PKT  # within half a packet of the plateau the target is the plateau
    return np.column_stack([d**3 * inside, -3.0 * c * d**2 * inside, np.ones_like(d)])


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


@dataclass(frozen=True)
class Follow:
    """What the window's following of the target needs over one epoch (see ``follow.py``), at
    each sample: the round trip of a window of ACKs from it and how far ahead the target reads
    the curve (delay_min); and the window at the epoch's start, W'."""

    rtt_s: np.ndarray
    lead_s: np.ndarray
    w_prime_pkts: float


#: The replay costs a few microseconds per packet of growth and fit step: epochs that grow by
#: more packets than this (30 MB of window) are fitted a round trip behind the target instead.
_MAX_REPLAY_PKTS = 20_000


def fit_cycle(tau: np.ndarray, w: np.ndarray, friendly: np.ndarray | None = None,
              follow: Follow | None = None) -> CycleFit | None:
    """Fit W(tau) = c (tau - K)^3 + W_max to one epoch's growth (tau: s since the reduction).
    Robust (soft-L1) least squares started from a profile search over K. The model is the
    kernel's target, the curve rounded toward its plateau (``follow.toward_plateau``).
    ``friendly``: the TCP-friendly line at each sample (see :func:`follow.friendly_pkts`), whose
    integer tcp_cwnd makes the target max(cubic, friendly). ``follow``: the window follows the
    target as tcp_cong_avoid_ai lets it: for each candidate curve the kernel's growth is
    replayed (``follow.step_times``) and each sample is compared with the target at the time
    the replayed window reached its value (``follow.curve_times``). The fit starts from the
    window a round trip behind the target; the Jacobian holds those times fixed, so the fit
    settles where the curve and the times it implies agree. Without ``follow`` the window is
    taken to sit on the target. None when there are too few points or the fit fails."""
    if len(tau) < 8 or np.ptp(w) < 2:
        return None
    lead = 0.0 if follow is None else follow.lead_s

    def placed(on_target: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """The samples' times on the curve and the friendly target there (tcp_cwnd, the
        line's floor, fitted as line - 1/2), for their times on the target."""
        line = None if friendly is None else np.interp(on_target, tau, friendly, left=-np.inf) - HALF_PKT
        return on_target + lead, line

    behind = tau if follow is None else tau - follow.rtt_s  # first: a round trip behind
    c0, k0, wm0 = _profile_start(behind + lead, w)
    p0 = np.array([max(c0, 1e-5), min(max(k0, 0.0), 1e4), min(max(wm0, 0.0), 1e7)])
    r = _fit(w, p0, lambda p: placed(behind))
    if r is None:
        return None
    top = float(np.max(w)) + 1  # steps above the trace's top place no sample
    if (follow is None or tau[-1] + float(np.max(lead)) <= r[0][1]
            or top - follow.w_prime_pkts > _MAX_REPLAY_PKTS):
        # Without RTTs, for an epoch cut before its plateau (not used, see _cycle_row), or one
        # too long to replay: a round trip behind.
        return _cycle_fit(*r, len(w), float(placed(behind)[0][-1]))
    lead0 = float(np.median(follow.lead_s))
    fr = None if friendly is None or not np.isfinite(friendly).all() else (tau, friendly)

    def replayed(p: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        steps, targets = step_times(p[0], p[1], p[2], follow.w_prime_pkts, lead0, tau, follow.rtt_s, fr, top)
        return placed(curve_times(tau, steps, targets))

    r2 = _fit(w, r[0], replayed)
    if r2 is None:
        return _cycle_fit(*r, len(w), float(placed(behind)[0][-1]))
    return _cycle_fit(*r2, len(w), float(replayed(r2[0])[0][-1]))


def _fit(w: np.ndarray, p0: np.ndarray, placed: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray | None]]
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float] | None:
    """One robust least-squares fit of the target max(rounded cubic, friendly) to ``w``;
    ``placed(p)``: the samples' times on the curve and the friendly target at them, for the
    curve p (the Jacobian takes them as fixed). Returns the parameters, residuals, Jacobian and
    the share of samples the friendly line set."""
    from scipy.optimize import least_squares

    last: dict[bytes, tuple[np.ndarray, np.ndarray, float]] = {}

    def target(p: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        key = p.tobytes()
        if key not in last:  # least_squares asks for the residuals, then the Jacobian, at one p
            tau, friendly = placed(p)
            x, j, share = _model(tau, *p), _model_jac(tau, p[0], p[1]), 0.0
            if friendly is not None:
                above = friendly > x  # there the friendly line sets the window
                x, j, share = np.where(above, friendly, x), np.where(above[:, None], 0.0, j), float(above.mean())
            last.clear()
            last[key] = (x, j, share)
        return last[key]

    try:
        r = least_squares(
            lambda p: target(p)[0] - w,
            x0=p0,
            jac=lambda p: target(p)[1],
            bounds=([1e-6, 0.0, 0.0], [1e4, 1e4, 1e7]),
            loss="soft_l1",
            f_scale=1.0,
            max_nfev=100,
        )
    except ValueError:
        return None
    if r.status < 0:
        return None
    return r.x, r.fun, target(r.x)[1], target(r.x)[2]


def _cycle_fit(x: np.ndarray, res: np.ndarray, J: np.ndarray, friendly_share: float, n: int,
               t_last_s: float) -> CycleFit:
    """Parameters with 95 % intervals from the fit's Jacobian and residuals."""
    from scipy.stats import t as student_t

    dof = n - 3
    s2 = float(res @ res) / max(dof, 1)
    try:
        cov = np.linalg.inv(J.T @ J) * s2
        se = np.sqrt(np.clip(np.diag(cov), 0, None))
    except np.linalg.LinAlgError:
        se = np.full(3, np.nan)
    q = float(student_t.ppf(0.975, max(dof, 1)))
    est = [Estimate(float(v), float(v - q * e), float(v + q * e)) for v, e in zip(x, se)]
    return CycleFit(c=est[0], K_s=est[1], wmax_pkts=est[2], rms_pkts=math.sqrt(s2), n=n, t_last_s=t_last_s,
                    friendly_share=friendly_share)


@dataclass(frozen=True)
class _Timing:
    """Per-sample timing of a trace with RTTs: the round trip of a window of ACKs
    (follow.round_trip_s) and how far ahead the kernel reads its curve (follow.target_lead_s,
    from min_rtt_ms, else from the trace's smallest srtt)."""

    rtt_s: np.ndarray
    lead_s: np.ndarray


def _timing(df: pd.DataFrame) -> _Timing | None:
    if "srtt_ms" not in df.columns:
        return None
    t = df["t_s"].to_numpy(float)
    srtt = df["srtt_ms"].to_numpy(float) / 1000.0
    rtt = round_trip_s(t, srtt)
    if not np.isfinite(rtt).all():
        return None
    if "min_rtt_ms" in df.columns:
        dmin = df["min_rtt_ms"].to_numpy(float) / 1000.0
    else:
        dmin = np.full_like(t, np.nanmin(srtt))
    return _Timing(rtt, target_lead_s(dmin))


def _cycle_row(trace_t: np.ndarray, trace_w: np.ndarray, cyc: Cycle, cap: float | None,
               timing: _Timing | None = None, beta: float | None = None) -> dict[str, Any]:
    t = trace_t[cyc.i0 : cyc.i1]
    w = trace_w[cyc.i0 : cyc.i1]
    keep = np.ones_like(w, dtype=bool) if cap is None else w < cap - 0.5
    tau, wg = t[keep] - cyc.t0_s, w[keep]
    friendly = follow = None
    if timing is not None and len(t):
        rtt = timing.rtt_s[cyc.i0 : cyc.i1]
        friendly = friendly_pkts(t, rtt, cyc.t0_s, cyc.w_prime_pkts, beta or cyc.beta)[keep]
        follow = Follow(rtt[keep], timing.lead_s[cyc.i0 : cyc.i1][keep], cyc.w_prime_pkts)
    if len(tau) > _MAX_FIT_POINTS:  # evenly thinned: the fit needs shape, not every sample
        pick = np.linspace(0, len(tau) - 1, _MAX_FIT_POINTS).round().astype(int)
        tau, wg = tau[pick], wg[pick]
        friendly = friendly[pick] if friendly is not None else None
        follow = Follow(follow.rtt_s[pick], follow.lead_s[pick], follow.w_prime_pkts) if follow else None
    fit = fit_cycle(tau, wg, friendly, follow)
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
    t_pt, w_pt = (fit.t_last_s, float(wg[-1])) if len(tau) else (math.nan, math.nan)
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
        "friendly_share": fit.friendly_share,
        "fit_ok": bool(ok),
        "rejected": why,
    }


def _residual(rows: list[dict[str, Any]]) -> float:
    """The fits' summed squared residual over the cycles, packets^2."""
    return sum(r["fit_rms_pkts"] ** 2 * (r["n_samples"] - 3) for r in rows if "fit_rms_pkts" in r)


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
    timing = _timing(df)
    found = find_cycles(df)
    # The friendly line's slope needs the kernel's beta_scale: of those the reductions allow
    # (one unless the windows are small), the one whose fits leave the least residual. The
    # steepest line comes first: if even it sets no sample, the others would not either.
    rows: list[dict[str, Any]] = []
    for i, beta in enumerate((kernel_betas(found) or [None]) if timing is not None else [None]):
        candidate = [_cycle_row(t, w, cyc, cap, timing, beta) for cyc in found]
        if not rows or _residual(candidate) < _residual(rows):
            rows = candidate
        if i == 0 and not any(r.get("friendly_share", 0.0) > 0 for r in candidate):
            break  # the friendly line sets no sample: its slope does not matter
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
    est.reliable, est.note = _verdict(cycles, len(good), cap, col("c_fit"))
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


#: A usable cycle agrees with the others when its c is within this fraction of their median.
AGREE_FRACTION = 0.25


def _verdict(cycles: pd.DataFrame, used: int, cap: float | None, c_fits: np.ndarray | None = None) -> tuple[bool, str]:
    """Whether c, b, K and W_max can be reported, and a sentence saying what the cycles were:
    at least MIN_USABLE_CYCLES usable cycles, and as many whose c lies within AGREE_FRACTION of
    their median (one outlier does not sink a good estimate; short epochs of a few tens of
    packets, as at 10 ms and loss 1e-3, fit c anywhere from hundreds to thousands and do)."""
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
    if c_fits is not None and len(c_fits):
        med = float(np.median(c_fits))
        agree = int(np.sum(np.abs(c_fits - med) <= AGREE_FRACTION * med))
        if agree < MIN_USABLE_CYCLES:
            return False, (f"no reliable estimate of c, b, K and W_max: {text}; the usable cycles disagree (c "
                           f"{np.min(c_fits):.4g} to {np.max(c_fits):.4g}, {agree} within "
                           f"{AGREE_FRACTION:.0%} of their median): epochs this short pin the curve down poorly")
    return True, text


def cubic_from_table(rows: pd.DataFrame | Sequence[dict[str, float]]) -> pd.DataFrame:
    """Eqs. (4) and (5) on rows of the paper's Table 3/4 layout (t_s, w_pkts, K_s, wmax_pkts,
    w_prime_pkts): adds c, b and 1/c, the layout of Tables 5/6."""
    df = pd.DataFrame(rows).copy()
    df["c"] = (df["w_pkts"] - df["wmax_pkts"]) / (df["t_s"] - df["K_s"]) ** 3
    df["b"] = df["K_s"] ** 3 / (df["wmax_pkts"] - df["w_prime_pkts"])
    df["inv_c"] = 1.0 / df["c"]
    return df

