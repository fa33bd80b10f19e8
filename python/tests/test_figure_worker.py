"""``cclab run`` draws its figures in a forked worker (cclab/figure_worker.py): the same files
as drawing in-process, drawn in-process when the worker fails, and no worker left behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import cclab

PYTHON_DIR = str(Path(cclab.__file__).resolve().parent.parent)
ENV = {**os.environ, "PYTHONPATH": PYTHON_DIR}

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the worker needs os.fork")
two_cpus = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="no worker on one CPU")


def _cclab(tmp_path: Path, *args: str, before: str = "") -> subprocess.CompletedProcess:
    """``cclab ARGS`` as its own process (the worker runs only there), ``before`` run first."""
    code = f"import sys\n{before}\nfrom cclab.cli import main\nsys.argv = ['cclab', *{list(args)!r}]\nmain()\n"
    return subprocess.run([sys.executable, "-c", code], env=ENV, cwd=tmp_path, capture_output=True, text=True)


def _in_process(tmp_path: Path) -> Path:
    out = tmp_path / "in-process"
    cclab.simulate("s0-25ms", duration_s=5).write(out)
    return out


@two_cpus
def test_worker_draws_the_same_files(tmp_path: Path) -> None:
    before = ("import cclab.figure_worker as fw\n"
              "wait = fw.FigureWorker.wait\n"
              "def logged(self):\n"
              "    paths = wait(self)\n"
              "    open('drawn', 'w').write(str(paths is not None))\n"
              "    return paths\n"
              "fw.FigureWorker.wait = logged")
    r = _cclab(tmp_path, "run", "s0-25ms", "--set", "duration_s=5", "-q", "-o", "w", before=before)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "drawn").read_text() == "True"  # by the worker, not the fallback
    ref = _in_process(tmp_path)
    for name in ("cwnd.png", "queue.png"):
        assert (tmp_path / "w" / name).read_bytes() == (ref / name).read_bytes(), name


def test_a_failed_worker_leaves_the_drawing_to_the_command(tmp_path: Path) -> None:
    # The child exits 1 without drawing: the command draws both figures itself.
    before = "import cclab.figure_worker as fw\nfw._serve = lambda fd: 1"
    r = _cclab(tmp_path, "run", "s0-25ms", "--set", "duration_s=5", "-q", "-o", "w", before=before)
    assert r.returncode == 0, r.stderr
    ref = _in_process(tmp_path)
    for name in ("cwnd.png", "queue.png"):
        assert (tmp_path / "w" / name).read_bytes() == (ref / name).read_bytes(), name


@two_cpus
def test_a_stopped_command_ends_its_worker(tmp_path: Path) -> None:
    # A bad scenario stops the command before its figures: the worker is gone when it exits.
    before = ("import atexit, os, cclab.figure_worker as fw\n"
              "start = fw.FigureWorker.start.__func__\n"
              "def logged(cls):\n"
              "    w = start(cls)\n"
              "    open('pid', 'w').write(str(w.pid))\n"
              "    return w\n"
              "fw.FigureWorker.start = classmethod(logged)")
    r = _cclab(tmp_path, "run", "s0-25ms", "--set", "duration_s=-1", "-q", "-o", "w", before=before)
    assert r.returncode == 2 and "duration_s" in r.stderr, r.stderr
    pid = int((tmp_path / "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not (tmp_path / "w").exists()
