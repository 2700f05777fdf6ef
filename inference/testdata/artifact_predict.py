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
import scipy.linalg
import scipy.signal
import scipy.sparse


def despike(x, wn, threshold, width):
    m = len(x) - 1
    if m < 3:
        return x
    d = np.diff(x)
    e = d - np.median(d)
    mad = np.median(np.abs(e))
    if mad > 0:
        c = threshold * mad / 0.6745
    elif np.mean(np.abs(e)) > 0:
        c = threshold * 1.253314 * np.mean(np.abs(e))
    else:
        return x
    if not np.isfinite(c):
        return x

    def rising(i):
        return e[i] > c and (i == 0 or e[i - 1] < e[i] / 2)

    def falling(j):
        return e[j] < -c and (j == m - 1 or e[j + 1] > e[j] / 2)

    y = x.copy()
    i = 0
    while i < m:
        ends = [j for j in range(i + 1, min(i + width + 1, m - 1) + 1) if falling(j)] if rising(i) else []
        if not ends:
            i += 1
            continue
        j = ends[-1]
        for k in range(i + 1, j + 1):
            y[k] = x[i] + (x[j + 1] - x[i]) * ((wn[k] - wn[i]) / (wn[j + 1] - wn[i]))
        i = j + 1
    return y


def als_baseline(x, lam, p, iterations):
    n = len(x)
    if n < 3:
        return np.zeros(n)
    # lam D'D in lower band form: its diagonal and two subdiagonals.
    d = scipy.sparse.diags([1.0, -2.0, 1.0], [0, 1, 2], shape=(n - 2, n))
    dtd = (d.T @ d).todia()
    band = np.zeros((3, n))
    band[0] = lam * dtd.diagonal(0)
    band[1, :-1] = lam * dtd.diagonal(-1)
    band[2, :-2] = lam * dtd.diagonal(-2)
    w = np.ones(n)
    z = x
    for _ in range(iterations):
        ab = band.copy()
        ab[0] += w
        z = scipy.linalg.solveh_banded(ab, w * x, lower=True)
        w = np.where(x > z, p, 1 - p)
    return x - z


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
            x = np.zeros_like(x) if sd == 0 or np.all(x == x[0]) else (x - x.mean()) / sd
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
