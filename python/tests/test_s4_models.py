"""S4's models (eq. 1, eq. 2) against values by hand, and the fits against synthetic data."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cclab.study.s4_models import MATHIS_C, fit_mathis, fit_power_law, mathis_bw_bps, nhop_bw_bps


def test_equations_by_hand():
    # MSS 1448 B, RTT 10 ms, p 1e-4: 1.2247 x 1448 x 8 / 0.01 / 0.01 = 141.87 Mbit/s.
    assert mathis_bw_bps(1448, 0.010, 1e-4) == pytest.approx(1.224745 * 1448 * 8 / 0.01 / 0.01, rel=1e-6)
    # Two hops of p = 0.01: 1448 x 8 / (2 x 0.01 x sqrt(1 - 0.99^2)) = 1448 x 8 / (0.02 x 0.141067).
    assert nhop_bw_bps(1448, 0.010, 0.01, 2) == pytest.approx(11584 / (0.02 * math.sqrt(0.0199)), rel=1e-9)
    # One hop with Mathis's constant is eq. (1); for n p << 1 eq. (2) falls as n^-1.5.
    assert nhop_bw_bps(1448, 0.05, 1e-4, 1, c=MATHIS_C) == pytest.approx(mathis_bw_bps(1448, 0.05, 1e-4), rel=1e-4)
    ratio = nhop_bw_bps(1448, 0.05, 1e-5, 4) / nhop_bw_bps(1448, 0.05, 1e-5, 1)
    assert ratio == pytest.approx(4**-1.5, rel=1e-3)
    with pytest.raises(ValueError, match="n must be"):
        nhop_bw_bps(1448, 0.05, 1e-4, 0)
    with pytest.raises(ValueError, match="0 < p"):
        mathis_bw_bps(1448, 0.05, 0)


def test_power_fit_recovers_a_known_exponent_and_its_interval_covers_it():
    rng = np.random.default_rng(7)
    hops = np.repeat([1, 2, 3, 4], 5)  # five runs per hop count, as a study would have
    covered, errors = 0, []
    for _ in range(400):
        y = 30e6 * hops ** -1.5 * rng.lognormal(0.0, 0.08, hops.size)
        f = fit_power_law(hops, y)
        errors.append(f.exponent - 1.5)
        covered += f.exponent_ci95[0] <= 1.5 <= f.exponent_ci95[1]
    assert abs(np.mean(errors)) < 0.01
    assert np.std(errors) < 0.08
    # A 95 % interval: 400 trials cover the truth 95 % +- 3 sd of a binomial (about 3.3 %).
    assert 0.915 <= covered / 400 <= 0.985


def test_power_fit_tells_n_to_the_minus_one_from_minus_one_and_a_half():
    rng = np.random.default_rng(3)
    hops = np.repeat([1, 2, 3, 4], 5)
    f = fit_power_law(hops, 28.8e6 / hops * rng.lognormal(0.0, 0.05, hops.size))
    assert f.exponent_ci95[0] < 1.0 < f.exponent_ci95[1] and f.exponent_ci95[1] < 1.5
    assert f.predict(1) == pytest.approx(f.prefactor) and f.r2 > 0.95


def test_mathis_fit_recovers_c_and_the_half_power():
    rng = np.random.default_rng(11)
    p = np.repeat([1e-4, 3e-4, 1e-3, 3e-3, 1e-2], 4)
    rtt = np.repeat([0.02, 0.05], 10)
    bw = np.array([mathis_bw_bps(1448, r, q, c=0.93) for q, r in zip(p, rtt)]) * rng.lognormal(0, 0.05, p.size)
    f = fit_mathis(p, bw, 1448, rtt)
    assert f.c_ci95[0] < 0.93 < f.c_ci95[1] and abs(f.c - 0.93) < 0.03
    assert f.p_exponent.exponent == pytest.approx(0.5, abs=0.03)


def test_fits_refuse_what_they_cannot_fit():
    with pytest.raises(ValueError, match="two distinct"):
        fit_power_law([2, 2, 2], [1.0, 1.1, 0.9])
    with pytest.raises(ValueError, match="two distinct"):
        fit_power_law([1, 2, 3], [0.0, -1.0, float("nan")])
    with pytest.raises(ValueError, match="differ in length"):
        fit_power_law([1, 2, 3], [1.0, 2.0])
    # Two points: an exponent, but no interval.
    f = fit_power_law([1, 2], [4.0, 1.0])
    assert f.exponent == pytest.approx(2.0) and all(math.isnan(v) for v in f.exponent_ci95)
