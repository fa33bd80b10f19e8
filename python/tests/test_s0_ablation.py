"""s0_ablation's reading of an ablation, on made-up runs (no simulator): the paired significance,
the share of the gap each variant takes away, and the conclusion naming the difference that makes
the order, or saying the stacks are level."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cclab.study import s0_ablation as ab


def _runs(cells: dict[str, dict[tuple[int, float], float]], seeds: int = 5, noise: float = 0.1) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    jitter = rng.normal(0, noise, seeds)  # the same per seed for every variant: paired
    rows = []
    for v, by in cells.items():
        for (rtt, loss), mbps in by.items():
            for s in range(seeds):
                rows.append({"variant": v, "rtt_ms": rtt, "loss": loss, "seed": s, "ok": True,
                             "goodput_bps": (mbps + jitter[s] + rng.normal(0, noise / 10)) * 1e6})
    return pd.DataFrame(rows)


def _cells(at25: float, at550: float) -> dict[tuple[int, float], float]:
    return {(25, 1e-4): at25, (25, 1e-2): at25 / 10, (550, 1e-4): at550, (550, 1e-2): at550 / 10}


def test_conclusion_names_the_difference_that_closes_the_gap():
    runs = _runs({
        "cubic": _cells(40, 6.0),
        "cubic-xnu": _cells(44, 6.0),          # above at 25 ms, level at 550 ms
        "xnu-friendly-ai": _cells(40.4, 6.0),  # takes 90 % of the 25 ms gap away
        "xnu-deflate": _cells(43.6, 6.0),      # 10 %
        "xnu-first-fc": _cells(44, 6.5),       # nothing at 25 ms; moves 550 ms only
        "linux+no-hystart": _cells(40, 6.0),
    })
    t = ab.table(runs)
    assert list(t["variant"]) == ["cubic", "cubic-xnu", "xnu-friendly-ai", "xnu-first-fc", "xnu-deflate",
                                  "linux+no-hystart"]
    assert t.set_index("variant").loc["cubic-xnu", "25 ms / 0.0001"] == pytest.approx(44, abs=0.05)
    e = ab.effects(t, runs).set_index(["rtt_ms", "variant"])
    assert e.loc[(25, "cubic-xnu"), "order"] == "+ +"
    assert e.loc[(550, "cubic-xnu"), "order"] == "= ="
    assert abs(e.loc[(25, "xnu-friendly-ai"), "gap_share_pct"] - 90) < 3
    assert abs(e.loc[(25, "xnu-deflate"), "gap_share_pct"] - 10) < 3
    assert abs(e.loc[(25, "xnu-first-fc"), "gap_share_pct"]) < 3
    assert e.loc[(25, "xnu-friendly-ai"), "order_flips"] == 0  # still (just) above: 40.4 vs 40
    text = ab.conclusion(t, ab.effects(t, runs))
    assert len(text) == 2
    assert text[0].startswith("At 25 ms (paper: iOS above Linux): cubic-xnu above cubic at 0.0001, 0.01;")
    assert "Where cubic-xnu is above, xnu-friendly-ai (Reno-friendly window grows" in text[0]
    assert "removes 90 % of that gap" in text[0] and "below" not in text[0]
    assert text[1].startswith("At 550 ms (paper: Linux above iOS): level (no significant paired difference) at "
                              "0.0001, 0.01")
    assert "largest move is xnu-first-fc" in text[1]  # the one that moves 550 ms most


def test_conclusion_treats_each_direction_apart():
    # cubic-xnu above at 1e-2 (deflation makes it), below at 1e-4 (the first-loss FC makes it).
    cells = {"cubic": {(100, 1e-4): 20.0, (100, 1e-2): 1.0}, "cubic-xnu": {(100, 1e-4): 19.0, (100, 1e-2): 1.5},
             "xnu-deflate": {(100, 1e-4): 19.0, (100, 1e-2): 1.0}, "xnu-first-fc": {(100, 1e-4): 20.0, (100, 1e-2): 1.5}}
    runs = _runs(cells, noise=0.01)
    t = ab.table(runs)
    e = ab.effects(t, runs).set_index("variant")
    assert e.loc["cubic-xnu", "order"] == "- +"
    assert e.loc["xnu-deflate", "share_above_pct"] == pytest.approx(100, abs=2)
    assert e.loc["xnu-first-fc", "share_below_pct"] == pytest.approx(100, abs=2)
    assert abs(e.loc["xnu-deflate", "share_below_pct"]) < 2
    (text,) = ab.conclusion(t, ab.effects(t, runs))
    assert "Where cubic-xnu is above, xnu-deflate (no deflation" in text
    assert "Where cubic-xnu is below, xnu-first-fc (W(last_max) starts at 0" in text


def test_plan_turns_each_switch_and_reuses_experiment_a_seeds():
    specs = ab.plan({25: "s0-25ms", 550: "s0-550ms"}, [1e-4], reps=2, duration_s=5, quick=False)
    assert len(specs) == 2 * len(ab.VARIANTS) * 2
    by = {(dict(s.labels)["variant"], dict(s.labels)["rtt_ms"]): dict(s.overrides) for s in specs}
    assert by[("xnu-friendly-ai", 25)]["flows[0].cc_params"] == {"friendly_ai_above_wmax": False}
    assert by[("xnu-rto", 25)]["flows[0].rto_min_ms"] == 275 and by[("xnu-rto", 550)]["flows[0].rto_min_ms"] == 200
    assert "flows[0].cc_params" not in by[("cubic-xnu", 25)]  # the same scenario as experiment A's
    assert {s.seed for s in specs} == {s.seed for s in specs if dict(s.labels)["variant"] == "cubic"}
    quick = ab.plan({25: "s0-25ms"}, [1e-4], reps=1, duration_s=5, quick=True)
    assert [dict(s.labels)["variant"] for s in quick] == ab.QUICK_VARIANTS

