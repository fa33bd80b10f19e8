"""A kernel run ends clean however it ends (root): SIGINT, SIGTERM and SIGHUP tear it down (no
namespace, temporary directory, record or traffic process left); after SIGKILL the next run
reaps what the dead one left; a second run while one is going on is refused."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cclab.kernel.netns import REGISTRY, list_namespaces

root_only = pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists("/dev/net/tun") or shutil.which("ip") is None,
    reason="needs root, TUN and iproute2",
)

SCENARIO = ("name = 'sig'\nduration_s = 30\n[bottleneck]\nrate_bps = '20Mbps'\ndelay_ms = 10\nqueue_pkts = 100\n"
            "[[flows]]\ncc = 'cubic'\n[[flows]]\ntransport = 'udp'\nrate_bps = '1Mbps'\n")


def _helpers() -> list[int]:
    """Live cclab traffic processes (any run)."""
    from cclab.kernel.netns import _pids_naming

    return _pids_naming(["cclab.kernel.traffic", "cclab.kernel.udp"])


def _start(tmp_path: Path) -> tuple[subprocess.Popen, set[str]]:
    sc = tmp_path / "sig.toml"
    sc.write_text(SCENARIO)
    before = set(list_namespaces())
    p = subprocess.Popen([sys.executable, "-m", "cclab", "run", str(sc), "--backend", "kernel", "-q",
                          "-o", str(tmp_path / "out")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(_helpers()) < 4:  # 2 receivers, 2 senders
        time.sleep(0.1)
    assert len(_helpers()) >= 4, p.stderr.read() if p.poll() is not None else "no traffic started"
    time.sleep(1.0)
    return p, before


def _record_name(pid: int) -> str:
    """The run id of the run in process ``pid`` (its record's name)."""
    return next(r.stem for r in REGISTRY.glob("*.json") if json.loads(r.read_text()).get("pid") == pid)


def _records_of(pid: int) -> list[dict]:
    recs = [json.loads(r.read_text()) for r in REGISTRY.glob("*.json")] if REGISTRY.is_dir() else []
    return [r for r in recs if r.get("pid") == pid]


@root_only
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_tears_the_run_down(tmp_path, sig):
    p, before = _start(tmp_path)
    tmp_dirs = [r["tmp"] for r in _records_of(p.pid)]
    assert tmp_dirs and Path(tmp_dirs[0]).is_dir()
    p.send_signal(sig)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 128 + sig, err
    time.sleep(0.5)
    assert set(list_namespaces()) <= before, "namespaces left"
    assert not _helpers(), "traffic processes left"
    assert not Path(tmp_dirs[0]).exists() and not _records_of(p.pid)


@root_only
def test_after_sigkill_the_next_run_reaps_and_a_second_run_is_refused(tmp_path):
    p, before = _start(tmp_path)
    rec, run_id = _records_of(p.pid)[0], _record_name(p.pid)
    # A second run while this one is on: refused, naming the first.
    sc = tmp_path / "sig.toml"
    second = subprocess.run([sys.executable, "-m", "cclab", "run", str(sc), "--backend", "kernel", "-q",
                             "-o", str(tmp_path / "out2")], capture_output=True, text=True, timeout=60)
    assert second.returncode == 2 and "another kernel run is in progress" in second.stderr + second.stdout
    p.kill()
    p.communicate()
    time.sleep(1.0)
    assert not _helpers(), "traffic processes outlived a SIGKILLed run (PR_SET_PDEATHSIG)"
    assert set(rec["namespaces"]) <= set(list_namespaces())  # left behind, until the next run
    from cclab.kernel.netns import reap_stale_runs

    from cclab.kernel.clamp import cgroup2_root

    cgroup = cgroup2_root() / f"cclab-run{run_id}"
    assert cgroup.is_dir()  # the BPF program's cgroup (the timeout log runs on every TCP run)
    removed = reap_stale_runs()
    assert set(rec["namespaces"]) <= set(removed)
    assert set(list_namespaces()) <= before and not Path(rec["tmp"]).exists()
    assert not cgroup.exists()


def test_a_forked_child_of_a_run_keeps_the_default_sigterm():
    """pyroute2's netns helper and other forks inherit the run's handler; SIGTERM must end them
    as before, not raise RunStopped in a copy of the run (which then ran on)."""
    from cclab.kernel.backend import _signals_unwind

    with _signals_unwind():
        pid = os.fork()
        if pid == 0:  # child: wait to be terminated; if the signal raised instead, exit 3
            try:
                time.sleep(10)
            except BaseException:  # noqa: BLE001
                os._exit(3)
            os._exit(4)
        time.sleep(0.2)
        os.kill(pid, signal.SIGTERM)
        _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM


class _Step:
    """A step whose making or undoing is hit by a signal to this process half-way."""

    def __init__(self, sig_on: str, sig: int = signal.SIGTERM) -> None:
        self.sig_on, self.sig, self.log = sig_on, sig, []

    def __enter__(self) -> "_Step":
        if self.sig_on == "enter":
            os.kill(os.getpid(), self.sig)
            time.sleep(0.05)  # the handler runs at once; the step goes on regardless
        self.log.append("made")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.sig_on == "exit":
            os.kill(os.getpid(), self.sig)
            time.sleep(0.05)
        self.log.append("undone")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_during_a_step_waits_for_the_step(sig):
    """A stop signal while a step of the run is made or undone (bpftool, a cgroup's removal)
    takes effect when the step is done: the step is never left half-done, and a step being made
    is undone at once."""
    from cclab._errors import RunStopped
    from cclab.kernel.backend import _Shielded, _signals_unwind

    expected = KeyboardInterrupt if sig == signal.SIGINT else RunStopped
    for on in ("enter", "exit"):
        step, after = _Step(on, sig), []
        with pytest.raises(expected):
            with _signals_unwind():
                with _Shielded(step):
                    after.append("body")
                after.append("after the step")
        assert step.log == ["made", "undone"], (on, step.log)
        # Entering: stopped before the body; undoing: the step finished, then the run stopped.
        assert after == ([] if on == "enter" else ["body"]), (on, after)
