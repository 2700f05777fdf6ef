"""Reference for TestContributionsMatchNumPy: T2, Q and their per-variable
contributions, written from the definitions in api/messages.md
(section 8.1) with NumPy only.

Input (argv[1], JSON): axis, regions (null: the whole axis), x_mean,
x_scale, rotations and loadings (p rows of a), score_variance, intensities,
k. Output (stdout, JSON): for t2 and q, total, top ([wavenumber, value],
largest first, ties to the lower variable) and regions ([low, high, value]).
"""
import json
import sys

import numpy as np


def main():
    case = json.load(open(sys.argv[1]))
    axis = np.array(case["axis"])
    x = np.array(case["intensities"])
    regions = case["regions"]
    if regions:
        # The model's variables: axis points inside any region, in axis order.
        inside = np.zeros(axis.size, dtype=bool)
        for low, high in regions:
            inside |= (axis >= low) & (axis <= high)
        selected = np.flatnonzero(inside)
    else:
        regions = [[axis[0], axis[-1]]]
        selected = np.arange(axis.size)
    wn = axis[selected]
    xs = (x[selected] - np.array(case["x_mean"])) / np.array(case["x_scale"])
    R = np.array(case["rotations"])  # W* = W (P'W)^-1
    P = np.array(case["loadings"])
    s2 = np.array(case["score_variance"])
    t = xs @ R

    # Kourti & MacGregor (1996): cont_j = xs_j sum_a (t_a / s_a^2) w*_ja.
    t2_cont = xs * (R @ (t / s2))
    # Q = ||e||^2, e = xs - P t: cont_j = e_j^2.
    e = xs - P @ t
    q_cont = e * e

    # Each variable counts in the first region (in the model's order)
    # holding it.
    owner = np.full(wn.size, -1)
    for r, (low, high) in enumerate(regions):
        owner[(owner < 0) & (wn >= low) & (wn <= high)] = r

    def summary(total, cont):
        order = np.argsort(-cont, kind="stable")[: case["k"]]
        return {
            "total": float(total),
            "top": [[float(wn[j]), float(cont[j])] for j in order],
            "regions": [[float(low), float(high), float(cont[owner == r].sum())]
                        for r, (low, high) in enumerate(regions)],
        }

    json.dump({"t2": summary(np.sum(t * t / s2), t2_cont),
               "q": summary(e @ e, q_cont)}, sys.stdout)


main()
