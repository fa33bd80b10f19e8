"""Namespaces of the kernel backend: created with the cclab- prefix, IPv6 off, removed on exit,
on exceptions and by `cclab kernel clean` after a SIGKILL; a clear refusal when not root."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from click.testing import CliRunner

from cclab.cli import cli
from cclab.kernel import netns

root_only = pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/net/tun"), reason="needs root and TUN")


def _sysctl_in(ns: str, key: str) -> str:
    return subprocess.run(["ip", "netns", "exec", ns, "cat", f"/proc/sys/{key}"], capture_output=True, text=True).stdout.strip()


@root_only
def test_namespaces_are_made_configured_and_removed():
    run = f"t{os.getpid()}"
    with netns.Namespaces(run, ["snd", "rcv"]) as ns:
        names = set(ns.names.values())
        assert names == {f"cclab-{run}-snd", f"cclab-{run}-rcv"}
        assert names <= set(netns.list_namespaces())
        for n in names:
            assert _sysctl_in(n, "net/ipv6/conf/all/disable_ipv6") == "1"
        netns.set_sysctls(f"cclab-{run}-snd", {"net/ipv4/tcp_frto": "0"})
        assert _sysctl_in(f"cclab-{run}-snd", "net/ipv4/tcp_frto") == "0"
        assert (netns.REGISTRY / f"{run}.json").is_file()
    assert not names & set(netns.list_namespaces())
    assert not (netns.REGISTRY / f"{run}.json").exists()


@root_only
def test_namespaces_are_removed_when_the_run_fails():
    run = f"u{os.getpid()}"
    with pytest.raises(RuntimeError, match="boom"):
        with netns.Namespaces(run, ["a"]):
            raise RuntimeError("boom")
    assert f"cclab-{run}-a" not in netns.list_namespaces()


@root_only
def test_clean_removes_what_a_killed_run_left():
    run = f"k{os.getpid()}"
    code = (
        "import sys, time; sys.path.insert(0, %r)\n"
        "from cclab.kernel import netns\n"
        "ns = netns.Namespaces(%r, ['a', 'b']).__enter__()\n"
        "print('up', flush=True); time.sleep(60)\n"
    ) % (os.path.dirname(os.path.dirname(netns.__file__)).rsplit("/cclab", 1)[0], run)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "up"
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
        assert f"cclab-{run}-a" in netns.list_namespaces()  # the kill left them behind
        r = CliRunner().invoke(cli, ["kernel", "clean"])
        assert r.exit_code == 0, r.output
        assert f"cclab-{run}-a" in r.output
        assert not [n for n in netns.list_namespaces() if n.startswith(f"cclab-{run}")]
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(10)
        if p.stdout is not None:
            p.stdout.close()
        for n in (f"cclab-{run}-a", f"cclab-{run}-b"):
            subprocess.run(["ip", "netns", "del", n], capture_output=True)


def test_not_root_is_refused_with_exit_2(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    r = CliRunner().invoke(cli, ["kernel", "clean"])
    assert r.exit_code == 2
    assert "needs root" in r.output and "simulator" in r.output
    with pytest.raises(netns.KernelUnavailable, match="needs root"):
        netns.Namespaces("x", ["a"]).__enter__()


def test_bad_names_are_refused():
    with pytest.raises(ValueError, match="namespace name part 'A B'"):
        netns.Namespaces("A B", ["a"])
