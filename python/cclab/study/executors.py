"""Executors: run a function over items in parallel and hand each result to a sink as it
arrives, whatever happens to a worker. At most a window of items is in flight at once, so the
driver's memory does not grow with the number of items.

- ``local``: a process pool over every core. If a worker process dies (a crash in native code,
  the OOM killer), the pool breaks; the items that were in flight are retried in a fresh pool,
  and an item that was in flight at two breakages runs alone, so that only the culprit is
  reported.
- ``ray``: the same function as Ray tasks (``pip install 'cclab[ray]'``); ``ray.init()``
  connects to ``RAY_ADDRESS`` or starts a local instance.
"""

from __future__ import annotations

import os
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterator, Sequence

__all__ = ["each_local", "each_ray", "EXECUTORS"]

EXECUTORS = ("local", "ray")

OnError = Callable[[Any, str], Any]
#: Called with an item's index and its result (or ``on_error``'s) as each one ends.
Sink = Callable[[int, Any], None]

#: Items in flight per worker: enough to keep every worker busy, few enough to stay small.
WINDOW_PER_WORKER = 4

DIED = "worker process died (crash in native code or killed)"


def each_local(fn: Callable[[Any], Any], items: Sequence[Any], jobs: int | None, sink: Sink,
               on_error: OnError) -> None:
    """``sink(i, fn(items[i]))`` for every item, on ``jobs`` processes (default: every core), in
    the order they end. An exception (or a dead worker) becomes ``on_error(item, message)`` for
    that item only."""
    jobs = jobs or os.cpu_count() or 1
    if jobs <= 1:
        for i, x in enumerate(items):
            try:
                r = fn(x)
            except Exception as e:  # noqa: BLE001 - report it, keep going
                r = on_error(x, f"{type(e).__name__}: {e}")
            sink(i, r)
        return
    fresh = iter(range(len(items)))
    retry: deque[int] = deque()  # in flight when a pool broke: run before fresh ones
    breakages: dict[int, int] = {}  # item -> pools that broke while it was in flight
    while True:
        suspects = _pool_round(fn, items, min(jobs, len(items)), fresh, retry, sink, on_error)
        if not suspects:
            return
        for i in suspects:
            breakages[i] = breakages.get(i, 0) + 1
            if breakages[i] < 2:
                retry.append(i)
                continue
            del breakages[i]
            sink(i, _alone(fn, items[i], on_error))


def _pool_round(fn: Callable[[Any], Any], items: Sequence[Any], jobs: int, fresh: Iterator[int], retry: deque[int],
                sink: Sink, on_error: OnError) -> list[int]:
    """Run items (``retry`` first, then ``fresh``) in one pool until none is left (returns []) or
    the pool breaks (returns the items that were in flight and did not finish)."""
    inflight: dict[Future, int] = {}
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as ex:
        while True:
            while len(inflight) < WINDOW_PER_WORKER * jobs:
                i = retry.popleft() if retry else next(fresh, None)
                if i is None:
                    break
                try:
                    inflight[ex.submit(fn, items[i])] = i
                except BrokenProcessPool:
                    retry.appendleft(i)
                    return _drain(inflight, sink, on_error, items)
            if not inflight:
                return []
            done, _ = wait(inflight, return_when=FIRST_COMPLETED)
            broken = False
            for f in done:
                i = inflight.pop(f)
                if isinstance(f.exception(), BrokenProcessPool):
                    inflight[f] = i  # drained below with the others
                    broken = True
                else:
                    sink(i, _result(f, items[i], on_error))
            if broken:
                return _drain(inflight, sink, on_error, items)


def _drain(inflight: dict[Future, int], sink: Sink, on_error: OnError, items: Sequence[Any]) -> list[int]:
    """After a pool broke: hand on what finished, return the indices of what did not."""
    wait(inflight)
    lost = []
    for f, i in inflight.items():
        if isinstance(f.exception(), BrokenProcessPool):
            lost.append(i)
        else:
            sink(i, _result(f, items[i], on_error))
    return sorted(lost)


def _result(f: Future, item: Any, on_error: OnError) -> Any:
    e = f.exception()
    return f.result() if e is None else on_error(item, f"{type(e).__name__}: {e}")


def _alone(fn: Callable[[Any], Any], item: Any, on_error: OnError) -> Any:
    """``fn(item)`` in a pool of its own: if that pool breaks, the item is the culprit."""
    with ProcessPoolExecutor(max_workers=1) as ex:
        f = ex.submit(fn, item)
        wait([f])
    return on_error(item, DIED) if isinstance(f.exception(), BrokenProcessPool) else _result(f, item, on_error)


def _apply(fn: Callable[[Any], Any], x: Any) -> Any:
    return fn(x)


def each_ray(fn: Callable[[Any], Any], items: Sequence[Any], sink: Sink, on_error: OnError) -> None:
    """The same as :func:`each_local` as Ray tasks (one CPU each), at most a window of them
    (:data:`WINDOW_PER_WORKER` per CPU of the cluster) submitted at once."""
    try:
        import ray
    except ImportError:
        raise RuntimeError("executor 'ray' needs Ray: pip install 'cclab[ray]'") from None
    if not ray.is_initialized():
        ray.init(address=os.environ.get("RAY_ADDRESS"), log_to_driver=False, include_dashboard=False)
    remote = ray.remote(_apply)
    window = WINDOW_PER_WORKER * max(2, int(ray.cluster_resources().get("CPU", 1)))
    fresh = iter(range(len(items)))
    index: dict[Any, int] = {}
    while True:
        while len(index) < window:
            i = next(fresh, None)
            if i is None:
                break
            index[remote.remote(fn, items[i])] = i
        if not index:
            return
        done, _ = ray.wait(list(index), num_returns=1)
        for r in done:
            i = index.pop(r)
            try:
                out = ray.get(r)
            except Exception as e:  # noqa: BLE001 - a task or its worker failed: report it
                out = on_error(items[i], f"{type(e).__name__}: {e}")
            sink(i, out)

