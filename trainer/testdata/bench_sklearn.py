"""scikit-learn side of the training benchmark (`make bench`).

Does what trainer.Train does, the scikit-learn way: for every component
count 1..20, 10-fold cross_val_predict of PLSRegression (scale=False, the Go
trainer's default preprocessing), then the final fit at the best count.
Prints the wall time in seconds.

Usage: /usr/bin/python3 bench_sklearn.py TRAINING.csv
"""
import sys
import time

import numpy as np
from sklearn.cross_decomposition import PLSRegression
from sklearn.model_selection import KFold, cross_val_predict

data = np.loadtxt(sys.argv[1], delimiter=",", skiprows=1, usecols=range(1, 2048 + 4))
x, y = data[:, :2048], data[:, 2048:]
start = time.perf_counter()
folds = KFold(n_splits=10, shuffle=True, random_state=1)
rmsecv = []
for a in range(1, 21):
    pred = cross_val_predict(PLSRegression(n_components=a, scale=False), x, y, cv=folds)
    rmsecv.append(np.sqrt(((pred - y) ** 2).mean(axis=0)))
best = int(np.argmin([np.mean(r / y.std(axis=0)) for r in rmsecv])) + 1
PLSRegression(n_components=best, scale=False).fit(x, y)
print("%.3f %d" % (time.perf_counter() - start, best))
