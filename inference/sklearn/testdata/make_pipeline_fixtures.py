"""Make the Pipeline(FunctionTransformer..., PLSRegression) fixtures.

Run with Debian's packages (python3-sklearn 1.2.1, python3-scipy 1.10,
python3-joblib 1.2.0):

    /usr/bin/python3 make_pipeline_fixtures.py

Writes pipelines.json: for each accepted file its description, input
spectra and scikit-learn's own predictions; for each refused file the
error code ramanserve must answer and a word its message must hold.
The helper functions come from examples/python/ramanserve_preprocessing.py
(the documented module), imported under its own name as pickle records it.
"""
import functools
import json
import os
import sys

import joblib
import numpy as np
import scipy.signal
from sklearn.cross_decomposition import PLSRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples", "python"))
import ramanserve_preprocessing as rp  # noqa: E402

rng = np.random.default_rng(20261124)


def axis(p):
    return np.linspace(200.0, 3200.0, p)


def data(n, p, spikes=0):
    """Spectra-like inputs: four bands, a sloping background, laser power
    drift and, optionally, one cosmic spike in some spectra."""
    wn = axis(p)
    # Bands 27 points wide (sigma) whatever p, and noise such that their
    # slopes stay well below despike's cut: only the spikes are repaired.
    sigma = 40.0 * 2048 / p
    bands = np.array([np.exp(-0.5 * ((wn - c) / sigma) ** 2) for c in (800, 1450, 1650, 2900)])
    conc = np.abs(rng.normal(10, 3, size=(n, 4)))
    power = rng.uniform(0.85, 1.15, size=(n, 1))
    background = np.outer(rng.uniform(0.5, 2, n), (wn - 200) / 3000) * 300
    x = power * (conc @ bands * 50 + 500) + background + rng.normal(0, 5, size=(n, p))
    for i in range(min(spikes, n)):
        x[i, rng.integers(20, p - 20)] += 3000
    y = conc[:, :3] * np.array([1.0, 0.7, 0.3]) + rng.normal(0, 0.1, size=(n, 3))
    return x, y


SAVGOL = {"window_length": 15, "polyorder": 2, "deriv": 1, "axis": 1}
fixtures = []


def accepted(name, model, x_test, algorithm, **kw):
    joblib.dump(model, os.path.join(HERE, name), **kw)
    fixtures.append({
        "file": name,
        "algorithm": algorithm,
        "x": x_test.tolist(),
        "y": model.predict(x_test).reshape(len(x_test), -1).tolist(),
    })


def refused(name, steps, code, message):
    """A Pipeline of unfitted FunctionTransformers in front of a fitted PLS:
    only the pickle matters, and fitting would run the functions."""
    pls = PLSRegression(n_components=1, scale=False).fit(*data(8, 16))
    joblib.dump(Pipeline(steps + [("pls", pls)]), os.path.join(HERE, name))
    fixtures.append({"file": name, "error": code, "message": message})


# The Must-show case: Pipeline(FunctionTransformer(savgol_filter, kw), PLS)
# on 2048-point spectra.
X, Y = data(40, 2048)
XT, _ = data(4, 2048)
savgol = Pipeline([
    ("savgol", FunctionTransformer(scipy.signal.savgol_filter, kw_args=SAVGOL)),
    ("pls", PLSRegression(n_components=3, scale=False)),
]).fit(X, Y)
accepted("pipeline_savgol.joblib", savgol, XT, "sklearn-Pipeline(savgol_filter,PLSRegression)", compress=("zlib", 3))

# The helper module's despike and snv, with spikes in the data.
X, Y = data(40, 256, spikes=8)
XT, _ = data(4, 256, spikes=2)
helper = Pipeline([
    ("despike", FunctionTransformer(rp.despike, kw_args={"threshold": 6, "width": 2})),
    ("snv", FunctionTransformer(rp.snv)),
    ("pls", PLSRegression(n_components=3)),
]).fit(X, Y)
accepted("pipeline_despike_snv.joblib", helper, XT, "sklearn-Pipeline(despike,snv,PLSRegression)")

# Every function, keyword defaults and explicit values, and a scaler.
X, Y = data(40, 256, spikes=4)
XT, _ = data(4, 256, spikes=1)
every = Pipeline([
    ("despike", FunctionTransformer(rp.despike, kw_args={"wavenumbers": axis(256)})),
    ("als", FunctionTransformer(rp.als_baseline, kw_args={"lam": 1e4, "p": 0.02, "iterations": 8})),
    ("smooth", FunctionTransformer(scipy.signal.savgol_filter,
                                   kw_args={"window_length": 11, "polyorder": 3, "mode": "interp", "delta": 1.0, "axis": -1})),
    ("normalize", FunctionTransformer(rp.normalize, kw_args={"wavenumbers": axis(256), "region": (2500.0, 3200.0)})),
    ("scale", StandardScaler()),
    ("pls", PLSRegression(n_components=4)),
]).fit(X, Y)
accepted("pipeline_every_step.joblib", every, XT,
         "sklearn-Pipeline(despike,als_baseline,savgol_filter,normalize,StandardScaler,PLSRegression)")

# Refusals.
refused("refuse_os_system.joblib", [("f", FunctionTransformer(os.system))], "UNSAFE_MODEL", "system")
refused("refuse_eval.joblib", [("f", FunctionTransformer(eval))], "UNSAFE_MODEL", "builtins.eval")
refused("refuse_partial.joblib",
        [("f", FunctionTransformer(functools.partial(scipy.signal.savgol_filter, window_length=15, polyorder=2)))],
        "UNSAFE_MODEL", "functools.partial")
refused("refuse_numpy_function.joblib", [("f", FunctionTransformer(np.log1p))], "UNSAFE_MODEL", "log1p")
refused("refuse_savgol_nearest.joblib",
        [("f", FunctionTransformer(scipy.signal.savgol_filter, kw_args=dict(SAVGOL, mode="nearest")))],
        "MODEL_UNSUPPORTED", "mode")
refused("refuse_savgol_axis0.joblib",
        [("f", FunctionTransformer(scipy.signal.savgol_filter, kw_args=dict(SAVGOL, axis=0)))],
        "MODEL_UNSUPPORTED", "axis")
refused("refuse_savgol_delta.joblib",
        [("f", FunctionTransformer(scipy.signal.savgol_filter, kw_args=dict(SAVGOL, delta=2.5)))],
        "MODEL_UNSUPPORTED", "delta")
refused("refuse_savgol_cval.joblib",
        [("f", FunctionTransformer(scipy.signal.savgol_filter, kw_args=dict(SAVGOL, cval=1.0)))],
        "MODEL_UNSUPPORTED", "cval")
refused("refuse_savgol_even_window.joblib",
        [("f", FunctionTransformer(scipy.signal.savgol_filter, kw_args=dict(SAVGOL, window_length=14)))],
        "MODEL_UNSUPPORTED", "window")
refused("refuse_savgol_no_polyorder.joblib",
        [("f", FunctionTransformer(scipy.signal.savgol_filter, kw_args={"window_length": 15}))],
        "MODEL_UNSUPPORTED", "polyorder")
refused("refuse_unknown_kwarg.joblib",
        [("f", FunctionTransformer(rp.despike, kw_args={"threshold": 6, "mode": "fast"}))],
        "MODEL_UNSUPPORTED", "mode")
refused("refuse_snv_kwarg.joblib", [("f", FunctionTransformer(rp.snv, kw_args={"ddof": 1}))],
        "MODEL_UNSUPPORTED", "ddof")
refused("refuse_inverse_func.joblib", [("f", FunctionTransformer(rp.snv, inverse_func=rp.snv))],
        "MODEL_UNSUPPORTED", "inverse_func")
refused("refuse_als_p.joblib", [("f", FunctionTransformer(rp.als_baseline, kw_args={"p": 0.7}))],
        "MODEL_UNSUPPORTED", "p=")
refused("refuse_normalize_no_axis.joblib",
        [("f", FunctionTransformer(rp.normalize, kw_args={"region": (600.0, 800.0)}))],
        "MODEL_UNSUPPORTED", "wavenumbers")
refused("refuse_savgol_window_too_long.joblib",
        [("f", FunctionTransformer(scipy.signal.savgol_filter, kw_args=dict(SAVGOL, window_length=31)))],
        "MODEL_UNSUPPORTED", "window")
refused("refuse_normalize_narrow_region.joblib",
        [("f", FunctionTransformer(rp.normalize, kw_args={"wavenumbers": axis(16), "region": (201.0, 202.0)}))],
        "MODEL_UNSUPPORTED", "region")
refused("refuse_scaler_first.joblib",
        [("s", StandardScaler().fit(data(8, 16)[0])), ("f", FunctionTransformer(rp.snv))],
        "MODEL_UNSUPPORTED", "StandardScaler")

with open(os.path.join(HERE, "pipelines.json"), "w") as f:
    json.dump(fixtures, f)
print("wrote %d pipeline fixtures" % len(fixtures))
