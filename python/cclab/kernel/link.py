"""Run the ``cclab-link`` emulator (crates/cclab-emu, docs/emulator.md) from Python.

``cclab-link`` opens one TUN device per port inside its network namespace and moves packets
between them through the cclab-net link models. This module finds the binary, writes the
spec, starts it, waits for its ``ready`` line, stops it and reads its stats::

    with LinkEmulator(spec) as emu:      # spec: the dict of docs/emulator.md
        ...                              # devices exist now: set addresses, run traffic
    stats = emu.stats                    # per link and per port counters, lateness

The binary is built by ``make setup`` (``cargo build --release -p cclab-emu``) into
``target/release/cclab-link``; a ``cclab-link`` on PATH is used otherwise.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from . import binaries

__all__ = ["LinkEmulator", "LinkEmulatorError", "find_binary", "tun_kernel_stats", "link_accounting"]

BINARY = "cclab-link"
#: Links at least this fast get the emulator pinned and receive processing steered (``steer``).
STEER_RATE_BPS = 500_000_000
BUILD_HINT = "build it with `cargo build --release -p cclab-emu` (part of `make setup`)"


class LinkEmulatorError(RuntimeError):
    """cclab-link is missing, refused its spec or its setup, or did not stop cleanly."""


def find_binary() -> Path:
    """``$CCLAB_LINK``, else the workspace's target/release/cclab-link, else PATH."""
    try:
        return binaries.find_binary(BINARY, "CCLAB_LINK", BUILD_HINT)
    except binaries.BinaryMissing as e:
        raise LinkEmulatorError(str(e)) from None


class LinkEmulator:
    """One running ``cclab-link``. ``start()`` returns once every TUN device exists;
    ``stop()`` (SIGTERM) returns its stats. Usable as a context manager."""

    def __init__(
        self,
        spec: dict[str, Any],
        *,
        binary: Path | None = None,
        workdir: Path | None = None,
        ready_timeout_s: float = 10.0,
        args: tuple[str, ...] = (),
        steer: bool | None = None,
    ) -> None:
        """``args``: extra cclab-link options, e.g. ``("--rt-priority", "0")``.

        ``steer``: run cclab-link on the last CPU and steer each TUN's receive processing to
        the others (RPS, ``rps_cpus``), so that a write does not run the receiving TCP stack in
        the emulator's thread. It pays at high rates (1 Gbit/s, 50 ms: release lateness p99
        30-41 us steered vs 1.2-1.7 ms not) and costs at low ones (the idle round trip gains
        ~0.15-0.3 ms from the cross-CPU hand-off; docs/emulator.md). Default (None): on when a
        link has ``rate_bps`` of at least 500 Mbit/s and there are 2 or more CPUs."""
        ncpu = os.cpu_count() or 1
        if steer is None:
            steer = any((lk.get("rate_bps") or 0) >= STEER_RATE_BPS for lk in spec.get("links", []))
        self.steer = bool(steer) and ncpu >= 2
        self.emu_cpu = ncpu - 1
        self.args = tuple(args) + (("--cpu", str(self.emu_cpu)) if self.steer else ())
        self.binary = binary or find_binary()
        #: A temporary workdir of our own is removed on exit (the stats are read by then).
        self._own_workdir = workdir is None
        # cclab-link-<pid>-*: one whose process is gone is removed by the next kernel run
        # (netns.reap_stale_runs) or `cclab kernel clean`.
        self.workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix=f"cclab-link-{os.getpid()}-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.spec = dict(spec)
        if self.spec.get("stats_path") is None:
            self.spec["stats_path"] = str(self.workdir / "link-stats.json")
        self.spec_path = self.workdir / "link-spec.json"
        self.ready_timeout_s = ready_timeout_s
        self.proc: subprocess.Popen[bytes] | None = None
        self.stats: dict[str, Any] | None = None

    def start(self) -> LinkEmulator:
        """Start cclab-link and wait for ``ready``; raises with its message if it fails."""
        self.spec_path.write_text(json.dumps(self.spec, indent=2))
        self._stderr = open(self.workdir / "link-stderr.txt", "wb+")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [str(self.binary), "--spec", str(self.spec_path), *self.args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )
        assert self.proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + self.ready_timeout_s
        line = b""
        try:
            while not line.endswith(b"\n"):
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    self._kill()
                    msg = f"{BINARY} not ready after {self.ready_timeout_s} s: {self._err_text()}"
                    self._close()
                    raise LinkEmulatorError(msg)
                chunk = os.read(self.proc.stdout.fileno(), 64)
                if not chunk:
                    rc = self.proc.wait()
                    msg = f"{BINARY} exited with {rc}: {self._err_text()}"
                    self._close()
                    raise LinkEmulatorError(msg)
                line += chunk
        finally:
            sel.close()
        if line.strip() != b"ready":
            self._kill()
            self._close()
            raise LinkEmulatorError(f"{BINARY} said {line!r} instead of 'ready'")
        if self.steer:
            mask = format(((1 << (self.emu_cpu + 1)) - 1) & ~(1 << self.emu_cpu), "x")
            for p in self.spec["ports"]:
                _set_rps(p.get("netns"), p["dev"], mask)
        #: time.monotonic() of the emulator's time zero (links_path rows; see start_clock), ~1 ms.
        self.ready_monotonic = time.monotonic()
        return self

    def start_clock(self, timeout_s: float = 5.0) -> float:
        """Make now the emulator's time zero (outages, delay spikes, capacity traces and the
        links series count from it); call right before the traffic starts, while the links are
        empty. Returns the time.monotonic() of the new zero (within ~0.1 ms)."""
        if self.proc is None or self.proc.poll() is not None or self.proc.stdin is None:
            raise LinkEmulatorError(f"{BINARY} is not running")
        assert self.proc.stdout is not None
        t_sent = time.monotonic()
        self.proc.stdin.write(b"start\n")
        self.proc.stdin.flush()
        line = b""
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            while not line.endswith(b"\n"):
                if not sel.select(timeout_s):
                    raise LinkEmulatorError(f"{BINARY} did not answer 'start' within {timeout_s} s")
                chunk = os.read(self.proc.stdout.fileno(), 256)
                if not chunk:
                    raise LinkEmulatorError(f"{BINARY} exited: {self._err_text()}")
                line += chunk
        t_got = time.monotonic()
        if line.strip() != b"started":
            raise LinkEmulatorError(f"{BINARY}: {line.decode(errors='replace').strip()}")
        self.ready_monotonic = (t_sent + t_got) / 2
        return self.ready_monotonic

    def stop(self, timeout_s: float = 10.0) -> dict[str, Any]:
        """SIGTERM, wait, read and return the stats (also kept in ``self.stats``)."""
        if self.proc is None:
            raise LinkEmulatorError(f"{BINARY} was not started")
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self._kill()
            self._close()
            raise LinkEmulatorError(f"{BINARY} did not stop within {timeout_s} s") from None
        err = self._err_text()
        self._close()
        if rc != 0:
            raise LinkEmulatorError(f"{BINARY} exited with {rc}: {err}")
        self.stats = json.loads(Path(self.spec["stats_path"]).read_text())
        return self.stats

    def _close(self) -> None:
        if self.proc is not None:
            for f in (self.proc.stdin, self.proc.stdout):
                if f is not None and not f.closed:
                    f.close()
        if not self._stderr.closed:
            self._stderr.close()

    def _err_text(self) -> str:
        try:
            self._stderr.flush()
            self._stderr.seek(0)
            return self._stderr.read().decode(errors="replace").strip()
        except (ValueError, OSError):
            return (self.workdir / "link-stderr.txt").read_text(errors="replace").strip()

    def _kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> LinkEmulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        try:
            if self.proc is not None and self.proc.poll() is None:
                if exc[0] is None:
                    self.stop()
                else:
                    self._kill()
                    self._close()
        finally:
            if self._own_workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)


def _set_rps(netns: str | None, dev: str, mask: str) -> None:
    """Steer ``dev``'s receive processing to the CPUs in ``mask`` (hex), inside ``netns``
    (``ip netns exec`` mounts that namespace's /sys)."""
    path = f"/sys/class/net/{dev}/queues/rx-0/rps_cpus"
    cmd = ["sh", "-c", f"echo {mask} > {path}"]
    if netns:
        cmd = ["ip", "netns", "exec", netns, *cmd]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise LinkEmulatorError(f"cannot set {path} in {netns or 'this namespace'}: {r.stderr.strip()}")


def tun_kernel_stats(netns: str | None, dev: str) -> dict[str, int]:
    """The kernel's counters of a TUN device cclab-link holds (IFLA_STATS64, read in ``netns``):
    ``kernel_tx_dropped_pkts``, packets the namespace's stack sent that the TUN's queue refused
    (they never reached cclab-link), and ``kernel_rx_dropped_pkts``, packets cclab-link wrote that
    the stack dropped on the way in (a full receive backlog)."""
    from pyroute2 import IPRoute, NetNS

    with (NetNS(netns) if netns else IPRoute()) as ipr:
        links = ipr.get_links(ifname=dev)
        st = links[0].get_attr("IFLA_STATS64") if links else None
    if not st:
        return {"kernel_tx_dropped_pkts": 0, "kernel_rx_dropped_pkts": 0}
    return {"kernel_tx_dropped_pkts": int(st["tx_dropped"]), "kernel_rx_dropped_pkts": int(st["rx_dropped"])}


def _hop_name(hop: Any) -> str | None:
    return hop if isinstance(hop, str) else None


def link_accounting(stats: dict[str, Any], routes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per link of cclab-link's ``stats``, whether it lost anything the model did not drop:
    ``in_pkts = delivered_pkts + dropped_pkts + in_flight_pkts`` (``unaccounted_pkts``, in minus
    the rest, must be 0), with the emulator's own losses beside it: ``tun_write_errors_pkts``
    (packets the link handed out whose write to the receiving TUN failed), and on the TUNs of
    the routes that enter the link first (``tun_read_errors``: failed reads, each perhaps a
    packet; ``kernel_tx_dropped_pkts``: packets those TUNs' queues refused before cclab-link read
    them) or leave it last (``kernel_rx_dropped_pkts``: written, then dropped by the stack).
    ``routes``: the spec's (``from``/``to`` port names, ``links``: names or medium hops)."""
    ports = {p["name"]: p for p in stats.get("ports", [])}
    out = []
    for lane in stats.get("links", []):
        if "in_pkts" not in lane:
            continue  # a host's interface queue (device.py), not one of cclab-link's
        name = lane["name"]
        first = {r["from"] for r in routes if r.get("links") and _hop_name(r["links"][0]) == name}
        last = {r["to"] for r in routes if r.get("links") and _hop_name(r["links"][-1]) == name}
        row = {k: int(lane.get(k, 0)) for k in ("in_pkts", "delivered_pkts", "dropped_pkts", "in_flight_pkts",
                                                  "tun_write_errors_pkts")}
        row["unaccounted_pkts"] = row["in_pkts"] - row["delivered_pkts"] - row["dropped_pkts"] - row["in_flight_pkts"]
        row["tun_read_errors"] = sum(int(ports[p].get("rx_errors", 0)) for p in first if p in ports)
        row["kernel_tx_dropped_pkts"] = sum(int(ports[p].get("kernel_tx_dropped_pkts", 0)) for p in first
                                            if p in ports)
        row["kernel_rx_dropped_pkts"] = sum(int(ports[p].get("kernel_rx_dropped_pkts", 0)) for p in last
                                            if p in ports)
        out.append({"link": name, **row})
    return out
