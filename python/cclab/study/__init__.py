"""Studies: grids of scenarios x repetitions run in parallel, aggregated with confidence
intervals, turned into the papers' figures, tables and a report.

>>> from cclab.study import grid, run_sweep, aggregate
>>> specs = grid("s0-25ms", {"bottleneck.loss": [1e-4, 1e-3]}, reps=3)   # doctest: +SKIP
>>> res = run_sweep(specs, cache_dir="out/cache")                          # doctest: +SKIP
>>> aggregate(res.runs, ["bottleneck.loss"], ["goodput_bps"])              # doctest: +SKIP
"""

from __future__ import annotations

from .aggregate import aggregate, write_table
from .compare import compare_with_paper
from .grid import RunSpec, derive_seed, grid
from .s0 import S0Config, run_s0
from .sweep import SweepResult, run_one, run_sweep

__all__ = ["grid", "run_sweep", "run_one", "RunSpec", "SweepResult", "derive_seed", "aggregate", "write_table",
           "compare_with_paper", "S0Config", "run_s0"]
