"""A sweep's memory as it grows: peak RSS of the driver (the process that calls run_sweep) for
sweeps of N short runs, each N in a fresh process.

    python3 bench/sweep_memory.py [--sizes 1000,10000] [--jobs 2] [--duration-s 0.2]

Each run is the S0 25 ms path for ``--duration-s`` simulated seconds with its own seed (so none
is cached), through ``run_sweep`` with a cache directory, as ``cclab sweep`` runs it. Prints, per
N, the wall time, runs per second, the driver's peak RSS (with the results table built, and
when the last run came back, before it), and the largest worker's (issue 18 part 6: a 10^4-run
sweep keeps flat memory). A benchmark, not a test: exit code 0 either way.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time


def _peak_mib(who: int = resource.RUSAGE_SELF) -> float:
    return round(resource.getrusage(who).ru_maxrss / 1024, 1)


def one(n: int, jobs: int, duration_s: float) -> dict:
    from cclab.scenario import load_scenario
    from cclab.study import grid, run_sweep

    base = load_scenario("s0-25ms").model_dump(mode="json", exclude_none=True)
    base["duration_s"] = duration_s
    specs = grid(base, {}, reps=n)
    at_last_run = [0.0]

    def progress(done: int, total: int) -> None:
        if done == total:  # every run back, the results table not built yet
            at_last_run[0] = _peak_mib()

    with tempfile.TemporaryDirectory(prefix="cclab-sweep-mem-") as d:
        t0 = time.perf_counter()
        res = run_sweep(specs, d, jobs=jobs, progress=progress)
        wall = time.perf_counter() - t0
        # Read before the cache directory is removed (removing 10^4 entries costs memory of its own).
        driver, workers = _peak_mib(), _peak_mib(resource.RUSAGE_CHILDREN)
    assert len(res.runs) == n and res.runs["ok"].all(), res.failures
    return {"runs": n, "wall_s": round(wall, 1), "runs_per_s": round(n / wall, 1),
            "driver_peak_rss_mib": driver, "driver_peak_rss_before_table_mib": at_last_run[0],
            "worker_peak_rss_mib": workers}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--duration-s", type=float, default=0.2)
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one(a.one, a.jobs, a.duration_s)))
        return 0
    for n in (int(x) for x in a.sizes.split(",")):
        out = subprocess.run([sys.executable, __file__, "--one", str(n), "--jobs", str(a.jobs),
                              "--duration-s", str(a.duration_s)], capture_output=True, text=True)
        print(out.stdout.strip() or out.stderr.strip()[-2000:], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
