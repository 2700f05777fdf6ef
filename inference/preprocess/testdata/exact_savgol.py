"""Exact Savitzky-Golay coefficients by rational arithmetic.

Reads a JSON list of {"window", "polyorder", "deriv", "rows"} on stdin and
writes, for each, the requested rows of the window's coefficient matrix:
row i holds the weights that give the deriv-th derivative, at window
position i, of the least-squares polynomial of degree polyorder through
the window's points (unit spacing). Only the standard library is used.
"""
import json
import sys
from fractions import Fraction


def exact_rows(w, k, d, rows):
    h = w // 2
    xs = [Fraction(j - h) for j in range(w)]
    K = k + 1
    # Normal equations: G = A'A with A[j][m] = xs[j]^m; Gi = G^-1.
    pw = [[x ** m for m in range(2 * K)] for x in xs]
    G = [[sum(p[a + b] for p in pw) for b in range(K)] for a in range(K)]
    M = [G[a][:] + [Fraction(int(a == b)) for b in range(K)] for a in range(K)]
    for c in range(K):
        piv = next(r for r in range(c, K) if M[r][c] != 0)
        M[c], M[piv] = M[piv], M[c]
        pv = M[c][c]
        M[c] = [v / pv for v in M[c]]
        for r in range(K):
            if r != c and M[r][c] != 0:
                f = M[r][c]
                M[r] = [a - f * b for a, b in zip(M[r], M[c])]
    Gi = [row[K:] for row in M]
    out = []
    for i in rows:
        s = Fraction(i - h)
        # v[m] = d^d/ds^d s^m at s.
        v = []
        for m in range(K):
            if m < d:
                v.append(Fraction(0))
            else:
                ff = 1
                for t in range(d):
                    ff *= m - t
                v.append(ff * s ** (m - d))
        u = [sum(v[m] * Gi[m][l] for m in range(K)) for l in range(K)]
        out.append([float(sum(u[l] * pw[j][l] for l in range(K))) for j in range(w)])
    return out


if __name__ == "__main__":
    reqs = json.load(sys.stdin)
    json.dump([exact_rows(r["window"], r["polyorder"], r["deriv"], r["rows"]) for r in reqs], sys.stdout)
