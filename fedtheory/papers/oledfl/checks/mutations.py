"""The mutated simulators the negative controls of OledFL's claims run (``SimMutation``): Ole reversed, capped or
folded, and coupled pairs decoupled; under each the check it belongs to must report a finding."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .common import CONTROL_SEEDS


def _same_beta(j, beta):
    return beta


def _unit_lr(j, beta):
    return 1.0


def _coupled(j, beta):
    return False


@dataclass(frozen=True)
class SimMutation:
    """A mutated simulator for a negative control: the Ole coefficient the simulator runs on topology j (an index
    into ``paper_topologies``) where the check states beta, ``sim_beta(j, beta)``, and the factor on its step size,
    ``lr_scale(j, beta)``; in the stability runs, ``decouple(j, beta)``: the run on the neighbouring data set draws
    its own random streams (another seed) instead of sharing its twin's; only the listed ``topologies`` and
    ``seeds`` seeds (>= 10, so that the statistics policy can refute). ``label`` says what is mutated."""

    label: str
    sim_beta: Callable[[int, float], float] = _same_beta
    topologies: tuple[int, ...] = (0, 1, 2, 3, 4)
    seeds: int = CONTROL_SEEDS
    lr_scale: Callable[[int, float], float] = _unit_lr
    decouple: Callable[[int, float], bool] = _coupled


# Ole reversed: x_{i,0} = x_i - beta (x_i - x_i^{t-1,K}), a step towards the client's own last local model (the
# Lookahead direction the paper contrasts Ole with, eq. (4)); a larger beta then mixes less.
REVERSED_OLE = SimMutation("the simulator runs Ole reversed, x_{i,0} = x_i - beta (x_i - x_i^{t-1,K}) (Lookahead's "
                           "direction, eq. (4)), on the exponential graph with Metropolis weights, 10 seeds, while the "
                           "check states beta", lambda j, b: -b, (2,))
# Decoupled pairs: the run on the neighbouring data set draws its own random streams, so the two runs differ by the
# whole SGD noise, not by the replaced sample alone (the gap of two independent runs, far above a coupled pair's).
DECOUPLED_FOR_OLE = SimMutation("the simulator decouples the pairs run with Ole (beta > 0: the run on the neighbouring "
                                "data set uses another seed), on the full graph with Metropolis weights, 10 pairs: the "
                                "gap must then rise from beta = 0 to beta > 0", topologies=(3,),
                                decouple=lambda j, b: b > 0)
DECOUPLED_WELL_CONNECTED = SimMutation("the simulator decouples the pairs on the two better-connected graphs "
                                       "(exponential, full: the run on the neighbouring data set uses another seed), "
                                       "10 pairs: the gap must then fall as lambda grows", topologies=(0, 1, 2, 3),
                                       decouple=lambda j, b: j in (2, 3))
# Ole folded at a per-topology beta_c: the simulator runs beta_c - |beta - beta_c|, so the error (which falls with
# the simulator's beta on these W) is smallest at beta = beta_c, an interior optimum, larger on the better-connected
# full graph (0.9) than on the ring (0.3).
_FOLD_AT = {0: 0.3, 3: 0.9}
FOLDED_OLE = SimMutation("the simulator runs Ole with beta_c - |beta - beta_c| (folded at beta_c = 0.3 on the ring, "
                         "0.9 on the full graph), so each has an interior optimum at beta_c and the better-connected "
                         "full graph the larger one; 10 seeds",
                         lambda j, b: _FOLD_AT[j] - abs(b - _FOLD_AT[j]) if j in _FOLD_AT else b, (0, 1, 2, 3))
# Capped Ole: the simulator runs min(beta, 0.5), on the full graph (stable there): beta >= 1 then converges.
CAPPED_OLE = SimMutation("the simulator caps Ole's coefficient at 0.5 (runs min(beta, 0.5)) on the fully connected "
                         "graph, 10 seeds, while the check states beta: beta >= 1 then converges",
                         lambda j, b: min(b, 0.5), (3,))
