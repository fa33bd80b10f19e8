"""How the classifier's deployment prior weight was chosen: 5-fold cross-validation on the
shipped training table, folds grouped by path (a path's traces of every algorithm are held out
together), never touching the held-out evaluation grid.

    python bench/infer_prior_cv.py        # per weight: share of Reno, CUBIC, BBR named right; overall
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import GroupKFold

from cclab.infer import classify
from cclab.infer.features import FEATURES

WEIGHTS = [1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
DEPLOYED = ["reno", "cubic", "bbr"]


def main() -> None:
    labels = classify._labels()
    tr = pd.read_csv(classify.MODEL_PATH)
    y = tr["cc"].map(lambda c: labels.get(c, c)).to_numpy()
    x = tr[FEATURES].to_numpy(float)
    paths = tr[["rtt_ms", "rate_mbps", "loss", "buffer_bdp"]].astype(str).agg("-".join, axis=1)
    classes = np.array(sorted(set(y)))
    proba = np.zeros((len(tr), len(classes)))
    for fit, test in GroupKFold(5).split(x, y, paths):
        rf = RandomForestClassifier(n_estimators=300, random_state=0).fit(x[fit], y[fit])
        cols = [list(classes).index(c) for c in rf.classes_]
        proba[np.ix_(test, cols)] = rf.predict_proba(x[test])
    print(f"{'weight':>6} " + " ".join(f"{a:>6}" for a in DEPLOYED) + f" {'all':>6}")
    for w in WEIGHTS:
        q = proba * np.array([w if c in DEPLOYED else 1.0 for c in classes])
        guess = classes[q.argmax(axis=1)]
        per = [float((guess[y == a] == a).mean()) for a in DEPLOYED]
        print(f"{w:>6g} " + " ".join(f"{p:>6.1%}" for p in per) + f" {float((guess == y).mean()):>6.1%}")


if __name__ == "__main__":
    main()
