import json

import pytest
from click.testing import CliRunner

from cclab.cli import cli
from cclab.scenario import shipped_scenarios

from .conftest import needs_core


@pytest.fixture
def runner():
    return CliRunner()


@pytest.mark.parametrize("args", [[], ["run"], ["validate"], ["presets"], ["sweep"]])
def test_help_shows_examples(runner, args):
    r = runner.invoke(cli, [*args, "--help"])
    assert r.exit_code == 0
    assert "Example" in r.output


def test_validate_shipped(runner):
    r = runner.invoke(cli, ["validate", *map(str, shipped_scenarios().values())])
    assert r.exit_code == 0, r.output
    assert r.output.count(": ok") == len(shipped_scenarios())


def test_validate_bad_file_names_fields(runner, tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text(
        'duration_s = 10\n[bottleneck]\nrate_bps = "-1Mbps"\nloss = 1.5\n[[flows]]\nmss_bytes = 0\n'
    )
    r = runner.invoke(cli, ["validate", str(f)])
    assert r.exit_code == 2
    for field in ("bottleneck.rate_bps", "bottleneck.loss", "flows[0].mss_bytes"):
        assert field in r.output
    assert "Traceback" not in r.output


@needs_core
def test_run_writes_everything(runner, tmp_path):
    out = tmp_path / "o"
    r = runner.invoke(cli, ["run", "s0-25ms", "-o", str(out), "--set", "duration_s=5", "--seed", "2"])
    assert r.exit_code == 0, r.output
    for name in ("traces.parquet", "links.parquet", "events.parquet", "summary.json", "cwnd.png"):
        assert (out / name).stat().st_size > 0
    s = json.loads((out / "summary.json").read_text())
    assert s["seed"] == 2 and s["scenario"]["duration_s"] == 5


@needs_core
def test_run_unknown_algorithm_exit_2(runner, tmp_path):
    r = runner.invoke(cli, ["run", "s0-25ms", "-o", str(tmp_path), "--set", "flows[0].cc=tahoe"])
    assert r.exit_code == 2
    assert "flows[0].cc" in r.output and "Traceback" not in r.output


@needs_core
def test_presets_lists_algorithms(runner):
    r = runner.invoke(cli, ["presets"])
    assert r.exit_code == 0
    for name in ("cubic", "reno", "cubic-ios", "s0-25ms"):
        assert name in r.output


@needs_core
def test_sweep_runs_a_grid_summarises_and_resumes_from_its_cache(runner, tmp_path):
    args = ["sweep", "s0-25ms", "--grid", "bottleneck.loss=1e-3,1e-2", "--reps", "2", "--set", "duration_s=3",
            "--jobs", "1", "-o", str(tmp_path)]
    r = runner.invoke(cli, args)
    assert r.exit_code == 0, r.output
    import pandas as pd

    summary = pd.read_csv(tmp_path / "summary.csv")
    runs = pd.read_parquet(tmp_path / "runs.parquet")
    assert list(summary["bottleneck.loss"]) == [1e-3, 1e-2] and list(summary["n"]) == [2, 2]
    assert len(runs) == 4 and runs["ok"].all() and runs["seed"].nunique() == 2
    # More loss, less goodput; the table shows it in Mbit/s.
    assert summary["goodput_bps_mean"].iloc[0] > summary["goodput_bps_mean"].iloc[1]
    assert "Mbit/s" in r.output and "4 runs (0 from the cache)" in r.output
    again = runner.invoke(cli, args)
    assert again.exit_code == 0 and "4 runs (4 from the cache)" in again.output


def test_sweep_refuses_a_bad_grid_before_running(runner, tmp_path):
    r = runner.invoke(cli, ["sweep", "s0-25ms", "--grid", "bottleneck.loss=1e-3,7", "-o", str(tmp_path)])
    assert r.exit_code == 2 and "bottleneck.loss" in r.output
    r = runner.invoke(cli, ["sweep", "s0-25ms", "--grid", "bottleneck.loss", "-o", str(tmp_path)])
    assert r.exit_code == 2 and "--grid" in r.output
    assert not (tmp_path / "runs.csv").exists()
