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
    """The server's solve, step for step (artifact.md, als_baseline)."""
    n = len(x)
    if n < 3:
        return np.zeros(n)
    # Diagonals of D'D from its definition (integers), times lam; b1[i] is
    # A[i+1, i], b2[i] is A[i+2, i], zero past the ends.
    d = scipy.sparse.diags([1.0, -2.0, 1.0], [0, 1, 2], shape=(n - 2, n))
    dtd = (d.T @ d).todia()
    b0 = [lam * v for v in dtd.diagonal(0).tolist()]
    b1 = [lam * v for v in dtd.diagonal(-1).tolist()] + [0.0]
    b2 = [lam * v for v in dtd.diagonal(-2).tolist()] + [0.0, 0.0]
    xs = [float(v) for v in x]
    w = [1.0] * n
    z, r, l1, l2 = forward(xs, w, b0, b1, b2)
    back(z, r, l1, l2)
    w = [p if xi > zi else 1 - p for xi, zi in zip(xs, z)]
    for it in range(1, iterations):
        if n >= 8:
            z = twisted(xs, w, b0, b1, b2)
        else:
            z, r, l1, l2 = forward(xs, w, b0, b1, b2)
            back(z, r, l1, l2)
        nw = [p if xi > zi else 1 - p for xi, zi in zip(xs, z)]
        if nw == w:  # the next round would give the same z
            break
        w = nw
    return np.array([xi - zi for xi, zi in zip(xs, z)])


def forward(x, w, b0, b1, b2):
    """L diag(d) L' = diag(w) + lam D'D and L y = w x in one sweep down:
    returns y, 1/d, l1, l2."""
    n = len(x)
    y, r, l1, l2 = [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n
    rm1 = rm2 = em1 = l1m1 = l2m1 = l2m2 = b2m1 = b2m2 = ym1 = ym2 = 0.0
    for i in range(n):
        base = w[i] + b0[i] - b2m2 * b2m2 * rm2
        ei = b1[i] - l2m1 * em1
        di = base - em1 * em1 * rm1
        ri = 1 / di
        l1i, l2i = ei * ri, b2[i] * ri
        yi = w[i] * x[i] - l2m2 * ym2 - l1m1 * ym1
        r[i], l1[i], l2[i], y[i] = ri, l1i, l2i, yi
        rm2, rm1 = rm1, ri
        em1, l1m1 = ei, l1i
        l2m2, l2m1 = l2m1, l2i
        b2m2, b2m1 = b2m1, b2[i]
        ym2, ym1 = ym1, yi
    return y, r, l1, l2


def back(z, r, l1, l2):
    """z[i] = y[i] / d[i] - l2[i] z[i+2] - l1[i] z[i+1], from the end, in place."""
    zp1 = zp2 = 0.0
    for i in range(len(z) - 1, -1, -1):
        zi = z[i] * r[i] - l2[i] * zp2 - l1[i] * zp1
        z[i] = zi
        zp2, zp1 = zp1, zi


def twisted(x, w, b0, b1, b2):
    """The forward sweep from the top (rows 0..k-1) and, mirrored, from the
    bottom (rows n-1..k+2), rows k, k+1 as a 2 x 2 system, then the back
    substitutions outwards."""
    n = len(x)
    k = (n - 2) // 2
    z, r, l1, l2 = [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n
    fr1 = fr2 = fe1 = fl11 = fl21 = fl22 = fb21 = fb22 = fy1 = fy2 = 0.0
    gr1 = gr2 = ge1 = gl11 = gl21 = gl22 = gb21 = gb22 = gy1 = gy2 = 0.0
    for t in range(n - k - 2):
        if t < k:
            i = t
            base = w[i] + b0[i] - fb22 * fb22 * fr2
            ei = b1[i] - fl21 * fe1
            di = base - fe1 * fe1 * fr1
            ri = 1 / di
            l1i, l2i = ei * ri, b2[i] * ri
            yi = w[i] * x[i] - fl22 * fy2 - fl11 * fy1
            r[i], l1[i], l2[i], z[i] = ri, l1i, l2i, yi
            fr2, fr1 = fr1, ri
            fe1, fl11 = ei, l1i
            fl22, fl21 = fl21, l2i
            fb22, fb21 = fb21, b2[i]
            fy2, fy1 = fy1, yi
        j = n - 1 - t
        c1, c2 = b1[j - 1], b2[j - 2]
        base = w[j] + b0[j] - gb22 * gb22 * gr2
        ej = c1 - gl21 * ge1
        dj = base - ge1 * ge1 * gr1
        rj = 1 / dj
        l1j, l2j = ej * rj, c2 * rj
        yj = w[j] * x[j] - gl22 * gy2 - gl11 * gy1
        r[j], l1[j], l2[j], z[j] = rj, l1j, l2j, yj
        gr2, gr1 = gr1, rj
        ge1, gl11 = ej, l1j
        gl22, gl21 = gl21, l2j
        gb22, gb21 = gb21, c2
        gy2, gy1 = gy1, yj
    m11 = w[k] + b0[k] - fb22 * fb22 * fr2 - fe1 * fe1 * fr1 - gb21 * gb21 * gr1
    m22 = w[k + 1] + b0[k + 1] - fb21 * fb21 * fr1 - gb22 * gb22 * gr2 - ge1 * ge1 * gr1
    m12 = b1[k] - fl21 * fe1 - gl21 * ge1
    h1 = w[k] * x[k] - fl22 * fy2 - fl11 * fy1 - gl21 * gy1
    h2 = w[k + 1] * x[k + 1] - fl21 * fy1 - gl22 * gy2 - gl11 * gy1
    det = m11 * m22 - m12 * m12
    z[k], z[k + 1] = (m22 * h1 - m12 * h2) / det, (m11 * h2 - m12 * h1) / det
    up1, up2 = z[k], z[k + 1]
    dn1, dn2 = z[k + 1], z[k]
    for t in range(n - k - 2):
        if t < k:
            i = k - 1 - t
            zi = z[i] * r[i] - l2[i] * up2 - l1[i] * up1
            z[i] = zi
            up2, up1 = up1, zi
        j = k + 2 + t
        zj = z[j] * r[j] - l2[j] * dn2 - l1[j] * dn1
        z[j] = zj
        dn2, dn1 = dn1, zj
    return z


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
