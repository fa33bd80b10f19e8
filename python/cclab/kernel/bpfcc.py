"""BPF congestion controls on the real kernel: ``cclab_cubic``, Linux CUBIC with C, beta, fast
convergence and TCP friendliness chosen per run (crates/cclab-bpf/bpf/cclab_cubic.bpf.c, a
struct_ops tcp_congestion_ops; the kernel's own CUBIC functions do the rest as kfuncs).

This kernel builds tcp_cubic in, so its C (bic_scale) is read-only; ``cclab_cubic`` is how the
kernel backend runs the S0 paper's iOS-like CUBIC (``cubic-ios``: C 0.25, beta 0.8) or any
``cc_params.c``. It is registered with bpftool (aya cannot load struct_ops), its parameters are
written to the map ``cclab_cubic_par``, and it is unregistered after the run (or by
``cclab kernel clean``). Registration is global: runs using it must not overlap.

``cclab_cubic_mw`` (cclab_cubic_mw.bpf.c), the kernel's CUBIC with a per-socket window range for
the S1 middleware, is registered the same way by ``kernel.middleware.MiddlewareCC``.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
from pathlib import Path

from . import binaries
from .netns import KernelUnavailable

__all__ = ["BpfCubic", "BPF_CUBIC", "BPF_CUBIC_MW", "object_path", "register", "newest_map_id", "unregister_all",
           "unregister_if_registered", "struct_ops_names"]

BPF_CUBIC = "cclab_cubic"
#: The S1 middleware's CUBIC with a per-socket window range (cclab_cubic_mw.bpf.c, kernel/middleware.py).
BPF_CUBIC_MW = "cclab_cubic_mw"
#: Every BPF congestion control cclab registers.
BPF_CCS = (BPF_CUBIC, BPF_CUBIC_MW)
_AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")


def object_path(name: str = BPF_CUBIC) -> Path:
    """``$CCLAB_BPF_DIR/<name>.bpf.o``, else the workspace's ``target/bpf``."""
    base = Path(os.environ.get("CCLAB_BPF_DIR") or binaries.repo_root() / "target" / "bpf")
    return base / f"{name}.bpf.o"


def available() -> list[str]:
    return _AVAILABLE.read_text().split()


def _bpftool(*args: str) -> str:
    tool = shutil.which("bpftool") or ("/usr/sbin/bpftool" if Path("/usr/sbin/bpftool").exists() else None)
    if tool is None:
        raise KernelUnavailable("bpftool not found (Debian package bpftool; `make setup-test` installs it)")
    p = subprocess.run([tool, *args], capture_output=True, text=True)
    if p.returncode != 0:
        raise KernelUnavailable(f"bpftool {' '.join(args)}: {(p.stderr or p.stdout).strip()[-400:]}")
    return p.stdout


def _unregister(name: str = BPF_CUBIC) -> None:
    """Unregister every struct_ops map called ``name``. One still used by a closing socket of
    an earlier run answers "Operation now in progress": it is already out of the kernel's list
    of congestion controls and is freed when that socket goes, so that is not an error."""
    try:
        _bpftool("struct_ops", "unregister", "name", name)
    except KernelUnavailable as e:
        if "in progress" not in str(e):
            raise
    if name in available():
        raise KernelUnavailable(f"{name} is still registered after bpftool struct_ops unregister")


def register(name: str) -> None:
    """Register the struct_ops congestion control ``name`` from ``object_path(name)`` (a crashed
    run's registration is removed first)."""
    obj = object_path(name)
    if not obj.is_file():
        raise KernelUnavailable(f"{obj} is not built: run `make bpf` (needs clang and bpftool; part of "
                                "`make setup-test`)")
    if name in available():
        _unregister(name)
    _bpftool("struct_ops", "register", str(obj))
    if name not in available():
        raise KernelUnavailable(f"bpftool registered {obj} but {name} is not an available congestion control")


def newest_map_id(map_name: str) -> int:
    """The id of the newest BPF map called ``map_name``: an earlier run's object lingers while a
    socket of it is still closing (see _unregister)."""
    ids = [m["id"] for m in json.loads(_bpftool("-j", "map", "show")) if m.get("name") == map_name]
    if not ids:
        raise KernelUnavailable(f"no BPF map named {map_name}")
    return max(ids)


def struct_ops_names() -> list[str]:
    """Names of the struct_ops maps the kernel holds (``bpftool struct_ops list``): a
    registered congestion control, and one unregistered but still used by a socket."""
    try:
        out = _bpftool("-j", "struct_ops", "list")
    except KernelUnavailable:
        return []
    # bpftool prints one JSON object per map, or a list, depending on its version.
    text = out.strip()
    if not text:
        return []
    docs = json.loads(text) if text.startswith("[") else [json.loads(x) for x in text.splitlines() if x.strip()]
    return [d.get("name", "") for d in docs]


def unregister_if_registered(name: str) -> bool:
    """Unregister ``name`` if it is registered or its map is still held; whether it was."""
    if name in available() or name in struct_ops_names():
        try:
            _bpftool("struct_ops", "unregister", "name", name)
        except KernelUnavailable as e:
            if "in progress" not in str(e) and "no struct_ops" not in str(e).lower():
                raise
        return True
    return False


def unregister_all() -> list[str]:
    """Unregister cclab's BPF congestion controls (after a crash). Returns their names (one
    bpftool refuses is left out, not raised: ``cclab kernel clean`` goes on)."""
    done = []
    for name in BPF_CCS:
        try:
            if unregister_if_registered(name):
                done.append(name)
        except KernelUnavailable:
            pass
    return done


class BpfCubic:
    """Register ``cclab_cubic`` with ``params`` (bic_scale, beta in 1/1024, fast_convergence,
    tcp_friendliness as 0/1) for a run; unregister on exit. A context manager."""

    def __init__(self, params: dict[str, int]) -> None:
        self.params = dict(params)

    def __enter__(self) -> BpfCubic:
        register(BPF_CUBIC)
        try:
            p = self.params
            value = struct.pack("<4I", p.get("bic_scale", 41), p.get("beta", 717),
                                1 if p.get("fast_convergence", 1) else 2, 1 if p.get("tcp_friendliness", 1) else 2)
            _bpftool("map", "update", "id", str(newest_map_id("cclab_cubic_par")), "key", "0", "0", "0", "0",
                     "value", *(str(b) for b in value))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if BPF_CUBIC in available():
            _unregister(BPF_CUBIC)
