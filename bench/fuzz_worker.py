"""The fuzz worker (bench/fuzz.py starts it) and the rerun of one saved case.

A worker runs cases of one target in a directory of its own that the driver gave it (and
removes): ``traces/`` (capacity traces the scenarios name), ``case.pickle`` (the case now
running, written before it runs: after a crash it is the culprit), ``meta.json`` (target,
trace directory, budget) and ``faulthandler.txt``: Python's faulthandler writes there the
stack of every thread on a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGABRT, SIGILL) and on
SIGUSR1 (the driver sends it to a worker that hangs before killing it).

    PYTHONPATH=python python3 bench/fuzz.py --rerun out/fuzz-findings/dict-crash-1

reruns a saved case in this process, faulthandler on stderr, and prints its outcome.
"""

from __future__ import annotations

import faulthandler
import json
import os
import pickle
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "python" / "tests"

#: Trace file suffix per trace target.
TRACE_SUFFIX = {"csv": "csv", "ss": "log", "pcap": "pcap"}

#: For the tooling's own test (python/tests/test_fuzz_tooling.py): "segv:N" or "hang:N" makes
#: case N of a worker crash on a null read or hang.
SELFTEST_ENV = "CCLAB_FUZZ_SELFTEST"


def _fz() -> Any:
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
    import fuzzing as fz

    return fz


def write_traces(d: Path) -> Path:
    """The capacity trace files the fuzzed scenarios name, in ``d``."""
    d.mkdir(parents=True, exist_ok=True)
    for name, content in _fz().TRACE_FILES.items():
        (d / name).write_bytes(content)
    return d


def judge_case(target: str, case: Any, work: Path, traces: Path, limit_s: float) -> tuple[str, str]:
    """(outcome, detail) of one case (python/tests/fuzzing.py's judges); files it needs go in ``work``."""
    fz = _fz()
    if target == "dict":
        return fz.judge_scenario(case, case, limit_s=limit_s)
    if target == "toml":
        p = work / "s.toml"
        p.write_bytes(case if isinstance(case, bytes) else case.encode())
        return fz.judge_scenario(p, fz.toml_data(case), limit_s=limit_s, duration_s=0.1)
    p = work / f"trace.{TRACE_SUFFIX[target]}"
    p.write_bytes(case)
    return fz.judge_trace(p)


def strategy(target: str, traces: Path) -> Any:
    fz = _fz()
    if target == "dict":
        return fz.scenario_dicts(traces, max_flows=2000)
    if target == "toml":
        return fz.toml_texts()
    if target in TRACE_SUFFIX:
        return {"csv": fz.csv_texts, "ss": fz.ss_texts, "pcap": fz.pcap_inputs}[target]()
    raise SystemExit(f"unknown target {target!r}: one of dict, toml, {', '.join(TRACE_SUFFIX)}")


def _selftest(k: int) -> None:
    kind, _, at = os.environ.get(SELFTEST_ENV, "").partition(":")
    if at and int(at) == k:
        if kind == "segv":
            import ctypes

            ctypes.string_at(0)  # a null read: SIGSEGV
        elif kind == "hang":
            while True:  # before the judge sets its own time limit
                pass


def worker(target: str, n: int, seed: int, limit_s: float, wdir: Path) -> None:
    """Run ``n`` cases of ``target`` in ``wdir``, one JSON line per case on stdout."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hseed

    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the driver
    fz = _fz()
    traces = write_traces(wdir / "traces")
    (wdir / "meta.json").write_text(json.dumps({"target": target, "traces": str(traces), "limit_s": limit_s}))
    crash_log = open(wdir / "faulthandler.txt", "w")  # noqa: SIM115 - open for the worker's life
    faulthandler.enable(file=crash_log, all_threads=True)
    faulthandler.register(signal.SIGUSR1, file=crash_log, all_threads=True)
    count = [0]

    def emit(rec: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(rec) + "\n")
        sys.stdout.flush()

    def announce(case: object) -> None:
        # The case, whole, where the driver finds it if this worker dies or hangs on it.
        tmp = wdir / ".case.pickle"
        tmp.write_bytes(pickle.dumps(case))
        os.replace(tmp, wdir / "case.pickle")
        emit({"start": repr(case)[:2000]})

    @hseed(seed)
    @settings(max_examples=n, database=None, deadline=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(strategy(target, traces))
    def run(case: object) -> None:
        announce(case)
        count[0] += 1
        _selftest(count[0])
        outcome, detail = judge_case(target, case, wdir, traces, limit_s)
        rec = {"o": outcome}
        if outcome not in fz.GOOD:
            rec |= {"d": detail, "case": repr(case)[:2000]}
        emit(rec)

    run()


def _moved(x: Any, old: str, new: str) -> Any:
    """``x`` with every string under the directory ``old`` moved under ``new``."""
    if isinstance(x, str):
        return new + x[len(old):] if x.startswith(old + os.sep) else x
    if isinstance(x, dict):
        return {k: _moved(v, old, new) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_moved(v, old, new) for v in x)
    return x


def rerun(saved: Path) -> int:
    """Rerun a case saved by bench/fuzz.py (a findings directory) in this process; prints the
    outcome. A crash shows its stack on stderr (faulthandler)."""
    meta_path, case_path = saved / "meta.json", saved / "case.pickle"
    if not meta_path.is_file() or not case_path.is_file():
        print(f"--rerun: {saved} has no meta.json and case.pickle (a directory bench/fuzz.py saved)", file=sys.stderr)
        return 2
    meta = json.loads(meta_path.read_text())
    faulthandler.enable(all_threads=True)
    with tempfile.TemporaryDirectory(prefix="cclab-fuzz-rerun-") as d:
        traces = write_traces(Path(d) / "traces")
        case = _moved(pickle.loads(case_path.read_bytes()), meta["traces"], str(traces))
        outcome, detail = judge_case(meta["target"], case, Path(d), traces, meta["limit_s"])
    print(f"{meta['target']}: {outcome}" + (f": {detail}" if detail else ""))
    return 0 if outcome in _fz().GOOD else 1
