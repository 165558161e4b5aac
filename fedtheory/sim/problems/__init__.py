"""Federated problems whose constants are known exactly, or say how they are known.

Every problem is a set of C client objectives f_i built from client samples, with the global
objective f = (1/C) sum_i f_i (the seeds' definition, seed 000 eq. (2)). Data arrays carry a
leading *variant* axis: variant 0 is the data set, and ``neighbour`` adds variant 1, the same
data with one sample replaced, for coupled stability runs.

Each constant is a :class:`Constant` whose ``kind`` says how it is known:
  exact     closed form (eigenvalues of the exact Hessians, a 1-D minimisation to 1e-12, ...)
  bound     a valid bound, not necessarily attained (e.g. logistic L from the Hessian bound)
  computed  the result of a numerical solve to a stated tolerance (e.g. logistic w*)
  measured  measured over the region a run visited (L_G, U, logistic heterogeneity)

Every problem also states per-client constants (arrays of length C, variant 0 unless said):
``L_clients`` (smoothness of each f_i), ``mu_clients`` (strong convexity of each f_i, or what is known),
``w_star_clients`` (C, d) and ``f_star_clients`` (client minimisers and minima), and ``Gamma`` =
f* - sum_i p_i f_i* (Li et al. 2020's heterogeneity, p_i = ``client_weights``). They are computed on
first access (logistic client minima cost one solve per client).

What a problem satisfies is a certificate (``Problem.certify(name)``, ``fedtheory.sim.certificates``): every family
answers every catalogue assumption about problems (``fedtheory.theory.CATALOGUE``) with the exact constant and how it
was computed, or refuses it with the reason, or says it cannot tell. Families: least squares (exact, unbounded
gradients), the PL non-convex and separable families, logistic regression with an L2 term, Huber regression
(convex with globally bounded gradients), least squares with a controlled noise at the optimum, and the smooth
(strongly) convex interpolants a PEP's worst case is rebuilt as (``interpolated.py``).
"""
from .base import CLIENT_CONSTANTS, ClientView, Constant, Constants, Problem
from .huber import HuberProblem, huber_regression, opposed_huber
from .interpolated import InterpolatedProblem
from .least_squares import (
                            B_MIN_ROUNDING,
                            GaussianClientModel,
                            LeastSquaresProblem,
                            heterogeneous_least_squares,
                            identical_least_squares,
                            least_squares_noise_at_optimum,
                            quadratic_B_min,
                            quadratic_G2,
)
from .logistic import LogisticProblem, digits_logistic, digits_split, synthetic_logistic
from .pl import (
                            AMPLITUDE_MAX,
                            PLNonconvexProblem,
                            SeparablePLProblem,
                            linear_shift_G2,
                            pl_nonconvex,
                            pl_ratio,
                            pl_ratio_infimum,
)

__all__ = ["AMPLITUDE_MAX", "B_MIN_ROUNDING", "CLIENT_CONSTANTS", "ClientView", "Constant", "Constants",
           "GaussianClientModel", "HuberProblem", "InterpolatedProblem", "huber_regression",
           "least_squares_noise_at_optimum", "opposed_huber", "LeastSquaresProblem", "LogisticProblem",
           "PLNonconvexProblem", "Problem", "SeparablePLProblem", "digits_logistic", "digits_split",
           "heterogeneous_least_squares", "identical_least_squares", "linear_shift_G2", "pl_nonconvex",
           "quadratic_B_min", "quadratic_G2", "pl_ratio", "pl_ratio_infimum", "synthetic_logistic"]
