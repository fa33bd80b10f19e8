"""`cclab study s1 --quick`: every figure and table, the paper's numbers beside ours, the
ablation's collapse table; a failed run is reported and the others finish."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from cclab.study.s1 import ABLATIONS, MIDDLEWARE_VARIANTS, PAPER_GAINS, S1Config, jain_index, plan, run_s1


def test_jain_index() -> None:
    assert jain_index([5, 5, 5]) == pytest.approx(1.0)
    assert jain_index([9, 0, 0]) == pytest.approx(1 / 3)


def test_the_quick_study_produces_every_figure_and_table(tmp_path: Path) -> None:
    from cclab.cli import cli

    out = tmp_path / "s1"
    res = CliRunner().invoke(cli, ["study", "s1", "--quick", "-o", str(out)])
    assert res.exit_code == 0, res.output
    figs = ["fig4_scaling", "mac_vs_n", "ablation", "stagger"] + [f"{stem}_{rates}" for rates in ("none", "arf") for stem in (
        "fig5_11_total", "fig12_jain", "per_terminal", "fig6_10_cwnd_smartphone", "fig6_10_cwnd_tablet")]
    for fig in figs:
        assert (out / "figures" / f"{fig}.png").stat().st_size > 5000, fig
        assert (out / "figures" / f"{fig}.svg").is_file()
    for table in ("scaling", "middleware", "ablation", "collapse", "compare_with_paper", "runs", "stations", "stagger"):
        assert (out / "tables" / f"{table}.csv").is_file(), table
    compare = pd.read_csv(out / "tables" / "compare_with_paper.csv")
    assert len(compare) == len(PAPER_GAINS)
    assert compare["cclab_none"].notna().all() and compare["cclab_arf"].notna().all()
    assert compare["cclab_none_stagger_2s"].notna().all() and compare["cclab_arf_stagger_2s"].notna().all()
    # The fairness ablation: staggered starts leave the terminals unfair without middleware, and the
    # improved table evens them out; started together there is little to even out.
    st = pd.read_csv(out / "tables" / "stagger.csv").set_index(["rates", "terminal", "n_terminals", "start_stagger_s"])
    for rates in ("none", "arf"):
        for t in ("smartphone", "tablet"):
            late, together = st.loc[(rates, t, 6, 2.0)], st.loc[(rates, t, 6, 0.0)]
            assert late["jain_off"] < together["jain_off"] - 0.05
            assert late["jain_gain"] > together["jain_gain"] + 0.05 and late["jain_improved"] > 0.9
    collapse = pd.read_csv(out / "tables" / "collapse.csv")
    assert list(collapse["ablation"]) == list(ABLATIONS)
    mw = pd.read_csv(out / "tables" / "middleware.csv")
    assert set(mw["variant"]) == set(MIDDLEWARE_VARIANTS)
    # The cell's MAC beside throughput: a fixed-rate cell stays at 54 Mbit/s; ARF steps the AP down
    # as collisions grow with N.
    sc = pd.read_csv(out / "tables" / "scaling.csv").set_index(["rates", "terminal", "n_terminals"])
    assert (sc.loc["none", "ap_rate_mbps_mean"] == 54.0).all()
    assert (sc.loc["none", "terminal_rate_min_mbps_mean"] == 54.0).all()
    for t in ("smartphone", "tablet"):
        assert sc.loc[("arf", t, 6), "ap_rate_mbps_mean"] < sc.loc[("arf", t, 1), "ap_rate_mbps_mean"] - 10
        assert sc.loc[("none", t, 6), "collision_prob_mean"] > sc.loc[("none", t, 1), "collision_prob_mean"]
    assert (sc["retry_drops_mean"] >= 0).all() and (sc["ap_queue_drops_pkts_mean"] >= 0).all()
    stations = pd.read_csv(out / "tables" / "stations.csv")
    one = stations[(stations["part"] == "scaling") & (stations["rates"] == "none") & (stations["n_terminals"] == 6)
                   & (stations["terminal"] == "smartphone")]
    assert list(one["station"]) == ["ap", "t1", "t2", "t3", "t4", "t5", "t6"]
    assert mw[mw["variant"] == "off"]["count_share_mean"].isna().all()
    assert mw[mw["variant"] == "improved"]["count_share_mean"].between(0, 1).all()
    html = (out / "report.html").read_text()
    for part in ("What differs from the paper, and why", "comes from rate adaptation", "AP rate Mbit/s",
                 "Each station's PHY rate per variant", "The paper beside cclab",
                 "the start schedule is the mechanism", "Fairness, explained by ablation", "The collapse, explained by ablation", "Terminal classes", "data:image/png"):
        assert part in html
    assert "paper vs cclab" in res.output


def test_a_failed_run_is_reported_and_the_others_finish(tmp_path: Path) -> None:
    cfg = S1Config.make(quick=True, variants=["off"], ablations=["baseline"], scaling_n=[1, 2], middleware_n=[2],
                        rates=["none"])
    bad = dict(MIDDLEWARE_VARIANTS)
    import cclab.study.s1 as s1

    s1.MIDDLEWARE_VARIANTS["broken"] = {"table": "no-such-table"}
    try:
        cfg.variants = ["off", "broken"]
        n_specs = len(plan(cfg))
        res = run_s1(tmp_path / "s1", cfg)
    finally:
        s1.MIDDLEWARE_VARIANTS.clear()
        s1.MIDDLEWARE_VARIANTS.update(bad)
    assert len(res.failures) == 2  # both classes' "broken" runs
    assert "middleware.table" in " ".join(res.failures["error"])
    assert len(res.runs) == n_specs - 2
    assert (tmp_path / "s1" / "report.html").read_text().count("Failed runs") == 1


def test_mac_columns_come_from_each_station_s_counters() -> None:
    from cclab.study.s1_mac import add_mac_columns, stations_table

    runs = pd.DataFrame([
        {"n_terminals": 2, "cell.t1.mac.attempts": 100, "cell.t1.mac.collisions": 10, "cell.t1.mac.retry_drops": 1,
         "cell.t1.mac.mean_rate_bps": 48e6, "cell.t2.mac.attempts": 300, "cell.t2.mac.collisions": 50,
         "cell.t2.mac.retry_drops": 0, "cell.t2.mac.mean_rate_bps": 24e6, "cell.ap.mac.attempts": 100,
         "cell.ap.mac.collisions": 40, "cell.ap.mac.collision_prob": 0.4, "cell.ap.mac.retry_drops": 2,
         "cell.ap.mac.mean_rate_bps": 12e6, "cell.ap.dropped_queue_full_pkts": 7, "middleware_terminals_mean": 1.5},
        {"n_terminals": 1},  # a run without counters (an old cache): NaN, not zeros
    ])
    r = add_mac_columns(runs)
    a = r.iloc[0]
    assert a["ap_rate_mbps"] == 12 and a["terminal_rate_mbps"] == 36 and a["terminal_rate_min_mbps"] == 24
    assert a["collision_prob"] == pytest.approx(100 / 500) and a["ap_collision_prob"] == 0.4
    assert a["retry_drops"] == 3 and a["ap_queue_drops_pkts"] == 7 and a["count_share"] == 0.75
    assert r.iloc[1][["ap_rate_mbps", "collision_prob", "retry_drops", "ap_queue_drops_pkts"]].isna().all()
    st = stations_table(r.assign(part="x"), ["part"])
    assert list(st["station"]) == ["ap", "t1", "t2"] and list(st["rate_mbps"]) == [12, 48, 24]


def test_on_the_kernel_every_grid_run_has_a_simulator_twin_and_the_report_pairs_them(tmp_path: Path) -> None:
    from cclab.study.s1_parity import middleware_gains, parity_table

    specs = plan(S1Config.make(quick=True, backend="kernel"))
    kernel = [s for s in specs if s.backend == "kernel"]
    twins = [s for s in specs if dict(s.labels).get("backend") == "sim"]
    assert kernel and len(twins) == len(kernel) and not [s for s in specs if dict(s.labels)["part"] == "ablation"]
    for k, t in zip(kernel, twins):
        assert t.backend == "sim" and (t.source, t.overrides, t.seed) == (k.source, k.overrides, k.seed)
        assert dict(k.labels)["backend"] == "kernel" and dict(t.labels) == dict(k.labels) | {"backend": "sim"}
        assert t.key() != k.key()
    # Pairing: a kernel run 10 % above its twin reads 1.10; the gains are per backend.
    rows = []
    for k in kernel:
        lab = dict(k.labels)
        sim = 10.0 + lab["n_terminals"] + (2.0 if lab["variant"] == "improved" else 0.0)
        rows.append(lab | {"ok": True, "total_mbps": 1.1 * sim, "jain": 0.9})
        rows.append(lab | {"backend": "sim", "ok": True, "total_mbps": sim, "jain": 0.8})
    rows.append(dict(kernel[0].labels) | {"ok": False, "total_mbps": float("nan"), "jain": float("nan")})
    p = parity_table(pd.DataFrame(rows))
    assert len(p) == len(kernel) and p["kernel_over_sim"].round(9).eq(1.1).all()
    assert (p["runs_sim"] == 1).all() and (p["jain_sim"] == 0.8).all()
    g = middleware_gains(p).set_index(["rates", "terminal", "n_terminals"])
    assert g.loc[("none", "smartphone", 3), "throughput_gain_sim"] == pytest.approx(2 / 13)
    assert g.loc[("none", "smartphone", 3), "throughput_gain_kernel"] == pytest.approx(2 / 13)
    assert (g["fairness_gain_kernel"] == 0).all()
    assert parity_table(pd.DataFrame([r for r in rows if r["backend"] != "sim"])).empty
