"""Executors: run a function over items in parallel and hand back one result per item, in
order, whatever happens to a worker.

- ``local``: a process pool over every core. If a worker process dies (a crash in native code,
  the OOM killer), the pool breaks; the unfinished items are retried in a fresh pool, and after
  a second breakage each remaining item runs alone so that only the culprit is reported.
- ``ray``: the same function as Ray tasks (``pip install 'cclab[ray]'``); ``ray.init()``
  connects to ``RAY_ADDRESS`` or starts a local instance.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Sequence

__all__ = ["run_local", "run_ray", "EXECUTORS"]

EXECUTORS = ("local", "ray")

OnError = Callable[[Any, str], Any]


def run_local(fn: Callable[[Any], Any], items: Sequence[Any], jobs: int | None, tick: Callable[[], None],
              on_error: OnError) -> list[Any]:
    """``[fn(x) for x in items]`` on ``jobs`` processes (default: every core). An exception (or a
    dead worker) becomes ``on_error(item, message)`` for that item only."""
    jobs = jobs or os.cpu_count() or 1
    out: list[Any] = [None] * len(items)
    if jobs <= 1:
        for i, x in enumerate(items):
            try:
                out[i] = fn(x)
            except Exception as e:  # noqa: BLE001 - report it, keep going
                out[i] = on_error(x, f"{type(e).__name__}: {e}")
            tick()
        return out
    pending = list(range(len(items)))
    breakages = 0
    while pending:
        groups = [pending] if breakages < 2 else [[i] for i in pending]
        finished: set[int] = set()
        for group in groups:
            with ProcessPoolExecutor(max_workers=min(jobs, len(group))) as ex:
                futs = {ex.submit(fn, items[i]): i for i in group}
                for f in as_completed(futs):
                    i = futs[f]
                    try:
                        out[i] = f.result()
                    except BrokenProcessPool:
                        if len(group) > 1:
                            continue  # retried in a fresh pool
                        out[i] = on_error(items[i], "worker process died (crash in native code or killed)")
                    except Exception as e:  # noqa: BLE001
                        out[i] = on_error(items[i], f"{type(e).__name__}: {e}")
                    finished.add(i)
                    tick()
        pending = [i for i in pending if i not in finished]
        breakages += 1
    return out


def _apply(fn: Callable[[Any], Any], x: Any) -> Any:
    return fn(x)


def run_ray(fn: Callable[[Any], Any], items: Sequence[Any], tick: Callable[[], None], on_error: OnError) -> list[Any]:
    """The same as :func:`run_local` as Ray tasks (one CPU each)."""
    try:
        import ray
    except ImportError:
        raise RuntimeError("executor 'ray' needs Ray: pip install 'cclab[ray]'") from None
    if not ray.is_initialized():
        ray.init(address=os.environ.get("RAY_ADDRESS"), log_to_driver=False, include_dashboard=False)
    remote = ray.remote(_apply)
    refs = [remote.remote(fn, x) for x in items]
    index = {r: i for i, r in enumerate(refs)}
    out: list[Any] = [None] * len(items)
    pending = list(refs)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        for r in done:
            i = index[r]
            try:
                out[i] = ray.get(r)
            except Exception as e:  # noqa: BLE001 - a task or its worker failed: report it
                out[i] = on_error(items[i], f"{type(e).__name__}: {e}")
            tick()
    return out
