"""A helper process spoken to by lines on stdin/stdout (``cclab-cwnd-clamp``, the middleware
daemon): read a reply with a timeout, stop it (end of input, its last line, then wait, else
kill), and close its pipes."""

from __future__ import annotations

import selectors
import subprocess


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
