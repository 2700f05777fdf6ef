"""Load a ramanserve export with joblib and print Pipeline.predict's rows.

    PYTHONPATH=examples/python python3 export_predict.py model.joblib spectra.txt

The test (joblib_export_test.go) compares the numbers with ramanserve's.
Nothing of ramanserve is imported but its documented helper module, which
the export's FunctionTransformers name.
"""
import sys

import joblib
import numpy as np
from sklearn.pipeline import Pipeline

model = joblib.load(sys.argv[1])
if not isinstance(model, Pipeline):
    raise SystemExit("the export is a %s, not a Pipeline" % type(model).__name__)
X = np.loadtxt(sys.argv[2], ndmin=2)
Y = model.predict(X)
for row in np.atleast_2d(Y):
    print(" ".join(repr(float(v)) for v in row))
