"""Aggregation of a sweep: mean, standard deviation and a 95 % confidence interval (Student t)
of each metric per grid point."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["aggregate", "write_table"]


def aggregate(runs: pd.DataFrame, by: list[str], metrics: list[str]) -> pd.DataFrame:
    """One row per ``by`` group: n, and for each metric its mean, std, ci95_low, ci95_high.
    Failed runs (``ok`` false) are left out and counted in ``n_failed``."""
    from scipy.stats import t as student_t

    ok = runs[runs["ok"].astype(bool)] if "ok" in runs else runs
    rows = []
    for keys, g in ok.groupby(by, sort=True, dropna=False):
        keys = keys if isinstance(keys, tuple) else (keys,)
        row = dict(zip(by, keys))
        row["n"] = len(g)
        for m in metrics:
            x = pd.to_numeric(g[m], errors="coerce").dropna().to_numpy(float) if m in g else np.array([])
            mean = float(np.mean(x)) if x.size else np.nan
            sd = float(np.std(x, ddof=1)) if x.size > 1 else np.nan
            half = float(student_t.ppf(0.975, x.size - 1) * sd / np.sqrt(x.size)) if x.size > 1 else np.nan
            row |= {f"{m}_mean": mean, f"{m}_std": sd, f"{m}_ci95_low": mean - half, f"{m}_ci95_high": mean + half}
        rows.append(row)
    out = pd.DataFrame(rows)
    if "ok" in runs and len(out):
        failed = runs[~runs["ok"].astype(bool)].groupby(by).size().rename("n_failed")
        out = out.merge(failed, left_on=by, right_index=True, how="left").fillna({"n_failed": 0})
        out["n_failed"] = out["n_failed"].astype(int)
    return out


def write_table(df: pd.DataFrame, path_stem: str | Path) -> list[Path]:
    """Write ``df`` as CSV and Parquet (``path_stem`` without suffix: a path or a string)."""
    path_stem = Path(path_stem)
    path_stem.parent.mkdir(parents=True, exist_ok=True)
    csv, pq = path_stem.with_suffix(".csv"), path_stem.with_suffix(".parquet")
    df.to_csv(csv, index=False)
    df.to_parquet(pq, index=False)
    return [csv, pq]
