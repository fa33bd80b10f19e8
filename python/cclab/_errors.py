"""Errors a user can act on."""

from __future__ import annotations

__all__ = ["ScenarioError", "RunStopped"]


class ScenarioError(ValueError):
    """One or more scenario fields are wrong. ``problems`` lists (field path, message)."""

    def __init__(self, problems: list[tuple[str, str]], source: str | None = None) -> None:
        self.problems = problems
        self.source = source
        where = f"{source}: " if source else ""
        lines = [f"{where}{len(problems)} problem(s) in the scenario:"] if len(problems) > 1 else []
        lines += [f"{where if len(problems) == 1 else '  '}{p}: {m}" for p, m in problems]
        super().__init__("\n".join(lines))

    def __reduce__(self):  # pickled whole (a process pool sends it back from a worker)
        return (type(self), (self.problems, self.source))


class RunStopped(BaseException):
    """A run ended by SIGTERM or SIGHUP (what timeout, systemd, job schedulers and a closed
    terminal send): raised in the main thread so every context manager unwinds, as Ctrl-C's
    KeyboardInterrupt does, and, like it, not an Exception (nothing catching Exception swallows
    it). ``signum`` is the signal; the CLI exits with 128 + it."""

    def __init__(self, signum: int) -> None:
        import signal

        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum
