"""Errors a user can act on."""

from __future__ import annotations

__all__ = ["ScenarioError"]


class ScenarioError(ValueError):
    """One or more scenario fields are wrong. ``problems`` lists (field path, message)."""

    def __init__(self, problems: list[tuple[str, str]], source: str | None = None) -> None:
        self.problems = problems
        self.source = source
        where = f"{source}: " if source else ""
        lines = [f"{where}{len(problems)} problem(s) in the scenario:"] if len(problems) > 1 else []
        lines += [f"{where if len(problems) == 1 else '  '}{p}: {m}" for p, m in problems]
        super().__init__("\n".join(lines))
