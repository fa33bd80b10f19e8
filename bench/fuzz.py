"""Fuzz the scenario loader, the simulator and the inference importers at scale (issue 18, part 2).

    PYTHONPATH=python python3 bench/fuzz.py                 # 10^5 cases (about 2/3 scenarios)
    PYTHONPATH=python python3 bench/fuzz.py --cases 10000 --seed 7
    PYTHONPATH=python python3 bench/fuzz.py --rerun out/fuzz-findings/dict-crash-1

The same strategies and judges as python/tests/test_fuzz_*.py (python/tests/fuzzing.py), run
unseeded for many more cases. Every simulated case runs with a wall-time budget of --limit-s
seconds (`sim.max_wall_s`, the core's budget): a case that reaches it stops with an error naming
the field and is counted as "budget", a good outcome. A hang is a case that ignores its budget:
still busy at twice --limit-s plus 5 s (in the core, or in Python around it), or silent for
--hang-s seconds (the watcher then restarts the worker; also when a case kills it).
Prints counts per target and outcome: ok, error (a clear error naming its field), budget, and
the findings: traceback, panic, hang, crash, no-field (an error naming no field),
accepted-not-run; then one example of each finding. Exit status 1 if there is any finding.

Files. Everything a run makes goes in one directory, $TMPDIR/cclab-fuzz-run-<pid>-*, removed
when the run ends, however it ends (done, a finding, Ctrl-C, SIGTERM, SIGHUP; after a SIGKILL,
by the next run). Kept: the --log file if given, and for each worker that crashed (SIGSEGV...)
or hung, a directory in --findings (default out/fuzz-findings, made only then; "" keeps none)
with the case that was running (case.pickle, meta.json) and the stacks Python's faulthandler
wrote (faulthandler.txt); the report names it and the command that reruns the case (--rerun).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pickle
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import fuzz_worker as fw  # noqa: E402

#: Share of the cases per target.
TARGETS = {"dict": 0.5, "toml": 0.15, "csv": 0.15, "ss": 0.05, "pcap": 0.15}

#: Name prefix of a run's directory in $TMPDIR.
RUN_PREFIX = "cclab-fuzz-run-"


def fz_good() -> tuple[str, ...]:
    """The outcomes that are not findings (python/tests/fuzzing.py GOOD)."""
    return fw._fz().GOOD


def make_run_dir() -> tuple[Path, IO[str]]:
    """This run's directory, locked while the run lives; first removes those of runs that ended
    without removing theirs (killed: nobody holds their lock)."""
    for old in Path(tempfile.gettempdir()).glob(f"{RUN_PREFIX}*"):
        try:
            with open(old / ".lock") as f:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                shutil.rmtree(old, ignore_errors=True)
        except (BlockingIOError, FileNotFoundError, NotADirectoryError):
            continue
    root = Path(tempfile.mkdtemp(prefix=f"{RUN_PREFIX}{os.getpid()}-"))
    lock = open(root / ".lock", "w")  # noqa: SIM115 - held for the run's life
    fcntl.flock(lock, fcntl.LOCK_EX)
    return root, lock


def keep(wdir: Path, findings: Path | None, name: str) -> Path | None:
    """Copy a dead or hung worker's case and stacks into ``findings/name`` (None: nowhere)."""
    if findings is None or not (wdir / "case.pickle").is_file():
        return None
    dest = findings / name
    n = 1
    while dest.exists():
        n += 1
        dest = findings / f"{name}.{n}"
    dest.mkdir(parents=True)
    for f in ("meta.json", "case.pickle", "faulthandler.txt"):
        if (wdir / f).is_file():
            shutil.copy2(wdir / f, dest / f)
    (dest / "case.txt").write_text(repr(pickle.loads((dest / "case.pickle").read_bytes())) + "\n")
    return dest


def stacks(wdir: Path, max_lines: int = 40) -> str:
    """What faulthandler wrote for the worker: its first ``max_lines`` lines, without the list
    of extension modules."""
    p = wdir / "faulthandler.txt"
    lines = p.read_text(errors="replace").splitlines() if p.is_file() else []
    lines = [ln for ln in lines if not ln.startswith("Extension modules:")]
    return "\n".join(lines[:max_lines] + (["..."] if len(lines) > max_lines else []))


def exit_detail(rc: int) -> str:
    if rc < 0:
        try:
            return f"worker killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"worker killed by signal {-rc}"
    return f"worker exit {rc}"


def watch(target: str, n: int, seed: int, hang_s: float, limit_s: float, root: Path, findings: Path | None,
          log: IO[str] | None = None) -> tuple[Counter, dict[str, tuple[str, str]], list[dict[str, str]]]:
    """Run ``n`` cases of ``target`` in workers; restart one that hangs or dies. Returns the counts,
    an example per finding, and the crashes and hangs (kind, detail, where kept, stacks)."""
    counts: Counter = Counter()
    examples: dict[str, tuple[str, str]] = {}
    dead: list[dict[str, str]] = []
    done = 0
    k = 0

    def died(kind: str, detail: str, current: str, wdir: Path) -> None:
        counts[kind] += 1
        saved = keep(wdir, findings, f"{target}-{kind}-{len(dead) + 1}")
        dead.append({"target": target, "o": kind, "d": detail, "kept": str(saved or ""), "stacks": stacks(wdir),
                     "case": current})
        examples.setdefault(kind, (detail, current))
        if log is not None:
            log.write(json.dumps(dead[-1]) + "\n")

    while done < n:
        k += 1
        wdir = root / f"{target}-{k}"
        wdir.mkdir()
        proc = subprocess.Popen([sys.executable, __file__, "--worker", target, str(n - done), str(seed),
                                 "--limit-s", str(limit_s), "--work", str(wdir)],
                                stdout=subprocess.PIPE, text=True, env=os.environ | {"PYTHONWARNINGS": "ignore"},
                                start_new_session=True)
        seed += 1
        try:
            sel = selectors.DefaultSelector()
            sel.register(proc.stdout, selectors.EVENT_READ)
            current = ""
            before = done
            while True:
                if not sel.select(timeout=hang_s):
                    proc.send_signal(signal.SIGUSR1)  # faulthandler: every thread's stack
                    time.sleep(1.0)
                    proc.kill()
                    proc.wait()
                    died("hang", f"no answer in {hang_s} s", current, wdir)
                    done += 1
                    break
                line = proc.stdout.readline()
                if not line:
                    rc = proc.wait()
                    if rc != 0:
                        died("crash", exit_detail(rc), current, wdir)
                        done += 1
                    elif done == before:
                        done = n  # hypothesis ran out of distinct cases
                    break
                rec = json.loads(line)
                if "start" in rec:
                    current = rec["start"]
                    continue
                counts[rec["o"]] += 1
                done += 1
                if rec["o"] not in fz_good():
                    if log is not None:
                        log.write(json.dumps({"target": target, **rec}) + "\n")
                    examples.setdefault(rec["o"], (rec["d"], rec["case"]))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
            shutil.rmtree(wdir, ignore_errors=True)
    return counts, examples, dead


def _stop(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=100_000, help="total cases over all targets (default 10^5)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--hang-s", type=float, default=60.0, help="a case silent this long is a hang")
    ap.add_argument("--targets", default=",".join(TARGETS), help=f"comma-separated subset of {', '.join(TARGETS)}")
    ap.add_argument("--log", help="write every finding (outcome, detail, case) to this JSON-lines file")
    ap.add_argument("--findings", default="out/fuzz-findings",
                    help="where a crashed or hung worker's case and stacks are kept (made only then; '' for nowhere)")
    ap.add_argument("--rerun", metavar="DIR", help="rerun the case saved in DIR (a --findings entry) and exit")
    ap.add_argument("--limit-s", type=float, default=20.0,
                    help="each run's wall-time budget (sim.max_wall_s); a case busy at twice it plus 5 s is a hang")
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        fw.worker(a.worker[0], int(a.worker[1]), int(a.worker[2]), a.limit_s, Path(a.work))
        return 0
    if a.rerun:
        return fw.rerun(Path(a.rerun))
    chosen = a.targets.split(",")
    unknown = [t for t in chosen if t not in TARGETS]
    if unknown:
        ap.error(f"--targets: {', '.join(unknown)} not among {', '.join(TARGETS)}")
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _stop)
    root, lock = make_run_dir()
    log = open(a.log, "w", buffering=1) if a.log else None  # noqa: SIM115
    try:
        return run(a, chosen, root, log)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        shutil.rmtree(root, ignore_errors=True)
        lock.close()
        if log is not None:
            log.close()


def run(a: argparse.Namespace, chosen: list[str], root: Path, log: IO[str] | None) -> int:
    share = sum(TARGETS[t] for t in chosen)
    findings_dir = Path(a.findings) if a.findings else None
    total: Counter = Counter()
    dead: list[dict[str, str]] = []
    t0 = time.perf_counter()
    for t in chosen:
        n = max(1, round(a.cases * TARGETS[t] / share))
        t1 = time.perf_counter()
        counts, examples, died = watch(t, n, a.seed, a.hang_s, a.limit_s, root, findings_dir, log)
        total += counts
        dead += died
        print(f"{t:5s} {sum(counts.values()):7d} cases in {time.perf_counter() - t1:7.1f} s: "
              + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())), flush=True)
        for kind, (detail, case) in examples.items():
            print(f"    {kind}: {detail}\n      case: {case[:600]}", flush=True)
    print(f"total {sum(total.values())} cases in {time.perf_counter() - t0:.1f} s: "
          + ", ".join(f"{k} {v}" for k, v in sorted(total.items())))
    for kind in ("traceback", "panic", "hang", "crash", "no-field", "accepted-not-run"):
        print(f"  {kind}: {total.get(kind, 0)}")
    for d in dead[:5]:
        print(f"{d['o']} ({d['target']}, {d['d']}):")
        if d["kept"]:
            print(f"  case and stacks kept in {d['kept']}/; rerun it with\n"
                  f"    PYTHONPATH=python python3 bench/fuzz.py --rerun {d['kept']}")
        print("  stacks (faulthandler):\n    " + (d["stacks"].strip() or "(none written)").replace("\n", "\n    "))
    if len(dead) > 5:
        where = f", each kept in {findings_dir}/" if findings_dir else ""
        print(f"and {len(dead) - 5} more crashes or hangs{where}")
    return 1 if any(k not in fz_good() for k in total) else 0


if __name__ == "__main__":
    sys.exit(main())
