#!/usr/bin/python3
"""Reference for trainer/review: the review's figures computed from the
training data itself with NumPy and Debian's scikit-learn, by the
definitions of review.Compute's doc comment, without the shortcuts the Go
code takes from the artifact (QR for the weights, Pᵀ B for the Y loadings,
the stored T2 and Q).

Usage: review_reference.py input.json output.json

input.json: {"X": n x N, "Y": n x q, "wavenumbers": N, "regions": [[lo, hi], ...],
             "components": A, "folds": K, "autoscale": bool}
Folds are interleaved (row i in fold i mod K). Output: vip (p),
r2x (A), r2x_cumulative (A), r2y (A x q), q2 (A x q), leverage (n), rmsec (q),
scores (n x A: the X scores the artifact keeps for the scores plot),
x_weights and x_loadings (A x p: scikit-learn's x_weights_ and x_loadings_,
one row per component).
"""
import json
import sys

import numpy as np
from sklearn.cross_decomposition import PLSRegression


def select(wn, regions):
    if not regions:
        return np.arange(len(wn))
    keep = np.zeros(len(wn), dtype=bool)
    for lo, hi in regions:
        keep |= (wn >= lo) & (wn <= hi)
    return np.flatnonzero(keep)


def fit(X, Y, a, autoscale):
    return PLSRegression(n_components=a, scale=autoscale).fit(X, Y)


def main(src, dst):
    with open(src) as f:
        d = json.load(f)
    wn = np.asarray(d["wavenumbers"], dtype=float)
    X = np.asarray(d["X"], dtype=float)[:, select(wn, d.get("regions"))]
    Y = np.asarray(d["Y"], dtype=float)
    A, K, autoscale = d["components"], d["folds"], bool(d["autoscale"])
    n, p = X.shape

    # X as the model sees it: centred, and scaled (ddof 1) when autoscaled.
    Xs = X - X.mean(axis=0)
    if autoscale:
        sd = X.std(axis=0, ddof=1)
        sd[sd == 0] = 1
        Xs = Xs / sd
    Yc = Y - Y.mean(axis=0)
    ss_y = (Yc ** 2).sum(axis=0)
    y_sd = Y.std(axis=0, ddof=1)

    m = fit(X, Y, A, autoscale)
    T, W, P = m.x_scores_, m.x_weights_, m.x_loadings_

    # VIP with unit-variance Y: SS_a from the least-squares Y loadings of
    # each score on the centred labels, each analyte divided by its sd.
    tt = (T ** 2).sum(axis=0)
    C = (Yc.T @ T) / tt                       # q x A, analyte units
    ss_a = (((C.T / y_sd) ** 2).sum(axis=1)) * tt
    Wn = W / np.linalg.norm(W, axis=0)
    vip = np.sqrt(p * (Wn ** 2 @ ss_a) / ss_a.sum())

    # R2X from the rank-one parts t_a p_a' themselves.
    total_x = (Xs ** 2).sum()
    r2x = np.array([(np.outer(T[:, a], P[:, a]) ** 2).sum() / total_x for a in range(A)])

    # R2Y from the fitted Y of the a-component model; Q2 from interleaved CV.
    r2y = np.zeros((A, Y.shape[1]))
    press = np.zeros((A, Y.shape[1]))
    fold = np.arange(n) % K
    for a in range(1, A + 1):
        r2y[a - 1] = 1 - ((Y - fit(X, Y, a, autoscale).predict(X)) ** 2).sum(axis=0) / ss_y
        for f in range(K):
            tr, te = fold != f, fold == f
            pred = fit(X[tr], Y[tr], a, autoscale).predict(X[te])
            press[a - 1] += ((Y[te] - pred) ** 2).sum(axis=0)
    q2 = 1 - press / ss_y

    leverage = 1.0 / n + np.einsum("ij,jk,ik->i", T, np.linalg.inv(T.T @ T), T)
    rmsec = np.sqrt(((Y - m.predict(X)) ** 2).sum(axis=0) / n)

    with open(dst, "w") as f:
        json.dump({
            "vip": vip.tolist(), "r2x": r2x.tolist(), "r2x_cumulative": np.cumsum(r2x).tolist(),
            "r2y": r2y.tolist(), "q2": q2.tolist(), "leverage": leverage.tolist(), "rmsec": rmsec.tolist(),
            "scores": T.tolist(), "x_weights": W.T.tolist(), "x_loadings": P.T.tolist(),
        }, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
