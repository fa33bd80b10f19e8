"""How well `cclab.infer.estimate_cubic` reads CUBIC's C on simulated traces, over a grid of C,
beta, RTT and queue depth (issue 13 part 6: within 3 % across RTT 25-550 ms and queue depths).

Each case is one simulated CUBIC flow on a dumbbell (`--rate-mbps` or `--bdp-pkts` fixes the
path's rate; the queue is a multiple of the BDP), traced every 10 ms, and the estimate is read
from the trace with its RTT columns (as `cclab infer cubic` reads a cclab trace). The error is
against the C the simulator runs: round(c * 1024) / 1024 (`CubicParams::cube_rtt_scale`), e.g.
0.25 for 0.25 and 0.7998 for 0.8 (the kernel backend's cclab_cubic runs bic_scale * 10 / 1024,
0.2539 for 0.25: `--ref kernel` compares with that).

    PYTHONPATH=python python3 bench/infer_cubic_grid.py                       # the whole grid
    PYTHONPATH=python python3 bench/infer_cubic_grid.py --c 0.25 --beta 0.8 --rtt 50 100 200
    PYTHONPATH=python python3 bench/infer_cubic_grid.py --bdp-pkts 300 --queue-bdp 1
    PYTHONPATH=python python3 bench/infer_cubic_grid.py --loss 1e-5 --seeds 1 2 3 --csv out.csv

Prints one row per case (C, beta, RTT, queue, seed: the estimate, its error in %, usable cycles
and whether it is reliable), then the errors as a table (rows C/beta, columns RTT x queue; the
median over seeds; "-" where no reliable estimate came), and how many reliable cases lie within
3 %.
"""

from __future__ import annotations

import argparse
import itertools
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np
import pandas as pd

#: Trace columns the estimator reads (as in a cclab trace or a TCP_INFO CSV).
COLUMNS = ["t_s", "cwnd_pkts", "srtt_ms", "min_rtt_ms", "ca_state"]


def scenario(c: float, beta: float, rtt_ms: float, queue_bdp: float, seed: int, a: argparse.Namespace) -> dict:
    rate = a.rate_mbps * 1e6 if a.bdp_pkts is None else a.bdp_pkts * 1500 * 8 / (rtt_ms / 1000)
    bdp = rate * rtt_ms / 1000 / 8 / 1500
    link: dict[str, Any] = {"rate_bps": rate, "delay_ms": rtt_ms / 2, "queue_pkts": max(2, round(queue_bdp * bdp))}
    if a.loss:
        link["loss"] = a.loss
    return {
        "name": "infer-grid",
        "duration_s": a.duration or max(120.0, 400 * rtt_ms / 1000),
        # A send buffer that never limits the window (Linux's tcp_wmem max, 4 MiB, holds about
        # 1600 packets: the 550 ms path's window at 20 Mbit/s sat there without a loss).
        "host": {"tcp_wmem_bytes": [4096, 16384, a.wmem_max]},
        "seed": seed,
        "sim": {"trace": "interval", "trace_interval_ms": 10},
        "bottleneck": link,
        "flows": [{"cc": "cubic", "cc_params": {"c": c, "beta": beta, **dict(a.cc_param)}}],
    }


def _key_value(text: str) -> tuple[str, Any]:
    key, _, value = text.partition("=")
    if value.lower() in ("true", "false"):
        return key, value.lower() == "true"
    return key, float(value)


def _no_rounding(cub: Any) -> None:
    cub.toward_plateau = lambda x: x
    cub.HALF_PKT = 0.0


#: Estimator terms the bench can turn off (ablations): what each leaves, and how.
ABLATIONS: dict[str, tuple[str, Any]] = {
    "rounding": ("the window on the continuous curve, not on the kernel's rounded target", _no_rounding),
    "replay": ("the window a round trip behind the target (the earlier lag model), no replay of the kernel's steps",
               lambda cub: setattr(cub, "step_times", lambda c, K, wm, wp, lead, t, rtt, *_: (t, t - rtt))),
    "friendly": ("no TCP-friendly line (cubic alone)", lambda cub: setattr(
        cub, "friendly_pkts", lambda t, *_: np.full_like(t, -np.inf))),
    "kernel-beta": ("the friendly line's beta_scale from each cycle's W'/W, not from all reductions",
                    lambda cub: setattr(cub, "kernel_betas", lambda cycles: [])),
    "rtt": ("no RTT columns used: no lag, no friendly line", lambda cub: setattr(cub, "_timing", lambda df: None)),
}


def reference_c(c: float, ref: str) -> float:
    """The C a run uses: the simulator's round(c * 1024) / 1024, or the kernel's bic_scale."""
    return round(c * 1024) / 1024 if ref == "sim" else round(c * 1024 / 10) * 10 / 1024


def run_case(args: tuple[float, float, float, float, int, argparse.Namespace]) -> dict[str, Any]:
    import cclab
    from cclab import infer
    from cclab.infer import cubic as cub

    c, beta, rtt, q, seed, a = args
    for name in a.ablate:  # each worker process patches its own copy

        ABLATIONS[name][1](cub)
    r = cclab.simulate(scenario(c, beta, rtt, q, seed, a))
    start = time.perf_counter()
    est = infer.estimate_cubic(r.flows[COLUMNS])
    took = time.perf_counter() - start
    cyc = est.cycles
    usable = int((cyc.get("fit_ok", pd.Series(dtype=bool)) == True).sum()) if len(cyc) else 0  # noqa: E712
    ref = reference_c(c, a.ref)
    return {
        "c": c, "beta": beta, "rtt_ms": rtt, "queue_bdp": q, "seed": seed, "c_ref": ref,
        "c_est": est.c.value, "err_pct": 100 * (est.c.value / ref - 1) if est.reliable else np.nan,
        "beta_est": est.beta.value, "cycles": len(cyc), "usable": usable, "reliable": est.reliable,
        "estimate_s": took,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--c", type=float, nargs="+", default=[0.25, 0.4, 0.8], help="C values (default 0.25 0.4 0.8)")
    ap.add_argument("--beta", type=float, nargs="+", default=[0.6, 0.7, 0.8], help="beta values (default 0.6 0.7 0.8)")
    ap.add_argument("--rtt", type=float, nargs="+", default=[25, 50, 100, 200, 550], help="RTTs, ms")
    ap.add_argument("--queue-bdp", type=float, nargs="+", default=[1, 3], help="queue depths in BDPs (default 1 3)")
    ap.add_argument("--rate-mbps", type=float, default=20.0, help="bottleneck rate (default 20 Mbit/s)")
    ap.add_argument("--bdp-pkts", type=float, default=None,
                    help="fix the BDP in 1500-byte packets instead of the rate (the rate then follows the RTT)")
    ap.add_argument("--duration", type=float, default=None,
                    help="simulated seconds per run (default max(120, 400 RTTs): 220 s at 550 ms)")
    ap.add_argument("--wmem-max", type=int, default=64 << 20,
                    help="the hosts' tcp_wmem max, bytes (default 64 MiB, so the send buffer never limits)")
    ap.add_argument("--loss", type=float, default=0.0, help="random loss rate on the bottleneck (default 0)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1], help="seeds (several are useful with --loss)")
    ap.add_argument("--ref", choices=["sim", "kernel"], default="sim",
                    help="C to compare with: the simulator's round(c*1024)/1024 or the kernel's bic_scale*10/1024")
    ap.add_argument("--cc-param", type=_key_value, action="append", default=[], metavar="KEY=VALUE",
                    help="another CUBIC tunable for the simulator, e.g. tcp_friendliness=false (ablation)")
    ap.add_argument("--ablate", choices=sorted(ABLATIONS), action="append", default=[],
                    help="turn an estimator term off (ablation): "
                    + "; ".join(f"{k}: {v[0]}" for k, v in ABLATIONS.items()))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--csv", help="write the per-case rows here")
    a = ap.parse_args()

    cases = [(c, b, r, q, s, a) for c, b, r, q, s in itertools.product(a.c, a.beta, a.rtt, a.queue_bdp, a.seeds)]
    with ProcessPoolExecutor(a.workers) as ex:
        rows = list(ex.map(run_case, cases))
    df = pd.DataFrame(rows)
    pd.set_option("display.width", 200, "display.max_rows", 1000)
    print(df.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    if a.csv:
        df.to_csv(a.csv, index=False)
    tab = df.pivot_table(index=["c", "beta"], columns=["rtt_ms", "queue_bdp"], values="err_pct", aggfunc="median",
                         dropna=False)
    print("\nerror in C, % (median over seeds; '-' = no reliable estimate); columns RTT ms / queue BDP")
    print(tab.to_string(float_format=lambda x: f"{x:+.1f}", na_rep="-"))
    ok = df["err_pct"].notna()
    within = (df.loc[ok, "err_pct"].abs() <= 3).sum()
    err = df.loc[ok, "err_pct"].abs()
    print(f"\nreliable {ok.sum()} of {len(df)}; within 3 %: {within} of {ok.sum()}; "
          f"median |err| {err.median():.2f} %, max |err| {err.max():.2f} %")


if __name__ == "__main__":
    main()
