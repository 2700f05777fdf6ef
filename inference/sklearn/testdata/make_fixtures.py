"""Make the scikit-learn fixtures of inference/sklearn's tests.

Run with Debian's packages (python3-sklearn 1.2.1, python3-joblib 1.2.0,
python3-lz4):

    /usr/bin/python3 make_fixtures.py

Writes small models (64 features, 40 samples) in many forms, one realistic
2048-feature model, and fixtures.json: for each file, its description, the
input spectra and scikit-learn's own predictions for them.

Layout variants. Debian ships scikit-learn 1.2, whose PLSRegression stores
_x_mean, _x_std, _y_mean, _y_std and _coef_ (q, p). Files from other
versions are made by editing the fitted object's state before dumping, as
those versions would have stored it (see api/sklearn-import.md):
  * 0.24:   x_mean_, x_std_, y_mean_, y_std_, coef_ (p, q), no intercept_
  * 1.3-1.4: coef_ (q, p) with the values of 1.2's _coef_
  * 1.5+:   coef_ (q, p) divided by _x_std
The expected predictions are those of the original 1.2 model, which every
layout must reproduce.
"""
import json
import os
import pickle

import joblib
import numpy as np
from sklearn.cross_decomposition import PLSRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20261123)


def data(n, p, q):
    """Spectra-like inputs: a few smooth bands mixed by correlated labels."""
    axis = np.linspace(0, 1, p)
    bands = np.array([np.exp(-0.5 * ((axis - c) / 0.05) ** 2) for c in (0.2, 0.45, 0.7, 0.85)])
    conc = np.abs(rng.normal(10, 3, size=(n, 4)))
    x = conc @ bands * 100 + rng.normal(0, 1, size=(n, p)) + 500
    y = conc[:, :q] * np.array([1.0, 0.7, 0.3])[:q] + rng.normal(0, 0.1, size=(n, q))
    return x, y


X, Y = data(40, 64, 3)
X_TEST, _ = data(5, 64, 3)
fixtures = []


def dump(name, model, *, x_test=X_TEST, expected=None, target=None, **kw):
    path = os.path.join(HERE, name)
    if kw.pop("plain_pickle", False):
        with open(path, "wb") as f:
            pickle.dump(model, f, protocol=kw.get("protocol", 4))
    else:
        joblib.dump(model, path, **kw)
    if expected is None:
        expected = model.predict(x_test)
    fixtures.append({
        "file": name,
        "target": target,
        "x": x_test.tolist(),
        "y": np.asarray(expected).reshape(len(x_test), -1).tolist(),
    })


plain = PLSRegression(n_components=4, scale=True).fit(X, Y)
unscaled = PLSRegression(n_components=4, scale=False).fit(X, Y)
pipe = Pipeline([("scale", StandardScaler()), ("pls", PLSRegression(n_components=3))]).fit(X, Y)
one = PLSRegression(n_components=3).fit(X, Y[:, 1])

dump("plain_scaled.joblib", plain)
dump("plain_unscaled.joblib", unscaled)
dump("pipeline.joblib", pipe)
dump("one_target_dha.joblib", one, target="DHA")
for method in ("zlib", "gzip", "bz2", "xz", "lzma", "lz4"):
    dump("plain_scaled_%s.joblib" % method, plain, compress=(method, 3))
for protocol in (2, 3, 4, 5):
    dump("plain_scaled_protocol%d.joblib" % protocol, plain, protocol=protocol)
dump("plain_scaled_pickle.pkl", plain, plain_pickle=True)

named = PLSRegression(n_components=4, scale=True).fit(X, Y)
named.feature_names_in_ = np.array(["wn_%d" % i for i in range(X.shape[1])], dtype=object)
dump("feature_names.joblib", named)


def edited(model, edit):
    clone = pickle.loads(pickle.dumps(model))
    edit(clone.__dict__)
    return clone


def to_024(d):
    for k in ("x_mean", "x_std", "y_mean", "y_std"):
        d[k + "_"] = d.pop("_" + k)
    d["coef_"] = d.pop("_coef_").T.copy()
    d.pop("intercept_", None)


def to_13(d):
    d["coef_"] = d.pop("_coef_")


def to_15(d):
    d["coef_"] = d.pop("_coef_") / d["_x_std"][np.newaxis, :]


for label, edit in (("0.24", to_024), ("1.3", to_13), ("1.5", to_15)):
    for scaled, base in (("scaled", plain), ("unscaled", unscaled)):
        dump("layout%s_%s.joblib" % (label, scaled), edited(base, edit), expected=base.predict(X_TEST))

# The realistic case: 2048 features, three targets, compressed.
XR, YR = data(60, 2048, 3)
XR_TEST, _ = data(3, 2048, 3)
dump("realistic_2048.joblib", PLSRegression(n_components=5, scale=False).fit(XR, YR), x_test=XR_TEST, compress=("zlib", 3))

with open(os.path.join(HERE, "fixtures.json"), "w") as f:
    json.dump(fixtures, f)
print("wrote %d fixtures" % len(fixtures))
