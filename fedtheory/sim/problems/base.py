"""What every problem is: :class:`Problem` (client objectives f_i on a leading variant axis, their oracles and
constants), :class:`ClientView` (the selected clients' data for one round), :class:`Constant` (a value and how it is
known) and :class:`Constants`; the indexing helpers the problem families share."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable, Iterator

import numpy as np

from ..._validation import check_int, check_random_state
from ..certificates import VISITED_ONLY, Certificate, certified, from_visited, refused, undeclared, visited_values

__all__ = ["CLIENT_CONSTANTS", "ClientView", "Constant", "Constants", "Problem", "gather", "sample_rows",
           "shared_index"]


@dataclass(frozen=True)
class Constant:
    """A problem constant: ``value`` and how it is known (``kind``: exact | bound | computed | measured;
    ``note``: the method, e.g. the solver and its final gradient norm).

    Parameters
    ----------
    value : object
        The number, or an array (one per client, a minimizer).
    kind : {"exact", "bound", "computed", "measured"}
        How it is known: exactly, an upper (or lower) bound, computed by a solver to a stated tolerance, or
        measured on a run.
    note : str, default ""
        How it was obtained.
    """

    value: Any
    kind: str  # exact | bound | computed | measured
    note: str = ""


CLIENT_CONSTANTS = ("L_clients", "mu_clients", "w_star_clients", "f_star_clients", "Gamma")


class Constants(Mapping):
    """A problem's constants by name (a read-only mapping); the lazy ones are computed on first access."""

    def __init__(self, eager: Mapping[str, Constant], lazy: Mapping[str, Callable[[], Constant]]):
        self._values = dict(eager)
        self._lazy = {k: f for k, f in lazy.items() if k not in self._values}
        self._order = list(self._values) + list(self._lazy)

    def __getitem__(self, key: str) -> Constant:
        if key not in self._values:
            if key not in self._lazy:
                raise KeyError(key)
            self._values[key] = self._lazy[key]()
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def __repr__(self) -> str:
        return f"Constants({', '.join(self._order)})"




class ClientView:
    """The data of the clients selected for one round, gathered once: clients (R, N)."""

    def grad(self, w: np.ndarray) -> np.ndarray:  # exact local gradient, (R,N,d) -> (R,N,d)
        raise NotImplementedError

    def grad_batch(self, w: np.ndarray, idx: np.ndarray) -> np.ndarray:  # minibatch, idx (R,N,b)
        raise NotImplementedError

    def loss(self, w: np.ndarray) -> np.ndarray:  # (R,N,d) -> (R,N)
        raise NotImplementedError

    def descend(self, w0: np.ndarray, lr: Any, steps: int, noise: np.ndarray | None = None,
                direction_sum: bool = False) -> tuple[np.ndarray, np.ndarray | None] | None:
        """``steps`` local gradient steps at once: w_{k+1} = w_k - lr (grad f_i(w_k) + noise[:, k]) from w0 (R,N,d),
        lr (R,1,1) or a scalar, noise (R, steps, N, d) or None. Returns (w_K, the sum of the steps' directions or None)
        as C-contiguous (R,N,d) arrays (the layout of the step-by-step loop's: the rounding of a later sum depends on
        it), with every elementwise operation of the loop rounded as there (a product of the view's own may take
        another BLAS route); or None when the view has no faster route than ``grad`` step by step (the default)."""
        return None

    def prox(self, anchor: np.ndarray, mu: np.ndarray) -> np.ndarray:
        """argmin_x f_i(x) + (mu/2) ||x - anchor_i||^2 for every selected client, anchor (R,N,d), mu (R,1,1)."""
        raise NotImplementedError(f"{type(self).__name__} has no exact proximal solve")

    # Representations of the clients' samples under a model (seed 003's hyperbolic regularizer compares them
    # under the local and the global model). Only problems with a natural representation provide them.
    def representation(self, w: np.ndarray) -> np.ndarray:
        """z_j(w) for every sample of every selected client: (R,N,d) -> (R,N,S,m); padded samples give 0."""
        raise NotImplementedError(f"{type(self).__name__} has no sample representation")

    def representation_grad(self, w: np.ndarray, G: np.ndarray) -> np.ndarray:
        """Pull back G (R,N,S,m), a gradient with respect to the representations, to w: sum_j J_j(w)' G_j, (R,N,d)."""
        raise NotImplementedError(f"{type(self).__name__} has no sample representation")

    def sample_weights(self) -> np.ndarray:
        """(R,N,S): 1/S_i for client i's samples, 0 for padding (a client's mean over samples is a weighted sum)."""
        raise NotImplementedError(f"{type(self).__name__} has no sample representation")

    def representation_inputs(self) -> np.ndarray:
        """For a representation linear in w, z_j = W' x_j: the inputs x_j, (R,N,S,f) (used to bound curvature)."""
        raise NotImplementedError(f"{type(self).__name__} has no linear sample representation")


class Problem:
    """Base class. Shapes: w (R, d); clients (R, N); variant (R,) ints into the variant axis."""

    name: str = "problem"
    dim: int
    n_clients: int
    n_variants: int = 1
    client_sizes: np.ndarray  # (C,) samples per client
    nonnegative_losses: bool = True  # per-sample losses >= 0 (Lemma 5 of seed 000 needs it)

    # ---- oracles
    def view(self, clients: np.ndarray, variant: np.ndarray) -> ClientView:
        raise NotImplementedError

    def client_losses(self, w: np.ndarray, variant: np.ndarray) -> np.ndarray:
        """f_i(w) for every client: (R, C)."""
        R, C = w.shape[0], self.n_clients
        return self._every_client_view(R, variant).loss(np.broadcast_to(w[:, None, :], (R, C, self.dim)))

    def client_grads(self, w: np.ndarray, variant: np.ndarray) -> np.ndarray:
        """grad f_i(w) for every client: (R, C, d)."""
        R, C = w.shape[0], self.n_clients
        return self._every_client_view(R, variant).grad(np.broadcast_to(w[:, None, :], (R, C, self.dim)))

    def _every_client_view(self, runs: int, variant: np.ndarray) -> ClientView:
        """The view of every client for these runs' variants, gathered once and kept for the next call with the same
        runs and variants (a simulation measures f and its gradient at w^t every round)."""
        variant = np.asarray(variant)
        key = (runs, variant.dtype.str, variant.tobytes())
        kept = self.__dict__.get("_every_client")
        if kept is None or kept[0] != key:
            clients = np.broadcast_to(np.arange(self.n_clients), (runs, self.n_clients))
            kept = self.__dict__["_every_client"] = (key, self.view(clients, variant))
        return kept[1]

    def loss(self, w: np.ndarray, variant: np.ndarray | None = None) -> np.ndarray:
        return self.client_losses(w, self._variant(w, variant)).mean(axis=1)

    def grad(self, w: np.ndarray, variant: np.ndarray | None = None) -> np.ndarray:
        return self.client_grads(w, self._variant(w, variant)).mean(axis=1)

    def global_loss(self, w: np.ndarray, variant: np.ndarray | None = None) -> np.ndarray:
        """f(w) at many points w (M, d), by the cheapest exact route (default: ``loss``; least squares: the mean
        Hessian, C times cheaper than going through the clients). The step measures use it."""
        return self.loss(w, variant)

    def global_grad(self, w: np.ndarray, variant: np.ndarray | None = None) -> np.ndarray:
        """grad f(w) at many points w (M, d), by the cheapest exact route (default: ``grad``)."""
        return self.grad(w, variant)

    def sample_losses(self, w: np.ndarray, variant: np.ndarray | None = None) -> np.ndarray:
        """Per-sample losses f(w; z_ij) of every client: (R, C, S_max), NaN where no sample."""
        raise NotImplementedError

    def sample_grad_stats(self, w: np.ndarray, variant: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Per run: (max_ij ||grad f(w; z_ij)||, max_i (1/S_i) sum_j ||grad f(w;z_ij) - grad f_i(w)||^2)."""
        raise NotImplementedError

    def population_loss(self, w: np.ndarray) -> np.ndarray:
        """F(w) = (1/C) sum_i E_{z ~ D_i} f(w; z) where the distribution is known."""
        raise NotImplementedError(f"{self.name} has no known population risk")

    # ---- constants
    @property
    def _constants(self) -> dict[str, Constant]:  # the global constants; subclasses compute them once
        raise NotImplementedError

    @cached_property
    def _all_constants(self) -> Constants:
        lazy = {"L_clients": lambda: self._client_curvature["L_clients"],
                "mu_clients": lambda: self._client_curvature["mu_clients"],
                "w_star_clients": lambda: self._client_minima["w_star_clients"],
                "f_star_clients": lambda: self._client_minima["f_star_clients"],
                "Gamma": self._gamma}
        return Constants(self._constants, lazy)

    @property
    def constants(self) -> Constants:
        """Every constant by name (see the module docstring); per-client ones are computed on first access."""
        return self._all_constants

    @property
    def client_weights(self) -> np.ndarray:
        """p_i of the global objective f = sum_i p_i f_i: 1/C for every client (seed 000 eq. (2))."""
        return np.full(self.n_clients, 1.0 / self.n_clients)

    def variant_optima(self) -> tuple[np.ndarray, np.ndarray]:
        """Every data variant's own minimiser and minimum.

        Returns
        -------
        (w_star, f_star) : (np.ndarray of shape (V, d), np.ndarray of shape (V,))
            Row 0 is ``constants['w_star']`` and ``constants['f_star']``; row j the minimiser and minimum of f on
            variant j's data (a worst-case search's instance, a neighbouring data set), computed as the family
            computes variant 0's. The engine measures every run against its own variant's (``opt_error``,
            ``dist2_opt``, ``visited_max_dist2``, the step measures).
        """
        return self._variant_optima

    @cached_property
    def _variant_optima(self) -> tuple[np.ndarray, np.ndarray]:
        c = self.constants
        W = [np.asarray(c["w_star"].value, dtype=np.float64)]
        F = [float(c["f_star"].value)]
        for j in range(1, self.n_variants):
            w, f = self._variant_optimum(j)
            W.append(np.asarray(w, dtype=np.float64))
            F.append(float(f))
        return np.stack(W), np.asarray(F)

    def _variant_optimum(self, variant: int) -> tuple[np.ndarray, float]:
        """(w*, f*) of data variant ``variant`` >= 1; families with variants override it."""
        raise NotImplementedError(f"{self.name} ({type(self).__name__}) states the minimiser of its data variant 0 "
                                  f"only, not of variant {variant}")

    @cached_property
    def _client_curvature(self) -> dict[str, Constant]:  # L_clients, mu_clients
        raise NotImplementedError(f"{self.name} states no per-client curvature")

    @cached_property
    def _client_minima(self) -> dict[str, Constant]:  # w_star_clients, f_star_clients
        raise NotImplementedError(f"{self.name} states no per-client minima")

    def _client_losses_at(self, W: np.ndarray) -> np.ndarray:
        """f_i(W_i) for every client i at its own point, variant 0: W (C, d) -> (C,)."""
        clients = np.arange(self.n_clients)[None]
        return self.view(clients, np.zeros(1, dtype=np.int64)).loss(np.asarray(W, dtype=np.float64)[None])[0]

    def _gamma(self) -> Constant:
        f_star, fi = self.constants["f_star"], self.constants["f_star_clients"]
        if self.identical_clients:  # every f_i = f: f_i* = f*
            return Constant(0.0, "exact", "f* - sum_i p_i f_i* = 0: every client's objective is f")
        mean_fi = float(self.client_weights @ np.asarray(fi.value))
        gamma = float(f_star.value - mean_fi)
        if -1e-12 * max(abs(float(f_star.value)), abs(mean_fi), 1e-300) <= gamma < 0:  # >= 0 exactly; rounding only
            gamma = 0.0
        kind = "exact" if f_star.kind == fi.kind == "exact" else "computed"
        return Constant(gamma, kind, "f* - sum_i p_i f_i* (Li et al. 2020), from f_star and f_star_clients")

    @property
    def identical_clients(self) -> bool:
        """Whether every client's objective is the same function f (identical data: a theorem's premise such as
        Stich 2019's). False unless the problem can tell (least squares compares its clients' data)."""
        return False

    def sample_smoothness(self) -> Constant:
        """The largest smoothness constant of a per-sample loss f(.; z_ij) when every per-sample loss is convex (the
        expected smoothness of a minibatch oracle is at most it: Gower et al. 2019, Prop. 3.7), as a Constant; inf
        (with the reason in its note) where per-sample losses are not convex or not smooth."""
        raise NotImplementedError(f"{self.name} states no per-sample smoothness")

    def client_sample_variances(self, w: np.ndarray) -> np.ndarray:
        """(1/S_i) sum_j ||grad f(w; z_ij) - grad f_i(w)||^2 of every client at one point w (1, d), variant 0: (C,)
        (the one-sample gradient variance per client; a minibatch of b divides it by b)."""
        raise NotImplementedError(f"{self.name} states no per-client one-sample variance")

    def sample_gradient_variance(self) -> Constant:
        """sup_w max_i (1/S_i) sum_j ||grad f(w; z_ij) - grad f_i(w)||^2: the variance of a one-sample gradient
        (variant 0); the value at given points is ``sample_grad_stats(w)[1]``."""
        raise NotImplementedError(f"{self.name} states no one-sample gradient variance")

    def heterogeneity_G2(self, B: float) -> Constant:
        """Smallest G^2 with (1/C) sum_i ||grad f_i(w)||^2 <= G^2 + B^2 ||grad f(w)||^2 for all w."""
        raise NotImplementedError

    def neighbour(self, client: int, index: int, random_state=0) -> "Problem":
        """This problem with a second variant: sample ``index`` of ``client`` replaced by a fresh one."""
        return self.neighbours([(client, index)], random_state)

    def neighbours(self, replacements, random_state=0) -> "Problem":
        """Variant 0 = this data; variant j+1 = this data with replacement j = (client, index) done."""
        raise NotImplementedError

    def random_replacements(self, n: int, random_state=0) -> list[tuple[int, int]]:
        """n (client, index) pairs drawn uniformly over all samples."""
        rng = check_random_state(random_state)
        sizes = self.client_sizes
        flat = rng.integers(0, int(sizes.sum()), size=n)
        edges = np.cumsum(sizes)
        clients = np.searchsorted(edges, flat, side="right")
        starts = np.concatenate([[0], edges[:-1]])
        return [(int(c), int(f - starts[c])) for c, f in zip(clients, flat)]

    def _check_replacement(self, client, index):
        client = check_int("client", client, 0, self.n_clients - 1)
        index = check_int("index", index, 0, int(self.client_sizes[client]) - 1)
        return client, index

    def _replaced(self, arrays, replacements, draw, random_state) -> list[np.ndarray]:
        """The variant axis ``neighbours`` builds: each of ``arrays`` (variant 0's data, clients first), then one copy
        per replacement (client, index) with that sample's entries set to ``draw(rng, client)`` (one per array)."""
        rng = check_random_state(random_state)
        stacks = [[a] for a in arrays]
        for client, index in replacements:
            client, index = self._check_replacement(client, index)
            for stack, a, value in zip(stacks, arrays, draw(rng, client)):
                b = a.copy()
                b[client, index] = value
                stack.append(b)
        return [np.stack(s) for s in stacks]

    def initial_point(self, random_state=0, scale: float = 1.0) -> np.ndarray:
        rng = check_random_state(random_state)
        w_star = np.asarray(self.constants["w_star"].value)
        return w_star + scale * rng.standard_normal(self.dim) / np.sqrt(self.dim)

    # ---- what the problem satisfies
    def certify(self, name: str, visited: Any = None) -> Certificate:
        """The problem's answer to the catalogue assumption ``name`` (``fedtheory.theory.CATALOGUE``, subject
        'problem'): certified with its exact constants, refused with the reason, or unknown
        (``fedtheory.sim.certificates``). ``visited``: the run's visited measures, for constants that hold only on
        the region the run visited."""
        cert = self._certify(name, visited)
        return (cert if cert is not None else undeclared(name, self)).with_by(type(self).__name__)

    def _certify(self, name: str, visited: Any) -> Certificate | None:
        """A family's answers (None: not declared). Families override it and answer every catalogue assumption
        about problems (tests/test_certificates.py holds them to it), falling back on :meth:`_certify_run` for the
        ones every family answers the same way."""
        return self._certify_run(name, visited)

    def _certify_run(self, name: str, visited: Any) -> Certificate | None:
        """The assumptions about where a run goes rather than about the objectives, answered alike for every family:
        a bounded domain and a bounded weight mean hold only on the region the run visited (the engine does not
        project), and identical data is the problem's ``identical_clients``."""
        if name == "bounded_domain":
            return from_visited(name, visited, "visited_max_dist2", "R", np.sqrt,
                                "R = sqrt(max ||w - w*||^2) over every point the run visited",
                                globally="the iterates are unconstrained (the algorithms do not project onto a set)")
        if name == "bounded_weight_mean":
            m = visited_values(visited, "shift_m_next")
            globally = "the weights of an unconstrained model have no bounded mean over every w"
            if m is None or m.ndim != 2:
                return refused(name, f"{globally}; {VISITED_ONLY} 'shift_m_next' (the weight mean of each round's "
                                     "aggregate, per run)")
            if not np.all(np.isfinite(m)):
                return refused(name, f"{globally}; on the visited region: 'shift_m_next' is not finite (diverged)")
            return certified(name, "M = max over rounds of the mean over runs of (m^t)^2, m^t the weight mean of "
                                   "round t's aggregate (E over the runs' randomness; on the visited region: "
                                   "shift_m_next)", region="visited", kind="measured",
                             M=float(np.max(np.mean(m ** 2, axis=1))))
        if name == "identical_data":
            return (certified(name, "every client holds the same objective (identical_clients)")
                    if self.identical_clients else refused(name, "the clients' objectives differ"))
        return None

    def _visited_grad_norm(self, name: str, visited: Any, globally: str) -> Certificate:
        """||grad f_i|| <= G on the region the run visited: G = sqrt of the largest ||grad f_i(w)||^2 over every point
        the selected clients visited, per run (TrackGradients' per-round visited_client_grad2, maximum over rounds)."""
        return from_visited(name, visited, "visited_client_grad2", "G",
                            lambda v: np.sqrt(np.max(np.atleast_2d(v), axis=0)),
                            "G = sqrt(max ||grad f_i(w)||^2) over the points the clients visited (every local iterate, "
                            "each round's start and end points)", globally=globally)

    def _visited_lipschitz(self, name: str, visited: Any, globally: str) -> Certificate:
        """Per-sample Lipschitz on the visited region: L_G = max ||grad f(w; z)|| over the visited points
        (visited_max_grad; it bounds |f(u) - f(v)| / ||u - v|| of f too)."""
        return from_visited(name, visited, "visited_max_grad", "L_G", lambda v: v,
                            "L_G = max over the visited points of max_ij ||grad f(w; z_ij)||", globally=globally)

    def _visited_loss_range(self, name: str, visited: Any) -> Certificate:
        """0 <= f(w; z) <= U with U the largest per-sample loss over the visited points (nonnegative losses only)."""
        if not self.nonnegative_losses:
            return refused(name, f"{self.name}: per-sample losses can be negative")
        return from_visited(name, visited, "visited_max_loss", "U", lambda v: v,
                            "losses >= 0 everywhere; U = max over the visited points of max_ij f(w; z_ij)",
                            globally="per-sample losses are unbounded above over every w")

    def describe(self) -> dict[str, Any]:
        out = {"name": self.name, "dim": self.dim, "n_clients": self.n_clients}
        for k, c in self.constants.items():
            if np.ndim(c.value) == 0:
                out[k] = {"value": float(c.value), "kind": c.kind}
        return out

    def _variant(self, w: np.ndarray, variant) -> np.ndarray:
        if variant is None:
            return np.zeros(w.shape[0], dtype=np.int64)
        return np.asarray(variant, dtype=np.int64)


def gather(arr: np.ndarray, variant: np.ndarray, clients: np.ndarray) -> np.ndarray:
    """arr (V, C, ...) -> (R, N, ...) for variant (R,), clients (R, N)."""
    return arr[variant[:, None], clients]


def sample_rows(arr: np.ndarray, variant: np.ndarray, clients: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Flat row numbers into arr (V, C, S, ...) of samples idx (R, N, b) of clients (R, N), variant (R,)."""
    _, C, S = arr.shape[:3]
    return (variant[:, None, None] * C + clients[..., None]) * S + idx


def shared_index(variant: np.ndarray, clients: np.ndarray, n_clients: int):
    """When every run uses the same variant and the same client list: the index that maps an array
    (V, C, ...) to the (N, ...) block all runs share (a basic index, so a view, when the list is all
    clients in order); else None."""
    v0 = int(variant[0])
    if not ((variant == v0).all() and (clients == clients[0]).all()):
        return None
    row = clients[0]
    if row.size == n_clients and (row == np.arange(n_clients)).all():
        return v0
    return (v0, row)
