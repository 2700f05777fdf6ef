"""Reference predictions for the training-recipe parity test.

Reads a JSON job description (argv[1]): the training CSV path, the axis,
the scan ids to exclude, the recipe parameters (despike, savgol), the
regions, the component count and the test spectra. It preprocesses every
spectrum with the shipped helper module
examples/python/ramanserve_preprocessing.py (despike, snv) and SciPy's
savgol_filter, as a scikit-learn user of api/sklearn-import.md would,
keeps the points inside the regions, fits scikit-learn's
PLSRegression(n_components=A, scale=False) on the training rows left and
prints, as JSON, its predictions for the test spectra and the number of
points despike repaired over the training rows.
"""
import csv
import json
import os
import sys

import numpy as np
from scipy.signal import savgol_filter
from sklearn.cross_decomposition import PLSRegression

# The module, from its place in this tree; the tests leave no bytecode in it.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python"))
import ramanserve_preprocessing as rp  # noqa: E402


def preprocess(X, job, axis):
    """despike + savgol + snv over the rows of X; returns them and the
    number of points despike replaced."""
    ds, sg = job["despike"], job["savgol"]
    X, repaired = rp.despike_with_counts(X, ds["threshold"], ds["width"], wavenumbers=axis)
    X = savgol_filter(X, sg["window"], sg["polyorder"], deriv=sg["deriv"], delta=1.0, mode="interp", axis=1)
    return rp.snv(X), int(repaired.sum())


def read_training(job, n):
    """The rows of the CSV not excluded: spectra (n points) and labels."""
    exclude = set(job["exclude"])
    X, Y = [], []
    with open(job["csv"], newline="") as f:
        rows = csv.reader(f)
        next(rows)
        for row in rows:
            if row[0] not in exclude:
                X.append(row[1:1 + n])
                Y.append(row[1 + n:])
    return np.array(X, dtype=float), np.array(Y, dtype=float)


def main():
    with open(sys.argv[1]) as f:
        job = json.load(f)
    axis = np.array(job["axis"], dtype=float)
    keep = np.zeros(len(axis), dtype=bool)
    for lo, hi in job["regions"]:
        keep |= (axis >= lo) & (axis <= hi)
    X, Y = read_training(job, len(axis))
    X, repaired = preprocess(X, job, axis)
    pls = PLSRegression(n_components=job["components"], scale=False).fit(X[:, keep], Y)
    T, _ = preprocess(np.array(job["test"], dtype=float), job, axis)
    json.dump({"predictions": pls.predict(T[:, keep]).tolist(), "spikes_repaired": repaired, "rows": len(X),
               "points": int(keep.sum())}, sys.stdout)


if __name__ == "__main__":
    main()
