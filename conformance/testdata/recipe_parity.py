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
    """api/artifact.md's despike: a rising and a falling edge of the first
    differences within width+1 points, each an outlier by its modified
    z-score and more than twice the slope beside it."""
    m = len(x) - 1
    if m < 3:
        return x, 0
    d = np.diff(x)
    e = d - np.median(d)
    dev = np.abs(e)
    mad = np.median(dev)
    if mad > 0:
        cut = threshold * mad / 0.6745
    elif dev.sum() > 0:
        cut = threshold * 1.253314 * dev.sum() / m
    else:
        return x, 0
    if not np.isfinite(cut):
        return x, 0
    rise = [e[i] > cut and (i == 0 or e[i - 1] < e[i] / 2) for i in range(m)]
    fall = [e[j] < -cut and (j == m - 1 or e[j + 1] > e[j] / 2) for j in range(m)]
    y = x.copy()
    repaired = 0
    i = 0
    while i < m:
        ends = [j for j in range(i + 1, min(i + width + 1, m - 1) + 1) if fall[j]] if rise[i] else []
        if not ends:
            i += 1
            continue
        j = ends[-1]
        y[i + 1:j + 1] = np.interp(axis[i + 1:j + 1], [axis[i], axis[j + 1]], [x[i], x[j + 1]])
        repaired += j - i
        i = j + 1
    return y, repaired


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
