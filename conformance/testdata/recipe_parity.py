"""Reference predictions for the training-recipe parity test.

Reads a JSON job description (argv[1]): the training CSV path, the axis,
the scan ids to exclude, the recipe parameters (despike, savgol), the
regions, the component count and the test spectra. It preprocesses every
spectrum with the steps as the contract describes them (api/openapi.yaml,
DespikeStep, SavgolStep, SnvStep), written here with NumPy and SciPy,
keeps the points inside the regions, fits scikit-learn's
PLSRegression(n_components=A, scale=False) on the training rows left and
prints, as JSON, its predictions for the test spectra and the number of
points despike repaired over the training rows.
"""
import csv
import json
import sys

import numpy as np
from scipy.signal import savgol_filter
from sklearn.cross_decomposition import PLSRegression


def despike(x, axis, threshold, width):
    """Whitaker & Hayes: modified z-score of the first differences."""
    n = len(x)
    d = np.diff(x)
    m = n - 1
    if m < 3:
        return x, 0
    med = np.median(d)
    dev = np.abs(d - med)
    mad = np.median(dev)
    if mad > 0:
        cut = threshold * mad / 0.6745
    elif dev.sum() > 0:
        cut = threshold * 1.253314 * dev.sum() / m
    else:
        return x, 0
    mask = np.zeros(n, dtype=bool)
    for i in np.nonzero(dev > cut)[0]:
        mask[max(i + 1 - width, 0):min(i + 1 + width, n - 1) + 1] = True
    if not mask.any() or mask.all():
        return x, 0
    y = x.copy()
    a = 0
    while a < n:
        if not mask[a]:
            a += 1
            continue
        b = a
        while b + 1 < n and mask[b + 1]:
            b += 1
        left, right = a - 1, b + 1
        if left >= 0 and right < n:
            y[a:b + 1] = np.interp(axis[a:b + 1], [axis[left], axis[right]], [x[left], x[right]])
        elif left >= 0:
            y[a:b + 1] = x[left]
        else:
            y[a:b + 1] = x[right]
        a = b + 1
    return y, int(mask.sum())


def snv(x):
    sd = x.std()
    if sd == 0:
        return np.zeros_like(x)
    return (x - x.mean()) / sd


def preprocess(x, job, axis):
    x, repaired = despike(x, axis, job["despike"]["threshold"], job["despike"]["width"])
    sg = job["savgol"]
    x = savgol_filter(x, sg["window"], sg["polyorder"], deriv=sg["deriv"], delta=1.0, mode="interp")
    return snv(x), repaired


def main():
    with open(sys.argv[1]) as f:
        job = json.load(f)
    axis = np.array(job["axis"], dtype=float)
    keep = np.zeros(len(axis), dtype=bool)
    for lo, hi in job["regions"]:
        keep |= (axis >= lo) & (axis <= hi)
    exclude = set(job["exclude"])
    X, Y, repaired = [], [], 0
    with open(job["csv"], newline="") as f:
        rows = csv.reader(f)
        next(rows)
        for row in rows:
            if row[0] in exclude:
                continue
            x, r = preprocess(np.array(row[1:1 + len(axis)], dtype=float), job, axis)
            repaired += r
            X.append(x[keep])
            Y.append([float(v) for v in row[1 + len(axis):]])
    pls = PLSRegression(n_components=job["components"], scale=False).fit(np.array(X), np.array(Y))
    T = np.array([preprocess(np.array(x, dtype=float), job, axis)[0][keep] for x in job["test"]])
    json.dump({"predictions": pls.predict(T).tolist(), "spikes_repaired": repaired, "rows": len(X),
               "points": int(keep.sum())}, sys.stdout)


if __name__ == "__main__":
    main()
