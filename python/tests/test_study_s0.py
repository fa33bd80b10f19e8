"""`cclab study s0 --quick` end to end: every figure and table (the three stacks cubic,
cubic-ios, cubic-xnu, and the ablation "why the order"), method C's c of Linux CUBIC and XNU,
determinism of the tables, and the report opened in headless Chromium (screenshot)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pandas as pd
import pytest

from .conftest import needs_core


@needs_core
def _study(out):
    r = subprocess.run([sys.executable, "-m", "cclab", "study", "s0", "--quick", "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("study") / "s0"
    return out, _study(out)


@needs_core
def test_study_s0_quick_is_deterministic(quick, tmp_path):
    out, _ = quick
    _study(tmp_path / "again")
    for name in ("experiment_a", "experiment_a_runs", "experiment_b", "method_c", "compare_with_paper", "ablation",
                 "ablation_effects", "ablation_runs"):
        a = pd.read_csv(out / "tables" / f"{name}.csv").drop(columns=["run_s", "cached"], errors="ignore")
        b = pd.read_csv(tmp_path / "again" / "tables" / f"{name}.csv").drop(columns=["run_s", "cached"], errors="ignore")
        pd.testing.assert_frame_equal(a, b, check_exact=True)


@needs_core
def test_study_s0_quick_rerun_computes_nothing(quick):
    out, _ = quick
    r = _study(out)
    runs = pd.read_csv(out / "tables" / "experiment_a_runs.csv")
    assert runs["cached"].all() and "0 failed" in r.stdout


@needs_core
def test_study_s0_quick_writes_every_figure_table_and_a_report_chromium_opens(quick, tmp_path):
    out, r = quick
    assert "S0: the paper vs cclab" in r.stdout
    figs = out / "figures"
    for name in ("fig4_throughput_25ms", "fig5_throughput_100ms", "fig6_throughput_550ms", "fig8_cwnd_550ms",
                 "fig10_fit_cubic_550ms", "fig10_fit_cubic-ios_550ms", "fig10_fit_cubic-xnu_550ms", "ablation"):
        assert (figs / f"{name}.png").stat().st_size > 10_000, name
        assert (figs / f"{name}.svg").stat().st_size > 10_000, name
    for name in ("experiment_a", "experiment_a_runs", "experiment_b", "method_c", "compare_with_paper", "ablation",
                 "ablation_effects", "ablation_runs"):
        assert (out / "tables" / f"{name}.csv").is_file() and (out / "tables" / f"{name}.parquet").is_file()
    a = pd.read_csv(out / "tables" / "experiment_a.csv")
    assert len(a) == 3 * 3 * 3 and (a["n"] == 2).all()  # 3 paths x 3 error rates x 3 stacks, 2 runs each
    assert set(a["cc"]) == {"cubic", "cubic-ios", "cubic-xnu"}
    c = pd.read_csv(out / "tables" / "method_c.csv")
    linux = c[c["stack"] == "cubic"]
    assert len(linux) >= 3 and linux["c"].between(0.35, 0.42).all()
    xnu = c[c["stack"] == "cubic-xnu"]
    assert len(xnu) >= 3 and xnu["beta"].between(0.68, 0.72).all()  # XNU's backoff 0.3
    cmp = pd.read_csv(out / "tables" / "compare_with_paper.csv")
    assert cmp["result"].str.contains("cubic vs cubic-xnu").sum() == 4  # 3 orders + the crossover
    report = out / "report.html"
    text = report.read_text()
    assert text.count("data:image/png;base64,") >= 8 and "Comparison with the paper" in text
    assert "Why the order: ablation" in text and all(f"At {rtt} ms (paper: " in text for rtt in (25, 100, 550))
    assert "s0-25ms.toml" in text and "seed" in text
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed (make setup-test installs it from Debian as root)")
    shot = tmp_path / "report.png"
    run = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1200,2400",
         "--enable-logging=stderr", "--v=0", f"--screenshot={shot}", report.as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert shot.is_file() and shot.stat().st_size > 50_000, run.stderr[-2000:]
    assert "Uncaught" not in run.stderr and "CONSOLE(" not in run.stderr, run.stderr[-2000:]
    from PIL import Image

    img = Image.open(shot).convert("L")
    lo, hi = img.getextrema()
    assert hi - lo > 100  # not a blank page


@needs_core
def test_study_s0_quick_ablation_table(quick):
    """The ablation: every quick variant on 3 RTTs x 2 error rates with experiment A's seeds, its
    two stacks' cells equal to experiment A's means (the same runs), and each switch moving
    something: XNU's Reno-friendly rate lowers cubic-xnu at 25 ms / 1e-2, where it is above cubic."""
    out, r = quick
    from cclab.study.s0_ablation import QUICK_VARIANTS

    t = pd.read_csv(out / "tables" / "ablation.csv")
    assert list(t["variant"]) == QUICK_VARIANTS and (t["n"] == 2).all()
    cells = [f"{rtt} ms / {x:g}" for rtt in (25, 100, 550) for x in (1e-4, 1e-2)]
    assert [c for c in t.columns if " ms / " in c] == cells
    a = pd.read_csv(out / "tables" / "experiment_a.csv").set_index(["cc", "rtt_ms", "loss"])
    tv = t.set_index("variant")
    for cc in ("cubic", "cubic-xnu"):
        for rtt in (25, 100, 550):
            for x in (1e-4, 1e-2):
                assert tv.loc[cc, f"{rtt} ms / {x:g}"] == pytest.approx(a.loc[(cc, rtt, x), "goodput_mbps_mean"])
    c = "25 ms / 0.01"
    assert tv.loc["cubic-xnu", c] > tv.loc["cubic", c] * 1.1
    assert tv.loc["xnu-friendly-ai", c] < tv.loc["cubic-xnu", c] * 0.95
    e = pd.read_csv(out / "tables" / "ablation_effects.csv")
    assert set(e["rtt_ms"]) == {25, 100, 550} and len(e) == 3 * len(QUICK_VARIANTS)
    assert "why the order: At 25 ms" in r.stdout.replace("\n", " ")
