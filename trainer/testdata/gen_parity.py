#!/usr/bin/python3
"""Generate the PLS parity fixtures for package trainer.

Run with Debian's interpreter (python3-sklearn 1.2.1, numpy):

    /usr/bin/python3 trainer/testdata/gen_parity.py

It writes trainer/testdata/pls_parity.json: seeded data X (40 x 100),
Y (40 x 3), a test block X_test (10 x 100), and for scale in {False, True},
targets in {3, 1} and n_components in {1, 5, 10} scikit-learn's
PLSRegression coefficients (per scaled x unit, p x q), x_rotations_,
intercept_, n_iter_ and predictions on X and X_test. Floats are written
with repr, so they read back bit-exact.
"""
import json
import os
import sys
import warnings

import numpy as np
import sklearn
from sklearn.cross_decomposition import PLSRegression


def make_data(rng):
    n, n_test, p, q = 40, 10, 100, 3
    n_all = n + n_test
    # Spectra-like structure: 6 latent factors with smooth loadings, column
    # scales that differ by two orders of magnitude (so autoscaling matters),
    # an offset, and noise; Y depends on 4 of the factors plus noise, with
    # strongly correlated columns.
    axis = np.linspace(0.0, 1.0, p)
    loadings = np.array([np.exp(-((axis - c) ** 2) / (2 * w**2))
                         for c, w in [(0.1, 0.03), (0.3, 0.05), (0.45, 0.02),
                                      (0.6, 0.08), (0.8, 0.04), (0.9, 0.1)]])
    factors = rng.normal(size=(n_all, 6))
    factors[:, 1] += 0.8 * factors[:, 0]
    col_scale = np.exp(rng.uniform(np.log(0.1), np.log(10.0), size=p))
    X = (factors @ loadings + 0.05 * rng.normal(size=(n_all, p))) * col_scale + 100 * col_scale
    latent = factors[:, :4]
    B = np.array([[3.0, 2.0, 0.5], [1.0, 1.5, 0.3], [0.5, -1.0, 0.2], [0.2, 0.3, 0.1]])
    Y = 20 + latent @ B + 0.1 * rng.normal(size=(n_all, q))
    return X[:n], Y[:n], X[n:]


def coef_per_scaled_x(pls, p, q):
    """PLSRegression coefficients as (p, q), per scaled x unit (B * y_std)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        coef = np.asarray(pls.coef_, dtype=float)
    major, minor = (int(v) for v in sklearn.__version__.split(".")[:2])
    if (major, minor) >= (1, 3):  # (q, p) from 1.3 on
        coef = coef.T
    if (major, minor) >= (1, 5):  # per original x unit from 1.5 on
        coef = coef * pls._x_std[:, None]
    assert coef.shape == (p, q), coef.shape
    return coef


def main():
    rng = np.random.default_rng(20240511)
    X, Y, X_test = make_data(rng)
    cases = []
    for scale in (False, True):
        for n_targets in (3, 1):
            Yk = Y[:, :n_targets]
            for k in (1, 5, 10):
                pls = PLSRegression(n_components=k, scale=scale).fit(X, Yk)
                cases.append({
                    "scale": scale,
                    "n_targets": n_targets,
                    "n_components": k,
                    "coef": coef_per_scaled_x(pls, X.shape[1], n_targets).tolist(),
                    "intercept": np.atleast_1d(pls.intercept_).tolist(),
                    "x_rotations": pls.x_rotations_.tolist(),
                    "n_iter": [int(v) for v in pls.n_iter_],
                    "predict_train": np.asarray(pls.predict(X)).reshape(len(X), -1).tolist(),
                    "predict_test": np.asarray(pls.predict(X_test)).reshape(len(X_test), -1).tolist(),
                })
    out = {
        "generator": "trainer/testdata/gen_parity.py",
        "sklearn_version": sklearn.__version__,
        "numpy_version": np.__version__,
        "X": X.tolist(),
        "Y": Y.tolist(),
        "X_test": X_test.tolist(),
        "cases": cases,
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pls_parity.json")
    with open(path, "w") as f:
        json.dump(out, f)
        f.write("\n")
    print(f"wrote {path}: {len(cases)} cases, sklearn {sklearn.__version__}", file=sys.stderr)


if __name__ == "__main__":
    main()
