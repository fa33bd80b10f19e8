"""The kernel knobs a scenario sets, and how each is undone.

Per namespace (gone with the namespace; the host is never touched): tcp_no_metrics_save, SACK,
timestamps, F-RTO, rto_min, TSQ (tcp_limit_output_bytes), ECN and any ``kernel.sysctls``;
initcwnd as a route metric on the sender's route. Global (the whole machine): CUBIC's module
parameters, set only when a scenario's cubic flows carry ``cc_params``, restored afterwards, and
recorded in ``/run/cclab/tcp_cubic-params.json`` first (with the run's process id) so that the
next run or ``cclab kernel clean`` restores them after a crash; and ``cclab_cubic`` (bpfcc.py)
for CUBIC with another C.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .netns import REGISTRY, KernelUnavailable

__all__ = ["namespace_sysctls", "CUBIC_PARAMS", "cubic_plan", "CubicModuleParams",
           "restore_cubic_params", "set_initcwnd"]

CUBIC_DIR = Path("/sys/module/tcp_cubic/parameters")
CUBIC_RECORD = REGISTRY / "tcp_cubic-params.json"

#: cc_params of cclab's ``cubic`` that are writable module parameters on this kernel, with how
#: a cclab value becomes the kernel's (beta is a fraction in cclab, 1/1024 units in the kernel).
CUBIC_PARAMS: dict[str, Any] = {
    "beta": lambda v: round(float(v) * 1024),
    "fast_convergence": int,
    "tcp_friendliness": int,
    "hystart": int,
    "hystart_detect": int,
    "hystart_low_window": int,
    "hystart_ack_delta_us": int,
    "initial_ssthresh": int,
}
#: Read-only on this kernel (tcp_cubic is built in: bic_scale is 0444): C = 410/1024 for the
#: kernel's cubic; other values run as cclab_cubic (BPF, bpfcc.py).
CUBIC_READ_ONLY = ("c", "bic_scale")
KERNEL_BIC_SCALE = 41


def namespace_sysctls(flow: dict[str, Any], kernel: dict[str, Any], sender: bool) -> dict[str, str]:
    """Sysctls (keys relative to /proc/sys) for one end of a flow."""
    k = {"net/ipv4/tcp_no_metrics_save": str(int(kernel["tcp_no_metrics_save"])),
         "net/ipv4/tcp_sack": str(int(flow["sack"])),
         "net/ipv4/tcp_timestamps": str(int(flow["timestamps"])),
         "net/ipv4/tcp_rto_min_us": str(int(flow["rto_min_ms"] * 1000))}
    if sender:
        k["net/ipv4/tcp_frto"] = "2" if flow["frto"] else "0"
    if kernel.get("tcp_limit_output_bytes") is not None:
        k["net/ipv4/tcp_limit_output_bytes"] = str(int(kernel["tcp_limit_output_bytes"]))
    if flow.get("ecn", "off") != "off":
        # flows[].ecn = "on": RFC 3168 ECN requested and accepted at both ends (tcp_ecn = 1);
        # "off" keeps the kernel's default (2: accept only), so nobody asks for ECN.
        k["net/ipv4/tcp_ecn"] = "1"
    for key, v in (kernel.get("sysctls") or {}).items():
        k[key.replace(".", "/")] = str(v)
    return k


#: cclab presets the kernel runs as CUBIC, with their tunables (cclab-sim cc/registry.rs).
CUBIC_FAMILY = {"cubic": {}, "cubic-ios": {"beta": 0.8, "c": 0.25}}
#: What ``cclab_cubic`` (BPF) takes per run; the rest stays with the module parameters.
BPF_CUBIC_KEYS = ("c", "bic_scale", "beta", "fast_convergence", "tcp_friendliness")


def _bic_scale(params: dict[str, Any]) -> int:
    if "bic_scale" in params:
        return int(params["bic_scale"])
    if "c" in params:
        return round(float(params["c"]) * 1024 / 10)
    return KERNEL_BIC_SCALE


def kernel_c(flow: dict[str, Any]) -> float | None:
    """The C a CUBIC-family flow of a normalised scenario runs on the kernel when it is not the
    one asked for: tcp_cubic.c's ``cube_rtt_scale = bic_scale * 10``, so C moves in steps of
    10/1024 (``cubic-ios``'s 0.25 runs as bic_scale 26, 0.25390625), where the simulator takes
    round(c * 1024) / 1024. None when they agree (or the flow is no CUBIC)."""
    if is_udp(flow) or flow.get("cc") not in CUBIC_FAMILY:
        return None
    eff = {**CUBIC_FAMILY[flow["cc"]], **flow.get("cc_params", {})}
    if "c" not in eff or "bic_scale" in eff:
        return None
    ran = _bic_scale(eff) * 10
    return None if ran == round(float(eff["c"]) * 1024) else ran / 1024


def is_udp(flow: dict[str, Any]) -> bool:
    """Whether a flow of a normalised scenario is a UDP stream (``transport = "udp"``): no TCP
    knob, module parameter or congestion control applies to it."""
    return flow.get("transport", "tcp") == "udp"


def cubic_plan(flows: list[dict[str, Any]]) -> tuple[dict[str, int], dict[str, int], dict[int, str], list[str]]:
    """How the kernel runs the scenario's CUBIC flows: (module parameters, cclab_cubic
    parameters, TCP_CONGESTION name per flow index, problems).

    A flow whose C differs from the kernel's (410/1024; ``cubic-ios`` or ``cc_params.c``) runs
    ``cclab_cubic`` (BPF) with its C, beta, fast_convergence and tcp_friendliness; the others run
    the kernel's ``cubic``. Module parameters (HyStart's, and beta etc. for the kernel's cubic)
    are global, and so is cclab_cubic's map: flows sharing one must ask for the same values."""
    problems: list[str] = []
    module: dict[str, int] = {}
    bpf: dict[str, int] = {}
    names: dict[int, str] = {}
    owner: dict[tuple[str, str], int] = {}

    def put(table: dict[str, int], tag: str, key: str, value: int, i: int, v: Any, shown: str = "") -> None:
        if key in table and table[key] != value:
            problems.append(f"flows[{i}].cc_params.{shown or key} = {v} differs from flows[{owner[(tag, key)]}]: "
                            f"{'module parameters' if tag == 'module' else 'cclab_cubic parameters'} are global "
                            "on the kernel, so these flows must use the same value")
            return
        table[key] = value
        owner.setdefault((tag, key), i)

    for i, f in enumerate(flows):
        if is_udp(f) or f["cc"] not in CUBIC_FAMILY:
            continue
        eff = {**CUBIC_FAMILY[f["cc"]], **f["cc_params"]}
        for key in eff:
            if key not in CUBIC_PARAMS and key not in CUBIC_READ_ONLY:
                problems.append(f"flows[{i}].cc_params.{key}: not a CUBIC parameter the kernel can set "
                                f"(module parameters: {', '.join(CUBIC_PARAMS)}; C through cclab_cubic)")
        use_bpf = _bic_scale(eff) != KERNEL_BIC_SCALE
        names[i] = "cclab_cubic" if use_bpf else "cubic"
        for key, v in eff.items():
            if key in CUBIC_READ_ONLY and not use_bpf:
                continue
            if use_bpf and key in BPF_CUBIC_KEYS:
                if key in ("c", "bic_scale"):
                    put(bpf, "bpf", "bic_scale", _bic_scale(eff), i, v, shown=key)
                else:
                    put(bpf, "bpf", key, CUBIC_PARAMS[key](v), i, v)
            elif key in CUBIC_PARAMS:
                put(module, "module", key, CUBIC_PARAMS[key](v), i, v)
    return module, bpf, names, problems


def _read_cubic() -> dict[str, int]:
    return {k: int((CUBIC_DIR / k).read_text()) for k in CUBIC_PARAMS}


def _write_cubic(values: dict[str, int]) -> None:
    for k, v in values.items():
        (CUBIC_DIR / k).write_text(str(v))


def _read_record() -> tuple[int | None, dict[str, int]] | None:
    """(owner pid, original parameters) from CUBIC_RECORD; None without one."""
    try:
        data = json.loads(CUBIC_RECORD.read_text())
    except FileNotFoundError:
        return None
    except (OSError, json.JSONDecodeError):
        return (None, {})
    if "params" in data:
        return (data.get("pid"), {k: int(v) for k, v in data["params"].items()})
    return (None, {k: int(v) for k, v in data.items()})  # a record from before owners were kept


class CubicModuleParams:
    """Set tcp_cubic's module parameters for a run; restore the previous values on exit. The
    originals are written to CUBIC_RECORD (with this process's id) before anything is set, so
    that if the run is killed, even by SIGKILL, the next run or ``cclab kernel clean`` restores
    them (``restore_cubic_params``)."""

    def __init__(self, values: dict[str, int]) -> None:
        self.values = dict(values)
        self.before: dict[str, int] = {}

    def __enter__(self) -> CubicModuleParams:
        from .netns import write_json_atomic

        if not self.values:
            return self
        if not CUBIC_DIR.is_dir():
            raise KernelUnavailable(f"{CUBIC_DIR} is missing: this kernel has no tcp_cubic parameters to set")
        self.before = _read_cubic()
        REGISTRY.mkdir(parents=True, exist_ok=True)
        old = _read_record()
        if old and old[1]:  # a killed run's record holds the true originals
            self.before = old[1]
        write_json_atomic(CUBIC_RECORD, {"pid": os.getpid(), "params": self.before})
        try:
            _write_cubic(self.values)
        except OSError as e:
            self.__exit__()
            raise KernelUnavailable(f"cannot set tcp_cubic parameters: {e}") from e
        return self

    def __exit__(self, *exc: object) -> None:
        if self.before:
            _write_cubic(self.before)
            CUBIC_RECORD.unlink(missing_ok=True)
            self.before = {}


def restore_cubic_params(only_dead: bool = False) -> dict[str, int]:
    """Restore tcp_cubic's parameters recorded by a killed run; returns what was restored.
    ``only_dead``: leave them if the process that set them still runs (a run going on)."""
    rec = _read_record()
    if rec is None:
        return {}
    pid, before = rec
    if only_dead and isinstance(pid, int) and Path(f"/proc/{pid}").exists():
        return {}
    if before:
        _write_cubic(before)
    CUBIC_RECORD.unlink(missing_ok=True)
    return before


def set_initcwnd(ns: str, dev: str, initcwnd_pkts: int) -> None:
    """``ip route change ... initcwnd N`` on every IPv4 route through ``dev`` inside ``ns`` (the
    /32 route to the TUN peer as well as the network route), keeping each route's other
    attributes. The kernel reads it when a connection starts (net/ipv4/tcp_output.c
    tcp_init_cwnd, capped by snd_cwnd_clamp)."""
    from pyroute2 import NetNS

    with NetNS(ns) as ipr:
        idx = ipr.link_lookup(ifname=dev)
        if not idx:
            raise KernelUnavailable(f"{ns}: no device {dev}")
        routes = [r for r in ipr.get_routes(family=2, table=254) if r.get_attr("RTA_OIF") == idx[0]]
        if not routes:
            raise KernelUnavailable(f"{ns}: no route through {dev} to set initcwnd on")
        for r in routes:
            dst = r.get_attr("RTA_DST") or "0.0.0.0"
            extra = {"prefsrc": r.get_attr("RTA_PREFSRC")} if r.get_attr("RTA_PREFSRC") else {}
            ipr.route("replace", dst=f"{dst}/{r['dst_len']}", oif=idx[0], scope=r["scope"], proto=r["proto"],
                      table=254, metrics={"initcwnd": initcwnd_pkts}, **extra)
