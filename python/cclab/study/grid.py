"""Grids: every combination of some scenario fields x N repetitions, each run with its own
derived seed.

A :class:`RunSpec` is one run: a scenario source (a shipped name, a TOML path, a dict or a
``Scenario``) plus dotted overrides as ``load_scenario(source, **overrides)`` takes them, a seed,
and labels (the grid point and repetition) that aggregation groups by.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass
from typing import Any, Iterable

__all__ = ["RunSpec", "grid", "derive_seed"]


def derive_seed(base: int, rep: int) -> int:
    """The seed of repetition ``rep``: distinct per repetition, stable, independent of the grid
    (so adding a grid point or a repetition never changes the seeds of the others)."""
    h = hashlib.sha256(f"{base}:{rep}".encode()).digest()
    return int.from_bytes(h[:7], "big")


@dataclass(frozen=True, slots=True)
class RunSpec:
    """One run of a sweep.

    ``keep_trace`` stores the flows table in the cache; ``post`` (``"module:function"``) is
    called in the worker on the flows table and its DataFrame is cached beside the result
    (e.g. per-run trace inference, run in parallel with the simulations)."""

    source: Any
    overrides: tuple[tuple[str, Any], ...]
    seed: int
    labels: tuple[tuple[str, Any], ...]
    keep_trace: bool = False
    post: str | None = None
    #: "sim" (the simulator) or "kernel" (cclab.kernel.backend.run_kernel: root, real time,
    #: one run at a time).
    backend: str = "sim"

    def scenario(self) -> Any:
        """The normalised scenario (every default filled in), validated by the core."""
        from ..scenario import load_scenario

        return load_scenario(self.source, **dict(self.overrides), seed=self.seed)

    def key(self) -> str:
        """The cache key: a hash of the normalised scenario (seed included) and the cclab version."""
        from .. import __version__

        doc = {"scenario": self.scenario().as_run(), "version": __version__}
        if self.backend != "sim":
            doc["backend"] = self.backend
        blob = json.dumps(doc, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:24]


def grid(
    source: Any,
    axes: dict[str, Iterable[Any]],
    reps: int = 1,
    base_seed: int = 1,
    fixed: dict[str, Any] | None = None,
    labels: dict[str, Any] | None = None,
    keep_trace: bool = False,
    post: str | None = None,
    backend: str = "sim",
) -> list[RunSpec]:
    """Every combination of ``axes`` (dotted scenario fields -> values) x ``reps`` repetitions.

    ``fixed``: overrides applied to every run; ``labels``: extra columns for every row;
    ``backend``: "sim" or "kernel".
    Repetition r runs with seed ``derive_seed(base_seed, r)``.

    >>> specs = grid("s0-25ms", {"bottleneck.loss": [1e-4, 1e-3]}, reps=3)
    >>> len(specs), len({s.seed for s in specs})
    (6, 3)
    """
    keys = list(axes)
    specs = []
    for values in itertools.product(*(list(axes[k]) for k in keys)):
        point = dict(zip(keys, values))
        for rep in range(reps):
            ov = {**(fixed or {}), **point}
            lab = {**(labels or {}), **point, "rep": rep}
            specs.append(RunSpec(source, tuple(sorted(ov.items())), derive_seed(base_seed, rep), tuple(lab.items()),
                                 keep_trace, post, backend))
    return specs
