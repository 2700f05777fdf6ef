"""NumPy/SciPy reference of the preprocessing recipe (inference/preprocess).

The steps are those of the shipped helper module,
examples/python/ramanserve_preprocessing.py (api/sklearn-import.md), and
scipy.signal.savgol_filter, so the parity tests of the Go package check the
server against the module its users train with. This script is the glue: it
runs a recipe in the JSON form of the contract (TrainingMeta.preprocessing,
with every parameter explicit) over the rows of a 2-D array. The tests run
it with /usr/bin/python3.

Usage as a filter: reads a JSON list of requests
{"recipe": [...], "axis": [...], "X": [[...], ...]} on stdin and writes the
list of answers {"X": [[...], ...], "repaired": [...]} on stdout.
"""
import json
import os
import sys

import numpy as np
from scipy.signal import savgol_filter

# The module, from its place in this tree; the tests leave no bytecode in it.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "examples", "python"))
import ramanserve_preprocessing as rp  # noqa: E402

# Each step of the contract as a call of the module: (X, axis, step) ->
# (X, points repaired per row or 0).
STEPS = {
    "despike": lambda X, axis, s: rp.despike_with_counts(X, s["threshold"], s["width"], wavenumbers=axis),
    "savgol": lambda X, axis, s: (
        savgol_filter(X, s["window"], s["polyorder"], deriv=s["deriv"], delta=1.0, mode="interp", axis=1), 0),
    "snv": lambda X, axis, s: (rp.snv(X), 0),
    "als_baseline": lambda X, axis, s: (rp.als_baseline(X, s["lam"], s["p"], s["iterations"]), 0),
    "normalize": lambda X, axis, s: (rp.normalize(X, axis, s["region"]), 0),
}


def apply_recipe(recipe, axis, X):
    """Returns the rows of X through the recipe and the number of points
    despike replaced in each."""
    X = np.array(X, dtype=float)
    repaired = np.zeros(len(X), dtype=int)
    for s in recipe:
        if s["step"] not in STEPS:
            raise ValueError("unknown step %r" % s["step"])
        X, r = STEPS[s["step"]](X, axis, s)
        repaired += r
    return X, repaired


if __name__ == "__main__":
    answers = []
    for req in json.load(sys.stdin):
        Y, reps = apply_recipe(req["recipe"], req["axis"], req["X"])
        answers.append({"X": Y.tolist(), "repaired": reps.tolist()})
    json.dump(answers, sys.stdout)
