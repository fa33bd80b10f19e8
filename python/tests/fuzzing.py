"""Fuzzing helpers shared by test_fuzz_*.py and bench/fuzz.py: hypothesis strategies for scenario
dicts, scenario TOML text and trace files, and the judges that sort what each case does into
outcomes ("ok", "error", or a kind of failure).

The property (issue 18, part 2): a scenario either runs, or raises ScenarioError whose every
problem names a field of the scenario as the user wrote it (a dotted path that exists in the
input, or a missing key under a table that exists); never another exception type, a panic or a
hang; and what ``load_scenario`` accepts, ``simulate`` runs, or stops at its budget with an error
naming ``sim.max_events`` or ``sim.max_wall_s``. An inference importer either returns
a trace or raises InputError (a ValueError) with a message; never another exception.
"""

from __future__ import annotations

import math
import re
import signal
import tomllib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from hypothesis import strategies as st

#: Outcomes that satisfy the property; anything else is a finding. "budget": the run reached its
#: budget (the judge's wall-time budget, or the case's own) and stopped with a ScenarioError
#: naming it, as any over-long run should.
GOOD = ("ok", "error", "budget")

#: The scenario fields of a run's budget.
BUDGET_FIELDS = ("sim.max_events", "sim.max_wall_s")

# ------------------------------------------------------------------------------------------------
# Seeds: small valid scenarios covering the forms and models, each short to run.
SEEDS: list[dict[str, Any]] = [
    {"duration_s": 0.2, "bottleneck": {"rate_bps": "10Mbps", "delay_ms": 5, "queue_pkts": 50},
     "flows": [{"cc": "cubic"}]},
    {"duration_s": "200ms", "seed": 3,
     "bottleneck": {"rate_bps": 2e6, "delay_ms": "10ms", "queue_bytes": 30000, "loss": 0.01,
                    "reverse": {"rate_bps": "1Mbps", "loss_model": {"kind": "gilbert_elliott", "p_good_bad": 0.1,
                                                                    "p_bad_good": 0.5}},
                    "outages": [{"start_s": 0.05, "duration_s": 0.01}],
                    "delay_spikes": [{"start_s": 0.1, "duration_s": 0.02, "extra_delay_ms": 30}]},
     "senders": [{"name": "a"}, {"name": "b", "access": {"rate_bps": "5Mbps", "delay_ms": 1}}],
     "receivers": [{"name": "r"}],
     "flows": [{"sender": "a", "cc": "reno", "size_bytes": 20000},
               {"sender": "b", "cc": "bbr", "start_s": 0.05, "ecn": "on"},
               {"sender": "a", "transport": "udp", "rate_bps": "1Mbps", "payload_bytes": 1000}]},
    {"duration_s": 0.2, "bottleneck": {"rate_bps": "20Mbps", "delay_ms": 2, "queue_pkts": 100,
                                       "qdisc": {"kind": "fq_codel", "target_ms": 5}},
     "flows": [{"cc": "cubic"}, {"cc": "dctcp", "ecn": "on"}]},
    {"duration_s": 0.2, "bottleneck": {"rate_bps": "10Mbps", "delay_ms": 5, "queue_pkts": 100, "qdisc": "red"},
     "flows": [{"cc": "vegas"}]},
    {"duration_s": 0.3, "bottleneck": {"radio": "walking"}, "flows": [{"cc": "cubic", "size_bytes": 5000}]},
    {"duration_s": 0.2, "nodes": [{"name": "h1"}, {"name": "r1", "kind": "router"}, {"name": "h2"}],
     "links": [{"endpoints": ["h1", "r1"], "rate_bps": "50Mbps", "delay_ms": 1},
               {"endpoints": ["r1", "h2"], "rate_bps": "10Mbps", "delay_ms": 5, "queue_pkts": 64,
                "qdisc": {"kind": "pie"}}],
     "flows": [{"sender": "h1", "receiver": "h2"}]},
    {"duration_s": 0.2, "nodes": [{"name": "ap"}, {"name": "s1"}, {"name": "s2"}],
     "media": [{"name": "cell", "kind": "dcf", "nodes": ["ap", "s1", "s2"], "queue_pkts": 50}],
     "flows": [{"sender": "ap", "receiver": "s1"}, {"sender": "s2", "receiver": "ap", "cc": "reno"}]},
    {"duration_s": 0.2, "nodes": [{"name": "a"}, {"name": "b"}],
     "media": [{"name": "wire", "nodes": ["a", "b"], "rate_bps": "10Mbps", "delay_ms": 2, "queue_pkts": 30}],
     "flows": [{"sender": "a", "receiver": "b", "cc_params": {"beta": 700}}]},
]

#: Values that break things: wrong types, non-finite, huge, negative, bad units, unicode.
NASTY: list[Any] = [
    None, True, False, 0, -1, 1, 2**31, 2**32, 2**53 + 1, 2**63, 2**64, -2**63, 10**30, 0.4, 1.5, -0.5,
    1e-320, 1e300, -1e300, math.nan, math.inf, -math.inf, "", " ", "abc", "NaN", "inf", "-inf", "1e400Mbps",
    "1e400", "5 parsecs", "12.5ms", "-5ms", "64Mbps", "1Mbit/s", "1.5GB", "0x10", "\u00e9t\u00e9", "\u202e\u0000",
    "\ud7ff" * 3, "\ud800", b"\x00", {1, 2}, (1, 2), 3 + 4j, "x" * 5000, [], [1, 2], [{}], {}, {"kind": "nope"}, {"a": 1},
]

#: Algorithm names tried for ``cc``.
CC_NAMES = ["cubic", "reno", "bbr", "bbr3", "vegas", "dctcp", "CUBIC", "cubic ", "nope", "", "c\u00fcbic"]

#: Fields that a flow, a link and the scenario may take (added by mutations when absent).
FLOW_FIELDS = ["name", "sender", "receiver", "transport", "rate_bps", "payload_bytes", "cc", "cc_params", "start_s",
               "size_bytes", "mss_bytes", "initial_cwnd_pkts", "max_cwnd_pkts", "rwnd_bytes", "sack", "ecn",
               "rto_min_ms", "rto_max_ms", "rto_profile", "profile", "path", "paths", "workload", "ack_counting"]
LINK_FIELDS = ["rate_bps", "capacity_trace", "delay_ms", "queue_pkts", "queue_bytes", "loss", "loss_model",
               "outages", "delay_spikes", "ecn_threshold_pkts", "qdisc", "radio", "reverse"]
TOP_FIELDS = ["name", "description", "duration_s", "seed", "sim", "kernel", "host", "bottleneck", "senders",
              "receivers", "nodes", "links", "media", "flows", "middleware"]

#: Capacity-trace file contents (written by the tests into a temporary directory).
TRACE_FILES: dict[str, bytes] = {
    "good.trace": b"1\n1\n2\n3\n5\n",
    "columns.csv": b"0,10000000\n0.1,5000000\n",
    "empty.csv": b"",
    "text.csv": b"hello world\n",
    "zeros.csv": b"0,0\n0.1,0\n",
    "decreasing.csv": b"5\n3\n",
    "negative.csv": b"0,-5\n",
    "nan.csv": b"0,nan\n0.1,inf\n",
    "binary.csv": bytes(range(256)),
    "utf16.csv": "0,1000000\n".encode("utf-16"),
    "huge.csv": b"0,1e400\n",
}


def _paths(d: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path (tuple of keys and indices) into nested dicts and lists."""
    out = [prefix] if prefix else []
    if isinstance(d, dict):
        for k, v in d.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(d, list):
        for i, v in enumerate(d):
            out += _paths(v, prefix + (i,))
    return out


def _get(d: Any, path: tuple) -> Any:
    for p in path:
        d = d[p]
    return d


def _dicts(d: Any, prefix: tuple = ()) -> list[tuple]:
    return [p for p in [()] + _paths(d) if isinstance(_get(d, p), dict)]


@st.composite
def scenario_dicts(draw: Any, trace_dir: Path | None = None, max_flows: int = 200) -> dict[str, Any]:
    """A seed scenario after 1-4 random mutations: a value replaced, a key removed, an unknown or
    absent key added, an algorithm renamed, a capacity trace given, the flows multiplied."""
    import copy

    d = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    value = st.one_of(st.sampled_from(NASTY), st.integers(), st.floats(), st.text(max_size=20),
                      st.lists(st.integers(), max_size=3))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["set", "set", "del", "unknown", "add", "cc", "trace", "flows", "duration"]))
        paths = _paths(d)
        if op in ("set", "del") and not paths:
            continue
        if op == "set":
            path = draw(st.sampled_from(paths))
            parent = _get(d, path[:-1])
            parent[path[-1]] = copy.deepcopy(draw(value))  # NASTY's lists and dicts are shared
        elif op == "del":
            path = draw(st.sampled_from(paths))
            parent = _get(d, path[:-1])
            if isinstance(parent, dict):
                del parent[path[-1]]
            else:
                parent.pop(path[-1])
        elif op == "unknown":
            where = _get(d, draw(st.sampled_from(_dicts(d))))
            where[draw(st.text(min_size=1, max_size=12))] = copy.deepcopy(draw(value))
        elif op == "add":
            where_path = draw(st.sampled_from(_dicts(d)))
            where = _get(d, where_path)
            names = FLOW_FIELDS if "flows" in where_path else LINK_FIELDS if where_path else TOP_FIELDS
            where[draw(st.sampled_from(names))] = copy.deepcopy(draw(value))
        elif op == "cc" and isinstance(d.get("flows"), list) and d["flows"] and isinstance(d["flows"][0], dict):
            d["flows"][0]["cc"] = draw(st.sampled_from(CC_NAMES))
        elif op == "trace" and trace_dir is not None and isinstance(d.get("bottleneck"), dict):
            d["bottleneck"].pop("rate_bps", None)
            name = draw(st.sampled_from([*TRACE_FILES, "missing.csv"]))
            d["bottleneck"]["capacity_trace"] = str(trace_dir / name)
        elif op == "flows" and isinstance(d.get("flows"), list) and d["flows"]:
            n = draw(st.integers(1, max_flows))
            d["flows"] = [copy.deepcopy(d["flows"][i % len(d["flows"])]) for i in range(n)]
            for i, f in enumerate(d["flows"]):
                if isinstance(f, dict) and "name" in f:
                    f["name"] = f"{f['name']}{i}"
        elif op == "duration":
            d["duration_s"] = draw(st.sampled_from([0.05, 0.1, "100ms", "0.2s", 0, -1, math.nan, math.inf, 1e300,
                                                   2**64, "1e400s", "5 parsecs", "1e12s", 1e10, 2e10]))
    return d


@st.composite
def toml_texts(draw: Any) -> str | bytes:
    """A shipped scenario's text, mutated: lines dropped, duplicated or garbled, cut short, a
    value replaced, unicode or binary inserted, another encoding."""
    from cclab.scenario import shipped_scenarios

    text = shipped_scenarios()[draw(st.sampled_from(sorted(shipped_scenarios())))].read_text()
    lines = text.splitlines()
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["drop", "dup", "garble", "cut", "value", "insert", "unknown"]))
        i = draw(st.integers(0, max(len(lines) - 1, 0)))
        if not lines:
            lines = [""]
        if op == "drop":
            lines.pop(i)
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "garble":
            j = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:j] + draw(st.text(max_size=5)) + lines[i][j:]
        elif op == "cut":
            lines = lines[: i + 1]
            lines[-1] = lines[-1][: draw(st.integers(0, len(lines[-1])))]
        elif op == "value" and "=" in lines[i]:
            key = lines[i].split("=", 1)[0]
            lines[i] = key + "= " + draw(st.sampled_from(
                ['"1e400Mbps"', "nan", "inf", "-inf", "-1", "0", "1e300", "18446744073709551616", '"5 parsecs"',
                 "true", "[1, 2]", "{ a = 1 }", '"\u00e9"', '"-12ms"', "0.4", "9999999999999999999999"]))
        elif op == "insert":
            lines.insert(i, draw(st.text(max_size=30)))
        elif op == "unknown":
            lines.insert(i, f"{draw(st.from_regex(r'[a-z_]{1,10}', fullmatch=True))} = 1")
    out = "\n".join(lines)
    enc = draw(st.sampled_from(["utf-8", "utf-8", "utf-8", "utf-16", "latin-1"]))
    return out.encode(enc, errors="replace") if enc != "utf-8" or draw(st.booleans()) else out


# ------------------------------------------------------------------------------------------------
# Judges.
_NO_FIELD = re.compile(r"line \d+ column \d+|expected (u\d+|i\d+|f\d+|a |an |struct|enum|value)|"
                       r"number out of range|invalid type|invalid value|unknown variant|missing field|"
                       r"\b(fwd|rev|capacity_trace_text|queue_pkts_by_port)\b")


def names_a_field(path: str, msg: str, data: Any) -> bool:
    """Whether a problem (path, message) names a field of ``data`` (the scenario as given: a dict,
    or the parsed TOML) in the scenario's own terms: ``scenario`` (the whole file), or a dotted path
    whose parent exists in ``data`` and that carries none of the core's internal names or JSON
    positions."""
    # The core's internal names in a path (bottleneck.fwd) fail to resolve below; a key the user
    # wrote that happens to be one ("rev") resolves, as it should. The user's own value quoted in
    # the message ("'rev' is not a time") is not the core speaking: left out of the search.
    if _NO_FIELD.search(re.sub(r"'[^']*'", "''", msg)):
        return False
    return path == "scenario" or _resolves(path, data)


def _resolves(path: str, cur: Any) -> bool:
    """Whether dotted ``path`` leads through ``cur`` (a key may itself hold dots or brackets: the
    longest key that prefixes the path is taken first), its last key allowed to be missing."""
    if isinstance(cur, (list, tuple)):
        m = re.match(r"\[(\d+)\]\.?", path)
        if not m or int(m.group(1)) >= len(cur):
            return False
        rest = path[m.end():]
        return not rest or _resolves(rest, cur[int(m.group(1))])
    if not isinstance(cur, dict):
        return False
    for key in sorted((k for k in cur if isinstance(k, str) and path.startswith(k)), key=len, reverse=True):
        rest = path[len(key):]
        if not rest:
            return True
        if rest.startswith("."):
            rest = rest[1:]
        elif not rest.startswith("["):
            continue
        if _resolves(rest, cur[key]):
            return True
    # A missing (required) key under a table that exists: no dot or index left in it.
    return not re.search(r"[.\[]", path)


#: A scenario that loads is simulated if it asks for at most this many seconds (a mutation may
#: make a valid run long: a long run is not a hang, and is not tried).
MAX_RUN_S = 5.0


class Hang(Exception):
    """A case ran past its wall-time budget."""


@contextmanager
def wall_limit(seconds: float) -> Iterator[None]:
    """Raise Hang in the main thread after ``seconds`` (the core's progress callback checks signals)."""

    def fire(signum: int, frame: Any) -> None:
        raise Hang(f"over {seconds} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def with_budget(sc: Any, limit_s: float) -> Any:
    """``sc`` with ``sim.max_wall_s`` at most ``limit_s`` (a case's own smaller budget kept)."""
    own = sc.sim.max_wall_s
    sim = sc.sim.model_copy(update={"max_wall_s": limit_s if own is None else min(own, limit_s)})
    return sc.model_copy(update={"sim": sim})


def judge_scenario(source: Any, data: Any, run: bool = True, limit_s: float = 20.0,
                   **overrides: Any) -> tuple[str, str]:
    """(outcome, detail) of loading ``source`` (a dict or a TOML path) and, if it loads, simulating
    it. ``data`` is what the user wrote (for naming checks). Outcomes: ok, error (ScenarioError
    naming fields), budget (the run stopped at its budget, naming it: the core's wall-time
    budget is set to ``limit_s``), no-field (ScenarioError naming none), traceback (any other
    exception), panic (the core's internal error), hang (still busy at twice ``limit_s`` plus
    5 s: a case that ignores the budget, in the core or around it), accepted-not-run (load
    passed, simulate raised)."""
    from cclab import simulate
    from cclab.scenario import ScenarioError, load_scenario
    from cclab.sim import SimulationError

    stage = "load"
    try:
        with wall_limit(2 * limit_s + 5):
            sc = load_scenario(source, **overrides)
            if not run or sc.duration_s > MAX_RUN_S:
                return "ok", ""
            stage = "simulate"
            simulate(with_budget(sc, limit_s))
        return "ok", ""
    except Hang as e:
        return "hang", f"{stage}: {e}"
    except ScenarioError as e:
        if stage == "simulate":
            if e.problems and all(p in BUDGET_FIELDS for p, _ in e.problems):
                return "budget", str(e)[:300]
            return "accepted-not-run", str(e)[:300]
        bad = [(p, m) for p, m in e.problems if not names_a_field(p, m, data)]
        if bad or not e.problems:
            return "no-field", repr(bad or e.problems)[:300]
        return "error", ""
    except SimulationError as e:
        return ("panic" if "internal simulator error" in str(e) else "traceback"), str(e)[:300]
    except RecursionError as e:
        return "traceback", f"RecursionError: {e}"
    except Exception as e:  # noqa: BLE001 - the judge sorts every failure
        return "traceback", f"{stage}: {type(e).__name__}: {str(e)[:300]}"


def toml_data(text: str | bytes) -> Any:
    """The TOML's data for naming checks (None when it does not parse: then only ``scenario``
    may be named)."""
    try:
        return tomllib.loads(text if isinstance(text, str) else text.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}


# ------------------------------------------------------------------------------------------------
# Inference inputs.
_CSV_COLS = ["t", "t_s", "time", "cwnd", "cwnd_pkts", "snd_cwnd", "srtt_ms", "ca_state", "flow", "rtt", "x", ""]
_CELLS = ["0", "1", "-1", "0.5", "1e300", "-1e300", "nan", "inf", "", "abc", "\u00e9", "10", "3", "1e-9", '"a,b"',
          "open", "loss"]


@st.composite
def csv_texts(draw: Any) -> bytes:
    """CSV traces: random header (of known and unknown columns), rows of numbers and junk, maybe
    cut mid-row, maybe sorted or not; or (one in four) a plausible sawtooth with a few cells
    spoilt, which loads and reaches the estimators."""
    if draw(st.integers(0, 3)) == 0:
        return draw(sawtooth_csvs())
    cols = draw(st.lists(st.sampled_from(_CSV_COLS), min_size=0, max_size=5))
    rows = draw(st.integers(0, 60))
    lines = [",".join(cols)] if cols else []
    t = 0.0
    for _ in range(rows):
        cells = []
        for c in cols:
            if c in ("t", "t_s", "time") and draw(st.booleans()):
                t += draw(st.floats(-0.1, 1.0, allow_nan=False))
                cells.append(repr(t))
            elif c in ("cwnd", "cwnd_pkts", "snd_cwnd") and draw(st.booleans()):
                cells.append(str(draw(st.integers(0, 500))))
            else:
                cells.append(draw(st.sampled_from(_CELLS)))
        if draw(st.integers(0, 9)) == 0:
            cells = cells[: draw(st.integers(0, len(cells)))]
        lines.append(",".join(cells))
    text = "\n".join(lines).encode()
    if draw(st.integers(0, 5)) == 0:
        text = text[: draw(st.integers(0, len(text)))]
    if draw(st.integers(0, 10)) == 0:
        text = draw(st.binary(max_size=200))
    return text


@st.composite
def sawtooth_csvs(draw: Any) -> bytes:
    """A loss-based window's sawtooth (additive or cubic growth, multiplicative decrease), with
    an RTT column or not, a few cells spoilt and a few rows swapped."""
    n = draw(st.integers(20, 600))
    dt = draw(st.sampled_from([0.001, 0.01, 0.05, 0.2]))
    peak = draw(st.floats(4, 400))
    beta = draw(st.floats(0.3, 0.95))
    cubic = draw(st.booleans())
    rtt = draw(st.one_of(st.none(), st.floats(1, 500)))
    rows, w, k = [], 2.0, 0
    for i in range(n):
        k += 1
        w = w * beta if w > peak else w + (0.01 * k * k if cubic else 1.0)
        k = 0 if w <= peak * beta else k
        rows.append([f"{i * dt:.6f}", f"{w:.3f}"] + ([f"{rtt:.3f}"] if rtt is not None else []))
    for _ in range(draw(st.integers(0, 5))):
        r, c = draw(st.integers(0, n - 1)), draw(st.integers(0, len(rows[0]) - 1))
        rows[r][c] = draw(st.sampled_from(_CELLS))
    for _ in range(draw(st.integers(0, 3))):
        a, b = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
        rows[a], rows[b] = rows[b], rows[a]
    head = "t_s,cwnd_pkts" + (",srtt_ms" if rtt is not None else "")
    return (head + "\n" + "\n".join(",".join(r) for r in rows) + "\n").encode()


@st.composite
def ss_texts(draw: Any) -> bytes:
    """``ss -tin`` logs: time lines and sample lines with random fields."""
    lines = []
    for _ in range(draw(st.integers(0, 30))):
        kind = draw(st.sampled_from(["time", "sample", "junk"]))
        if kind == "time":
            lines.append(draw(st.sampled_from(["0", "1.5", "99999999999", "1e400", "-3", "nan"])))
        elif kind == "sample":
            fields = draw(st.lists(st.sampled_from(
                ["cwnd:10", "cwnd:0", "cwnd:1e400", "cwnd:-", "ssthresh:7", "rtt:20.5/3", "rtt:/", "minrtt:9",
                 "rto:204", "mss:1448", "pacing_rate 10Mbps", "delivery_rate 1.5Gbps", "cubic", "bbr", "\u00e9"]),
                min_size=1, max_size=6))
            lines.append(" " + " ".join(fields))
        else:
            lines.append(draw(st.text(max_size=30)))
    return "\n".join(lines).encode("utf-8", errors="replace")


def pcap_bytes(packets: int = 40) -> bytes:
    """A valid Ethernet/IPv4 pcap of a small bulk transfer (data one way, ACKs the other)."""
    import io

    import dpkt

    buf = io.BytesIO()
    w = dpkt.pcap.Writer(buf, linktype=dpkt.pcap.DLT_EN10MB)
    a, b = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
    for i in range(packets):
        if i % 2 == 0:
            tcp = dpkt.tcp.TCP(sport=5000, dport=80, seq=1000 + 1448 * i, ack=1, flags=dpkt.tcp.TH_ACK,
                               data=b"x" * 1448)
            ip = dpkt.ip.IP(src=a, dst=b, p=dpkt.ip.IP_PROTO_TCP, data=tcp)
        else:
            tcp = dpkt.tcp.TCP(sport=80, dport=5000, seq=1, ack=1000 + 1448 * i, flags=dpkt.tcp.TH_ACK)
            ip = dpkt.ip.IP(src=b, dst=a, p=dpkt.ip.IP_PROTO_TCP, data=tcp)
        ip.len = len(bytes(ip))
        eth = dpkt.ethernet.Ethernet(src=b"\x00" * 6, dst=b"\x11" * 6, type=dpkt.ethernet.ETH_TYPE_IP, data=ip)
        w.writepkt(bytes(eth), ts=i * 0.001)
    return buf.getvalue()


@st.composite
def pcap_inputs(draw: Any) -> bytes:
    """A valid capture cut anywhere, with bytes flipped, or garbage."""
    data = pcap_bytes(draw(st.integers(0, 40)))
    op = draw(st.sampled_from(["cut", "flip", "garbage", "whole"]))
    if op == "cut":
        data = data[: draw(st.integers(0, len(data)))]
    elif op == "flip":
        data = bytearray(data)
        for _ in range(draw(st.integers(1, 10))):
            i = draw(st.integers(0, len(data) - 1))
            data[i] = draw(st.integers(0, 255))
        data = bytes(data)
    elif op == "garbage":
        data = draw(st.binary(max_size=300))
    return data


def judge_trace(path: Path, fmt: str | None = None, analyse: bool = True) -> tuple[str, str]:
    """(outcome, detail) of importing a trace file and, if it loads, identifying its algorithm and
    estimating CUBIC's constants. ok / error (InputError or a ValueError with a message) /
    traceback (anything else)."""
    import warnings

    from cclab import infer

    stage = "load"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            df = infer.load_trace(path, fmt=fmt)
            if analyse:
                stage = "identify"
                infer.identify(df)
                stage = "estimate_cubic"
                infer.estimate_cubic(df)
        return "ok", ""
    except infer.InputError as e:
        return ("error" if str(e) else "traceback"), ""
    except ValueError as e:
        # identify/estimate refuse what they cannot judge with a ValueError saying why.
        if stage != "load" and str(e) and type(e) is ValueError:
            return "error", ""
        return "traceback", f"{stage}: {type(e).__name__}: {str(e)[:300]}"
    except Exception as e:  # noqa: BLE001
        return "traceback", f"{stage}: {type(e).__name__}: {str(e)[:300]}"
