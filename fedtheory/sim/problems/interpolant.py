"""Smooth (strongly) convex interpolation through given points, gradients and values, in numpy alone.

A function f = (mu/2)||x||^2 + h with h convex and L'-smooth (L' = L - mu), h through the data (x_k, s_k, v_k)
(s_k = g_k - mu x_k, v_k = f_k - (mu/2)||x_k||^2): the conjugate of the 1/L'-strongly convex
h*(y) = max_k [v*_k + <x_k, y - s_k> + ||y - s_k||^2 / (2 L')] (v*_k = <x_k, s_k> - v_k), which by minimax is

    h(x) = min over the simplex of lam of (L'/2) ||x - A' lam||^2 - c' lam,   a_k = x_k - s_k / L',
                                                                              c_k = ||s_k||^2 / (2 L') - v_k,
    grad h(x) = L' (x - A' lam*).

For every data set, h is convex and L'-smooth (a conjugate of a 1/L'-strongly convex function), so f is L-smooth and
mu-strongly convex (mu < 0: L-smooth and (-mu)-weakly convex, the class of L-smooth functions when mu = -L): the
class holds by construction. Where the data meet the interpolation inequalities of the class (Taylor, Hendrickx &
Glineur 2017, Thm 4), f passes through them: lam* = e_k at x_k. The simplex problem is solved exactly by an active-set
method (a handful of small linear solves near the data).

This module imports numpy only: the counterexample scripts of ``fedtheory.worst.pep.instance`` embed its source.
"""
import numpy as np


def simplex_qp(M, q, start=None, tol=1e-13, max_iter=None):
    """argmin over the simplex {lam >= 0, sum lam = 1} of 0.5 lam' M lam + q' lam (M symmetric PSD): a primal
    active-set method (the support grows by the most negative reduced gradient, shrinks by a ratio test). Returns
    (lam, the Frank-Wolfe gap: an upper bound on the objective's distance to the minimum)."""
    m = len(q)
    vertex = 0.5 * np.diag(M) + q
    k0 = int(np.argmin(vertex)) if start is None else int(start)
    lam = np.zeros(m)
    lam[k0] = 1.0
    S = [k0]
    max_iter = 20 * m + 50 if max_iter is None else max_iter
    scale = max(1.0, float(np.abs(M).max()), float(np.abs(q).max()))
    for _ in range(max_iter):
        # the minimum over the affine hull of the support: [M_SS 1; 1' 0] [l; nu] = [-q_S; 1]
        k = len(S)
        K = np.zeros((k + 1, k + 1))
        K[:k, :k] = M[np.ix_(S, S)]
        K[:k, k] = 1.0
        K[k, :k] = 1.0
        rhs = np.concatenate([-q[S], [1.0]])
        sol = np.linalg.lstsq(K, rhs, rcond=None)[0][:k]
        if np.all(sol >= -tol):
            lam[:] = 0.0
            lam[S] = np.maximum(sol, 0.0)
            lam /= lam.sum()
            g = M @ lam + q
            level = float(g @ lam)
            j = int(np.argmin(g))
            if g[j] >= level - tol * scale or j in S:
                return lam, max(0.0, level - float(g[j]))
            S.append(j)
            continue
        # move from lam towards sol until a support weight reaches 0, and drop it
        cur = lam[S]
        step = cur - sol
        ratio = np.where(step > 0, cur / np.where(step > 0, step, 1.0), np.inf)
        r = int(np.argmin(ratio))
        t = float(min(1.0, ratio[r]))
        new = cur + t * (sol - cur)
        new[r] = 0.0
        lam[:] = 0.0
        lam[S] = np.maximum(new, 0.0)
        lam /= lam.sum()
        S = [s for s in S if lam[s] > 0.0]
    g = M @ lam + q
    return lam, max(0.0, float(g @ lam - g.min()))


def interpolant_data(x, g, f, L, mu):
    """(A, c) of the interpolant through points x (m, d), gradients g (m, d), values f (m,), for L-smooth
    mu-strongly convex functions (mu may be negative, down to -L)."""
    x, g, f = (np.asarray(v, dtype=float) for v in (x, g, f))
    Lp = L - mu
    s = g - mu * x
    v = f - 0.5 * mu * np.sum(x * x, axis=1)
    return x - s / Lp, np.sum(s * s, axis=1) / (2.0 * Lp) - v


def interpolant(A, c, L, mu, x):
    """(f(x), grad f(x), Frank-Wolfe gap of the inner problem) of f = (mu/2)||x||^2 + h at one point x (d,)."""
    x = np.asarray(x, dtype=float)
    Lp = L - mu
    M = Lp * (A @ A.T)
    q = -(Lp * (A @ x) + c)
    near = int(np.argmin(0.5 * Lp * np.sum((x - A) ** 2, axis=1) - c))
    lam, gap = simplex_qp(M, q, start=near)
    u = A.T @ lam
    h = 0.5 * Lp * float((x - u) @ (x - u)) - float(c @ lam)
    return 0.5 * mu * float(x @ x) + h, mu * x + Lp * (x - u), gap


def minimize_sum(parts, weights, L, mu, x0, tol=1e-12, max_iter=200000):
    """A minimizer of F = sum_j p_j f_j (each f_j = interpolant(A_j, c_j, L, mu)) by gradient descent with step 1/L
    from x0 (F is L-smooth): (x, F(x), ||grad F(x)||)."""
    x = np.asarray(x0, dtype=float).copy()

    def value_grad(z):
        val, grad = 0.0, np.zeros_like(z)
        for (A, c), p in zip(parts, weights):
            fv, gv, _ = interpolant(A, c, L, mu, z)
            val += p * fv
            grad += p * gv
        return val, grad

    val, grad = value_grad(x)
    for _ in range(max_iter):
        if np.linalg.norm(grad) <= tol * max(1.0, np.linalg.norm(x)):
            break
        x = x - grad / L
        val, grad = value_grad(x)
    return x, val, float(np.linalg.norm(grad))
