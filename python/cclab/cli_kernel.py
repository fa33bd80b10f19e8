"""``cclab kernel``: housekeeping of the real-kernel backend (namespaces, links)."""

from __future__ import annotations

import math
import sys

import click
from rich.console import Console

__all__ = ["kernel"]

out = Console()
err = Console(stderr=True)


@click.group(
    epilog="""\b
Examples:
  sudo cclab kernel clean        # remove cclab- namespaces left by a killed run
  cclab kernel monitor --dport 5201 --duration-s 30 -o flows.csv
"""
)
def kernel() -> None:
    """The real-kernel backend (network namespaces behind the cclab-link emulator)."""


@kernel.command(
    epilog="""\b
Examples:
  sudo cclab kernel clean
"""
)
def clean() -> None:
    """Remove every cclab- network namespace (killing what runs inside and destroying its TCP
    sockets), cgroup, run record and temporary directory left behind, kill orphaned cclab helper
    processes, restore tcp_cubic's module parameters and unregister cclab's BPF congestion
    controls if a killed run left them (needs root)."""
    from .kernel.bpfcc import unregister_all
    from .kernel.clamp import clean_cgroups
    from .kernel.knobs import restore_cubic_params
    from .kernel.netns import KernelUnavailable
    from .kernel.netns import clean as do_clean

    try:
        removed = do_clean()
    except KernelUnavailable as e:
        err.print(f"[bold red]error:[/] {e}", highlight=False)
        sys.exit(2)
    cgroups = clean_cgroups()
    restored = restore_cubic_params()
    unregistered = unregister_all()
    out.print(f"removed {len(removed)} namespace(s)" + (": " + ", ".join(removed) if removed else ""))
    out.print(f"removed {len(cgroups)} cgroup(s)" + (": " + ", ".join(cgroups) if cgroups else ""))
    if unregistered:
        out.print("unregistered BPF congestion controls: " + ", ".join(unregistered))
    if restored:
        out.print("restored tcp_cubic parameters: " + ", ".join(f"{k}={v}" for k, v in restored.items()))


@click.command(
    epilog="""\b
Examples:
  sudo cclab compare my.toml
  sudo cclab compare my.toml --set bottleneck.loss=1e-2
"""
)
@click.argument("scenario")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Override a scenario field; repeatable.")
def compare(scenario: str, sets: tuple[str, ...]) -> None:
    """Run SCENARIO on the simulator and on the kernel; print both side by side."""
    from rich.table import Table

    from .cli import parse_set
    from .kernel.backend import run_kernel
    from .kernel.netns import KernelUnavailable
    from .scenario import load_scenario
    from .sim import simulate

    sc = load_scenario(scenario, **parse_set(sets))
    try:
        k = run_kernel(sc)
    except KernelUnavailable as e:
        err.print(f"[bold red]error:[/] {e}", highlight=False)
        sys.exit(2)
    s = simulate(sc)
    t = Table(title=f"{sc.name}: simulator vs kernel ({sc.duration_s:g} s)")
    for col in ("flow", "metric", "simulator", "kernel"):
        t.add_column(col)
    for fs, fk in zip(s.summary["flows"], k.summary["flows"]):
        rows = [("goodput (Mbit/s)", fs["goodput_bps"] / 1e6, fk["goodput_bps"] / 1e6),
                ("retransmissions (pkts)", fs["retrans_pkts"], fk["retrans_pkts"]),
                ("RTOs", fs["rto_count"], fk["rto_count"])]
        # Spurious timeouts (S3): each backend's own count where it has one (None: not known).
        rows += [(label, fs.get(key), fk.get(key)) for label, key in (
            ("RTOs undone (undo_count)", "undo_count"), ("F-RTO spurious RTOs", "spurious_rto_count"),
            ("spurious RTOs, ground truth", "sto_count"), ("received twice (pkts)", "spurious_retrans_pkts"))
            if key in fs or key in fk]
        for name, res in (("sim", s), ("kernel", k)):
            w = res.flows[res.flows["flow"] == fs["flow"]]["cwnd_pkts"].astype(float)
            if name == "sim":
                cw_s = (w.mean(), w.median(), w.max())
            else:
                cw_k = (w.mean(), w.median(), w.max())
        rows += [("cwnd mean (pkts)", cw_s[0], cw_k[0]), ("cwnd median", cw_s[1], cw_k[1]), ("cwnd max", cw_s[2], cw_k[2])]
        for name, a, b in rows:
            t.add_row(fs["flow"], name, f"{a:.3f}" if isinstance(a, float) else str(a),
                      f"{b:.3f}" if isinstance(b, float) else str(b))
    out.print(t)


@kernel.command(
    name="monitor",
    epilog="""\b
Examples:
  cclab kernel monitor --dport 5201 --duration-s 30 -o flows.csv
  sudo cclab kernel monitor --netns cclab-123-ssender --interval-ms 1 --duration-s 5 -o f.parquet
""",
)
@click.option("--duration-s", type=click.FloatRange(min=0, min_open=True), required=True, help="How long to sample.")
@click.option("--interval-ms", type=click.FloatRange(min=0.1), default=10.0, show_default=True, help="Sampling period.")
@click.option("--sport", type=int, default=None, help="Only sockets with this local port.")
@click.option("--dport", type=int, default=None, help="Only sockets with this remote port.")
@click.option("--dst", default=None, help="Only sockets to this remote IPv4 address.")
@click.option("--netns", default=None, help="Enter this network namespace first (root).")
@click.option("-o", "--out", "out_path", type=click.Path(dir_okay=False), required=True,
              help="CSV or .parquet file in cclab's flows schema.")
def monitor_cmd(duration_s: float, interval_ms: float, sport: int | None, dport: int | None, dst: str | None,
                netns: str | None, out_path: str) -> None:
    """Sample TCP_INFO of established sockets of any process via sock_diag."""
    from .kernel.monitor import monitor

    try:
        df = monitor(duration_s, interval_ms, sport, dport, dst, netns)
    except (OSError, ValueError) as e:
        err.print(f"[bold red]error:[/] {e}", highlight=False)
        sys.exit(2)
    if out_path.endswith(".parquet"):
        df.to_parquet(out_path, index=False)
    else:
        df.to_csv(out_path, index=False)
    out.print(f"{len(df)} samples of {df['flow'].nunique() if len(df) else 0} socket(s) -> {out_path}")


@click.command(
    epilog="""\b
Examples:
  sudo cclab fidelity --quick                 # three 10 s cases, about a minute
  sudo cclab fidelity -o out/fidelity         # the whole grid (40 cases, about 30 min per seed)
  sudo cclab fidelity --case cubic-100ms-deep --case reno-10ms-loss1e-3 --seeds 3
  sudo cclab fidelity --kernel-cache out/kernel-runs   # keep kernel runs; a second call pairs
                                                       # only the simulator again
"""
)
@click.option("--quick", is_flag=True, help="Three short cases (the test suite's).")
@click.option("--case", "cases", multiple=True, metavar="NAME", help="Only these cases; repeatable.")
@click.option("--seeds", type=click.IntRange(min=1), default=1, show_default=True, help="Seeds 1..N per case.")
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False), default="out/fidelity", show_default=True,
              help="fidelity.csv/.parquet and fidelity_cwnd.png go here.")
@click.option("--kernel-cache", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Keep each kernel run here and reuse it when the same case, seed and kernel release come again.")
def fidelity(quick: bool, cases: tuple[str, ...], seeds: int, out_dir: str, kernel_cache: str | None) -> None:
    """The simulator against the kernel on a grid of paired scenarios (root): per case and flow,
    goodput, retransmissions, RTOs, the slow-start exit, mean cwnd, completion time and CUBIC's
    fit, each with its error and target (docs/design.md, "Fidelity")."""
    from pathlib import Path

    from rich.table import Table

    from .fidelity import TARGETS, grid, run_fidelity
    from .kernel.netns import KernelUnavailable, require_root

    chosen = grid(quick=quick)
    if cases:
        known = {c.name for c in grid()} | {c.name for c in grid(quick=True)}
        bad = [c for c in cases if c not in known]
        if bad:
            err.print(f"[bold red]error:[/] --case: {', '.join(bad)} is not a case: one of {', '.join(sorted(known))}")
            sys.exit(2)
        chosen = [c for c in grid() + grid(quick=True) if c.name in cases]
        chosen = list({c.name: c for c in chosen}.values())
    try:
        require_root()
    except KernelUnavailable as e:
        err.print(f"[bold red]error:[/] {e}", highlight=False)
        sys.exit(2)
    with err.status("") as status:
        table = run_fidelity(chosen, list(range(1, seeds + 1)), Path(out_dir),
                             progress=lambda what: status.update(f"fidelity: {what}"),
                             kernel_cache=Path(kernel_cache) if kernel_cache else None)
    t = Table(title=f"simulator vs kernel, paired ({len(chosen)} case(s) x {seeds} seed(s)); targets: "
                    + ", ".join(f"{k} {v:g}" for k, v in TARGETS.items()))
    for col in ("case", "seed", "flow", "metric", "simulator", "kernel", "error", "target"):
        t.add_column(col)
    for _, r in table.iterrows():
        met = r["target_met"]
        mark = "" if met is None or (isinstance(met, float) and math.isnan(met)) else ("[green]met" if met else "[red]missed")
        t.add_row(r["case"], str(r["seed"]), str(r["flow"]), r["metric"], f"{r['simulator']:.4g}", f"{r['kernel']:.4g}",
                  f"{r['error']:+.3f}" if r["error"] == r["error"] else "", mark)
    out.print(t)
    if "timing_suspect" in table:
        late = table[table["timing_suspect"] == True].drop_duplicates(["case", "seed"])  # noqa: E712
        for _, r in late.iterrows():
            err.print(f"[yellow]{r['case']} seed {r['seed']}: the link emulator ran late (p99 "
                      f"{r['emu_late_p99_us']:.0f} us, max {r['emu_late_max_us']:.0f} us; load "
                      f"{r['host_load_1min']:.1f}): the kernel's slow-start exit and what follows may be "
                      "the machine's, not the kernel's; rerun on a quiet machine[/]", highlight=False)
    failed = table[table["metric"] == "error"]
    for _, r in failed.iterrows():
        err.print(f"[bold red]{r['case']} seed {r['seed']} failed:[/] {r.get('message', '')}", highlight=False)
    out.print(f"-> {out_dir}/fidelity.csv, {out_dir}/fidelity_cwnd.png")
