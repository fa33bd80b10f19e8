"""The local executor hands every result on exactly once, keeps at most a window of items in
flight (the driver's memory does not grow with the number of items), and a worker that dies
loses only its own item."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor

from cclab.study.executors import DIED, WINDOW_PER_WORKER, each_local


def _square(x: int) -> int:
    return x * x


def _dies_on_13(x: int) -> int:
    if x == 13:
        os._exit(3)  # as a crash in native code would
    return x * x


def _raises_on_5(x: int) -> int:
    if x == 5:
        raise ValueError("five")
    return x


def test_every_result_once_with_a_bounded_window(monkeypatch):
    inflight, most = [0], [0]
    submit = ProcessPoolExecutor.submit

    def counting(self, fn, *a, **kw):
        inflight[0] += 1
        most[0] = max(most[0], inflight[0])
        return submit(self, fn, *a, **kw)

    monkeypatch.setattr(ProcessPoolExecutor, "submit", counting)
    got: dict[int, int] = {}

    def sink(i: int, r: int) -> None:
        assert i not in got
        got[i] = r
        inflight[0] -= 1

    each_local(_square, range(300), 2, sink, lambda x, e: None)
    assert got == {i: i * i for i in range(300)}
    assert most[0] <= WINDOW_PER_WORKER * 2


def run_local(fn, items, jobs, on_error):
    """``each_local``'s results in the items' order."""
    out = [None] * len(items)
    each_local(fn, items, jobs, out.__setitem__, on_error)
    return out


def test_a_dead_worker_among_many_loses_only_its_item():
    out = run_local(_dies_on_13, list(range(60)), 2, lambda x, e: ("failed", x, e))
    assert out[13] == ("failed", 13, DIED)
    assert [r for i, r in enumerate(out) if i != 13] == [i * i for i in range(60) if i != 13]


def test_an_exception_is_that_items_error_on_one_or_many_workers():
    for jobs in (1, 2):
        out = run_local(_raises_on_5, list(range(8)), jobs, lambda x, e: e)
        assert out[5] == "ValueError: five" and out[:5] == [0, 1, 2, 3, 4] and out[6:] == [6, 7]

