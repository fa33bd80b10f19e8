"""S0 "why the order": an ablation of Apple's CUBIC (``cubic-xnu``) against Linux CUBIC
(``cubic``) on experiment A's paths (issue 13 part 5).

Each XNU difference from Linux that a sender's throughput may depend on is a switch (the
``cubic-xnu`` ablation ``cc_params`` of docs/cubic-xnu.md, Linux ``cubic``'s own module
parameters, or scenario fields). The rows are: both stacks as shipped, ``cubic-xnu`` with one
difference taken away at a time (``xnu-``), ``cubic-xnu`` with all of its cc differences taken
away at once ("in Linux's form": what is left is its byte/float arithmetic), ``cubic`` with one
XNU difference added where Linux has a switch for it (``linux+``), and, for the paper's
iOS 9.3.2, XNU's settings of that time (``ios9``). Columns: RTT x error rate, mean goodput.

:func:`conclusion` reads the table: for each RTT the gap between the stacks, how much of it each
``xnu-`` row takes away (the share of the gap, and whether the order flips) and how far each
``linux+`` row moves Linux towards XNU.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .grid import RunSpec, grid

__all__ = ["VARIANTS", "Variant", "plan", "table", "effects", "conclusion", "LOSSES", "QUICK_LOSSES"]

#: Error rates of the ablation (the paper's crossover 1e-4 and above, where the stacks differ).
LOSSES = [1e-5, 1e-4, 1e-3, 1e-2]
QUICK_LOSSES = [1e-4, 1e-2]


@dataclass(frozen=True)
class Variant:
    """One row: a stack with some switches turned."""

    name: str
    #: Which family: "stack" (as shipped), "xnu-" (cubic-xnu minus one difference), "xnu-all",
    #: "linux+" (cubic plus one XNU difference), "receiver" (a receiver ACK policy, run with
    #: both stacks: ``pair``), "ios9" (XNU as of the paper's iOS 9.3.2).
    kind: str
    #: The difference it turns, in words.
    difference: str
    cc: str
    cc_params: dict[str, Any] = field(default_factory=dict)
    #: Flow fields (``flows[0].<field>``); the value "rto_xnu" stands for XNU's RTO floor.
    flow: dict[str, Any] = field(default_factory=dict)
    #: For a receiver policy, which both stacks meet alike: the cubic-xnu row's Linux twin under
    #: the same policy, to say whether the order holds under it.
    pair: str | None = None


#: XNU's retransmission timer: max(SRTT + 4 RTTVAR, 100 ms) + 200 ms (``tcp_TCPTV_MIN`` = 100,
#: ``TCPTV_REXMTSLOP`` = 200, bsd/netinet/tcp_timer.h, tcp_subr.c). Linux's form, SRTT +
#: max(4 mdev, rto_min), comes closest with rto_min = 300 ms - RTT below 100 ms and 200 ms above.
def rto_min_xnu_ms(rtt_ms: float) -> float:
    return max(200.0, 300.0 - rtt_ms)


_LINUX_FORM = {"friendly_ai_above_wmax": False, "last_max_from_ssthresh": False,
               "flow_control_response": False, "hystart": True, "ssthresh_round_to_mss": False,
               "bytes_acked_carry": False}

VARIANTS: list[Variant] = [
    Variant("cubic", "stack", "Linux 6.18 CUBIC as shipped", "cubic"),
    Variant("cubic-xnu", "stack", "XNU's CUBIC as shipped (xnu-11417)", "cubic-xnu"),
    Variant("xnu-friendly-ai", "xnu-", "Reno-friendly window grows 0.53 MSS/RTT everywhere (Linux's rate), "
            "not 1 MSS/RTT at or above W(last_max)", "cubic-xnu", {"friendly_ai_above_wmax": False}),
    Variant("xnu-first-fc", "xnu-", "W(last_max) starts at 0 as in Linux, not at the 1 GiB ssthresh "
            "(no fast convergence at the first loss)", "cubic-xnu", {"last_max_from_ssthresh": False}),
    Variant("xnu-deflate", "xnu-", "no deflation to flight + 1 MSS on leaving recovery "
            "(flow_control_response off)", "cubic-xnu", {"flow_control_response": False}),
    Variant("xnu+hystart", "xnu-", "Linux's HyStart added (XNU has none); W(last_max) then starts at HyStart's "
            "ssthresh, so this also spares the first loss fast convergence", "cubic-xnu", {"hystart": True}),
    Variant("xnu-round", "xnu-", "ssthresh rounded down to a whole MSS as Linux, not to the nearest MSS",
            "cubic-xnu", {"ssthresh_round_to_mss": False}),
    Variant("xnu-carry", "xnu-", "bytes acked towards the next increase reset at a loss as Linux, not carried "
            "across it", "cubic-xnu", {"bytes_acked_carry": False}),
    Variant("xnu-fc", "xnu-", "no fast convergence at all (Linux has it too: reference)", "cubic-xnu",
            {"fast_convergence": False}),
    Variant("xnu-friendly", "xnu-", "no Reno-friendly region at all (Linux has one too: reference)",
            "cubic-xnu", {"tcp_friendliness": False}),
    Variant("xnu-iw4", "xnu-", "initial window 4 segments (XNU without minor fixes, RFC 3390)", "cubic-xnu",
            flow={"initial_cwnd_pkts": 4}),
    Variant("xnu-rto", "xnu-", "XNU's RTO floor: max(SRTT + 4 RTTVAR, 100 ms) + 200 ms, as Linux's "
            "rto_min = max(200, 300 - RTT) ms", "cubic-xnu", flow={"rto_min_ms": "rto_xnu"}),
    Variant("xnu-ack-every", "receiver", "the receiver ACKs every segment (no delayed ACKs)", "cubic-xnu",
            flow={"delayed_ack": False}, pair="linux+ack-every"),
    Variant("xnu-stretch", "receiver", "the receiver sends stretch ACKs, one per 8 segments (an XNU receiver's "
            "maxseg_unacked, or GRO): at most 1 MSS of growth per ACK bites", "cubic-xnu",
            flow={"ack_every_pkts": 8}, pair="linux+stretch"),
    Variant("xnu-linux-form", "xnu-all", "all six cc differences above taken away at once (friendly rate, "
            "first-loss FC, deflation, HyStart, rounding, carry)", "cubic-xnu", dict(_LINUX_FORM)),
    Variant("linux+no-hystart", "linux+", "no HyStart, as XNU", "cubic", {"hystart": False}),
    Variant("linux+rto", "linux+", "XNU's RTO floor (as xnu-rto)", "cubic", flow={"rto_min_ms": "rto_xnu"}),
    Variant("linux+ack-every", "receiver", "the receiver ACKs every segment", "cubic", flow={"delayed_ack": False}),
    Variant("linux+stretch", "receiver", "the receiver sends stretch ACKs, one per 8 segments", "cubic",
            flow={"ack_every_pkts": 8}),
    Variant("linux+beta0.8", "linux+", "beta 0.8 (XNU before cubic_rfc_compliant, iOS 9)", "cubic", {"beta": 0.8}),
    Variant("ios9", "ios9", "XNU as in iOS 9.3.2: cubic_rfc_compliant and cubic_minor_fixes off "
            "(beta 0.8, TCP mode, ABC 2 MSS), initial window 4 segments (4380 B)", "cubic-xnu",
            {"cubic_rfc_compliant": False, "cubic_minor_fixes": False}, flow={"initial_cwnd_pkts": 4}),
    Variant("ios9-rfc", "ios9", "XNU with cubic_rfc_compliant off only (beta 0.8)", "cubic-xnu",
            {"cubic_rfc_compliant": False}),
]

#: The rows of the quick grid (the stacks and the differences that move the order).
QUICK_VARIANTS = ["cubic", "cubic-xnu", "xnu-friendly-ai", "xnu-first-fc", "xnu-deflate", "xnu+hystart",
                  "xnu-round", "xnu-linux-form", "linux+no-hystart", "ios9"]


def variants(quick: bool) -> list[Variant]:
    return [v for v in VARIANTS if v.name in QUICK_VARIANTS] if quick else list(VARIANTS)


def plan(paths: dict[int, str], losses: list[float], reps: int, duration_s: float, quick: bool,
         backend: str = "sim") -> list[RunSpec]:
    """The ablation's runs: every variant on every path and error rate, ``reps`` seeds each (the
    seeds of experiment A, so its two stacks' rows are the same runs)."""
    specs: list[RunSpec] = []
    for rtt, name in paths.items():
        for v in variants(quick):
            fixed: dict[str, Any] = {"duration_s": duration_s, "flows[0].cc": v.cc}
            if v.cc_params:
                fixed["flows[0].cc_params"] = dict(v.cc_params)
            for k, val in v.flow.items():
                fixed[f"flows[0].{k}"] = rto_min_xnu_ms(rtt) if val == "rto_xnu" else val
            specs += grid(name, {"bottleneck.loss": losses}, reps=reps, fixed=fixed,
                          labels={"experiment": "ablation", "rtt_ms": rtt, "variant": v.name}, backend=backend)
    return specs


def table(runs: pd.DataFrame) -> pd.DataFrame:
    """Rows = variants (in VARIANTS order), with kind and difference; columns "<rtt> ms / <loss>"
    = mean goodput (Mbit/s) over the seeds; ``n`` = seeds per cell (the smallest)."""
    ok = runs[runs["ok"].astype(bool)]
    g = ok.assign(mbps=ok["goodput_bps"] / 1e6).groupby(["variant", "rtt_ms", "loss"])["mbps"]
    mean, n = g.mean(), g.size()
    order = [v for v in VARIANTS if v.name in set(ok["variant"])]
    cols = sorted({(int(r), float(x)) for _, r, x in mean.index})
    rows = []
    for v in order:
        row: dict[str, Any] = {"variant": v.name, "kind": v.kind, "difference": v.difference}
        for rtt, loss in cols:
            row[_col(rtt, loss)] = mean.get((v.name, rtt, loss), np.nan)
        row["n"] = int(min(n.get((v.name, r, x), 0) for r, x in cols))
        rows.append(row)
    return pd.DataFrame(rows)


def _col(rtt: int, loss: float) -> str:
    return f"{rtt} ms / {loss:g}"


def _cells(t: pd.DataFrame, rtt: int) -> list[str]:
    return [c for c in t.columns if c.startswith(f"{rtt} ms / ")]


def _paired(runs: pd.DataFrame, a: str, b: str, rtt: int, loss: float) -> tuple[float, int]:
    """Mean paired difference (a - b, Mbit/s) over the seeds both ran, and its sign when the 95 %
    interval (Student t) excludes 0, else 0. The variants share the seeds, so the pairs cancel
    most of the seed-to-seed noise."""
    from scipy.stats import t as student_t

    sub = runs[(runs["rtt_ms"] == rtt) & (runs["loss"] == loss) & runs["ok"].astype(bool)]
    x = sub[sub["variant"] == a].set_index("seed")["goodput_bps"]
    y = sub[sub["variant"] == b].set_index("seed")["goodput_bps"]
    d = (x - y).dropna().to_numpy(float) / 1e6
    if d.size == 0:
        return np.nan, 0
    mean = float(d.mean())
    if d.size < 2:
        return mean, int(np.sign(mean))
    half = float(student_t.ppf(0.975, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size))
    return mean, int(np.sign(mean)) if abs(mean) > half else 0


_PAIR = {v.name: v.pair for v in VARIANTS if v.pair}


def effects(t: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Per RTT and variant: its goodput against ``cubic`` (% of cubic, mean over the error
    rates), the share of cubic-xnu's gap to cubic it takes away (``xnu-`` rows) or adds
    (``linux+`` rows), counted where that gap is significant (paired over the seeds, 95 %), and
    at how many error rates its order against cubic (significant or level) differs from
    cubic-xnu's."""
    idx = t.set_index("variant")
    if not {"cubic", "cubic-xnu"} <= set(idx.index):
        return pd.DataFrame()
    rows = []
    rtts = sorted({int(c.split(" ms")[0]) for c in t.columns if " ms / " in c})
    for rtt in rtts:
        cells = _cells(t, rtt)
        losses = [float(c.split(" / ")[1]) for c in cells]
        lin = idx.loc["cubic", cells].astype(float).to_numpy()
        gaps = [_paired(runs, "cubic-xnu", "cubic", rtt, x) for x in losses]
        gap = np.array([g for g, _ in gaps])
        xnu_sign = np.array([s for _, s in gaps])
        sig = xnu_sign != 0
        for name, r in idx.iterrows():
            v = r[cells].astype(float).to_numpy()
            own = [_paired(runs, name, "cubic", rtt, x) for x in losses] if name != "cubic" else [(0.0, 0)] * len(cells)
            sign = np.array([s for _, s in own])
            diff = np.array([d for d, _ in own])
            moved = (gap - diff) if r["kind"] != "linux+" else diff
            shares = {}
            for key, m in (("gap_share_pct", sig), ("share_above_pct", xnu_sign == 1),
                           ("share_below_pct", xnu_sign == -1)):
                ok = m.any() and r["kind"] in ("xnu-", "xnu-all", "linux+")
                shares[key] = float((moved[m] * xnu_sign[m]).sum() / np.abs(gap[m]).sum() * 100) if ok else np.nan
            pair = _PAIR.get(name)
            if pair in idx.index:
                po = [_paired(runs, name, pair, rtt, x) for x in losses]
                pv = idx.loc[pair, cells].astype(float).to_numpy()
                extra = {"vs_pair_pct": float(np.nanmean((v - pv) / pv) * 100),
                         "pair_order": " ".join({1: "+", -1: "-", 0: "="}[s] for _, s in po)}
            else:
                extra = {"vs_pair_pct": np.nan, "pair_order": ""}
            rows.append({"rtt_ms": rtt, "variant": name, "kind": r["kind"], **extra,
                         "vs_cubic_pct": float(np.nanmean((v - lin) / lin) * 100),
                         **shares, "order_flips": int((sign != xnu_sign).sum()),
                         "significant_cells": int(sig.sum()), "cells": len(cells),
                         "order": " ".join({1: "+", -1: "-", 0: "="}[int(k)] for k in sign)})
    return pd.DataFrame(rows)


#: The paper's order per RTT, for the conclusion.
PAPER_ORDER = {25: "iOS above Linux", 100: "iOS above below 1e-4, Linux above from 1e-4", 550: "Linux above iOS"}


def conclusion(t: pd.DataFrame, e: pd.DataFrame) -> list[str]:
    """One paragraph per RTT, from the table and its effects: the order of the stacks at each
    error rate, and, separately where cubic-xnu is above and where it is below, which difference
    makes that order (the ``xnu-`` row that takes away the largest share of the gap)."""
    if e.empty:
        return ["(the ablation table lacks cubic or cubic-xnu)"]
    out = []
    for rtt, g in e.groupby("rtt_ms"):
        g = g.set_index("variant")
        x = g.loc["cubic-xnu"]
        marks = x["order"].split()
        cols = [c.split(" / ")[1] for c in _cells(t, int(rtt))]
        at = {m: [c for c, k in zip(cols, marks) if k == m] for m in "+-="}
        said = []
        if at["+"]:
            said.append(f"cubic-xnu above cubic at {', '.join(at['+'])}")
        if at["-"]:
            said.append(f"cubic above cubic-xnu at {', '.join(at['-'])}")
        if at["="]:
            said.append(f"level (no significant paired difference) at {', '.join(at['='])}")
        paper = f" (paper: {PAPER_ORDER[int(rtt)]})" if int(rtt) in PAPER_ORDER else ""
        parts = [f"At {rtt} ms{paper}: " + "; ".join(said) + f"; cubic-xnu {x['vs_cubic_pct']:+.1f} % on average."]
        minus = g[g["kind"] == "xnu-"].drop(index=["xnu-friendly", "xnu-fc"], errors="ignore")
        for sign, col, where in (("+", "share_above_pct", "above"), ("-", "share_below_pct", "below")):
            if not at[sign] or minus[col].isna().all():
                continue
            ranked = minus[col].sort_values(ascending=False)
            # Variants within 3 points of the best share it (e.g. two switches acting through
            # one mechanism).
            tops = [n for n, v in ranked.items() if v >= ranked.iloc[0] - 3]
            share = ranked.iloc[0]
            named = " and ".join(f"{n} ({_what(t, n)})" for n in tops)
            orders = ", ".join(minus.loc[n, "order"] for n in tops)
            txt = (f"Where cubic-xnu is {where}, {named} {'make' if len(tops) > 1 else 'makes'} the order: taking "
                   f"{'either' if len(tops) > 1 else 'it'} away removes {share:.0f} % of that gap (order against "
                   f"cubic then {orders})")
            rest = ranked.drop(index=tops)
            others = [f"{n} {v:.0f} %" for n, v in rest.items() if abs(v) >= 10]
            small = [f"{n} {v:+.0f} %" for n, v in rest.items() if abs(v) < 10]
            if others:
                txt += "; also " + ", ".join(others)
            if small:
                txt += "; under 10 % each: " + ", ".join(small)
            parts.append(txt + ".")
        if not (at["+"] or at["-"]) and len(minus):
            far = minus["vs_cubic_pct"].sub(x["vs_cubic_pct"]).abs().idxmax()
            parts.append(f"No difference is needed to explain a gap; the largest move is {far} "
                         f"({minus.loc[far, 'vs_cubic_pct']:+.1f} % vs cubic, order {minus.loc[far, 'order']}).")
        if "xnu-linux-form" in g.index:
            lf = g.loc["xnu-linux-form"]
            gone = f", {lf['gap_share_pct']:.0f} % of the gap gone" if at["+"] or at["-"] else ""
            parts.append(f"With all its cc differences taken away (xnu-linux-form) cubic-xnu is "
                         f"{lf['vs_cubic_pct']:+.1f} % from cubic (order {lf['order']}{gone}); what is left are the "
                         "differences no switch turns (windows in bytes, float K, a millisecond clock, at most "
                         "1 MSS per ACK, the route's base RTT).")
        plus = g[g["kind"] == "linux+"]
        if len(plus):
            parts.append("Linux with one XNU difference: " + ", ".join(
                f"{n} {r['vs_cubic_pct']:+.1f} % ({r['order']})" for n, r in plus.iterrows()) + ".")
        pairs = [f"{n} against {_PAIR[n]} {g.loc[n, 'vs_pair_pct']:+.1f} % ({g.loc[n, 'pair_order']})"
                 for n in _PAIR if n in g.index and isinstance(g.loc[n, "pair_order"], str) and g.loc[n, "pair_order"]]
        if pairs:
            parts.append("With the same receiver policy for both stacks, cubic-xnu against cubic: " + ", ".join(pairs)
                         + ".")
        refs = [f"{n} {g.loc[n, 'vs_cubic_pct']:+.1f} % ({g.loc[n, 'order']})" for n in ("xnu-friendly", "xnu-fc")
                if n in g.index]
        if refs:
            parts.append("Mechanisms both stacks share, removed from cubic-xnu: " + ", ".join(refs) + ".")
        ios = [f"{n} {g.loc[n, 'vs_cubic_pct']:+.1f} % ({g.loc[n, 'order']})" for n in ("ios9", "ios9-rfc")
               if n in g.index]
        if ios:
            parts.append("XNU's settings of the paper's iOS 9.3.2 era: " + ", ".join(ios) + ".")
        out.append(" ".join(parts))
    return out


def _what(t: pd.DataFrame, name: str) -> str:
    return str(t.set_index("variant").loc[name, "difference"])
