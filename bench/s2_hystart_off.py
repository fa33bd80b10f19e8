"""S2's kernel part with HyStart off on both backends: paired runs of the paper's setup with
uncoupled CUBIC under Linux's TSQ (one of the two settings `cclab study s2 --backend kernel`
pairs; the simulator with upstream's Multipath TCP and the kernel backend's device), every
subflow's `cc_params.hystart = false`. On the kernel that is tcp_cubic's global module
parameter, set and restored by the backend (`cclab.kernel.knobs.CubicModuleParams`).

    sudo flock /tmp/cclab-kernel.lock env PYTHONPATH=$PWD/python python3 bench/s2_hystart_off.py \
        --reps 5 --duration 10

Prints each repetition's per-application throughput once all run (`steady_rates`) on both
backends, then per backend mean, sd, min and max, and kernel / simulator of the means.
`--hystart` keeps HyStart on (the study's other setting); `--mptcp-stack v0.9x` pairs the
simulator's default stack instead (the ablation). Root only.
"""

from __future__ import annotations

import argparse
import os
import subprocess

import numpy as np

import cclab
from cclab.kernel.backend import run_kernel
from cclab.study.grid import derive_seed
from cclab.study.s2 import kernel_scenario, steady_rates


def scenario(duration_s: float, hystart: bool, mptcp_stack: str = "linux") -> dict:
    """The study's kernel part (`cclab.study.s2.kernel_scenario`): the paper's setup with
    uncoupled CUBIC under Linux's TSQ, upstream's MPTCP and the kernel backend's device in the
    simulator; HyStart off unless ``hystart``. ``mptcp_stack = "v0.9x"``: the simulator's
    default stack instead (the ablation)."""
    d = kernel_scenario(0.0, duration_s, hystart)
    if mptcp_stack != "linux":
        for f in d["flows"]:
            f.pop("mptcp_stack", None)
    return d


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--duration", type=float, default=10.0, help="seconds per run")
    ap.add_argument("--hystart", action="store_true", help="keep HyStart on")
    ap.add_argument("--mptcp-stack", choices=("linux", "v0.9x"), default="linux",
                    help="the simulator's Multipath TCP (the kernel always runs upstream's)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("root only (the kernel backend)")
    d = scenario(a.duration, a.hystart, a.mptcp_stack)
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
