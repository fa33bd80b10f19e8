"""A run's trace tables as numpy columns, written to Parquet with pyarrow and turned into pandas
DataFrames only when asked.

``cclab run`` writes the tables and draws the figures without importing pandas (about 0.2 s of
the command). The Parquet files carry the same schema and ``pandas`` metadata that
``DataFrame.to_parquet`` writes, so ``pd.read_parquet`` gives back the DataFrame
``Table.to_pandas`` builds, dtypes and all (python/tests/test_tables.py checks both).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pyarrow as pa

__all__ = ["Column", "Table"]


@dataclass(frozen=True)
class Column:
    """One column. ``kind``: ``plain`` (a numpy array as is), ``category`` (``values`` are codes
    into ``categories``, -1 for none: a pandas Categorical), ``nullable_int`` (int64 ``values``,
    null where ``mask``: pandas ``Int64``) or ``string`` (``values`` a list of str: pandas
    ``string``)."""

    values: Any
    kind: str = "plain"
    categories: tuple[str, ...] = ()
    mask: np.ndarray | None = None

    @classmethod
    def category(cls, codes: Any, categories: list[str] | tuple[str, ...]) -> "Column":
        return cls(np.asarray(codes, dtype=np.int64), "category", tuple(categories))

    @classmethod
    def nullable_int(cls, values: np.ndarray, mask: np.ndarray) -> "Column":
        return cls(np.asarray(values, dtype=np.int64), "nullable_int", mask=np.asarray(mask, dtype=bool))

    @classmethod
    def string(cls, values: list[str]) -> "Column":
        return cls(list(values), "string")

    def codes(self) -> np.ndarray:
        """A category's codes in the smallest integer type pandas would pick
        (``pandas.core.dtypes.cast.coerce_indexer_dtype``)."""
        n = len(self.categories)
        for t in (np.int8, np.int16, np.int32):
            if n < np.iinfo(t).max:
                return self.values.astype(t)
        return self.values.astype(np.int64)

    def to_arrow(self) -> "pa.Array":
        import pyarrow as pa

        if self.kind == "category":
            codes = self.codes()
            # No categories: pandas writes a null-typed dictionary (read back as a null column).
            dictionary = (_strings(self.categories, pa.string()) if self.categories
                          else pa.Array.from_buffers(pa.null(), 0, [None]))
            return pa.DictionaryArray.from_arrays(_numeric(codes, codes < 0), dictionary)
        if self.kind == "nullable_int":
            return _numeric(self.values, self.mask)
        if self.kind == "string":
            return _strings(self.values, pa.large_string())
        values = np.asarray(self.values)
        # NaN is written as null, as ``pa.Table.from_pandas`` does (``from_pandas=True``).
        return _numeric(values, np.isnan(values) if values.dtype.kind == "f" else None)

    def to_pandas(self) -> Any:
        import pandas as pd

        if self.kind == "category":
            return pd.Categorical.from_codes(self.codes(), categories=list(self.categories))
        if self.kind == "nullable_int":
            out = pd.array(self.values, dtype="Int64")
            out[self.mask] = pd.NA
            return out
        if self.kind == "string":
            return pd.array(self.values, dtype="string")
        return self.values

    def pandas_metadata(self, name: str) -> dict[str, Any]:
        """This column's entry in the ``pandas`` schema metadata, as pyarrow writes it
        (``pyarrow.pandas_compat.get_column_metadata``)."""
        if self.kind == "category":
            pandas_type, numpy_type = "categorical", str(self.codes().dtype)
            meta: dict[str, Any] | None = {"num_categories": len(self.categories), "ordered": False}
        elif self.kind == "nullable_int":
            pandas_type, numpy_type, meta = "int64", "Int64", None
        elif self.kind == "string":
            pandas_type, numpy_type, meta = "object", "string", None
        else:
            pandas_type = numpy_type = str(self.values.dtype)
            meta = None
        return {"name": name, "field_name": name, "pandas_type": pandas_type, "numpy_type": numpy_type,
                "metadata": meta}


class Table:
    """Named columns of equal length, in order."""

    def __init__(self, columns: dict[str, Column]) -> None:
        self.columns = columns

    def __len__(self) -> int:
        return len(next(iter(self.columns.values())).values) if self.columns else 0

    def __getitem__(self, name: str) -> Column:
        return self.columns[name]

    def to_pandas(self) -> "pd.DataFrame":
        import pandas as pd

        return pd.DataFrame({name: c.to_pandas() for name, c in self.columns.items()})

    def to_arrow(self) -> "pa.Table":
        """An Arrow table with the schema and ``pandas`` metadata ``pa.Table.from_pandas(
        self.to_pandas(), preserve_index=False)`` would give."""
        import pyarrow as pa

        meta = {
            "index_columns": [],
            "column_indexes": [],
            "columns": [c.pandas_metadata(name) for name, c in self.columns.items()],
            "attributes": {},
            "creator": {"library": "pyarrow", "version": pa.__version__},
            "pandas_version": _pandas_version(),
        }
        arrays = [c.to_arrow() for c in self.columns.values()]
        schema = pa.schema([pa.field(name, a.type) for name, a in zip(self.columns, arrays)],
                           metadata={b"pandas": json.dumps(meta).encode()})
        return pa.Table.from_arrays(arrays, schema=schema)

    def write_parquet(self, path: str | Path) -> None:
        """What ``self.to_pandas().to_parquet(path, index=False)`` writes, without pandas."""
        import pyarrow.parquet as pq

        pq.write_table(self.to_arrow(), path)

    @classmethod
    def from_pandas(cls, df: "pd.DataFrame") -> "Table":
        """A DataFrame's columns to read (the figures of a kernel run): categories kept, ``Int64``
        as a nullable integer, strings (missing ones as ""), any other non-numeric column as
        categories in sorted order (as ``groupby`` orders its keys)."""
        import pandas as pd

        cols = {}
        for name, s in df.items():
            if isinstance(s.dtype, pd.CategoricalDtype):
                cols[str(name)] = Column.category(s.cat.codes.to_numpy(), [str(c) for c in s.cat.categories])
            elif isinstance(s.dtype, pd.Int64Dtype):
                cols[str(name)] = Column.nullable_int(s.fillna(0).to_numpy(np.int64), s.isna().to_numpy())
            elif isinstance(s.dtype, pd.StringDtype):
                cols[str(name)] = Column.string(s.fillna("").tolist())
            elif pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
                cols[str(name)] = Column(s.to_numpy())
            else:
                codes, uniques = pd.factorize(s, sort=True)
                cols[str(name)] = Column.category(codes, [str(u) for u in uniques])
        return cls(cols)


# pyarrow's ``pa.array`` imports pandas (0.2 s) to check whether its argument is a Series, so the
# arrays are assembled from their buffers (the Arrow columnar format) instead.


def _numeric(values: np.ndarray, null: np.ndarray | None) -> "pa.Array":
    """A numeric or boolean numpy array as an Arrow array, null where ``null``."""
    import pyarrow as pa

    values = np.ascontiguousarray(values)
    n = len(values)
    if values.dtype == np.bool_:
        data = pa.py_buffer(np.packbits(values, bitorder="little"))
        typ = pa.bool_()
    else:
        data, typ = pa.py_buffer(values), pa.from_numpy_dtype(values.dtype)
    if null is None or not null.any():
        return pa.Array.from_buffers(typ, n, [None, data], null_count=0)
    validity = pa.py_buffer(np.packbits(~null, bitorder="little"))
    return pa.Array.from_buffers(typ, n, [validity, data], null_count=int(null.sum()))


def _strings(values: Any, typ: "pa.DataType") -> "pa.Array":
    """A sequence of str as an Arrow ``string`` (int32 offsets) or ``large_string`` array."""
    import pyarrow as pa

    encoded = [str(v).encode() for v in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64 if typ == pa.large_string() else np.int32)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return pa.Array.from_buffers(typ, len(encoded), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))],
                                 null_count=0)


@lru_cache(maxsize=1)
def _pandas_version() -> str:
    """The installed pandas' version, read from its metadata (importing pandas costs 0.2 s)."""
    try:
        return version("pandas")
    except PackageNotFoundError:  # pragma: no cover - pandas is a dependency
        return ""
