"""Network namespaces for the kernel backend: created with a ``cclab-`` prefix, configured
through netlink (pyroute2), always removed.

- ``Namespaces(run_id, hosts)`` is a context manager: it creates ``cclab-<run_id>-<host>`` for
  every host, brings ``lo`` up and turns IPv6 off inside (so no link-local noise crosses the
  emulator), records what it made in ``/run/cclab/<run_id>.json``, and on exit (normal, an
  exception or Ctrl-C) deletes them and the record.
- ``address_tun(ns, dev, local, peer)`` gives a TUN device made by ``cclab-link`` a
  point-to-point address (``ip addr add LOCAL peer PEER dev DEV``) and a route to the peer's
  subnet through it.
- A run's record names its process and temporary directory. When a run starts, records of runs
  whose process is gone (killed, even by SIGKILL) are reaped: the processes still inside their
  namespaces are killed, the namespaces and the temporary directory removed. A record whose
  process lives means another kernel run is going on: the new one is refused (kernel runs share
  the machine's global TCP knobs: tcp_cubic's parameters, BPF congestion controls).
- ``clean()`` removes every ``cclab-`` namespace (killing what runs inside), record, temporary
  directory and orphaned cclab traffic process (``cclab kernel clean``).
- ``require_root()`` refuses clearly (``KernelUnavailable``) when not root or when network
  namespaces or /dev/net/tun are missing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path
from types import TracebackType

__all__ = ["Namespaces", "KernelUnavailable", "require_root", "clean", "list_namespaces", "address_tun", "PREFIX"]

PREFIX = "cclab-"
REGISTRY = Path("/run/cclab")
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,30}$")


class KernelUnavailable(RuntimeError):
    """The kernel backend cannot run here; the message says why and what to use instead."""


def require_root() -> None:
    """Refuse unless root with network namespaces and TUN available."""
    if os.geteuid() != 0:
        raise KernelUnavailable(
            "the kernel backend needs root (network namespaces, TUN devices); run as root, or use "
            "the simulator backend (the default), which needs no privileges"
        )
    if not Path("/proc/self/ns/net").exists():
        raise KernelUnavailable("this kernel has no network namespaces; use the simulator backend")
    if not Path("/dev/net/tun").exists():
        raise KernelUnavailable("/dev/net/tun is missing (modprobe tun); or use the simulator backend")


def list_namespaces() -> list[str]:
    """Names of the cclab namespaces that exist now."""
    from pyroute2 import netns

    return sorted(n for n in netns.listnetns() if n.startswith(PREFIX))


def _disable_ipv6_and_up_lo(name: str) -> None:
    from pyroute2 import NetNS

    with NetNS(name) as ns:
        idx = ns.link_lookup(ifname="lo")
        if idx:
            ns.link("set", index=idx[0], state="up")
    # sysctls are per namespace: write them from a child that entered it.
    _in_netns(name, _write_sysctls, {"net/ipv6/conf/all/disable_ipv6": "1", "net/ipv6/conf/default/disable_ipv6": "1"})


def _write_sysctls(values: dict[str, str]) -> None:
    for key, v in values.items():
        p = Path("/proc/sys") / key
        if p.exists():
            p.write_text(v)


def _in_netns(name: str, fn: object, arg: object) -> None:
    """Run ``fn(arg)`` in a child process that has entered namespace ``name``."""
    pid = os.fork()
    if pid == 0:  # child
        code = 0
        try:
            from pyroute2 import netns

            netns.setns(name)
            fn(arg)  # type: ignore[operator]
        except BaseException:  # noqa: BLE001 - report through the exit code
            code = 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise KernelUnavailable(f"could not configure namespace {name}")


def set_sysctls(name: str, values: dict[str, str]) -> None:
    """Write per-namespace sysctls (keys relative to /proc/sys, e.g. ``net/ipv4/tcp_frto``)."""
    _in_netns(name, _write_sysctls, values)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _records() -> list[tuple[Path, dict]]:
    out = []
    if REGISTRY.is_dir():
        for rec in sorted(REGISTRY.glob("*.json")):
            try:
                out.append((rec, json.loads(rec.read_text())))
            except (OSError, json.JSONDecodeError):
                out.append((rec, {}))
    return out


def _kill_inside(name: str) -> int:
    """SIGKILL every process in namespace ``name`` (``ip netns pids``); how many."""
    try:
        pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True, timeout=5).stdout.split()
    except (OSError, subprocess.TimeoutExpired):
        return 0
    n = 0
    for p in pids:
        try:
            os.kill(int(p), signal.SIGKILL)
            n += 1
        except (ValueError, ProcessLookupError):
            pass
    return n


def _remove_namespaces(names: list[str]) -> list[str]:
    """Kill what runs inside each namespace and remove it; the names removed."""
    from pyroute2 import netns

    removed = []
    for name in names:
        _kill_inside(name)
        try:
            netns.remove(name)
            removed.append(name)
        except OSError:
            pass
    return removed


def _remove_run(rec: Path, data: dict) -> list[str]:
    """Kill what runs in a recorded run's namespaces, remove them, its temporary directory, its
    BPF clamp's cgroup (``cclab-run<run id>``, backend.py) and its record. Returns the namespaces
    removed."""
    from .clamp import remove_cgroup

    removed = _remove_namespaces(data.get("namespaces", []))
    tmp = data.get("tmp")
    if tmp and Path(tmp).name.startswith("cclab-kernel-"):
        shutil.rmtree(tmp, ignore_errors=True)
    remove_cgroup(f"run{rec.stem}")
    rec.unlink(missing_ok=True)
    return removed


def reap_stale_runs() -> list[str]:
    """Remove what runs whose process is gone left behind (see the module's docstring)."""
    removed = []
    for rec, data in _records():
        pid = data.get("pid")
        if not isinstance(pid, int) or not _alive(pid):
            removed += _remove_run(rec, data)
    return removed


class Namespaces:
    """Create ``cclab-<run_id>-<host>`` namespaces for a run; remove them whatever happens.
    ``tmp_dir``: the run's temporary directory, recorded so that a killed run's is removed."""

    def __init__(self, run_id: str, hosts: list[str], tmp_dir: str | None = None) -> None:
        for part in [run_id, *hosts]:
            if not _NAME.match(part):
                raise ValueError(f"namespace name part {part!r}: use lowercase letters, digits and '-' (max 31)")
        self.run_id = run_id
        self.names = {h: f"{PREFIX}{run_id}-{h}" for h in hosts}
        self.created: list[str] = []
        self.tmp_dir = tmp_dir

    def __enter__(self) -> "Namespaces":
        from pyroute2 import netns

        require_root()
        REGISTRY.mkdir(parents=True, exist_ok=True)
        reap_stale_runs()
        live = [(d.get("pid"), r.stem) for r, d in _records() if d.get("pid") != os.getpid()]
        if live:
            pid, run = live[0]
            raise KernelUnavailable(
                f"another kernel run is in progress (process {pid}, run {run}): kernel runs share this machine's "
                "global TCP knobs (tcp_cubic's parameters, BPF congestion controls), so one runs at a time; wait "
                "for it, or if that process is not a cclab run, `cclab kernel clean`")
        record = REGISTRY / f"{self.run_id}.json"
        try:
            for name in self.names.values():
                record.write_text(json.dumps({"namespaces": self.created + [name], "pid": os.getpid(),
                                              "tmp": self.tmp_dir}))
                netns.create(name)
                self.created.append(name)
                _disable_ipv6_and_up_lo(name)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Delete what this run created and its record (idempotent)."""
        from pyroute2 import netns

        for name in reversed(self.created):
            try:
                netns.remove(name)
            except OSError:
                pass
        self.created.clear()
        (REGISTRY / f"{self.run_id}.json").unlink(missing_ok=True)


def address_tun(ns: str, dev: str, local: str, peer: str, route_prefix: int = 24) -> None:
    """``ip addr add LOCAL peer PEER dev DEV`` inside ``ns``, and a route to PEER's /prefix."""
    import ipaddress

    from pyroute2 import NetNS

    with NetNS(ns) as ipr:
        idx = ipr.link_lookup(ifname=dev)
        if not idx:
            raise KernelUnavailable(f"{ns}: no device {dev} (did cclab-link start?)")
        ipr.link("set", index=idx[0], state="up")
        ipr.addr("add", index=idx[0], local=local, address=peer, prefixlen=32)
        net = ipaddress.ip_network(f"{peer}/{route_prefix}", strict=False)
        if not net.overlaps(ipaddress.ip_network(f"{local}/32")):
            ipr.route("add", dst=str(net), oif=idx[0])


def address_iface(ns: str, dev: str, local: str, dsts: list[str]) -> None:
    """Bring ``dev`` up inside ``ns`` with address ``local``/32 and a /32 route to each of
    ``dsts`` through it, preferring ``local`` as the source (a host with several interfaces
    sends each flow out of the interface its path starts on)."""
    from pyroute2 import NetNS

    with NetNS(ns) as ipr:
        idx = ipr.link_lookup(ifname=dev)
        if not idx:
            raise KernelUnavailable(f"{ns}: no device {dev} (did cclab-link start?)")
        ipr.link("set", index=idx[0], state="up")
        ipr.addr("add", index=idx[0], address=local, prefixlen=32)
        for dst in dsts:
            ipr.route("add", dst=f"{dst}/32", oif=idx[0], prefsrc=local, scope=253)


#: Command-line marks of cclab's own helper processes (traffic generators, the middleware
#: daemon): one of them whose parent is gone is an orphan of a killed run.
_HELPERS = ("cclab.kernel.traffic", "cclab.kernel.udp", "cclab.kernel.middleware")


def kill_orphans() -> list[int]:
    """SIGKILL cclab helper processes whose parent is init (their run died); their pids."""
    killed = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == 1 and any(h in cmd for h in _HELPERS):
            try:
                os.kill(int(d.name), signal.SIGKILL)
                killed.append(int(d.name))
            except ProcessLookupError:
                pass
    return killed


def clean() -> list[str]:
    """Remove every cclab namespace (killing the processes inside), run record and recorded
    temporary directory, and kill orphaned cclab helper processes (after a crash). Returns the
    namespaces removed."""
    require_root()
    removed = []
    for rec, data in _records():
        removed += _remove_run(rec, data)
    removed += _remove_namespaces(list_namespaces())
    kill_orphans()
    return removed
