"""S3's analytic model (eq. (1)-(10) of the seed paper) against values computed by hand."""

from __future__ import annotations

import math

import pytest

from cclab.study.s3_model import StoModel

# w0 = 3, r = 2 (no delayed ACKs), m = 1, c = 10, spike in round 2 lasting 5 round trips.
M = StoModel(c_pkts=10, t_s=2, tau=5, w0_pkts=3, r=2, m=1)


def test_breakpoints_by_hand():
    assert M.w_s == 6  # 3 x 2^(2-1)
    assert M.d_s == 9  # 3 + 6
    assert M.d_1 == 17  # (2 x 10 - 3) / 1: slow start's geometric sum up to cwnd = c
    assert M.d_2 == 54.5  # 9 + (100 - 36/4) / 2
    assert M.t_1 == pytest.approx(5 + math.log2(17 / 3 + 1))
    assert M.t_2 == pytest.approx(14.0)  # 2 + 5 + (-6 + sqrt(36 + 8 x 45.5)) / 2 = 7 + 7
    assert M.unneeded_retrans_pkts(True) == 1 and M.unneeded_retrans_pkts(False) == 6


@pytest.mark.parametrize(
    ("d", "frto", "want"),
    [
        (12, True, 12 / (5 + math.log2(5))),  # (5): 1.638925
        (12, False, 12 / (7 + (-6 + math.sqrt(60)) / 2)),  # (6): 1.524204
        (30, True, 30 / (5 + math.log2(17 / 3 + 1) + 13 / 10)),  # (7): 3.319698
        (30, False, 30 / (7 + (-6 + math.sqrt(36 + 8 * 21)) / 2)),  # (8)
        (100, True, 100 / (5 + math.log2(17 / 3 + 1) + 83 / 10)),  # (9)
        (100, False, 100 / (14 + 45.5 / 10)),  # (10): 5.390836
        (6, True, 6 / math.log2(3)),  # before the spike: slow start only
    ],
)
def test_throughput_by_hand(d, frto, want):
    assert M.throughput(d, frto) == pytest.approx(want, rel=1e-12)


def test_regions_meet_and_frto_never_loses():
    for frto in (True, False):
        for edge in (M.d_s, M.d_1, M.d_2):
            below, above = M.throughput(edge * (1 - 1e-9), frto), M.throughput(edge, frto)
            if edge != M.d_s:  # the spike itself starts at D_s: a step there is the model's
                assert below == pytest.approx(above, rel=1e-6)
    for d in (10, 20, 40, 80, 200, 1000):
        assert M.throughput(d, True) >= M.throughput(d, False)


def test_the_papers_setting():
    # 384 kbit/s, RTT 300 ms, MSS 1460: c = 14400 B ~ 9.9 segments (the paper: "at most 10").
    c = 384e3 * 0.3 / 8 / 1460
    d = 300_000 / 1460
    early = StoModel.at_window(c, 3, tau=3)
    late = StoModel.at_window(c, c, tau=3)
    assert early.w_s == pytest.approx(3) and late.w_s == pytest.approx(c)
    assert early.unneeded_retrans_pkts(False) == pytest.approx(3)
    assert late.unneeded_retrans_pkts(False) == pytest.approx(c)
    # The paper's Fig. 4: with F-RTO/Eifel the throughput does not depend on where the spike
    # hits; without, an early spike costs most.
    t = [StoModel.at_window(c, w, tau=3).throughput(d, True) for w in (3, c / 2, c)]
    assert max(t) - min(t) < 1e-9
    u = [StoModel.at_window(c, w, tau=3).throughput(d, False) for w in (3, c / 2, c)]
    assert u[0] < u[1] < u[2] <= t[0]
    assert StoModel.to_bps(t[0], 1460, 0.3) < 384e3


def test_bad_parameters_are_named():
    with pytest.raises(ValueError, match="StoModel.r"):
        StoModel(c_pkts=10, t_s=1, tau=1, r=1)
    with pytest.raises(ValueError, match="StoModel.w0_pkts"):
        StoModel(c_pkts=2, t_s=1, tau=1, w0_pkts=3)
    with pytest.raises(ValueError, match="d_pkts"):
        M.throughput(0, True)
