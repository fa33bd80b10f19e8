"""The result of one run: trace tables as DataFrames, the summary, and writing them out."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .scenario import Scenario

__all__ = ["RunResult", "CA_STATES", "jain_index"]

#: Linux's `enum tcp_ca_state` names, by value.
CA_STATES = ["open", "disorder", "cwr", "recovery", "loss"]
#: `TCP_INFINITE_SSTHRESH`
_INFINITE_SSTHRESH = 0x7FFFFFFF


def jain_index(xs: list[float] | np.ndarray) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2); 1 when all are equal."""
    x = np.asarray(xs, dtype=float)
    if x.size == 0 or not np.any(x):
        return float("nan")
    return float(x.sum() ** 2 / (x.size * (x**2).sum()))


def _middleware_table(sc: Scenario, events: pd.DataFrame) -> pd.DataFrame | None:
    """The simulator's middleware steps (``middleware`` events) as the kernel daemon's table
    (``cclab.kernel.middleware.LOG_COLUMNS``); ``cwnd_after_pkts`` and ``ca_state`` are empty:
    the range acts from the next ACK, and the simulator's flows table has every cwnd."""
    mw = events[events["kind"] == "middleware"]
    if mw.empty:
        return None
    cc = {f.name: f.cc for f in sc.flows}
    rows = []
    for t, flow, detail in zip(mw["t_s"], mw["flow"], mw["detail"]):
        kv = dict(p.split("=", 1) for p in str(detail).split(" ") if "=" in p)
        num = lambda k: float(kv[k]) if kv.get(k) not in (None, "") else np.nan  # noqa: E731
        rows.append({"t_s": t, "host": kv.get("host"), "flow": flow, "cc": cc.get(flow), "n": int(kv["n"]),
                     "rtt_ms": num("rtt_ms"), "min_rtt_ms": num("min_rtt_ms"), "ratio_rtt_ms": num("ratio_rtt_ms"),
                     "row": num("row"), "lower_pkts": num("lower"), "upper_pkts": num("upper"),
                     "cwnd_before_pkts": num("cwnd"), "cwnd_after_pkts": np.nan, "ssthresh_pkts": num("ssthresh"),
                     "ca_state": None})
    out = pd.DataFrame(rows)
    out.loc[out["ssthresh_pkts"] >= _INFINITE_SSTHRESH, "ssthresh_pkts"] = np.nan
    out.insert(0, "run", pd.Categorical([sc.name] * len(out)))
    out["ca_state"] = pd.Categorical(out["ca_state"], categories=CA_STATES)
    return out


@dataclass
class RunResult:
    """Traces and statistics of one run.

    ``flows``: one row per sample of a flow (schema in docs/design.md); ``ssthresh_pkts`` is a
    nullable integer, <NA> while infinite. ``links``: queue samples. ``events``: rto,
    fast_retransmit, undo (detail ``detector=.. via=.. state=..``), tlp, cwr, drop, ... (kinds
    in docs/design.md). ``summary``: what ``summary.json`` holds. ``middleware``: the S1
    middleware's per-step records (docs/design.md, "Middleware"), None when it did not run.
    """

    scenario: Scenario
    seed: int
    flows: pd.DataFrame
    links: pd.DataFrame
    events: pd.DataFrame
    summary: dict[str, Any] = field(default_factory=dict)
    middleware: pd.DataFrame | None = None

    @classmethod
    def from_core(cls, sc: Scenario, raw: dict[str, Any], wall_time_s: float, version: str) -> "RunResult":
        run = sc.name
        fnames = np.array(raw["flow_names"], dtype=object)
        lnames = np.array(raw["link_names"], dtype=object)
        f = raw["flows"]
        n = len(f["t_s"])
        ssth = pd.array(f["ssthresh_pkts"].astype("int64"), dtype="Int64")
        ssth[f["ssthresh_pkts"] >= _INFINITE_SSTHRESH] = pd.NA
        flows = pd.DataFrame(
            {
                "run": pd.Categorical([run] * n),
                "flow": pd.Categorical(fnames[f["flow"]] if n else [], categories=list(fnames)),
                "subflow": np.asarray(f["subflow"], dtype=np.int32),
                "t_s": f["t_s"],
                "cwnd_pkts": f["cwnd_pkts"],
                "ssthresh_pkts": ssth,
                "inflight_pkts": f["inflight_pkts"],
                "srtt_ms": f["srtt_ms"],
                "rttvar_ms": f["rttvar_ms"],
                "min_rtt_ms": f["min_rtt_ms"],
                "rto_ms": f["rto_ms"],
                "delivered_bytes": f["delivered_bytes"],
                "retrans_pkts": f["retrans_pkts"],
                "ca_state": pd.Categorical(
                    np.array(CA_STATES, dtype=object)[f["ca_state"]] if n else [], categories=CA_STATES
                ),
                "pacing_rate_bps": f["pacing_rate_bps"],
                "below_tcp_bytes": f["below_tcp_bytes"],
            }
        )
        lk = raw["links"]
        m = len(lk["t_s"])
        links = pd.DataFrame(
            {
                "run": pd.Categorical([run] * m),
                "link": pd.Categorical(lnames[lk["link"]] if m else [], categories=list(lnames)),
                "t_s": lk["t_s"],
                "queue_pkts": lk["queue_pkts"],
                "queue_bytes": lk["queue_bytes"],
                "drops": lk["drops"],
                "tx_bytes": lk["tx_bytes"],
                "ce_marks": lk["ce_marks"],
            }
        )
        ev = raw["events"]
        k = len(ev["t_s"])
        flow_of = np.array([fnames[i] if i >= 0 else None for i in ev["flow"]], dtype=object) if k else []
        events = pd.DataFrame(
            {
                "run": pd.Categorical([run] * k),
                "t_s": ev["t_s"],
                "flow": pd.Categorical(flow_of, categories=list(fnames)),
                "kind": pd.Categorical(ev["kind"]),
                "detail": pd.array(ev["detail"], dtype="string"),
            }
        )
        per_flow = []
        for st in raw["flow_stats"]:
            rows = flows[flows["flow"] == st["flow"]]
            per_flow.append(
                {
                    **st,
                    "mean_cwnd_pkts": float(rows["cwnd_pkts"].mean()) if len(rows) else None,
                    "mean_srtt_ms": float(np.nanmean(rows["srtt_ms"])) if rows["srtt_ms"].notna().any() else None,
                }
            )
        summary = {
            "cclab_version": version,
            "backend": "sim",
            "seed": sc.seed,
            "scenario": sc.as_run(),
            "flows": per_flow,
            "links": raw["link_stats"],
            #: per flow, the link directions (by name) and nodes its data and its ACKs cross
            "paths": {p["flow"]: {k: p[k] for k in ("fwd", "rev", "fwd_nodes", "rev_nodes")}
                      for p in raw.get("paths", [])},
            "run": {
                "events_processed": raw["events_processed"],
                "sim_duration_s": raw["sim_duration_s"],
                "wall_time_s": wall_time_s,
                "jain_index": jain_index([s["goodput_bps"] for s in raw["flow_stats"]]),
            },
        }
        return cls(scenario=sc, seed=sc.seed, flows=flows, links=links, events=events, summary=summary,
                   middleware=_middleware_table(sc, events))

    def write(self, out_dir: str | Path, figures: bool = True) -> dict[str, Path]:
        """Write traces.parquet (flows), links.parquet, events.parquet, summary.json,
        middleware.parquet (when the middleware ran) and cwnd.png into ``out_dir``; return the
        paths."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = {
            "traces": out / "traces.parquet",
            "links": out / "links.parquet",
            "events": out / "events.parquet",
            "summary": out / "summary.json",
        }
        self.flows.to_parquet(paths["traces"], index=False)
        self.links.to_parquet(paths["links"], index=False)
        self.events.to_parquet(paths["events"], index=False)
        if self.middleware is not None:
            paths["middleware"] = out / "middleware.parquet"
            self.middleware.to_parquet(paths["middleware"], index=False)
        paths["summary"].write_text(json.dumps(self.summary, indent=2, allow_nan=True) + "\n")
        if figures:
            from .plots import plot_cwnd, plot_queue

            paths["cwnd"] = plot_cwnd(self, out / "cwnd.png")
            paths["queue"] = plot_queue(self, out / "queue.png")
        return paths
