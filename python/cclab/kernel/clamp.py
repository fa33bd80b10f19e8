"""Per-flow settings on the real kernel by BPF sock_ops: a congestion-window cap (the papers'
"max window") and the initial and minimum RTO.

``CwndClamp`` makes a cgroup v2 directory ``cclab-<name>``, starts ``cclab-cwnd-clamp``
(crates/cclab-bpf: a BPF sock_ops program calling ``bpf_setsockopt(TCP_BPF_SNDCWND_CLAMP)``) on
it, and caps every TCP socket of the processes put in that cgroup whose remote (else local) port
has a cap::

    with CwndClamp("run1", {5201: 20}) as clamp:
        subprocess.Popen(cmd, preexec_fn=clamp.preexec)   # the child and its children are capped
        clamp.set(5201, 40)                               # taken on the next ACK
    # detached, cgroup removed

With ``rtos={port: (initial_ms, min_ms)}`` the same program gives new sockets on that port an
initial RTO (its reply to BPF_SOCK_OPS_TIMEOUT_INIT, in jiffies: the kernel's HZ is read from its
config, ``kernel_hz``) and a minimum RTO (TCP_BPF_RTO_MIN, which 6.18 takes only up to 200 ms);
0 leaves either to the kernel.

With ``sto_log=PATH`` the program's timeout log (each socket's ISN, RTOs, ssthresh changes and
recoveries: BPF_SOCK_OPS_RTO_CB and friends) is written there when the clamp closes, and
``events()`` reads it back (kernel/sto.py turns it into per-RTO rows).

The S1 middleware uses the same object to move caps while flows run. Kernel semantics (Linux
6.18, net/core/filter.c bpf_sol_tcp_setsockopt): the call sets ``snd_cwnd_clamp`` and also
``snd_ssthresh`` to the cap, so it is applied once per socket per value, at establishment or on
the first ACK after a change. A cgroup is needed because sock_ops programs attach to cgroups;
``ip netns exec`` keeps the cgroup of the process that runs it, so join first, then enter the
namespace (``preexec`` does the joining).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from . import binaries, child
from .netns import require_root

__all__ = ["CwndClamp", "ClampError", "cgroup2_root", "clean_cgroups", "remove_cgroup", "remove_dead_cgroups",
           "cgroup_pids", "kernel_hz", "is_built", "BPF_RTO_MIN_MAX_MS"]

BINARY = "cclab-cwnd-clamp"
BUILD_HINT = "build it with `cargo build --release -p cclab-bpf` (part of `make setup-test`; needs clang, libbpf-dev)"
PREFIX = "cclab-"
#: The largest minimum RTO TCP_BPF_RTO_MIN takes on Linux 6.18 (TCP_RTO_MIN, net/core/filter.c
#: bpf_sol_tcp_setsockopt); a larger one is the namespace's sysctl tcp_rto_min_us.
BPF_RTO_MIN_MAX_MS = 200.0


def is_built() -> bool:
    """Whether ``cclab-cwnd-clamp`` can be found."""
    try:
        binaries.find_binary(BINARY, "CCLAB_CWND_CLAMP", BUILD_HINT)
        return True
    except binaries.BinaryMissing:
        return False


def kernel_hz() -> int | None:
    """The running kernel's CONFIG_HZ (timers and the initial RTO count in jiffies of 1/HZ s),
    from /proc/config.gz or /boot/config-<release>; None when neither says."""
    import gzip
    import os

    def scan(text: str) -> int | None:
        for line in text.splitlines():
            if line.startswith("CONFIG_HZ="):
                return int(line.split("=", 1)[1])
        return None

    try:
        return scan(gzip.decompress(Path("/proc/config.gz").read_bytes()).decode())
    except OSError:
        pass
    try:
        return scan(Path(f"/boot/config-{os.uname().release}").read_text())
    except OSError:
        return None


class ClampError(RuntimeError):
    """The clamp could not be attached or updated (message names the cause)."""


def cgroup2_root() -> Path:
    """Where the cgroup v2 hierarchy is mounted (``/sys/fs/cgroup`` or ``.../unified``)."""
    for line in Path("/proc/mounts").read_text().splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[2] == "cgroup2":
            return Path(parts[1])
    raise ClampError("no cgroup v2 hierarchy is mounted (the BPF clamp attaches to a cgroup v2 directory): "
                     "mount one with `mount -t cgroup2 none /sys/fs/cgroup/unified`")


def _evacuate_and_remove(cg: Path) -> None:
    """Move what is left in ``cg`` to the root cgroup and remove the directory."""
    procs = cg / "cgroup.procs"
    if procs.exists():
        for pid in procs.read_text().split():
            try:
                (cg.parent / "cgroup.procs").write_text(pid)
            except OSError:
                pass  # exited meanwhile
    for _ in range(50):
        try:
            cg.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)  # a process is still leaving
    cg.rmdir()


def remove_cgroup(name: str) -> bool:
    """Remove the cgroup a ``CwndClamp(name)`` made, if it is there (a run killed by SIGKILL
    leaves it: netns.reap_stale_runs); whether it was."""
    try:
        cg = cgroup2_root() / f"{PREFIX}{name}"
    except ClampError:
        return False
    return cg.is_dir() and bool(_removed(cg))


def cgroup_pids(name: str) -> list[int]:
    """The processes in cgroup ``cclab-<name>`` (none if it is not there)."""
    try:
        text = (cgroup2_root() / f"{PREFIX}{name}" / "cgroup.procs").read_text()
    except (ClampError, OSError):
        return []
    return [int(p) for p in text.split() if p.isdigit()]


def remove_dead_cgroups() -> list[str]:
    """Remove the middleware daemons' cgroups (``cclab-mw-<host>-<daemon pid>``,
    kernel/middleware.py) whose daemon is gone, killing what is left in them; their names."""
    import os
    import signal

    try:
        root = cgroup2_root()
    except ClampError:
        return []
    removed = []
    for cg in sorted(root.glob(f"{PREFIX}mw-*-*")):
        pid = cg.name.rsplit("-", 1)[1]
        if not pid.isdigit() or Path(f"/proc/{pid}").exists() or not cg.is_dir():
            continue
        for p in cgroup_pids(cg.name[len(PREFIX):]):
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        removed += _removed(cg)
    return removed


def _removed(cg: Path) -> list[str]:
    """``[cg.name]`` if the cgroup could be emptied and removed, else []."""
    try:
        _evacuate_and_remove(cg)
    except OSError:
        return []
    return [cg.name]


def clean_cgroups() -> list[str]:
    """Remove leftover ``cclab-*`` cgroups (after a crash). Returns their names."""
    try:
        root = cgroup2_root()
    except ClampError:
        return []
    return [name for cg in sorted(root.glob(PREFIX + "*")) if cg.is_dir() for name in _removed(cg)]


class CwndClamp:
    """One running ``cclab-cwnd-clamp`` on its own cgroup; a context manager."""

    def __init__(self, name: str, caps: dict[int, int] | None = None, *, binary: Path | None = None,
                 ready_timeout_s: float = 10.0, rtos: dict[int, tuple[float, float]] | None = None,
                 sto_log: Path | None = None) -> None:
        if not name or not all(c.isalnum() or c in "-_" for c in name):
            raise ValueError(f"CwndClamp name must be letters, digits, '-' or '_', got {name!r}")
        for port, cap in (caps or {}).items():
            _check(port, cap)
        for port, (initial_ms, min_ms) in (rtos or {}).items():
            _check(port, 1)
            if initial_ms < 0 or not 0 <= min_ms <= BPF_RTO_MIN_MAX_MS:
                raise ValueError(f"port {port}: initial_ms must be >= 0 and min_ms 0..{BPF_RTO_MIN_MAX_MS:g} "
                                 f"(what TCP_BPF_RTO_MIN takes), got {initial_ms}, {min_ms}")
        self.name = name
        self.initial = dict(caps or {})
        self.rtos = dict(rtos or {})
        self.sto_log = sto_log
        self.binary = binary
        self.ready_timeout_s = ready_timeout_s
        self.cgroup: Path | None = None
        self.proc: subprocess.Popen[str] | None = None
        self.final_status: dict[str, Any] | None = None

    def start(self) -> CwndClamp:
        require_root()
        try:
            binary = self.binary or binaries.find_binary(BINARY, "CCLAB_CWND_CLAMP", BUILD_HINT)
        except binaries.BinaryMissing as e:
            raise ClampError(str(e)) from None
        self.cgroup = cgroup2_root() / f"{PREFIX}{self.name}"
        self.cgroup.mkdir(exist_ok=True)
        args = [str(binary), "--cgroup", str(self.cgroup)]
        for port, cap in self.initial.items():
            args += ["--set", f"{port}={cap}"]
        for port, (initial_ms, min_ms) in self.rtos.items():
            args += ["--rto", f"{port}={initial_ms:g},{min_ms:g}"]
        if any(i > 0 for i, _ in self.rtos.values()):
            hz = kernel_hz()
            if hz is None:
                self._remove_cgroup()
                raise ClampError("an initial RTO is given in jiffies, and this kernel's CONFIG_HZ is not in "
                                 "/proc/config.gz or /boot/config-<release>")
            args += ["--hz", str(hz)]
        if self.sto_log is not None:
            args += ["--sto-log", str(self.sto_log)]
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        line = self._read_line(self.ready_timeout_s)
        if line is None or json.loads(line).get("ready") is not True:
            self._kill()
            err = self.proc.stderr.read().strip() if self.proc.stderr else ""
            self._remove_cgroup()
            raise ClampError(f"{BINARY} did not attach: {err or line!r}")
        return self

    def preexec(self) -> None:
        """For ``subprocess.Popen(preexec_fn=...)``: put the child in the clamp's cgroup."""
        assert self.cgroup is not None
        (self.cgroup / "cgroup.procs").write_text("0")

    def join(self, pid: int) -> None:
        """Put a running process (and its future children) in the clamp's cgroup."""
        if self.cgroup is None:
            raise ClampError("the clamp is not started")
        (self.cgroup / "cgroup.procs").write_text(str(pid))

    def set(self, port: int, cap_pkts: int) -> None:
        """Cap sockets on ``port`` at ``cap_pkts`` packets (running ones on their next ACK)."""
        _check(port, cap_pkts)
        self._command(f"set {port} {cap_pkts}")

    def remove(self, port: int) -> None:
        """Stop capping new sockets on ``port`` (running ones keep their cap)."""
        _check(port, 1)
        self._command(f"remove {port}")

    def status(self) -> dict[str, Any]:
        """``{"caps": {port: cap}, "applied": [cap per socket capped so far], "rtos": {port:
        [initial_jiffies, min_us]}, "rto_counts": {initial_replied, min_set, min_refused}}``."""
        return _status(self._command("status"))

    def close(self) -> dict[str, Any] | None:
        """Detach, remove the cgroup; returns the last status."""
        line = child.stop(self.proc, 5.0) if self.proc is not None else None
        if line:
            self.final_status = _status(json.loads(line))
        self._remove_cgroup()
        return self.final_status

    def events(self) -> list[dict[str, Any]]:
        """The timeout log written at close (``sto_log``), oldest first; [] without one."""
        if self.sto_log is None or not Path(self.sto_log).exists():
            return []
        return [json.loads(x) for x in Path(self.sto_log).read_text().splitlines() if x.strip()]

    def __enter__(self) -> CwndClamp:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _command(self, line: str) -> dict[str, Any]:
        if self.proc is None or self.proc.poll() is not None:
            raise ClampError(f"{BINARY} is not running")
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = self._read_line(5.0)
        if reply is None:
            raise ClampError(f"{BINARY} did not answer {line!r}")
        out = json.loads(reply)
        if "error" in out:
            raise ClampError(out["error"])
        return out

    def _read_line(self, timeout_s: float) -> str | None:
        assert self.proc is not None
        return child.read_line(self.proc, timeout_s)

    def _kill(self) -> None:
        if self.proc is not None:
            child.kill(self.proc)

    def _remove_cgroup(self) -> None:
        if self.cgroup is not None and self.cgroup.exists():
            _evacuate_and_remove(self.cgroup)


def _check(port: int, cap: int) -> None:
    if not isinstance(port, int) or not 0 < port < 65536:
        raise ValueError(f"port must be 1..65535, got {port!r}")
    if not isinstance(cap, int) or not 0 < cap < 2**31:
        raise ValueError(f"cap_pkts must be 1..2147483647 packets, got {cap!r}")


def _status(raw: dict[str, Any]) -> dict[str, Any]:
    return {"caps": {int(p): c for p, c in raw["caps"].items()}, "applied": sorted(raw["applied"]),
            "rtos": {int(p): v for p, v in raw.get("rtos", {}).items()}, "rto_counts": raw.get("rto_counts", {})}

