"""The paper's published qualitative S0 results beside ours: who is faster at 25/100/550 ms (and
the crossover near 1e-4 at 100 ms), and the ranges of c and b that method C found. "iOS" is
either of our two models of it: ``cubic-ios`` (the paper's measured constants on Linux's code)
and ``cubic-xnu`` (Apple's own CUBIC, XNU's ``tcp_cubic.c``)."""

from __future__ import annotations

import pandas as pd

__all__ = ["PAPER", "compare_with_paper", "winners"]

STACKS = {"cubic": "Linux CUBIC", "cubic-ios": "iOS-like CUBIC (beta 0.8, C 0.25)",
          "cubic-xnu": "Apple's CUBIC (XNU tcp_cubic.c)"}
#: The stacks that stand for iOS against Linux's ``cubic``.
IOS_STACKS = ("cubic-ios", "cubic-xnu")
RTTS_MS = (25, 100, 550)

#: The paper's published results (qualitative), for the comparison table.
PAPER = {
    "25ms": "iOS above Linux at every error rate",
    "100ms": "iOS above Linux below ~1e-4, Linux above iOS from ~1e-4 on (crossover near 1e-4)",
    "550ms": "Linux above iOS",
    "crossover_100ms": "near 1e-4 (iOS ahead below, Linux ahead above)",
    "c_linux": (0.37, 0.40),
    "c_ios": (0.20, 0.28),
    "b_linux": (2.6, 3.0),
    "b_ios": (3.5, 4.7),
    "b_vs_inv_c_linux": "< 20 %",
    "b_vs_inv_c_ios": "< 8 %",
    "beta_linux": "~0.70",
    "beta_ios": "~0.80",
}


def winners(a: pd.DataFrame, rtt: int, ios: str = "cubic-ios") -> tuple[str, list[str]]:
    """Who is faster at each error rate, Linux ``cubic`` or the iOS model ``ios``: "iOS",
    "Linux", or "tie" when the 95 % intervals overlap (or the means are within 0.5 %, as on a
    lossless path where both fill the link)."""
    sub = a[a["rtt_ms"] == rtt].set_index(["loss", "cc"])
    verdict, marks = [], []
    for loss in sorted({i[0] for i in sub.index}):
        try:
            li, io = sub.loc[(loss, "cubic")], sub.loc[(loss, ios)]
        except KeyError:
            continue
        lm, im = li["goodput_mbps_mean"], io["goodput_mbps_mean"]
        overlap = not (li["goodput_mbps_ci95_high"] < io["goodput_mbps_ci95_low"]
                       or io["goodput_mbps_ci95_high"] < li["goodput_mbps_ci95_low"])
        if abs(lm - im) <= 0.005 * max(lm, im) or overlap:
            w = "tie"
        else:
            w = "iOS" if im > lm else "Linux"
        marks.append(w)
        verdict.append(f"{loss:g}: {w}")
    wins = {w for w in marks if w != "tie"}
    if not wins:
        s = "no significant difference at any error rate"
    elif wins == {"iOS"}:
        s = "iOS above Linux where they differ (" + ", ".join(v for v in verdict if v.endswith("iOS")) + ")"
    elif wins == {"Linux"}:
        s = "Linux above iOS where they differ (" + ", ".join(v for v in verdict if v.endswith("Linux")) + ")"
    else:
        s = "mixed: " + "; ".join(v for v in verdict if not v.endswith("tie"))
    return s, verdict


def crossover(verdict: list[str]) -> str:
    """Where the faster stack changes from iOS (low error rates) to Linux (high ones), from the
    per-error-rate verdicts of :func:`winners` ("<loss>: iOS|Linux|tie")."""
    marks = [(float(v.split(": ")[0]), v.split(": ")[1]) for v in verdict]
    ios = [x for x, w in marks if w == "iOS"]
    linux = [x for x, w in marks if w == "Linux"]
    if ios and linux and max(ios) < min(linux):
        return f"between {max(ios):g} and {min(linux):g} (iOS ahead up to {max(ios):g}, Linux from {min(linux):g})"
    if ios and linux:
        return "no clean crossover (the order changes more than once)"
    return "none (" + ("only iOS ahead" if ios else "only Linux ahead" if linux else "no significant difference") + ")"


def compare_with_paper(a: pd.DataFrame, c: pd.DataFrame) -> pd.DataFrame:
    """The paper's published qualitative results beside ours."""
    rows = []
    present = set(a["cc"]) if len(a) else set()
    for ios in IOS_STACKS:
        if ios not in present and len(a):
            continue
        for rtt in RTTS_MS:
            ours, detail = winners(a, rtt, ios) if len(a) else ("(no data)", [])
            rows.append({"result": f"throughput order at {rtt} ms, cubic vs {ios}", "paper": PAPER[f"{rtt}ms"],
                         "cclab": ours, "detail": "; ".join(detail)})
            if rtt == 100:
                rows.append({"result": f"crossover at 100 ms, cubic vs {ios}", "paper": PAPER["crossover_100ms"],
                             "cclab": crossover(detail) if detail else "(no data)", "detail": ""})
    for stack, key in (("cubic", "linux"), ("cubic-ios", "ios"), ("cubic-xnu", "ios")):
        sub = c[c["stack"] == stack] if len(c) else c
        for p in ("c", "b"):
            lo, hi = PAPER[f"{p}_{key}"]
            if len(sub):
                v = sub[p].dropna()
                ours = f"{v.min():.3f}-{v.max():.3f} (median {v.median():.3f})"
            else:
                ours = "(no usable cycles)"
            rows.append({"result": f"{p} of {STACKS[stack]}", "paper": f"{lo}-{hi}", "cclab": ours, "detail": ""})
        if len(sub) and {"b", "inv_c"} <= set(sub):
            d = ((sub["b"] - sub["inv_c"]).abs() / sub["inv_c"]).dropna() * 100
            ours = f"at most {d.max():.0f} % (median {d.median():.0f} %)" if len(d) else "(no usable cycles)"
        else:
            ours = "(no usable cycles)"
        rows.append({"result": f"b vs 1/c of {STACKS[stack]}", "paper": PAPER[f"b_vs_inv_c_{key}"], "cclab": ours,
                     "detail": "|b - 1/c| / (1/c) per cycle, eq. (6)"})
        if len(sub) and "beta" in sub and sub["beta"].notna().any():
            v = sub["beta"].dropna()
            ours = f"{v.min():.3f}-{v.max():.3f} (median {v.median():.3f})"
        else:
            ours = "(no usable cycles)"
        rows.append({"result": f"W'/Wmax of {STACKS[stack]}", "paper": PAPER[f"beta_{key}"], "cclab": ours,
                     "detail": "reduction ratio from Tables 3-4"})
    return pd.DataFrame(rows)
