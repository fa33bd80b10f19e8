"""Which congestion control made this trace? A classifier trained on simulated traces.

Training (``cclab infer train``) simulates every algorithm cclab has over a grid of 180 paths (RTT
10-600 ms, rate 1-100 Mbit/s, random loss 0-1e-2, buffer 0.25-4 BDP), 60 s each, sampled every
10 ms like TCP_INFO, and stores the features of each trace (``features.py``) in the package
(``model/features.csv``). Loading fits a random forest on that table with a fixed seed, so the
model is the same everywhere and no pickled object crosses library versions. Presets are labelled
with their base algorithm (``cubic-ios`` is CUBIC).

The evaluation grid uses other values on every axis (RTT 20/60/200/450 ms, 3 and 30 Mbit/s,
loss 0/3e-4/3e-3, buffer 0.5 and 2 BDP), so it never repeats a training path.

``candidates`` narrows the answer to the algorithms a user knows are possible (a stock Linux
offers reno, cubic and bbr): the forest is then fitted on those classes only. Among all fourteen
algorithms some are near-twins on cwnd alone (Reno, Veno, Westwood+ and Vegas behave alike when
random loss, not queueing, ends their epochs), which the confusion matrix shows.

Prior. The forest's votes are a posterior under equal class frequencies. Where traces of two
algorithms are the same (Reno and Vegas when random loss ends every epoch before a queue forms,
so Vegas never acts; Linux and Apple CUBIC before their first loss), that is a coin toss. The
default prior (``DEPLOYMENT_PRIOR``) weighs the algorithms that ship as defaults (Reno, CUBIC,
BBR) ``DEPLOYMENT_WEIGHT`` times the others, so such a tie goes to the common algorithm and the
other is the runner-up; ``prior="uniform"`` (``--prior uniform``) turns it off. The weight was
chosen by cross-validation on the training grid (grouped by path), never on the held-out grid.

"unknown": a trace whose features are far from every training trace (standardised distance to the
nearest one above the training set's own 99th percentile, times 1.5), or whose best class gets
under 30 % of the (prior-weighted) votes.

A trace without RTTs (a cwnd-only CSV, a pcap without a usable RTT) is judged by a forest fitted
without the features it cannot give (``PER_RTT_FEATURES``: growth per smoothed RTT).

Every choice here (features, forest settings, prior weight, the vote threshold's cost) was made by
cross-validation on the training table grouped by path: ``bench/infer_cv.py``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Union

import numpy as np
import pandas as pd

from .features import FEATURES, features
from .io import load_trace

__all__ = [
    "Identification",
    "identify",
    "train",
    "evaluate",
    "training_conditions",
    "evaluation_conditions",
    "MODEL_PATH",
    "DEPLOYMENT_PRIOR",
    "per_class",
]

MODEL_PATH = Path(__file__).with_name("model") / "features.csv"

TRAIN_AXES = {
    "rtt_ms": [10, 30, 100, 300, 600],
    "rate_mbps": [1, 10, 100],
    "loss": [0.0, 1e-4, 1e-3, 1e-2],
    "buffer_bdp": [0.25, 1.0, 4.0],
}
EVAL_AXES = {
    "rtt_ms": [20, 60, 200, 450],
    "rate_mbps": [3, 30],
    "loss": [0.0, 3e-4, 3e-3],
    "buffer_bdp": [0.5, 2.0],
}
#: Weight of the default-deployed algorithms against the rest (see the module docstring).
DEPLOYMENT_WEIGHT = 2.0
DEPLOYMENT_PRIOR: dict[str, float] = {"reno": DEPLOYMENT_WEIGHT, "cubic": DEPLOYMENT_WEIGHT, "bbr": DEPLOYMENT_WEIGHT}
#: A prior: "deployment" (the default), "uniform", or weights by class (absent classes weigh 1).
Prior = Union[str, Mapping[str, float], None]
DURATION_S = 60.0
MSS_BYTES = 1448
_MIN_VOTE = 0.3


@dataclass
class Identification:
    """The classifier's answer."""

    algorithm: str
    confidence: float
    runner_up: str | None
    scores: dict[str, float] = field(default_factory=dict)
    nearest_distance: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "algorithm": self.algorithm,
            "confidence": self.confidence,
            "runner_up": self.runner_up,
            "scores": self.scores,
            "nearest_distance": self.nearest_distance,
        }


def _grid(axes: dict[str, list[float]]) -> list[dict[str, float]]:
    keys = list(axes)
    return [dict(zip(keys, v)) for v in itertools.product(*(axes[k] for k in keys))]


def training_conditions(per_algorithm: int | None = None, seed: int = 0) -> list[dict[str, float]]:
    """The training grid (180 paths), or a fixed sample of ``per_algorithm`` of it (the same
    paths for every algorithm)."""
    g = _grid(TRAIN_AXES)
    if per_algorithm is None or per_algorithm >= len(g):
        return g
    idx = np.random.default_rng(seed).choice(len(g), size=min(per_algorithm, len(g)), replace=False)
    return [g[i] for i in sorted(idx)]


def evaluation_conditions(n: int | None = None, seed: int = 1) -> list[dict[str, float]]:
    """The evaluation grid (disjoint values from training), or a fixed sample of n of it."""
    g = _grid(EVAL_AXES)
    if n is None or n >= len(g):
        return g
    idx = np.random.default_rng(seed).choice(len(g), size=n, replace=False)
    return [g[i] for i in sorted(idx)]


#: The senders' tcp_wmem on the grid: a send buffer that never binds. With Linux's default 4 MiB
#: cap a flow holds at most ~1800 segments, so on the grid's long fat paths (100 Mbit/s, 600 ms)
#: every algorithm's window would sit flat at the buffer and carry no signature of it; a
#: measurement host, and a server worth identifying, raises it (docs/scenario.md, "sndbuf").
GRID_TCP_WMEM_BYTES = [4096, 16384, 1 << 28]


def scenario_for(cc: str, cond: dict[str, float], seed: int = 1) -> dict[str, Any]:
    """The simulated path of one grid point."""
    rate_bps = cond["rate_mbps"] * 1e6
    bdp_pkts = rate_bps * cond["rtt_ms"] / 1000 / 8 / 1500
    return {
        "name": f"{cc}-{cond['rtt_ms']}ms-{cond['rate_mbps']}M-{cond['loss']}-{cond['buffer_bdp']}bdp",
        "duration_s": DURATION_S,
        "seed": seed,
        "sim": {"trace": "interval", "trace_interval_ms": 10},
        "host": {"tcp_wmem_bytes": GRID_TCP_WMEM_BYTES},
        "bottleneck": {
            "rate_bps": rate_bps,
            "delay_ms": cond["rtt_ms"] / 2,
            "queue_pkts": max(4, int(round(cond["buffer_bdp"] * bdp_pkts))),
            "loss": cond["loss"],
        },
        "flows": [{"cc": cc, "mss_bytes": MSS_BYTES}],
    }


def _labels() -> dict[str, str]:
    """Every single-path algorithm and preset the simulator has -> the class it belongs to (its
    base). The coupled multipath algorithms (lia, olia, balia) are left out: on one path each is
    Reno, so no single-path trace can tell them apart from it."""
    from .. import presets

    return {a["name"]: a["base"] for a in presets.algorithms() if not a["source"].startswith("multipath-tcp.org")}


def _simulate_features(job: tuple[str, dict[str, float], int]) -> dict[str, Any]:
    from ..sim import simulate

    cc, cond, seed = job
    r = simulate(scenario_for(cc, cond, seed))
    f = features(load_trace(r.flows))
    return {"cc": cc, **cond, "seed": seed, **dict(zip(FEATURES, f))}


def _run(jobs: list[tuple[str, dict[str, float], int]], workers: int, progress: Callable[[int, int], None] | None) -> pd.DataFrame:
    rows = []
    if workers <= 1:
        for i, j in enumerate(jobs):
            rows.append(_simulate_features(j))
            if progress:
                progress(i + 1, len(jobs))
    else:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=workers) as ex:
            for i, row in enumerate(ex.map(_simulate_features, jobs, chunksize=2)):
                rows.append(row)
                if progress:
                    progress(i + 1, len(jobs))
    return pd.DataFrame(rows)


def train(
    path: Path | str = MODEL_PATH,
    per_algorithm: int | None = None,
    workers: int = 2,
    algorithms: Iterable[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Simulate the training grid for every algorithm and write the feature table to ``path``."""
    algos = list(algorithms) if algorithms is not None else list(_labels())
    jobs = [(cc, cond, 1) for cc in algos for cond in training_conditions(per_algorithm)]
    df = _run(jobs, workers, progress)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(path, index=False, float_format="%.6g")
    _model.cache_clear()
    return df


#: Features measured per RTT of the moment (srtt): a trace without RTTs cannot give them, so the
#: model for such a trace is fitted without them (with an assumed RTT they would be on an
#: arbitrary scale, and a cwnd-only sawtooth would look like Hybla).
PER_RTT_FEATURES = ("ai_per_rtt", "ai_rel")


@lru_cache(maxsize=8)
def _model(
    path: str = str(MODEL_PATH), candidates: tuple[str, ...] | None = None, without: tuple[str, ...] = ()
) -> tuple[Any, np.ndarray, np.ndarray, float, list[Any], np.ndarray]:
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.neighbors import NearestNeighbors

    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no trained model; run `cclab infer train` first")
    df = pd.read_csv(p)
    labels = _labels()
    y = df["cc"].map(lambda c: labels.get(c, c)).to_numpy()
    if candidates is not None:
        unknown = sorted(set(candidates) - set(y))
        if unknown:
            raise ValueError(f"candidates: {', '.join(unknown)} not in the model; it knows {', '.join(sorted(set(y)))}")
        keep = np.isin(y, list(candidates))
        df, y = df[keep], y[keep]
    used = [f for f in FEATURES if f not in without]
    x = df[used].to_numpy(float)
    mu, sd = x.mean(axis=0), x.std(axis=0)
    sd[sd == 0] = 1.0
    z = (x - mu) / sd
    rf = RandomForestClassifier(n_estimators=300, random_state=0, min_samples_leaf=1)
    rf.fit(z, y)
    nn = NearestNeighbors(n_neighbors=2).fit(z)
    d, _ = nn.kneighbors(z)
    thresh = 1.5 * float(np.quantile(d[:, 1], 0.99))
    return (rf, mu, sd, thresh, [nn], np.array([FEATURES.index(f) for f in used]))


def _weights(prior: Prior, classes: list[str]) -> np.ndarray:
    """The prior as a weight per class (normalised so the weights average 1)."""
    if prior is None or prior == "uniform":
        w = np.ones(len(classes))
    else:
        table: Mapping[str, float]
        if prior == "deployment":
            table = DEPLOYMENT_PRIOR
        elif isinstance(prior, str):
            raise ValueError(f"prior: {prior!r} is not accepted; use 'deployment', 'uniform' or weights by class")
        else:
            table = prior
        bad = [k for k, v in table.items() if not v > 0]
        if bad:
            raise ValueError(f"prior: weights must be positive ({', '.join(bad)})")
        w = np.array([float(table.get(c, 1.0)) for c in classes])
    return w / w.mean()


def _decide(model: tuple[Any, np.ndarray, np.ndarray, float, list[Any], np.ndarray], f: np.ndarray,
            prior: Prior) -> Identification:
    """The answer for one feature vector (all FEATURES; the model takes those it was fitted on)."""
    rf, mu, sd, thresh, nn, used = model
    z = ((f[used] - mu) / sd).reshape(1, -1)
    classes = [str(c) for c in rf.classes_]
    post = rf.predict_proba(z)[0] * _weights(prior, classes)
    post = post / post.sum()
    order = np.argsort(-post, kind="stable")
    scores = {classes[i]: float(post[i]) for i in order}
    dist = float(nn[0].kneighbors(z, n_neighbors=1)[0][0, 0])
    best, conf = classes[order[0]], float(post[order[0]])
    runner = classes[order[1]] if len(order) > 1 else None
    if dist > thresh or conf < _MIN_VOTE:
        return Identification("unknown", 1.0 - conf if dist <= thresh else min(1.0, dist / (2 * thresh)),
                              best, scores, dist)
    return Identification(best, conf, runner, scores, dist)


#: Samples a trace needs before :func:`identify` names an algorithm: fewer show no shape.
MIN_SAMPLES = 50


def identify(
    trace: Any,
    candidates: Iterable[str] | None = None,
    model_path: Path | str = MODEL_PATH,
    prior: Prior = "deployment",
) -> Identification:
    """Name the algorithm behind ``trace`` (anything ``load_trace`` reads). ``candidates``
    limits the answer to some algorithms (e.g. reno, cubic, bbr: what a stock Linux offers);
    by default every algorithm cclab simulates is a candidate. ``prior``: "deployment" (ties go
    to Reno, CUBIC or BBR), "uniform", or a weight per algorithm."""
    df = load_trace(trace)
    if len(df) < MIN_SAMPLES:
        raise ValueError(f"too short to judge: {len(df)} samples; the classifier needs at least {MIN_SAMPLES} "
                         "(a trace of a few seconds sampled every 10 ms or per ACK)")
    f = features(df)
    without = () if f[FEATURES.index("has_rtt")] else PER_RTT_FEATURES
    return _decide(_model(str(model_path), _cands(candidates), without), f, prior)


def _cands(candidates: Iterable[str] | None) -> tuple[str, ...] | None:
    return None if candidates is None else tuple(sorted(set(candidates)))


def evaluate(
    conditions: list[dict[str, float]] | None = None,
    algorithms: Iterable[str] | None = None,
    workers: int = 2,
    model_path: Path | str = MODEL_PATH,
    progress: Callable[[int, int], None] | None = None,
    candidates: Iterable[str] | None = None,
    prior: Prior = "deployment",
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Identify simulated traces of the evaluation grid; returns (per-trace results with their
    features, confusion matrix with true classes as rows and answers, including "unknown", as
    columns)."""
    labels = _labels()
    algos = list(algorithms) if algorithms is not None else [a for a, b in labels.items() if a == b]
    conds = conditions if conditions is not None else evaluation_conditions()
    jobs = [(cc, cond, 2) for cc in algos for cond in conds]
    feats = _run(jobs, workers, progress)
    model = _model(str(model_path), _cands(candidates))
    rows = []
    for _, r in feats.iterrows():
        ident = _decide(model, r[FEATURES].to_numpy(float), prior)
        rows.append({**{k: r[k] for k in ("cc", "rtt_ms", "rate_mbps", "loss", "buffer_bdp")},
                     "true": labels.get(r["cc"], r["cc"]), "guess": ident.algorithm,
                     "confidence": ident.confidence, "runner_up": ident.runner_up,
                     **{f: r[f] for f in FEATURES}})
    res = pd.DataFrame(rows)
    cm = pd.crosstab(res["true"], res["guess"])
    return res, cm


def per_class(res: pd.DataFrame) -> pd.DataFrame:
    """Per true class: traces, share named right, and the most common wrong answer."""
    rows = []
    for k, g in res.groupby("true"):
        wrong = g.loc[g["guess"] != k, "guess"]
        rows.append({"true": k, "traces": len(g), "correct": float((g["guess"] == k).mean()),
                     "most_confused_with": wrong.mode().iloc[0] if len(wrong) else ""})
    return pd.DataFrame(rows)
