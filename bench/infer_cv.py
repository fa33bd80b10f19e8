"""Grouped cross-validation of the trace classifier on its training table: how every choice in
``cclab.infer.classify`` (features, forest settings, prior weight, "unknown" rule) was made,
never touching the held-out evaluation grid.

Folds are grouped by path (a path's traces of every algorithm are held out together), so a
fold's traces come from paths the model has not seen, as the held-out grid's do. Each fold runs
the shipped decision rule: standardised features, the random forest, the prior, and "unknown"
when the nearest training trace is farther than 1.5 x the fit set's 99th-percentile
nearest-neighbour distance or the best class gets under the minimum vote. An "unknown" counts
as wrong.

    python bench/infer_cv.py                      # the shipped settings
    python bench/infer_cv.py --compare features   # shipped features vs the set before ai/drop
    python bench/infer_cv.py --compare prior      # prior weights 1-6 (= bench/infer_prior_cv.py)
    python bench/infer_cv.py --compare vote       # minimum vote 0-0.4
    python bench/infer_cv.py --compare forest     # min_samples_leaf, max_features
    python bench/infer_cv.py --table other.csv    # another training table (`cclab infer train --model`)
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import GroupKFold
from sklearn.neighbors import NearestNeighbors

from cclab.infer import classify
from cclab.infer.features import FEATURES

DEPLOYED = ["reno", "cubic", "bbr"]
#: The feature set before the growth-per-RTT and first-drop features (commit f258a70).
OLD_FEATURES = [f for f in FEATURES if f not in ("ai_per_rtt", "ai_rel", "drop_first")]


def load(table: str | None = None) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """(training table, class labels, path of each row)."""
    labels = classify._labels()
    tr = pd.read_csv(table or classify.MODEL_PATH)
    y = tr["cc"].map(lambda c: labels.get(c, c)).to_numpy()
    paths = tr[["rtt_ms", "rate_mbps", "loss", "buffer_bdp"]].astype(str).agg("-".join, axis=1).to_numpy()
    return tr, y, paths


def cv_scores(
    tr: pd.DataFrame, y: np.ndarray, paths: np.ndarray, feats: list[str], forest: dict[str, Any] | None = None,
    folds: int = 5,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Out-of-fold (class votes, nearest-neighbour distance, the fold's distance threshold)."""
    x = tr[feats].to_numpy(float)
    classes = np.array(sorted(set(y)))
    proba = np.zeros((len(tr), len(classes)))
    dist = np.zeros(len(tr))
    thresh = np.zeros(len(tr))
    for fit, test in GroupKFold(folds).split(x, y, paths):
        mu, sd = x[fit].mean(axis=0), x[fit].std(axis=0)
        sd[sd == 0] = 1.0
        zf, zt = (x[fit] - mu) / sd, (x[test] - mu) / sd
        rf = RandomForestClassifier(**({"n_estimators": 300, "random_state": 0} | (forest or {}))).fit(zf, y[fit])
        cols = [list(classes).index(c) for c in rf.classes_]
        proba[np.ix_(test, cols)] = rf.predict_proba(zt)
        nn = NearestNeighbors(n_neighbors=2).fit(zf)
        thresh[test] = 1.5 * float(np.quantile(nn.kneighbors(zf)[0][:, 1], 0.99))
        dist[test] = nn.kneighbors(zt, n_neighbors=1)[0][:, 0]
    return proba, dist, thresh


def decide(y: np.ndarray, proba: np.ndarray, dist: np.ndarray, thresh: np.ndarray, weight: float,
           min_vote: float) -> np.ndarray:
    """The answers under a deployment weight and minimum vote (as ``classify._decide``)."""
    classes = np.array(sorted(set(y)))
    w = np.array([weight if c in DEPLOYED else 1.0 for c in classes])
    q = proba * w
    q = q / q.sum(axis=1, keepdims=True)
    guess = classes[q.argmax(axis=1)].astype(object)
    guess[(q.max(axis=1) < min_vote) | (dist > thresh)] = "unknown"
    return guess


def summary(y: np.ndarray, guess: np.ndarray) -> dict[str, float]:
    per = {a: float((guess[y == a] == a).mean()) for a in DEPLOYED}
    return per | {"min3": min(per.values()), "all": float((guess == y).mean()),
                  "unknown": float((guess == "unknown").mean())}


def _row(name: str, s: dict[str, float]) -> str:
    return f"{name:<34} " + " ".join(f"{s[k]:>7.1%}" for k in (*DEPLOYED, "min3", "all", "unknown"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--compare", choices=["none", "features", "prior", "vote", "forest"], default="none")
    ap.add_argument("--table", default=None)
    a = ap.parse_args()
    tr, y, paths = load(a.table)
    weight, vote = classify.DEPLOYMENT_WEIGHT, classify._MIN_VOTE
    print(f"{len(tr)} training traces, {len(set(paths))} paths, 5 folds grouped by path; share named right "
          "(unknown = wrong)")
    print(f"{'':<34} " + " ".join(f"{k:>7}" for k in (*DEPLOYED, "min3", "all", "unknown")))
    base = cv_scores(tr, y, paths, FEATURES)
    if a.compare == "none":
        print(_row(f"shipped (weight {weight:g}, vote {vote:g})", summary(y, decide(y, *base, weight, vote))))
    elif a.compare == "features":
        old = cv_scores(tr, y, paths, OLD_FEATURES)
        for name, s in (("features before ai/drop_first", old), ("shipped features", base)):
            for wgt in (1.0, weight):
                print(_row(f"{name}, weight {wgt:g}", summary(y, decide(y, *s, wgt, vote))))
    elif a.compare == "prior":
        for wgt in (1.0, 1.5, 2.0, 3.0, 4.0, 6.0):
            print(_row(f"weight {wgt:g}", summary(y, decide(y, *base, wgt, vote))))
    elif a.compare == "vote":
        for v in (0.0, 0.2, 0.25, 0.3, 0.35, 0.4):
            print(_row(f"min vote {v:g}", summary(y, decide(y, *base, weight, v))))
    else:
        for forest in ({}, {"min_samples_leaf": 2}, {"min_samples_leaf": 4}, {"max_features": 0.5},
                       {"max_features": None}, {"n_estimators": 600}):
            s = cv_scores(tr, y, paths, FEATURES, forest)
            print(_row(f"forest {forest or 'default'}", summary(y, decide(y, *s, weight, vote))))


if __name__ == "__main__":
    main()
