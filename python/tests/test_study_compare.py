"""The comparison with the paper: who is faster per error rate (a tie when the 95 % intervals
overlap), the crossover at 100 ms, and the c and b ranges, on synthetic aggregated tables."""

from __future__ import annotations

import pandas as pd

from cclab.study.compare import compare_with_paper, crossover, winners


def _a(rtt, points):
    rows = []
    for loss, (linux, ios) in points.items():
        for cc, m in (("cubic", linux), ("cubic-ios", ios)):
            rows.append({"rtt_ms": rtt, "cc": cc, "loss": loss, "goodput_mbps_mean": m,
                         "goodput_mbps_ci95_low": m - 0.5, "goodput_mbps_ci95_high": m + 0.5})
    return pd.DataFrame(rows)


def test_the_paper_shape_at_100ms_is_recognised():
    a = _a(100, {1e-5: (30.0, 35.0), 1e-4: (20.0, 20.2), 1e-3: (5.0, 3.0)})
    summary, verdict = winners(a, 100)
    assert verdict == ["1e-05: iOS", "0.0001: tie", "0.001: Linux"]
    assert summary.startswith("mixed")
    assert crossover(verdict) == "between 1e-05 and 0.001 (iOS ahead up to 1e-05, Linux from 0.001)"


def test_no_difference_is_a_tie_everywhere():
    a = _a(25, {0.0: (60.0, 60.1), 1e-3: (10.0, 10.3)})
    summary, verdict = winners(a, 25)
    assert summary == "no significant difference at any error rate"
    assert crossover(verdict).startswith("none")


def test_compare_table_has_every_published_result():
    a = pd.concat([_a(r, {1e-4: (10.0, 12.0)}) for r in (25, 100, 550)])
    c = pd.DataFrame({"stack": ["cubic", "cubic-ios"], "c": [0.39, 0.25], "b": [2.7, 4.2], "inv_c": [1 / 0.39, 4.0],
                      "beta": [0.7, 0.8]})
    t = compare_with_paper(a, c).set_index("result")
    assert t.loc["throughput order at 25 ms, cubic vs cubic-ios", "cclab"].startswith("iOS above Linux")
    assert t.loc["crossover at 100 ms, cubic vs cubic-ios", "paper"].startswith("near 1e-4")
    assert not t.index.str.contains("cubic vs cubic-xnu").any()  # not run, not compared
    assert t.loc["c of Linux CUBIC", "cclab"].startswith("0.390-0.390")
    assert t.loc["c of Linux CUBIC", "paper"] == "0.37-0.4"
    assert t.loc["b vs 1/c of Linux CUBIC", "cclab"].startswith("at most 5 %")  # |2.7 - 2.564| / 2.564
    assert t.loc["W'/Wmax of iOS-like CUBIC (beta 0.8, C 0.25)", "cclab"].startswith("0.800-0.800")


def test_compare_table_sets_each_ios_model_against_linux():
    """With cubic-xnu in experiment A, its order is compared too, apart from cubic-ios's."""
    a = _a(550, {1e-4: (10.0, 12.0)})
    xnu = a[a["cc"] == "cubic-ios"].assign(cc="cubic-xnu", goodput_mbps_mean=8.0, goodput_mbps_ci95_low=7.5,
                                            goodput_mbps_ci95_high=8.5)
    a = pd.concat([a, xnu])
    t = compare_with_paper(a, pd.DataFrame(columns=["stack", "c", "b", "inv_c", "beta"])).set_index("result")
    assert t.loc["throughput order at 550 ms, cubic vs cubic-ios", "cclab"].startswith("iOS above Linux")
    assert t.loc["throughput order at 550 ms, cubic vs cubic-xnu", "cclab"].startswith("Linux above iOS")
    assert t.loc["throughput order at 550 ms, cubic vs cubic-xnu", "paper"] == "Linux above iOS"
    assert t.loc["c of Apple's CUBIC (XNU tcp_cubic.c)", "cclab"] == "(no usable cycles)"
