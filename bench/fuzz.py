"""Fuzz the scenario loader, the simulator and the inference importers at scale (issue 18, part 2).

    PYTHONPATH=python python3 bench/fuzz.py                 # 10^5 cases (about 2/3 scenarios)
    PYTHONPATH=python python3 bench/fuzz.py --cases 10000 --seed 7

The same strategies and judges as python/tests/test_fuzz_*.py (python/tests/fuzzing.py), run
unseeded for many more cases. Every simulated case runs with a wall-time budget of --limit-s
seconds (`sim.max_wall_s`, the core's budget): a case that reaches it stops with an error naming
the field and is counted as "budget", a good outcome. A hang is a case that ignores its budget:
still busy at twice --limit-s plus 5 s (in the core, or in Python around it), or silent for
--hang-s seconds (the watcher then restarts the worker; also when a case kills it).
Prints counts per target and outcome: ok, error (a clear error naming its field), budget, and
the findings: traceback, panic, hang, crash, no-field (an error naming no field),
accepted-not-run; then one example of each finding. Exit status 1 if there is any finding.
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "python" / "tests"

#: Share of the cases per target.
TARGETS = {"dict": 0.5, "toml": 0.15, "csv": 0.15, "ss": 0.05, "pcap": 0.15}


def fz_good() -> tuple[str, ...]:
    """The outcomes that are not findings (python/tests/fuzzing.py GOOD)."""
    sys.path.insert(0, str(TESTS))
    import fuzzing as fz

    return fz.GOOD


def worker(target: str, n: int, seed: int, limit_s: float, current_path: str) -> None:
    """Run ``n`` cases of ``target``, one JSON line per case on stdout."""
    sys.path.insert(0, str(TESTS))
    import fuzzing as fz
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hseed

    tmp = Path(tempfile.mkdtemp(prefix="cclab-fuzz-"))
    for name, content in fz.TRACE_FILES.items():
        (tmp / name).write_bytes(content)

    def emit(outcome: str, detail: str, case: object) -> None:
        rec = {"o": outcome}
        if outcome not in fz.GOOD:
            rec |= {"d": detail, "case": repr(case)[:2000]}
        sys.stdout.write(json.dumps(rec) + "\n")
        sys.stdout.flush()

    def announce(case: object) -> None:
        # What runs now, so the watcher can show a case that hangs or kills the worker (in full
        # in the file current_path, a shortened copy on stdout).
        text = repr(case)
        Path(current_path).write_text(text)
        sys.stdout.write(json.dumps({"start": text[:2000]}) + "\n")
        sys.stdout.flush()

    cfg = settings(max_examples=n, database=None, deadline=None, derandomize=False,
                   suppress_health_check=list(HealthCheck))
    if target == "dict":
        strat = fz.scenario_dicts(tmp, max_flows=2000)
    elif target == "toml":
        strat = fz.toml_texts()
    elif target in ("csv", "ss", "pcap"):
        strat = {"csv": fz.csv_texts(), "ss": fz.ss_texts(), "pcap": fz.pcap_inputs()}[target]
    else:
        raise SystemExit(f"unknown target {target}")

    @hseed(seed)
    @cfg
    @given(strat)
    def run(case: object) -> None:
        announce(case)
        if target == "dict":
            outcome, detail = fz.judge_scenario(case, case, limit_s=limit_s)
        elif target == "toml":
            p = tmp / "s.toml"
            p.write_bytes(case if isinstance(case, bytes) else case.encode())
            outcome, detail = fz.judge_scenario(p, fz.toml_data(case), limit_s=limit_s, duration_s=0.1)
        else:
            p = tmp / f"trace.{ {'csv': 'csv', 'ss': 'log', 'pcap': 'pcap'}[target] }"
            p.write_bytes(case)
            outcome, detail = fz.judge_trace(p)
        emit(outcome, detail, case)

    run()


def watch(target: str, n: int, seed: int, hang_s: float, limit_s: float, log: object = None) -> tuple[Counter, dict[str, tuple[str, str]]]:
    """Run ``n`` cases of ``target`` in workers; restart one that hangs or dies."""
    counts: Counter = Counter()
    examples: dict[str, tuple[str, str]] = {}
    done = 0
    while done < n:
        current_path = Path(tempfile.gettempdir()) / f"cclab-fuzz-current-{os.getpid()}.txt"
        proc = subprocess.Popen([sys.executable, __file__, "--worker", target, str(n - done), str(seed),
                                 "--limit-s", str(limit_s), "--current", str(current_path)],
                                stdout=subprocess.PIPE, text=True, env=os.environ | {"PYTHONWARNINGS": "ignore"})
        seed += 1
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        current = ""
        before = done
        while True:
            if not sel.select(timeout=hang_s):
                proc.kill()
                proc.wait()
                counts["hang"] += 1
                examples.setdefault("hang", (f"no answer in {hang_s} s", current))
                if log is not None:
                    full = current_path.read_text() if current_path.exists() else current
                    log.write(json.dumps({"target": target, "o": "hang", "case": full}) + "\n")
                done += 1
                break
            line = proc.stdout.readline()
            if not line:
                rc = proc.wait()
                if rc != 0:
                    counts["crash"] += 1
                    examples.setdefault("crash", (f"worker exit {rc}", current))
                    if log is not None:
                        full = current_path.read_text() if current_path.exists() else current
                        log.write(json.dumps({"target": target, "o": "crash", "d": rc, "case": full}) + "\n")
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
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return counts, examples


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=100_000, help="total cases over all targets (default 10^5)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--hang-s", type=float, default=60.0, help="a case silent this long is a hang")
    ap.add_argument("--targets", default=",".join(TARGETS), help=f"comma-separated subset of {', '.join(TARGETS)}")
    ap.add_argument("--log", help="write every finding (outcome, detail, case) to this JSON-lines file")
    ap.add_argument("--limit-s", type=float, default=20.0,
                    help="each run's wall-time budget (sim.max_wall_s); a case busy at twice it plus 5 s is a hang")
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--current", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker(a.worker[0], int(a.worker[1]), int(a.worker[2]), a.limit_s, a.current)
        return 0
    chosen = a.targets.split(",")
    share = sum(TARGETS[t] for t in chosen)
    total: Counter = Counter()
    findings = 0
    t0 = time.perf_counter()
    log = open(a.log, "w", buffering=1) if a.log else None
    for t in chosen:
        n = max(1, round(a.cases * TARGETS[t] / share))
        t1 = time.perf_counter()
        counts, examples = watch(t, n, a.seed, a.hang_s, a.limit_s, log)
        total += counts
        bad = {k: v for k, v in counts.items() if k not in fz_good()}
        findings += sum(bad.values())
        print(f"{t:5s} {sum(counts.values()):7d} cases in {time.perf_counter() - t1:7.1f} s: "
              + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())), flush=True)
        for kind, (detail, case) in examples.items():
            print(f"    {kind}: {detail}\n      case: {case[:600]}", flush=True)
    current = Path(tempfile.gettempdir()) / f"cclab-fuzz-current-{os.getpid()}.txt"
    current.unlink(missing_ok=True)
    print(f"total {sum(total.values())} cases in {time.perf_counter() - t0:.1f} s: "
          + ", ".join(f"{k} {v}" for k, v in sorted(total.items())))
    for kind in ("traceback", "panic", "hang", "crash", "no-field", "accepted-not-run"):
        print(f"  {kind}: {total.get(kind, 0)}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
