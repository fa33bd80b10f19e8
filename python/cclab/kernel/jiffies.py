"""Where a kernel run's time zero falls on the kernel's tick grid, so that a simulation can be
paired with it (``[sim] jiffies_at_zero`` and ``tick_phase_us``; docs/scenario.md, "Timers").

TCP's timers are ``timer_list`` timers on the timer wheel, which runs a timer at its level's next
bucket after the expiry jiffy (kernel/time/timer.c ``calc_wheel_index``): at HZ = 250 a 1 s
timer runs 1 to 8 jiffies (4-32 ms) late, which one depending on jiffies when it was armed. The
simulator models the wheel (crates/cclab-sim/src/tcp/clock.rs); to fire its timers at the very
ticks the kernel did it needs jiffies at the run's zero and where zero falls inside a tick.

Ticks fall on multiples of the tick period of CLOCK_MONOTONIC (``tick_setup_device`` aligns
``tick_next_period`` to TICK_NSEC; /proc/timer_list shows the tick timer expiring on them), so
``jiffies = floor(monotonic_ns / tick_ns) + C`` with a constant C for the boot. C is read from
/proc/timer_list, which prints ``now at N nsecs`` and then ``jiffies: J``; a reading taken
near a tick edge could straddle it, so only one taken well inside a tick is used.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

__all__ = ["jiffies_offset", "kernel_clock"]

_TIMER_LIST = Path("/proc/timer_list")
_NOW = re.compile(rb"^now at (\d+) nsecs", re.M)
_JIFFIES = re.compile(rb"^jiffies: (\d+)", re.M)


def jiffies_offset(hz: int, tries: int = 20, path: Path = _TIMER_LIST) -> int | None:
    """C in ``jiffies = floor(monotonic_ns / tick_ns) + C``, or None when /proc/timer_list cannot
    be read (not root, or no such file) or never gives a reading well inside a tick."""
    tick_ns = 1_000_000_000 // hz
    for _ in range(tries):
        try:
            text = path.read_bytes()
        except OSError:
            return None
        now, jif = _NOW.search(text), _JIFFIES.search(text)
        if now is None or jif is None:
            return None
        now_ns = int(now.group(1))
        # The file is printed within a few tens of microseconds; away from the tick's edges both
        # numbers belong to the same tick.
        if 0.15 * tick_ns < now_ns % tick_ns < 0.85 * tick_ns:
            return int(jif.group(1)) - now_ns // tick_ns
        time.sleep(tick_ns / 3e9)
    return None


def kernel_clock(zero_s: float, hz: int | None, offset: int | None) -> dict | None:
    """The ``kernel_clock`` of a run whose time zero is ``zero_s`` (time.monotonic(), the
    emulator's zero): ``hz``, ``jiffies_at_zero`` and ``tick_phase_us``, the values of the
    simulator's ``[sim]`` settings of the same names; None when HZ or the offset is unknown."""
    if hz is None or offset is None:
        return None
    zero_ns = round(zero_s * 1e9)
    tick_ns = 1_000_000_000 // hz
    return {"hz": hz, "jiffies_at_zero": zero_ns // tick_ns + offset,
            "tick_phase_us": round((zero_ns % tick_ns) / 1e3, 3)}
