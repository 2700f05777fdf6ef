"""Predict from a ramanserve model artifact with NumPy and SciPy only,
following api/artifact.md step by step.

usage: artifact_predict.py MODEL.npz SPECTRA.npy

SPECTRA.npy is (m, N) intensities on the model's axis. Prints one line per
spectrum: the q concentrations (in meta.json's target order), then T2 and
Q, each as Python's repr of the float.
"""
import json
import sys
import zipfile

import numpy as np
import scipy.signal
import scipy.sparse


def despike(x, wn, threshold, width):
    n = len(x)
    d = np.diff(x)
    if len(d) < 3:
        return x
    med = np.median(d)
    dev = np.abs(d - med)
    mad = np.median(dev)
    if mad > 0:
        cut = threshold * mad / 0.6745
    elif np.mean(dev) > 0:
        cut = threshold * 1.253314 * np.mean(dev)
    else:
        return x
    marked = np.zeros(n, dtype=bool)
    for i in np.nonzero(dev > cut)[0]:
        marked[max(i + 1 - width, 0):min(i + 1 + width, n - 1) + 1] = True
    if marked.all():
        return x
    x = x.copy()
    a = 0
    while a < n:
        if not marked[a]:
            a += 1
            continue
        b = a
        while b + 1 < n and marked[b + 1]:
            b += 1
        if a > 0 and b < n - 1:
            l, r = a - 1, b + 1
            j = np.arange(a, b + 1)
            x[j] = x[l] + (x[r] - x[l]) * ((wn[j] - wn[l]) / (wn[r] - wn[l]))
        elif a > 0:
            x[a:b + 1] = x[a - 1]
        else:
            x[a:b + 1] = x[b + 1]
        a = b + 1
    return x


def als_baseline(x, lam, p, iterations):
    n = len(x)
    if n < 3:
        return np.zeros(n)
    # Diagonals of D'D from its definition (integers), times lam.
    d = scipy.sparse.diags([1.0, -2.0, 1.0], [0, 1, 2], shape=(n - 2, n))
    dtd = (d.T @ d).todia()
    b0 = [lam * v for v in dtd.diagonal(0).tolist()]
    b1 = [lam * v for v in dtd.diagonal(-1).tolist()] + [0.0]
    b2 = [lam * v for v in dtd.diagonal(-2).tolist()] + [0.0, 0.0]
    xs = [float(v) for v in x]
    w = [1.0] * n
    z = None
    for _ in range(iterations):
        z = ldl_solve(xs, w, b0, b1, b2)
        w = [p if xi > zi else 1 - p for xi, zi in zip(xs, z)]
    return np.array([xi - zi for xi, zi in zip(xs, z)])


def ldl_solve(x, w, b0, b1, b2):
    """(diag(w) + lam D'D) z = w x by the L diag(d) L' sweep of artifact.md."""
    n = len(x)
    d, l1, l2, y = [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n

    def at(v, i):  # terms of index below 0 are 0
        return v[i] if i >= 0 else 0.0

    for i in range(n):
        d[i] = w[i] + b0[i] - at(l1, i - 1) * at(l1, i - 1) * at(d, i - 1) - at(l2, i - 2) * at(l2, i - 2) * at(d, i - 2)
        r = 1 / d[i]
        l1[i] = (b1[i] - at(l2, i - 1) * at(l1, i - 1) * at(d, i - 1)) * r
        l2[i] = b2[i] * r
        y[i] = w[i] * x[i] - at(l1, i - 1) * at(y, i - 1) - at(l2, i - 2) * at(y, i - 2)
    z = [0.0] * (n + 2)  # terms of index n and above are 0
    for i in range(n - 1, -1, -1):
        z[i] = y[i] * (1 / d[i]) - l1[i] * z[i + 1] - l2[i] * z[i + 2]
    return z[:n]


def normalize(x, wn, region):
    k = (wn >= region[0]) & (wn <= region[1])
    area = np.trapz(x[k], wn[k])
    if area == 0 or not np.isfinite(area):
        raise ValueError("band area %r" % area)
    return x / area


def preprocess(x, steps, wn):
    for s in steps:
        kind = s["step"]
        if kind == "despike":
            x = despike(x, wn, s["threshold"], s["width"])
        elif kind == "savgol":
            x = scipy.signal.savgol_filter(x, s["window"], s["polyorder"], deriv=s["deriv"], delta=1.0, mode="interp")
        elif kind == "snv":
            sd = x.std()
            x = np.zeros_like(x) if sd == 0 else (x - x.mean()) / sd
        elif kind == "als_baseline":
            x = als_baseline(x, s["lam"], s["p"], s["iterations"])
        elif kind == "normalize":
            x = normalize(x, wn, s["region"])
        else:
            raise ValueError("unknown step %r" % kind)
    return x


def select(wn, regions):
    if not regions:
        return np.arange(len(wn))
    keep = np.zeros(len(wn), dtype=bool)
    for low, high in regions:
        keep |= (wn >= low) & (wn <= high)
    return np.nonzero(keep)[0]


def main(model, spectra):
    z = np.load(model)
    meta = json.loads(zipfile.ZipFile(model).read("meta.json"))
    wn = z["wavenumbers"]
    idx = select(wn, meta.get("regions"))
    for x in np.load(spectra):
        x = preprocess(np.asarray(x, dtype=np.float64), meta.get("preprocessing", []), wn)
        xs = (x[idx] - z["x_mean"]) / z["x_scale"]
        y = xs @ z["coef"] + z["intercept"]
        t = xs @ z["x_rotations"]
        t2 = np.sum(t ** 2 / z["score_variance"])
        q = np.sum((xs - z["x_loadings"] @ t) ** 2)
        print(" ".join(repr(float(v)) for v in np.concatenate([y, [t2, q]])))


if __name__ == "__main__":
    main(*sys.argv[1:3])
