"""The result of one run: trace tables as DataFrames, the summary, and writing them out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .tables import Column, Table

if TYPE_CHECKING:  # pragma: no cover
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


def _middleware_table(sc: "Scenario", events: "pd.DataFrame") -> "pd.DataFrame | None":
    """The simulator's middleware steps (``middleware`` events) as the kernel daemon's table
    (``cclab.kernel.middleware.LOG_COLUMNS``); ``cwnd_after_pkts`` and ``ca_state`` are empty:
    the range acts from the next ACK, and the simulator's flows table has every cwnd."""
    import pandas as pd

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


_TABLES = ("flows", "links", "events")



class _FrameTable:
    """A RunResult table (``flows``, ``links``, ``events``) read as a pandas DataFrame, built
    from the run's numpy columns on first access (``RunResult._frame``); set: that DataFrame."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        return self if obj is None else obj._frame(self.name)

    def __set__(self, obj: Any, df: "pd.DataFrame") -> None:
        obj._frames[self.name] = df

class RunResult:
    """Traces and statistics of one run.

    ``flows``: one row per sample of a flow (schema in docs/design.md); ``ssthresh_pkts`` is a
    nullable integer, <NA> while infinite. ``links``: queue samples. ``events``: rto,
    fast_retransmit, undo (detail ``detector=.. via=.. state=..``), tlp, cwr, drop, ... (kinds
    in docs/design.md). ``summary``: what ``summary.json`` holds. ``middleware``: the S1
    middleware's per-step records (docs/design.md, "Middleware"), None when it did not run.

    ``flows``, ``links``, ``events`` and ``middleware`` are pandas DataFrames, built on first
    access from the simulator's columns (``table``), so writing a run and drawing its figures
    does not import pandas. Each may also be given as a DataFrame (the kernel backend) or
    assigned; a DataFrame, once built or assigned, is what ``write`` writes.
    """

    def __init__(
        self,
        scenario: "Scenario",
        seed: int,
        flows: "pd.DataFrame | Table",
        links: "pd.DataFrame | Table",
        events: "pd.DataFrame | Table",
        summary: dict[str, Any] | None = None,
        middleware: "pd.DataFrame | None" = None,
    ) -> None:
        self.scenario = scenario
        self.seed = seed
        self.summary: dict[str, Any] = {} if summary is None else summary
        self._tables: dict[str, Table] = {}
        self._frames: dict[str, Any] = {}
        for name, value in zip(_TABLES, (flows, links, events)):
            if isinstance(value, Table):
                self._tables[name] = value
            else:
                self._frames[name] = value
        # The simulator's middleware table is built from ``events`` when first asked for.
        self._middleware_pending = False
        self._middleware = middleware

    def __repr__(self) -> str:
        rows = ", ".join(f"{name}: {len(self.table(name))} rows" for name in _TABLES)
        return f"RunResult(scenario={self.scenario.name!r}, seed={self.seed}, {rows})"

    def table(self, name: str) -> Table:
        """``flows``, ``links`` or ``events`` as numpy columns (categories as codes), without
        pandas when the run came from the simulator and the DataFrame was not built."""
        if name in self._frames:
            return Table.from_pandas(self._frames[name])
        return self._tables[name]

    def _frame(self, name: str) -> "pd.DataFrame":
        if name not in self._frames:
            self._frames[name] = self._tables[name].to_pandas()
        return self._frames[name]

    #: The run's tables as pandas DataFrames, each built from its columns on first access
    #: (``_FrameTable``); assigning one replaces it.
    flows = _FrameTable()
    links = _FrameTable()
    events = _FrameTable()

    @property
    def middleware(self) -> "pd.DataFrame | None":
        if self._middleware_pending:
            self._middleware = _middleware_table(self.scenario, self.events)
            self._middleware_pending = False
        return self._middleware

    @middleware.setter
    def middleware(self, df: "pd.DataFrame | None") -> None:
        self._middleware, self._middleware_pending = df, False

    @classmethod
    def from_core(cls, sc: "Scenario", raw: dict[str, Any], wall_time_s: float, version: str) -> "RunResult":
        run = sc.name
        fnames = [str(x) for x in raw["flow_names"]]
        lnames = [str(x) for x in raw["link_names"]]
        f = raw["flows"]
        n = len(f["t_s"])
        flows = Table({
            "run": Column.category(np.zeros(n, dtype=np.int64), [run] if n else []),
            "flow": Column.category(f["flow"], fnames),
            "subflow": Column(np.asarray(f["subflow"], dtype=np.int32)),
            "t_s": Column(f["t_s"]),
            "cwnd_pkts": Column(f["cwnd_pkts"]),
            "ssthresh_pkts": Column.nullable_int(f["ssthresh_pkts"], f["ssthresh_pkts"] >= _INFINITE_SSTHRESH),
            **{c: Column(f[c]) for c in ("inflight_pkts", "srtt_ms", "rttvar_ms", "min_rtt_ms", "rto_ms",
                                         "delivered_bytes", "retrans_pkts")},
            "ca_state": Column.category(f["ca_state"], CA_STATES),
            "pacing_rate_bps": Column(f["pacing_rate_bps"]),
            "below_tcp_bytes": Column(f["below_tcp_bytes"]),
            "sndbuf_bytes": Column(f["sndbuf_bytes"]),
            "wmem_queued_bytes": Column(f["wmem_queued_bytes"]),
        })
        lk = raw["links"]
        m = len(lk["t_s"])
        links = Table({
            "run": Column.category(np.zeros(m, dtype=np.int64), [run] if m else []),
            "link": Column.category(lk["link"], lnames),
            **{c: Column(lk[c]) for c in ("t_s", "queue_pkts", "queue_bytes", "drops", "tx_bytes", "ce_marks")},
        })
        ev = raw["events"]
        k = len(ev["t_s"])
        kinds, kind_codes = np.unique(np.array(ev["kind"], dtype=str), return_inverse=True)
        events = Table({
            "run": Column.category(np.zeros(k, dtype=np.int64), [run] if k else []),
            "t_s": Column(ev["t_s"]),
            "flow": Column.category(np.asarray(ev["flow"]), fnames),
            "kind": Column.category(kind_codes.reshape(-1), [str(x) for x in kinds]),
            "detail": Column.string(ev["detail"]),
        })
        summary = {
            "cclab_version": version,
            "backend": "sim",
            "seed": sc.seed,
            "scenario": sc.as_run(),
            "flows": _flow_means(raw["flow_stats"], fnames, f),
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
        res = cls(scenario=sc, seed=sc.seed, flows=flows, links=links, events=events, summary=summary)
        res._middleware_pending = "middleware" in ev["kind"]
        return res

    def write(self, out_dir: str | Path, figures: bool = True) -> dict[str, Path]:
        """Write traces.parquet (flows), links.parquet, events.parquet, summary.json,
        middleware.parquet (when the middleware ran), cwnd.png and queue.png into ``out_dir``;
        return the paths."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = {
            "traces": out / "traces.parquet",
            "links": out / "links.parquet",
            "events": out / "events.parquet",
            "summary": out / "summary.json",
        }
        for name, key in zip(_TABLES, ("traces", "links", "events")):
            if name in self._frames:
                self._frames[name].to_parquet(paths[key], index=False)
            else:
                self._tables[name].write_parquet(paths[key])
        if self.middleware is not None:
            paths["middleware"] = out / "middleware.parquet"
            self.middleware.to_parquet(paths["middleware"], index=False)
        paths["summary"].write_text(json.dumps(self.summary, indent=2, allow_nan=True) + "\n")
        if figures:
            paths.update(self.write_figures(out))
        return paths

    def write_figures(self, out_dir: str | Path) -> dict[str, Path]:
        """Draw cwnd.png and queue.png into ``out_dir`` (cclab/plots.py); return their paths."""
        from .plots import plot_cwnd, plot_queue

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        return {"cwnd": plot_cwnd(self, out / "cwnd.png"), "queue": plot_queue(self, out / "queue.png")}


def _flow_means(flow_stats: list[dict[str, Any]], fnames: list[str], f: dict[str, Any]) -> list[dict[str, Any]]:
    """Each flow's statistics from the core with its mean cwnd and mean smoothed RTT over its
    samples (None without samples, or without an RTT sample): one sort, not a filter per flow."""
    codes = np.asarray(f["flow"])
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(fnames) + 1))
    code_of = {name: i for i, name in reversed(list(enumerate(fnames)))}
    out = []
    for st in flow_stats:
        i = code_of.get(st["flow"])
        rows = order[bounds[i]:bounds[i + 1]] if i is not None else order[:0]
        cwnd, srtt = f["cwnd_pkts"][rows], f["srtt_ms"][rows]
        out.append({
            **st,
            "mean_cwnd_pkts": float(cwnd.mean()) if len(rows) else None,
            "mean_srtt_ms": float(np.nanmean(srtt)) if np.any(~np.isnan(srtt)) else None,
        })
    return out
