"""The engine's own measures by indexing, each name with its definition: :data:`STATE_MEASURES` (at w^t),
:data:`ROUND_MEASURES` (per round), :data:`VISITED_MEASURES` (running maxima over the visited points),
:data:`STEP_MEASURES` (at every local step); :data:`DEFAULT_MEASURES`, what ``simulate`` records unless told.
The catalogue of every measure, the plug-ins' too, is ``fedtheory.sim.measures``."""
from __future__ import annotations

__all__ = ["DEFAULT_MEASURES", "ROUND_MEASURES", "STATE_MEASURES", "STEP_MEASURES", "VISITED_MEASURES"]

STATE_MEASURES = {  # indexed by t = 0..T (the global model w^t)
    "loss": "f(w^t)",
    "opt_error": "f(w^t) - f* (f* of the run's own data variant: problem.variant_optima())",
    "grad_norm2": "||grad f(w^t)||^2",
    "delta": "Delta^t = (1/C) sum_{i in C} ||w_i^last - w^t||^2 (seed 000 "
             "Table 4 / Thm 3; w_i^last = client i's latest local model)",
    "population": "F(w^t), population risk (known distribution)",
    "gen_gap": "F(w^t) - f(w^t): population minus empirical risk (known distribution)",
    "test_loss": "held-out loss at w^t",
    "client_grad_norm2": "(1/C) sum_i ||grad f_i(w^t)||^2 (for measured heterogeneity)",
    "dist2_opt": "||w^t - w*||^2, w* = problem.constants['w_star'] (the minimizer; for a rank-deficient least "
                 "squares the min-norm one; each run's own data variant's, problem.variant_optima())",
}


ROUND_MEASURES = {  # indexed by round t = 0..T-1 (the round that maps w^t to w^{t+1})
    "delta_code": "(1/N) sum_{i in N_t} ||w_{i,K}^t - w^{t+1}||^2 (the FedInit authors' simulator)",
    "drift": "(1/N) sum_{i in N_t} ||w_{i,K}^t - w^t||^2 (seed 001 consistency row; client drift)",
    "unbiased_gap": "||(1/N) sum_{i in N_t} w_{i,0}^t - w^t||",
    "init_offset": "max_{i in N_t} ||w_{i,0}^t - w^t|| (size of the initialisation offsets)",
    "client_deviation_max": "max_{i in N_t} ||w_{i,K}^t - w^{t+1}||: the largest deviation of a participant's local "
                            "end point from the new global model (the largest of delta_code's terms, not squared)",
    "V1": "(1/N) sum_{i in N_t} sum_{k<K} ||w_{i,k}^t - w^t||^2 (seed 000 Table 4, V_1)",
    "V2": "||w^{t+1} - w^t||^2 (seed 000 Table 4, V_2)",
    "local_grad_sum2": "||sum_{i in N_t} sum_{k<K} grad f_i(w_{i,k}^t)||^2 (exact gradients)",
}


VISITED_MEASURES = {  # one row: running maxima over the visited points (the global models and the local end points)
    "visited_max_loss": "max over the visited points w of max_ij f(w; z_ij) (per-sample loss)",
    "visited_max_grad": "max over the visited points w of max_ij ||grad f(w; "
                        "z_ij)|| (per-sample gradient norm, not squared)",
    "visited_max_dist2": "max over every point the run visited (w^0, the global models, every local iterate "
                         "w_{i,k}, the local end points) of ||w - w*||^2, w* = problem.constants['w_star'] (each "
                         "run's own data variant's)",
    "visited_max_grad_var": "max over the visited points w of max_i (1/S_i) sum_j ||grad f(w; z_ij) - grad f_i(w)||^2 "
                            "(one-sample gradient variance; a minibatch of b divides it by b)",
}


STEP_MEASURES = {  # indexed by the local step s = t K + k = 0..T K (xbar_s: the averaged iterate at every local step)
    "step_opt_error": "f(xbar_s) - f*, xbar_s = (1/N) sum_{i in N_t} w_{i,k}^t: the mean of the round's participants' "
                      "local iterates before local step k of round t, s = t K + k (s = T K: the mean of the last "
                      "round's local end points); with full participation and FedAvg's averaging xbar_{tK} = w^t",
    "step_dist2": "||xbar_s - w*||^2 (xbar_s as in step_opt_error)",
    "step_grad_norm2": "||grad f(xbar_s)||^2 (xbar_s as in step_opt_error)",
    "step_grad_norm2_mean": "(1/(s+1)) sum_{j=0}^{s} ||grad f(xbar_j)||^2: the running mean of step_grad_norm2 "
                            "(non-convex theorems' average over iterations; (1/T) sum_{t=0}^{T-1} is row T-1)",
    "avg_opt_error": "f(xhat_s) - f*, xhat_s = (1/(s+1)) sum_{j=0}^{s} xbar_j: the uniform running average of "
                     "xbar_0..xbar_s (inclusive; a paper's average of the "
                     "first T iterates xbar_0..xbar_{T-1} is row T-1)",
    "avg_dist2": "||xhat_s - w*||^2 (xhat_s as in avg_opt_error)",
    "wavg_opt_error": "f(xtilde_s) - f*, xtilde_s = sum_{j<=s} w_j xbar_j / sum_{j<=s} w_j: the weighted running "
                      "average of xbar_0..xbar_s (inclusive), weights w_j = ratio^j (offset + j)^power from "
                      "simulate(..., step_weights=StepWeights(power, offset, ratio)) (default: uniform)",
    "wavg_dist2": "||xtilde_s - w*||^2 (xtilde_s as in wavg_opt_error)",
}


DEFAULT_MEASURES = ("opt_error", "grad_norm2", "delta", "delta_code", "drift", "unbiased_gap")
