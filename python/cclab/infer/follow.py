"""How Linux's CUBIC window follows its target curve: what the estimator (``cubic.py``) fits.

Linux 6.18's bictcp_update (net/ipv4/tcp_cubic.c) computes a target, bic_target, from the cubic
curve read one delay_min ahead, and sets cnt = cwnd / (bic_target - cwnd): the number of ACKed
packets per packet of growth, which tcp_cong_avoid_ai (net/ipv4/tcp_cong.c) counts in
snd_cwnd_cnt. Modelled here:

- Rounding (:func:`toward_plateau`). delta = (cube_rtt_scale * offs^3) >> 40 is truncated, so
  bic_target = origin -/+ delta is the curve rounded toward the origin (W_max), and cwnd, an
  integer that stops where it meets the target (cnt = 100 * cwnd once target <= cwnd), is a
  staircase half a packet inside the curve on both sides of the plateau, and on the plateau
  while the curve is within a packet of it. Fitted as a continuous cubic, the staircase's
  missing packet reads c low by about 1 / (W_max - W'): -5 % for the 17-packet epochs of
  cubic-ios (beta 0.8, fast convergence) at 50 ms and 20 Mbit/s.
- When each step comes (:func:`step_times`). The window steps by one when snd_cwnd_cnt, the
  ACKs counted since its last step, reaches cnt. Where the target runs ahead by k packets, that
  takes cwnd / k ACKs: the window trails the target by about a round trip, and by less behind the
  epoch's convex part (a lag follows the curve's bend). Where the target stands still, cnt =
  100 * cwnd, but snd_cwnd_cnt keeps counting, so when the target steps up after more than a
  round trip the credit already covers cnt = cwnd and the window steps as soon as cnt is
  recomputed, which bictcp_update does only when cwnd changed or more than HZ / 32 jiffies passed
  (its `last_cwnd == cwnd` early return): on average 16 ms after the target, not a round trip.
  Where the target moves slowly (short RTTs, small C, near the plateau) the window is thus ahead
  of a curve shifted back by the queueing delay, the estimator's earlier lag model.
- The TCP-friendly region (:func:`friendly_pkts`): tcp_cwnd, a Reno line from W' whose slope
  needs the kernel's integer beta (:func:`kernel_betas`, :func:`kernel_beta_scale`); the target is
  the larger of it and the rounded curve.

:func:`step_times` replays those rules for a candidate curve; :func:`curve_times` turns the
replay into each sample's time on the curve, so that the fit stays a smooth least-squares fit.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .cycles import Cycle

__all__ = ["toward_plateau", "round_trip_s", "target_lead_s", "step_times", "curve_times", "friendly_pkts",
           "kernel_betas", "kernel_beta_scale", "HALF_PKT", "STEP_WAIT_S"]

#: Half a packet: the rounded window's staircase lies this far inside the curve.
HALF_PKT = 0.5
#: bictcp_update recomputes cnt, when cwnd has not changed, after more than HZ / 32 jiffies: 8
#: jiffies at HZ 250, 32 at HZ 1000, 32 ms either way. A target step waits half that on average.
STEP_WAIT_S = 0.032 / 2
#: usecs_to_jiffies(delay_min) rounds up: the target reads the curve half a jiffy (HZ 250) further.
HALF_JIFFY_S = 0.5 / 250
#: cnt's floor in bictcp_update: at most one packet of growth per 2 ACKed.
MIN_CNT = 2


def toward_plateau(x: np.ndarray) -> np.ndarray:
    """The window's offset from the plateau for the curve's offset ``x`` = c (t - K)^3: the
    kernel's staircase trunc(x) as the least-squares line through its risers' midpoints, x -/+
    1/2, and 0 (the plateau) within half a packet of it."""
    return np.sign(x) * np.maximum(np.abs(x) - HALF_PKT, 0.0)


def round_trip_s(t_s: np.ndarray, srtt_s: np.ndarray) -> np.ndarray:
    """How long a window of ACKs takes from each sample on: the RTT of the packets sent then,
    which the trace's smoothed RTT shows one round trip later (while a queue builds, srtt trails
    the window's own RTT, cwnd / rate, by about that). NaN RTTs are filled from neighbours; all
    NaN when the trace has none."""
    ok = np.isfinite(srtt_s) & (srtt_s > 0)
    if not ok.any():
        return np.full_like(t_s, np.nan)
    rtt = np.interp(t_s, t_s[ok], srtt_s[ok])
    return np.interp(t_s + rtt, t_s, rtt)


def target_lead_s(min_rtt_s: np.ndarray) -> np.ndarray:
    """How far ahead bictcp_update reads its curve: t + usecs_to_jiffies(delay_min)."""
    return np.where(np.isfinite(min_rtt_s), min_rtt_s, 0.0) + HALF_JIFFY_S


def _level_times(m: np.ndarray, c: float, K: float, wm: float, lead_s: float,
                 friendly: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray:
    """When the target first reaches window m (s since the epoch's start): the rounded curve
    reaches m where the curve passes m above the plateau and m - 1 below it; tcp_cwnd (the
    friendly line, an integer) where its line passes m."""
    below = m <= wm
    off = np.where(below, -(wm - (m - 1.0)), m - wm)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = K + np.cbrt(off / c) - lead_s
    if friendly is not None:
        ft, fw = friendly
        t = np.minimum(t, np.interp(m, fw, ft, left=-np.inf, right=np.inf))
    return t


def step_times(c: float, K: float, wm: float, w_prime: float, lead_s: float, t_s: np.ndarray,
               rtt_s: np.ndarray, friendly: tuple[np.ndarray, np.ndarray] | None = None,
               top_pkts: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Replay the kernel's growth over one epoch for the curve (c, K, W_max): from W' at time 0,
    when the window steps to each next packet, and when the target got there. ``t_s``,
    ``rtt_s``: the round trip (:func:`round_trip_s`) at times since the epoch's start, where
    ACKs come at cwnd per round trip; ``friendly``: the friendly line as (times, windows);
    ``top_pkts``: no step above this window (the trace's largest, say).

    Step n happens at the first t after step n - 1 at which the ACKs since, cwnd / rtt per
    second, reach cnt = max(cwnd / (target(t) - cwnd), 2) (tcp_cong_avoid_ai resets its count at
    a step), the target being later by :data:`STEP_WAIT_S` where it stepped up after step n - 1
    (the wait for bictcp_update's next cnt). Returns (window step times, target times) for
    windows W' + 1, W' + 2, ... up to the end of ``t_s``."""
    cw0, t_end = int(round(w_prime)), float(t_s[-1])
    top = int(top_pkts) if top_pkts is not None and np.isfinite(top_pkts) else cw0 + 100_000
    if top <= cw0:
        return np.array([]), np.array([])
    # reach[j]: when the target first reaches window cw0 + 1 + j; beyond the top too, as the
    # target may run that far ahead of the window.
    reach = _level_times(np.arange(cw0 + 1, 2 * top - cw0 + 64, dtype=float), c, K, wm, lead_s, friendly)
    reach = np.maximum.accumulate(np.where(np.isnan(reach), np.inf, reach)).tolist()
    ts, rs = t_s.tolist(), rtt_s.tolist()
    steps: list[float] = []
    cw, t_last, i = cw0, 0.0, 0
    while cw < top and t_last <= t_end:
        while i + 1 < len(ts) and ts[i + 1] <= t_last:
            i += 1
        rtt = rs[i] if i + 1 == len(ts) or ts[i + 1] == ts[i] else \
            rs[i] + (rs[i + 1] - rs[i]) * (t_last - ts[i]) / (ts[i + 1] - ts[i])
        per_ack = max(rtt, 1e-6) / cw

        def ready(k: int) -> float:  # when the target is k packets ahead (after cnt's wait)
            at = reach[cw + k - cw0 - 1]
            return at if at <= t_last else at + STEP_WAIT_S

        def credited(k: int) -> float:  # when the ACKs since the last step reach cnt for gap k
            return t_last + max(cw // k, MIN_CNT) * per_ack

        # ready(k) rises and credited(k) falls with k: the step comes where they cross.
        lo, hi = 1, len(reach) + cw0 - cw
        if ready(hi) < credited(hi):
            when = credited(hi)
        else:
            while lo < hi:
                mid = (lo + hi) // 2
                if ready(mid) >= credited(mid):
                    hi = mid
                else:
                    lo = mid + 1
            when = ready(lo) if lo == 1 else min(ready(lo), credited(lo - 1))
        if not np.isfinite(when):
            break
        steps.append(when)
        cw, t_last = cw + 1, when
    return np.array(steps), np.array(reach[: len(steps)])


def curve_times(t_s: np.ndarray, steps: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Each sample's time on the target: the window's step to a packet is the target's step to
    it, and times between steps map linearly (before the first and after the last, by the
    nearest step's lag). The samples themselves unless there were steps."""
    if len(steps) == 0:
        return t_s.copy()
    lag = steps - targets
    return t_s - np.interp(t_s, steps, lag)


def kernel_beta_scale(beta: float) -> int:
    """tcp_cubic.c's ``beta_scale`` for a multiplicative decrease ``beta`` (read as the kernel's
    ``beta``/1024, rounded): ``8 * (1024 + beta) / 3 / (1024 - beta)`` in integers, at least 1."""
    b = min(1023, max(1, round(beta * 1024)))
    return max(1, 8 * (1024 + b) // 3 // (1024 - b))


def kernel_betas(cycles: Sequence[Cycle]) -> list[float]:
    """The kernel's betas (as fractions, beta / 1024) that the reductions allow, one for each
    beta_scale among them. cubictcp_recalc_ssthresh gives W' = W * beta / 1024 truncated, so each
    reduction (not a timeout) allows integer betas in [1024 W' / W, 1024 (W' + 1) / W); kept are
    those the most reductions allow, and of them, for each beta_scale they give, the middle one.
    At small windows that is often two beta_scales: 116 / 167 and 117 / 168 (Linux's 717 at 50
    ms, 20 Mbit/s) allow 714-717, beta_scale 14 or 15, a friendly line 7 % steeper or not; 133 /
    167 and 134 / 168 (beta 819) allow 817-821, beta_scale 23 or 24. The fit decides between
    them (cubic.estimate_cubic). Empty without reductions."""
    bounds = [(1024 * c.w_prime_pkts / c.wmax_pkts, 1024 * (c.w_prime_pkts + 1) / c.wmax_pkts)
              for c in cycles if not c.timeout and c.wmax_pkts > 0]
    if not bounds:
        return []
    b = np.arange(1, 1024)
    allowed = sum(((lo <= b) & (b < hi)).astype(int) for lo, hi in bounds)
    best = b[allowed == allowed.max()]
    scales = np.array([kernel_beta_scale(x / 1024) for x in best])
    return [int(np.median(best[scales == s])) / 1024 for s in np.unique(scales)]


def friendly_pkts(t: np.ndarray, srtt_s: np.ndarray, t0_s: float, w_prime: float, beta: float) -> np.ndarray:
    """The window of CUBIC's TCP-friendly region over one epoch (Linux 6.18 tcp_cubic.c
    bictcp_update, tcp_friendliness on): from W' at the epoch's start it grows by one packet
    per cwnd x beta_scale / 8 packets acked, about a window per round trip, so by
    8 / beta_scale packets per round trip, integrated over ``srtt_s`` (the round trips of a
    window of ACKs, follow.round_trip_s). tcp_cwnd is this line's floor (cubic.fit_cycle). The
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
