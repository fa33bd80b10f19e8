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

from typing import TYPE_CHECKING, Any

from ._errors import ScenarioError

if TYPE_CHECKING:  # pragma: no cover
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

#: Where each public name lives: imported on first use (PEP 562), so ``import cclab`` and the
#: CLI's ``--help`` do not pay for pandas, pyarrow and pydantic until something needs them.
_LAZY = {"RunResult": "result", "Scenario": "scenario", "load_scenario": "scenario",
         "SimulationError": "sim", "simulate": "sim"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'cclab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
