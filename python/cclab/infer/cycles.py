"""Loss epochs in a cwnd trace: where the window was reduced, and the growth that followed.

A cycle (the S0 paper's terms, Tables 3-4) starts at a window reduction and ends at the next:

- ``t_reduce_s``: the last sample at the peak before the window falls (the paper's t = 0);
- ``wmax_pkts``: the window just before the reduction (W_max);
- ``t0_s``, ``w_prime_pkts``: the end of the reduction and the window then (W', the cycle's
  minimum; with ``ca_state`` known, the first sample back in Open/Disorder, which is Linux's
  ssthresh after recovery; otherwise the bottom of the fall);
- ``t_plateau_s``: the first time the window is back at W_max (so K = t_plateau - t0), or
  None when the next reduction (or a window cap) comes first;
- ``t_end_s``: the next reduction or the end of the trace.

A fall is a reduction when the window drops below ``(1 - min_drop)`` of the peak since the last
cycle. Falls to under 30 % of the peak are timeouts (``timeout = True``): their growth is slow
start, not the algorithm's congestion avoidance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["Cycle", "find_cycles", "window_cap"]


@dataclass(frozen=True)
class Cycle:
    """One loss epoch (see the module docstring)."""

    t_reduce_s: float
    wmax_pkts: float
    t0_s: float
    w_prime_pkts: float
    t_end_s: float
    t_plateau_s: float | None
    timeout: bool
    #: Index range [i0, i1) of the growth samples (after W', before the next reduction).
    i0: int
    i1: int

    @property
    def beta(self) -> float:
        """Reduction ratio W'/W_max."""
        return self.w_prime_pkts / self.wmax_pkts

    @property
    def K_s(self) -> float | None:
        """Time from the end of the reduction (W') to the plateau (None when not reached)."""
        return None if self.t_plateau_s is None else self.t_plateau_s - self.t0_s


def window_cap(w: np.ndarray, t: np.ndarray | None = None, rtt_s: float | None = None) -> float | None:
    """The window cap (the papers' "max window") if the trace sits on one: the largest value,
    held in one stretch at least 5 sampling intervals long, and either held for at least 5 % of
    the time or, with ``rtt_s``, for at least 4 RTTs in one stretch (a cap reached in a few
    cycles only; without a cap the window's peak lasts under an RTT, the loss's detection). With
    ``t``, time is weighted by how long each sample holds (a trace written on changes has one
    sample for a whole stretch at the cap); without it every sample counts the same. None
    otherwise."""
    if len(w) < 20:
        return None
    if t is None:
        t = np.arange(len(w), dtype=float)
    hold = np.diff(t, append=t[-1])  # how long each sample's value holds
    step = float(np.median(hold[hold > 0])) if np.any(hold > 0) else 1.0
    total = float(t[-1] - t[0])
    top = float(np.max(w))
    at = np.abs(w - top) < 0.5
    if total <= 0:
        return None
    edges = np.flatnonzero(np.diff(np.r_[0, at.astype(np.int8), 0]))
    longest = max(float(hold[a:b].sum()) for a, b in zip(edges[::2], edges[1::2]))
    if longest < 5 * step - 1e-12:
        return None
    if hold[at].sum() >= 0.05 * total or (rtt_s is not None and longest >= 4 * rtt_s):
        return top
    return None


def find_cycles(trace: pd.DataFrame, min_drop: float = 0.1) -> list[Cycle]:
    """The loss epochs of ``trace`` (columns t_s, cwnd_pkts, optional ca_state)."""
    t = trace["t_s"].to_numpy(float)
    w = trace["cwnd_pkts"].to_numpy(float)
    ca = trace["ca_state"].to_numpy(float) if "ca_state" in trace.columns else None
    n = len(w)
    # First pass: reductions as (index of the peak sample, index where the fall ends).
    reductions: list[tuple[int, int]] = []
    peak_i = 0
    i = 1
    while i < n:
        if w[i] >= w[peak_i]:
            peak_i = i
        elif w[i] < (1.0 - min_drop) * w[peak_i]:
            j = i
            if ca is not None and not np.isnan(ca[i]):
                # The reduction lasts while in CWR/Recovery/Loss; W' = cwnd on leaving it.
                while j + 1 < n and ca[j] >= 2:
                    j += 1
                # In Loss (after an RTO) the window restarts low and slow-starts: take the bottom.
                if np.nanmax(ca[i : j + 1]) >= 4:
                    j = i + int(np.argmin(w[i : j + 1]))
            else:
                # Follow the fall to its bottom, tolerating 1-packet wiggles (PRR).
                while j + 1 < n and w[j + 1] <= w[j] + 1.0:
                    if j + 2 < n and w[j + 1] > w[j] and w[j + 2] > w[j + 1]:
                        break  # two rises in a row: growth has resumed
                    j += 1
                j = i + int(np.argmin(w[i : j + 1]))
            reductions.append((peak_i, j))
            peak_i = j
            i = j + 1
            continue
        i += 1
    cycles = []
    for k, (pi, j) in enumerate(reductions):
        nxt = reductions[k + 1][0] if k + 1 < len(reductions) else n
        wmax, wp = w[pi], w[j]
        seg = np.flatnonzero(w[j:nxt] >= wmax - 0.5)
        t_plateau = float(t[j + seg[0]]) if seg.size else None
        cycles.append(
            Cycle(
                t_reduce_s=float(t[pi]),
                wmax_pkts=float(wmax),
                t0_s=float(t[j]),
                w_prime_pkts=float(wp),
                t_end_s=float(t[nxt]) if nxt < n else float(t[-1]),
                t_plateau_s=t_plateau,
                timeout=bool(wp < 0.3 * wmax),
                i0=j,
                i1=nxt,
            )
        )
    return cycles
