"""S2's kernel part with HyStart off on both backends: paired runs of the paper's setup with
uncoupled CUBIC under Linux's TSQ (what `cclab study s2 --backend kernel` pairs), every subflow's
`cc_params.hystart = false`. On the kernel that is tcp_cubic's global module parameter, set and
restored by the backend (`cclab.kernel.knobs.CubicModuleParams`).

    sudo flock /tmp/cclab-kernel.lock env PYTHONPATH=$PWD/python python3 bench/s2_hystart_off.py \
        --reps 5 --duration 10

Prints each repetition's per-application throughput once all run (`steady_rates`) on both
backends, then per backend mean, sd, min and max, and kernel / simulator of the means.
`--hystart` keeps HyStart on (the study's own kernel part) for comparison. Root only.
"""

from __future__ import annotations

import argparse
import os
import subprocess

import numpy as np

import cclab
from cclab.kernel.backend import run_kernel
from cclab.study.grid import derive_seed
from cclab.study.s2 import steady_rates
from cclab.study.s2_scenarios import s2_scenario


def scenario(duration_s: float, hystart: bool) -> dict:
    """The paper's setup with uncoupled CUBIC under Linux's TSQ; HyStart off unless ``hystart``."""
    d = s2_scenario(3, cc="cubic", tsq="linux", duration_s=duration_s)
    if not hystart:
        for f in d["flows"]:
            f["cc_params"] = {**f.get("cc_params", {}), "hystart": False}
    return d


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--duration", type=float, default=10.0, help="seconds per run")
    ap.add_argument("--hystart", action="store_true", help="keep HyStart on")
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("root only (the kernel backend)")
    d = scenario(a.duration, a.hystart)
    print("load:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    got: dict[str, list[list[float]]] = {"sim": [], "kernel": []}
    for rep in range(a.reps):
        seed = derive_seed(2, rep)  # the study's seeds (cclab.study.s2._spec)
        sim = steady_rates(cclab.simulate(d, seed=seed).flows)["steady_mbps"].tolist()
        ker = steady_rates(run_kernel(d, seed=seed).flows)["steady_mbps"].tolist()
        got["sim"].append(sim)
        got["kernel"].append(ker)
        print(f"rep {rep}: sim {np.round(sim, 1)} kernel {np.round(ker, 1)} Mbit/s", flush=True)
    for backend, rows in got.items():
        x = np.array(rows)
        sd = x.std(0, ddof=1) if len(x) > 1 else np.zeros(x.shape[1])
        print(f"{backend:>6}: mean {x.mean(0).round(1)} sd {sd.round(1)} min {x.min(0).round(1)} "
              f"max {x.max(0).round(1)}")
    ratio = np.array(got["kernel"]).mean(0) / np.array(got["sim"]).mean(0)
    print("kernel / sim:", ratio.round(3))
    print("load:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
