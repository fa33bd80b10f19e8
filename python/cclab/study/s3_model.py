"""S3's analytic model of one spurious timeout (the seed paper's section 5, eq. (1)-(10);
shared/docs/STUDIES.md, S3).

The model (the paper's Fig. 3): cwnd starts at ``w0`` and grows by a factor ``r`` per round trip
in slow start (r = 1.5 with delayed ACKs, 2 without) up to ``c`` = the path's BDP (= w_max). In
round ``t_s`` a delay spike of ``tau`` round trips makes the RTO fire spuriously while cwnd is
``w_s``. With F-RTO and the Eifel response, the sender retransmits one segment and slow start goes
on from ``w_s`` after the spike; without them, every segment of the window is sent again and
cwnd restarts at w_s / 2 (the ACK burst makes slow start up to it instant, as the paper
assumes) and grows by ``m`` per round trip in congestion avoidance.

Units: time in round trips, data and windows in segments, throughput in segments per round
trip (:meth:`StoModel.to_bps` converts). What the paper leaves implicit, read here so that every
piece is continuous where two regions meet:
- w_s = w0 r^(t_s - 1), the window of round t_s (rounds counted from 1), capped at c, as eq. (1)
  writes it; D_s = w0 (r^t_s - 1) / (r - 1), the segments of rounds 1..t_s (eq. (2); the
  source's typesetting lost the "- 1" inside the numerator's bracket: its sum needs it);
- t_1, the time cwnd reaches c with F-RTO, is eq. (5)'s denominator at D = D_1 (the spike
  included); t_2, the time it reaches c without, is eq. (6)'s at D = D_2;
- before the spike (D < D_s) both deliver D in log_r(D (r - 1) / w0 + 1) round trips (the paper:
  "D_s / t_s for both").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["StoModel"]


@dataclass(frozen=True)
class StoModel:
    """One spurious timeout in round ``t_s`` during slow start, a spike of ``tau`` round trips."""

    #: The path's BDP, segments (the paper's c = w_max = b_max d).
    c_pkts: float
    #: The round in which the spike hits (1 = the first).
    t_s: float
    #: The spike's length, round trips.
    tau: float
    #: Initial window, segments.
    w0_pkts: float = 3.0
    #: Slow-start growth per round trip: 1.5 with delayed ACKs, 2 without.
    r: float = 1.5
    #: Congestion-avoidance growth per round trip, segments (0.5 with delayed ACKs, 1 without).
    m: float = 0.5

    def __post_init__(self) -> None:
        for name, v, ok in (("c_pkts", self.c_pkts, self.c_pkts > 0), ("t_s", self.t_s, self.t_s >= 1),
                            ("tau", self.tau, self.tau >= 0), ("w0_pkts", self.w0_pkts, 0 < self.w0_pkts <= self.c_pkts),
                            ("r", self.r, self.r > 1), ("m", self.m, self.m > 0)):
            if not (math.isfinite(v) and ok):
                raise ValueError(f"StoModel.{name} = {v} is not accepted (c_pkts > 0, t_s >= 1, tau >= 0, "
                                 "0 < w0_pkts <= c_pkts, r > 1, m > 0)")

    @classmethod
    def at_window(cls, c_pkts: float, w_s_pkts: float, tau: float, **kw: float) -> StoModel:
        """The model with the spike hitting when cwnd is ``w_s_pkts`` (the paper's Fig. 4 cases:
        w = 3, c / 2, c)."""
        w0, r = kw.get("w0_pkts", 3.0), kw.get("r", 1.5)
        t_s = 1 + math.log(min(w_s_pkts, c_pkts) / w0, r)
        return cls(c_pkts=c_pkts, t_s=t_s, tau=tau, **kw)

    def _ss_rounds(self, d: float) -> float:
        """Round trips slow start needs to deliver ``d`` segments from w0."""
        return math.log(d * (self.r - 1) / self.w0_pkts + 1, self.r)

    @property
    def w_s(self) -> float:
        """cwnd when the spike hits (eq. (1))."""
        return min(self.w0_pkts * self.r ** (self.t_s - 1), self.c_pkts)

    @property
    def d_s(self) -> float:
        """Eq. (2): segments delivered before the spike."""
        return self.w0_pkts * (self.r**self.t_s - 1) / (self.r - 1)

    @property
    def d_1(self) -> float:
        """Eq. (3): segments delivered when slow start reaches c."""
        return (self.r * self.c_pkts - self.w0_pkts) / (self.r - 1)

    @property
    def d_2(self) -> float:
        """Eq. (4): segments delivered when congestion avoidance, after the timeout, reaches c."""
        return self.d_s + (self.c_pkts**2 - self.w_s**2 / 4) / (2 * self.m)

    @property
    def t_1(self) -> float:
        """When cwnd reaches c with F-RTO and Eifel (eq. (5)'s denominator at D_1)."""
        return self.tau + self._ss_rounds(self.d_1)

    def _ca_time(self, d: float) -> float:
        """Eq. (6)'s denominator: the time to deliver ``d`` without F-RTO and Eifel."""
        ws, m = self.w_s, self.m
        return self.t_s + self.tau + (-ws + math.sqrt(ws * ws + 8 * m * (d - self.d_s))) / (2 * m)

    @property
    def t_2(self) -> float:
        """When cwnd reaches c without F-RTO and Eifel (eq. (6)'s denominator at D_2)."""
        return self._ca_time(self.d_2)

    def unneeded_retrans_pkts(self, frto_eifel: bool) -> float:
        """Eq. (1): segments sent again for nothing: 1 with F-RTO and Eifel, else the window."""
        return 1.0 if frto_eifel else self.w_s

    def throughput(self, d_pkts: float, frto_eifel: bool) -> float:
        """Eq. (5)-(10): the mean throughput of a transfer of ``d_pkts`` segments, segments per
        round trip (T_1 with F-RTO and Eifel, T_2 without)."""
        d = d_pkts
        if d <= 0:
            raise ValueError(f"d_pkts = {d} is not accepted: a transfer of at least one segment")
        if d < self.d_s:  # done before the spike
            return d / self._ss_rounds(d)
        if frto_eifel:
            if d < self.d_1:
                return d / (self.tau + self._ss_rounds(d))  # (5)
            return d / (self.t_1 + (d - self.d_1) / self.c_pkts)  # (7), (9)
        if d < self.d_2:
            return d / self._ca_time(d)  # (6), (8)
        return d / (self.t_2 + (d - self.d_2) / self.c_pkts)  # (10)

    @staticmethod
    def to_bps(seg_per_rtt: float, mss_bytes: float, rtt_s: float) -> float:
        """Segments per round trip as bit/s."""
        return seg_per_rtt * mss_bytes * 8 / rtt_s
