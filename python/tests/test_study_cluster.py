"""Studies at scale (issue 18 part 6): a sweep killed half-way resumes where it stopped, and a
two-node Ray cluster on this machine runs `cclab study s0` with the local executor's results,
with no file system assumed shared between the driver and the nodes."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from .conftest import needs_core

pytestmark = needs_core

SWEEP = ["sweep", "s0-25ms", "--grid", "bottleneck.loss=1e-4,1e-3", "--reps", "12", "--set", "duration_s=8",
         "--jobs", "1"]


def _cclab(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cclab", *args], capture_output=True, text=True, timeout=600, **kw)


def _results(out: Path) -> pd.DataFrame:
    runs = pd.read_csv(out / "runs.csv")
    return runs.drop(columns=["run_s"]).sort_values(["bottleneck.loss", "seed"]).reset_index(drop=True)


def test_a_sweep_killed_half_way_resumes_where_it_stopped(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    p = subprocess.Popen([sys.executable, "-m", "cclab", *SWEEP, "-o", str(out)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    done: list[Path] = []
    while time.monotonic() < deadline and len(done) < 8 and p.poll() is None:
        time.sleep(0.05)
        done = list((out / "cache").glob("*/result.json"))
    assert p.poll() is None, "the sweep ended before it could be killed: make its runs longer"
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    kept = len(list((out / "cache").glob("*/result.json")))
    assert 8 <= kept < 24 and not (out / "runs.csv").exists()
    again = _cclab(*SWEEP, "-o", str(out))
    assert again.returncode == 0, again.stderr
    assert f"24 runs ({kept} from the cache)" in again.stdout, again.stdout
    # Nothing half-written was taken for a result: the resumed sweep equals an uninterrupted one.
    fresh = _cclab(*SWEEP, "-o", str(tmp_path / "fresh"))
    assert fresh.returncode == 0, fresh.stderr
    pd.testing.assert_frame_equal(_results(out), _results(tmp_path / "fresh"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def two_node_cluster(tmp_path: Path):
    """A Ray head and a second node started by `ray start`, each with one CPU and its own custom
    resource; stopped afterwards (`ray stop`, which stops every Ray process of this machine)."""
    pytest.importorskip("ray", reason="Ray is not installed: pip install 'cclab[ray]'")
    ray_cli = shutil.which("ray") or str(Path(sys.executable).with_name("ray"))
    if not Path(ray_cli).exists():
        pytest.skip("the `ray` command is not installed")
    port = _free_port()
    # Ray >= 2.5x asks nodes and drivers for a token; 2.60's head no longer writes one when none
    # exists (~/.ray/auth_token), so the cluster gets its own, through the environment.
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token",
           "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    env.pop("RAY_ADDRESS", None)
    started = []
    try:
        for args in (["--head", f"--port={port}", "--include-dashboard=false", '--resources={"cclab_node_a": 1}'],
                     [f"--address=127.0.0.1:{port}", '--resources={"cclab_node_b": 1}']):
            r = subprocess.run([ray_cli, "start", "--num-cpus=1", "--disable-usage-stats", *args], env=env,
                               capture_output=True, text=True, timeout=180)
            assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
            started.append(args)
        yield {**env, "RAY_ADDRESS": f"127.0.0.1:{port}"}
    finally:
        if started:
            subprocess.run([ray_cli, "stop", "--force"], env=env, capture_output=True, timeout=120)


def _node_runner(spec, cache_dir):
    import ray

    from cclab.study.sweep import run_one

    return run_one(spec, cache_dir) | {"node": ray.get_runtime_context().get_node_id()}


def test_a_two_node_ray_cluster_gives_the_local_results(two_node_cluster: dict, tmp_path: Path) -> None:
    env = two_node_cluster
    # `cclab study s0 --quick` on the cluster and locally: the same tables (the wall time of each
    # run aside). The driver keeps the cache: the nodes only send results back.
    local = _cclab("study", "s0", "--quick", "-o", str(tmp_path / "local"))
    assert local.returncode == 0, local.stderr
    remote = _cclab("study", "s0", "--quick", "--executor", "ray", "-o", str(tmp_path / "ray"), env=env)
    assert remote.returncode == 0, remote.stderr
    for f in sorted((tmp_path / "local" / "tables").glob("*.csv")):
        a, b = pd.read_csv(f), pd.read_csv(tmp_path / "ray" / "tables" / f.name)
        pd.testing.assert_frame_equal(a.drop(columns=["run_s"], errors="ignore"),
                                      b.drop(columns=["run_s"], errors="ignore"), obj=f.name)
    assert len(list((tmp_path / "ray" / "cache").glob("*/result.json"))) == len(
        list((tmp_path / "local" / "cache").glob("*/result.json")))
    # Both nodes ran tasks; a second sweep is read from the driver's cache alone.
    code = f"""
import json, sys
sys.path.insert(0, {str(Path(__file__).parent.parent)!r})
from tests.test_study_cluster import _node_runner
from cclab.study import grid, run_sweep
base = {{"name": "c", "duration_s": 3, "bottleneck": {{"rate_bps": "10Mbps", "delay_ms": 10, "queue_pkts": 100}},
        "flows": [{{"cc": "cubic"}}]}}
specs = grid(base, {{"bottleneck.loss": [0.0, 1e-4, 1e-3, 1e-2]}}, reps=3)
first = run_sweep(specs, {str(tmp_path / "c")!r}, executor="ray", runner=_node_runner).runs
again = run_sweep(specs, {str(tmp_path / "c")!r}, executor="ray", runner=_node_runner).runs
local = run_sweep(specs, None, jobs=1).runs
print(json.dumps({{"nodes": first["node"].nunique(), "same": bool((first["goodput_bps"] == local["goodput_bps"]).all()),
                  "cached": int(again["cached"].sum()), "n": len(specs)}}))
"""
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got == {"nodes": 2, "same": True, "cached": got["n"], "n": 12}, got
