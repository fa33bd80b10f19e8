"""``cclab study``: named studies (grids x repetitions, in parallel) with figures and a report."""

from __future__ import annotations

import sys
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

__all__ = ["study"]

out = Console()
err = Console(stderr=True)


def _parallel_options(f: Any) -> Any:
    """A study command's ``-j/--jobs`` and ``--executor``."""
    f = click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
                     help="local processes, or a Ray cluster (pip install 'cclab[ray]'; RAY_ADDRESS or a local "
                          "instance).")(f)
    return click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
                        help="Parallel runs (default: every core).")(f)


def _require_root() -> None:
    """Exit 2 with the reason unless this process may use the kernel backend."""
    from .kernel.netns import KernelUnavailable, require_root

    try:
        require_root()
    except KernelUnavailable as e:
        err.print(f"[bold red]error:[/] {e}", highlight=False)
        sys.exit(2)


def _print_outcome(study: str, res: Any, labels: tuple[str, ...]) -> None:
    """The paper beside cclab as a table, the run count and the report's path; each failed run
    with its ``labels``, then exit 1."""
    t = Table(title=f"{study}: the paper vs cclab")
    for col in ("result", "paper", "cclab"):
        t.add_column(col)
    for _, r in res.compare.iterrows():
        v = r["cclab"]
        t.add_row(str(r["result"]), str(r["paper"]), v if isinstance(v, str) else "n/a" if v != v else f"{v:.3g}")
    out.print(t)
    out.print(f"{len(res.runs) + len(res.failures)} runs in {res.wall_s:.1f} s ({len(res.failures)} failed); "
              f"report: {res.out_dir / 'report.html'}")
    if len(res.failures):
        for _, f in res.failures.iterrows():
            what = {k: f[k] for k in labels if k in f and f[k] == f[k]}
            err.print(f"failed: {what}: {f['error']}", highlight=False)
        sys.exit(1)


def _run_with_progress(name: str, run: Any, out_dir: str, cfg: Any) -> Any:
    """``run(out_dir, cfg, progress=...)`` under a progress bar; a RuntimeError exits 2."""
    with Progress(TextColumn(f"[bold]study {name}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TimeRemainingColumn(), console=err, transient=True) as bar:
        task = bar.add_task("runs", total=None)
        try:
            return run(out_dir, cfg, progress=lambda i, n: bar.update(task, completed=i, total=n))
        except RuntimeError as e:
            err.print(f"[bold red]error:[/] {e}", highlight=False)
            sys.exit(2)


@click.group(
    epilog="""\b
Examples:
  cclab study s0 -o out/s0                 # the full S0 study (about two minutes on 2 cores)
  cclab study s0 --quick -o out/s0-quick   # a reduced grid in seconds
  cclab study s0 --reps 3 --jobs 8 --executor ray
  cclab study s1 --quick -o out/s1-quick   # S1: terminals on one WLAN AP
  cclab study s2 --quick -o out/s2-quick   # S2: MPTCP applications and TCP Small Queues
  cclab study s3 --quick -o out/s3-quick   # S3: spurious timeouts on a 3G link
  cclab study s4 --quick -o out/s4-quick   # S4: TCP over an 802.11s mesh chain
"""
)
def study() -> None:
    """Run a named study: a grid of scenarios x repetitions, tables, figures and report.html."""


@study.command(
    epilog="""\b
Examples:
  cclab study s0 -o out/s0
  cclab study s0 --quick
  cclab study s0 --reps 20 -o out/s0-20  # reruns reuse cached runs (out/s0-20/cache)
  sudo cclab study s0 --backend kernel --quick --reps 1 -o out/s0-kernel   # on the real kernel
"""
)
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False), default="out/s0", show_default=True,
              help="Output directory (tables/, figures/, report.html, cache/).")
@click.option("--reps", type=click.IntRange(min=1), default=None, help="Runs per grid point (default 10; 2 with --quick).")
@click.option("--quick", is_flag=True, help="Reduced grid: 3 error rates, 20 s runs, 3 RTTs for B and C, 10 ablation variants at 2 error rates.")
@_parallel_options
@click.option("--backend", type=click.Choice(["sim", "kernel"]), default="sim", show_default=True,
              help="The simulator, or this machine's Linux kernel (root; real time, one run at a time: "
                   "the full grid takes hours, --quick --reps 1 about 15 minutes).")
def s0(out_dir: str, reps: int | None, quick: bool, jobs: int | None, executor: str, backend: str) -> None:
    """S0: Linux CUBIC vs iOS-like CUBIC and Apple's CUBIC. Experiment A (throughput vs error rate, Figs. 4-6),
    B (cwnd over time, Fig. 8), method C (c, b per cycle, Tables 3-6, Fig. 10), and "why the
    order", an ablation of Apple's CUBIC (cubic-xnu) against Linux's (simulator)."""
    from .study import S0Config, run_s0

    if backend == "kernel":
        _require_root()
    cfg = S0Config.make(quick=quick, reps=reps, jobs=jobs, executor=executor, backend=backend)
    res = _run_with_progress("s0", run_s0, out_dir, cfg)
    t = Table(title="S0: the paper vs cclab")
    for col in ("result", "paper", "cclab"):
        t.add_column(col)
    for _, r in res.compare.iterrows():
        t.add_row(str(r["result"]), str(r["paper"]), str(r["cclab"]))
    out.print(t)
    n = res.n_runs
    for line in res.ablation_conclusion:
        out.print(f"why the order: {line}", highlight=False)
    out.print(f"{n} runs in {res.wall_s:.1f} s ({len(res.failures)} failed); report: {res.out_dir / 'report.html'}")
    if len(res.failures):
        for _, f in res.failures.iterrows():
            err.print(f"failed: {dict((k, v) for k, v in f.items() if k not in ('key',))}", highlight=False)
        sys.exit(1)


@study.command(
    epilog="""\b
Examples:
  cclab study s1 -o out/s1                 # the full S1 study (N = 1..20, 5 runs per point)
  cclab study s1 --quick -o out/s1-quick   # a reduced grid in seconds
  cclab study s1 --reps 10 --jobs 8
  sudo cclab study s1 --backend kernel --quick -o out/s1-kernel   # the grids on the real kernel
"""
)
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False), default="out/s1", show_default=True,
              help="Output directory (tables/, figures/, report.html, cache/).")
@click.option("--reps", type=click.IntRange(min=1), default=None, help="Runs per grid point (default 5; 1 with --quick).")
@click.option("--quick", is_flag=True, help="Reduced grid: N in 1, 3, 6; 30 s runs; ablation at N = 1 and 6; "
                                           "starts 0 and 2 s apart.")
@_parallel_options
@click.option("--backend", type=click.Choice(["sim", "kernel"]), default="sim", show_default=True,
              help="The simulator, or this machine's Linux kernel (root; real time, one run at a time; the "
                   "ablations stay with the simulator; each kernel run gets a simulator twin; --quick is 52 "
                   "runs of 30 s, about 30 minutes).")
def s1(out_dir: str, reps: int | None, quick: bool, jobs: int | None, executor: str, backend: str) -> None:
    """S1: N terminals on one 802.11g AP with the cooperative cwnd-clamping middleware. Total
    throughput vs N (Fig. 4), the middleware variants (Figs. 5, 11, 12), cwnd traces (Figs. 6-10),
    the paper's gains beside ours, and an ablation of the collapse with N."""
    from .study.s1 import S1Config, run_s1

    if backend == "kernel":
        _require_root()
    cfg = S1Config.make(quick=quick, reps=reps, jobs=jobs, executor=executor, backend=backend)
    res = _run_with_progress("s1", run_s1, out_dir, cfg)
    t = Table(title="S1: the paper vs cclab, improved vs off (fixed: 54 Mbit/s; +2s: terminals started 2 s apart)")
    ours = [c for c in res.compare.columns if c.startswith("cclab_")]
    for col in ("terminals", "N", "gain in", "paper", *(c[6:].replace("none", "fixed").replace("_stagger_", " +")
                                                        for c in ours)):
        t.add_column(col)
    for _, r in res.compare.iterrows():
        t.add_row(str(r["terminal"]), str(r["n_terminals"]), str(r["result"]).split()[0], f"{r['paper']:+.0%}",
                  *("n/a" if r[c] != r[c] else f"{r[c]:+.0%}" for c in ours))
    out.print(t)
    out.print(f"{len(res.runs) + len(res.failures)} runs in {res.wall_s:.1f} s ({len(res.failures)} failed); "
              f"report: {res.out_dir / 'report.html'}")
    if len(res.failures):
        for _, f in res.failures.iterrows():
            what = {k: f[k] for k in ("part", "terminal", "n_terminals", "variant", "ablation", "rep")
                    if k in f and f[k] == f[k]}
            err.print(f"failed: {what}: {f['error']}", highlight=False)
        sys.exit(1)


@study.command(
    epilog="""\b
Examples:
  cclab study s2 -o out/s2                 # the full S2 study (5 runs per point, 30 s each)
  cclab study s2 --quick -o out/s2-quick   # one run per point, 10 s each
  sudo cclab study s2 --backend kernel --quick -o out/s2-kernel   # with the kernel beside the simulator
  cclab run s2-three-apps --set host.tsq=fixed   # one run of the paper's setup
"""
)
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False), default="out/s2", show_default=True,
              help="Output directory (tables/, figures/, report.html, cache/).")
@click.option("--reps", type=click.IntRange(min=1), default=None, help="Runs per grid point (default 5; 1 with --quick).")
@click.option("--quick", is_flag=True, help="One run per point, 10 s runs.")
@click.option("--backend", type=click.Choice(["sim", "kernel"]), default="sim", show_default=True,
              help="kernel: also run what upstream Linux runs exactly (uncoupled CUBIC under Linux's TSQ, HyStart "
                   "on and off) on this machine's kernel beside the simulator's upstream MPTCP, paired repetitions "
                   "(5 of 30 s; of 10 s with --quick; root; real time, one run at a time).")
@_parallel_options
def s2(out_dir: str, reps: int | None, quick: bool, jobs: int | None, executor: str, backend: str) -> None:
    """S2: three Multipath TCP applications sharing the sender's interfaces. Per-application
    throughput per TSQ rule at loss 0 and 1e-5 (Figs. 2, 4), cwnd of every subflow (Fig. 3),
    LIA / OLIA / BALIA / uncoupled, and cclab's adaptive TSQ limit on three setups."""
    from .study.s2 import S2Config, run_s2

    if backend == "kernel":
        _require_root()
    cfg = S2Config.make(quick=quick, reps=reps, jobs=jobs, executor=executor, backend=backend)
    res = _run_with_progress("s2", run_s2, out_dir, cfg)
    if len(res.kernel):
        t = Table(title="S2: throughput once all run (Mbit/s), uncoupled CUBIC, Linux's TSQ")
        cols = ["loss", "hystart", "backend", "runs", "app1_mean", "app2_mean", "app3_mean", "steady_total_mean",
                "jain_mean"]
        for col in cols:
            t.add_column(col)
        for _, r in res.kernel.iterrows():
            t.add_row(*[str(r[c]) if isinstance(r[c], (str, bool)) else "n/a" if r[c] != r[c] else f"{r[c]:.3g}"
                        for c in cols])
        out.print(t)
    _print_outcome("S2", res, ("part", "setup", "cc", "tsq", "loss", "hystart", "backend", "rep"))


@study.command(
    epilog="""\b
Examples:
  cclab study s3 -o out/s3                 # the full S3 study (RTO sweep, detection, model)
  cclab study s3 --quick -o out/s3-quick   # a reduced grid in seconds
  sudo cclab study s3 --backend kernel --quick -o out/s3-kernel   # with the kernel parity part
  cclab run s3-walk-2MB --set flows[0].frto=false --set flows[0].rto_profile=proposed   # one run
"""
)
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False), default="out/s3", show_default=True,
              help="Output directory (tables/, figures/, report.html, cache/).")
@click.option("--reps", type=click.IntRange(min=1), default=None, help="Runs per point (default 3; 1 with --quick).")
@click.option("--quick", is_flag=True, help="Two RTO values, two mobility classes, two sizes, fewer connections.")
@_parallel_options
@click.option("--backend", type=click.Choice(["sim", "kernel"]), default="sim", show_default=True,
              help="kernel: also run the kernel parity part (D) on this machine's kernel (root; real time, one run at "
                   "a time); parts A-C stay on the simulator (their workloads are simulator-only).")
def s3(out_dir: str, reps: int | None, quick: bool, jobs: int | None, executor: str, backend: str) -> None:
    """S3: spurious retransmission timeouts on a 3G radio link. The STO share against the RTO
    (Fig. 2), F-RTO with the Eifel response against neither per mobility class and content size
    (Figs. 6-8), the analytic model against the simulation (Figs. 4-5), and the paper's results
    beside ours."""
    from .study.s3 import S3Config, run_s3

    if backend == "kernel":
        _require_root()
    cfg = S3Config.make(quick=quick, reps=reps, jobs=jobs, executor=executor, backend=backend)
    res = _run_with_progress("s3", run_s3, out_dir, cfg)
    _print_outcome("S3", res, ("part", "mobility", "rto_s", "size", "profile", "detection", "case", "rep"))


@study.command(
    epilog="""\b
Examples:
  cclab study s4 -o out/s4                 # the full S4 study (4 spacings, 2 environments, 3 runs per point)
  cclab study s4 --quick -o out/s4-quick   # 1 m, anechoic, one run per point, 20 s TCP runs
  sudo cclab study s4 --backend kernel --quick -o out/s4-kernel   # with the kernel beside the simulator
  cclab run s4-chain-3hop --set flows[0].cc=bbr2 --set media[0].spacing_m=0.5   # one run
"""
)
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False), default="out/s4", show_default=True,
              help="Output directory (tables/, figures/, report.html, cache/).")
@click.option("--reps", type=click.IntRange(min=1), default=None, help="TCP runs per point (default 3; 1 with --quick).")
@click.option("--quick", is_flag=True, help="1 m spacing, anechoic, 5 UDP rates, 20 s TCP runs.")
@_parallel_options
@click.option("--backend", type=click.Choice(["sim", "kernel"]), default="sim", show_default=True,
              help="kernel: also run the clean chain per hop count (CUBIC, BBR, UDP above capacity) on this machine's "
                   "kernel beside the simulator (root; real time, one run at a time).")
def s4(out_dir: str, reps: int | None, quick: bool, jobs: int | None, executor: str, backend: str) -> None:
    """S4: TCP over a multi-hop 802.11s mesh chain. The UDP sweep, CUBIC / BBR / BBRv2 per hop
    count, spacing and environment, lossy hops, the fits of goodput ~ n^-a and of Mathis's model,
    and the paper's results beside ours."""
    from .study.s4 import S4Config, run_s4

    if backend == "kernel":
        _require_root()
    cfg = S4Config.make(quick=quick, reps=reps, jobs=jobs, executor=executor, backend=backend)
    res = _run_with_progress("s4", run_s4, out_dir, cfg)
    if len(res.kernel):
        t = Table(title="S4: goodput (Mbit/s), simulator vs kernel")
        for col in ("hops", "cc", "simulator", "kernel", "kernel / sim"):
            t.add_column(col)
        for _, r in res.kernel.iterrows():
            t.add_row(str(r["hops"]), str(r["cc"]), f"{r['goodput_mbps_sim']:.2f}", f"{r['goodput_mbps_kernel']:.2f}",
                      f"{r['kernel_over_sim']:.3f}")
        out.print(t)
    _print_outcome("S4", res, ("part", "env", "spacing_m", "hops", "cc", "setting", "backend", "rep"))
