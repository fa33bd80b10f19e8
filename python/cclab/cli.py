"""The ``cclab`` command line."""

from __future__ import annotations

import sys
import time
import tomllib
from pathlib import Path
from typing import Any, NoReturn

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from ._errors import RunStopped, ScenarioError

__all__ = ["main", "cli", "parse_set", "parse_value"]

out = Console()
err = Console(stderr=True)


def _user_error(msg: str) -> NoReturn:
    err.print(f"[bold red]error:[/] {msg}", highlight=False, markup=True, soft_wrap=True)
    sys.exit(2)


def parse_set(items: tuple[str, ...]) -> dict[str, Any]:
    """The ``--set KEY=VALUE`` options of a command as scenario overrides.

    Each item is split at its first ``=``; the key (a dotted field path such as
    ``bottleneck.loss``, whitespace stripped) maps to the value read as a TOML value when it
    parses (``1e-3`` -> float, ``true`` -> bool, ``[1, 2]`` -> list) and as the raw string
    otherwise. A later item overrides an earlier one with the same key. The result is meant for
    ``load_scenario(name, **overrides)``. An item without ``=`` is a usage error: it is
    reported on stderr and the process exits with code 2, like every CLI usage error.
    Shared by ``cclab run`` (cli.py) and ``cclab compare`` (cli_kernel.py).
    """
    res: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            _user_error(f"--set {item!r}: expected KEY=VALUE, e.g. --set bottleneck.loss=1e-3")
        key, raw = item.split("=", 1)
        res[key.strip()] = parse_value(raw)
    return res


def parse_value(raw: str) -> Any:
    """A command-line value as ``--set`` and ``--grid`` read it: TOML when it parses (``1e-3``,
    ``true``, ``[1, 2]``, ``"x"``), else the raw string (``10Mbps``)."""
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


class _DelayedProgress:
    """A rich progress bar that appears only when a run takes longer than a second."""

    def __init__(self, label: str, enabled: bool) -> None:
        self.label, self.enabled = label, enabled
        self.t0 = time.monotonic()
        self.bar: Progress | None = None
        self.task: Any = None

    def __call__(self, frac: float) -> None:
        if not self.enabled:
            return
        if self.bar is None:
            if time.monotonic() - self.t0 < 1.0:
                return
            self.bar = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                TextColumn("{task.percentage:>3.0f}%"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=err,
                transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task(self.label, total=1.0)
        self.bar.update(self.task, completed=frac)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="""\b
Examples:
  cclab run s0-25ms -o out/s0-25ms
  cclab run scenarios/s0-100ms.toml --set bottleneck.loss=1e-3 --seed 2
  cclab validate my.toml
  cclab presets
  cclab study s0 -o out/s0
  cclab infer cubic out/s0-25ms/traces.parquet
""",
)
@click.version_option(package_name="cclab")
def cli() -> None:
    """cclab: TCP congestion control on a Linux-faithful simulator.

    One scenario file describes links and flows; cclab runs it and writes traces
    (Parquet), a summary (JSON) and figures (PNG).
    """


@cli.command(
    epilog="""\b
Examples:
  cclab run s0-25ms -o out/s0-25ms
  cclab run scenarios/s0-550ms.toml --seed 3 -o out/550
  cclab run s0-100ms --set bottleneck.loss=1e-3 --set flows[0].cc=reno
  sudo cclab run my.toml --backend kernel      # the real Linux kernel behind cclab-link
"""
)
@click.argument("scenario")
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Directory for traces.parquet, summary.json, cwnd.png (default: out/<name>).")
@click.option("--seed", type=int, default=None, help="Seed of every random stream (default: the scenario's).")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Override a scenario field by its dotted path; repeatable.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar, no table.")
@click.option("--backend", type=click.Choice(["sim", "kernel"]), default="sim", show_default=True,
              help="sim: the simulator; kernel: this machine's Linux TCP in namespaces (root).")
def run(scenario: str, out_dir: str | None, seed: int | None, sets: tuple[str, ...], quiet: bool, backend: str) -> None:
    """Run SCENARIO (a .toml file or a shipped name) on the simulator or the kernel."""
    worker = None
    if backend == "sim" and _figure_worker_enabled:
        # Imports matplotlib while this process simulates (cclab/figure_worker.py).
        from .figure_worker import FigureWorker

        worker = FigureWorker.start()
    try:
        from .scenario import load_scenario
        from .sim import simulate

        overrides = parse_set(sets)
        if seed is not None:
            overrides["seed"] = seed
        try:
            sc = load_scenario(scenario, **overrides)
        except ScenarioError as e:
            _user_error(str(e))
        if backend == "kernel":
            from .kernel.backend import run_kernel
            from .kernel.netns import KernelUnavailable

            try:
                res = run_kernel(sc)
            except KernelUnavailable as e:
                _user_error(str(e))
        else:
            progress = _DelayedProgress(f"simulating {sc.name}", enabled=not quiet)
            try:
                res = simulate(sc, progress=progress)
            finally:
                progress.close()
        target = Path(out_dir) if out_dir else Path("out") / sc.name
        if worker is not None:
            worker.send(res, target)  # the worker draws while this process writes the tables
        paths = res.write(target, figures=worker is None)
        if worker is not None:
            drawn = worker.wait()
            paths.update(drawn if drawn is not None else res.write_figures(target))
    finally:
        if worker is not None:
            worker.cancel()
    # Where the kernel ran something close to, not exactly, the scenario (also in summary.json).
    for dev in res.summary.get("deviations", []):
        err.print(f"[yellow]warning:[/] kernel backend: {dev}", markup=True, highlight=False, soft_wrap=True)
    global _exit_now
    _exit_now = backend == "sim"  # every file is written and closed; no thread runs on
    if quiet:
        return
    t = Table(title=f"{sc.name} (seed {sc.seed}, {sc.duration_s:g} s, {backend})")
    for col in ("flow", "cc", "goodput (Mbps)", "retrans (pkts)", "RTOs", "fast rexmits"):
        t.add_column(col, justify="right" if col != "flow" else "left")
    for f, st in zip(sc.flows, res.summary["flows"]):
        t.add_row(str(f.name), "udp" if f.transport == "udp" else f.cc, f"{st['goodput_bps'] / 1e6:.3f}",
                  str(st["retrans_pkts"]), str(st["rto_count"]), str(st["fast_retransmit_count"]))
    out.print(t)
    for f, st in zip(sc.flows, res.summary["flows"]):
        if st.get("rto_count") and "sto_count" in st:
            # Spurious timeouts by ground truth (docs/scenario.md, "Retransmission timeouts").
            out.print(f"{f.name}: {st['rto_count']} RTOs, {st['sto_count']} spurious ({st['sto_detected']} detected), "
                      f"{st['spurious_retrans_pkts']} unneeded retransmissions")
        for sf in st.get("subflows", []):
            out.print(f"{f.name} subflow {sf['subflow']} ({'>'.join(sf['path'])}): "
                      f"{sf['goodput_bps'] / 1e6:.3f} Mbit/s, retrans {sf['retrans_pkts']} pkts, "
                      f"RTOs {sf.get('rto_count', 0)}, reinjected {sf.get('reinjected_pkts', 0)} pkts")
        if "connections" in st:
            out.print(workload_line(str(f.name), st["connections"]))
        if "udp" in st:
            u = st["udp"]
            owd = "" if u["owd_p50_ms"] is None else f", one-way delay p50 {u['owd_p50_ms']:.1f} ms, p99 {u['owd_p99_ms']:.1f} ms"
            out.print(f"{f.name} (udp): sent {u['send_rate_bps'] / 1e6:.3f} Mbit/s, received "
                      f"{u['receive_rate_bps'] / 1e6:.3f} Mbit/s, loss {100 * u['loss']:.2f} %{owd}")
    for line in mac_lines(res.summary):
        out.print(line, soft_wrap=True)
    run_info = res.summary["run"]
    done = (f"{run_info['events_processed']:,} events in " if "events_processed" in run_info else "ran in ")
    out.print(f"{done}{run_info['wall_time_s']:.2f} s; wrote {', '.join(p.name for p in paths.values())} to {target}/")


def workload_line(name: str, conns: list[dict[str, Any]]) -> str:
    """A workload's connections in one line: how many completed, their transfer times and RTOs."""
    times = sorted(c["transfer_time_s"] for c in conns if c["transfer_time_s"] is not None)
    med = f", transfer time median {times[len(times) // 2]:.2f} s, max {times[-1]:.2f} s" if times else ""
    rtos = sum(c["rto_count"] for c in conns)
    with_rto = sum(1 for c in conns if c["rto_count"])
    return (f"{name}: {len(times)} of {len(conns)} connections completed{med}; {rtos} RTOs in "
            f"{with_rto} connections")


def mac_lines(summary: dict[str, Any]) -> list[str]:
    """One line per station of a medium with a MAC (a DCF cell's port, a mesh node) that sent
    something: attempts, collisions, retry drops and the residual loss MAC retries leave."""
    from .study.sweep import link_lanes

    lines, idle = [], 0
    for lane in link_lanes(summary):
        m = lane.get("mac")
        if not m:
            continue
        if not m["attempts"]:
            idle += 1
            continue
        hidden = f", {m['hidden_collisions']} hidden" if "hidden_collisions" in m else ""
        residual = "" if m["residual_loss"] is None else f", residual loss {m['residual_loss']:.4f}"
        lines.append(f"{lane['link']} ({m['kind']}): {m['attempts']} attempts, {m['collisions']} collisions "
                     f"(p {m['collision_prob']:.3f}{hidden}), {m['retry_drops']} retry drops{residual}")
    if idle:
        lines.append(f"({idle} station(s) sent nothing)")
    return lines


@cli.command(
    epilog="""\b
Examples:
  cclab validate scenarios/s0-25ms.toml
  cclab validate my.toml other.toml
"""
)
@click.argument("files", nargs=-1, required=True)
def validate(files: tuple[str, ...]) -> None:
    """Check scenario FILES; name every bad field (exit code 2 if any is bad)."""
    from .scenario import load_scenario

    bad = False
    for f in files:
        try:
            load_scenario(f)
            out.print(f"{f}: ok")
        except ScenarioError as e:
            bad = True
            err.print(f"{f}:", highlight=False)
            for path, msg in e.problems:
                err.print(f"  {path}: {msg}", highlight=False, markup=False)
    if bad:
        sys.exit(2)


@cli.command(
    epilog="""\b
Examples:
  cclab presets
"""
)
def presets() -> None:
    """List shipped scenarios and congestion-control algorithms and presets."""
    from . import presets as p

    t = Table(title="Shipped scenarios (cclab run NAME)")
    t.add_column("name")
    t.add_column("description")
    for s in p.scenarios():
        t.add_row(s["name"], s["description"])
    out.print(t)
    a = Table(title="Congestion control (cc = NAME; tunables in cc_params)")
    for col in ("name", "description", "source", "tunables (default)"):
        a.add_column(col)
    for algo in p.algorithms():
        params = ", ".join(f"{q['name']}={q['default']}" for q in algo["params"])
        if algo["preset_params"]:
            params = "preset of " + algo["base"] + ": " + ", ".join(f"{k}={v}" for k, v in algo["preset_params"].items())
        a.add_row(algo["name"], algo["description"], algo["source"], params)
    out.print(a)
    from .flow_profiles import listing

    fp = Table(title="Flow profiles (flows[].rto_profile = NAME, flows[].profile = NAME)")
    for col in ("field", "name", "sets", "what"):
        fp.add_column(col)
    for prof in listing():
        fp.add_row(prof["field"], prof["name"], ", ".join(f"{k}={v}" for k, v in prof["sets"].items()), prof["about"])
    out.print(fp)


from .cli_infer import infer as _infer  # noqa: E402
from .cli_kernel import compare as _compare  # noqa: E402
from .cli_kernel import fidelity as _fidelity  # noqa: E402
from .cli_kernel import kernel as _kernel  # noqa: E402
from .cli_study import study as _study  # noqa: E402
from .cli_sweep import sweep as _sweep  # noqa: E402

cli.add_command(_infer)
cli.add_command(_study)
cli.add_command(_sweep)
cli.add_command(_kernel)
cli.add_command(_compare)
cli.add_command(_fidelity)


#: Whether ``cclab run`` draws its figures in a forked process (cclab/figure_worker.py): only
#: in the ``cclab`` process itself (``main``), never inside a host program such as a test runner.
_figure_worker_enabled = False
#: Set by ``cclab run`` on the simulator once its files are written: ``main`` then ends the
#: process without the interpreter's teardown of every module it imported (about 0.1 s of the
#: command: pydantic, numpy, pyarrow).
_exit_now = False


def _exit_without_teardown() -> NoReturn:
    """Exit 0 now: run the atexit handlers, flush stdout and stderr, then ``os._exit``."""
    import atexit
    import os

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`cclab run ... | head -1`) or stream
            pass
    os._exit(0)


def main() -> None:
    """Entry point: user errors exit 2 with a message, internal errors exit 1."""
    global _figure_worker_enabled
    _figure_worker_enabled = True
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        err.print("interrupted")
        sys.exit(130)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
    except RunStopped as e:  # SIGTERM or SIGHUP during a kernel run, torn down
        err.print(str(e))
        sys.exit(128 + e.signum)
    except click.ClickException as e:
        e.show()
        sys.exit(2)
    except ScenarioError as e:
        _user_error(str(e))
    except SystemExit:
        raise
    except Exception as e:  # noqa: BLE001 - last resort: never a traceback for users
        err.print(f"[bold red]internal error:[/] {type(e).__name__}: {e}\nPlease report this with the scenario file.")
        sys.exit(1)
    if _exit_now:
        _exit_without_teardown()
