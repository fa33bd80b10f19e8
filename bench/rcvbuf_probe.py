"""How the kernel's receiver opens its window: one kernel run with the `tcp:tcp_rcvbuf_grow`
tracepoint on (net/ipv4/tcp_input.c, `tcp_rcv_space_adjust`, once per receiver RTT when the
application read more than the last measure), and the simulator's receive-buffer autotuning on
the same scenario beside it.

    sudo flock /tmp/cclab-kernel.lock env PYTHONPATH=$PWD/python python3 bench/rcvbuf_probe.py \
        bbr-100ms-deep --duration 4 --out out/rcvbuf-bbr.json

A case is a name from `cclab fidelity`'s grid or a scenario file. Per receiving socket (kernel)
or flow (simulator), each grow event: time from the first, rtt_us, copied, space, rcvbuf,
window_clamp, rcv_ssthresh, rcv_wnd and scaling_ratio. The tracepoint reports the state before
the event's change, so event n+1 shows what event n set. `--analyse FILE` prints a saved probe
(`--resim`: with the simulator run again).
Root only for the kernel part (tracefs is global: run nothing else on the kernel meanwhile).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

_TRACEFS = Path("/sys/kernel/tracing")
_EVENT = _TRACEFS / "events/tcp/tcp_rcvbuf_grow/enable"
_FIELDS = ("time", "rtt_us", "copied", "inq", "space", "ooo", "scaling_ratio", "rcvbuf", "rcv_ssthresh",
           "window_clamp", "rcv_wnd", "sport", "dport")
_LINE = re.compile(r"\s(\d+\.\d+): tcp_rcvbuf_grow: (.*)$")


def _scenario(case: str, duration_s: float | None) -> dict[str, Any]:
    from cclab.fidelity import grid

    by_name = {c.name: c.scenario for c in grid()}
    if case in by_name:
        d = json.loads(json.dumps(by_name[case]))
    else:
        from cclab.scenario import load_scenario

        d = load_scenario(Path(case)).model_dump(mode="json")
    if duration_s:
        d["duration_s"] = duration_s
    d.setdefault("seed", 1)
    return d


def parse(text: str) -> list[dict[str, float]]:
    """The trace buffer's tcp_rcvbuf_grow lines as dicts (t_s: the trace clock)."""
    out = []
    for line in text.splitlines():
        m = _LINE.search(line)
        if not m:
            continue
        kv = dict(re.findall(r"(\w+)=(\S+)", m.group(2)))
        ev: dict[str, float] = {"t_s": float(m.group(1))}
        for f in _FIELDS:
            if f in kv:
                ev[f] = float(kv[f])
        out.append(ev)
    return out


def kernel(d: dict[str, Any]) -> list[dict[str, float]]:
    from cclab.kernel.backend import run_kernel
    from cclab.scenario import load_scenario

    (_TRACEFS / "trace").write_text("")
    _EVENT.write_text("1")
    try:
        run_kernel(load_scenario(d))
    finally:
        _EVENT.write_text("0")
    return parse((_TRACEFS / "trace").read_text())


def simulator(d: dict[str, Any]) -> list[dict[str, float]]:
    from cclab.scenario import load_scenario
    from cclab.sim import simulate

    res = simulate(load_scenario(d))
    ev = res.events[res.events["kind"] == "rcvbuf_grow"]
    out = []
    for t, flow, detail in zip(ev["t_s"], ev["flow"], ev["detail"]):
        e: dict[str, Any] = {"t_s": float(t), "sport": flow, "dport": 0}
        e.update({k: float(v) for k, v in (kv.split("=") for kv in detail.split())})
        out.append(e)
    return out


def show(events: list[dict[str, float]], label: str, first: int) -> None:
    by_sock: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for e in events:
        by_sock.setdefault((e.get("sport", 0), e.get("dport", 0)), []).append(e)
    for key, evs in by_sock.items():
        t0 = evs[0]["t_s"]
        print(f"{label} socket {key}: {len(evs)} events")
        print(f"{'t_s':>7} {'rtt_us':>7} {'copied':>9} {'space':>9} {'rcvbuf':>9} {'clamp':>9} {'ssthresh':>9} "
              f"{'rcv_wnd':>9} {'ratio':>5}")
        for e in evs[:first]:
            print(f"{e['t_s'] - t0:7.3f} {e['rtt_us']:7.0f} {e['copied']:9.0f} {e['space']:9.0f} {e['rcvbuf']:9.0f} "
                  f"{e['window_clamp']:9.0f} {e['rcv_ssthresh']:9.0f} {e['rcv_wnd']:9.0f} {e['scaling_ratio']:5.0f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("case", nargs="?", help="a `cclab fidelity` case name or a scenario file")
    ap.add_argument("--duration", type=float, default=None, help="run length, s")
    ap.add_argument("--out", type=Path, help="save the probe as JSON")
    ap.add_argument("--analyse", type=Path, help="print a saved probe")
    ap.add_argument("--resim", action="store_true", help="with --analyse: run the simulator again")
    ap.add_argument("--first", type=int, default=25, help="events shown per socket")
    a = ap.parse_args()
    if a.analyse:
        saved = json.loads(a.analyse.read_text())
        if a.resim:
            saved["simulator"] = simulator(saved["scenario"])
    else:
        if not a.case:
            ap.error("give a case, or --analyse FILE")
        d = _scenario(a.case, a.duration)
        saved = {"case": a.case, "scenario": d, "kernel": kernel(d), "simulator": simulator(d)}
        if a.out:
            a.out.parent.mkdir(parents=True, exist_ok=True)
            a.out.write_text(json.dumps(saved))
    show(saved["kernel"], "kernel", a.first)
    show(saved["simulator"], "simulator", a.first)
    return 0


if __name__ == "__main__":
    sys.exit(main())
