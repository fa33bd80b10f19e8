"""The whole `cclab run` as a user starts it: the median wall time of N processes.

    python3 bench/run_wall.py [--runs 7] [--budget-s 1.0] [SCENARIO [ARGS...]]

Each run is ``cclab run SCENARIO -q -o <fresh temporary directory> ARGS`` as a subprocess (the
``cclab`` on PATH when there is one, else ``python -m cclab``); one untimed run first warms the
file cache. Prints the command, every time, the median and whether it is within the budget
(issue 18: at most 1 s on the S0 25 ms path). Exit code 0 either way: a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7, help="timed runs (default 7)")
    ap.add_argument("--budget-s", type=float, default=1.0, help="the target for the median (default 1.0 s)")
    ap.add_argument("scenario", nargs="?", default="s0-25ms")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="more `cclab run` arguments")
    a = ap.parse_args()
    exe = shutil.which("cclab")
    base = [exe] if exe else [sys.executable, "-m", "cclab"]
    times = []
    with tempfile.TemporaryDirectory(prefix="cclab-bench-run-") as tmp:
        for i in range(a.runs + 1):
            cmd = [*base, "run", a.scenario, "-q", "-o", f"{tmp}/{i}", *a.args]
            if i == 0:
                print("$", " ".join(cmd[:-len(a.args) - 1] if a.args else cmd[:-1]), "<dir>", *a.args)
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True)
            if i:  # the first run only warms the caches
                times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    print("runs (s):", " ".join(f"{t:.2f}" for t in times))
    verdict = "within" if med <= a.budget_s else "OVER"
    print(f"median {med:.2f} s over {len(times)} runs ({verdict} the {a.budget_s:g} s budget)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
