"""The catalogue of assumptions that records name (``Record.assumptions``), each with its statement, what it is
about and the constants it declares (with their dimensions).

A record names an assumption by catalogue name, binding the assumption's constants to the record's symbols:
``"PL(mu)"`` (positional), ``"heterogeneity(G=G, B=B)"`` (by name), ``"bounded_variance(sigma_l)"``; a bare name
(``"L_smooth"``) binds each constant to the record's symbol of the same name where the record has one. A constant the
record does not bind still has to be certified: the assumption is a premise whether or not its constant appears in
the formula.

Whether an assumption holds on a run is never declared by the record or the check: the problem family, the oracle,
the topology, the client sampling or the algorithm of the run *certifies* it (``fedtheory.sim.certificates``), with the
exact constant and how it was computed, or refuses it with the reason, or says it cannot tell. ``subject`` says which of
them answers. ``direction`` says which values of a constant the assumption admits once the tightest one is certified:
``upper`` (any larger value: a smoothness constant, a variance, a gradient bound), ``lower`` (any smaller positive
value: a strong-convexity constant, a spectral gap), ``exact`` (only that value: the optimal value f*, a count).

A plug-in adds its own with :func:`register_assumption` (and certifies it with a certifier of its own: see
docs/extending.md, "Assumptions").
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .._validation import FedTheoryError

SUBJECTS = ("problem", "oracle", "topology", "sampling", "algorithm")
DIRECTIONS = ("upper", "lower", "exact")


@dataclass(frozen=True)
class AssumptionConstant:
    """A constant an assumption declares: its catalogue name, dimension (in the loss [f] and the parameter [w]), which
    values the assumption admits (``direction``) and what it is.

    Parameters
    ----------
    name : str
        The constant's catalogue name (``"L"``), which a record binds to a symbol of its own (``L_smooth(L1)``).
    dim : str
        Its dimension text (``"f/w^2"``; ``""``: unknown).
    direction : {"upper", "lower", "exact"}, default "upper"
        Which values the assumption admits: any value above the certified one (an upper bound such as L), any value
        below it (a lower bound such as mu), or only the certified one.
    meaning : str, default ""
        What it is, in words.
    """

    name: str
    dim: str
    direction: str = "upper"
    meaning: str = ""


@dataclass(frozen=True)
class Assumption:
    """A catalogue entry: ``name``, its ``statement`` (with the constants' catalogue names), the ``subject`` that
    certifies it (problem | oracle | topology | sampling) and its ``constants``."""

    name: str
    statement: str
    subject: str = "problem"
    constants: tuple[AssumptionConstant, ...] = ()

    def constant(self, name: str) -> AssumptionConstant:
        for c in self.constants:
            if c.name == name:
                return c
        raise KeyError(name)


@dataclass(frozen=True)
class AssumptionRef:
    """One reference of a record to the catalogue: the text as written, the assumption's name and the binding of
    its constants to the record's symbols (catalogue constant -> record symbol)."""

    text: str
    name: str
    binding: dict[str, str] = field(default_factory=dict)


def _c(name: str, dim: str, direction: str = "upper", meaning: str = "") -> AssumptionConstant:
    return AssumptionConstant(name, dim, direction, meaning)


_CATALOGUE: tuple[Assumption, ...] = (
    # the objectives (certified by the problem family)
    Assumption("L_smooth", "each local objective f_i is L-smooth: ||grad f_i(u) - grad f_i(v)|| <= L ||u - v||",
               "problem", (_c("L", "f/w^2", meaning="the largest smoothness constant over the clients"),)),
    Assumption("L_smooth_global", "the global objective f = (1/C) sum_i f_i is L-smooth", "problem",
               (_c("L", "f/w^2"),)),
    Assumption("convex", "each local objective f_i is convex", "problem"),
    Assumption("convex_global", "the global objective f is convex", "problem"),
    Assumption("strongly_convex", "f is mu-strongly convex", "problem",
               (_c("mu", "f/w^2", "lower"),)),
    Assumption("strongly_convex_clients", "each f_i is mu-strongly convex", "problem",
               (_c("mu", "f/w^2", "lower", "the smallest strong-convexity constant over the clients"),)),
    Assumption("PL", "2 mu (f(w) - f*) <= ||grad f(w)||^2 for all w", "problem", (_c("mu", "f/w^2", "lower"),)),
    Assumption("lower_bounded", "f is bounded below: f* = inf_w f(w) > -inf, attained at w*", "problem",
               (_c("f_star", "f", "exact", "the optimal value"),)),
    Assumption("bounded_grad_norm", "||grad f_i(w)|| <= G for every client i and every w (of the domain)", "problem",
               (_c("G", "f/w"),)),
    Assumption("lipschitz", "the loss is L_G-Lipschitz in w (per sample: ||grad f(w; z)|| <= L_G)", "problem",
               (_c("L_G", "f/w"),)),
    Assumption("nonnegative_loss", "0 <= f(w; z) <= U for every sample z and w", "problem", (_c("U", "f"),)),
    Assumption("heterogeneity", "(1/C) sum_i ||grad f_i(w)||^2 <= G^2 + B^2 ||grad f(w)||^2 for all w", "problem",
               (_c("G", "f/w"), _c("B", "1"))),
    Assumption("heterogeneity_global", "(1/C) sum_i ||grad f_i(w) - grad f(w)||^2 <= sigma_g^2 for all w", "problem",
               (_c("sigma_g", "f/w"),)),
    Assumption("heterogeneity_max", "max_i ||grad f_i(w) - grad f(w)||^2 <= zeta^2 for all w", "problem",
               (_c("zeta", "f/w"),)),
    Assumption("heterogeneity_at_optimum", "(1/C) sum_i ||grad f_i(w*)||^2 <= zeta_star^2 at a minimizer w* of f",
               "problem", (_c("zeta_star", "f/w"),)),
    Assumption("bounded_domain", "every point the algorithm visits lies within R of a minimizer: ||w - w*|| <= R",
               "problem", (_c("R", "w"),)),
    Assumption("bounded_weight_mean", "E[(m^t)^2] <= M for every t, m^t the mean of the model's weights", "problem",
               (_c("M", "w^2"),)),
    Assumption("regularizer_smooth", "a regularizer R(x, x_0) added to each local objective is r-smooth in x for "
               "fixed x_0", "algorithm", (_c("r", "f/w^2"),)),
    Assumption("identical_data", "every client holds the same objective: f_i = f for every i", "problem"),
    # the stochastic oracle
    Assumption("bounded_variance", "unbiased stochastic gradients with E||g_i(w) - grad f_i(w)||^2 <= sigma^2 for "
               "every client and w", "oracle", (_c("sigma", "f/w"),)),
    Assumption("noise_at_optimum", "unbiased stochastic gradients with (1/C) sum_i E||g_i(w*) - grad f_i(w*)||^2 <= "
               "sigma_star^2 at a minimizer w*", "oracle", (_c("sigma_star", "f/w"),)),
    Assumption("bounded_gradient", "E||g_i(w)||^2 <= G^2 (stochastic gradients bounded in mean square)", "oracle",
               (_c("G", "f/w"),)),
    Assumption("expected_smoothness", "E||g_i(u) - g_i(v)||^2 <= 2 L_exp (f_i(u) - f_i(v) - <grad f_i(v), u - v>) for "
               "every u, v, the same sample at both points (Gower et al. 2019, arXiv 1901.09401, Assumption 2.1, per "
               "client)", "oracle", (_c("L_exp", "f/w^2"),)),
    # the communication graph
    Assumption("mixing_matrix", "W symmetric, doubly stochastic, supported on the graph, with lambda = max(|lambda_2|, "
               "|lambda_m|) < 1 (spectral gap 1 - lambda > 0)", "topology", (_c("lambda", "1"),)),
    Assumption("consensus_rate", "E||X W - Xbar||_F^2 <= (1 - p) ||X - Xbar||_F^2 for every X (Koloskova et al.); "
               "p = 1 - lambda^2 for a fixed symmetric W", "topology", (_c("p", "1", "lower"),)),
    # client sampling
    Assumption("full_participation", "every client takes part in every round", "sampling"),
    Assumption("sampling_without_replacement", "each round S of the N clients are drawn uniformly without replacement",
               "sampling", (_c("S", "1", "exact"), _c("N", "1", "exact"))),
    Assumption("sampling_with_replacement", "each round S clients are drawn uniformly with replacement", "sampling",
               (_c("S", "1", "exact"), _c("N", "1", "exact"))),
)

#: The assumption catalogue: name -> entry (its ``statement``, the ``subject`` that certifies it, and its
#: ``constants`` with dimensions and directions). A record's ``assumptions`` name its entries; ``register_assumption``
#: adds one. ``fedtheory list --assumptions`` prints it; docs/assumptions.md says what every shipped problem, oracle
#: and topology certifies.
CATALOGUE: dict[str, Assumption] = {a.name: a for a in _CATALOGUE}
#: name -> statement, for the printers (kept as a plain mapping)
ASSUMPTIONS: dict[str, str] = {a.name: a.statement for a in _CATALOGUE}

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_REF = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*$")


#: The plug-in being imported (``fedtheory.plugins.load_plugin`` through ``core.registering_for``), innermost last.
LOADING: list[str] = []
#: Assumptions the plug-in being imported registered under a catalogue name with another statement (the API before
#: the catalogue allowed it): ``core.register`` keeps each under the paper's name, ``PAPER_NAME``, for that
#: plug-in's records, with a FedTheoryDeprecationWarning. Cleared when the plug-in is imported.
LOCAL_ASSUMPTIONS: dict[str, Assumption] = {}


def local_assumption(paper: str, name: str) -> str | None:
    """The catalogue name under which the plug-in being imported keeps its own assumption ``name`` for ``paper``'s
    records (registered on first use), or None where it declared none of that name."""
    own = LOCAL_ASSUMPTIONS.get(name)
    if own is None:
        return None
    scoped = f"{paper}_{name}"
    if scoped not in CATALOGUE:
        entry = Assumption(scoped, own.statement, own.subject, own.constants)
        CATALOGUE[scoped], ASSUMPTIONS[scoped] = entry, own.statement
        import warnings

        from .._validation import FedTheoryDeprecationWarning

        warnings.warn(f"{paper}: the plug-in's own assumption {name!r} has the name of a catalogue entry with another "
                      f"statement; kept as {scoped!r} for this paper's records (deprecated since 0.2: give it a name "
                      f"of its own in register_assumption and the records, or assume the catalogue's {name!r}; "
                      "docs/extending.md, Assumptions)", FedTheoryDeprecationWarning, stacklevel=4)
    return scoped


def register_assumption(name: str, statement: str, *, subject: str = "problem",
                        constants: tuple[AssumptionConstant, ...] | list = ()) -> Assumption:
    """Add an assumption to the catalogue (the same name twice must mean the same statement). ``constants``:
    :class:`AssumptionConstant` s (or (name, dim[, direction[, meaning]]) tuples); a name written as a reference,
    ``'bounded_second_moment(G)'``, declares its constants by name (dimension unknown). A run certifies it only where
    its problem, oracle, topology or sampling (``subject``) answers it, or the check hands ``certify`` a certificate
    of its own; otherwise every row of a record that assumes it is not applicable.

    Parameters
    ----------
    name : str
        The assumption's name: a Python identifier, or a reference ``NAME(c1, c2)`` that declares its constants by
        name (their dimensions unknown) when ``constants`` is empty.
    statement : str
        What it says, with the constants' catalogue names.
    subject : {"problem", "oracle", "topology", "sampling", "algorithm"}, default "problem"
        What certifies it.
    constants : tuple of AssumptionConstant, default ()
        Its constants; a tuple ``(name, dim[, direction[, meaning]])`` stands for an :class:`AssumptionConstant`.

    Returns
    -------
    Assumption
        The catalogue entry (the one already there when the same name and statement were registered before).

    Raises
    ------
    FedTheoryError
        For a name that is not an identifier, an unknown subject or direction, or a name already in the catalogue
        with another statement (while a plug-in of the previous release loads: kept under its paper's name, with a
        deprecation warning).
    """
    m = _REF.match(name) if isinstance(name, str) else None
    if m is not None and m.group(2) is not None and not constants:
        name = m.group(1)
        constants = tuple(AssumptionConstant(a.strip(), "") for a in m.group(2).split(",") if a.strip())
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise FedTheoryError(f"assumption name {name!r}: a Python identifier (constants go in constants=, "
                             "bound to a record's symbols as NAME(symbol, ...))")
    if subject not in SUBJECTS:
        raise FedTheoryError(f"assumption {name}: subject {subject!r} must be one of {', '.join(SUBJECTS)}")
    consts = tuple(c if isinstance(c, AssumptionConstant) else AssumptionConstant(*c) for c in constants)
    for c in consts:
        if c.direction not in DIRECTIONS:
            raise FedTheoryError(f"assumption {name}: constant {c.name}'s direction {c.direction!r} must be one of "
                                 f"{', '.join(DIRECTIONS)}")
    new = Assumption(name, statement, subject, consts)
    old = CATALOGUE.get(name)
    if old is not None and old.statement != statement:
        if LOADING:  # a plug-in of the previous release named its own assumption like a catalogue entry
            LOCAL_ASSUMPTIONS[name] = new  # kept under its paper's name when its records are registered
            return new
        raise FedTheoryError(f"assumption {name!r} is already in the catalogue with another statement")
    if old is None or (not old.constants and consts):
        CATALOGUE[name] = new
        ASSUMPTIONS[name] = statement
    return CATALOGUE[name]


def parse_reference(text: str) -> AssumptionRef:
    """``'PL(mu)'`` -> AssumptionRef('PL(mu)', 'PL', {'mu': 'mu'}); ``'heterogeneity(G=G2, B)'`` binds by name and
    position. An assumption outside the catalogue keeps its name and binds positionally to nothing (its rows are not
    applicable until something certifies it)."""
    m = _REF.match(str(text))
    if m is None:
        raise FedTheoryError(f"assumption {text!r}: write NAME or NAME(symbol, ...) with a catalogue NAME")
    name, args = m.group(1), m.group(2)
    entry = CATALOGUE.get(name)
    names = [c.name for c in entry.constants] if entry is not None else []
    binding: dict[str, str] = {}
    if args is not None and args.strip():
        for i, part in enumerate(a.strip() for a in args.split(",")):
            key, eq, sym = part.partition("=")
            key, sym = (key.strip(), sym.strip()) if eq else (None, key.strip())
            if not _NAME.fullmatch(sym):
                raise FedTheoryError(f"assumption {text!r}: {sym!r} is not a symbol name")
            if key is None:
                if entry is not None and i >= len(names):
                    raise FedTheoryError(f"assumption {text!r}: {name} declares {len(names)} constant(s) "
                                         f"({', '.join(names) or 'none'})")
                key = names[i] if entry is not None else f"#{i}"
            elif entry is not None and key not in names:
                raise FedTheoryError(f"assumption {text!r}: {name} has no constant {key!r} (it has "
                                     f"{', '.join(names) or 'none'})")
            binding[key] = sym
    return AssumptionRef(str(text), name, binding)


def bind(ref: AssumptionRef, symbols) -> dict[str, str]:
    """The binding of ``ref`` completed by name: each catalogue constant the reference leaves unbound goes to the
    record's symbol of the same name, where ``symbols`` (names) has one."""
    entry = CATALOGUE.get(ref.name)
    out = dict(ref.binding)
    if entry is not None:
        for c in entry.constants:
            if c.name not in out and c.name in symbols:
                out[c.name] = c.name
    return out


def describe(name: str) -> str:
    """The statement of a catalogued assumption (by name or reference), with the reference's binding of the
    catalogue's constants to the record's symbols, or a note that it is not in the catalogue."""
    try:
        ref = parse_reference(name)
    except FedTheoryError:
        return ASSUMPTIONS.get(name, "(not in the catalogue: see the record's source)")
    text = ASSUMPTIONS.get(ref.name, "(not in the catalogue: see the record's source)")
    renamed = [f"{c} = {s}" for c, s in ref.binding.items() if c != s and not c.startswith("#")]
    return text + (f" (here {', '.join(renamed)})" if renamed else "")
