"""The BPF cwnd clamp (crates/cclab-bpf, cclab.kernel.clamp) on the real kernel (root): caps
applied, moved while a flow runs, detached when its process is killed, cgroups cleaned."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from cclab.kernel import clamp as clampmod
from cclab.kernel.clamp import ClampError, CwndClamp
from cclab.kernel.netns import Namespaces

def _built() -> bool:
    try:
        clampmod.binaries.find_binary(clampmod.BINARY, "CCLAB_CWND_CLAMP", "")
        return True
    except clampmod.binaries.BinaryMissing:
        return False


pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason="needs root (BPF, cgroups, namespaces)"),
              pytest.mark.skipif(not _built(), reason="cclab-cwnd-clamp not built (make setup-test: needs clang)")]

PORT = 5301

# Bulk TCP over the namespace's loopback; prints the largest cwnd seen in each 50 ms window.
FLOW = r"""
import json, socket, struct, sys, threading, time
port, duration = int(sys.argv[1]), float(sys.argv[2])
srv = socket.socket(); srv.bind(("127.0.0.1", port)); srv.listen()
def sink():
    c, _ = srv.accept()
    while c.recv(1 << 20):
        pass
threading.Thread(target=sink, daemon=True).start()
s = socket.create_connection(("127.0.0.1", port))
print(json.dumps({"start": time.time()}), flush=True)
buf, t0, window, mx = b"x" * 65536, time.time(), 0, 0
while time.time() - t0 < duration:
    s.send(buf)
    cwnd = struct.unpack_from("I", s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104), 80)[0]
    w = int((time.time() - t0) / 0.05)
    if w != window:
        print(json.dumps({"t": window * 0.05, "max_cwnd": mx}), flush=True)
        window, mx = w, 0
    mx = max(mx, cwnd)
"""


def _flow(ns: str, clamp: CwndClamp | None, duration_s: float) -> subprocess.Popen[str]:
    return subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", FLOW, str(PORT), str(duration_s)],
                            stdout=subprocess.PIPE, text=True, preexec_fn=clamp.preexec if clamp else None)


def _windows(p: subprocess.Popen[str]) -> list[dict]:
    out, _ = p.communicate(timeout=30)
    rows = [json.loads(x) for x in out.splitlines()]
    return [r for r in rows if "t" in r]


def test_caps_are_applied_and_moved_while_the_flow_runs():
    with Namespaces(f"c{os.getpid() % 100000}", ["h"]) as nss, CwndClamp(f"t{os.getpid()}", {PORT: 10}) as clamp:
        assert clamp.cgroup is not None and clamp.cgroup.is_dir()
        p = _flow(nss.names["h"], clamp, 1.6)
        assert p.stdout is not None
        t_start = json.loads(p.stdout.readline())["start"]
        time.sleep(max(0.0, t_start + 0.8 - time.time()))
        t_set = time.time() - t_start
        clamp.set(PORT, 30)
        rows = _windows(p)
        status = clamp.status()
    before = [r["max_cwnd"] for r in rows if r["t"] + 0.05 <= t_set and r["max_cwnd"]]
    after = [r["max_cwnd"] for r in rows if r["t"] >= t_set + 0.1 and r["max_cwnd"]]
    assert before and after
    assert max(before) == 10  # capped, and the flow does reach the cap
    # Raised: the window grows past the old cap (how far in 0.7 s depends on how fast this
    # Python sender fills the loopback socket: cwnd only grows while cwnd-limited) but not past 30.
    assert 10 < max(after) <= 30
    assert status["caps"] == {PORT: 30}
    # The last cap applied per socket: both ends of the loopback flow are in the cgroup. The
    # sending end took the new cap (its window grew past 10, above); the receiving end only
    # takes it at its next sock_ops callback, which a socket that sends nothing but ACKs may not
    # get before the flow ends (this was the test's flakiness: [10, 30] in about half the runs).
    assert 30 in status["applied"] and set(status["applied"]) <= {10, 30} and len(status["applied"]) == 2
    assert clamp.cgroup is not None and not clamp.cgroup.exists()


def test_a_killed_clamp_detaches_and_clean_removes_its_cgroup():
    with Namespaces(f"k{os.getpid() % 100000}", ["h"]) as nss:
        c = CwndClamp(f"k{os.getpid()}", {PORT: 10}).start()
        assert c.proc is not None and c.cgroup is not None
        os.kill(c.proc.pid, signal.SIGKILL)
        c.proc.wait()
        time.sleep(0.2)
        rows = _windows(_flow(nss.names["h"], c, 0.5))  # still in the cgroup, but no program now
        assert max(r["max_cwnd"] for r in rows) > 10
        assert c.cgroup.exists()
        assert c.cgroup.name in clampmod.clean_cgroups()
        assert not c.cgroup.exists()
        c.close()


def test_bad_caps_are_refused():
    with pytest.raises(ValueError, match="cap_pkts"):
        CwndClamp("x", {PORT: 0})
    with pytest.raises(ValueError, match="port"):
        CwndClamp("x", {70000: 5})
    with pytest.raises(ValueError, match="name"):
        CwndClamp("a/b")
    with CwndClamp(f"b{os.getpid()}") as c:
        with pytest.raises(ValueError, match="cap_pkts"):
            c.set(PORT, -1)
        st = c.status()
        assert (st["caps"], st["applied"], st["rtos"]) == ({}, [], {})
        assert st["rto_counts"] == {"initial_replied": 0, "min_set": 0, "min_refused": 0, "sto_events_lost": 0}
    with pytest.raises(ValueError, match="min_ms"):
        CwndClamp("x", rtos={PORT: (3000.0, 300.0)})  # TCP_BPF_RTO_MIN takes at most 200 ms
    with pytest.raises(ClampError, match="not running"):
        c.set(PORT, 5)
