"""What kernel runs leave on the machine, to check that a run ended clean however it ended
(python/tests/test_kernel_kill.py, ``make kill-test``; root).

``snapshot()`` lists, as sets of strings: cclab namespaces, ``cclab*`` links and cgroups (cgroup
v2 root) in the root namespace, live cclab helper processes (traffic generators, the middleware
daemon, cclab-link, cclab-cwnd-clamp), struct_ops maps and other BPF maps named ``cclab*``,
tcp_cubic's module parameters, run directories in the temporary directory (``cclab-kernel-*``,
``cclab-link-*``) and files in ``/run/cclab``. ``left(before, after)`` is what ``after`` has that
``before`` had not (for the module parameters: any value that changed), by kind;
``wait_clean(before)`` polls until nothing is left or a few seconds have passed (BPF maps and
exiting processes take a moment to go).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from .netns import _HELPERS, REGISTRY, list_namespaces

__all__ = ["snapshot", "left", "wait_clean"]

_CUBIC = Path("/sys/module/tcp_cubic/parameters")


def _ip_links() -> set[str]:
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    names = {line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line}
    return {n for n in names if n.startswith("cclab")}


def _cgroups() -> set[str]:
    from .clamp import ClampError, cgroup2_root

    try:
        return {c.name for c in cgroup2_root().glob("cclab*") if c.is_dir()}
    except ClampError:
        return set()


def _helpers() -> set[str]:
    out = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                argv = (d / "cmdline").read_bytes().decode(errors="replace").split("\0")
                state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state != "Z" and any(h in a for h in _HELPERS for a in argv[:3]):
                out.add(f"{d.name} {' '.join(argv)[:160]}")
    return out


def _bpftool_json(*args: str) -> list[dict]:
    tool = shutil.which("bpftool") or "/usr/sbin/bpftool"
    try:
        p = subprocess.run([tool, "-j", *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return []
    text = p.stdout.strip()
    if p.returncode != 0 or not text:
        return []
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:  # one object per line (bpftool struct_ops list)
        doc = [json.loads(x) for x in text.splitlines() if x.strip().startswith("{")]
    return doc if isinstance(doc, list) else [doc]


def snapshot() -> dict[str, set[str]]:
    """What is on the machine now (see the module's docstring)."""
    tmp = Path(tempfile.gettempdir())
    return {
        "namespaces": set(list_namespaces()),
        "links": _ip_links(),
        "cgroups": _cgroups(),
        "processes": _helpers(),
        "struct_ops": {f"{m.get('name')}#{m.get('id')}" for m in _bpftool_json("struct_ops", "list")
                       if str(m.get("name", "")).startswith("cclab")},
        "bpf_maps": {f"{m.get('name')}#{m.get('id')}" for m in _bpftool_json("map", "show")
                     if str(m.get("name", "")).startswith("cclab")},
        "module_params": {f"{p.name}={p.read_text().strip()}" for p in sorted(_CUBIC.iterdir())} if _CUBIC.is_dir()
        else set(),
        "tmp_dirs": {str(d) for pat in ("cclab-kernel-*", "cclab-link-*") for d in tmp.glob(pat)},
        "records": {p.name for p in REGISTRY.iterdir()} if REGISTRY.is_dir() else set(),
    }


def left(before: dict[str, set[str]], after: dict[str, set[str]]) -> dict[str, list[str]]:
    """What ``after`` has beyond ``before``, by kind (module parameters: those whose value
    changed, as ``name=before->after``); empty when nothing is left."""
    out = {}
    for kind, now in after.items():
        if kind == "module_params":
            was = dict(x.split("=", 1) for x in before.get(kind, set()))
            changed = [f"{k}={was.get(k)}->{v}" for k, v in sorted(dict(x.split("=", 1) for x in now).items())
                       if was.get(k) != v]
            if changed:
                out[kind] = changed
        elif extra := sorted(now - before.get(kind, set())):
            out[kind] = extra
    return out


def wait_clean(before: dict[str, set[str]], timeout_s: float = 5.0) -> dict[str, list[str]]:
    """``left(before, snapshot())``, polled until empty or ``timeout_s`` has passed."""
    deadline = time.monotonic() + timeout_s
    while True:
        now = left(before, snapshot())
        if not now or time.monotonic() > deadline:
            return now
        time.sleep(0.2)
