"""Child processes of a kernel run. Every one dies with the process that started it
(``die_with_parent``: ``PR_SET_PDEATHSIG``, so even a SIGKILL of ``cclab`` leaves no traffic
generator, emulator or daemon behind). A helper spoken to by lines on stdin/stdout
(``cclab-cwnd-clamp``, the middleware daemon): read a reply with a timeout, stop it (end of
input, its last line, then wait, else kill), and close its pipes."""

from __future__ import annotations

import ctypes
import os
import selectors
import signal
import subprocess
from typing import Callable

#: prctl(2) option: the signal a process gets when the thread that forked it ends.
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """For ``subprocess.Popen(preexec_fn=...)``: SIGKILL this child when its parent ends (kept
    across ``exec``, so ``ip netns exec ... python`` keeps it). If the parent is already gone
    (it died between fork and here), exit at once."""
    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != parent:
        os._exit(1)


def preexec(*fns: Callable[[], None] | None) -> Callable[[], None]:
    """One ``preexec_fn`` running :func:`die_with_parent` and then each of ``fns`` (None
    skipped: e.g. a cgroup's ``preexec`` when there is one)."""
    steps = [die_with_parent, *(f for f in fns if f is not None)]

    def run() -> None:
        for f in steps:
            f()

    return run


def read_line(proc: subprocess.Popen[str], timeout_s: float) -> str | None:
    """The next line ``proc`` writes within ``timeout_s``; None if none (or it ended)."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout_s):
            return None
    return proc.stdout.readline() or None


def kill(proc: subprocess.Popen[str]) -> None:
    """Kill ``proc`` if it still runs, and reap it."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def stop(proc: subprocess.Popen[str], timeout_s: float) -> str | None:
    """Close ``proc``'s input (its signal to undo what it set and exit), take the last line it
    writes, wait for it (killed after ``timeout_s``), and close its pipes. Returns that line."""
    line = None
    if proc.poll() is None:
        assert proc.stdin is not None
        try:
            proc.stdin.close()
        except BrokenPipeError:
            pass
        line = read_line(proc, timeout_s)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            kill(proc)
    for f in (proc.stdin, proc.stdout, proc.stderr):
        if f is not None and not f.closed:
            try:
                f.close()
            except BrokenPipeError:
                pass
    return line
