"""A sweep's rows on disk as they arrive, and its results table built from there, so the
driver's memory does not grow with the number of runs.

Each row is appended to a file as the pickle of ``(index, row)`` (the same Python values the
executors hand back, so no value changes type on the way) and written out at once: a driver
that is killed has lost no row it received. The file lives in the sweep's cache directory as
``.sweep-rows-<pid>-<random>.pickle`` (an anonymous temporary file when there is no cache
directory, or one it cannot write to) and is removed when the sweep returns; one left by a
killed driver is removed by the next sweep over the same cache (its owner's lock is gone). The
run cache, not this file, is what a resumed sweep reads back.

:meth:`RowLog.table` reads the file back ``batch_rows`` rows at a time, makes a DataFrame of each
batch and joins them column by column, so the table equals ``pd.DataFrame(rows_in_index_order)``
(same columns in the same order, same dtypes and values) without ever holding every row as a
dict, nor the table more than about once.
"""

from __future__ import annotations

import fcntl
import os
import pickle
import secrets
import tempfile
from pathlib import Path
from typing import IO, Any, Iterator

import numpy as np
import pandas as pd

__all__ = ["RowLog", "remove_stale", "PREFIX"]

#: Name prefix of a row file in a cache directory.
PREFIX = ".sweep-rows-"


def remove_stale(directory: Path) -> list[Path]:
    """Remove the row files in ``directory`` whose sweep has ended without removing them (a
    killed driver): those nobody holds the lock of. Returns what was removed."""
    gone = []
    for p in directory.glob(f"{PREFIX}*.pickle"):
        try:
            with open(p, "rb") as f:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                p.unlink()
                gone.append(p)
        except (BlockingIOError, FileNotFoundError):
            continue  # a live sweep's, or removed meanwhile
    return gone


class RowLog:
    """Rows ``(index, row)`` appended to a file; :meth:`table` builds the results table.

    Use as a context manager: the file is removed on leaving, however the block ends."""

    def __init__(self, directory: str | Path | None = None, batch_rows: int = 500) -> None:
        if batch_rows < 1:
            raise ValueError(f"batch_rows: {batch_rows} is not accepted; give 1 or more")
        self.batch_rows = batch_rows
        self.path: Path | None = None
        self._file: IO[bytes]
        if directory is not None:
            try:
                self._file = self._named(Path(directory))
            except OSError:  # a cache one cannot write to (all runs read back): no name needed
                directory = None
        if directory is None:
            self._file = tempfile.TemporaryFile(prefix="cclab-sweep-rows-")
        self.count = 0
        #: Column -> (index of the first row that has it, its position in that row): the order
        #: ``pd.DataFrame(rows)`` gives its columns.
        self._first: dict[str, tuple[int, int]] = {}

    def _named(self, d: Path) -> IO[bytes]:
        d.mkdir(parents=True, exist_ok=True)
        remove_stale(d)
        path = d / f"{PREFIX}{os.getpid()}-{secrets.token_hex(4)}.pickle"
        f = open(path, "w+b")  # noqa: SIM115 - closed by close()
        fcntl.flock(f, fcntl.LOCK_EX)
        self.path = path
        return f

    def add(self, index: int, row: dict[str, Any]) -> None:
        """Append a row (written to the file before returning)."""
        self._file.write(pickle.dumps((index, row), protocol=pickle.HIGHEST_PROTOCOL))
        self._file.flush()
        self.count += 1
        for pos, col in enumerate(row):
            if col not in self._first or (index, pos) < self._first[col]:
                self._first[col] = (index, pos)

    def _batches(self) -> Iterator[tuple[np.ndarray, pd.DataFrame]]:
        """The rows read back ``batch_rows`` at a time: their indices, and the frame
        ``pd.DataFrame(rows)`` makes of them."""
        self._file.flush()
        self._file.seek(0)
        done = False
        while not done:
            idx, rows = [], []
            while len(rows) < self.batch_rows:
                try:
                    i, row = pickle.load(self._file)
                except EOFError:
                    done = True
                    break
                idx.append(i)
                rows.append(row)
            if rows:
                yield np.asarray(idx, dtype=np.int64), pd.DataFrame(rows)
        self._file.seek(0, os.SEEK_END)

    def table(self, n_rows: int) -> pd.DataFrame:
        """The rows of indices ``0 .. n_rows - 1`` as one DataFrame in index order, equal to
        ``pd.DataFrame`` of the row dicts in that order. Raises RuntimeError when a row is missing
        or doubled.

        Two passes over the file: the first finds each column's dtype in every batch; a column
        of one numpy dtype (not object) in all of them is filled in place in the second, the
        others (strings, objects, gaps) are joined at the end (:func:`_column`). So the table is
        held about once, with one batch of rows."""
        if n_rows == 0 and self.count == 0:
            return pd.DataFrame([])
        kinds: dict[str, set[Any]] = {c: set() for c in self._first}
        for _, frame in self._batches():
            for c, k in kinds.items():
                k.add(frame[c].dtype if c in frame else None)
        fixed = {c: next(iter(k)) for c, k in kinds.items() if len(k) == 1 and _plain(next(iter(k)))}
        out: dict[str, Any] = {c: np.empty(n_rows, dtype=d) for c, d in fixed.items()}
        rest: dict[str, list[tuple[np.ndarray, Any]]] = {c: [] for c in kinds if c not in fixed}
        seen = np.zeros(n_rows, dtype=np.int64)
        order = []
        for idx, frame in self._batches():
            if len(idx) and (idx.min() < 0 or idx.max() >= n_rows):
                raise RuntimeError(f"the sweep's rows are not one per run: an index outside 0..{n_rows - 1}")
            np.add.at(seen, idx, 1)
            order.append(idx)
            for c in fixed:
                out[c][idx] = frame[c].to_numpy()
            for c, parts in rest.items():
                parts.append((idx, _detached(frame[c]) if c in frame else None))
        if not (seen == 1).all():
            raise RuntimeError(f"the sweep's rows are not one per run: {int(seen.sum())} rows for {n_rows} runs")
        where = np.concatenate(order)
        for c in list(rest):
            out[c] = _column(rest.pop(c), where)
        return pd.DataFrame({c: out[c] for c in sorted(self._first, key=self._first.__getitem__)}, copy=False)

    def close(self) -> None:
        self._file.close()
        if self.path is not None:
            self.path.unlink(missing_ok=True)

    def __enter__(self) -> RowLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _plain(dtype: Any) -> bool:
    """A numpy dtype other than object: batches of it join into the same dtype."""
    return isinstance(dtype, np.dtype) and dtype != object


def _detached(col: pd.Series) -> Any:
    """A frame's column as an array of its own (a numpy column is a view of the frame's block)."""
    return col.to_numpy(copy=True) if isinstance(col.dtype, np.dtype) else col.array


def _column(parts: list[tuple[np.ndarray, Any]], order: np.ndarray) -> Any:
    """One column in index order from its part in each batch (None: the batch lacks it, so
    missing values there). Numpy parts of one dtype are placed as they are, pandas arrays of one
    dtype joined; otherwise the values are placed as objects and the dtype inferred over the whole
    column, as ``pd.DataFrame(rows)`` does."""
    n = len(order)
    dtypes = {a.dtype for _, a in parts if a is not None}
    if len(dtypes) == 1 and all(a is not None for _, a in parts):
        (dtype,) = dtypes
        if isinstance(dtype, np.dtype):
            out = np.empty(n, dtype=dtype)
            for idx, a in parts:
                out[idx] = a
            return out
        joined = type(parts[0][1])._concat_same_type([a for _, a in parts])
        return joined.take(np.argsort(order, kind="stable"))
    obj = np.full(n, np.nan, dtype=object)
    for idx, a in parts:
        if a is not None:
            obj[idx] = np.asarray(a, dtype=object)
    return pd.Series(obj, dtype=object).infer_objects().array
