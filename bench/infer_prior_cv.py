"""How the classifier's deployment prior weight was chosen: 5-fold cross-validation on the
shipped training table, folds grouped by path, never touching the held-out evaluation grid.
The same as ``python bench/infer_cv.py --compare prior`` (see there for the decision rule).

    python bench/infer_prior_cv.py        # per weight: share of Reno, CUBIC, BBR named right; overall
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import infer_cv  # noqa: E402

if __name__ == "__main__":
    sys.argv[1:] = ["--compare", "prior", *sys.argv[1:]]
    infer_cv.main()
