"""The S1 middleware on the real kernel (issue 15 part 5): a daemon per terminal network
namespace that counts the terminals on its cell by UDP broadcast and keeps the congestion window
of the terminal's TCP connections within the range the core computes (eq. 2-5 and the table:
``cclab._core.middleware_bounds``, the simulator's own implementation).

Pieces (docs/design.md "Middleware" says exactly where the bounds hold):

- ``MiddlewareCC``: registers ``cclab_cubic_mw`` (crates/cclab-bpf/bpf/cclab_cubic_mw.bpf.c), the
  kernel's CUBIC behind a ``cong_control`` that keeps cwnd within a per-socket range read from the
  map ``cclab_mw_bounds`` (keyed by socket cookie). Registration is global: one per run.
- ``TerminalMiddleware``: starts the daemon (``python -m cclab.kernel.middleware daemon``), which
  enters the terminal's namespace itself (``setns``, so the cgroup file system stays visible),
  makes ``cclab_cubic_mw`` the namespace's default congestion control (new sockets of the
  terminal run it without asking), and every ``interval_ms``:
  1. counts the senders heard within ``count_window_ms`` (itself included); it broadcasts one
     datagram of ``count_bytes`` (IPv4 size) every ``count_interval_ms`` to UDP port 5399 of its
     interface's broadcast address;
  2. reads cwnd, smoothed RTT and minimum RTT of the namespace's established TCP connections
     through sock_diag (INET_DIAG_INFO: the kernel's ``tcp_info``);
  3. computes the range per connection and applies it: the floor (and, with ``cap="cc"``, the
     cap) in ``cclab_mw_bounds``; with ``cap="clamp"`` (default) the cap through the BPF clamp
     (``clamp.CwndClamp``: ``TCP_BPF_SNDCWND_CLAMP``, which also sets ssthresh to the cap when
     it changes), on the sockets of processes in the daemon's cgroup (``preexec``/``join``);
  4. logs one row per connection and step (``LOG_COLUMNS``; cwnd read again ``settle_ms``
     later, once the next ACKs have applied the range) to a CSV file.
  The daemon answers ``status`` on stdin; end of input stops it, undoing what it set.

Usage (root)::

    with MiddlewareCC() as cc, TerminalMiddleware("cclab-x-t1", "t1", spec, map_id=cc.map_id,
                                                  log_path="t1.csv") as mw:
        subprocess.Popen(sender_cmd, preexec_fn=mw.preexec)   # its sockets are clamped
    log = read_log("t1.csv")
"""

from __future__ import annotations

import argparse
import csv
import ctypes
import ipaddress
import json
import os
import platform
import selectors
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from . import child
from .knobs import is_udp

__all__ = ["MiddlewareCC", "TerminalMiddleware", "BpfMap", "MiddlewareError", "LOG_COLUMNS", "COUNT_PORT",
           "middleware_hosts", "read_log", "main"]

#: UDP port of the counting broadcasts.
COUNT_PORT = 5399
#: First bytes of a counting datagram's payload (then the sender's IPv4 address and a sequence number).
TAG = b"CCLABMW1"
_HEADER_BYTES = 28  # IPv4 + UDP
#: A cap that caps nothing: what the clamp is set to when the range is lifted (the largest value
#: TCP_BPF_SNDCWND_CLAMP takes; it sets ssthresh to it as well).
NO_CAP_PKTS = 2**31 - 1
_BOUNDS_MAP = "cclab_mw_bounds"

#: One row per connection and step (a row with an empty ``flow`` when the terminal has none).
LOG_COLUMNS = ["t_s", "host", "flow", "cc", "n", "rtt_ms", "min_rtt_ms", "ratio_rtt_ms", "row", "lower_pkts",
               "upper_pkts", "cwnd_before_pkts", "cwnd_after_pkts", "ssthresh_pkts", "ca_state"]


class MiddlewareError(RuntimeError):
    """The middleware could not start or act (the message names the cause)."""


# ---------------------------------------------------------------------------------------------
# BPF maps by id, through bpf(2) (no bpftool process per update).
_BPF_MAP_UPDATE_ELEM = 2
_BPF_MAP_DELETE_ELEM = 3
_BPF_MAP_GET_FD_BY_ID = 14
_NR_BPF = {"x86_64": 321, "aarch64": 280}


class BpfMap:
    """A BPF map opened by id; ``update``/``delete`` take the key and value as bytes."""

    def __init__(self, map_id: int) -> None:
        nr = _NR_BPF.get(platform.machine())
        if nr is None:
            raise MiddlewareError(f"bpf(2) syscall number unknown on {platform.machine()}")
        self._nr = nr
        self._libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self._bpf(_BPF_MAP_GET_FD_BY_ID, struct.pack("=III", map_id, 0, 0))

    def _bpf(self, cmd: int, attr: bytes) -> int:
        buf = ctypes.create_string_buffer(attr, 128)
        r = self._libc.syscall(self._nr, cmd, buf, 128)
        if r < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"bpf({cmd}): {os.strerror(err)}")
        return r

    def update(self, key: bytes, value: bytes) -> None:
        k, v = ctypes.create_string_buffer(key), ctypes.create_string_buffer(value)
        attr = struct.pack("=IIQQQ", self.fd, 0, ctypes.addressof(k), ctypes.addressof(v), 0)
        self._bpf(_BPF_MAP_UPDATE_ELEM, attr)

    def delete(self, key: bytes) -> bool:
        """False when the key was not there."""
        k = ctypes.create_string_buffer(key)
        try:
            self._bpf(_BPF_MAP_DELETE_ELEM, struct.pack("=IIQ", self.fd, 0, ctypes.addressof(k)))
            return True
        except OSError as e:
            if e.errno == 2:  # ENOENT
                return False
            raise

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class MiddlewareCC:
    """Register ``cclab_cubic_mw`` for a run; unregister on exit. ``map_id``: its
    ``cclab_mw_bounds`` map, for the daemons. A context manager."""

    def __init__(self) -> None:
        self.map_id: int | None = None

    def __enter__(self) -> MiddlewareCC:
        from . import bpfcc

        bpfcc.register(bpfcc.BPF_CUBIC_MW)
        try:
            self.map_id = bpfcc.newest_map_id(_BOUNDS_MAP)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        from . import bpfcc

        if bpfcc.BPF_CUBIC_MW in bpfcc.available():
            bpfcc._unregister(bpfcc.BPF_CUBIC_MW)


# ---------------------------------------------------------------------------------------------
class TerminalMiddleware:
    """The middleware daemon of one terminal, run as a child process; a context manager.

    ``spec``: the scenario's normalised ``middleware`` (``Middleware.to_core_dict()``);
    ``map_id``: ``MiddlewareCC.map_id`` (None: no floor, the cap only); ``cap``: "clamp" (the BPF
    sock_ops clamp) or "cc" (in ``cclab_cubic_mw`` itself: ssthresh untouched, but only sockets
    running it are capped); ``zero``: CLOCK_MONOTONIC seconds that ``t_s`` counts from (default:
    the daemon's start); ``broadcast``: where to send the counting datagrams (default: the
    broadcast address of the namespace's first interface that has one; none: the terminal counts
    only itself); ``device``: the interface to send and hear them on (``SO_BINDTODEVICE``; what a
    limited broadcast, 255.255.255.255, needs on the kernel backend's point-to-point TUNs, where
    cclab-link carries it across the cell)."""

    def __init__(self, netns: str, host: str, spec: dict[str, Any], *, log_path: str | Path,
                 map_id: int | None = None, cap: str = "clamp", zero: float | None = None,
                 broadcast: str | None = None, device: str | None = None, count_port: int = COUNT_PORT,
                 settle_ms: float = 100.0, set_default_cc: bool = True, ready_timeout_s: float = 20.0) -> None:
        if cap not in ("clamp", "cc"):
            raise ValueError(f"cap must be 'clamp' or 'cc', got {cap!r}")
        self.netns, self.host, self.spec = netns, host, dict(spec)
        self.log_path = Path(log_path)
        self.args = ["--netns", netns, "--host", host, "--spec", json.dumps(self.spec), "--log", str(self.log_path),
                     "--cap", cap, "--count-port", str(count_port), "--settle-ms", str(settle_ms)]
        if map_id is not None:
            self.args += ["--map-id", str(map_id)]
        if zero is not None:
            self.args += ["--zero", repr(zero)]
        if broadcast is not None:
            self.args += ["--broadcast", broadcast]
        if device is not None:
            self.args += ["--device", device]
        if not set_default_cc:
            self.args += ["--keep-default-cc"]
        self.ready_timeout_s = ready_timeout_s
        self.proc: subprocess.Popen[str] | None = None
        self.ready: dict[str, Any] = {}
        self.final: dict[str, Any] | None = None

    @property
    def cgroup(self) -> Path | None:
        """The cgroup whose processes' sockets get the cap (``cap="clamp"``)."""
        c = self.ready.get("cgroup")
        return Path(c) if c else None

    def start(self) -> TerminalMiddleware:
        from .netns import require_root

        require_root()
        self.proc = subprocess.Popen([sys.executable, "-m", "cclab.kernel.middleware", "daemon", *self.args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        line = self._read_line(self.ready_timeout_s)
        try:
            ready = json.loads(line) if line else {}
        except json.JSONDecodeError:
            ready = {}
        if ready.get("ready") is not True:
            self._kill()
            err = self.proc.stderr.read().strip() if self.proc.stderr else ""
            raise MiddlewareError(f"the middleware daemon of {self.host} did not start: {err[-800:] or line!r}")
        self.ready = ready
        return self

    def preexec(self) -> None:
        """For ``subprocess.Popen(preexec_fn=...)``: put the child in the daemon's cgroup."""
        if self.cgroup is not None:
            (self.cgroup / "cgroup.procs").write_text("0")

    def join(self, pid: int) -> None:
        """Put a running process (and its future children) in the daemon's cgroup."""
        if self.cgroup is None:
            raise MiddlewareError("this daemon has no cgroup (cap='cc')")
        (self.cgroup / "cgroup.procs").write_text(str(pid))

    def status(self) -> dict[str, Any]:
        """``{"t_s", "n", "heard" (addresses), "steps", "sockets"}``."""
        if self.proc is None or self.proc.poll() is not None:
            raise MiddlewareError(f"the middleware daemon of {self.host} is not running")
        assert self.proc.stdin is not None
        self.proc.stdin.write("status\n")
        self.proc.stdin.flush()
        line = self._read_line(5.0)
        if not line:
            raise MiddlewareError(f"the middleware daemon of {self.host} did not answer")
        return json.loads(line)

    def close(self) -> dict[str, Any] | None:
        """Stop the daemon (it undoes what it set); returns its last line."""
        line = child.stop(self.proc, 10.0) if self.proc is not None else None
        if line:
            self.final = json.loads(line)
        # A killed daemon leaves its cgroup: remove it (its clamp detached when its stdin closed).
        if self.cgroup is not None and self.cgroup.exists():
            from .clamp import _evacuate_and_remove

            _evacuate_and_remove(self.cgroup)
        return self.final

    def __enter__(self) -> TerminalMiddleware:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read_line(self, timeout_s: float) -> str | None:
        assert self.proc is not None
        return child.read_line(self.proc, timeout_s)

    def _kill(self) -> None:
        if self.proc is not None:
            child.kill(self.proc)


def middleware_hosts(core: dict[str, Any]) -> list[str]:
    """The hosts that run the middleware in a normalised scenario (``Scenario.to_core_dict()``), in
    the network's order: its ``hosts``, else every host that sends a TCP flow; none when absent or
    off (as ``cclab_sim::config::Scenario::middleware_hosts``)."""
    mw = core.get("middleware")
    if not mw or not mw["enabled"]:
        return []
    if core.get("bottleneck") is not None:
        hosts = [h["name"] for h in [*core["senders"], *core["receivers"]]]
    else:
        hosts = [n["name"] for n in core["nodes"] if n["kind"] == "host"]
    senders = {f["sender"] for f in core["flows"] if not is_udp(f)}
    return [h for h in hosts if (h in mw["hosts"] if mw["hosts"] else h in senders)]


def read_log(path: str | Path) -> Any:
    """A daemon's log as a DataFrame (``LOG_COLUMNS``; NaN bounds while inactive)."""
    import pandas as pd

    return pd.read_csv(path, dtype={"flow": str, "cc": str, "host": str}, keep_default_na=False,
                       na_values={c: [""] for c in LOG_COLUMNS if c not in ("flow", "cc", "host")})


# ---------------------------------------------------------------------------------------------
# The daemon (runs in the terminal's namespace).
_ESTABLISHED = 1
_EXT_INFO_AND_CONG = 0x2 | 0x8  # 1 << (INET_DIAG_INFO - 1) | 1 << (INET_DIAG_CONG - 1)


def _interface_broadcast() -> tuple[str, str] | None:
    """(local address, broadcast address) of the first interface that has a broadcast address."""
    from pyroute2 import IPRoute

    with IPRoute() as ipr:
        for a in ipr.get_addr(family=socket.AF_INET):
            local, bcast = a.get_attr("IFA_LOCAL"), a.get_attr("IFA_BROADCAST")
            if local and bcast and not local.startswith("127."):
                return local, bcast
    return None


def _device_address(dev: str) -> str | None:
    """The IPv4 address of interface ``dev``."""
    from pyroute2 import IPRoute

    with IPRoute() as ipr:
        idx = ipr.link_lookup(ifname=dev)
        for a in ipr.get_addr(family=socket.AF_INET, index=idx[0]) if idx else []:
            return a.get_attr("IFA_LOCAL")
    return None


def _local_address_towards(dst: str) -> str | None:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((dst, 9))
            return s.getsockname()[0]
    except OSError:
        return None


class _Connection:
    """What the daemon last applied to one socket."""

    def __init__(self, sport: int) -> None:
        self.sport = sport
        self.lower: int | None = None
        self.upper: int | None = None
        self.capped = False


class _Daemon:
    def __init__(self, a: argparse.Namespace) -> None:
        from .. import _core

        self.a = a
        self.core = _core
        self.spec = json.loads(a.spec)
        self.spec_json = json.dumps(self.spec)
        _core.middleware_bounds(self.spec_json, 1, 1.0, 1.0)  # raises ConfigError naming a bad field
        self.interval_s = self.spec["interval_ms"] / 1e3
        self.count_interval_s = self.spec["count_interval_ms"] / 1e3
        self.window_s = self.spec["count_window_ms"] / 1e3
        self.settle_s = min(a.settle_ms / 1e3, self.interval_s / 2)
        self.payload_bytes = self.spec["count_bytes"] - _HEADER_BYTES
        self.heard: dict[str, float] = {}
        self.conns: dict[int, _Connection] = {}
        self.steps = 0
        self.rows = 0
        self.seq = 0
        self.clamp: Any = None
        self.bounds_map: BpfMap | None = None
        self.prev_default_cc: str | None = None
        self.udp: socket.socket | None = None
        self.self_addr: str | None = None
        self.broadcast: str | None = None

    # -- setup and teardown -------------------------------------------------------------------
    def setup(self) -> dict[str, Any]:
        a = self.a
        if a.broadcast and a.device:
            self.broadcast = a.broadcast
            self.self_addr = _device_address(a.device)
        elif a.broadcast:
            self.broadcast = a.broadcast
            self.self_addr = _local_address_towards(a.broadcast)
        else:
            found = _interface_broadcast()
            if found:
                self.self_addr, self.broadcast = found
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.udp.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
        if a.device:
            self.udp.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, a.device.encode())
        self.udp.bind(("0.0.0.0", a.count_port))
        self.udp.setblocking(False)
        if a.map_id is not None:
            self.bounds_map = BpfMap(a.map_id)
        if a.cap == "clamp":
            from .clamp import CwndClamp

            self.clamp = CwndClamp(f"mw-{a.host}-{os.getpid()}").start()
        if not a.keep_default_cc:
            p = Path("/proc/sys/net/ipv4/tcp_congestion_control")
            self.prev_default_cc = p.read_text().strip()
            p.write_text("cclab_cubic_mw")
        return {"ready": True, "host": a.host, "self": self.self_addr, "broadcast": self.broadcast,
                "cgroup": str(self.clamp.cgroup) if self.clamp else None, "zero": self.zero,
                "default_cc": None if a.keep_default_cc else "cclab_cubic_mw"}

    def teardown(self) -> None:
        if self.bounds_map is not None:
            for cookie in list(self.conns):
                self.bounds_map.delete(struct.pack("=Q", cookie))
            self.bounds_map.close()
        if self.clamp is not None:
            self.clamp.close()
        if self.prev_default_cc is not None:
            Path("/proc/sys/net/ipv4/tcp_congestion_control").write_text(self.prev_default_cc)
        if self.udp is not None:
            self.udp.close()

    # -- counting ----------------------------------------------------------------------------
    def broadcast_once(self) -> None:
        if self.broadcast is None or self.udp is None:
            return
        me = int(ipaddress.IPv4Address(self.self_addr)) if self.self_addr else 0
        msg = (TAG + struct.pack("!II", me, self.seq)).ljust(self.payload_bytes, b"\0")
        self.seq += 1
        try:
            self.udp.sendto(msg, (self.broadcast, self.a.count_port))
        except OSError:
            pass  # no route yet, a full queue: the next one may pass

    def receive(self, now: float) -> None:
        assert self.udp is not None
        while True:
            try:
                data, (src, _) = self.udp.recvfrom(2048)
            except (BlockingIOError, InterruptedError):
                return
            if data.startswith(TAG) and src != self.self_addr:
                self.heard[src] = max(self.heard.get(src, now), now)

    def count(self, now: float) -> int:
        """The terminal itself and every sender heard within the window (inclusive), as
        ``cclab_sim::middleware::TerminalCounter``."""
        for src in [s for s, t in self.heard.items() if now - t > self.window_s]:
            del self.heard[src]
        return 1 + len(self.heard)

    # -- the clamping step -------------------------------------------------------------------
    def sockets(self) -> list[dict[str, Any]]:
        from pyroute2 import DiagSocket

        out = []
        with DiagSocket() as ds:
            ds.bind()
            for m in ds.get_sock_stats(family=socket.AF_INET, extensions=_EXT_INFO_AND_CONG):
                if m["idiag_state"] != _ESTABLISHED or str(m["idiag_dst"]).startswith("127."):
                    continue
                info = m.get_attr("INET_DIAG_INFO")
                if info is None:
                    continue
                out.append({"flow": f"{m['idiag_src']}:{m['idiag_sport']}->{m['idiag_dst']}:{m['idiag_dport']}",
                            "cookie": int(m["idiag_cookie"]), "sport": int(m["idiag_sport"]),
                            "cc": m.get_attr("INET_DIAG_CONG") or "", "info": dict(info)})
        return out

    def apply(self, s: dict[str, Any], b: dict[str, Any] | None) -> None:
        c = self.conns.setdefault(s["cookie"], _Connection(s["sport"]))
        key = struct.pack("=Q", s["cookie"])
        lower, upper = (b["lower_pkts"], b["upper_pkts"]) if b else (None, None)
        if (lower, upper) != (c.lower, c.upper) and self.bounds_map is not None:
            if b is None:
                self.bounds_map.delete(key)
            else:
                cc_upper = upper if self.a.cap == "cc" else 0
                self.bounds_map.update(key, struct.pack("=II", lower, cc_upper))
        if self.clamp is not None and upper != c.upper:
            if upper is not None:
                self.clamp.set(s["sport"], upper)
                c.capped = True
            elif c.capped:
                self.clamp.set(s["sport"], NO_CAP_PKTS)  # lifted (ssthresh too: the clamp's side effect)
                c.capped = False
        c.lower, c.upper = lower, upper

    def forget(self, live: set[int]) -> None:
        """Connections gone since the last step: their map entry and their port's cap."""
        for cookie in [k for k in self.conns if k not in live]:
            c = self.conns.pop(cookie)
            if self.bounds_map is not None:
                self.bounds_map.delete(struct.pack("=Q", cookie))
            if self.clamp is not None and c.capped and all(o.sport != c.sport for o in self.conns.values()):
                self.clamp.remove(c.sport)

    def step(self, now: float) -> list[dict[str, Any]]:
        n = self.count(now)
        socks = self.sockets()
        rows = []
        for s in socks:
            ti = s["info"]
            rtt_ms, min_rtt_ms = ti["tcpi_rtt"] / 1e3, ti["tcpi_min_rtt"] / 1e3
            b = self.core.middleware_bounds(self.spec_json, n, rtt_ms, min_rtt_ms)
            self.apply(s, b)
            ssth = ti["tcpi_snd_ssthresh"]
            rows.append({"t_s": now - self.zero, "host": self.a.host, "flow": s["flow"], "cc": s["cc"], "n": n,
                         "rtt_ms": rtt_ms, "min_rtt_ms": min_rtt_ms,
                         "ratio_rtt_ms": b["ratio_rtt_ms"] if b else "", "row": b["row"] if b else "",
                         "lower_pkts": b["lower_pkts"] if b else "", "upper_pkts": b["upper_pkts"] if b else "",
                         "cwnd_before_pkts": ti["tcpi_snd_cwnd"], "cwnd_after_pkts": "",
                         "ssthresh_pkts": "" if ssth >= 0x7FFFFFFF else ssth, "ca_state": ti["tcpi_ca_state"],
                         "_cookie": s["cookie"]})
        self.forget({s["cookie"] for s in socks})
        if not rows:
            rows.append({"t_s": now - self.zero, "host": self.a.host, "flow": "", "cc": "", "n": n,
                         **{c: "" for c in LOG_COLUMNS[5:]}})
        self.steps += 1
        return rows

    def settle(self, rows: list[dict[str, Any]]) -> None:
        """cwnd once the next ACKs have applied the range."""
        if any("_cookie" in r for r in rows):
            after = {s["cookie"]: s["info"]["tcpi_snd_cwnd"] for s in self.sockets()}
            for r in rows:
                if "_cookie" in r:
                    r["cwnd_after_pkts"] = after.get(r.pop("_cookie"), "")

    # -- the loop ----------------------------------------------------------------------------
    def run(self) -> None:
        self.start = time.monotonic()
        self.zero = self.a.zero if self.a.zero is not None else self.start
        stop = {"now": False}

        def on_term(*_: object) -> None:
            stop["now"] = True

        signal.signal(signal.SIGTERM, on_term)
        try:
            ready = self.setup()
        except BaseException:
            self.teardown()
            raise
        log = open(self.a.log, "w", newline="")
        w = csv.DictWriter(log, fieldnames=LOG_COLUMNS, extrasaction="ignore")
        w.writeheader()
        print(json.dumps(ready), flush=True)
        sel = selectors.DefaultSelector()
        assert self.udp is not None
        sel.register(self.udp, selectors.EVENT_READ, "udp")
        sel.register(sys.stdin, selectors.EVENT_READ, "cmd")
        next_bcast = next_step = time.monotonic()
        pending: tuple[float, list[dict[str, Any]]] | None = None
        try:
            while not stop["now"]:
                now = time.monotonic()
                if now >= next_bcast:
                    self.broadcast_once()
                    while next_bcast <= now:
                        next_bcast += self.count_interval_s
                if now >= next_step:
                    if pending is not None:  # settle time longer than the step: flush as is
                        self._write(w, log, pending[1])
                    pending = (now + self.settle_s, self.step(now))
                    while next_step <= now:
                        next_step += self.interval_s
                if pending is not None and now >= pending[0]:
                    self.settle(pending[1])
                    self._write(w, log, pending[1])
                    pending = None
                deadline = min(next_bcast, next_step, pending[0] if pending else next_step)
                for key, _ in sel.select(max(0.0, deadline - time.monotonic())):
                    if key.data == "udp":
                        self.receive(time.monotonic())
                    else:
                        line = sys.stdin.readline()
                        if not line:
                            stop["now"] = True
                        elif line.strip() == "status":
                            now = time.monotonic()
                            print(json.dumps({"t_s": now - self.zero, "n": self.count(now),
                                              "heard": sorted(self.heard), "steps": self.steps,
                                              "sockets": len(self.conns)}), flush=True)
                        elif line.strip():
                            print(json.dumps({"error": f"unknown command {line.strip()!r}: use 'status'"}),
                                  flush=True)
            if pending is not None:
                self._write(w, log, pending[1])
        finally:
            log.close()
            self.teardown()
        print(json.dumps({"steps": self.steps, "rows": self.rows, "n": self.count(time.monotonic())}), flush=True)

    def _write(self, w: csv.DictWriter, log: Any, rows: list[dict[str, Any]]) -> None:
        w.writerows(rows)
        log.flush()
        self.rows += len(rows)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m cclab.kernel.middleware", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("daemon", help="Run one terminal's middleware (root; enters --netns itself).")
    d.add_argument("--netns", required=True, help="The terminal's network namespace.")
    d.add_argument("--host", required=True, help="The terminal's name (log column host).")
    d.add_argument("--spec", required=True, help="The scenario's normalised middleware table, as JSON.")
    d.add_argument("--log", required=True, help="CSV file of the per-step records.")
    d.add_argument("--map-id", type=int, default=None, help="Id of cclab_cubic_mw's cclab_mw_bounds map.")
    d.add_argument("--cap", choices=("clamp", "cc"), default="clamp")
    d.add_argument("--zero", type=float, default=None, help="CLOCK_MONOTONIC seconds that t_s counts from.")
    d.add_argument("--broadcast", default=None, help="Counting broadcast address (default: the interface's).")
    d.add_argument("--device", default=None, help="Interface to send and hear the broadcasts on (SO_BINDTODEVICE).")
    d.add_argument("--count-port", type=int, default=COUNT_PORT)
    d.add_argument("--settle-ms", type=float, default=100.0)
    d.add_argument("--keep-default-cc", action="store_true",
                   help="Leave the namespace's default congestion control alone.")
    a = p.parse_args(argv)
    from pyroute2 import netns as nsmod

    nsmod.setns(a.netns)
    _Daemon(a).run()


if __name__ == "__main__":
    main(sys.argv[1:])
