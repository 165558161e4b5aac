"""Common FL notation: a symbol's dimension from its name, and a left side's measure from its shape.

The catalogue is a starting point the user confirms: the same letter means different things in different papers
(gamma is a step size in one and a schedule offset in another; rho a spectral gap or a SAM radius). An entry with
``check`` says what else it is known to mean; the table printed by ``fedtheory new-paper --from-latex`` shows it.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import sympy as sp

from .expression import Piece, SymbolUse

__all__ = ["NOTATION", "Notation", "LeftSide", "lookup", "match_left_side", "dimension_of_use"]


@dataclass(frozen=True)
class Notation:
    """What a symbol usually is: its dimension in [f] (loss) and [w] (parameter) and a meaning; ``check``: what
    else the same letter is known to mean (the user confirms)."""

    dimension: str
    meaning: str
    check: str = ""
    setting: bool = False  # a step size or a count the run sets (a rule for it is a condition, never a definition)


_STEP = Notation("w^2/f", "step size (w - eta grad f)", setting=True)
#: base name -> notation (a full name such as 'eta_g' or 'sigma_g' is looked up first)
NOTATION: dict[str, Notation] = {
    "L": Notation("f/w^2", "smoothness constant", "a Lipschitz constant of the loss itself is f/w (write L_G)"),
    "beta_smooth": Notation("f/w^2", "smoothness constant"),
    "mu": Notation("f/w^2", "strong convexity / PL constant"),
    "lambda": Notation("f/w^2", "strong convexity / PL constant", "a regularisation weight or an eigenvalue"),
    "sigma": Notation("f/w", "stochastic-gradient noise (E||g - grad f||^2 <= sigma^2)"),
    "zeta": Notation("f/w", "heterogeneity (||grad f_i - grad f||^2 <= zeta^2)"),
    "G": Notation("f/w", "gradient bound (E||g||^2 <= G^2) or heterogeneity (G, B)"),
    "B": Notation("1", "dissimilarity factor of (G, B)-heterogeneity", "Li et al. 2020's B is f^2/w^2"),
    "Gamma": Notation("f", "heterogeneity F* - sum_k p_k F_k*"),
    "eta": _STEP,
    "alpha": Notation("w^2/f", "step size", "a momentum or mixing coefficient is 1", setting=True),
    "gamma": Notation("w^2/f", "step size", "a schedule offset (eta_t = c/(gamma + t)) is 1", setting=True),
    "eta_g": Notation("1", "global (server) step on a model displacement", "a step on a gradient-sized update is "
                      "w^2/f", setting=True),
    "eta_l": _STEP,
    "K": Notation("1", "local steps per round (or clients)", setting=True),
    "H": Notation("1", "local steps between averaging", setting=True),
    "E": Notation("1", "local steps (epochs) per round", setting=True),
    "tau": Notation("1", "local steps or a step index", setting=True),
    "T": Notation("1", "rounds or iterations", setting=True),
    "R": Notation("1", "communication rounds", "a radius ||x_0 - x*|| (R^2 >= ||x_0 - x*||^2) is w; a regulariser "
                  "R(w) is f", setting=True),
    "t": Notation("1", "round or step index", setting=True),
    "k": Notation("1", "local step index", setting=True),
    "S": Notation("1", "clients per round", setting=True),
    "N": Notation("1", "clients", setting=True),
    "M": Notation("1", "clients (or workers)", "a bound on a weight mean is w^2 (FedShift)", setting=True),
    "n": Notation("1", "clients (or samples)", setting=True),
    "m": Notation("1", "clients (or workers)", "a weight mean is w (FedShift)", setting=True),
    "C": Notation("1", "a numeric constant or a count"),
    "c": Notation("1", "a numeric constant"),
    "p": Notation("1", "spectral gap of the mixing matrix, or a client weight"),
    "rho": Notation("1", "spectral gap / contraction factor", "a SAM radius is w"),
    "kappa": Notation("1", "condition number L/mu"),
    "epsilon": Notation("1", "an accuracy or a Young-inequality constant", "a target accuracy on the loss is f"),
    "varepsilon": Notation("1", "an accuracy or a Young-inequality constant", "a target accuracy on the loss is f"),
    "delta": Notation("1", "failure probability or a compression factor"),
    "omega": Notation("1", "compression variance factor"),
    "q": Notation("1", "a compression or participation factor"),
    "d": Notation("1", "the model's dimension"),
    "a": Notation("1", "a schedule shift (eta_t = c/(mu (a + t)))"),
    "D": Notation("f", "initial optimality gap f(x_0) - f*", "a distance ||x_0 - x*|| is w"),
    "Delta": Notation("f", "initial optimality gap f(x_0) - f*", "a distance ||x - x*||^2 is w^2"),
    "r": Notation("w", "a distance ||x_0 - x*||", "a smoothness constant is f/w^2"),
    "F": Notation("f", "loss value"),
    "f": Notation("f", "loss value"),
    "Phi": Notation("", "a composite term: give its dimension"),
    "U": Notation("f", "a bound on the loss"),
}


def lookup(use: SymbolUse) -> Notation | None:
    """The catalogue's entry for a symbol: by its full name, then its base letter; a loss value, a norm and an
    optimal loss by their kind."""
    if use.kind in ("loss", "loss_opt"):
        return Notation("f", "loss value" if use.kind == "loss" else "optimal loss value")
    if use.kind == "grad":
        return Notation("f/w", "norm of a gradient")
    if use.kind == "dist":
        return Notation("w", "distance to an optimum")
    if use.kind == "norm":
        return Notation("w", "norm of a difference of models", "give its dimension if it is not a distance")
    if use.kind == "sum":
        return None
    for key in (use.name, use.base):
        if key in NOTATION and NOTATION[key].dimension:
            return NOTATION[key]
    return None


def dimension_of_use(use: SymbolUse) -> str | None:
    n = lookup(use)
    return n.dimension if n is not None else None


@dataclass(frozen=True)
class LeftSide:
    r"""A left side matched to a measure of the simulator's catalogue (``fedtheory list --measures``), or not
    (``measure`` ''): ``kind`` is the record's ``lhs_kind``; ``todo`` what the user still has to decide (a record
    with one is a draft); ``dimension`` the left side's dimension when ``measure`` is not a catalogue measure (the
    check computes it); ``alternatives`` the other readings of the same left side (``\bar x_T``: the mean of
    x_0..x_{T-1} here, of x_1..x_T there), each drafted as its own record for the user to choose."""

    measure: str
    kind: str
    description: str
    todo: str = ""
    dimension: str = ""
    alternatives: tuple["LeftSide", ...] = ()
    reading: str = ""  # what this reading takes the left side to be ('the mean of x_0..x_{T-1}')


def _strip_average(e: sp.Expr, raw: sp.Expr) -> tuple[sp.Expr, str]:
    """The summand of an average/sum over an index (1/T sum_t X, sum_t d_t X / sum_t d_t, nested: 1/T sum_t 1/n
    sum_i X), and how it averages."""
    if raw is None:
        return e, ""
    hows, x = [], raw
    for _ in range(4):
        sums = list(x.atoms(sp.Sum))
        if not sums:
            break
        biggest = max(sums, key=lambda s: sp.count_ops(s))
        hows.append(", ".join(f"{l[0]} = {sp.sstr(l[1])}..{sp.sstr(l[2])}" for l in biggest.limits))
        x = biggest.function
    return (x, "an average over " + " and ".join(hows)) if hows else (raw, "")


_BAR = re.compile(r"\\(?:bar|overline)(?![a-zA-Z])")
_DECORATED = ("\\hat", "\\tilde", "\\widehat", "\\widetilde")


def _averaged_readings(measure: str, kind: str, latex: str, point: str) -> LeftSide:
    r"""The two averaged readings of a barred point (``f(\bar x_T) - f^*``, ``\|\bar x_T - x^\star\|^2``)."""
    m = re.search(r"_\s*\{?\s*([A-Za-z0-9]+)\s*\}?\s*$", point.strip().rstrip(")").strip())
    T = m.group(1) if m else "T"
    first, last = (f"{T}-1", T) if not T.isdigit() else (str(int(T) - 1), T)
    cat = {"opt_error": "avg_opt_error", "dist2_opt": "avg_dist2"}[measure]
    dim = {"opt_error": "f", "dist2_opt": "w^2"}[measure]
    a = LeftSide(cat, kind, f"{latex} read as the mean of x_0..x_{{{first}}}: {cat} at s = {first} (the running "
                 f"average of the iterates x_0..x_s, inclusive)", reading=f"the mean of x_0..x_{{{first}}}")
    b = LeftSide(f"avg1_{measure.replace('_opt', '')}", kind,
                 f"{latex} read as the mean of x_1..x_{{{last}}}: no catalogue measure averages from x_1; the check "
                 f"computes it from the run's iterates (simulate(..., keep_step_iterates=True): "
                 f"trace.step_iterates[1:{last} + 1].mean(axis=0))", dimension=dim,
                 reading=f"the mean of x_1..x_{{{last}}}")
    return dataclasses.replace(a, alternatives=(b,))


def match_left_side(lhs: Piece, uses: dict[str, SymbolUse]) -> LeftSide:
    r"""The measure a left side is, where the notation is standard: f(x) - f* (opt_error), ||x - x*||^2
    (dist2_opt), ||grad f(x)||^2 (grad_norm2), (1/n) sum_i ||x_i - xbar||^2 (consensus, also averaged over t); an
    average over t of one of these keeps its measure and says that the check computes the average. A barred point
    (``f(\bar x_T) - f^*``) has two averaged readings, both returned (``alternatives``) for the user to choose."""
    if lhs.expr is None:
        return LeftSide("", "", lhs.latex.strip(), "the left side did not parse: name what it is (a measure of "
                        "`fedtheory list --measures`, or Units(lhs=...))")
    expr, how = _strip_average(lhs.expr, lhs.raw)
    symbols = {s.name: uses.get(s.name) for s in expr.free_symbols}
    kinds = {n: (u.kind if u else "plain") for n, u in symbols.items()}
    avg = f" ({how}: the check computes it from the per-round measure)" if how else ""
    latex = lhs.latex.strip()
    # f(x) - f*
    if isinstance(expr, sp.Add) and len(expr.args) == 2:
        pos = [a for a in expr.args if not a.could_extract_minus_sign()]
        neg = [-a for a in expr.args if a.could_extract_minus_sign()]
        if len(pos) == 1 and len(neg) == 1 and pos[0].is_Symbol and neg[0].is_Symbol:
            kp, kn = kinds.get(pos[0].name), kinds.get(neg[0].name)
            if kp == "loss" and kn == "loss_opt":
                point = symbols.get(pos[0].name)
                if point is not None and not how and _BAR.search(point.latex):
                    return _averaged_readings("opt_error", "opt_error", latex, point.latex)
                todo = ""
                if point is not None and any(d in point.latex for d in _DECORATED + ("\\bar", "\\overline")):
                    todo = (f"the point in {point.latex} is decorated: if it is an average of iterates, the measure "
                            "is avg_opt_error or wavg_opt_error")
                return LeftSide("opt_error", "opt_error", f"{latex} (opt_error: f(w^t) - f*){avg}", todo)
    base = expr.args[0] if isinstance(expr, sp.Pow) and expr.args[1] == 2 else None
    if base is not None and base.is_Symbol:
        k = kinds.get(base.name)
        use = uses.get(base.name)
        if k == "dist":
            if use is not None and not how and _BAR.search(use.latex):
                return _averaged_readings("dist2_opt", "dist2", latex, use.latex.replace("\\|", " ").split("-")[0])
            return LeftSide("dist2_opt", "dist2", f"{latex} (dist2_opt: ||w^t - w*||^2){avg}")
        if k == "grad":
            return LeftSide("grad_norm2", "grad_norm2", f"{latex} (grad_norm2: ||grad f(w^t)||^2){avg}")
        if k == "norm" and use is not None and _BAR.search(use.latex) and how:
            return LeftSide("consensus", "none", f"{latex} (consensus: (1/m) sum_i ||x_i - xbar||^2; {how})",
                            "check that the sum is over the clients' models (a consensus distance)")
    return LeftSide("", "", latex, "not a standard left side: name what it is (a measure of `fedtheory "
                    "list --measures`, or Units(lhs=...) with its dimension)")
