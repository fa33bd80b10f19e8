"""``cclab run``'s figures drawn by a forked process that imports matplotlib while the run
simulates.

Of the command's second, importing matplotlib takes about 0.3 s and drawing cwnd.png and
queue.png 0.2 s; loading the scenario, simulating and writing the tables about as long again.
``FigureWorker.start()`` forks when the command starts: the child imports matplotlib, then
waits for the figures' data (``plots.figure_data``) on a pipe. ``send`` hands it the data as
soon as the run is simulated (the child draws while the command writes its tables); ``wait``
waits for the child to exit, so both files exist when the command returns. When the child
cannot draw (or there is no ``fork``, or one CPU), ``wait`` returns None and the caller draws
in-process, as ``RunResult.write`` does: the figures are the same either way (the same
``plots.draw``). ``cancel`` ends the child when the command stops early; a child
whose parent died reads end-of-file and exits.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .result import RunResult

__all__ = ["FigureWorker"]

#: The figures the worker draws, as ``RunResult.write`` names them.
FIGURES = {"cwnd": "cwnd.png", "queue": "queue.png"}


class FigureWorker:
    """A forked child that draws a run's figures; see the module's docstring."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid: int | None = pid
        self.fd: int | None = fd
        self.feeder: threading.Thread | None = None
        self.paths: dict[str, Path] = {}

    @classmethod
    def start(cls) -> "FigureWorker | None":
        """Fork the worker; None where forking would not help (no ``os.fork``, one CPU)."""
        if not hasattr(os, "fork") or _cpus() < 2:
            return None
        # Both processes need numpy: imported once, before the fork, not once in each.
        import numpy  # noqa: F401

        r, w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: never returns into the command
            code = 1
            try:
                os.close(w)
                code = _serve(r)
            finally:
                os._exit(code)
        os.close(r)
        return cls(pid, w)

    def send(self, result: "RunResult", out_dir: str | Path) -> None:
        """Hand ``result``'s figures (into ``out_dir``, created here) to the child; returns at
        once (a thread feeds the pipe while the child may still be importing), so this process
        writes its tables while the child draws."""
        from .plots import figure_data

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        self.paths = {kind: out / name for kind, name in FIGURES.items()}
        payload = pickle.dumps((figure_data(result), {k: str(p) for k, p in self.paths.items()}),
                               protocol=pickle.HIGHEST_PROTOCOL)
        fd, self.fd = self.fd, None
        assert fd is not None, "send() twice"

        def feed() -> None:
            try:
                with os.fdopen(fd, "wb") as f:  # closing it is the child's end-of-file
                    f.write(payload)
            except OSError:  # the child is gone (BrokenPipeError): wait() tells
                pass

        self.feeder = threading.Thread(target=feed, name="cclab-figure-feeder", daemon=True)
        self.feeder.start()

    def wait(self) -> dict[str, Path] | None:
        """Wait for the child; the figures' paths when it drew them all, None otherwise (the
        caller then draws them itself)."""
        if self.feeder is not None:
            self.feeder.join()
        pid, self.pid = self.pid, None
        if pid is None:
            return None
        _, status = os.waitpid(pid, 0)
        return self.paths if os.waitstatus_to_exitcode(status) == 0 else None

    def cancel(self) -> None:
        """End the child without drawing (the command stopped before its figures)."""
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)  # it only holds matplotlib's import
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            self.pid = None
        if self.feeder is not None:
            self.feeder.join()  # its write ends with the child (BrokenPipeError)
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _serve(fd: int) -> int:
    """The child: import matplotlib, read the figures' data until end-of-file, draw them.
    Exit code 0 when every figure was drawn or nothing was asked; 1 otherwise."""
    try:
        import matplotlib.backends.backend_agg  # noqa: F401 - the import this process is for
        import matplotlib.figure  # noqa: F401

        from .plots import draw

        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        if not chunks:  # cancelled, or the command died
            return 0
        data, paths = pickle.loads(b"".join(chunks))
        for kind, path in paths.items():
            draw(kind, data[kind], path)
        return 0
    except BaseException:  # noqa: BLE001 - KeyboardInterrupt too: the parent draws or stops
        return 1


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1
