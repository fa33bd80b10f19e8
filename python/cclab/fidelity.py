"""``cclab fidelity``: the simulator against the kernel on a shipped grid of paired scenarios
(issue 13, "the kernel's twin"; docs/design.md, "Fidelity").

Each case runs first on the kernel (root: namespaces behind cclab-link), then on the simulator
paired with that kernel run: the same seed (cclab-link draws the same loss decisions per
packet), the kernel's tick grid (``[sim] jiffies_at_zero`` and ``tick_phase_us`` from the run's
``kernel_clock``, so TCP's timers land on the kernel's timer-wheel buckets) and each flow's
start at the moment the kernel's sender called connect() (``connect_s``). Per flow it compares
goodput, retransmissions, RTOs, the slow-start exit (the first ssthresh, and when), mean cwnd,
a transfer's completion time and, for CUBIC with losses, the fitted c and beta; each against
its target (``TARGETS``).
"""

from __future__ import annotations

import hashlib
import json
import math
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

__all__ = ["Case", "TARGETS", "grid", "paired", "compare_case", "run_fidelity", "KernelRuns"]

#: Targets (issue 13 part 4): relative error for goodput, the slow-start exit window and
#: completion time; relative error of CUBIC's c; absolute error of beta.
TARGETS = {"goodput": 0.05, "ss_exit_pkts": 0.10, "completion_s": 0.05, "cubic_c": 0.05, "cubic_beta": 0.02}

_RATE_BPS = 20_000_000
_MSS = 1448


@dataclass(frozen=True)
class Case:
    """One paired scenario: ``name``, the scenario dict, and what it is for."""

    name: str
    scenario: dict[str, Any]
    #: "bulk" (goodput over the run), "transfer" (a fixed size: completion time) or "shared"
    #: (two flows on one bottleneck).
    kind: str = "bulk"


def _bdp_pkts(rtt_ms: float) -> int:
    return max(1, round(_RATE_BPS * rtt_ms / 1e3 / 8 / (_MSS + 52)))


def _path(name: str, cc: str, rtt_ms: float, queue_pkts: int, loss: float, duration_s: float,
          **flow: Any) -> dict[str, Any]:
    bottleneck: dict[str, Any] = {"rate_bps": _RATE_BPS, "delay_ms": rtt_ms / 2, "queue_pkts": queue_pkts}
    if loss:
        bottleneck["loss"] = loss
    return {"name": name, "duration_s": duration_s, "bottleneck": bottleneck,
            "sim": {"trace": "interval", "trace_interval_ms": 10},
            "flows": [{"name": cc, "cc": cc, "mss_bytes": _MSS, **flow}]}


def grid(quick: bool = False) -> list[Case]:
    """The shipped grid: Reno, CUBIC and BBR over 20 Mbit/s at RTT 10, 100 and 550 ms, with a
    deep buffer (2 BDP) lossless, a shallow one (BDP/4) lossless, and random loss 1e-4 and 1e-3
    (deep buffer); plus a window cap, two CUBIC flows sharing the bottleneck, and 300 kB and
    2 MB transfers. ``quick``: three 10 s cases for the test suite."""
    if quick:
        return [Case("cubic-100ms-deep", _path("cubic-100ms-deep", "cubic", 100, 2 * _bdp_pkts(100), 0, 10)),
                Case("reno-10ms-loss1e-3", _path("reno-10ms-loss1e-3", "reno", 10, 2 * _bdp_pkts(10) + 20, 1e-3, 10)),
                Case("cubic-100ms-300KB", _path("cubic-100ms-300KB", "cubic", 100, 2 * _bdp_pkts(100), 0, 5,
                                                size_bytes=300_000), "transfer")]
    cases = []
    for cc in ("reno", "cubic", "bbr"):
        for rtt in (10, 100, 550):
            bdp = _bdp_pkts(rtt)
            dur = 60 if rtt == 550 else 30
            for label, q, loss in (("deep", 2 * bdp + 20, 0.0), ("shallow", max(10, bdp // 4), 0.0),
                                   ("loss1e-4", 2 * bdp + 20, 1e-4), ("loss1e-3", 2 * bdp + 20, 1e-3)):
                name = f"{cc}-{rtt}ms-{label}"
                cases.append(Case(name, _path(name, cc, rtt, q, loss, dur)))
    deep100 = 2 * _bdp_pkts(100) + 20
    cases.append(Case("cubic-100ms-cap50", _path("cubic-100ms-cap50", "cubic", 100, deep100, 1e-4, 30,
                                                 max_cwnd_pkts=50)))
    two = _path("cubic-100ms-two-flows", "cubic", 100, deep100, 1e-4, 60)
    two["flows"] = [{"name": "first", "cc": "cubic", "mss_bytes": _MSS},
                    {"name": "second", "cc": "cubic", "mss_bytes": _MSS, "start_s": 5.0}]
    cases.append(Case("cubic-100ms-two-flows", two, "shared"))
    for size in (300_000, 2_000_000):
        name = f"cubic-100ms-{size // 1000}KB" if size < 1_000_000 else f"cubic-100ms-{size // 1_000_000}MB"
        d = _path(name, "cubic", 100, deep100, 0.0, 10, size_bytes=size)
        d["sim"]["trace_interval_ms"] = 2
        cases.append(Case(name, d, "transfer"))
    return cases


def paired(scenario: dict[str, Any], kernel_summary: dict[str, Any]) -> dict[str, Any]:
    """``scenario`` for the simulator, paired with a kernel run of it: the kernel's tick grid,
    each flow's connect() time, for a TCP flow how long after connect() returned its sender
    called send() first (``first_write_delay_us``), and CUBIC's C as the kernel ran it
    (``kernel.knobs.kernel_c``; the seed is the scenario's own)."""
    from .kernel.knobs import kernel_c

    d = {**scenario, "sim": dict(scenario.get("sim", {})), "flows": [dict(f) for f in scenario["flows"]]}
    clock = kernel_summary.get("kernel_clock")
    if clock:
        d["sim"].update(kernel_hz=clock["hz"], jiffies_at_zero=clock["jiffies_at_zero"],
                        tick_phase_us=clock["tick_phase_us"])
    for f, k in zip(d["flows"], kernel_summary["flows"]):
        if k.get("connect_s") is not None:
            f["start_s"] = float(k["connect_s"])
        c = kernel_c(f)
        if c is not None:  # the C the kernel ran (bic_scale x 10 / 1024)
            f["cc_params"] = {**f.get("cc_params", {}), "c": c}
        if f.get("transport", "tcp") == "tcp" and k.get("first_write_s") is not None and k.get("established_s") is not None:
            f["first_write_delay_us"] = round(max(0.0, float(k["first_write_s"]) - float(k["established_s"])) * 1e6, 1)
    return d


def _ss_exit(flows: pd.DataFrame, cap_pkts: float | None = None) -> tuple[float, float]:
    """The first finite ssthresh (packets) and when it appeared: slow start's exit. With a
    window cap (``max_cwnd_pkts``) an ssthresh at the cap from the first sample on is passed over: the
    kernel backend caps cwnd with ``bpf_setsockopt(TCP_BPF_SNDCWND_CLAMP)``, which also sets
    ssthresh to the cap at establishment (net/core/filter.c, kernel/clamp.py), so slow start
    ends there by the tool, not by the sender; the first reduction after it is the exit."""
    ss = pd.to_numeric(flows["ssthresh_pkts"], errors="coerce").astype(float)
    finite = (ss > 0) & (ss < 1e6)
    if cap_pkts and len(ss) and ss.iloc[0] == float(cap_pkts):
        lead = (ss == float(cap_pkts)).cummin()  # at the cap from the first sample on
        finite &= ~lead
    hit = flows[finite]
    if hit.empty:
        return (math.nan, math.nan)
    return (float(pd.to_numeric(hit["ssthresh_pkts"]).iloc[0]), float(hit["t_s"].iloc[0]))


def _completion_s(flows: pd.DataFrame, size: int) -> float:
    done = flows[pd.to_numeric(flows["delivered_bytes"], errors="coerce") >= size]
    return float(done["t_s"].iloc[0]) if len(done) else math.nan


def _cubic_fit(flows: pd.DataFrame) -> tuple[float, float]:
    from .infer.cubic import estimate_cubic

    try:
        e = estimate_cubic(flows[["t_s", "cwnd_pkts"] + [c for c in ("srtt_ms", "min_rtt_ms", "ca_state") if c in flows]])
    except (ValueError, KeyError):
        return (math.nan, math.nan)
    return (e.c.value if e.reliable else math.nan, e.beta.value)


def _metrics(res: Any, flow: str, f_sum: dict[str, Any], sc_flow: dict[str, Any], loss: bool) -> dict[str, float]:
    fl = res.flows[res.flows["flow"] == flow].sort_values("t_s")
    exit_pkts, exit_s = _ss_exit(fl, sc_flow.get("max_cwnd_pkts"))
    m = {"goodput_mbps": f_sum["goodput_bps"] / 1e6, "retrans_pkts": float(f_sum["retrans_pkts"]),
         "rto_count": float(f_sum["rto_count"]), "ss_exit_pkts": exit_pkts, "ss_exit_s": exit_s}
    if sc_flow.get("size_bytes"):
        # A transfer: its time to the last byte; cwnd while it ran (the kernel's trace goes on
        # sampling the idle socket after it).
        m["completion_s"] = _completion_s(fl, int(sc_flow["size_bytes"]))
        if math.isfinite(m["completion_s"]):
            fl = fl[fl["t_s"] <= m["completion_s"]]
    m["mean_cwnd_pkts"] = float(pd.to_numeric(fl["cwnd_pkts"]).mean()) if len(fl) else math.nan
    if sc_flow["cc"] == "cubic" and loss:
        m["cubic_c"], m["cubic_beta"] = _cubic_fit(fl)
    return m


def _error(metric: str, sim: float, ker: float) -> tuple[float, bool | None]:
    """The error that metric's target is on (relative, or absolute for beta) and whether it is
    met (None: no target or no value)."""
    if not (math.isfinite(sim) and math.isfinite(ker)):
        return (math.nan, None)
    if metric == "cubic_beta":
        err = sim - ker
        return (err, abs(err) <= TARGETS[metric])
    err = (sim - ker) / ker if ker else (0.0 if sim == ker else math.inf)
    key = {"goodput_mbps": "goodput"}.get(metric, metric)
    return (err, abs(err) <= TARGETS[key] if key in TARGETS else None)


def kernel_hystart(summary: dict[str, Any], flows: list[dict[str, Any]]) -> str:
    """Which HyStart detector ended the kernel's slow start (tcp_cubic.c hystart_update(), from
    the sender's TcpExt counters): "train" (ACK train), "delay", "none", or "" when the case has
    more than one flow (the counters are per namespace) or the counters are missing. The ACK train needs every ACK within
    ``hystart_ack_delta_us`` (2 ms) of the one before for half a minimum RTT: a host whose
    timing slips by a few ms (a loaded machine) breaks it at long RTTs, and the kernel then
    leaves slow start later, by delay (docs/design.md, "Fidelity")."""
    counters = summary.get("tcp_counters") or {}
    c = counters.get(flows[0].get("sender", "sender")) if len(flows) == 1 else None
    if not c or "TCPHystartTrainDetect" not in c:
        return ""
    if c["TCPHystartTrainDetect"]:
        return "train"
    return "delay" if c["TCPHystartDelayDetect"] else "none"


#: Emulator lateness (p99 over a run) above which a kernel run's timing is suspect: a quarter
#: of HyStart's ACK-train gap (``hystart_ack_delta_us``, 2 ms). On a quiet machine p99 is 40-120
#: us; with builds running beside it, 0.2-1.7 ms (docs/design.md, "Fidelity").
LATE_P99_US = 500.0


def kernel_timing(summary: dict[str, Any]) -> dict[str, float | bool]:
    """How well the kernel run kept time: the link emulator's release lateness over the run
    (``emu_late_p99_us``, ``emu_late_max_us``; cclab-link's histogram), the machine's 1-minute
    load average at the run's start and end (the larger, ``host_load_1min``), and
    ``timing_suspect`` when p99 lateness reached :data:`LATE_P99_US`: then figures that hang on
    ms timing (HyStart's exit, and what follows from it) say more about the machine than about
    the kernel. NaN where the summary does not have them (older cached runs)."""
    links = summary.get("links") or {}
    late = links.get("lateness") if isinstance(links, dict) else None
    p99 = float(late["p99_us"]) if late and late.get("p99_us") is not None else math.nan
    mx = float(late["max_us"]) if late and late.get("max_us") is not None else math.nan
    load = summary.get("host_load_1min")
    return {"emu_late_p99_us": p99, "emu_late_max_us": mx,
            "host_load_1min": float(max(load)) if load else math.nan,
            "timing_suspect": bool(p99 >= LATE_P99_US)}


@dataclass
class KernelRun:
    """What the comparison reads of a kernel run: its flows trace and its summary."""

    flows: pd.DataFrame
    summary: dict[str, Any]


class KernelRuns:
    """Kernel runs kept in ``root`` and reused when the same scenario (seed included) comes
    again on the same kernel release, so the simulator side of a grid can be paired again after
    a change to the simulator without running the kernel again (``cclab fidelity
    --kernel-cache DIR``). A kernel run depends on the machine's load (docs/design.md,
    "Fidelity"): keep runs made on a quiet machine. Without ``root`` every case runs."""

    def __init__(self, root: Path | None = None):
        self.root = root

    def _dir(self, d: dict[str, Any]) -> Path | None:
        if self.root is None:
            return None
        key = json.dumps({"scenario": d, "kernel": platform.release()}, sort_keys=True, default=str)
        return self.root / f"{d.get('name', 'case')}-seed{d.get('seed')}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"

    def get(self, d: dict[str, Any]) -> KernelRun:
        """The kernel run of scenario dict ``d``: from the cache, or run now (root) and kept."""
        where = self._dir(d)
        if where is not None and (where / "summary.json").is_file():
            return KernelRun(pd.read_parquet(where / "traces.parquet"), json.loads((where / "summary.json").read_text()))
        from .kernel.backend import run_kernel
        from .scenario import load_scenario

        k = run_kernel(load_scenario(d))
        if where is not None:
            tmp = where.with_name(where.name + ".part")
            tmp.mkdir(parents=True, exist_ok=True)
            k.flows.to_parquet(tmp / "traces.parquet", index=False)
            (tmp / "summary.json").write_text(json.dumps(k.summary, allow_nan=True, default=str))
            tmp.rename(where)  # complete or absent: a killed run leaves only a .part directory
        return KernelRun(k.flows, k.summary)


def compare_case(case: Case, seed: int = 1, kernel_runs: KernelRuns | None = None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Run one case on the kernel (or take its run from ``kernel_runs``), then paired on the
    simulator: one row per flow and metric (simulator, kernel, error, target met), and both
    runs' cwnd traces for the figure."""
    from .scenario import load_scenario
    from .sim import simulate

    d = {**case.scenario, "seed": seed}
    k = (kernel_runs or KernelRuns()).get(d)
    s = simulate(load_scenario(paired(d, k.summary)))
    loss = bool(d["bottleneck"].get("loss"))
    hystart = kernel_hystart(k.summary, d["flows"])
    timing = kernel_timing(k.summary)
    rows = []
    for sc_flow, fs, fk in zip(d["flows"], s.summary["flows"], k.summary["flows"]):
        ms, mk = (_metrics(r, fs["flow"], f, sc_flow, loss) for r, f in ((s, fs), (k, fk)))
        for metric in ms:
            err, ok = _error(metric, ms[metric], mk[metric])
            if metric == "goodput_mbps" and case.kind == "transfer":
                ok = None  # the two backends time a transfer's goodput differently: completion_s is its target
            rows.append({"case": case.name, "kind": case.kind, "seed": seed, "flow": fs["flow"], "metric": metric,
                         "simulator": ms[metric], "kernel": mk[metric], "error": err, "target_met": ok,
                         "kernel_hystart": hystart, **timing})
    traces = {"simulator": s.flows[["flow", "t_s", "cwnd_pkts"]], "kernel": k.flows[["flow", "t_s", "cwnd_pkts"]]}
    return pd.DataFrame(rows), traces


def _figure(traces: dict[str, dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    n = len(traces)
    cols = min(3, n)
    rows = math.ceil(n / cols)
    fig = Figure(figsize=(5 * cols, 2.8 * rows), constrained_layout=True)
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    for ax, (name, tr) in zip(axes, traces.items()):
        for backend, style in (("kernel", {"color": "0.3", "lw": 1.2}), ("simulator", {"color": "C1", "lw": 0.9})):
            df = tr[backend]
            for flow, g in df.groupby("flow", observed=True):
                ax.plot(g["t_s"], g["cwnd_pkts"], label=f"{backend} {flow}" if df["flow"].nunique() > 1 else backend,
                        **style)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("cwnd (pkts)")
        ax.legend(fontsize=7)
    for ax in axes[n:]:
        ax.set_visible(False)
    fig.savefig(path, dpi=110)


def run_fidelity(cases: list[Case], seeds: list[int], out_dir: Path | None = None,
                 progress: Callable[[str], None] | None = None, kernel_cache: Path | None = None) -> pd.DataFrame:
    """Every case x seed; writes ``fidelity.csv``/``.parquet`` and ``fidelity_cwnd.png`` (the
    first seed's cwnd, simulator over kernel, per case) into ``out_dir``. A case that fails on
    either backend is reported in a row with ``metric = "error"`` and the others go on. With
    ``kernel_cache``, kernel runs are kept there and reused (``KernelRuns``)."""
    kernel_runs = KernelRuns(kernel_cache)
    frames, traces = [], {}
    for case in cases:
        for seed in seeds:
            if progress:
                progress(f"{case.name} seed {seed}")
            try:
                df, tr = compare_case(case, seed, kernel_runs)
            except Exception as e:  # noqa: BLE001 (a failed case is reported; the others run)
                df = pd.DataFrame([{"case": case.name, "kind": case.kind, "seed": seed, "flow": "", "metric": "error",
                                    "simulator": math.nan, "kernel": math.nan, "error": math.nan,
                                    "target_met": False, "message": f"{type(e).__name__}: {e}"}])
                tr = None
            frames.append(df)
            if tr is not None and case.name not in traces:
                traces[case.name] = tr
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        table.to_csv(out_dir / "fidelity.csv", index=False)
        table.astype({"target_met": "object"}).to_parquet(out_dir / "fidelity.parquet", index=False)
        if traces:
            _figure(traces, out_dir / "fidelity_cwnd.png")
    return table
