"""cclab: a laboratory for TCP congestion control on mobile and wireless networks.

>>> import cclab
>>> r = cclab.simulate("s0-25ms", duration_s=5)   # doctest: +SKIP
>>> r.flows.head()                                  # doctest: +SKIP
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("cclab")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

from ._errors import ScenarioError
from .result import RunResult
from .scenario import Scenario, load_scenario
from .sim import SimulationError, simulate

__all__ = [
    "__version__",
    "simulate",
    "load_scenario",
    "Scenario",
    "ScenarioError",
    "RunResult",
    "SimulationError",
]
