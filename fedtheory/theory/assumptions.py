"""The catalogue of assumptions that records name (``Bound.assumptions``): ``fedtheory explain`` prints each one's
statement. A plug-in adds its own with ``register_assumption``."""

from .._validation import FedTheoryError

ASSUMPTIONS: dict[str, str] = {
    "L_smooth": "each local objective f_i is L-smooth: ||grad f_i(u) - grad f_i(v)|| <= L ||u - v||",
    "bounded_variance": "unbiased stochastic gradients with E||g_i - grad f_i(w)||^2 <= sigma_l^2",
    "heterogeneity(G,B)": "(1/C) sum_i ||grad f_i(w)||^2 <= G^2 + B^2 ||grad f(w)||^2 for all w",
    "lipschitz(L_G)": "the loss is L_G-Lipschitz in w (per sample: ||grad f(w; z)|| <= L_G)",
    "PL(mu)": "2 mu (f(w) - f*) <= ||grad f(w)||^2 for all w",
    "strongly_convex(mu)": "f is mu-strongly convex",
    "nonnegative_loss": "f(w; z) >= 0, with U = sup_{w,z} f(w; z)",
    "bounded_gradient(G)": "E||g_i||^2 <= G^2 (stochastic gradients bounded in mean square)",
    "bounded_weight_mean(M)": "the mean of the model weights is bounded by M",
    "mixing_matrix": "W symmetric, doubly stochastic, supported on the graph, with spectral gap 1 - lambda > 0",
    "heterogeneity_global(sigma_g)": "(1/C) sum_i ||grad f_i(w) - grad f(w)||^2 <= sigma_g^2",
    "regularizer_smooth(r)": "a regularizer R(x, x_0) added to each local objective is r-smooth in x for fixed x_0",
}


def register_assumption(name: str, statement: str) -> None:
    """Add an assumption to the catalogue (the same name twice must mean the same statement)."""
    if name in ASSUMPTIONS and ASSUMPTIONS[name] != statement:
        raise FedTheoryError(f"assumption {name!r} is already in the catalogue with another statement")
    ASSUMPTIONS[name] = statement


def describe(name: str) -> str:
    """The statement of a catalogued assumption, or a note that it is not in the catalogue."""
    return ASSUMPTIONS.get(name, "(not in the catalogue: see the record's source)")
