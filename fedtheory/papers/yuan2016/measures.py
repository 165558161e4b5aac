"""The stacked gradient of DGD, h(k) = [grad f_1(x_(1)(k)); ...; grad f_n(x_(n)(k))] (Yuan, Ling & Yin, p. 5), as a
measure: a local rule that leaves the step unchanged and records, every round, the gradients of the agents at the
models they start the round from (for DGD, one gradient step per round, those are the iterates x_(i)(k)).

* ``dgd_stacked_grad``: ||h(k)|| = (sum_i ||grad f_i(x_(i)(k))||^2)^(1/2), the norm of R^{np} that (10) bounds by D;
* ``dgd_agent_grad``: max_i ||grad f_i(x_(i)(k))||, the largest single agent's gradient (what a per-agent reading of D
  would bound; the consensus check's negative control uses it).
"""
from __future__ import annotations

import numpy as np

from fedtheory.sim import LocalTransform, register_measure

register_measure("dgd_stacked_grad", "f/w", "||h(k)|| = (sum_i ||grad f_i(x_i(k))||^2)^(1/2) at the agents' models "
                 "x_i(k) that start round k (Yuan, Ling & Yin's stacked gradient)")
register_measure("dgd_agent_grad", "f/w", "max_i ||grad f_i(x_i(k))|| at the agents' models x_i(k) that start round k")


class StackedGradient(LocalTransform):
    """Records ``dgd_stacked_grad`` and ``dgd_agent_grad`` (round measures, row k: the models starting round k);
    the direction is the gradient, unchanged."""

    name = "stacked_gradient"

    def direction(self, rs, g, w, grad_at):
        return g

    def measures(self) -> dict[str, str]:
        return {"dgd_stacked_grad": "||h(k)|| = (sum_i ||grad f_i(x_i(k))||^2)^(1/2), "
                                    "row k = the models starting round k",
                "dgd_agent_grad": "max_i ||grad f_i(x_i(k))||, row k = the models starting round k"}

    def measure(self, rs) -> dict[str, np.ndarray]:
        g2 = np.sum(np.asarray(rs.view.grad(rs.w0)) ** 2, axis=-1)  # (R, N): ||grad f_i(x_i(k))||^2
        return {"dgd_stacked_grad": np.sqrt(np.sum(g2, axis=1)), "dgd_agent_grad": np.sqrt(np.max(g2, axis=1))}
