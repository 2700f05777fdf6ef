"""Fit the Python reference server's model for `make bench`.

Fits scikit-learn's PLSRegression (mean-centring only, scale=False, as the
Go trainer's default) with a given number of components on a training CSV
in the contract's layout, and saves it with joblib.

Usage: /usr/bin/python3 fit_reference.py TRAINING.csv COMPONENTS OUT.joblib
"""
import sys

import joblib
import numpy as np
from sklearn.cross_decomposition import PLSRegression


def main():
    path, components, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    data = np.loadtxt(path, delimiter=",", skiprows=1, usecols=range(1, 2048 + 4))
    x, y = data[:, :2048], data[:, 2048:]
    model = PLSRegression(n_components=components, scale=False).fit(x, y)
    joblib.dump(model, out)


if __name__ == "__main__":
    main()
