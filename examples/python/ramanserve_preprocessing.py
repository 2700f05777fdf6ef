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
accepted keywords and their ranges. A model exported by ramanserve
(``GET /model/{version}/export``) is such a Pipeline too, and loads with
``joblib.load`` once this module is importable.

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
import scipy.linalg

__all__ = ["despike", "despike_with_counts", "snv", "als_baseline", "normalize", "select_regions"]

# The modified z-score's constant: 0.6745 is the 0.75 quantile of the
# standard normal, so that MAD / 0.6745 estimates the standard deviation.
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
    """Remove cosmic-ray spikes: narrow positive spikes of 1 to width+1
    points whose rising and falling edges in the first differences are
    outliers by their modified z-score (Iglewicz & Hoaglin; the scale of
    Whitaker & Hayes, Chemometr. Intell. Lab. Syst. 179 (2018) 82-84) and
    more than twice the slope beside them. The flanks of Raman bands change
    slope gradually and are left alone, however strong the band.

    Per spectrum x of n points, over the m = n-1 first differences
    d[i] = x[i+1] - x[i]:

        e = d - median(d),   MAD = median(|e|),   c = threshold MAD / 0.6745

    When MAD is 0 the mean absolute deviation takes its place,
    c = threshold 1.253314 mean(|e|); when that is 0 too, or c is not
    finite, nothing is a spike. Fewer than 3 differences mark nothing.

    - A rising edge at i: e[i] > c, and i == 0 or e[i-1] < e[i] / 2.
    - A falling edge at j: e[j] < -c, and j == m-1 or e[j+1] > e[j] / 2.
    - Scanning i = 0, 1, ...: at a rising edge i, let j be the last falling
      edge with i < j <= min(i + width + 1, m - 1). If there is one, points
      i+1 .. j are a spike and become the straight line, over the
      wavenumber axis, between x[i] and x[j+1]; the scan resumes at j+1.

    Edges are tested on the differences of the input; the line's end points
    are never part of a spike. ``wavenumbers`` is the axis the line is drawn
    over; without it the point index is used, which is the same on an
    evenly spaced axis. ramanserve draws it over the model's axis
    (``wavenumbers`` when given, else the instrument axis).
    """
    return despike_with_counts(X, threshold, width, wavenumbers)[0]


def despike_with_counts(X, threshold=6.0, width=2, wavenumbers=None):
    """``despike``, which also returns how many points it replaced in each
    spectrum (an integer array of length samples): the figure ramanserve
    reports as ``spikes_repaired``. It returns a pair, so it is no step of a
    Pipeline; use ``despike`` there.
    """
    if not 1 <= threshold <= 1000:
        raise ValueError("threshold must be in [1, 1000]")
    if int(width) != width or not 0 <= width <= 16:
        raise ValueError("width must be an integer in [0, 16]")
    X = _rows(X)
    n = X.shape[1]
    axis = np.arange(n, dtype=float) if wavenumbers is None else _axis(wavenumbers, n)
    repaired = np.array([_despike_row(x, axis, threshold, int(width)) for x in X], dtype=int)
    return X, repaired


def _despike_row(x, axis, threshold, width):
    """Repairs the spikes of one spectrum in place; returns the number of
    points replaced."""
    m = x.size - 1
    if m < 3:
        return 0
    d = np.diff(x)
    e = d - np.median(d)
    dev = np.abs(e)
    mad = np.median(dev)
    if mad > 0:
        c = threshold * mad / _MODIFIED_Z
    elif dev.sum() > 0:
        c = threshold * _MEAN_AD * dev.sum() / m
    else:
        return 0
    if not np.isfinite(c):
        return 0
    rise = e > c
    rise[1:] &= e[:-1] < e[1:] / 2
    fall = e < -c
    fall[:-1] &= e[1:] > e[:-1] / 2
    repaired = 0
    i = 0
    while i < m:
        ends = [j for j in range(i + 1, min(i + width + 1, m - 1) + 1) if fall[j]] if rise[i] else []
        if not ends:
            i += 1
            continue
        j = ends[-1]
        x0, x1 = x[i], x[j + 1]
        a0, span = axis[i], axis[j + 1] - axis[i]
        for k in range(i + 1, j + 1):
            x[k] = x0 + (x1 - x0) * ((axis[k] - a0) / span)
        repaired += j - i
        i = j + 1
    return repaired


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
    # A flat spectrum's mean need not round to its value, which would leave
    # std at a few ulps and every point at +-1: test the values themselves.
    flat = (std == 0).ravel() | np.all(X == X[:, :1], axis=1)
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
        Z = _solve_banded_ldl(X, W, b0, b1, b2)
    return X - Z


def _solve_banded_ldl(X, W, b0, b1, b2):
    """Solve (W + lam D'D) z = W x for every row, with SciPy's banded
    symmetric solver. The system is ill-conditioned (condition number up
    to about 16 lam / p), so ramanserve's own solve agrees with this one to
    about 1e-10 relative in z: predictions through this step match to
    about 1e-6 g/L (api/artifact.md).
    """
    m, n = X.shape
    Z = np.empty((m, n))
    for r in range(m):
        ab = np.zeros((3, n))
        ab[0] = W[r] + b0
        ab[1] = b1
        ab[2] = b2
        Z[r] = scipy.linalg.solveh_banded(ab, W[r] * X[r], lower=True)
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


def select_regions(X, wavenumbers, regions):
    """Keep the points inside the wavenumber ``regions``, a list of
    (low, high) cm-1 ranges, inclusive: the columns of X whose wavenumber
    lies in any of them, in axis order (overlapping ranges keep a point
    once). This is a model's region selection, applied after its recipe;
    in a Pipeline it is the last ``FunctionTransformer`` before the
    ``PLSRegression`` (or its ``StandardScaler``).

    ``wavenumbers`` is the spectra's axis (strictly increasing, one value
    per feature). Each range needs low <= high, must lie inside the axis
    and hold at least one point; at most 64 ranges.
    """
    X = _rows(X)
    wn = _axis(wavenumbers, X.shape[1])
    regions = [tuple(float(v) for v in r) for r in regions]
    if not 1 <= len(regions) <= 64:
        raise ValueError("regions must hold 1 to 64 (low, high) ranges")
    keep = np.zeros(wn.size, dtype=bool)
    for i, (low, high) in enumerate(regions):
        if not low <= high:
            raise ValueError("regions[%d]: low %r is above high %r" % (i, low, high))
        if low < wn[0] or high > wn[-1]:
            raise ValueError("regions[%d]: [%r, %r] is outside the axis" % (i, low, high))
        inside = (wn >= low) & (wn <= high)
        if not inside.any():
            raise ValueError("regions[%d]: [%r, %r] holds no axis point" % (i, low, high))
        keep |= inside
    return X[:, keep]
