"""Reference statistics for evidence/reconcile, with NumPy only.

usage: stats_numpy.py CASES.json

CASES.json is {"cases": [{"name": ..., "predicted": [...], "lab": [...]}]}.
Prints a JSON list, one object per case: name, n, and rmsep, bias, slope,
intercept (null where undefined). Bias is the mean of predicted - lab; slope
and intercept are the least-squares fit lab = intercept + slope * predicted,
by numpy.polyfit (a scaled Vandermonde system solved by numpy.linalg.lstsq),
defined for n >= 2 with predictions that are not all equal.
"""
import json
import sys

import numpy as np


def reference(predicted, lab):
    x = np.asarray(predicted, dtype=np.float64)
    y = np.asarray(lab, dtype=np.float64)
    n = len(x)
    out = {"n": n, "rmsep": None, "bias": None, "slope": None, "intercept": None}
    if n == 0:
        return out
    d = x - y
    out["rmsep"] = float(np.sqrt(np.mean(d * d)))
    out["bias"] = float(np.mean(d))
    if n >= 2 and np.ptp(x) > 0:
        slope, intercept = np.polyfit(x, y, 1)
        out["slope"] = float(slope)
        out["intercept"] = float(intercept)
    return out


def main():
    with open(sys.argv[1]) as f:
        cases = json.load(f)["cases"]
    results = []
    for case in cases:
        r = reference(case["predicted"], case["lab"])
        r["name"] = case["name"]
        results.append(r)
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
