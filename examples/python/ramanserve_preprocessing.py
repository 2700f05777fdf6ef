"""Preprocessing steps of ramanserve's recipes, for scikit-learn pipelines.

ramanserve imports a scikit-learn ``Pipeline`` whose steps before the
``PLSRegression`` are ``FunctionTransformer``s of these functions (and of
``scipy.signal.savgol_filter``). It never runs this file: it recognises each
function by its module and name, as pickle records them
(``ramanserve_preprocessing.snv`` ...), reads the keyword arguments from
``kw_args`` and applies its own Go implementation of the same step, as the
contract (api/openapi.yaml, ``PreprocessingStep``) describes it. This module
is that description in NumPy/SciPy, so a model trained with it predicts the
same numbers in Python and in ramanserve. api/sklearn-import.md lists the
accepted keywords and their ranges.

Every function takes ``X`` of shape (samples, features), one spectrum per
row, as ``FunctionTransformer`` passes it, and returns a new array of the
same shape. Keep this file importable under the name
``ramanserve_preprocessing`` (copy it next to your training code, or put
its directory on ``sys.path``): pickle records the module name, and
ramanserve accepts only that one.

Example::

    from scipy.signal import savgol_filter
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import FunctionTransformer
    from sklearn.cross_decomposition import PLSRegression
    import ramanserve_preprocessing as rp

    model = Pipeline([
        ("despike", FunctionTransformer(rp.despike, kw_args={"threshold": 6, "width": 2})),
        ("savgol", FunctionTransformer(savgol_filter,
                                       kw_args={"window_length": 15, "polyorder": 2, "deriv": 1, "axis": 1})),
        ("snv", FunctionTransformer(rp.snv)),
        ("pls", PLSRegression(n_components=5, scale=False)),
    ]).fit(X, Y)
    joblib.dump(model, "model.joblib")
"""
import numpy as np

__all__ = ["despike", "snv", "als_baseline", "normalize"]

# Whitaker & Hayes's constant: 0.6745 is the 0.75 quantile of the
# standard normal, so that the modified z-score of normal data has unit
# spread.
_MODIFIED_Z = 0.6745
# sqrt(pi/2): the same for the mean absolute deviation, the fallback when
# the MAD is zero.
_MEAN_AD = 1.253314


def _rows(X):
    X = np.array(X, dtype=float, copy=True)
    if X.ndim != 2:
        raise ValueError("X must be 2-D (samples, features), got shape %s" % (X.shape,))
    return X


def despike(X, threshold=6.0, width=2, wavenumbers=None):
    """Remove cosmic-ray spikes (Whitaker & Hayes, Chemometr. Intell. Lab.
    Syst. 179 (2018) 82-84).

    Per spectrum x of n points, over the n-1 first differences
    d[i] = x[i+1] - x[i]:

        z[i] = 0.6745 (d[i] - median(d)) / MAD,   MAD = median(|d - median(d)|)

    and |z[i]| > threshold marks point i+1 as a spike. When MAD is 0 the
    mean absolute deviation takes its place:
    z[i] = (d[i] - median(d)) / (1.253314 mean(|d - median(d)|)); when that
    is 0 too nothing is a spike. Fewer than 3 differences mark nothing.

    Repair: each spike marks itself and ``width`` neighbours on each side.
    Each run of marked points [a, b] is replaced by the straight line, over
    the wavenumber axis, between the clean points a-1 and b+1; a run
    touching an end takes the value of its one clean neighbour; a spectrum
    marked everywhere is left as it is.

    ``wavenumbers`` is the axis the line is drawn over; without it the
    point index is used, which is the same on an evenly spaced axis.
    ramanserve draws it over the model's axis (``wavenumbers`` when given,
    else the instrument axis).
    """
    if not 1 <= threshold <= 1000:
        raise ValueError("threshold must be in [1, 1000]")
    if int(width) != width or not 0 <= width <= 16:
        raise ValueError("width must be an integer in [0, 16]")
    width = int(width)
    X = _rows(X)
    n = X.shape[1]
    axis = np.arange(n, dtype=float) if wavenumbers is None else _axis(wavenumbers, n)
    if n - 1 < 3:
        return X
    for x in X:
        d = np.diff(x)
        med = np.median(d)
        dev = np.abs(d - med)
        mad = np.median(dev)
        if mad > 0:
            cut = threshold * mad / _MODIFIED_Z
        elif dev.sum() > 0:
            cut = threshold * _MEAN_AD * dev.sum() / len(d)
        else:
            continue
        if not np.isfinite(cut):
            continue
        hits = np.flatnonzero(dev > cut) + 1
        if hits.size == 0:
            continue
        mask = np.zeros(n, dtype=bool)
        for i in hits:
            mask[max(i - width, 0):min(i + width, n - 1) + 1] = True
        if mask.all():
            continue
        _repair_runs(x, axis, mask)
    return X


def _repair_runs(x, axis, mask):
    n = len(x)
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
            x0, x1 = x[left], x[right]
            a0, span = axis[left], axis[right] - axis[left]
            for j in range(a, b + 1):
                x[j] = x0 + (x1 - x0) * ((axis[j] - a0) / span)
        elif left >= 0:
            x[a:b + 1] = x[left]
        else:
            x[a:b + 1] = x[right]
        a = b + 1


def _axis(wavenumbers, n):
    wn = np.asarray(wavenumbers, dtype=float)
    if wn.ndim != 1 or wn.size != n:
        raise ValueError("wavenumbers must have one value per feature")
    if np.any(np.diff(wn) <= 0):
        raise ValueError("wavenumbers must be strictly increasing")
    return wn


def snv(X):
    """Standard normal variate: (x - mean(x)) / std(x) per spectrum, with
    the population (ddof 0) standard deviation. A flat spectrum becomes
    zeros."""
    X = _rows(X)
    mean = X.mean(axis=1, keepdims=True)
    std = X.std(axis=1, keepdims=True)
    out = X - mean
    flat = (std == 0).ravel()
    out[~flat] /= std[~flat]
    out[flat] = 0.0
    return out


def als_baseline(X, lam=1e5, p=0.01, iterations=10):
    """Subtract an asymmetric least squares baseline (Eilers & Boelens,
    2005).

    Per spectrum x: ``iterations`` rounds of solving (W + lam D'D) z = W x,
    with D the (n-2) x n second-difference matrix and W = diag(w); w is all
    ones in the first round, then p where x > z and 1 - p elsewhere.
    Returns x - z (zeros for fewer than 3 points, where D is empty).
    """
    if not 1 <= lam <= 1e12:
        raise ValueError("lam must be in [1, 1e12]")
    if not 0 < p < 0.5:
        raise ValueError("p must be in (0, 0.5)")
    if int(iterations) != iterations or not 1 <= iterations <= 50:
        raise ValueError("iterations must be an integer in [1, 50]")
    X = _rows(X)
    n = X.shape[1]
    if n < 3:
        return np.zeros_like(X)
    # lam D'D is symmetric pentadiagonal: its main diagonal b0 and the
    # entries below it, b1[i] = (i+1, i) and b2[i] = (i+2, i).
    b0 = np.full(n, 6.0)
    b0[[0, -1]] = 1.0
    b0[[1, -2]] = 5.0
    b1 = np.zeros(n)
    b1[:n - 1] = -4.0
    b1[[0, n - 2]] = -2.0
    b2 = np.zeros(n)
    b2[:n - 2] = 1.0
    b0, b1, b2 = b0 * lam, b1 * lam, b2 * lam
    W = np.ones_like(X)
    Z = None
    for it in range(int(iterations)):
        if it > 0:
            W = np.where(X > Z, p, 1.0 - p)
        # ramanserve solves every round after the first by the twisted
        # factorisation (n >= 8), and this follows it so that both round
        # alike. (It also stops once a round's weights repeat; running the
        # remaining rounds gives the same z to the bit.)
        if it > 0 and n >= 8:
            Z = _solve_twisted(X, W, b0, b1, b2)
        else:
            Z = _solve_banded_ldl(X, W, b0, b1, b2)
    return X - Z


def _solve_banded_ldl(X, W, b0, b1, b2):
    """Solve (W + lam D'D) z = W x for every row at once by a banded
    L diag(d) L' factorisation, in the order of operations of ramanserve's
    Go code (inference/preprocess/als.go, factorSolve), so that both round
    alike. With r_i = 1/d_i and e_i = d_i l1_i:

        d_i  = w_i + b0_i - b2_{i-2}^2 r_{i-2} - e_{i-1}^2 r_{i-1}
        e_i  = b1_i - l2_{i-1} e_{i-1}
        l1_i = e_i r_i,   l2_i = b2_i r_i
        y_i  = w_i x_i - l2_{i-2} y_{i-2} - l1_{i-1} y_{i-1}

    then z_i = y_i r_i - l2_i z_{i+2} - l1_i z_{i+1} backward.
    """
    m, n = X.shape
    r = np.empty((m, n))
    l1 = np.empty((m, n))
    l2 = np.empty((m, n))
    Z = np.empty((m, n))
    zero = np.zeros(m)
    rm1 = rm2 = em1 = l1m1 = l2m1 = l2m2 = ym1 = ym2 = zero
    b2m2 = 0.0
    for i in range(n):
        base = W[:, i] + b0[i] - b2m2 * b2m2 * rm2
        ei = b1[i] - l2m1 * em1
        di = base - em1 * em1 * rm1
        ri = 1.0 / di
        l1i, l2i = ei * ri, b2[i] * ri
        yi = W[:, i] * X[:, i] - l2m2 * ym2 - l1m1 * ym1
        r[:, i], l1[:, i], l2[:, i], Z[:, i] = ri, l1i, l2i, yi
        rm2, rm1 = rm1, ri
        em1, l1m1 = ei, l1i
        l2m2, l2m1 = l2m1, l2i
        b2m2 = b2[i - 1] if i >= 1 else 0.0
        ym2, ym1 = ym1, yi
    zp1 = zp2 = zero
    for i in range(n - 1, -1, -1):
        zi = Z[:, i] * r[:, i] - l2[:, i] * zp2 - l1[:, i] * zp1
        Z[:, i] = zi
        zp2, zp1 = zp1, zi
    return Z


def _solve_twisted(X, W, b0, b1, b2):
    """The same system by ramanserve's twisted factorisation (als.go,
    solveTwisted): the sweep above runs down over rows 0..k-1 and,
    mirrored, up over rows n-1..k+2 (k = (n-2)//2); rows k, k+1 are the
    2 x 2 system left, solved by Cramer's rule; the back substitutions run
    outwards from them."""
    m, n = X.shape
    k = (n - 2) // 2
    r = np.empty((m, n))
    l1 = np.empty((m, n))
    l2 = np.empty((m, n))
    Z = np.empty((m, n))
    zero = np.zeros(m)
    fr1 = fr2 = fe1 = fl11 = fl21 = fl22 = fy1 = fy2 = zero
    gr1 = gr2 = ge1 = gl11 = gl21 = gl22 = gy1 = gy2 = zero
    fb21 = fb22 = gb21 = gb22 = 0.0
    for t in range(n - k - 2):
        if t < k:
            i = t
            base = W[:, i] + b0[i] - fb22 * fb22 * fr2
            ei = b1[i] - fl21 * fe1
            di = base - fe1 * fe1 * fr1
            ri = 1.0 / di
            l1i, l2i = ei * ri, b2[i] * ri
            yi = W[:, i] * X[:, i] - fl22 * fy2 - fl11 * fy1
            r[:, i], l1[:, i], l2[:, i], Z[:, i] = ri, l1i, l2i, yi
            fr2, fr1 = fr1, ri
            fe1, fl11 = ei, l1i
            fl22, fl21 = fl21, l2i
            fb22, fb21 = fb21, b2[i]
            fy2, fy1 = fy1, yi
        j = n - 1 - t
        c1, c2 = b1[j - 1], b2[j - 2]
        base = W[:, j] + b0[j] - gb22 * gb22 * gr2
        ej = c1 - gl21 * ge1
        dj = base - ge1 * ge1 * gr1
        rj = 1.0 / dj
        l1j, l2j = ej * rj, c2 * rj
        yj = W[:, j] * X[:, j] - gl22 * gy2 - gl11 * gy1
        r[:, j], l1[:, j], l2[:, j], Z[:, j] = rj, l1j, l2j, yj
        gr2, gr1 = gr1, rj
        ge1, gl11 = ej, l1j
        gl22, gl21 = gl21, l2j
        gb22, gb21 = gb21, c2
        gy2, gy1 = gy1, yj
    m11 = W[:, k] + b0[k] - fb22 * fb22 * fr2 - fe1 * fe1 * fr1 - gb21 * gb21 * gr1
    m22 = W[:, k + 1] + b0[k + 1] - fb21 * fb21 * fr1 - gb22 * gb22 * gr2 - ge1 * ge1 * gr1
    m12 = b1[k] - fl21 * fe1 - gl21 * ge1
    h1 = W[:, k] * X[:, k] - fl22 * fy2 - fl11 * fy1 - gl21 * gy1
    h2 = W[:, k + 1] * X[:, k + 1] - fl21 * fy1 - gl22 * gy2 - gl11 * gy1
    det = m11 * m22 - m12 * m12
    Z[:, k] = (m22 * h1 - m12 * h2) / det
    Z[:, k + 1] = (m11 * h2 - m12 * h1) / det
    up1, up2 = Z[:, k].copy(), Z[:, k + 1].copy()
    dn1, dn2 = Z[:, k + 1].copy(), Z[:, k].copy()
    for t in range(n - k - 2):
        if t < k:
            i = k - 1 - t
            zi = Z[:, i] * r[:, i] - l2[:, i] * up2 - l1[:, i] * up1
            Z[:, i] = zi
            up2, up1 = up1, zi
        j = k + 2 + t
        zj = Z[:, j] * r[:, j] - l2[:, j] * dn2 - l1[:, j] * dn1
        Z[:, j] = zj
        dn2, dn1 = dn1, zj
    return Z


def normalize(X, wavenumbers, region):
    """Divide each spectrum by its band area over ``region`` = (low, high)
    cm-1, inclusive: the trapezoidal rule over the axis points inside it,
    in intensity x cm-1 (an internal standard such as the solvent band).

    ``wavenumbers`` is the spectra's axis (strictly increasing, one value
    per feature); ramanserve takes it as the model's axis. The region must
    hold at least two points. A zero or non-finite band area raises
    ValueError (ramanserve answers INVALID_SPECTRUM).
    """
    X = _rows(X)
    wn = _axis(wavenumbers, X.shape[1])
    low, high = (float(v) for v in region)
    if not low <= high:
        raise ValueError("region must be (low, high) with low <= high")
    inside = (wn >= low) & (wn <= high)
    if inside.sum() < 2:
        raise ValueError("region holds fewer than two axis points")
    xs, ys = wn[inside], X[:, inside]
    area = np.sum((ys[:, 1:] + ys[:, :-1]) * np.diff(xs) / 2.0, axis=1)
    if not np.all(np.isfinite(area)) or np.any(area == 0):
        raise ValueError("band area is zero or not finite")
    return X / area[:, np.newaxis]
