"""The kernel knobs a scenario sets, and how each is undone.

Per namespace (gone with the namespace; the host is never touched): tcp_no_metrics_save, SACK,
timestamps, F-RTO, rto_min, TSQ (tcp_limit_output_bytes), ECN and any ``kernel.sysctls``;
initcwnd as a route metric on the sender's route. Global (the whole machine): CUBIC's module
parameters, set only when a scenario's cubic flows carry ``cc_params``, restored afterwards, and
recorded in ``/run/cclab/tcp_cubic-params.json`` first so that ``cclab kernel clean`` can restore
them after a crash.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .netns import REGISTRY, KernelUnavailable

__all__ = ["namespace_sysctls", "CUBIC_PARAMS", "cubic_module_params", "CubicModuleParams",
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
#: Read-only on this kernel (tcp_cubic is built in: bic_scale is 0444); C is fixed at 410/1024.
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
    if kernel.get("tcp_ecn") is not None:
        k["net/ipv4/tcp_ecn"] = str(int(kernel["tcp_ecn"]))
    for key, v in (kernel.get("sysctls") or {}).items():
        k[key.replace(".", "/")] = str(v)
    return k


def cubic_module_params(flows: list[dict[str, Any]]) -> tuple[dict[str, int], list[str]]:
    """The module parameters the scenario's cubic flows ask for, and what cannot be done.

    Every cubic flow must ask for the same values (they are global)."""
    problems: list[str] = []
    wanted: dict[str, int] = {}
    seen: dict[str, tuple[int, Any]] = {}
    for i, f in enumerate(flows):
        if f["cc"] != "cubic" or not f["cc_params"]:
            continue
        for key, v in f["cc_params"].items():
            where = f"flows[{i}].cc_params.{key}"
            if key in CUBIC_READ_ONLY:
                scale = round(float(v) * 1024 / 10) if key == "c" else int(v)
                if scale != KERNEL_BIC_SCALE:
                    problems.append(f"{where} = {v}: CUBIC's C (bic_scale) is read-only on this kernel (tcp_cubic "
                                    "is built in, C = 410/1024); use the simulator backend")
                continue
            if key not in CUBIC_PARAMS:
                problems.append(f"{where}: not a tcp_cubic module parameter of this kernel "
                                f"(writable: {', '.join(CUBIC_PARAMS)})")
                continue
            kv = CUBIC_PARAMS[key](v)
            if key in seen and seen[key][1] != kv:
                problems.append(f"{where} = {v} differs from flows[{seen[key][0]}]: module parameters are global "
                                "on the kernel, so every cubic flow must use the same value")
            seen.setdefault(key, (i, kv))
            wanted[key] = kv
    for i, f in enumerate(flows):
        if f["cc"] == "cubic" and wanted and set(f["cc_params"]) - set(CUBIC_READ_ONLY) != set(wanted):
            problems.append(f"flows[{i}].cc_params: must name the same parameters as the other cubic flows "
                            f"({', '.join(sorted(wanted))}): module parameters are global on the kernel")
    return wanted, problems


def _read_cubic() -> dict[str, int]:
    return {k: int((CUBIC_DIR / k).read_text()) for k in CUBIC_PARAMS}


def _write_cubic(values: dict[str, int]) -> None:
    for k, v in values.items():
        (CUBIC_DIR / k).write_text(str(v))


class CubicModuleParams:
    """Set tcp_cubic's module parameters for a run; restore the previous values on exit."""

    def __init__(self, values: dict[str, int]) -> None:
        self.values = dict(values)
        self.before: dict[str, int] = {}

    def __enter__(self) -> CubicModuleParams:
        if not self.values:
            return self
        if not CUBIC_DIR.is_dir():
            raise KernelUnavailable(f"{CUBIC_DIR} is missing: this kernel has no tcp_cubic parameters to set")
        self.before = _read_cubic()
        REGISTRY.mkdir(parents=True, exist_ok=True)
        if not CUBIC_RECORD.exists():  # a crashed run's record holds the true originals
            CUBIC_RECORD.write_text(json.dumps(self.before))
        else:
            self.before = json.loads(CUBIC_RECORD.read_text())
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


def restore_cubic_params() -> dict[str, int]:
    """Restore tcp_cubic's parameters recorded by a crashed run; returns what was restored."""
    if not CUBIC_RECORD.exists():
        return {}
    before = json.loads(CUBIC_RECORD.read_text())
    _write_cubic(before)
    CUBIC_RECORD.unlink()
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
