"""``cclab infer``: which algorithm a trace shows, and CUBIC's parameters."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

__all__ = ["infer"]

out = Console()
err = Console(stderr=True)


def _trace_options(f: Any) -> Any:
    f = click.option("--flow", default=None, help="Flow name or index in a multi-flow cclab trace.")(f)
    f = click.option("--cwnd-col", default=None, help="CSV column with cwnd in packets.")(f)
    f = click.option("--time-col", default=None, help="CSV column with time in seconds.")(f)
    f = click.option(
        "--fmt",
        type=click.Choice(["cclab", "tcpinfo", "csv", "ss", "pcap"]),
        default=None,
        help="Input format (default: from the suffix and columns).",
    )(f)
    return click.argument("trace", type=click.Path(exists=True, dir_okay=False))(f)


def _load(trace: str, fmt: str | None, time_col: str | None, cwnd_col: str | None, flow: str | None) -> Any:
    from .infer import InputError, load_trace

    fl: str | int | None = int(flow) if flow is not None and flow.isdigit() else flow
    try:
        df = load_trace(trace, fmt=fmt, time_col=time_col, cwnd_col=cwnd_col, flow=fl)
    except InputError as e:
        err.print(f"[bold red]error:[/] {e}", highlight=False)
        sys.exit(2)
    flows = df.attrs.get("flows", [])
    if len(flows) > 1 and flow is None:
        err.print(f"judging flow {df.attrs.get('flow')!r}, the first of {len(flows)} ({', '.join(flows)}); "
                  "pick another with --flow", highlight=False)
    if df.attrs.get("dropped_rows"):
        err.print(f"left out {df.attrs['dropped_rows']} row(s) whose time or cwnd is not a finite number", highlight=False)
    return df


@click.group(
    epilog="""\b
Examples:
  cclab infer cubic out/s0-25ms/traces.parquet
  cclab infer cubic tcpinfo.csv --json
  cclab infer algo shared/data/kernel-traces/bbr_20M_200ms_q500.csv
  cclab infer cubic trace.csv --time-col time --cwnd-col cwnd
  cclab infer plot trace.parquet -o figs/
"""
)
def infer() -> None:
    """Infer the congestion control of a trace, and CUBIC's c, beta, b and K.

    Inputs: cclab traces (parquet), TCP_INFO CSVs, CSV with time and cwnd columns, logs of
    repeated `ss -tin`, and sender-side pcap/pcapng captures (see docs/inference.md for what
    each can reveal).
    """


@infer.command(
    epilog="""\b
Examples:
  cclab infer cubic out/s0-550ms/traces.parquet --table cycles.csv --plot fit.png
  cclab infer cubic tcpinfo.csv --json
"""
)
@_trace_options
@click.option("--max-cycles", type=int, default=None, help="Use the first N usable cycles (the paper used 3).")
@click.option("--table", "table_path", type=click.Path(dir_okay=False), default=None, help="Write the per-cycle table (CSV).")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None, help="Write measured vs fitted curves (PNG).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def cubic(trace: str, fmt: str | None, time_col: str | None, cwnd_col: str | None, flow: str | None,
          max_cycles: int | None, table_path: str | None, plot_path: str | None, as_json: bool) -> None:
    """Estimate CUBIC's c, beta, b (eq. 5), K and W_max per loss cycle (S0 method C)."""
    from .infer import estimate_cubic, plot_cubic_fit

    df = _load(trace, fmt, time_col, cwnd_col, flow)
    est = estimate_cubic(df, max_cycles=max_cycles)
    if table_path:
        est.cycles.to_csv(table_path, index=False)
    if plot_path:
        plot_cubic_fit(est, df, plot_path)
    if as_json:
        print(json.dumps(est.to_dict(), default=float))
        return
    t = Table(title=f"CUBIC parameters of {trace}")
    for col in ("parameter", "estimate", "95 % CI"):
        t.add_column(col)
    for name in ("c", "beta", "b", "K_s", "wmax_pkts") if est.reliable else ("beta",):
        e = getattr(est, name)
        t.add_row(name, f"{e.value:.4g}", f"[{e.ci_low:.4g}, {e.ci_high:.4g}]")
    out.print(t)
    out.print(est.note)


@infer.command(
    epilog="""\b
Examples:
  cclab infer algo shared/data/kernel-traces/reno_20M_200ms_q500.csv
  cclab infer algo trace.parquet --json
  cclab infer algo tcpinfo.csv --candidates reno,cubic,bbr     # what a stock Linux offers
"""
)
@_trace_options
@click.option("--candidates", default=None, help="Comma-separated algorithms the answer may be (default: all).")
@click.option("--prior", type=click.Choice(["deployment", "uniform"]), default="deployment", show_default=True,
              help="deployment: where traces of two algorithms look the same, prefer Reno, CUBIC or BBR.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def algo(trace: str, fmt: str | None, time_col: str | None, cwnd_col: str | None, flow: str | None,
         candidates: str | None, prior: str, as_json: bool) -> None:
    """Name the congestion control behind a trace, with a confidence and the runner-up."""
    from .infer import identify

    cands = [c.strip() for c in candidates.split(",")] if candidates else None
    try:
        ident = identify(_load(trace, fmt, time_col, cwnd_col, flow), candidates=cands, prior=prior)
    except ValueError as e:
        err.print(f"[bold red]error:[/] {e}", highlight=False)
        sys.exit(2)
    if as_json:
        print(json.dumps(ident.to_dict()))
        return
    out.print(f"[bold]{ident.algorithm}[/] (confidence {ident.confidence:.2f}; runner-up {ident.runner_up})")
    top = list(ident.scores.items())[:5]
    out.print("votes: " + ", ".join(f"{k} {v:.2f}" for k, v in top))


@infer.command(
    epilog="""\b
Examples:
  cclab infer plot out/s0-550ms/traces.parquet -o figs/
"""
)
@_trace_options
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False), default=".", help="Directory for the PNGs.")
def plot(trace: str, fmt: str | None, time_col: str | None, cwnd_col: str | None, flow: str | None, out_dir: str) -> None:
    """Draw the Kato et al. (cwnd, dcwnd) scatter and the CUBIC fit of a trace."""
    from .infer import estimate_cubic, plot_cubic_fit, plot_kato

    df = _load(trace, fmt, time_col, cwnd_col, flow)
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    a = plot_kato(df, d / "kato.png", label=Path(trace).name)
    b = plot_cubic_fit(estimate_cubic(df), df, d / "cubic_fit.png")
    out.print(f"wrote {a} and {b}")


@infer.command(
    epilog="""\b
Examples:
  cclab infer train                 # rewrite the shipped model: 3240 simulations, ~7 min on 2 cores
  cclab infer train --per-algorithm 8 --model /tmp/features.csv
"""
)
@click.option("--per-algorithm", type=int, default=None, help="Training paths per algorithm (default: all 180).")
@click.option("-j", "--jobs", type=int, default=2, show_default=True, help="Parallel simulations.")
@click.option("--model", "model", type=click.Path(dir_okay=False), default=None, help="Where to write the feature table.")
def train(per_algorithm: int | None, jobs: int, model: str | None) -> None:
    """Simulate the training grid for every algorithm and store the classifier's feature table."""
    from .infer import classify

    path = Path(model) if model else classify.MODEL_PATH
    with Progress(TextColumn("[bold]training"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), console=err) as bar:
        task = bar.add_task("train", total=None)
        df = classify.train(path, per_algorithm, jobs, progress=lambda i, n: bar.update(task, completed=i, total=n))
    out.print(f"wrote {len(df)} training traces to {path}")


@infer.command(
    name="eval",
    epilog="""\b
Examples:
  cclab infer eval -o out/infer-eval          # the whole held-out grid, every algorithm
  cclab infer eval --algorithms reno,cubic,bbr --candidates reno,cubic,bbr
  cclab infer eval --prior uniform            # no preference for the default-deployed algorithms
""",
)
@click.option("--n", "n", type=int, default=None, help="Use a fixed sample of N held-out paths (default: all 48).")
@click.option("--algorithms", default=None, help="Comma-separated algorithms (default: all).")
@click.option("--candidates", default=None, help="Comma-separated algorithms the answers may be (default: all).")
@click.option("--prior", type=click.Choice(["deployment", "uniform"]), default="deployment", show_default=True,
              help="deployment: where traces of two algorithms look the same, prefer Reno, CUBIC or BBR.")
@click.option("-j", "--jobs", type=int, default=2, show_default=True, help="Parallel simulations.")
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False), default=None, help="Write results.csv and confusion.csv here.")
def eval_(n: int | None, algorithms: str | None, candidates: str | None, prior: str, jobs: int, out_dir: str | None) -> None:
    """Classify simulated traces of the held-out grid and print the confusion matrix."""
    from .infer import classify

    algos = [a.strip() for a in algorithms.split(",")] if algorithms else None
    with Progress(TextColumn("[bold]evaluating"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), console=err) as bar:
        task = bar.add_task("eval", total=None)
        res, cm = classify.evaluate(classify.evaluation_conditions(n), algos, jobs,
                                    progress=lambda i, k: bar.update(task, completed=i, total=k),
                                    candidates=[c.strip() for c in candidates.split(",")] if candidates else None,
                                    prior=prior)
    acc = float((res["true"] == res["guess"]).mean())
    t = Table(title=f"Per algorithm (accuracy {acc:.1%} over {len(res)} traces; prior {prior})")
    for c in ("true", "traces", "named right", "most confused with"):
        t.add_column(c)
    for _, r in classify.per_class(res).iterrows():
        t.add_row(r["true"], str(r["traces"]), f"{r['correct']:.0%}", r["most_confused_with"])
    out.print(t)
    out.print("confusion matrix (rows: truth):")
    import pandas as pd

    with pd.option_context("display.width", 400, "display.max_columns", None):
        click.echo(cm.to_string())
    if out_dir:
        d = Path(out_dir)
        d.mkdir(parents=True, exist_ok=True)
        res.to_csv(d / "results.csv", index=False)
        cm.to_csv(d / "confusion.csv")
