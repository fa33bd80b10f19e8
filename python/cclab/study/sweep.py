"""Sweeps: run a list of :class:`~cclab.study.grid.RunSpec` in parallel, cached, failures isolated.

A run is identified by its normalised scenario (every default filled in, seed included) and the
cclab version; its result is cached on disk under the hash of those (``cache_dir/<key>/``), so a
rerun computes only what changed, and an interrupted sweep keeps every run that finished. A run
that fails (a field the core rejects, a simulator error, a dead worker) comes back as a row with
``ok = False`` and its error; the others finish. The driver keeps no row per run: rows go to
disk as they come back and the results table is built from there (:mod:`.rows`).
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import time
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from .executors import EXECUTORS, each_local, each_ray
from .grid import RunSpec
from .rows import RowLog

__all__ = ["run_sweep", "run_one", "run_portable", "cached_row", "store", "SweepResult", "path_mac", "station_metrics"]

#: Per-flow summary fields copied into a run's row.
FLOW_METRICS = ("goodput_bps", "sent_pkts", "retrans_pkts", "rto_count", "fast_retransmit_count", "spurious_rto_count",
                "undo_count", "sto_count", "sto_detected", "spurious_retrans_pkts", "mean_cwnd_pkts", "mean_srtt_ms")


#: A UDP flow's summary fields copied into a run's row, as udp_<name>.
UDP_METRICS = ("loss", "send_rate_bps", "receive_rate_bps", "owd_p50_ms", "owd_p99_ms")

#: Over the hops of a flow's data path on a medium with a MAC (a DCF cell, a mesh), copied into a
#: run's row: ``mac_residual_loss`` (mean over the hops of each sending station's residual loss),
#: ``mac_residual_loss_max``, ``mac_collision_prob`` (mean over the hops).
MAC_METRICS = ("mac_residual_loss", "mac_residual_loss_max", "mac_collision_prob")

#: Per station of a medium with a MAC (each lane whose summary entry has ``mac``), copied into a
#: run's row as ``<lane>.mac.<field>`` (summary.json's ``links[<lane>].mac.<field>``, e.g.
#: ``cell.ap.mac.mean_rate_bps``) and ``<lane>.<field>`` for the lane's queue counters.
STATION_MAC_METRICS = ("attempts", "collisions", "retry_drops", "collision_prob", "residual_loss", "mean_rate_bps")
STATION_LANE_METRICS = ("enqueued_pkts", "dropped_queue_full_pkts")


def link_lanes(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """summary.json's per-lane entries, each with its lane's name under ``link``: the simulator
    writes ``links`` as their list, the kernel backend as cclab-link's stats object that holds
    them under ``links``, each named under ``name``."""
    links = summary.get("links", [])
    if isinstance(links, dict):
        links = links.get("links", [])
    return [lane if "link" in lane else {"link": lane.get("name"), **lane} for lane in links if isinstance(lane, dict)]


def path_mac(summary: dict[str, Any], flow: str) -> list[dict[str, Any]]:
    """The MAC counters (summary.json's ``mac``) of the stations that send a flow's data, one per
    hop over a medium with a MAC, in path order: hop ``<medium>:<a>><b>`` is sent from lane
    ``<medium>.<a>``. A station's counters cover everything it sends (a relay's ACKs too)."""
    mac = {lane["link"]: lane["mac"] for lane in link_lanes(summary) if lane.get("mac")}
    paths = summary.get("paths")
    route = paths.get(flow) if isinstance(paths, dict) else None
    out = []
    for hop in route.get("fwd", []) if isinstance(route, dict) else []:
        medium, sep, rest = hop.partition(":")
        lane = f"{medium}.{rest.partition('>')[0]}"
        if sep and lane in mac:
            out.append(mac[lane])
    return out


def _mac_metrics(summary: dict[str, Any], flow: str) -> dict[str, Any]:
    """Over the hops of the flow's data path that cross a medium with a MAC: the mean and the
    largest residual per-hop loss (each station's ``residual_loss``), and the mean collision
    probability per attempt; nothing for a path without such hops."""
    hops = path_mac(summary, flow)
    loss = [h["residual_loss"] for h in hops if h.get("residual_loss") is not None]
    coll = [h["collision_prob"] for h in hops if h.get("collision_prob") is not None]
    m: dict[str, Any] = {}
    if loss:
        m |= {"mac_residual_loss": sum(loss) / len(loss), "mac_residual_loss_max": max(loss)}
    if coll:
        m["mac_collision_prob"] = sum(coll) / len(coll)
    return m


def station_metrics(summary: dict[str, Any]) -> dict[str, Any]:
    """Every MAC station's counters and rates (:data:`STATION_MAC_METRICS`) and its queue's
    (:data:`STATION_LANE_METRICS`), keyed ``<lane>.mac.<field>`` and ``<lane>.<field>``; nothing
    for a run without a MAC medium. Null figures (no attempt) are left out."""
    m: dict[str, Any] = {}
    for lane in link_lanes(summary):
        mac = lane.get("mac")
        if not isinstance(mac, dict) or not lane.get("link"):
            continue
        name = lane["link"]
        m |= {f"{name}.mac.{k}": mac[k] for k in STATION_MAC_METRICS if mac.get(k) is not None}
        m |= {f"{name}.{k}": lane[k] for k in STATION_LANE_METRICS if lane.get(k) is not None}
    return m


def _metrics(result: Any) -> dict[str, Any]:
    s = result.summary
    flows = s.get("flows", [])
    m: dict[str, Any] = {}
    for i, f in enumerate(flows):
        p = "" if len(flows) == 1 else f"flow{i}_"
        m |= {p + k: f[k] for k in FLOW_METRICS if k in f}
        if isinstance(f.get("udp"), dict):  # a UDP flow: its loss, rates and one-way delay
            m |= {f"{p}udp_{k}": f["udp"][k] for k in UDP_METRICS if f["udp"].get(k) is not None}
        m |= {p + k: v for k, v in _mac_metrics(s, f.get("flow", "")).items()}
    m |= station_metrics(s)
    mw = getattr(result, "middleware", None)
    if isinstance(mw, pd.DataFrame) and len(mw) and "n" in mw:
        # The middleware's steps and the mean count of terminals it heard at them.
        m |= {"middleware_steps": len(mw), "middleware_terminals_mean": float(mw["n"].mean())}
    run = s.get("run", {})
    if isinstance(run, dict) and "jain_index" in run:
        m["jain_index"] = run["jain_index"]
    return m


def connections_table(summary: dict[str, Any]) -> pd.DataFrame | None:
    """Every workload connection of a run (summary.json's ``flows[].connections``), a row each with
    its flow's name; None when no flow has a workload."""
    rows = []
    for f in summary.get("flows", []):
        for c in f.get("connections") or []:
            c = dict(c)
            # Undetected spurious timeouts by reason, as a column per reason.
            why = c.pop("sto_undetected", None) or {}
            rows.append({"flow": f.get("flow")} | c | {f"sto_undetected_{k}": v for k, v in why.items()})
    if not rows:
        return None
    t = pd.DataFrame(rows)
    reasons = [c for c in t.columns if c.startswith("sto_undetected_")]
    t[reasons] = t[reasons].fillna(0).astype("int64")
    return t


def _call(ref: str, flows: pd.DataFrame) -> pd.DataFrame:
    mod, _, name = ref.partition(":")
    return getattr(importlib.import_module(mod), name)(flows)


def _write_atomic(path: Path, write: Callable[[Path], None]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    write(tmp)
    os.replace(tmp, path)


def _failed(spec: RunSpec, error: str) -> dict[str, Any]:
    return dict(spec.labels) | {"seed": spec.seed, "ok": False, "error": error, "cached": False}


def cached_row(spec: RunSpec, cache_dir: str | None) -> dict[str, Any] | None:
    """The spec's row read back from the cache, or None when it is not all there (or the spec
    is one the core rejects: that is for :func:`run_one` to report)."""
    if not cache_dir:
        return None
    try:
        key = spec.key()
    except Exception:  # noqa: BLE001
        return None
    return _cached(spec, Path(cache_dir) / key, key)


def _cached(spec: RunSpec, cache: Path, key: str) -> dict[str, Any] | None:
    """:func:`cached_row` for a spec whose key is known."""
    need = ["result.json"] + (["flows.parquet"] if spec.keep_trace else []) + (["post.parquet"] if spec.post else [])
    if not all((cache / n).is_file() for n in need):
        return None
    data = json.loads((cache / "result.json").read_text())
    if data.get("has_connections") and not (cache / "connections.parquet").is_file():
        return None
    return dict(spec.labels) | {"seed": spec.seed, "key": key} | data | {"cached": True}


def run_one(spec: RunSpec, cache_dir: str | None) -> dict[str, Any]:
    """Run (or read back from the cache) one spec. Never raises for a bad run: the failure comes
    back as a row with ``ok = False`` and ``error``."""
    row: dict[str, Any] = dict(spec.labels) | {"seed": spec.seed}
    try:
        key = spec.key()
    except Exception as e:  # noqa: BLE001 - a scenario the core rejects is a failed run
        return _failed(spec, f"{type(e).__name__}: {e}")
    row["key"] = key
    cache = Path(cache_dir) / key if cache_dir else None
    hit = _cached(spec, cache, key) if cache is not None else None
    if hit is not None:
        return hit
    try:
        t0 = time.perf_counter()
        if spec.backend == "kernel":
            from ..kernel.backend import run_kernel

            result = run_kernel(spec.scenario())
        else:
            from ..sim import simulate

            result = simulate(spec.scenario())
        data = {"ok": True, "error": None, **_metrics(result), "run_s": time.perf_counter() - t0}
        post = _call(spec.post, result.flows) if spec.post else None
        conns = connections_table(result.summary)
        data["has_connections"] = conns is not None
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001 - also a PanicException from native code
        return _failed(spec, f"{type(e).__name__}: {e}") | {"key": key}
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        if spec.keep_trace:
            _write_atomic(cache / "flows.parquet", lambda p: result.flows.to_parquet(p))
        if post is not None:
            _write_atomic(cache / "post.parquet", lambda p: post.to_parquet(p))
        if conns is not None:
            _write_atomic(cache / "connections.parquet", lambda p: conns.to_parquet(p))
        _write_atomic(cache / "result.json", lambda p: p.write_text(json.dumps(data)))
    return row | data | {"cached": False}


def run_portable(spec: RunSpec, runner: Callable[[RunSpec, str | None], dict[str, Any]] = run_one
                 ) -> tuple[dict[str, Any], dict[str, bytes]]:
    """``runner`` on a worker that shares no file system with the driver (a Ray node): the run's
    cache files are made in a temporary directory and come back as bytes, with the row, for the
    driver to store (:func:`store`)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="cclab-run-") as d:
        row = runner(spec, d)
        key = row.get("key")
        files = {}
        if row.get("ok") and key and (Path(d) / key).is_dir():
            files = {f.name: f.read_bytes() for f in (Path(d) / key).iterdir() if not f.name.startswith(".")}
    return row, files


def store(cache_dir: str | None, row: dict[str, Any], files: dict[str, bytes]) -> dict[str, Any]:
    """Write a portable run's files into the driver's cache (result.json last, so a half-written
    entry is never read back); returns the row."""
    if cache_dir and files and row.get("key"):
        cache = Path(cache_dir) / row["key"]
        cache.mkdir(parents=True, exist_ok=True)
        for name in sorted(files, key=lambda n: n == "result.json"):
            _write_atomic(cache / name, lambda p, b=files[name]: p.write_bytes(b))
    return row


@dataclass
class SweepResult:
    """One row per run (labels, seed, key, ok, error, cached, metrics), the failures, and where
    traces and post-processing tables are cached."""

    runs: pd.DataFrame
    cache_dir: Path | None
    wall_s: float = 0.0
    failures: pd.DataFrame = field(default_factory=pd.DataFrame)

    def _read(self, key: str, name: str) -> pd.DataFrame:
        if self.cache_dir is None:
            raise ValueError("no cache directory: run the sweep with cache_dir to keep traces")
        return pd.read_parquet(self.cache_dir / key / name)

    def trace(self, key: str) -> pd.DataFrame:
        """The flows table of a run made with ``keep_trace``."""
        return self._read(key, "flows.parquet")

    def trace_path(self, key: str) -> Path:
        """Where the flows table of a ``keep_trace`` run is stored."""
        if self.cache_dir is None:
            raise ValueError("no cache directory: run the sweep with cache_dir to keep traces")
        return self.cache_dir / key / "flows.parquet"

    def connections(self, key: str) -> pd.DataFrame:
        """The run's workload connections (:func:`connections_table`), cached beside its result."""
        return self._read(key, "connections.parquet")

    def post(self, key: str) -> pd.DataFrame:
        """The table the spec's ``post`` function made from the run's trace."""
        return self._read(key, "post.parquet")


def run_sweep(
    specs: list[RunSpec],
    cache_dir: str | Path | None = None,
    jobs: int | None = None,
    executor: str = "local",
    progress: Callable[[int, int], None] | None = None,
    runner: Callable[[RunSpec, str | None], dict[str, Any]] = run_one,
) -> SweepResult:
    """Run every spec (cached ones are read back) in parallel; one row per spec, in order.

    ``executor``: ``"local"`` (processes, ``jobs`` of them, default every core) or ``"ray"``.
    Specs with ``backend="kernel"`` run one at a time in this process.
    ``progress(done, total)`` is called after each run."""
    if executor not in EXECUTORS:
        raise ValueError(f"executor: {executor!r} is not one of {', '.join(EXECUTORS)}")
    kernel = array("q", (i for i, s in enumerate(specs) if s.backend == "kernel"))
    if kernel and executor != "local":
        raise ValueError("kernel runs go one at a time on this machine: use the local executor")
    cd = str(cache_dir) if cache_dir is not None else None
    done = [0]

    def tick() -> None:
        done[0] += 1
        if progress:
            progress(done[0], len(specs))

    t0 = time.perf_counter()
    fn = functools.partial(runner, cache_dir=cd)
    # Each row goes to disk as it arrives; the table is built from there (rows.py): the driver
    # holds no row per run, only the runs in flight.
    with RowLog(cd) as log:

        def sink(i: int, row: dict[str, Any]) -> None:
            log.add(i, row)
            tick()

        if executor == "ray":
            # No file system is assumed shared with the cluster's nodes: the driver reads its
            # cache, sends only the runs it lacks, and stores what they send back (run_portable).
            todo = array("q")
            for i, s in enumerate(specs):
                hit = cached_row(s, cd)
                if hit is not None:
                    sink(i, hit)
                else:
                    todo.append(i)
            each_ray(functools.partial(run_portable, runner=runner), _Subset(specs, todo),
                     lambda j, back: sink(todo[j], store(cd, *back)), lambda s, e: (_failed(s, e), {}))
        elif kernel:
            # Real-time runs on this machine's kernel share its CPU and global knobs: one at a
            # time, after the simulator's runs (in parallel); rows keep the specs' order.
            sim = array("q", (i for i in range(len(specs)) if specs[i].backend != "kernel"))
            each_local(fn, _Subset(specs, sim), jobs, lambda j, row: sink(sim[j], row), _failed)
            each_local(fn, _Subset(specs, kernel), 1, lambda j, row: sink(kernel[j], row), _failed)
        else:
            each_local(fn, specs, jobs, sink, _failed)
        runs = log.table(len(specs))
    fails = runs[~runs["ok"].astype(bool)] if "ok" in runs else runs.iloc[0:0]
    return SweepResult(runs, Path(cd) if cd else None, time.perf_counter() - t0, fails)


class _Subset(Sequence[RunSpec]):
    """``specs[idx[j]]`` for j in range(len(idx)), without a list of them."""

    def __init__(self, specs: Sequence[RunSpec], idx: Sequence[int]) -> None:
        self.specs, self.idx = specs, idx

    def __len__(self) -> int:
        return len(self.idx)

    def __getitem__(self, j):  # type: ignore[override]
        return self.specs[self.idx[j]]
