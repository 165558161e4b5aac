"""FedShift's algorithm and problem (seed 004, Sec. IV-A, Algorithm 2; Sec. V-A2): FedShift added to any base
algorithm (the core's mixed-precision uplink with the weight shift switched on, ``fedtheory.sim.mixed_precision``),
its registration for ``fedtheory train --algorithm FedShift``, and the digits problem with the paper's label-parity
split (superior clients hold even digits, inferior ones odd digits)."""
from __future__ import annotations

import numpy as np

from fedtheory.sim import Algorithm, LogisticProblem, build_algorithm, mixed_precision, register_algorithm, resolve
from fedtheory.sim.partition import label_parity_shards
from fedtheory.sim.problems import digits_split
from fedtheory.validation import ParameterError, check_int, check_random_state


def fedshift(base: Algorithm, inferior, *, bits=8, quantizer: str | None = "kmeans", layers=None,
             error_feedback: bool = False, target: str = "weights") -> Algorithm:
    """FedShift added to ``base`` (Algorithm 2): ``fedshift(fedprox(0.01), inferior, bits=4)``."""
    return mixed_precision(base, inferior, bits=bits, quantizer=quantizer, layers=layers, shift=True,
                           error_feedback=error_feedback, target=target)


INFERIOR = ("partition", "odd", "even", "all", "none")


def fedshift_by_name(base: str = "FedAvg", bits=8, quantizer: str = "kmeans", shift=1.0, layers: str = "tensor",
                     inferior: str = "partition", error_feedback: bool = False, target: str = "weights", *, n_clients,
                     layer_sizes, client_groups=None) -> Algorithm:
    """FedShift (seed 004 Alg. 2) on a registered base algorithm: inferior clients send DeQ(Q(w)) at ``bits``
    ('kmeans': Algorithm 1, or 'uniform': eqs. 5-6; quantizer 'none': full precision for all), the server shifts
    each layer by its weight mean (eq. 10). shift: 1 (FedShift) or 0 (the mixed-precision baseline; sweep 1,0 to
    train both on the same seeds). layers: 'tensor' (each parameter tensor is a layer: the paper's layer-wise
    quantization) or 'model' (one block). inferior: 'partition' (the label-parity split's odd-label group when the
    partition is label-parity, else the odd-indexed clients, as that split marks them), 'odd', 'even', 'all', 'none'."""
    if str(base).lower().endswith("+ri") or resolve(base)[0].name == "FedShift":
        raise ParameterError("base", base, "a registered server algorithm without "
                                           "'+RI' (e.g. FedAvg, FedProx, SCAFFOLD)")
    if layers not in ("tensor", "model"):
        raise ParameterError("layers", layers, "'tensor' or 'model'")
    if inferior not in INFERIOR:
        raise ParameterError("inferior", inferior, "one of " + ", ".join(INFERIOR))
    ids = np.arange(n_clients)
    mask = {"partition": client_groups if client_groups is not None else ids % 2 == 1, "odd": ids % 2 == 1,
            "even": ids % 2 == 0, "all": np.ones(n_clients, bool), "none": np.zeros(n_clients, bool)}[inferior]
    q = None if str(quantizer).lower() == "none" else quantizer
    shift_arr = np.asarray(shift, dtype=float)
    return mixed_precision(build_algorithm(base), np.asarray(mask, bool), bits=bits, quantizer=q,
                           layers=list(layer_sizes) if layers == "tensor" else None,
                           shift=shift_arr.astype(bool) if shift_arr.ndim else bool(shift_arr),
                           error_feedback=bool(error_feedback), target=target)


register_algorithm("FedShift", fedshift_by_name, source="seed 004 Alg. 2 (mixed-precision uplink + weight shift)")


# ------------------------------------------------------------------------------------ problem


def digits_parity_logistic(n_clients: int = 10, labels_per_client: int = 2, *, reg: float = 1e-2,
                           test_fraction: float = 0.2, random_state=0) -> tuple[LogisticProblem, np.ndarray]:
    """scikit-learn's digits with FedShift's label-parity split (partition.label_parity_shards).

    Returns (problem, inferior): even-indexed clients hold even digits (superior), odd-indexed
    clients odd digits (inferior). The model is (64 pixels + bias) x 10 classes; flat layout
    features-major, so ``DIGITS_LAYERS`` = (640, 10) separates the weight matrix from the bias row.
    """
    n_clients = check_int("n_clients", n_clients, 2)
    rng = check_random_state(random_state)
    X, y, train_idx, test_idx = digits_split(test_fraction, rng)
    parts, inferior = label_parity_shards(y[train_idx], n_clients, labels_per_client, random_state=rng)
    Xc = [X[train_idx][p] for p in parts]
    yc = [y[train_idx][p] for p in parts]
    prob = LogisticProblem(Xc, yc, 10, reg=reg, test=(X[test_idx], y[test_idx]), name="digits_parity_logistic")
    return prob, inferior


DIGITS_LAYERS = (640, 10)
