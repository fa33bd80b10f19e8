"""The S3 study: the scenario builder, the shipped files, and `cclab study s3 --quick`."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

import pandas as pd

from cclab.study.s3 import PAPER_RESULTS, S3Config, compare_with_paper, one_sto_gains, one_sto_goodput, plan, run_s3
from cclab.study.s3_scenarios import SHIPPED, s3_scenario

from .conftest import needs_core

ROOT = Path(__file__).resolve().parents[2]


def test_shipped_s3_scenarios_are_the_builder_s() -> None:
    for name, kw in SHIPPED.items():
        for where in (ROOT / "scenarios", ROOT / "python" / "cclab" / "scenarios"):
            assert tomllib.loads((where / f"{name}.toml").read_text()) == s3_scenario(**kw), (where, name)


def test_the_kernel_parity_part_pairs_each_run_on_both_backends() -> None:
    cfg = S3Config.make(quick=True, backend="kernel")
    specs = [s for s in plan(cfg, spike_times={(c, k): 1.0 for c in ("w0", "c/2", "c") for k in ("acks", "segments")})
             if dict(s.labels)["part"] == "parity"]
    assert len(specs) == 2 * 2 * 2  # sizes x F-RTO on/off x backends, one repetition
    by_backend = {b: [s for s in specs if s.backend == b] for b in ("sim", "kernel")}
    assert [s.source for s in by_backend["sim"]] == [s.source for s in by_backend["kernel"]]
    assert [s.seed for s in by_backend["sim"]] == [s.seed for s in by_backend["kernel"]]


@needs_core
def test_the_one_sto_gain_pools_connections_as_fig_8_does() -> None:
    """Fig. 8 and the paper table read one table: per size and detection, the mean goodput of all
    connections with one STO, whatever their mobility class and RTO profile (not the mean of
    per-class means, which would weigh the one walking connection as much as the three on the
    train)."""
    rows = []
    for det, walking, train in (("none", [100.0], [200.0, 200.0, 200.0]), ("frto+eifel", [110.0], [230.0] * 3)):
        for mob, profile, xs in (("walking", "standard", walking), ("express-train", "proposed", train)):
            rows += [{"part": "detection", "size": "300KB", "detection": det, "mobility": mob, "profile": profile,
                      "sto_count": 1, "goodput_bps": x * 1e3} for x in xs]
    # Connections without exactly one STO stay out.
    rows.append({"part": "detection", "size": "300KB", "detection": "none", "mobility": "walking",
                 "profile": "standard", "sto_count": 2, "goodput_bps": 1.0})
    pooled = one_sto_goodput(pd.DataFrame(rows)).set_index("detection")
    assert pooled.loc["none", "one_sto_connections"] == 4
    assert pooled.loc["none", "one_sto_goodput_kbps"] == pytest.approx(175.0)  # (100 + 3 * 200) / 4
    assert pooled.loc["frto+eifel", "one_sto_goodput_kbps"] == pytest.approx(200.0)  # (110 + 3 * 230) / 4
    gain = one_sto_gains(pooled.reset_index())["300KB"]
    assert gain == pytest.approx(200 / 175 - 1)  # the mean of per-class gains would be +12.5 %
    table = compare_with_paper(pd.DataFrame(), pd.DataFrame(), pooled.reset_index()).set_index("result")
    assert table.loc[PAPER_RESULTS[-1][0], "cclab"] == "+14 % to +14 %"


def test_quick_study_writes_every_figure_and_table(tmp_path: Path) -> None:
    res = run_s3(tmp_path, S3Config.make(quick=True, jobs=1))
    assert res.failures.empty, res.failures
    assert set(res.figures) == {"sto_vs_rto", "sto_per_mb", "unneeded_retrans", "one_sto_throughput", "model_vs_sim",
                                "spike_cwnd"}
    for p in res.figures.values():
        assert Path(p).is_file() and Path(p).stat().st_size > 10_000
    for name in ("sto_vs_rto", "detection", "model_vs_sim", "undetected_reasons", "compare_with_paper", "connections",
                 "runs"):
        assert (tmp_path / "tables" / f"{name}.csv").is_file(), name
    # (C): one STO per spike; with F-RTO + Eifel one unneeded retransmission per STO and the
    # throughput the same wherever the spike hits (the paper's Figs. 4-5); without, a window's worth.
    m = res.model
    on, off = m[m["detection"] == "frto+eifel"], m[m["detection"] == "none"]
    assert (m["sim_sto_count"] >= 1).all(), m
    assert (on["sim_spurious_retrans_pkts"] == on["sim_sto_count"]).all(), m
    assert (off["sim_spurious_retrans_pkts"] > off["sim_sto_count"]).all(), m
    assert on["sim_goodput_kbps"].max() / on["sim_goodput_kbps"].min() < 1.02, m
    assert (on.set_index("case")["sim_goodput_kbps"] > off.set_index("case")["sim_goodput_kbps"]).all(), m
    # The model and the simulation within 20 % (the paper's emulator: 15 % below its model).
    assert ((m["sim_goodput_kbps"] / m["model_goodput_kbps"]).between(0.8, 1.2)).all(), m
    # (A): every web-mix connection completes, and a 4 s RTO has no more STOs than a 1 s one.
    r = res.rto.set_index("rto_s")
    assert (r["completed"] == r["connections"]).all(), res.rto
    assert r.loc[4.0, "sto_share"] <= r.loc[1.0, "sto_share"], res.rto
    # (B): without detection nothing is detected; every STO of a detecting sender with
    # timestamps is detected.
    d = res.detection
    assert (d[d["detection"] == "none"]["sto_detected"] == 0).all(), d
    on_b = d[d["detection"] == "frto+eifel"]
    assert (on_b["sto_detected"] == on_b["sto"]).all(), d
    text = (tmp_path / "report.html").read_text()
    assert "S3" in text and text.count("data:image/png;base64,") >= 6
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed (make setup-test installs it from Debian as root)")
    shot = tmp_path / "report.png"
    run = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                          "--window-size=1200,2400", f"--screenshot={shot}", (tmp_path / "report.html").as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert shot.is_file() and shot.stat().st_size > 50_000, run.stderr[-2000:]
