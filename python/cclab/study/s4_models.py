"""S4's throughput models and their fits (shared/docs/STUDIES.md, S4; the seed paper's eq. 1-2).

    Bw = C (MSS / RTT) / sqrt(p)                              (1)  Mathis et al., C = sqrt(3/2)
    Bw = MSS / (n RTT sqrt(1 - (1 - p)^n))                    (2)  n hops, each losing p
       ~ n^-1.5 (MSS / RTT) / sqrt(p)                              (for n p << 1)

Eq. (2) as the paper writes it has no constant; :func:`nhop_bw_bps` takes Mathis's C as an
option so the two can be compared on one scale (``c=1`` is the paper's form). The fits are
ordinary least squares on logarithms (a power law is a line there), with Student-t 95 %
intervals: :func:`fit_power_law` for the exponent of hops (the paper predicts 1.5; a clean chain
whose capacity is shared by n hops gives about 1), :func:`fit_mathis` for C and, freed, the
exponent of p (Mathis: 0.5).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["MATHIS_C", "PowerFit", "fit_mathis", "fit_power_law", "mathis_bw_bps", "nhop_bw_bps"]

#: Mathis et al.'s constant for periodic loss and an ACK per segment: sqrt(3/2).
MATHIS_C = math.sqrt(1.5)


def mathis_bw_bps(mss_bytes: float, rtt_s: float, p: float, c: float = MATHIS_C) -> float:
    """Eq. (1): the TCP throughput a loss rate ``p`` allows, bit/s."""
    if not (rtt_s > 0 and 0 < p <= 1):
        raise ValueError(f"need rtt_s > 0 and 0 < p <= 1, got rtt_s={rtt_s}, p={p}")
    return c * mss_bytes * 8 / rtt_s / math.sqrt(p)


def nhop_bw_bps(mss_bytes: float, rtt_s: float, p: float, n: int, c: float = 1.0) -> float:
    """Eq. (2): throughput over ``n`` hops that each lose a fraction ``p``, bit/s (``c = 1``: the
    paper's form; ``MATHIS_C`` puts it on eq. (1)'s scale, which it equals at n = 1)."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if not (rtt_s > 0 and 0 < p <= 1):
        raise ValueError(f"need rtt_s > 0 and 0 < p <= 1, got rtt_s={rtt_s}, p={p}")
    return c * mss_bytes * 8 / (n * rtt_s * math.sqrt(1 - (1 - p) ** n))


@dataclass(frozen=True)
class PowerFit:
    """y = prefactor * x^(-exponent), fitted on logarithms."""

    exponent: float
    #: 95 % interval of the exponent (Student t, n - 2 degrees of freedom); NaN with 2 points.
    exponent_ci95: tuple[float, float]
    prefactor: float
    #: Coefficient of determination on the logarithms.
    r2: float
    n_points: int

    def predict(self, x: np.ndarray | float) -> np.ndarray:
        return self.prefactor * np.power(np.asarray(x, dtype=float), -self.exponent)


def _positive(what: str, *arrays: np.ndarray | list[float] | float) -> list[np.ndarray]:
    """The arrays (broadcast to one shape) at the points where every one is finite and > 0; at
    least two distinct values of the first are needed."""
    arrs = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in arrays))
    ok = np.logical_and.reduce([np.isfinite(a) & (a > 0) for a in arrs])
    if np.unique(arrs[0][ok]).size < 2:
        raise ValueError(f"{what}: needs at least two distinct positive x with positive y "
                         f"(got {int(ok.sum())} usable points)")
    return [a[ok] for a in arrs]


def fit_power_law(x: np.ndarray | list[float], y: np.ndarray | list[float]) -> PowerFit:
    """Fit y = A x^-k by least squares on (log x, log y); points with x or y not positive and
    finite are left out. With repeated runs per x, pass every run: the interval then reflects
    their spread."""
    if np.shape(x) != np.shape(y):
        raise ValueError(f"fit_power_law: x and y differ in length ({np.size(x)} vs {np.size(y)})")
    x, y = _positive("fit_power_law", x, y)
    res = stats.linregress(np.log(x), np.log(y))
    dof = x.size - 2
    half = stats.t.ppf(0.975, dof) * res.stderr if dof > 0 else math.nan
    k = -res.slope
    return PowerFit(exponent=float(k), exponent_ci95=(float(k - half), float(k + half)),
                    prefactor=float(math.exp(res.intercept)), r2=float(res.rvalue**2), n_points=int(x.size))


@dataclass(frozen=True)
class MathisFit:
    """Eq. (1) fitted: C with the exponent of p held at 0.5, and the exponent freed."""

    c: float
    c_ci95: tuple[float, float]
    #: Bw ~ p^-exponent with the exponent freed (Mathis: 0.5).
    p_exponent: PowerFit


def fit_mathis(p: np.ndarray | list[float], bw_bps: np.ndarray | list[float], mss_bytes: float,
               rtt_s: np.ndarray | list[float] | float) -> MathisFit:
    """Fit eq. (1) to throughputs ``bw_bps`` measured at loss rates ``p`` (and RTTs ``rtt_s``,
    one or per point): C as the geometric mean of Bw RTT sqrt(p) / MSS with its t interval, and
    the exponent of p free (on Bw RTT / MSS, so differing RTTs cancel)."""
    p_arr, bw, rtt = _positive("fit_mathis", p, bw_bps, rtt_s)
    log_c = np.log(bw * rtt * np.sqrt(p_arr) / (mss_bytes * 8))
    m = log_c.size
    sem = log_c.std(ddof=1) / math.sqrt(m) if m > 1 else math.nan
    half = stats.t.ppf(0.975, m - 1) * sem if m > 1 else math.nan
    mean = float(log_c.mean())
    return MathisFit(c=math.exp(mean), c_ci95=(math.exp(mean - half), math.exp(mean + half)),
                     p_exponent=fit_power_law(p_arr, bw * rtt / (mss_bytes * 8)))
