"""Sweeps: a grid of scenarios x repetitions, run in parallel, cached, failures isolated.

A run is identified by its normalised scenario (every default filled in), its seed and the cclab
version; its result is cached on disk under the hash of those, so a rerun computes only what
changed. A run that fails (bad input, a simulator error) is recorded with its error and the
others finish. Executors: local processes (every core by default) or a Ray cluster
(``pip install cclab[ray]``; ``ray.init()`` connects to ``RAY_ADDRESS`` or starts a local one).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import pandas as pd

__all__ = ["RunSpec", "grid", "run_sweep", "SweepResult", "derive_seed"]


def derive_seed(base: int, rep: int) -> int:
    """The seed of repetition ``rep`` (distinct, deterministic, independent of the grid)."""
    h = hashlib.sha256(f"{base}:{rep}".encode()).digest()
    return int.from_bytes(h[:7], "big")


@dataclass(frozen=True)
class RunSpec:
    """One run: a scenario (source + dotted overrides), a seed, labels for aggregation."""

    source: Any
    overrides: tuple[tuple[str, Any], ...]
    seed: int
    labels: tuple[tuple[str, Any], ...]
    keep_trace: bool = False

    def scenario(self) -> Any:
        from ..scenario import load_scenario

        return load_scenario(self.source, **dict(self.overrides), seed=self.seed)

    def key(self) -> str:
        from .. import __version__

        sc = self.scenario()
        blob = json.dumps({"scenario": sc.as_run(), "version": __version__}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:24]


def grid(
    source: Any,
    axes: dict[str, Iterable[Any]],
    reps: int = 1,
    base_seed: int = 1,
    fixed: dict[str, Any] | None = None,
    labels: dict[str, Any] | None = None,
    keep_trace: bool = False,
) -> list[RunSpec]:
    """Every combination of ``axes`` (dotted scenario fields -> values) x ``reps`` repetitions."""
    keys = list(axes)
    specs = []
    for values in itertools.product(*(list(axes[k]) for k in keys)):
        point = dict(zip(keys, values))
        for rep in range(reps):
            ov = {**(fixed or {}), **point}
            lab = {**(labels or {}), **point, "rep": rep}
            specs.append(
                RunSpec(source, tuple(sorted(ov.items())), derive_seed(base_seed, rep), tuple(lab.items()), keep_trace)
            )
    return specs


def _metrics(result: Any) -> dict[str, Any]:
    s = result.summary
    flows = s.get("flows", [])
    m: dict[str, Any] = {}
    for i, f in enumerate(flows):
        p = "" if len(flows) == 1 else f"flow{i}_"
        for k in ("goodput_bps", "retrans_pkts", "rto_count", "fast_retransmit_count", "spurious_rto_count",
                  "mean_cwnd_pkts", "mean_srtt_ms"):
            if k in f:
                m[p + k] = f[k]
    run = s.get("run", {})
    if isinstance(run, dict) and "jain_index" in run:
        m["jain_index"] = run["jain_index"]
    return m


def run_one(spec: RunSpec, cache_dir: str | None) -> dict[str, Any]:
    """Run (or fetch from the cache) one spec; never raises: failures come back as rows."""
    row: dict[str, Any] = dict(spec.labels)
    row["seed"] = spec.seed
    try:
        key = spec.key()
    except Exception as e:  # noqa: BLE001 - a bad scenario is a failed run, reported
        return row | {"ok": False, "error": f"{type(e).__name__}: {e}", "cached": False}
    row["key"] = key
    cache = Path(cache_dir) / key if cache_dir else None
    if cache is not None and (cache / "result.json").is_file():
        data = json.loads((cache / "result.json").read_text())
        if not spec.keep_trace or (cache / "flows.parquet").is_file():
            return row | data | {"cached": True}
    try:
        from ..sim import simulate

        t0 = time.perf_counter()
        result = simulate(spec.scenario())
        data = {"ok": True, "error": None, **_metrics(result), "run_s": time.perf_counter() - t0}
    except Exception as e:  # noqa: BLE001 - isolate failures; report them
        return row | {"ok": False, "error": f"{type(e).__name__}: {e}", "cached": False}
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        if spec.keep_trace:
            result.flows.to_parquet(cache / "flows.parquet")
        (cache / "result.json").write_text(json.dumps(data))
    return row | data | {"cached": False}


@dataclass
class SweepResult:
    """Rows (one per run, labels + metrics), failures, and where traces are cached."""

    runs: pd.DataFrame
    cache_dir: Path | None
    wall_s: float = 0.0
    failures: pd.DataFrame = field(default_factory=pd.DataFrame)

    def trace(self, key: str) -> pd.DataFrame:
        """The flows table of a run made with ``keep_trace``."""
        if self.cache_dir is None:
            raise ValueError("no cache directory: run the sweep with cache_dir to keep traces")
        return pd.read_parquet(self.cache_dir / key / "flows.parquet")


def _local(specs: list[RunSpec], cache_dir: str | None, jobs: int, tick: Callable[[], None]) -> list[dict[str, Any]]:
    if jobs <= 1:
        out = []
        for s in specs:
            out.append(run_one(s, cache_dir))
            tick()
        return out
    from concurrent.futures import ProcessPoolExecutor, as_completed

    rows: list[dict[str, Any] | None] = [None] * len(specs)
    with ProcessPoolExecutor(max_workers=jobs) as ex:
        futs = {ex.submit(run_one, s, cache_dir): i for i, s in enumerate(specs)}
        for f in as_completed(futs):
            i = futs[f]
            try:
                rows[i] = f.result()
            except Exception as e:  # noqa: BLE001 - a worker died: report, keep going
                rows[i] = dict(specs[i].labels) | {"ok": False, "error": f"worker: {type(e).__name__}: {e}"}
            tick()
    return [r for r in rows if r is not None]


def _ray(specs: list[RunSpec], cache_dir: str | None, tick: Callable[[], None]) -> list[dict[str, Any]]:
    try:
        import ray
    except ImportError:
        raise RuntimeError("executor 'ray' needs Ray: pip install 'cclab[ray]'") from None
    if not ray.is_initialized():
        ray.init(address=os.environ.get("RAY_ADDRESS"), log_to_driver=False, include_dashboard=False)
    remote = ray.remote(run_one)
    refs = [remote.remote(s, cache_dir) for s in specs]
    index = {r: i for i, r in enumerate(refs)}
    rows: list[dict[str, Any] | None] = [None] * len(specs)
    pending = list(refs)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        for r in done:
            rows[index[r]] = ray.get(r)
            tick()
    return [r for r in rows if r is not None]


def run_sweep(
    specs: list[RunSpec],
    cache_dir: str | Path | None = None,
    jobs: int | None = None,
    executor: str = "local",
    progress: Callable[[int, int], None] | None = None,
) -> SweepResult:
    """Run every spec (cached ones are read back), in parallel; returns one row per run."""
    if executor not in ("local", "ray"):
        raise ValueError(f"executor: {executor!r} is not one of local, ray")
    jobs = jobs or os.cpu_count() or 1
    cd = str(cache_dir) if cache_dir is not None else None
    done = [0]

    def tick() -> None:
        done[0] += 1
        if progress:
            progress(done[0], len(specs))

    t0 = time.perf_counter()
    rows = _ray(specs, cd, tick) if executor == "ray" else _local(specs, cd, jobs, tick)
    runs = pd.DataFrame(rows)
    fails = runs[~runs["ok"].astype(bool)] if "ok" in runs else runs.iloc[0:0]
    return SweepResult(runs, Path(cd) if cd else None, time.perf_counter() - t0, fails)
