"""The S4 study: the chain's scenario builder and `cclab study s4 --quick`."""

from __future__ import annotations

import tomllib
from pathlib import Path

from cclab.study.s4 import S4Config, run_s4
from cclab.study.s4_scenarios import SHIPPED, s4_scenario

from .conftest import needs_core

ROOT = Path(__file__).resolve().parents[2]


def test_shipped_s4_scenarios_are_the_builder_s() -> None:
    for name, kw in SHIPPED.items():
        for where in (ROOT / "scenarios", ROOT / "python" / "cclab" / "scenarios"):
            assert tomllib.loads((where / f"{name}.toml").read_text()) == s4_scenario(**kw), (where, name)


@needs_core
def test_quick_study_writes_every_figure_and_table(tmp_path: Path) -> None:
    cfg = S4Config.make(quick=True, duration_s=6.0, udp_duration_s=2.0, jobs=1, spacings_m=[0.5, 1.0])
    res = run_s4(tmp_path, cfg)
    assert res.failures.empty, res.failures
    assert set(res.figures) == {"udp_sweep", "tcp_vs_hops", "exponents", "mathis"}
    for p in res.figures.values():
        assert Path(p).is_file() and Path(p).stat().st_size > 10_000
    for name in ("udp_sweep", "tcp", "hop_fits", "mathis_fits", "compare_with_paper", "runs"):
        assert (tmp_path / "tables" / f"{name}.csv").is_file()
    assert res.compare["cclab"].notna().all(), res.compare
    clean = res.fits[(res.fits["setting"] == "clean") & (res.fits["cc"] == "cubic")]["exponent"]
    lossy = res.fits[res.fits["setting"] == "fer0.4-4att"]["exponent"]
    # The clean chain shares one channel among n hops (about n^-1); residual per-hop loss
    # makes it fall faster.
    assert ((clean > 0.8) & (clean < 1.25)).all(), res.fits
    assert (lossy > clean.max() + 0.2).all(), res.fits
    # The residual per-hop loss the MAC leaves: none on the clean chain, some on the lossy
    # settings (at least the floor's fer^attempts, collisions add to it).
    r = res.residual.set_index(["setting", "hops"])
    assert (r.loc["clean", "mac_residual_loss_mean"] < 1e-3).all(), res.residual
    for name in cfg.lossy:
        got = r.loc[name, "mac_residual_loss_mean"]
        assert (got > 0.5 * r.loc[name, "nominal_p"]).all(), res.residual
    assert (tmp_path / "tables" / "residual_loss.csv").is_file()
    assert "mac_residual_loss" in res.runs and "mac_residual_loss_mean" in res.tcp
    # At low rates the chain delivers what is sent.
    low = res.udp[res.udp["rate_bps"] <= 1e6]
    assert (low["udp_receive_rate_bps"] > 0.97 * low["udp_send_rate_bps"]).all()
    assert "S4" in (tmp_path / "report.html").read_text()


def test_the_kernel_part_runs_each_point_on_both_backends() -> None:
    """With ``backend = "kernel"`` the plan adds, per hop count, CUBIC, BBR and UDP above capacity
    on the simulator and on the kernel with the same scenario and seed (nothing else changes)."""
    from cclab.study.s4 import plan

    sim = plan(S4Config.make(quick=True))
    both = plan(S4Config.make(quick=True, backend="kernel"))
    extra = both[len(sim):]
    assert [s.labels for s in both[:len(sim)]] == [s.labels for s in sim]
    assert len(extra) == 4 * 3 * 2
    by = {}
    for s in extra:
        lab = dict(s.labels)
        assert lab["part"] == "kernel" and s.backend == lab["backend"]
        by.setdefault((lab["hops"], lab["cc"]), []).append(s)
    for (hops, cc), (a, b) in by.items():
        assert {a.backend, b.backend} == {"sim", "kernel"}
        assert a.source == b.source and a.seed == b.seed and a.key() != b.key()
        flow = a.source["flows"][0]
        assert flow["receiver"] == f"n{hops}"
        assert flow.get("transport") == "udp" if cc == "udp" else flow["cc"] == cc


def test_kernel_table_puts_the_backends_side_by_side() -> None:
    import pandas as pd

    from cclab.study.s4 import kernel_table

    runs = pd.DataFrame([
        {"part": "kernel", "ok": True, "hops": 2, "cc": "cubic", "backend": "sim", "goodput_bps": 15e6},
        {"part": "kernel", "ok": True, "hops": 2, "cc": "cubic", "backend": "kernel", "goodput_bps": 13e6},
        {"part": "kernel", "ok": True, "hops": 2, "cc": "cubic", "backend": "kernel", "goodput_bps": 14e6},
        {"part": "kernel", "ok": False, "hops": 2, "cc": "cubic", "backend": "kernel", "goodput_bps": 1e6},
        {"part": "tcp", "ok": True, "hops": 2, "cc": "cubic", "backend": None, "goodput_bps": 99e6},
    ])
    t = kernel_table(runs)
    assert len(t) == 1
    r = t.iloc[0]
    assert (r["goodput_mbps_sim"], r["goodput_mbps_kernel"]) == (15.0, 13.5)
    assert (r["runs_sim"], r["runs_kernel"]) == (1, 2)
    assert r["kernel_over_sim"] == 13.5 / 15.0
