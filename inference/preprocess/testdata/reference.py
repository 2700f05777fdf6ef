"""NumPy/SciPy reference of the preprocessing recipe (inference/preprocess).

Each function takes one spectrum (1-D float64 array) and returns a new one;
apply_recipe runs a recipe in the JSON form of the contract
(TrainingMeta.preprocessing, with every parameter explicit) over the rows of
a 2-D array. The parity tests of the Go package run it with /usr/bin/python3.

Usage as a filter: reads a JSON list of requests
{"recipe": [...], "axis": [...], "X": [[...], ...]} on stdin and writes the
list of answers {"X": [[...], ...], "repaired": [...]} on stdout.
"""
import json
import sys

import numpy as np
import scipy.sparse
import scipy.sparse.linalg
from scipy.signal import savgol_filter


def despike(x, axis, threshold=6.0, width=2):
    """Narrow positive spikes between a rising and a falling edge of the
    first differences (the package documentation of inference/preprocess).

    Returns (repaired spectrum, number of points replaced).
    """
    x = np.array(x, dtype=float)
    d = np.diff(x)
    m = d.size
    if m < 3:
        return x, 0
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
    # Rising edge at i: e[i] > cut and e[i-1] < e[i]/2 (none before i=0).
    rise = e > cut
    rise[1:] &= e[:-1] < e[1:] / 2
    # Falling edge at j: e[j] < -cut and e[j+1] > e[j]/2 (none after m-1).
    fall = e < -cut
    fall[:-1] &= e[1:] > e[:-1] / 2
    y = x.copy()
    repaired = 0
    i = 0
    while i < m:
        ends = [j for j in range(i + 1, min(i + width + 1, m - 1) + 1) if fall[j]] if rise[i] else []
        if not ends:
            i += 1
            continue
        j = ends[-1]
        k = np.arange(i + 1, j + 1)
        y[k] = x[i] + (x[j + 1] - x[i]) * ((axis[k] - axis[i]) / (axis[j + 1] - axis[i]))
        repaired += j - i
        i = j + 1
    return y, repaired


def savgol(x, window, polyorder, deriv=0):
    return savgol_filter(x, window, polyorder, deriv=deriv, delta=1.0, mode="interp")


def snv(x):
    x = np.asarray(x, dtype=float)
    s = x.std()
    if s == 0 or np.all(x == x[0]):
        return np.zeros_like(x)
    return (x - x.mean()) / s


def als_baseline(x, lam=1e5, p=0.01, iterations=10):
    """Eilers & Boelens (2005), returns x minus the baseline."""
    x = np.asarray(x, dtype=float)
    n = x.size
    if n < 3:
        return np.zeros_like(x)
    D = scipy.sparse.diags([1.0, -2.0, 1.0], [0, 1, 2], shape=(n - 2, n))
    H = lam * (D.T @ D)
    w = np.ones(n)
    z = x
    for it in range(iterations):
        if it > 0:
            w = np.where(x > z, p, 1 - p)
        W = scipy.sparse.diags(w, 0)
        z = scipy.sparse.linalg.spsolve((W + H).tocsc(), w * x)
    return x - z


def normalize(x, axis, region):
    low, high = region
    inside = (axis >= low) & (axis <= high)
    area = np.trapz(x[inside], axis[inside])
    if area == 0 or not np.isfinite(area):
        raise ValueError("zero or non-finite band area")
    return x / area


def apply_one(recipe, axis, x):
    repaired = 0
    for s in recipe:
        k = s["step"]
        if k == "despike":
            x, r = despike(x, axis, s["threshold"], s["width"])
            repaired += r
        elif k == "savgol":
            x = savgol(x, s["window"], s["polyorder"], s["deriv"])
        elif k == "snv":
            x = snv(x)
        elif k == "als_baseline":
            x = als_baseline(x, s["lam"], s["p"], s["iterations"])
        elif k == "normalize":
            x = normalize(x, axis, s["region"])
        else:
            raise ValueError("unknown step %r" % k)
    return x, repaired


def apply_recipe(recipe, axis, X):
    axis = np.asarray(axis, dtype=float)
    out, reps = [], []
    for row in np.asarray(X, dtype=float):
        y, r = apply_one(recipe, axis, row)
        out.append(y)
        reps.append(r)
    return np.array(out), reps


if __name__ == "__main__":
    answers = []
    for req in json.load(sys.stdin):
        Y, reps = apply_recipe(req["recipe"], req["axis"], req["X"])
        answers.append({"X": Y.tolist(), "repaired": reps})
    json.dump(answers, sys.stdout)
