"""Run a scenario on this machine's Linux kernel: one namespace per host, the links emulated by
``cclab-link`` (the simulator's own cclab-net models, in real time), kernel TCP senders that
sample TCP_INFO every 10 ms. Returns a RunResult shaped like the simulator's.

What the kernel cannot do is refused before anything is created (``parity``): algorithms it lacks
(it has reno, cubic, bbr), presets needing other constants, settings only the simulator has
(kernel_hz, delayed_ack off, tlp off, fixed receive window), and timeout settings it cannot run
(rto.py: an initial RTO other than 1 s or a per-flow minimum RTO need the BPF sock_ops loader).
What it runs close to, not exactly as, asked is listed in the summary's ``deviations``. Each TCP
flow's summary has the spurious-timeout facts (sto.py) from cclab-link's ledger and the BPF
sock_ops program's timeout log (run whenever it is built), and the events table a ``sto`` row
per data RTO, as the simulator's.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pandas as pd

from .._errors import RunStopped
from ..result import CA_STATES, RunResult, jain_index
from ..scenario import Scenario, load_scenario
from .link import LinkEmulator, link_accounting, tun_kernel_stats
from .clamp import CwndClamp, is_built as clamp_built, kernel_hz
from .jiffies import jiffies_offset, kernel_clock
from .rto import rto_plan, s3_deviations
from .sto import flow_sto_facts, read_tcpext
from .sto_log import kernel_detection, sto_log_of
from .middleware import MiddlewareCC, TerminalMiddleware, middleware_hosts, read_log
from . import bpfcc, child, mptcp
from .knobs import CUBIC_FAMILY, CubicModuleParams, cubic_plan, is_udp, kernel_c, namespace_sysctls, set_initcwnd
from .device import configure_device, device_stats
from .tcpinfo import TRACE_COLUMNS
from .udp import udp_stats
from .netns import (KernelUnavailable, Namespaces, address_iface, destroy_sockets, kill_inside, require_root,
                    set_sysctls, tmp_prefix)
from .topology import flow_paths, plan_network

__all__ = ["run_kernel", "parity", "KERNEL_ALGORITHMS"]

#: Congestion controls built into this machine's kernel (shared/docs/KERNEL.md).
KERNEL_ALGORITHMS = ("reno", "cubic", "bbr")
_BASE_PORT = 5201
#: The simulator's BBR versions that upstream Linux does not have (google/bbr's v2 and v3 branches).
_OUT_OF_TREE_BBR = {"bbr2": "BBRv2", "bbr3": "BBRv3"}
#: tcp_limit_output_bytes at its largest (an int sysctl): what tsq = "off" runs as.
_TSQ_LIMIT_MAX = 2**31 - 1
#: net.ipv4.tcp_rmem on every receiving host: Linux 6.18's defaults (crates/cclab-sim tcp/rcvbuf.rs).
_TCP_RMEM = "4096 131072 33554432"


def flow_deviations(d: dict[str, Any]) -> list[str]:
    """What the kernel runs close to, not exactly as, the scenario's flows ask (6.18's TCP)."""
    c_runs = [(i, kernel_c(f)) for i, f in enumerate(d["flows"])]
    return [f"flows[{i}].ack_counting = 'acks' (Linux before 3.18) runs as 6.18's per-segment counting"
            for i, f in enumerate(d["flows"]) if f.get("ack_counting", "segments") != "segments"
            ] + [f"flows[{i}].cc_params.c runs as {c:.8g} (the kernel's C is bic_scale x 10 / 1024)"
                 for i, c in c_runs if c is not None] + mptcp.coupled_deviations(d) + mptcp.stack_deviations(d) + \
        s3_deviations(d["flows"])


#: TCP's timestamp option on every segment (net/ipv4/tcp_output.c: TCPOLEN_TSTAMP_ALIGNED).
_TS_OPTION_BYTES = 12


def user_mss(f: dict[str, Any]) -> int:
    """The flow's TCP_MAXSEG: ``mss_bytes`` is the payload per segment (the simulator's and
    Linux's mss_cache), while TCP_MAXSEG bounds the MSS before options (``user_mss`` clamps
    ``rx_opt.mss_clamp``; tcp_sync_mss then subtracts the timestamp option,
    net/ipv4/tcp_output.c ``tcp_mtu_to_mss``/``__tcp_mtu_to_mss``). So with timestamps the sender
    asks for 12 bytes more: 1448 + 12 = 1460, a 1500-byte packet as in the simulator."""
    return int(f["mss_bytes"]) + (_TS_OPTION_BYTES if f["timestamps"] else 0)


def parity(sc: Scenario) -> list[str]:
    """What in ``sc`` the kernel backend cannot do, each with what to use instead."""
    problems = []
    d = sc.to_core_dict()
    for i, f in enumerate(d["flows"]):
        where = f"flows[{i}]"
        if is_udp(f):
            continue  # cclab.kernel.udp runs it; no TCP setting applies
        if f["cc"] in _OUT_OF_TREE_BBR:
            problems.append(f"{where}.cc = {f['cc']!r}: upstream Linux (6.18) has no {_OUT_OF_TREE_BBR[f['cc']]}, only "
                            "BBRv1 (tcp_bbr.c); google/bbr's versions are out of tree. Use cc = 'bbr' (BBRv1) on the "
                            "kernel, or the simulator backend for it")
        elif f["cc"] not in KERNEL_ALGORITHMS and f["cc"] not in CUBIC_FAMILY and not (
                mptcp.is_mptcp(f) and f["cc"] in mptcp.COUPLED_ALGORITHMS):  # mptcp.flow_problems says why
            problems.append(f"{where}.cc = {f['cc']!r}: this kernel has only {', '.join(KERNEL_ALGORITHMS)}; "
                            "use the simulator backend for it")
        if f["cc_params"] and f["cc"] not in CUBIC_FAMILY:
            problems.append(f"{where}.cc_params: {f['cc']}'s tunables are not module parameters of this kernel; "
                            "use the simulator backend")
        for key, ok, msg in (
            ("delayed_ack", True, "the receiver's delayed ACKs cannot be turned off"),
            ("ack_every_pkts", 2, "the receiver ACKs as Linux does (no stretch ACKs)"),
            ("tlp", True, "tail loss probes cannot be turned off per flow"),
            ("rwnd_bytes", 0, "a fixed receive window is simulator-only"),
            ("handshake", True, "the kernel always opens a connection with its handshake"),
        ):
            if f[key] != ok:
                problems.append(f"{where}.{key} = {f[key]}: {msg}; use the simulator backend")
        w = f.get("workload")
        if w and (w["connections"] > 1 or w["sizes"] != "fixed"):
            problems.append(f"{where}.workload: connections one after another are simulator-only; use the "
                            "simulator backend (or one flow per transfer)")
        if f["ecn"] == "low":
            problems.append(f"{where}.ecn = 'low': google/bbr's ecn_low route feature (precise CE echo) is not in "
                            "upstream Linux 6.18; use ecn = 'on' (RFC 3168) or the simulator backend")
        for j, g in enumerate(d["flows"][:i]):
            if g["sender"] == f["sender"] and not is_udp(g):
                for key, what in (("initial_cwnd_pkts", "a route metric of the sender's route"),
                                  ("sack", "a sysctl of the sender's namespace"),
                                  ("timestamps", "a sysctl of the sender's namespace"),
                                  ("frto", "a sysctl of the sender's namespace"),
                                  ("ecn", "a sysctl of the sender's namespace (tcp_ecn)")):
                    if g[key] != f[key]:
                        problems.append(f"{where}.{key} = {f[key]} differs from flows[{j}] on the same sender: on "
                                        f"the kernel it is {what}; give the flows their own senders")
    stacks = sc.lowered().get("stacks", {})
    for h in sorted({f["sender"] for f in d["flows"] if not is_udp(f)}):
        if stacks.get(h, {}).get("sndbuf") == "unlimited":
            problems.append(f"host {h!r}: sndbuf = 'unlimited' is simulator-only (a kernel socket always has a send "
                            "buffer); raise tcp_wmem_bytes instead, e.g. [4096, 16384, 33554432]")
    problems += rto_plan(d["flows"], clamp_built(), kernel_hz(), middleware_hosts(d)).problems
    _, bpf, _, cubic_problems = cubic_plan(d["flows"])
    problems += cubic_problems
    problems += plan_network(sc.lowered()).problems
    problems += _middleware_problems(d)
    problems += mptcp.flow_problems(d, middleware_hosts(d))
    if bpf and not bpfcc.object_path().is_file():
        problems.append(f"CUBIC with C other than 410/1024 runs as the BPF congestion control cclab_cubic, whose "
                        f"object {bpfcc.object_path()} is not built: run `make bpf` (clang, bpftool) or use the "
                        "simulator backend")
    return problems


def _middleware_problems(d: dict[str, Any]) -> list[str]:
    """The middleware runs on the kernel as cclab_cubic_mw (the kernel's CUBIC with a window
    range) behind a daemon per terminal: its hosts' flows must be plain CUBIC."""
    hosts = middleware_hosts(d)
    problems = []
    for i, f in enumerate(d["flows"]):
        if f["sender"] not in hosts or is_udp(f):
            continue
        where = f"flows[{i}]"
        if f["cc"] != "cubic" or f["cc_params"]:
            problems.append(f"{where}.cc = {f['cc']!r} (cc_params {f['cc_params']}): on the kernel the middleware keeps "
                            "cwnd in its range inside cclab_cubic_mw, the kernel's own CUBIC; use cc = 'cubic' without "
                            "cc_params on the middleware's hosts, or the simulator backend")
        if f["max_cwnd_pkts"]:
            problems.append(f"{where}.max_cwnd_pkts: the sender runs the middleware, whose cap owns the sender's "
                            "cgroup; leave max_cwnd_pkts out (the middleware's table caps cwnd) or use the simulator")
    if hosts and not bpfcc.object_path(bpfcc.BPF_CUBIC_MW).is_file():
        problems.append(f"middleware: its BPF congestion control {bpfcc.object_path(bpfcc.BPF_CUBIC_MW)} is not built: "
                        "run `make bpf` (clang, bpftool) or use the simulator backend")
    return problems


_TCP, _UDP = "cclab.kernel.traffic", "cclab.kernel.udp"


def _netns_exec(ns: str, *args: str, module: str = _TCP) -> list[str]:
    return ["ip", "netns", "exec", ns, sys.executable, "-m", module, *args]


def run_kernel(scenario: Any, seed: int | None = None, **overrides: Any) -> RunResult:
    """Run ``scenario`` on the kernel (root). Raises KernelUnavailable with what to use instead."""
    from .. import __version__

    if seed is not None:
        overrides["seed"] = seed
    sc = load_scenario(scenario, **overrides)
    problems = parity(sc)
    if problems:
        raise KernelUnavailable("the kernel backend cannot run this scenario:\n  " + "\n  ".join(problems))
    require_root()
    d = sc.to_core_dict()
    net = plan_network(sc.lowered())
    hosts = net.hosts
    mw_hosts = middleware_hosts(d)
    run_id = f"{os.getpid() % 100000}{int(time.time() * 1000) % 10000}"
    interval_ms = d["sim"]["trace_interval_ms"]
    t_wall = time.perf_counter()
    load_at_start = os.getloadavg()[0]
    helpers: list[subprocess.Popen[str]] = []  # traffic processes: killed however the run ends
    # Every step that makes or undoes something runs with the stop signals held (_Shielded):
    # a signal then stops the run between two steps, never half-way through one.
    with _signals_unwind(), _Shielded(tempfile.TemporaryDirectory(prefix=tmp_prefix())) as tmp, \
            _Shielded(Namespaces(run_id, list(hosts.values()), tmp_dir=tmp)) as nss, _Shielded(_killed_at_exit(helpers)):
        ns = {h: nss.names[v] for h, v in hosts.items()}
        spec = net.emulator_spec(d["seed"], ns, Path(tmp) / "link-stats.json", interval_ms)
        knobs: dict[str, dict[str, str]] = {}
        kernel = sc.kernel.model_dump()
        rto = rto_plan(d["flows"], clamp_built(), kernel_hz(), mw_hosts)
        for f in (f for f in d["flows"] if not is_udp(f)):
            for host in (f["sender"], f["receiver"]):
                knobs.setdefault(ns[host], {}).update(namespace_sysctls(f, kernel, sender=host == f["sender"]))
            if not f.get("dsack_undo", True):
                knobs[ns[f["receiver"]]]["net/ipv4/tcp_dsack"] = "0"  # rto.py: the receiver sends no D-SACK
            # The receive buffer's bounds the simulator's autotuning follows (tcp/rcvbuf.rs,
            # TCP_RMEM_BYTES: 6.18's defaults); a namespace otherwise copies the host's.
            knobs[ns[f["receiver"]]].setdefault("net/ipv4/tcp_rmem", _TCP_RMEM)
        for host, rmin in rto.sysctl_min_ms.items():  # the sender's own minimum RTO (rto.py)
            knobs[ns[host]]["net/ipv4/tcp_rto_min_us"] = str(int(rmin * 1000))
        for h, st in net.stacks.items():
            if st.get("tcp_wmem_bytes") and any(f["sender"] == h and not is_udp(f) for f in d["flows"]):
                # The send buffer's bounds (the simulator's [host] tcp_wmem_bytes); a namespace
                # otherwise copies the host's at creation, whatever they are. [kernel.sysctls]
                # still wins (the simulator does not read it).
                knobs.setdefault(ns[h], {}).setdefault("net/ipv4/tcp_wmem",
                                                       " ".join(str(int(x)) for x in st["tcp_wmem_bytes"]))
            if st.get("device"):
                limit = _TSQ_LIMIT_MAX if st.get("tsq") == "off" else st["tsq_limit_bytes"]
                knobs.setdefault(ns[h], {})["net/ipv4/tcp_limit_output_bytes"] = str(limit)
        for f in (f for f in d["flows"] if mptcp.is_mptcp(f)):
            for host in (f["sender"], f["receiver"]):
                knobs[ns[host]]["net/mptcp/enabled"] = "1"
        for name, k in knobs.items():
            set_sysctls(name, k)
        cubic_params, bpf_cubic, cc_names, _ = cubic_plan(d["flows"])
        for k, f in enumerate(d["flows"]):
            if mptcp.is_mptcp(f) and f["cc"] in mptcp.COUPLED_ALGORITHMS:
                cc_names[k] = "reno"  # upstream has no coupling (a deviation: mptcp.coupled_deviations)
        caps = {_BASE_PORT + k: f["max_cwnd_pkts"] for k, f in enumerate(d["flows"]) if f["max_cwnd_pkts"]}
        rtos = {_BASE_PORT + k: v for k, v in rto.bpf.items()}
        # The sock_ops program also logs each socket's timeouts (sto.py's per-RTO rows): run it
        # whenever it is built and a TCP flow's sender can join its cgroup.
        sto_log = clamp_built() and any(not is_udp(f) and not mptcp.is_mptcp(f) and f["sender"] not in mw_hosts
                                        for f in d["flows"])
        for k, f in enumerate(d["flows"]):
            if f["sender"] in mw_hosts:
                cc_names[k] = bpfcc.BPF_CUBIC_MW
        daemons: dict[str, TerminalMiddleware] = {}
        # Named in the run's record before they are registered: a SIGKILLed run's are removed by
        # the next run (netns.reap_stale_runs).
        nss.note(bpf=([bpfcc.BPF_CUBIC] if bpf_cubic else []) + ([bpfcc.BPF_CUBIC_MW] if mw_hosts else []))
        with _Shielded(LinkEmulator(spec, workdir=Path(tmp))) as emu, _Shielded(CubicModuleParams(cubic_params)), \
                _Shielded(bpfcc.BpfCubic(bpf_cubic) if bpf_cubic else contextlib.nullcontext()), \
                _Shielded(CwndClamp(f"run{run_id}", caps, rtos=rtos,
                                    sto_log=Path(tmp) / "sto-log.jsonl" if sto_log else None)
                          if caps or rtos or sto_log else contextlib.nullcontext()) as clamp, \
                _Shielded(MiddlewareCC() if mw_hosts else contextlib.nullcontext()) as mwcc, \
                _Shielded(contextlib.ExitStack()) as stack:
            # Runs after the daemons stop and before the BPF congestion controls are unregistered:
            # no process or socket of the run may still hold one (see _quiesce).
            stack.callback(_quiesce, list(nss.created), helpers)
            for i in net.interfaces.values():
                address_iface(ns[i.host], i.dev, i.addr, i.routes)
                if i.device:
                    configure_device(ns[i.host], i.dev, i.device["rate_bps"], i.device["queue_pkts"])
            # Multipath TCP flows between the same two hosts share their endpoints, limits and rules
            # (parity made sure their paths are the same): set once.
            configured = set()
            for k, sfs in net.subflows.items():
                f = d["flows"][k]
                if (f["sender"], f["receiver"]) in configured:
                    continue
                configured.add((f["sender"], f["receiver"]))
                for name, set_ in mptcp.configure(ns[f["sender"]], ns[f["receiver"]], sfs).items():
                    knobs.setdefault(name, {}).update(set_)
            for (s_if, _, _), f in zip(net.flows, d["flows"]):
                if f["initial_cwnd_pkts"] != 10 and not is_udp(f):
                    set_initcwnd(ns[s_if.host], s_if.dev, f["initial_cwnd_pkts"])
                    knobs[ns[s_if.host]][f"route initcwnd {s_if.dev}"] = str(f["initial_cwnd_pkts"])
            # One middleware daemon per terminal, before the flows (their sockets join its cgroup).
            # A terminal on a DCF cell counts by limited broadcast on its interface there, which
            # cclab-link relays through the access point to the cell's other hosts.
            cells = {m["name"] for m in net.media if m["kind"] == "dcf"}
            for h in mw_hosts:
                cell_if = next((i for i in net.interfaces.values() if i.host == h and i.link in cells), None)
                daemons[h] = stack.enter_context(_Shielded(TerminalMiddleware(
                    ns[h], h, d["middleware"], map_id=mwcc.map_id, cap=sc.kernel.middleware_cap,
                    log_path=Path(tmp) / f"middleware-{h}.csv",
                    broadcast="255.255.255.255" if cell_if else None, device=cell_if.dev if cell_if else None)))
            procs = []
            go = Path(tmp) / "go"
            for k, f in enumerate(d["flows"]):
                ready = Path(tmp) / f"ready{k}"
                port = str(_BASE_PORT + k)
                if is_udp(f):
                    cmd = _netns_exec(ns[f["receiver"]], "recv", "--port", port, "--ready-file", str(ready),
                                      "--go-file", str(go), "--until-s", str(d["duration_s"]), module=_UDP)
                elif mptcp.is_mptcp(f):
                    cmd = _netns_exec(ns[f["receiver"]], "recv", "--port", port, "--ready-file", str(ready), "--mptcp",
                                      "--go-file", str(go), "--until-s", str(d["duration_s"]))
                else:
                    cmd = _netns_exec(ns[f["receiver"]], "recv", "--port", port, "--ready-file", str(ready))
                rcv = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                       preexec_fn=child.die_with_parent)
                helpers.append(rcv)
                t_end = time.monotonic() + 10
                while not ready.exists() and time.monotonic() < t_end:
                    time.sleep(0.01)
                procs.append((k, f, rcv))
            # Every sender starts now and waits for the run's time zero; zero is the emulator's
            # zero too, so outages, delay spikes and capacity traces line up with the flows.
            senders = []
            for k, f, _ in procs:
                ready = Path(tmp) / f"sender-ready{k}"
                if is_udp(f):
                    args = ["send", "--dst", net.flows[k][1].addr, "--port", str(_BASE_PORT + k),
                            "--rate-bps", str(f["rate_bps"]), "--payload-bytes", str(f["payload_bytes"]),
                            "--go-file", str(go), "--ready-file", str(ready), "--start-s", str(f["start_s"]),
                            "--until-s", str(d["duration_s"]), "--size", str(f["size_bytes"])]
                    senders.append((k, f, subprocess.Popen(_netns_exec(ns[f["sender"]], *args, module=_UDP),
                                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                                           preexec_fn=child.die_with_parent)))
                    helpers.append(senders[-1][2])
                    continue
                args = ["send", "--dst", net.flows[k][1].addr, "--port", str(_BASE_PORT + k),
                        "--cc", cc_names.get(k, f["cc"]), "--mss", str(user_mss(f)),
                        "--go-file", str(go), "--ready-file", str(ready),
                        "--start-s", str(f["start_s"]), "--until-s", str(d["duration_s"]),
                        "--size", str(f["size_bytes"]), "--interval-ms", str(interval_ms),
                        "--writer", f["writer"],
                        "--out", str(Path(tmp) / f"flow{k}.csv")]
                if f["rto_max_ms"] != 120000.0:
                    args += ["--rto-max-ms", str(int(f["rto_max_ms"]))]
                if mptcp.is_mptcp(f):
                    pairs = [f"{sf.snd.addr}>{sf.rcv.addr}" for sf in net.subflows[k]]
                    args += ["--mptcp", "--subflows", ",".join(pairs)]
                mw = daemons.get(f["sender"])
                preexec = mw.preexec if mw else clamp.preexec if clamp else None
                senders.append((k, f, subprocess.Popen(_netns_exec(ns[f["sender"]], *args), stdout=subprocess.PIPE,
                                                       stderr=subprocess.PIPE, text=True,
                                                       preexec_fn=child.preexec(preexec))))
                helpers.append(senders[-1][2])
            t_end = time.monotonic() + 30
            while not all((Path(tmp) / f"sender-ready{k}").exists() for k, _, _ in senders):
                if time.monotonic() > t_end or any(p.poll() is not None for _, _, p in senders):
                    raise RuntimeError("a sender did not start: " + "; ".join(
                        p.communicate()[1].strip()[-300:] for _, _, p in senders if p.poll() is not None))
                time.sleep(0.005)
            jiffies_c = jiffies_offset(hz) if (hz := kernel_hz()) else None
            t0 = emu.start_clock()
            kclock = kernel_clock(t0, hz, jiffies_c)
            tmp_go = go.with_suffix(".tmp")
            tmp_go.write_text(repr(t0))
            tmp_go.rename(go)
            totals = {}
            for k, f, p in senders:
                out, errtxt = p.communicate(timeout=d["duration_s"] + 60)
                if p.returncode != 0:
                    raise RuntimeError(f"flow {f['name']}: sender failed: {errtxt.strip()[-500:]}")
                totals[k] = json.loads(out.strip().splitlines()[-1])
                totals[k]["start_s"] = f["start_s"]
            for k, f, r in procs:
                out, errtxt = r.communicate(timeout=30)
                if is_udp(f):
                    if r.returncode != 0:
                        raise RuntimeError(f"flow {f['name']}: UDP receiver failed: {errtxt.strip()[-500:]}")
                    totals[k]["udp"] = udp_stats(totals[k], json.loads(out.strip().splitlines()[-1]))
                elif mptcp.is_mptcp(f):
                    if r.returncode != 0:
                        raise RuntimeError(f"flow {f['name']}: MPTCP receiver failed: {errtxt.strip()[-500:]}")
                    got = json.loads(out.strip().splitlines()[-1])
                    totals[k]["received_by_end_bytes"] = got["received_by_end_bytes"]
            # The TcpExt counters of every TCP flow's namespaces, before they go (sto.py).
            tcp_counters = {h: read_tcpext(ns[h]) for h in sorted({x for f in d["flows"] if not is_udp(f)
                                                                   for x in (f["sender"], f["receiver"])})}
            devices = [{"name": i.device["name"], **device_stats(ns[i.host], i.dev)}
                       for i in net.interfaces.values() if i.device]
            tun_kernel = {p["name"]: tun_kernel_stats(p["netns"], p["dev"]) for p in spec["ports"]}
            link_stats = emu.stop()
            for p in link_stats.get("ports", []):
                p.update(tun_kernel.get(p["name"], {}))
            # Per link: nothing lost that the model did not drop (link.link_accounting).
            link_stats["accounting"] = link_accounting(link_stats, spec["routes"])
            link_stats["links"] = link_stats.get("links", []) + devices
            clamp_status = clamp.close() if clamp else None
            sto_events = clamp.events() if clamp else []
            mw_status = {h: {**m.ready, "final": m.close()} for h, m in daemons.items()}
            mw_frames = []
            # The daemons name connections by their 4-tuple; the run's flows by their names.
            by_peer = {f"{net.flows[k][1].addr}:{_BASE_PORT + k}": f["name"] for k, f in enumerate(d["flows"])}
            for h, m in daemons.items():
                log = read_log(m.log_path)
                log["t_s"] = log["t_s"] + m.ready["zero"] - t0  # the daemon's clock -> the run's
                log["flow"] = [by_peer.get(x.split("->")[-1], x) for x in log["flow"]]
                mw_frames.append(log[(log["t_s"] >= 0) & (log["t_s"] <= d["duration_s"])])
        links = pd.read_csv(spec["links_path"])
        links = links[(links["t_s"] >= 0) & (links["t_s"] <= d["duration_s"])]
        frames = {}
        for k, f in enumerate(d["flows"]):
            if is_udp(f):
                continue
            df = pd.read_csv(Path(tmp) / f"flow{k}.csv")
            df.insert(0, "flow", f["name"])
            frames[k] = df
    glob = {"tcp_cubic": cubic_params} if cubic_params else {}
    if bpf_cubic:
        glob["cclab_cubic"] = bpf_cubic
    extra = {"global_knobs": glob, "tcp_congestion": {f["name"]: cc_names.get(k, f["cc"])
                                                      for k, f in enumerate(d["flows"])},
             "cwnd_clamp": None if clamp_status is None or not caps else {"caps_by_port": clamp_status["caps"],
                                                              "applied_pkts": clamp_status["applied"]},
             "rto_settings": {"how": {d["flows"][k]["name"]: h for k, h in rto.how.items()},
                              "sender_rto_min_ms": rto.sysctl_min_ms,
                              "bpf": None if clamp_status is None else {"rtos_by_port": clamp_status["rtos"],
                                                                         "counts": clamp_status["rto_counts"]}},
             "tcp_counters": tcp_counters,
             # where the run's zero fell on the kernel's tick grid ([sim] settings of these names; jiffies.py)
             "kernel_clock": kclock,
             # the machine's 1-minute load average when the run began and ended: a run's timing
             # (the emulator's lateness, links' "lateness") suffers on a loaded machine
             "host_load_1min": [round(load_at_start, 2), round(os.getloadavg()[0], 2)],
             "deviations": net.deviations + flow_deviations(d)}
    if mw_status:
        extra["middleware"] = {"cap": sc.kernel.middleware_cap, "daemons": mw_status}
    paths = {k: [sf.path for sf in sfs] for k, sfs in net.subflows.items()}
    r = _result(sc, d, frames, totals, link_stats, links, knobs, extra, time.perf_counter() - t_wall, __version__,
                paths)
    # Spurious-timeout facts per TCP flow (sto.py): per RTO from the sock_ops program's log where
    # the flow's sender ran it; else the estimate, with namespace counters only for a sender's sole
    # TCP flow.
    tcp_flows = [k for k, f in enumerate(d["flows"]) if not is_udp(f)]
    sto_rows = []
    for k in tcp_flows:
        f = d["flows"][k]
        if mptcp.is_mptcp(f):
            continue  # several subflows: the ledger and tcp_info are per subflow, not attributed here
        alone = sum(d["flows"][j]["sender"] == f["sender"] for j in tcp_flows) == 1
        logged = sto_log and f["sender"] not in mw_hosts
        facts = flow_sto_facts(totals[k], link_stats.get("tcp", []), net.flows[k][1].addr, _BASE_PORT + k,
                               tcp_counters[f["sender"]] if alone else None,
                               log=sto_log_of(sto_events, _BASE_PORT + k, t0) if logged else None,
                               flow=kernel_detection(f, knobs.get(ns[f["sender"]], {}), knobs.get(ns[f["receiver"]], {})))
        sto_rows += [{"run": sc.name, "t_s": x["t_s"], "flow": f["name"], "kind": "sto", "detail": x["detail"]}
                     for x in facts.pop("rows", [])]
        r.summary["flows"][k].update(facts)
    if sto_rows:
        rows = pd.DataFrame(sto_rows, columns=r.events.columns)
        r.events = pd.concat([r.events, rows], ignore_index=True) if len(r.events) else rows
    if mw_frames:
        mwt = pd.concat(mw_frames, ignore_index=True).sort_values(["t_s", "host"], kind="stable", ignore_index=True)
        mwt.insert(0, "run", pd.Categorical([sc.name] * len(mwt)))
        st = mwt["ca_state"]
        mwt["ca_state"] = pd.Categorical([CA_STATES[int(x)] if pd.notna(x) else None for x in st], categories=CA_STATES)
        r.middleware = mwt
    return r


class _Deferral:
    """Stop signals (SIGINT, SIGTERM, SIGHUP) that arrive while a step of the run's set-up or
    teardown is on (``depth`` > 0) wait in ``pending`` until it ends."""

    depth = 0
    pending: int | None = None


def _stop_exception(signum: int) -> BaseException:
    return KeyboardInterrupt() if signum == signal.SIGINT else RunStopped(signum)


def _take_pending() -> BaseException | None:
    if _Deferral.depth == 0 and _Deferral.pending is not None:
        signum, _Deferral.pending = _Deferral.pending, None
        return _stop_exception(signum)
    return None


class _Shielded:
    """A context manager whose ``__enter__`` and ``__exit__`` run with the stop signals deferred
    (``_Deferral``): a Ctrl-C or SIGTERM during ``bpftool struct_ops unregister``, a cgroup's
    removal or cclab-link's stop waits for it to finish, then stops the run. One that came
    while entering undoes the step at once and raises."""

    def __init__(self, cm: Any) -> None:
        self.cm = cm

    def __enter__(self) -> Any:
        _Deferral.depth += 1
        try:
            value = self.cm.__enter__()
        finally:
            _Deferral.depth -= 1
        stop = _take_pending()
        if stop is not None:
            self.__exit__(type(stop), stop, None)
            raise stop
        return value

    def __exit__(self, et: Any, e: Any, tb: Any) -> Any:
        _Deferral.depth += 1
        try:
            suppress = self.cm.__exit__(et, e, tb)
        finally:
            _Deferral.depth -= 1
        if et is None:  # a signal during a clean exit stops the run now; else the error unwinds
            stop = _take_pending()
            if stop is not None:
                raise stop
        return suppress


@contextlib.contextmanager
def _signals_unwind() -> Iterator[None]:
    """While a kernel run is on, SIGTERM and SIGHUP raise RunStopped (what timeout,
    systemd, job schedulers and a closed terminal send), so they tear down as Ctrl-C does; all
    three wait while a step is being made or undone (``_Shielded``)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers belong to the main thread; a run elsewhere keeps the defaults
        return

    owner = os.getpid()

    def stop(signum: int, _frame: Any) -> None:
        if os.getpid() != owner:
            # A process forked during the run (pyroute2's netns helper, a sysctl writer) inherits
            # this handler: there the signal must do what it always did, end that process, not
            # unwind a copy of the run.
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        if _Deferral.depth > 0:
            _Deferral.pending = _Deferral.pending or signum
            return
        raise _stop_exception(signum)

    _Deferral.depth, _Deferral.pending = 0, None
    before = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
        _Deferral.depth = 0
        late = _take_pending()
        if late is not None:
            raise late
    finally:
        _Deferral.pending = None
        for sig, h in before.items():
            signal.signal(sig, h)


@contextlib.contextmanager
def _killed_at_exit(procs: list[subprocess.Popen[str]]) -> Iterator[None]:
    """Kill and reap every process in ``procs`` still running when the block ends (an error or a
    signal mid-run); on a normal end they have exited already."""
    try:
        yield
    finally:
        for p in procs:
            child.kill(p)


def _quiesce(namespaces: list[str], procs: list[subprocess.Popen[str]]) -> None:
    """Before the run's BPF congestion controls are unregistered: kill its traffic processes and
    anything else left in its namespaces, and destroy the TCP sockets they leave (a connection
    whose process was killed, or whose FIN the stopped emulator no longer carries, would hold
    its congestion control for up to two minutes; netns.destroy_sockets)."""
    for p in procs:
        child.kill(p)
    for name in namespaces:
        kill_inside(name)
    for name in namespaces:
        destroy_sockets(name)


def _result(sc: Scenario, d: dict[str, Any], frames: dict[int, pd.DataFrame], totals: dict[int, dict[str, Any]],
            link_stats: dict[str, Any], links_csv: pd.DataFrame, knobs: dict[str, dict[str, str]], extra: dict[str, Any], wall_s: float,
            version: str, paths: dict[int, list[list[str]]] | None = None) -> RunResult:
    names = [f["name"] for f in d["flows"]]
    # Only TCP flows have TCP_INFO rows (an empty table of the same columns when there are none).
    flows = (pd.concat(list(frames.values()), ignore_index=True) if frames
             else pd.DataFrame({"flow": pd.Series(dtype=object),
                                **{c: pd.Series(dtype=np.float64) for c in TRACE_COLUMNS}}))
    n = len(flows)
    flows.insert(0, "run", pd.Categorical([sc.name] * n))
    flows["flow"] = pd.Categorical(flows["flow"], categories=names)
    # A Multipath TCP flow's rows are its subflows' (traffic.py wrote the column); a TCP flow is subflow 0.
    sub = flows.pop("subflow").fillna(0) if "subflow" in flows else pd.Series(np.zeros(n))
    flows.insert(2, "subflow", sub.to_numpy().astype(np.int32))
    flows["ssthresh_pkts"] = pd.array(flows["ssthresh_pkts"].round().astype("Int64"), dtype="Int64")
    flows["ca_state"] = pd.Categorical(np.array(CA_STATES, dtype=object)[flows["ca_state"].astype(int)],
                                       categories=CA_STATES)
    flows["delivered_bytes"] = (flows["delivered_bytes"] - 1).clip(lower=0)  # tcpi_bytes_acked counts the SYN
    ev = []
    for (name, k), g in flows.groupby(["flow", "subflow"], observed=True):
        where = f" on subflow {k}" if paths and names.index(name) in paths else ""
        st = g["ca_state"].astype(str).to_numpy()
        for i in range(1, len(st)):
            if st[i] == "loss" and st[i - 1] != "loss":
                ev.append({"run": sc.name, "t_s": float(g["t_s"].iloc[i]), "flow": name, "kind": "rto",
                           "detail": f"ca_state entered Loss (sampled){where}"})
            elif st[i] == "recovery" and st[i - 1] in ("open", "disorder", "cwr"):
                ev.append({"run": sc.name, "t_s": float(g["t_s"].iloc[i]), "flow": name, "kind": "fast_retransmit",
                           "detail": f"ca_state entered Recovery (sampled){where}"})
            elif st[i] == "cwr" and st[i - 1] in ("open", "disorder"):
                ev.append({"run": sc.name, "t_s": float(g["t_s"].iloc[i]), "flow": name, "kind": "cwr",
                           "detail": f"ca_state entered CWR (sampled){where}"})
    events = pd.DataFrame(ev, columns=["run", "t_s", "flow", "kind", "detail"])
    fsum = []
    for k, f in enumerate(d["flows"]):
        t = totals[k]
        if is_udp(f):
            u = t["udp"]
            fsum.append({"flow": f["name"], "goodput_bps": u["receive_rate_bps"], "delivered_bytes": u["received_bytes"],
                         "retrans_pkts": 0, "rto_count": 0, "fast_retransmit_count": 0, "cwr_count": 0,
                         "sent_pkts": u["sent_pkts"], "start_s": t["start_s"], "established_s": None, "udp": u,
                         "mean_cwnd_pkts": None, "mean_srtt_ms": None})
            continue
        kinds = events[events["flow"] == f["name"]]["kind"].value_counts() if len(events) else {}
        acked = max(0, int(t["bytes_acked"]) - 1)
        multipath = {}
        if paths and k in paths:
            # The connection's goodput is what the receiving application had by the run's end.
            acked = int(t["received_by_end_bytes"])
            multipath = {"subflows": _subflow_summary(t, paths[k]),
                         "unknown_subflows": t.get("unknown_subflows", [])}
        fsum.append({"flow": f["name"], "goodput_bps": acked * 8 / max(t["elapsed_s"], 1e-9),
                     "delivered_bytes": acked, "retrans_pkts": int(t["total_retrans"]),
                     "rto_count": int(t["total_rto"]),  # tcpi_total_rto: exact, unlike sampled ca_state
                     "fast_retransmit_count": int(kinds.get("fast_retransmit", 0)),
                     "cwr_count": int(kinds.get("cwr", 0)),  # sampled: reductions shorter than a sample are missed
                     "delivered_ce_pkts": int(t.get("delivered_ce", 0)),  # tcpi_delivered_ce
                     "start_s": t["start_s"],
                     # when connect() returned, run time (traffic.py's connected_s counts from zero)
                     "established_s": t.get("connected_s"),
                     # when it called send() first, run time
                     "first_write_s": t.get("first_write_s"),
                     # when the sender called connect(), its SYN (run time)
                     "connect_s": t.get("connect_s"),
                     "mean_cwnd_pkts": float(frames[k]["cwnd_pkts"].mean()),
                     "mean_srtt_ms": float(frames[k]["srtt_ms"].mean()), **multipath})
    summary = {
        "cclab_version": version, "backend": "kernel", "seed": sc.seed, "scenario": sc.as_run(), "flows": fsum,
        "links": link_stats, "paths": flow_paths(sc.lowered()), "knobs": knobs, **extra, "kernel": os.uname().release,
        "run": {"wall_time_s": wall_s, "jain_index": jain_index([f["goodput_bps"] for f in fsum])},
    }
    names = [x["name"] for x in link_stats["links"]]
    links = pd.DataFrame({
        "run": pd.Categorical([sc.name] * len(links_csv)),
        "link": pd.Categorical(links_csv["link"], categories=names),
        **{c: links_csv[c].to_numpy() for c in ("t_s", "queue_pkts", "queue_bytes", "drops", "tx_bytes", "ce_marks")},
    })
    return RunResult(scenario=sc, seed=sc.seed, flows=flows, links=links, events=events, summary=summary)


def _subflow_summary(t: dict[str, Any], paths: list[list[str]]) -> list[dict[str, Any]]:
    """A Multipath TCP connection's per-subflow summary, from each subflow's last tcp_info: the
    keys the simulator writes. ``sent_pkts`` is tcpi_data_segs_out (data segments, retransmissions
    included); ``goodput_bps`` is over the time from the connection's start to the run's end."""
    out = []
    for k, path in enumerate(paths):
        ti = t["subflows"].get(str(k))
        if ti is None:
            out.append({"subflow": k, "path": path, "delivered_bytes": 0, "goodput_bps": 0.0, "sent_pkts": 0,
                        "retrans_pkts": 0})
            continue
        acked = max(0, int(ti["bytes_acked"]) - 1)  # tcpi_bytes_acked counts the SYN (MP_CAPABLE or MP_JOIN)
        out.append({"subflow": k, "path": path, "delivered_bytes": acked,
                    "goodput_bps": acked * 8 / max(t["elapsed_s"], 1e-9), "sent_pkts": int(ti["data_segs_out"]),
                    "retrans_pkts": int(ti["total_retrans"])})
    return out
