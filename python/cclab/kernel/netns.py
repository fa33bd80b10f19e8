"""Network namespaces for the kernel backend: created with a ``cclab-`` prefix, configured
through netlink (pyroute2), always removed.

- ``Namespaces(run_id, hosts)`` is a context manager: it creates ``cclab-<run_id>-<host>`` for
  every host, brings ``lo`` up and turns IPv6 off inside (so no link-local noise crosses the
  emulator), records what it made in ``/run/cclab/<run_id>.json``, and on exit (normal, an
  exception or Ctrl-C) deletes them and the record.
- ``address_tun(ns, dev, local, peer)`` gives a TUN device made by ``cclab-link`` a
  point-to-point address (``ip addr add LOCAL peer PEER dev DEV``) and a route to the peer's
  subnet through it.
- A run's record names its process, namespaces, temporary directory, cgroups and the BPF
  congestion controls it registers (``Namespaces.note`` adds to it before each is made; every
  write is atomic, so a SIGKILL never leaves half a record). When a run starts, records of runs
  whose process is gone (killed, even by SIGKILL) are reaped (``reap_stale_runs``), in this
  order: the processes still inside their namespaces or cgroups, or naming their temporary
  directory on their command line (cclab-link, cclab-cwnd-clamp), are killed; the TCP sockets
  those processes left (orphans retransmitting a FIN for up to two minutes, each holding its
  congestion control and its namespace) are destroyed (``ss -K``, SOCK_DESTROY); then the
  namespaces, cgroups, BPF registrations, temporary directory and record are removed, and
  tcp_cubic's module parameters restored (knobs.py). A record whose process lives means another
  kernel run is going on: the new one is refused (kernel runs share the machine's global TCP
  knobs: tcp_cubic's parameters, BPF congestion controls).
- ``clean()`` removes every ``cclab-`` namespace (killing what runs inside and destroying its
  sockets), record, temporary directory and orphaned cclab helper process (``cclab kernel
  clean``).
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
import tempfile
import time
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


#: Files in REGISTRY that are not run records (knobs.py: tcp_cubic's original parameters).
_NOT_RUNS = ("tcp_cubic-params.json",)
#: A run's temporary directory: ``cclab-kernel-<pid>-<random>`` in the system's temporary
#: directory, so that a SIGKILLed run's is found by its dead process even before its record.
TMP_PREFIX = "cclab-kernel-"


def tmp_prefix() -> str:
    """The prefix of this process's run directories (``tempfile``'s ``prefix``)."""
    return f"{TMP_PREFIX}{os.getpid()}-"


def write_json_atomic(path: Path, data: object) -> None:
    """Write ``data`` to ``path`` as JSON through a temporary file and a rename: a reader (or a
    SIGKILL in the middle) sees the old file or the new, never half of one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    tmp.rename(path)


def _records() -> list[tuple[Path, dict]]:
    out = []
    if REGISTRY.is_dir():
        for rec in sorted(REGISTRY.glob("*.json")):
            if rec.name in _NOT_RUNS:
                continue
            try:
                out.append((rec, json.loads(rec.read_text())))
            except (OSError, json.JSONDecodeError):
                out.append((rec, {}))
    return out


def _kill_pids(pids: list[int] | set[int]) -> list[int]:
    """SIGKILL ``pids`` (never this process) and wait up to 2 s for them to be gone; those killed."""
    killed = []
    for p in pids:
        if p == os.getpid():
            continue
        try:
            os.kill(p, signal.SIGKILL)
            killed.append(p)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + 2.0
    while killed and time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() and _state(p) != "Z"
                                                         for p in killed):
        time.sleep(0.01)
    return killed


def _state(pid: int) -> str:
    """A process's state letter (``Z``: a zombie, dead already); "" when gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def _pids_in(name: str) -> list[int]:
    """Processes in namespace ``name`` (``ip netns pids``)."""
    try:
        out = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [int(p) for p in out.split() if p.isdigit()]


def kill_inside(name: str) -> int:
    """SIGKILL every process in namespace ``name``; how many."""
    return len(_kill_pids(_pids_in(name)))


def destroy_sockets(name: str) -> None:
    """Destroy every TCP socket left in namespace ``name`` (``ss -K``: SOCK_DESTROY). A process
    killed mid-transfer leaves its connections to the kernel, which retransmits their FIN for up
    to two minutes; each keeps its congestion control (a BPF one cannot be freed: ``bpftool
    struct_ops unregister`` says "in progress") and its namespace alive."""
    try:
        subprocess.run(["ip", "netns", "exec", name, "ss", "-K", "-t", "-a"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        pass


def _pids_naming(marks: list[str]) -> list[int]:
    """Processes whose command line contains one of ``marks`` (a run's temporary directory,
    its cgroup: cclab-link's --spec, cclab-cwnd-clamp's --cgroup, a sender's --go-file)."""
    marks_b = [m.encode() for m in marks if m]
    out = []
    if not marks_b:
        return out
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes()
            except OSError:
                continue
            if any(m in cmd for m in marks_b):
                out.append(int(d.name))
    return out


def _remove_namespaces(names: list[str]) -> list[str]:
    """Kill what runs inside each namespace, destroy its sockets and remove it; the names removed."""
    from pyroute2 import netns

    removed = []
    for name in names:
        kill_inside(name)
    for name in names:
        destroy_sockets(name)
        try:
            netns.remove(name)
            removed.append(name)
        except OSError:
            pass
    return removed


def _remove_run(rec: Path, data: dict) -> list[str]:
    """Undo what a dead run left (see the module's docstring); the namespaces removed."""
    from . import bpfcc
    from .clamp import cgroup_pids, remove_cgroup

    tmp = data.get("tmp") if isinstance(data.get("tmp"), str) else None
    if tmp and not Path(tmp).name.startswith(TMP_PREFIX):
        tmp = None
    cgroups = [f"run{rec.stem}", *[c for c in data.get("cgroups", []) if isinstance(c, str)]]
    # cclab-link names the temporary directory (--spec), cclab-cwnd-clamp its cgroup (--cgroup).
    marks = ([tmp] if tmp else []) + [f"/cclab-{c}\0" for c in cgroups]
    pids = {p for c in cgroups for p in cgroup_pids(c)} | set(_pids_naming(marks))
    pids |= {p for name in data.get("namespaces", []) for p in _pids_in(name)}
    _kill_pids(pids)
    removed = _remove_namespaces(data.get("namespaces", []))
    for c in cgroups:
        remove_cgroup(c)
    for name in data.get("bpf", []):
        if name in bpfcc.BPF_CCS:
            try:
                bpfcc.unregister_if_registered(name)
            except KernelUnavailable:
                pass
    if tmp:
        shutil.rmtree(tmp, ignore_errors=True)
    rec.unlink(missing_ok=True)
    return removed


def _remove_dead_tmp_dirs() -> list[str]:
    """Remove ``cclab-kernel-<pid>-*`` (a run's) and ``cclab-link-<pid>-*`` (a LinkEmulator's
    own) directories whose process is gone (killed before its record was written, or used
    without a run)."""
    out = []
    for prefix in (TMP_PREFIX, "cclab-link-"):
        for d in Path(tempfile.gettempdir()).glob(f"{prefix}*-*"):
            pid = d.name[len(prefix):].split("-", 1)[0]
            if pid.isdigit() and not _alive(int(pid)) and d.is_dir():
                shutil.rmtree(d, ignore_errors=True)
                out.append(str(d))
    return out


def reap_stale_runs() -> list[str]:
    """Remove what runs whose process is gone left behind (see the module's docstring)."""
    from .clamp import remove_dead_cgroups
    from .knobs import restore_cubic_params

    removed = []
    for rec, data in _records():
        pid = data.get("pid")
        if not isinstance(pid, int) or not _alive(pid):
            removed += _remove_run(rec, data)
    remove_dead_cgroups()
    restore_cubic_params(only_dead=True)
    _remove_dead_tmp_dirs()
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
        self.record: dict = {}

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
        self.record = {"namespaces": [], "pid": os.getpid(), "tmp": self.tmp_dir}
        try:
            for name in self.names.values():
                self.note(namespaces=[name])
                netns.create(name)
                self.created.append(name)
                _disable_ipv6_and_up_lo(name)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def note(self, **lists: list[str]) -> None:
        """Add to the run's record, before making what it names (``cgroups``, ``bpf``: names of
        BPF congestion controls), so that whatever kills the run, the next one removes it."""
        for key, values in lists.items():
            self.record.setdefault(key, [])
            self.record[key] += [v for v in values if v not in self.record[key]]
        write_json_atomic(REGISTRY / f"{self.run_id}.json", self.record)

    def close(self) -> None:
        """Delete what this run created and its record (idempotent)."""
        from pyroute2 import netns

        for name in self.created:
            kill_inside(name)
        for name in reversed(self.created):
            destroy_sockets(name)
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
#: daemon, the emulator, the BPF clamp): one of them whose parent is gone is an orphan of a
#: killed run.
_HELPERS = ("cclab.kernel.traffic", "cclab.kernel.udp", "cclab.kernel.middleware", "cclab-link",
            "cclab-cwnd-clamp")


def kill_orphans() -> list[int]:
    """SIGKILL cclab helper processes (one of ``_HELPERS`` among the first words of their
    command line) whose parent is init (their run died); their pids."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().decode(errors="replace").split("\0")[:3]
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == 1 and any(h in a for h in _HELPERS for a in argv):
            found.append(int(d.name))
    return _kill_pids(found)


def clean() -> list[str]:
    """Remove every cclab namespace (killing the processes inside), run record and recorded
    temporary directory, and kill orphaned cclab helper processes (after a crash). Returns the
    namespaces removed."""
    require_root()
    removed = []
    for rec, data in _records():
        removed += _remove_run(rec, data)
    kill_orphans()
    removed += _remove_namespaces(list_namespaces())
    _remove_dead_tmp_dirs()
    return removed
