"""The S1 fairness ablation: terminals that start one after another.

The paper's middleware acts when "another terminal sharing the AP starts communicating" and the
RTT jumps (its section 6.1), so its terminals joined transfers already running; when and how far
apart they started is not published. With every terminal starting at once our cell shares fairly
without middleware (Jain's index near 1) and the paper's fairness gains cannot appear. This part
starts terminal k at k times ``start_stagger_s`` and measures, per rate control, class and N,
Jain's index and the total without middleware and with the improved table: the fairness gain
the middleware brings as a function of the start schedule.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from .s1_figures import per_rate_control

__all__ = ["stagger_gains", "stagger_figure"]

_KEYS = ["rates", "terminal", "n_terminals", "start_stagger_s"]


def stagger_gains(stagger: pd.DataFrame) -> pd.DataFrame:
    """Per rate control, class, N and start stagger: mean Jain's index and total off and improved,
    and the improved table's relative gain in each. ``stagger``: the part's aggregate (means)."""
    if stagger is None or stagger.empty:
        return pd.DataFrame()
    rows = []
    for keys, g in stagger.groupby(_KEYS, sort=True):
        v = g.set_index("variant")
        if not {"off", "improved"} <= set(v.index):
            continue
        row = dict(zip(_KEYS, keys))
        for m in ("jain", "total_mbps"):
            off, imp = float(v.loc["off", f"{m}_mean"]), float(v.loc["improved", f"{m}_mean"])
            row |= {f"{m}_off": off, f"{m}_improved": imp, f"{m}_gain": imp / off - 1}
        rows.append(row)
    return pd.DataFrame(rows)


def stagger_figure(gains: pd.DataFrame, stem: Path) -> Path | None:
    """Jain's index against the start stagger, middleware off (dashed) and improved (solid), one
    panel per rate control, a colour per class and N."""
    if gains is None or gains.empty:
        return None

    def draw(ax: Any, r: str) -> None:
        for i, ((terminal, n), g) in enumerate(gains[gains["rates"] == r].groupby(["terminal", "n_terminals"])):
            g = g.sort_values("start_stagger_s")
            ax.plot(g["start_stagger_s"], g["jain_off"], ls="--", marker="o", ms=4, color=f"C{i}")
            ax.plot(g["start_stagger_s"], g["jain_improved"], ls="-", marker="s", ms=4, color=f"C{i}",
                    label=f"{terminal}s, N = {n}")
        ax.set_ylim(top=1.01)

    return per_rate_control(list(dict.fromkeys(gains["rates"])), draw,
                            "start stagger: terminal k starts at k times this (s)", "Jain's fairness index",
                            "S1 fairness ablation: Jain's index, middleware off (dashed) and improved (solid), "
                            "against the start schedule", stem)


def beside_the_paper(compare: pd.DataFrame, gains: pd.DataFrame) -> pd.DataFrame:
    """``compare`` (the paper's gains beside ours) with a column per rate control and non-zero
    stagger, ``cclab_<rates>_stagger_<s>s``: the same gains measured with staggered starts."""
    if compare is None or compare.empty or gains is None or gains.empty:
        return compare
    out = compare.copy()
    staggered = gains[gains["start_stagger_s"] > 0]
    for (rates, s), g in staggered.groupby(["rates", "start_stagger_s"], sort=False):
        g = g.set_index(["terminal", "n_terminals"])
        col = [float(g.loc[(t, n), "jain_gain" if what.startswith("fairness") else "total_mbps_gain"])
               if (t, n) in g.index else float("nan")
               for t, n, what in zip(out["terminal"], out["n_terminals"], out["result"])]
        out[f"cclab_{rates}_stagger_{s:g}s"] = col
    return out
