"""The PEPs of Khaled, Mishchenko & Richtarik's two bounds at sigma = 0 (their deterministic case: the additive oracle
with no noise is the exact one), local GD with M workers, H local steps between averagings, a constant step gamma,
T = H * rounds steps in all.

* ``khaled2020.identical``: on identical data every worker runs the same gradient descent, so one client (C = 1)
  is the run; f L-smooth and mu-strongly convex (PEPit's exact interpolation), ||x_0 - x*||^2 <= D0, measure
  ||xhat_T - x*||^2: exact.
* ``khaled2020.heterogeneous``: M workers, every f_m L-smooth and convex, heterogeneity at the optimum
  (1/M) sum_m ||grad f_m(x*)||^2 <= zeta^2 (sigma_dif^2 = zeta^2 at sigma = 0), ||x_0 - x*||^2 <= D0, measure
  f(xbar_T) - f* with xbar_T the mean of the virtual averages xhat_0..xhat_{T-1} (the protocol's
  step_avg_opt_error, the engine's avg_opt_error at row T - 1): exact.
Both at the constants of today's check's first row (H = 4), sizes capped per profile."""
from __future__ import annotations

from fedtheory.sim import fedavg
from fedtheory.worst import PEPSpec, ProtocolSetting, check_reference, register_pep

from . import records as R

# measured (benchmarks/pep_rows.py --sizes): the largest that solve in seconds (quick) and within a minute (full)
IDENTICAL_SIZES = {"quick": {"H": 4, "rounds": 10}, "full": {"H": 4, "rounds": 15}}
HETEROGENEOUS_SIZES = {"quick": {"M": 4, "H": 4, "rounds": 8}, "full": {"M": 4, "H": 4, "rounds": 12}}


def identical_pep(record_id: str = "khaled2020.identical", *, L: float = 1.0, mu: float = 0.2, lr: float = 0.03,
                  M: int = 4, H: int = 4, rounds: int = 100, D0: float = 1.0) -> PEPSpec:
    M, H, rounds = int(M), int(H), int(rounds)
    setting = ProtocolSetting(C=1, K=H, T=rounds, eta=lr, L=L, mu=mu, client_mu=mu, initial="distance", D=D0,
                              metric="dist2")
    values = {"L": L, "mu": mu, "lr": lr, "M": M, "H": H, "T": H * rounds, "D0": D0, "sigma": 0.0}
    return PEPSpec(record_id, setting, values, settings=dict(R.IDENTICAL.requires), algorithm=fedavg(),
                   initial_symbol="D0", params={"record_id": record_id, "L": L, "mu": mu, "lr": lr, "M": M, "H": H,
                                                "rounds": rounds, "D0": D0},
                   note="sigma = 0 (the additive oracle without noise): the M workers on identical data run one "
                        "gradient descent, so one client is the run (the bound's M enters only its noise terms)")


def heterogeneous_pep(record_id: str = "khaled2020.heterogeneous", *, L: float = 1.0, zeta: float = 0.5,
                      lr: float = 0.03, M: int = 4, H: int = 4, rounds: int = 100, D0: float = 1.0) -> PEPSpec:
    M, H, rounds = int(M), int(H), int(rounds)
    setting = ProtocolSetting(C=M, K=H, T=rounds, eta=lr, L=L, mu=0.0, client_mu=0.0, heterogeneity="optimum",
                              zeta=zeta, initial="distance", D=D0, metric="step_avg_opt_error")
    values = {"L": L, "lr": lr, "M": M, "H": H, "T": H * rounds, "D0": D0, "zeta": zeta, "sigma": 0.0}
    return PEPSpec(record_id, setting, values, settings=dict(R.HETEROGENEOUS.requires), algorithm=fedavg(),
                   initial_symbol="D0", instance_symbols={"zeta": "zeta"},
                   params={"record_id": record_id, "L": L, "zeta": zeta, "lr": lr, "M": M, "H": H, "rounds": rounds,
                           "D0": D0},
                   note="sigma = 0 (the additive oracle without noise, sigma_dif^2 = zeta^2); xbar_T averages the "
                        "virtual averages xhat_0..xhat_{T-1} of every local step")


_INT = {"M": int, "H": int}
register_pep("khaled2020.identical", identical_pep, sizes=IDENTICAL_SIZES,
             reference=check_reference("khaled2020.identical", "khaled2020.identical",
                                       ("L", "mu", "lr", "M", "H", "D0"), setting="M=4 H=4", convert=_INT))
register_pep("khaled2020.heterogeneous", heterogeneous_pep, sizes=HETEROGENEOUS_SIZES,
             reference=check_reference("khaled2020.heterogeneous", "khaled2020.heterogeneous",
                                        ("L", "zeta", "lr", "M", "H", "D0"), setting="M=4 H=4", convert=_INT))
