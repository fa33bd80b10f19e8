"""bench/fuzz.py cleans up after itself however it ends (done, a finding, Ctrl-C, SIGTERM; after
a SIGKILL, the next run does), keeps only the findings directory, and makes a crashed worker
diagnosable: its case and faulthandler's stacks are kept and rerun with one command.

The crash and the hang are made by the worker's self-test hook (CCLAB_FUZZ_SELFTEST)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import needs_core

pytestmark = needs_core

ROOT = Path(__file__).resolve().parents[2]
FUZZ = ROOT / "bench" / "fuzz.py"


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    tmp.mkdir(exist_ok=True)
    return os.environ | {"TMPDIR": str(tmp), "PYTHONPATH": str(ROOT / "python")} | extra


def _fuzz(tmp_path: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(FUZZ), *args], cwd=tmp_path, env=_env(tmp_path / "tmp", **extra),
                          capture_output=True, text=True, timeout=600)


def _workers_of(run_dirs: list[Path]) -> list[int]:
    """Processes whose command line names one of these directories."""
    pids = []
    for p in Path("/proc").iterdir():
        try:
            cmd = (p / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if p.name.isdigit() and any(str(d) in cmd for d in run_dirs):
            pids.append(int(p.name))
    return pids


def test_a_clean_run_leaves_nothing(tmp_path):
    r = _fuzz(tmp_path, "--cases", "6", "--targets", "toml")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "total 6 cases" in r.stdout
    assert list((tmp_path / "tmp").iterdir()) == []
    assert not (tmp_path / "out").exists()  # no finding: no findings directory


def test_a_crash_keeps_its_case_and_stacks_and_reruns_with_one_command(tmp_path):
    r = _fuzz(tmp_path, "--cases", "3", "--targets", "toml", "--findings", "kept", CCLAB_FUZZ_SELFTEST="segv:2")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "worker killed by SIGSEGV" in r.stdout
    kept = sorted((tmp_path / "kept").iterdir())
    assert kept and all((d / "case.pickle").is_file() and (d / "case.txt").is_file() for d in kept)
    stacks = (kept[0] / "faulthandler.txt").read_text()
    assert "Segmentation fault" in stacks and "_selftest" in stacks
    assert f"bench/fuzz.py --rerun kept/{kept[0].name}" in r.stdout
    assert list((tmp_path / "tmp").iterdir()) == []  # only what was asked for is kept
    again = subprocess.run([sys.executable, str(FUZZ), "--rerun", str(kept[0])], cwd=tmp_path,
                           env=_env(tmp_path / "tmp"), capture_output=True, text=True, timeout=300)
    assert again.returncode in (0, 1) and again.stdout.startswith("toml: "), again.stdout + again.stderr
    assert list((tmp_path / "tmp").iterdir()) == []


def _started(tmp_path: Path, *args: str) -> tuple[subprocess.Popen, list[Path]]:
    """A run whose worker is busy on its first case (it hangs there)."""
    p = subprocess.Popen([sys.executable, str(FUZZ), "--cases", "5", "--targets", "toml", "--hang-s", "600", *args],
                         cwd=tmp_path, env=_env(tmp_path / "tmp", CCLAB_FUZZ_SELFTEST="hang:1"),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list((tmp_path / "tmp").glob("cclab-fuzz-run-*/*/case.pickle")):
        time.sleep(0.1)
    runs = list((tmp_path / "tmp").glob("cclab-fuzz-run-*"))
    assert runs and _workers_of(runs), "the worker did not start"
    return p, runs


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 128 + signal.SIGTERM)])
def test_an_interrupted_run_removes_what_it_made_and_its_worker(tmp_path, sig, code):
    p, runs = _started(tmp_path)
    p.send_signal(sig)
    assert p.wait(timeout=60) == code
    assert list((tmp_path / "tmp").iterdir()) == []
    time.sleep(0.5)
    assert _workers_of(runs) == []


def test_a_killed_runs_directory_is_removed_by_the_next_run(tmp_path):
    p, runs = _started(tmp_path)
    p.kill()
    p.wait()
    assert all(d.exists() for d in runs)
    deadline = time.monotonic() + 10
    while _workers_of(runs) and time.monotonic() < deadline:  # the worker dies with its driver
        time.sleep(0.1)
    assert _workers_of(runs) == []
    r = _fuzz(tmp_path, "--cases", "2", "--targets", "toml")
    assert r.returncode == 0, r.stdout + r.stderr
    assert list((tmp_path / "tmp").iterdir()) == []
