"""Multinomial logistic regression with L2, f(W; x, y) = logsumexp(x'W) - x'W_y + reg/2 ||W||^2, on clients of
unequal sizes: L and mu bounded, w* and f* computed to a stated tolerance; the digits data set and a synthetic one."""
from __future__ import annotations

from functools import cached_property

import numpy as np

from ..._validation import ParameterError, check_finite, check_float, check_int, check_random_state
from ..certificates import Certificate, certified
from ..partition import dirichlet_label_skew
from .base import ClientView, Constant, Problem, gather, shared_index

__all__ = ["LogisticProblem", "digits_logistic", "digits_split", "synthetic_logistic"]




def _shifted_exp(z, overwrite: bool = False):
    """The steps softmax and logsumexp share, over the last axis: m = max z, e = exp(z - m), s = sum e. With few
    classes numpy's reductions over a short last axis are slow; the class slices are folded instead.
    overwrite: e is computed in z's memory (z is then lost; the same numbers, no temporaries)."""
    k = z.shape[-1]
    if k > 16:
        m = z.max(axis=-1)
    else:
        m = z[..., 0].copy()
        for c in range(1, k):
            np.maximum(m, z[..., c], out=m)
    e = np.subtract(z, m[..., None], out=z if overwrite else None)
    np.exp(e, out=e)
    if k > 16:
        return m, e, e.sum(axis=-1)
    s = e[..., 0].copy()
    for c in range(1, k):
        s += e[..., c]
    return m, e, s


def _softmax(z, overwrite: bool = False):
    """softmax over the last axis; overwrite: in z's memory (see _shifted_exp)."""
    _, e, s = _shifted_exp(z, overwrite)
    return np.divide(e, s[..., None], out=e)


def _logsumexp(z):
    m, _, s = _shifted_exp(z)
    return m + np.log(s)


class _LogView(ClientView):
    def __init__(self, p: "LogisticProblem", clients, variant):
        self.p = p
        index = shared_index(variant, clients, p.X.shape[1])
        if index is not None:  # every run: the same clients and data, one read-only (N,S,...) block seen by all runs
            R, N = clients.shape
            self.X = np.broadcast_to(p.X[index], (R, N) + p.X.shape[2:])  # (R,N,S,f)
            self.Y = np.broadcast_to(p.Yoh[index], (R, N) + p.Yoh.shape[2:])  # (R,N,S,k)
        else:
            self.X = gather(p.X, variant, clients)  # (R,N,S,f)
            self.Y = gather(p.Yoh, variant, clients)  # (R,N,S,k)
        self.mask = p.mask[clients]  # (R,N,S)
        self.size = p.client_sizes[clients].astype(float)  # (R,N)

    def _W(self, w):
        return w.reshape(*w.shape[:-1], self.p.n_features, self.p.n_classes)

    def grad(self, w):
        W = self._W(w)
        E = _softmax(np.matmul(self.X, W), overwrite=True)  # (R,N,S,k): P, then (P - Y) * mask in its memory
        np.subtract(E, self.Y, out=E)
        np.multiply(E, self.mask[..., None], out=E)
        G = np.matmul(np.swapaxes(self.X, -1, -2), E)
        np.divide(G, self.size[..., None, None], out=G)
        return G.reshape(w.shape) + self.p.reg * w

    def loss(self, w):
        W = self._W(w)
        Z = np.matmul(self.X, W)
        lse = _logsumexp(Z)
        ce = (lse - np.sum(Z * self.Y, axis=-1)) * self.mask
        return ce.sum(axis=-1) / self.size + 0.5 * self.p.reg * np.sum(w**2, axis=-1)

    def representation(self, w):
        """The logits (pre-softmax activations) z_j = W' x_j of every sample: (R,N,S,k)."""
        return np.matmul(self.X, self._W(w))

    def representation_grad(self, w, G):
        return np.matmul(np.swapaxes(self.X, -1, -2), G).reshape(w.shape)

    def sample_weights(self):
        return self.mask / self.size[..., None]

    def representation_inputs(self):
        return self.X

    def grad_batch(self, w, idx):
        W = self._W(w)
        Xb = np.take_along_axis(self.X, idx[..., None], axis=2)
        Yb = np.take_along_axis(self.Y, idx[..., None], axis=2)
        E = _softmax(np.matmul(Xb, W), overwrite=True)  # P, then P - Y_b in its memory
        np.subtract(E, Yb, out=E)
        G = np.matmul(np.swapaxes(Xb, -1, -2), E)
        np.divide(G, idx.shape[-1], out=G)
        return G.reshape(w.shape) + self.p.reg * w


class LogisticProblem(Problem):
    """Multinomial logistic regression, clients of unequal sizes (padded and masked).

    L: bound  max_i lambda_max(X_i'X_i/S_i)/2 + reg (softmax Hessian <= I/2 in the Loewner order).
    mu: bound reg (strong convexity from the L2 term). w*, f*: computed by L-BFGS to ||grad|| <= 1e-10.
    Heterogeneity: measured over visited points (no closed form).

    The model is a weight matrix of ``n_classes`` rows over the features, flattened: d = n_features * n_classes.

    Parameters
    ----------
    X_clients : list of numpy.ndarray
        Each client's features, (S_i, n_features) (S_i >= 1; sizes may differ).
    y_clients : list of numpy.ndarray
        Each client's labels, integers in [0, n_classes).
    n_classes : int
        The number of classes (>= 2).
    reg : float, default 1e-2
        The L2 coefficient (> 0: it makes the problem strongly convex).
    test : tuple of (numpy.ndarray, numpy.ndarray), optional
        Held-out features and labels (the ``test_loss`` measure).
    name : str, default "logistic"
        The problem's name.
    _variants : tuple of (numpy.ndarray, numpy.ndarray), optional
        Internal: the padded data of every variant (a problem with neighbouring data sets builds itself with it).
        Leave it out.

    Raises
    ------
    ParameterError
        For a client without samples, non-finite features, ``reg`` <= 0 or ``n_classes`` < 2.
    """

    def __init__(self, X_clients: list[np.ndarray], y_clients: list[np.ndarray], n_classes: int, *, reg: float = 1e-2,
                 test: tuple[np.ndarray, np.ndarray] | None = None, name: str = "logistic",
                 _variants: tuple[np.ndarray, np.ndarray] | None = None):
        self.name = name
        self.reg = check_float("reg", reg, 0.0, low_inclusive=False)
        self.n_classes = check_int("n_classes", n_classes, 2)
        sizes = np.array([len(y) for y in y_clients])
        if np.any(sizes == 0):
            raise ParameterError("clients", sizes.tolist(), "every client must have at least one sample")
        for i, x in enumerate(X_clients):
            check_finite(f"X_clients[{i}]", x)
        self.client_sizes = sizes
        self.n_clients = len(y_clients)
        self.n_features = X_clients[0].shape[1]
        self.dim = self.n_features * self.n_classes
        Smax = int(sizes.max())
        if _variants is None:
            X = np.zeros((1, self.n_clients, Smax, self.n_features))
            Y = np.zeros((1, self.n_clients, Smax), dtype=np.int64)
            for i, (x, y) in enumerate(zip(X_clients, y_clients)):
                X[0, i, : len(y)] = x
                Y[0, i, : len(y)] = y
        else:
            X, Y = _variants
        self.X, self.Y = X, Y
        self.n_variants = X.shape[0]
        self.mask = (np.arange(Smax)[None, :] < sizes[:, None]).astype(float)
        self.Yoh = np.eye(self.n_classes)[Y] * self.mask[None, :, :, None]
        self.test = test
        self._clients_raw = (X_clients, y_clients)

    def view(self, clients, variant):
        return _LogView(self, clients, variant)

    def sample_losses(self, w, variant=None):
        v = self._variant(w, variant)
        W = w.reshape(-1, self.n_features, self.n_classes)
        Z = np.einsum("rcsf,rfk->rcsk", self.X[v], W)
        ce = _logsumexp(Z) - np.sum(Z * self.Yoh[v], axis=-1) + 0.5 * self.reg * np.sum(w**2, axis=1)[:, None, None]
        return np.where(self.mask[None] > 0, ce, np.nan)

    def sample_grad_stats(self, w, variant=None):
        v = self._variant(w, variant)
        W = w.reshape(-1, self.n_features, self.n_classes)
        X = self.X[v]
        P = _softmax(np.einsum("rcsf,rfk->rcsk", X, W))
        E = P - self.Yoh[v]
        G = np.einsum("rcsf,rcsk->rcsfk", X, E).reshape(*E.shape[:3], -1) + self.reg * w[:, None, None, :]
        m = self.mask[None]
        norms = np.where(m > 0, np.linalg.norm(G, axis=-1), 0.0)
        mean = np.sum(G * m[..., None], axis=2, keepdims=True) / self.client_sizes[None, :, None, None]
        var = np.sum(np.sum((G - mean) ** 2, axis=-1) * m, axis=2) / self.client_sizes[None]
        return norms.max(axis=(1, 2)), var.max(axis=1)

    def client_sample_variances(self, w):
        w = np.asarray(w, dtype=float)
        W = w.reshape(-1, self.n_features, self.n_classes)
        X = self.X[0][None]
        E = _softmax(np.einsum("rcsf,rfk->rcsk", X, W)) - self.Yoh[0][None]
        G = np.einsum("rcsf,rcsk->rcsfk", X, E).reshape(*E.shape[:3], -1)  # the L2 term is common: it cancels
        m = self.mask[None]
        mean = np.sum(G * m[..., None], axis=2, keepdims=True) / self.client_sizes[None, :, None, None]
        return (np.sum(np.sum((G - mean) ** 2, axis=-1) * m, axis=2) / self.client_sizes[None])[0]

    def sample_smoothness(self) -> Constant:
        return Constant(0.5 * float(np.max(np.sum(self.X ** 2, axis=-1))) + self.reg, "bound",
                        "max_ij ||x_ij||^2 / 2 + reg (softmax Hessian <= I/2)")

    def ce_gradient_bounds(self) -> np.ndarray:
        """b_i = sqrt(2) (1/S_i) sum_j ||x_ij||: a bound on ||grad ce_i(W)|| at every W, each client's cross-entropy
        part (||softmax - onehot|| <= sqrt(2)); the L2 term is common to the clients."""
        return np.array([np.sqrt(2.0) * float(np.mean(np.linalg.norm(self.X[0, i, :s], axis=1)))
                         for i, s in enumerate(self.client_sizes)])

    def _certify(self, name: str, visited=None) -> Certificate | None:
        c = self.constants
        grads_unbounded = (f"logistic regression with an L2 term: its gradient reg w (reg = {self.reg:g}) grows "
                           "linearly in ||w||")
        if name in ("L_smooth", "L_smooth_global"):
            return certified(name, c["L"].note, kind=c["L"].kind, L=c["L"].value)
        if name in ("convex", "convex_global"):
            return certified(name, "the cross-entropy of a linear model is convex, the L2 term strongly so")
        if name in ("strongly_convex", "strongly_convex_clients", "PL"):
            return certified(name, "reg: the L2 term's strong convexity (the cross-entropy is flat along W + v 1')"
                             + ("; strong convexity implies PL" if name == "PL" else ""), mu=self.reg)
        if name == "lower_bounded":
            return certified(name, c["f_star"].note, kind=c["f_star"].kind, f_star=c["f_star"].value)
        if name == "bounded_grad_norm":
            return self._visited_grad_norm(name, visited, grads_unbounded)
        if name == "lipschitz":
            return self._visited_lipschitz(name, visited, grads_unbounded)
        if name == "nonnegative_loss":
            return self._visited_loss_range(name, visited)
        b = self.ce_gradient_bounds()
        how = ("grad f_i - grad f = grad ce_i - mean_q grad ce_q (the L2 parts cancel), ||grad ce_i|| <= b_i = sqrt(2) "
               "mean_j ||x_ij||")
        if name == "heterogeneity":
            return certified(name, how + ": mean_i ||grad f_i||^2 = ||grad f||^2 + mean_i ||grad f_i - grad f||^2 <= "
                                         "||grad f||^2 + mean_i b_i^2, so G^2 = mean_i b_i^2 for every B >= 1",
                             kind="bound", B=1.0,
                             family=("G", lambda B: np.where(np.asarray(B, float) >= 1.0, np.sqrt(np.mean(b**2)),
                                                             np.inf)))
        if name == "heterogeneity_global":
            return certified(name, how + ": mean_i ||g_i - mean g||^2 <= mean_i ||g_i||^2 <= mean_i b_i^2",
                             kind="bound", sigma_g=float(np.sqrt(np.mean(b**2))))
        if name == "heterogeneity_max":
            return certified(name, how + ": ||g_i - mean g|| <= b_i + mean_q b_q", kind="bound",
                             zeta=float(np.sqrt(np.max((b + b.mean()) ** 2))))
        if name == "heterogeneity_at_optimum":
            w = np.asarray(c["w_star"].value)[None]
            g = self.client_grads(w, np.zeros(1, dtype=np.int64))[0]
            return certified(name, f"(1/C) sum_i ||grad f_i(w*)||^2 at w* ({c['w_star'].note})", kind=c["w_star"].kind,
                             zeta_star=float(np.sqrt(np.mean(np.sum(g ** 2, axis=1)))))
        return super()._certify(name, visited)

    def test_loss(self, w):
        if self.test is None:
            raise NotImplementedError(f"{self.name} has no held-out set")
        Xt, yt = self.test
        W = w.reshape(-1, self.n_features, self.n_classes)
        Z = np.matmul(Xt, W)  # (R, S, k)
        ce = _logsumexp(Z) - np.take_along_axis(Z, np.broadcast_to(yt[None, :, None], (Z.shape[0], len(yt), 1)),
                                                -1)[..., 0]
        return ce.mean(axis=1) + 0.5 * self.reg * np.sum(w**2, axis=1)

    def test_accuracy(self, w):
        Xt, yt = self.test
        W = w.reshape(-1, self.n_features, self.n_classes)
        return (np.argmax(np.einsum("sf,rfk->rsk", Xt, W), axis=-1) == yt[None]).mean(axis=1)

    @cached_property
    def _constants(self):
        lam = [np.linalg.eigvalsh(self.X[0, i, :s].T @ self.X[0, i, :s] / s).max()
               for i, s in enumerate(self.client_sizes)]
        L = 0.5 * float(max(lam)) + self.reg
        w, f, gn = self._minimise(0)
        return {
            "L": Constant(L, "bound", "max_i lambda_max(X_i'X_i/S_i)/2 + reg (softmax Hessian <= I/2)"),
            "mu": Constant(self.reg, "bound", "strong convexity from the L2 term"),
            "strongly_convex": Constant(True, "exact"),
            "w_star": Constant(w, "computed", f"L-BFGS, final ||grad f|| = {gn:.1e}"),
            "f_star": Constant(f, "computed", f"L-BFGS, final ||grad f|| = {gn:.1e}"),
        }

    def _minimise(self, variant: int) -> tuple[np.ndarray, float, float]:
        """(w*, f*, the final ||grad f||) of variant ``variant``'s objective by L-BFGS."""
        import scipy.optimize

        v = None if variant == 0 else np.array([variant])
        f = lambda w: float(self.loss(w[None], v)[0])
        g = lambda w: self.grad(w[None], v)[0]
        res = scipy.optimize.minimize(f, np.zeros(self.dim), jac=g, method="L-BFGS-B",
                                      options={"gtol": 1e-11, "ftol": 0, "maxiter": 20000})
        w = res.x
        return w, f(w), float(np.linalg.norm(g(w)))

    def _variant_optimum(self, variant: int) -> tuple[np.ndarray, float]:
        w, f, _ = self._minimise(variant)
        return w, f

    @cached_property
    def _client_curvature(self):
        X = self.X[0]  # padded rows are 0 and add nothing
        lam = np.linalg.eigvalsh(np.einsum("csf,csg->cfg", X, X) / self.client_sizes[:, None, None])[:, -1]
        return {
            "L_clients": Constant(0.5 * lam + self.reg, "bound",
                                  "lambda_max(X_i'X_i/S_i)/2 + reg (softmax Hessian <= I/2)"),
            "mu_clients": Constant(np.full(self.n_clients, self.reg), "exact",
                                   "reg: the cross-entropy is flat along W + v 1' (a shift common to all classes), so "
                                   "the L2 term's reg is each f_i's exact strong convexity"),
        }

    @cached_property
    def _client_minima(self):
        import scipy.optimize

        zero = np.zeros(1, dtype=np.int64)
        W, F, gmax = np.empty((self.n_clients, self.dim)), np.empty(self.n_clients), 0.0
        for i in range(self.n_clients):  # once per problem, not on a hot path
            v = self.view(np.array([[i]]), zero)
            f = lambda w: float(v.loss(w[None, None])[0, 0])
            g = lambda w: v.grad(w[None, None])[0, 0]
            res = scipy.optimize.minimize(f, np.zeros(self.dim), jac=g, method="L-BFGS-B",
                                          options={"gtol": 1e-7, "ftol": 0, "maxiter": 20000})
            w = res.x
            x = self.X[0, i, : self.client_sizes[i]]
            for _ in range(6):  # Newton from there: quadratic convergence to rounding (L-BFGS stalls near 1e-9)
                step = np.linalg.solve(self._client_hessian(x, w), g(w))
                if not np.linalg.norm(g(w - step)) < np.linalg.norm(g(w)):
                    break
                w = w - step
            W[i], F[i] = w, f(w)
            gmax = max(gmax, float(np.linalg.norm(g(w))))
        how = (f"L-BFGS + Newton per client, final max_i ||grad f_i|| = {gmax:.1e} (so ||w - w_i*|| <= "
               f"{gmax / self.reg:.1e} and f_i - f_i* <= {gmax**2 / (2 * self.reg):.1e} by reg-strong convexity)")
        return {"w_star_clients": Constant(W, "computed", how), "f_star_clients": Constant(F, "computed", how)}

    def _client_hessian(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        """Hessian of (1/S) sum_j CE(x_j' W) + reg/2 ||w||^2 over the rows x (S, f), flat features-major: (d, d)."""
        P = _softmax(x @ w.reshape(self.n_features, self.n_classes))  # (S, k)
        D = np.einsum("sk,kl->skl", P, np.eye(self.n_classes)) - np.einsum("sk,sl->skl", P, P)
        Y = x[:, None, :, None] * D[:, :, None, :]  # (S, k, g, l) = x_sg D_skl
        H = (x.T @ Y.reshape(len(x), -1)).reshape(self.dim, self.dim) / len(x)  # sum_s x_sf x_sg D_skl
        return H + self.reg * np.eye(self.dim)

    def sample_gradient_variance(self) -> Constant:
        sq = np.einsum("csf,csf->c", self.X[0], self.X[0]) / self.client_sizes
        return Constant(float(2 * sq.max()), "bound",
                        "max_i (2/S_i) sum_j ||x_ij||^2: the variance is at most the mean of ||x_j||^2 ||p_j - "
                        "e_y||^2, and ||p - e_y||^2 <= 2")

    def heterogeneity_G2(self, B: float) -> Constant:
        raise NotImplementedError("logistic regression: G^2(B) has no closed form; measure it over visited points "
                                  "with fedtheory.sim.stability.measured_heterogeneity_G2")

    def neighbours(self, replacements, random_state=0):
        if self.test is None:
            raise ParameterError("problem", self.name, "a problem with a held-out pool to draw the replacement from")
        def draw(rng, client):  # a held-out sample
            j = rng.integers(len(self.test[1]))
            return self.test[0][j], self.test[1][j]

        X, Y = self._replaced((self.X[0], self.Y[0]), replacements, draw, random_state)
        return LogisticProblem(*self._clients_raw, self.n_classes, reg=self.reg, test=self.test, name=self.name,
                               _variants=(X, Y))


def digits_split(test_fraction: float, random_state=0):
    """scikit-learn's bundled digits as (X, y, train_idx, test_idx): pixels / 16 plus a bias feature, a random
    ``test_fraction`` held out (no download)."""
    from sklearn.datasets import load_digits

    test_fraction = check_float("test_fraction", test_fraction, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    rng = check_random_state(random_state)
    data = load_digits()
    X = np.hstack([data.data / 16.0, np.ones((len(data.target), 1))])
    y = data.target.astype(np.int64)
    perm = rng.permutation(len(y))
    n_test = int(round(test_fraction * len(y)))
    return X, y, perm[n_test:], perm[:n_test]


def digits_logistic(n_clients: int = 10, alpha: float = 0.5, *, reg: float = 1e-2, test_fraction: float = 0.2,
                    random_state=0) -> LogisticProblem:
    """scikit-learn's bundled digits (1797 8x8 images, 10 classes; no download), pixels / 16 plus a bias
    feature, split across clients by Dirichlet label skew; ``test_fraction`` is held out.

    Parameters
    ----------
    n_clients : int, default 10
        The number of clients (>= 1).
    alpha : float, default 0.5
        The Dirichlet concentration of each client's label proportions (smaller: more skewed).
    reg : float, default 1e-2
        The L2 coefficient (> 0).
    test_fraction : float, default 0.2
        The share of the images held out as the test set.
    random_state : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        The draw's seed (``check_random_state``): the same seed, the same problem.

    Returns
    -------
    LogisticProblem
        Named ``digits_logistic``, 65 features (64 pixels and the bias), 10 classes, with its test set.
    """
    n_clients = check_int("n_clients", n_clients, 1)
    rng = check_random_state(random_state)
    X, y, train_idx, test_idx = digits_split(test_fraction, rng)
    parts = dirichlet_label_skew(y[train_idx], n_clients, alpha, random_state=rng)
    Xc = [X[train_idx][p] for p in parts]
    yc = [y[train_idx][p] for p in parts]
    return LogisticProblem(Xc, yc, 10, reg=reg, test=(X[test_idx], y[test_idx]), name="digits_logistic")


def synthetic_logistic(n_clients: int = 10, n_features: int = 10, n_classes: int = 3, samples_per_client: int = 60, *,
                       alpha: float = 0.5, shift: float = 1.0, reg: float = 1e-2, random_state=0) -> LogisticProblem:
    """Gaussian class-conditional features; client i adds its own feature shift (scaled by ``shift``)
    and draws labels with Dirichlet(alpha) proportions.

    Features are divided by sqrt(n_features) and get a bias feature; every client also draws 20 test samples.

    Parameters
    ----------
    n_clients : int, default 10
        The number of clients (>= 1).
    n_features : int, default 10
        The number of features before the bias (>= 1).
    n_classes : int, default 3
        The number of classes (>= 2).
    samples_per_client : int, default 60
        The training samples of each client (>= 1).
    alpha : float, default 0.5
        The Dirichlet concentration of each client's label proportions (smaller: more skewed).
    shift : float, default 1.0
        The scale of each client's own feature shift.
    reg : float, default 1e-2
        The L2 coefficient (> 0).
    random_state : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        The draw's seed (``check_random_state``): the same seed, the same problem.

    Returns
    -------
    LogisticProblem
        Named ``synthetic_logistic``, with its test set.
    """
    n_clients = check_int("n_clients", n_clients, 1)
    n_features = check_int("n_features", n_features, 1)
    n_classes = check_int("n_classes", n_classes, 2)
    S = check_int("samples_per_client", samples_per_client, 1)
    rng = check_random_state(random_state)
    centers = rng.standard_normal((n_classes, n_features))
    shifts = shift * rng.standard_normal((n_clients, n_features)) / np.sqrt(n_features)

    def draw(i, n):
        q = rng.dirichlet(np.full(n_classes, alpha))
        y = rng.choice(n_classes, size=n, p=q)
        x = centers[y] + shifts[i] + rng.standard_normal((n, n_features))
        return np.hstack([x / np.sqrt(n_features), np.ones((n, 1))]), y

    Xc, yc = zip(*(draw(i, S) for i in range(n_clients)))
    pool = [draw(i, 20) for i in range(n_clients)]
    test = (np.vstack([p[0] for p in pool]), np.concatenate([p[1] for p in pool]))
    return LogisticProblem(list(Xc), list(yc), n_classes, reg=reg, test=test, name="synthetic_logistic")
