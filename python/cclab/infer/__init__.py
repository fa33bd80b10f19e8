"""Trace inference: which congestion control a trace shows, and CUBIC's parameters.

>>> from cclab import infer
>>> est = infer.estimate_cubic("traces.parquet")            # doctest: +SKIP
>>> est.c.value, est.beta.value                               # doctest: +SKIP
>>> infer.identify("tcpinfo.csv").algorithm                   # doctest: +SKIP
"""

from __future__ import annotations

from .classify import Identification, evaluate, identify, train
from .cubic import CubicEstimate, Estimate, cubic_from_table, estimate_cubic
from .cycles import Cycle, find_cycles
from .features import FEATURES, features, kato_points
from .io import FORMATS, InputError, load_trace, per_rtt
from .plots import plot_cubic_fit, plot_kato

__all__ = [
    "load_trace",
    "per_rtt",
    "FORMATS",
    "InputError",
    "find_cycles",
    "Cycle",
    "estimate_cubic",
    "cubic_from_table",
    "CubicEstimate",
    "Estimate",
    "features",
    "kato_points",
    "FEATURES",
    "identify",
    "Identification",
    "train",
    "evaluate",
    "plot_cubic_fit",
    "plot_kato",
]
