"""The simulator backend: run a scenario in the Rust core."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from .result import RunResult
from .scenario import Scenario, ScenarioError, core_problem, load_scenario

__all__ = ["simulate", "SimulationError"]


class SimulationError(RuntimeError):
    """The simulator failed for a reason other than bad input (a bug: please report it)."""


def simulate(
    scenario: Scenario | str | Path | dict[str, Any],
    seed: int | None = None,
    progress: Callable[[float], None] | None = None,
    **overrides: Any,
) -> RunResult:
    """Run ``scenario`` (a Scenario, a TOML path, a shipped name or a dict) on the simulator.

    >>> r = simulate("s0-25ms", **{"duration_s": 5})   # doctest: +SKIP
    >>> r.flows.head()                                  # doctest: +SKIP
    """
    from . import _core
    from . import __version__

    if seed is not None:
        overrides["seed"] = seed
    sc = load_scenario(scenario, **overrides)
    t0 = time.perf_counter()
    try:
        raw = _core.simulate(sc.to_core_json(), progress)
    except _core.SimError as e:
        raise SimulationError(str(e)) from None
    except _core.ConfigError as e:  # what load_scenario's check missed: still the user's field
        raise ScenarioError([core_problem(e)]) from None
    wall = time.perf_counter() - t0
    return RunResult.from_core(sc, raw, wall, __version__)
