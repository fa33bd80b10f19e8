"""The S2 paper's setup (three Multipath TCP applications over three paths, the sender's 50 Mbit/s
NICs the bottleneck) on the real kernel (root), against the simulator; and the shipped
``s2-three-apps`` (LIA, the paper's TSQ) through ``cclab run --backend kernel``, which runs it
with uncoupled Reno subflows and Linux's TSQ and says so.

What agrees and what cannot (docs/studies.md, S2 on the kernel): the interfaces' total does
(measured at 30 s: kernel 142.1, 142.2, 141.1 Mbit/s, the simulator 142.9). The split between
the applications does not, and cannot be asked to: with no loss every subflow's cwnd stops where
HyStart or TSQ stopped it in its first second and the interface FIFO shares the line rate in
proportion to the bytes each socket keeps below TCP, so the split is locked in by the first
second: where HyStart stops each subflow, which the receiver's quick ACKs while its window opens
(`tcp_grow_window`; not in the simulator) largely decide. The kernel does not reproduce its own split (three identical runs: app1 50.7, 89.4, 80.3 Mbit/s),
so the test checks the total and that every application has a part."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import cclab
from cclab.kernel import netns
from cclab.kernel.backend import run_kernel
from cclab.scenario import load_scenario
from cclab.study.s2 import kernel_scenario, steady_rates

root_only = pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists("/dev/net/tun") or shutil.which("ip") is None
    or shutil.which("tc") is None,
    reason="needs root, TUN, iproute2 and tc",
)

_PATHS = [["snd", f"ne{k}", "rcv"] for k in (1, 2, 3)]


@root_only
def test_s2_setup_on_the_kernel_matches_the_simulators_total() -> None:
    """CUBIC and Linux's TSQ (what both backends run exactly), 12 s: each connection has one
    subflow per path, and the three NICs' total agrees with the simulator's within 3 % (measured
    at 30 s: within 1.3 %; 12 s leaves the first 2 s a larger part)."""
    sc = load_scenario(kernel_scenario(0.0, 12))
    k, s = run_kernel(sc), cclab.simulate(sc)
    # The study's kernel part: upstream's MPTCP and the htb + TUN device in the simulator, so
    # the kernel runs it exactly.
    assert k.summary["deviations"] == []
    for f in k.summary["flows"]:
        assert f["unknown_subflows"] == [], f
        assert [x["path"] for x in f["subflows"]] == _PATHS, f
        assert all(x["delivered_bytes"] > 0 for x in f["subflows"]), f
    # Exactly one subflow per path and connection: one trace row per (flow, subflow, sample).
    rows = k.flows.groupby(["flow", "subflow", "t_s"], observed=True).size()
    assert rows.max() == 1
    assert sorted(k.flows.groupby(["flow", "subflow"], observed=True).groups) == [
        (f"app{a}", j) for a in (1, 2, 3) for j in range(3)]
    rk, rs = steady_rates(k.flows), steady_rates(s.flows)
    total_k, total_s = rk["steady_mbps"].sum(), rs["steady_mbps"].sum()
    # Three 50 Mbit/s NICs: 150 Mbit/s of frames, about 144 of payload (1448 of 1500 bytes).
    assert 135 < total_s < 145
    assert total_k == pytest.approx(total_s, rel=0.03), (rk, rs)
    # Every application has a part (measured: at least 17 % of the total on the kernel, 11 % on
    # the simulator); the split itself is not reproducible on the kernel (module docstring).
    assert (rk["steady_mbps"] > 0.05 * total_k).all(), rk
    # The whole-run goodputs (what the receiving applications read, over each one's own time)
    # include the start, where the kernel is slower: its path manager opens the subflows one after
    # another (SYNs 50 and 110 ms after the first is established; the simulator's 50 and 100 ms
    # since it follows 6.18's path manager, docs/scenario.md). Measured before that, sums: 12 s,
    # kernel 137.5 against 145.0 Mbit/s (5.1 % lower); 30 s, 139.3-140.7 against 143.7 (2-3 %).
    gk = sum(f["goodput_bps"] for f in k.summary["flows"]) / 1e6
    gs = sum(f["goodput_bps"] for f in s.summary["flows"]) / 1e6
    assert 0.90 * gs < gk <= 1.01 * gs
    assert not [x for x in netns.list_namespaces() if x.startswith(netns.PREFIX)]


@root_only
def test_cclab_run_s2_three_apps_on_the_kernel(tmp_path: Path) -> None:
    """The issue's command, 5 s: LIA runs as uncoupled Reno and the paper's TSQ as Linux's,
    each a deviation in summary.json and a warning on stderr."""
    p = subprocess.run([sys.executable, "-m", "cclab", "run", "s2-three-apps", "--backend", "kernel",
                        "--set", "duration_s=5", "-o", str(tmp_path)],
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert p.returncode == 0, p.stderr
    s = json.loads((tmp_path / "summary.json").read_text())
    dev = s["deviations"]
    assert [x for x in dev if x.startswith("host 'snd': tsq = 'paper' (simulator-only) runs as Linux's TSQ")]
    assert [x.split(" ")[0] for x in dev if "(coupled) runs as uncoupled 'reno'" in x] == [
        "flows[0].cc", "flows[1].cc", "flows[2].cc"]
    assert s["tcp_congestion"] == {"app1": "reno", "app2": "reno", "app3": "reno"}
    assert s["knobs"]  # the namespaces' settings, endpoints and rules
    assert p.stderr.count("warning: kernel backend:") == len(dev)
    for f in s["flows"]:
        assert [x["path"] for x in f["subflows"]] == _PATHS and f["goodput_bps"] > 0, f
    assert not [x for x in netns.list_namespaces() if x.startswith(netns.PREFIX)]
