"""Every registered algorithm (and its '+RI' variant where it has none) through the same contract
(fedtheory.testing.check_algorithm), instead of lists kept by hand: a newly registered algorithm is tested
by being registered."""
import inspect
import subprocess
import sys

import numpy as np
import pytest

from fedtheory.empirical.algorithms import build_algorithm
from fedtheory.plugins import algorithms
from fedtheory.sim import Minibatch, heterogeneous_least_squares, synthetic_logistic
from fedtheory.testing import check_algorithm

N_CLIENTS = 6
DEFAULTS = {"beta": 0.1, "ri_beta": 0.1}  # values for hyperparameters without a default
CONTEXT = {"n_clients": N_CLIENTS, "layer_sizes": [2, 3], "client_groups": np.arange(N_CLIENTS) % 2 == 1}


def _build(name: str):
    spec = algorithms()[name.removesuffix("+RI")]
    hp = {k: DEFAULTS[k] for k, v in spec.hyperparameters.items() if v is inspect.Parameter.empty}
    if name.endswith("+RI"):
        hp["ri_beta" if "beta" in spec.hyperparameters else "beta"] = 0.1
    return build_algorithm(name, hp, {c: CONTEXT[c] for c in spec.context})


NAMES = sorted(algorithms())
RI = [f"{n}+RI" for n in ("FedAvg", "SCAFFOLD", "FedProx", "MoFedSAM")]


def _problem(alg, seed=0):
    if any(getattr(tr, "objective", False) for tr in alg.local):  # FedMRUR's regulariser needs representations
        return synthetic_logistic(N_CLIENTS, n_features=4, samples_per_client=10, random_state=seed)
    return heterogeneous_least_squares(N_CLIENTS, 5, 12, random_state=seed)


@pytest.mark.parametrize("name", NAMES + RI)
def test_registered_algorithm_meets_the_contract(name):
    alg = _build(name)
    out = check_algorithm(alg, problem=_problem(alg))
    assert out["reference"] == "ok" and out["determinism"] == "ok"


@pytest.mark.parametrize("name", ["FedInit", "SCAFFOLD", "FedCM", "FedShift"])
def test_contract_with_partial_participation_and_minibatches(name):
    p = heterogeneous_least_squares(N_CLIENTS, 5, 12, random_state=1)
    check_algorithm(_build(name), problem=p, clients_per_round=3, oracle=Minibatch(4))


def test_contract_fails_on_a_broken_plugin():
    """The contract can fail: a FedProx whose vectorized rule doubles mu disagrees with the naive reference."""
    import dataclasses

    from fedtheory.sim import Prox, fedprox

    class BrokenProx(Prox):
        def direction(self, rs, g, w, grad_at):
            return g + 2 * self.param("mu", g) * (w - rs.anchor)

    alg = dataclasses.replace(fedprox(0.5), local=(BrokenProx(0.5),))
    with pytest.raises(AssertionError, match="reference: engine and naive reference differ"):
        check_algorithm(alg, checks=("reference",))
    assert check_algorithm(fedprox(0.5), checks=("reference",)) == {"reference": "ok"}


def test_contract_says_when_the_reference_does_not_know_a_plugin():
    import dataclasses

    from fedtheory.sim import LocalTransform, fedavg

    class Scaled(LocalTransform):
        name = "scaled"

        def direction(self, rs, g, w, grad_at):
            return 0.5 * g

    out = check_algorithm(dataclasses.replace(fedavg(), local=(Scaled(),)), checks=("reference", "torch_backend"))
    assert out["reference"].startswith("not applicable") and "Scaled" in out["reference"]
    assert out["torch_backend"] == "ok"


CORE = ["FedAvg", "FedInit", "SCAFFOLD", "FedCM", "FedProx", "FedSAM", "DFedAvg", "DFedAvgM", "DFedSAM", "D-PSGD",
        "OledFL-SGD", "OledFL-SAM"]


def test_the_core_table_is_whole_whichever_module_is_imported_first():
    """The core's modules register their algorithms; fedtheory.sim's face imports them all, so importing the
    registry's own module is enough. It holds no paper's own algorithm: those come with their plug-in."""
    code = "from fedtheory.sim.algorithms import algorithms; print(' '.join(algorithms()))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == CORE


@pytest.mark.parametrize("lookup", ["fedtheory.plugins.algorithms()",
                                    "fedtheory.empirical.algorithms.resolve('FedShift')[0].name"])
def test_the_plug_ins_complete_the_table_in_a_fresh_process(lookup):
    """The lookups above the sim layer load the plug-ins first: FedMRUR's and FedShift's algorithms are found in a
    process that imported nothing else (a sweep's worker), in the order `fedtheory train --list-algorithms` shows."""
    module = lookup.split("(")[0].rsplit(".", 1)[0]
    code = (f"import {module}, fedtheory.plugins; {lookup}; "
            "print(' '.join(fedtheory.plugins.algorithms()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == CORE + ["MoFedSAM", "FedMRUR", "FedShift"]
