"""What cclab ships: scenario files and congestion-control algorithms with their presets."""

from __future__ import annotations

import json
import tomllib
from typing import Any

from .scenario import shipped_scenarios

__all__ = ["scenarios", "algorithms"]


def scenarios() -> list[dict[str, str]]:
    """Shipped scenarios: name, description, path."""
    out = []
    for name, path in shipped_scenarios().items():
        try:
            desc = tomllib.loads(path.read_text()).get("description", "")
        except (OSError, tomllib.TOMLDecodeError):
            desc = "(unreadable)"
        out.append({"name": name, "description": desc, "path": str(path)})
    return out


def algorithms() -> list[dict[str, Any]]:
    """Algorithms and presets known to the simulator, with their tunables and sources."""
    from . import _core

    return json.loads(_core.algorithms())
