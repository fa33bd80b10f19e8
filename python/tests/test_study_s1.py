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
    figs = ["fig4_scaling", "ablation"] + [f"{stem}_{rates}" for rates in ("none", "arf") for stem in (
        "fig5_11_total", "fig12_jain", "per_terminal", "fig6_10_cwnd_smartphone", "fig6_10_cwnd_tablet")]
    for fig in figs:
        assert (out / "figures" / f"{fig}.png").stat().st_size > 5000, fig
        assert (out / "figures" / f"{fig}.svg").is_file()
    for table in ("scaling", "middleware", "ablation", "collapse", "compare_with_paper", "runs"):
        assert (out / "tables" / f"{table}.csv").is_file(), table
    compare = pd.read_csv(out / "tables" / "compare_with_paper.csv")
    assert len(compare) == len(PAPER_GAINS)
    assert compare["cclab_none"].notna().all() and compare["cclab_arf"].notna().all()
    collapse = pd.read_csv(out / "tables" / "collapse.csv")
    assert list(collapse["ablation"]) == list(ABLATIONS)
    mw = pd.read_csv(out / "tables" / "middleware.csv")
    assert set(mw["variant"]) == set(MIDDLEWARE_VARIANTS)
    html = (out / "report.html").read_text()
    for part in ("The paper beside cclab", "The collapse, explained by ablation", "Terminal classes", "data:image/png"):
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
