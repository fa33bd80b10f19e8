"""``cclab sweep``: a grid of one scenario's fields x repetitions, from the command line, over
``cclab.study.grid`` / ``run_sweep`` / ``aggregate``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

__all__ = ["sweep", "parse_grid"]

out = Console()
err = Console(stderr=True)

#: Metrics shown in the table when --metrics is not given (those present in the runs).
DEFAULT_METRICS = ("goodput_bps", "retrans_pkts", "rto_count", "jain_index", "udp_loss", "udp_owd_p50_ms")


def parse_grid(items: tuple[str, ...]) -> dict[str, list[Any]]:
    """``--grid KEY=V1,V2,...`` options as grid axes (a later option for the same key replaces
    an earlier one). Raises click.BadParameter naming the option."""
    from .cli import parse_value

    axes: dict[str, list[Any]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip() or not raw.strip():
            raise click.BadParameter(f"{item!r}: expected KEY=V1,V2,..., e.g. bottleneck.loss=1e-4,1e-3",
                                     param_hint="--grid")
        values = [parse_value(v.strip()) for v in raw.split(",") if v.strip()]
        axes[key.strip()] = values
    return axes


def _scale(metric: str) -> tuple[float, str]:
    """How a metric is shown: rates in Mbit/s (the column says so), the rest as they are."""
    return (1e-6, f"{metric[:-4]} (Mbit/s)") if metric.endswith("_bps") else (1.0, metric)


def _fmt(mean: float, lo: float, hi: float, scale: float) -> str:
    if mean != mean:  # NaN
        return "-"
    text = f"{mean * scale:.3g}"
    if lo == lo and hi == hi:
        text += f" [{lo * scale:.3g}, {hi * scale:.3g}]"
    return text


@click.command(
    epilog="""\b
Examples:
  cclab sweep s0-25ms --grid bottleneck.loss=1e-4,1e-3 --reps 10
  cclab sweep s0-100ms --grid flows[0].cc=cubic,cubic-ios --grid bottleneck.loss=1e-4,1e-3,1e-2 \\
      --set duration_s=60 --reps 5 -o out/sweep-loss
  cclab sweep my.toml --grid flows[1].rate_bps=1Mbps,5Mbps,10Mbps --metrics udp_loss,flow0_goodput_bps

Writes runs.csv/.parquet (one row per run: the grid point, seed, ok, error and the metrics),
summary.csv/.parquet (per grid point: n, n_failed and per metric mean, std and a Student-t
95 % interval) and a run cache (cache/: a rerun reads finished runs back, so a sweep stopped
half-way resumes) in the output directory. Exit code 1 when a run failed (the others finish and
are kept).
"""
)
@click.argument("scenario")
@click.option("--grid", "grid_items", multiple=True, metavar="KEY=V1,V2,...", required=True,
              help="A scenario field (dotted path, as --set) and its values; repeat for more axes.")
@click.option("--reps", type=click.IntRange(1), default=1, show_default=True, help="Repetitions per grid point.")
@click.option("--seed", "base_seed", type=click.IntRange(0), default=1, show_default=True,
              help="Base seed: repetition r runs with a seed derived from it and r.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Fix a field for every run; repeatable.")
@click.option("--metrics", default=None, help="Comma-separated metrics for the table (default: the main ones present).")
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Output directory [default: out/sweep-<scenario>].")
@click.option("--jobs", type=click.IntRange(1), default=None, help="Parallel runs [default: every core].")
@click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True)
@click.option("--backend", type=click.Choice(["sim", "kernel"]), default="sim", show_default=True,
              help="kernel: one run at a time on this machine's Linux (root).")
def sweep(scenario: str, grid_items: tuple[str, ...], reps: int, base_seed: int, sets: tuple[str, ...],
          metrics: str | None, out_dir: str | None, jobs: int | None, executor: str, backend: str) -> None:
    """Run SCENARIO over a grid of field values x repetitions and summarise each point."""
    from ._errors import ScenarioError
    from .cli import parse_set
    from .scenario import load_scenario
    from .study import aggregate, grid, run_sweep, write_table

    axes = parse_grid(grid_items)
    fixed = parse_set(sets)
    try:  # every grid point must make a valid scenario: say which does not before running any
        for key, values in axes.items():
            for v in values:
                load_scenario(scenario, **{**fixed, key: v})
    except ScenarioError as e:
        err.print(f"[bold red]error:[/] {e}", highlight=False)
        sys.exit(2)
    if backend == "kernel":
        from .cli_study import _require_root

        _require_root()
    specs = grid(scenario, axes, reps=reps, base_seed=base_seed, fixed=fixed, backend=backend)
    name = Path(scenario).stem
    target = Path(out_dir) if out_dir else Path("out") / f"sweep-{name}"
    with Progress(TextColumn(f"[bold]sweep {name}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TimeRemainingColumn(), console=err, transient=True) as bar:
        task = bar.add_task("runs", total=len(specs))
        res = run_sweep(specs, cache_dir=target / "cache", jobs=jobs, executor=executor,
                        progress=lambda i, n: bar.update(task, completed=i, total=n))
    runs = res.runs
    by = list(axes)
    present = [c for c in runs.columns if runs[c].dtype.kind in "fiu" and c not in (*by, "seed", "rep", "run_s")]
    wanted = [m.strip() for m in metrics.split(",")] if metrics else [m for m in DEFAULT_METRICS if m in present]
    unknown = [m for m in wanted if m not in present]
    if unknown:
        err.print(f"[bold red]error:[/] --metrics: {', '.join(unknown)} not in the runs; they have: {', '.join(present)}")
        sys.exit(2)
    summary = aggregate(runs, by, present)
    write_table(runs.drop(columns=["cached"], errors="ignore"), target / "runs")
    write_table(summary, target / "summary")
    t = Table(title=f"{name}: {len(specs)} runs, mean [95 % interval]")
    for col in (*by, "n", *(_scale(m)[1] for m in wanted)):
        t.add_column(col, justify="right")
    for _, row in summary.iterrows():
        t.add_row(*(str(row[c]) for c in by), str(row["n"]),
                  *(_fmt(row[f"{m}_mean"], row[f"{m}_ci95_low"], row[f"{m}_ci95_high"], _scale(m)[0])
                    for m in wanted))
    out.print(t)
    failed = runs[~runs["ok"].astype(bool)]
    cached = int(runs["cached"].sum()) if "cached" in runs else 0
    out.print(f"{len(runs)} runs ({cached} from the cache) in {res.wall_s:.2f} s; wrote runs and summary "
              f"(.csv, .parquet) to {target}/")
    if len(failed):
        err.print(f"[bold red]{len(failed)} run(s) failed:[/]")
        for _, r in failed.head(10).iterrows():
            err.print(f"  {dict((k, r[k]) for k in (*by, 'seed'))}: {r['error']}", highlight=False)
        sys.exit(1)
