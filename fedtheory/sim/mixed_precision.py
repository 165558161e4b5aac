"""Mixed-precision uplink with the weight shift (FedShift, seed 004, Sec. IV-A, Algorithm 2), usable with any base
algorithm: a communication kind with its own naive reference (``reference_mixed_precision``). FedShift itself
(the shift switched on, its registration and its digits problem) is the FedShift plug-in's
(``fedtheory.papers.fedshift.algorithms``).

Superior clients send full-precision models; inferior clients (pre-identified, Sec. III-B) send
quantized ones (:class:`~fedtheory.sim.quantize.Quantize`). After the base aggregation the server
shifts every layer of the global model by the layer's weight mean m^{t+1}, scaled by the share of
inferior clients among the selected ones (eq. (10), Algorithm 2 lines 17-19):

    w_hat^{t+1} = w^{t+1} - (|I^t| / K) m^{t+1} 1_P .

:class:`WeightShift` wraps any aggregator (Algorithm 1's model mean, or the mean-update rule with a
server step) and computes *both* aggregates every round, w^{t+1} (no shift; FedAvg's D_FA) and
w_hat^{t+1} (D_FS), so Theorem 2 is measured on one run; a per-run flag ``shift`` says which one the
run continues from (``shift=[True, False]`` puts FedShift and its baseline in one batch, on the
same seeds). "FedShift + FedProx" is ``mixed_precision(fedprox(0.01), inferior, bits=4, shift=True)``.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .._validation import ParameterError, per_run
from .algorithms import Algorithm
from .backend import ops
from .config import RunConfig
from .problems import Problem
from .quantize import Blocks, ErrorFeedback, Quantize, client_mask, quantize_dequantize
from .reference import NaiveClients, naive_grad
from .rng import RunStreams
from .rules import Aggregator, MeanModels, MeanUpdates, PlainInit, RoundState

__all__ = ["MEASURES", "WeightShift", "mixed_precision", "reference_mixed_precision"]

MEASURES = {
    "shift_m_prev": "m^t: mean of all weights of the model w^t the round started from",
    "shift_m_next": "m^{t+1}: mean of all weights of the aggregate before the shift (eq. 8)",
    "shift_m_hat": "mean of all weights of the shifted aggregate w_hat^{t+1} (eq. 11)",
    "shift_rms_next": "root mean square of the weights of the aggregate before the shift (the scale of m's rounding)",
    "shift_D_FA2": "D_FA^2 = ||w^{t+1} - w^t||^2 (no shift)",
    "shift_D_FS2": "D_FS^2 = ||w_hat^{t+1} - w^t||^2 (FedShift), from the same client models",
    "shift_I": "|I^t|: inferior clients among the selected",
    "shift_divergence": "||w^{t+1}_used - w^t||: the round-to-round L2 "
                        "distance of the run's own global model (Fig. 9 top)",
    "shift_drift": "(1/K) sum_{k in K_t} ||sent_k - w^t||: mean L2 distance of the received local models to the "
                   "previous global (Fig. 9 bottom)",
    "shift_drift_local": "(1/K) sum_{k in K_t} ||w_{k,K}^t - w^t||, before quantization",
}


class WeightShift(Aggregator):
    """FedShift's aggregation (eq. (10)) around a base aggregator, per layer (block).

    inferior: the pre-identified inferior clients (mask or ids); layers: the block partition (see
    quantize.Blocks); shift: True (FedShift), False (the same run without the shift: the
    mixed-precision baseline, with the same measurements), or one bool per run.
    """

    name = "weight_shift"

    def __init__(self, base: Aggregator | None = None, inferior=None, layers=None, shift=True):
        if base is not None and not isinstance(base, Aggregator):
            raise ParameterError("base", type(base).__name__, "an Aggregator (e.g. MeanModels(), MeanUpdates(eta_g))")
        self.base = MeanModels() if base is None else base
        self.inferior = inferior
        self.layers = layers
        self.shift = shift

    def params(self):
        return {"shift": np.asarray(self.shift, dtype=np.float64),
                **{f"base.{k}": v for k, v in self.base.params().items()}}

    def setup(self, state, runs, n_clients, dim):
        self.base.setup(state, runs, n_clients, dim)
        self.inferior_mask = client_mask(self.inferior, n_clients)
        self.blocks = Blocks.of(self.layers, dim)
        flag = np.asarray(self.shift)
        if flag.dtype != bool and not np.all(np.isin(flag, (0, 1))):
            raise ParameterError("shift", self.shift, "True/False, or one bool per run")
        self.set_param("shift", per_run(flag.astype(np.float64), runs))

    def round_start(self, rs):
        self.base.round_start(rs)

    def round_end(self, rs):
        self.base.round_end(rs)

    def aggregate(self, rs: RoundState):
        w_fa = self.base.aggregate(rs)
        xp = ops(w_fa)
        n_inf = self.inferior_mask[np.asarray(rs.sel)].sum(axis=1).astype(np.float64)  # |I^t| per run
        frac = xp.asarray((n_inf / rs.sel.shape[1])[:, None], like=w_fa)
        m_next = self.blocks.means(w_fa)  # (R, n_blocks)
        w_fs = w_fa - self.blocks.expand(frac * m_next)
        on = self.param("shift", w_fa)[:, :, 0]  # (R, 1)
        rs.extra["shift"] = {"w_fa": w_fa, "w_fs": w_fs, "m_next": m_next, "m_prev": self.blocks.means(rs.state.w),
                             "n_inf": n_inf}
        return on * w_fs + (1 - on) * w_fa

    def measures(self):
        out = dict(MEASURES)
        if len(self._block_names()) > 1:
            for j in self._block_names():
                out[f"shift_m_prev_b{j}"] = f"m^t of block {j}"
                out[f"shift_m_next_b{j}"] = f"m^{{t+1}} of block {j}"
                out[f"shift_m_hat_b{j}"] = f"mean of block {j} of w_hat^{{t+1}}"
        return out

    def _block_names(self):
        if self.layers is None:
            return [0]
        n = self.layers.n_blocks if isinstance(self.layers, Blocks) else (int(self.layers) if np.ndim(self.layers) == 0
                                                                          else len(self.layers))
        return list(range(n))

    def measure(self, rs):
        if "shift_measures" not in rs.extra:  # the engine asks once per measure name; compute once per round
            rs.extra["shift_measures"] = self._measure(rs)
        return rs.extra["shift_measures"]

    def _measure(self, rs):
        ex = rs.extra["shift"]
        w, w_fa, w_fs = rs.state.w, ex["w_fa"], ex["w_fs"]
        xp = ops(w)
        sizes = xp.asarray(np.asarray(self.blocks.sizes, dtype=np.float64), like=w)
        P = float(self.blocks.dim)
        m_hat = self.blocks.means(w_fs)
        whole = lambda m: xp.sum(m * sizes, axis=-1) / P  # noqa: E731  (block means -> mean of all weights)
        out = {"shift_m_prev": whole(ex["m_prev"]), "shift_m_next": whole(ex["m_next"]), "shift_m_hat": whole(m_hat),
               "shift_rms_next": xp.sqrt(xp.mean(w_fa * w_fa, axis=-1)),
               "shift_D_FA2": xp.sum((w_fa - w) ** 2, axis=-1), "shift_D_FS2": xp.sum((w_fs - w) ** 2, axis=-1),
               "shift_I": xp.asarray(ex["n_inf"], like=w),
               "shift_divergence": xp.norm(rs.w_next - w, axis=-1),
               "shift_drift": xp.mean(xp.norm(rs.sent - w[:, None, :], axis=-1), axis=1),
               "shift_drift_local": xp.mean(xp.norm(rs.wK - w[:, None, :], axis=-1), axis=1)}
        if self.blocks.n_blocks > 1:
            for j in range(self.blocks.n_blocks):
                out[f"shift_m_prev_b{j}"] = ex["m_prev"][:, j]
                out[f"shift_m_next_b{j}"] = ex["m_next"][:, j]
                out[f"shift_m_hat_b{j}"] = m_hat[:, j]
        return out


# ------------------------------------------------------------------------------------ builders


def mixed_precision(base: Algorithm, inferior, *, bits=8, quantizer: str | None = "kmeans", layers=None, shift=False,
                    error_feedback: bool = False, target: str = "weights") -> Algorithm:
    """``base`` with mixed-precision uplink (inferior clients quantize; Sec. III-B) and the FedShift
    aggregation switched by ``shift`` (per run allowed). quantizer None: nobody quantizes (the shift
    alone, as Theorem 1 analyses it).

    Parameters
    ----------
    base : Algorithm
        The algorithm to extend: one with a server aggregator and without a compressor (``fedavg()``,
        ``fedprox(0.01)``, ``scaffold()``).
    inferior : array_like of bool or int, or None
        The pre-identified inferior clients, which quantize: a boolean mask over the clients or their ids (None:
        every client).
    bits : int or array_like, default 8
        The quantization's bit width (one value per run allowed).
    quantizer : {"kmeans", "uniform"} or None, default "kmeans"
        The quantizer (Algorithm 1's k-means, or eqs. 5-6's uniform one); None: nobody quantizes.
    layers : int, sequence of int or None, optional
        The block (layer) partition of the parameter vector: None (one block), n (n near-equal contiguous blocks),
        or the block sizes.
    shift : bool or array_like of bool, default False
        Whether the run continues from the shifted aggregate (FedShift) or from the plain one (the mixed-precision
        baseline, with the same measurements); one flag per run puts both in one batch.
    error_feedback : bool, default False
        Whether the quantizer keeps error feedback (needs a quantizer).
    target : {"weights", "updates"}, default "weights"
        What is quantized: the model itself (the paper), or the update w_{i,K} - w_{i,0}.

    Returns
    -------
    Algorithm
        ``base`` with the quantizing compressor and the ``WeightShift`` aggregator, named ``+FedShift`` or
        ``+MixedPrecision``.

    Raises
    ------
    ParameterError
        For a ``base`` that is not an Algorithm, has a compressor or has no aggregator, or error feedback without a
        quantizer.
    """
    if not isinstance(base, Algorithm):
        raise ParameterError("base", type(base).__name__, "an Algorithm (e.g. fedavg(), fedprox(0.01), scaffold())")
    if base.compress is not None:
        raise ParameterError("base", base.name, "an algorithm without a compressor (mixed precision adds one)")
    if base.aggregate is None:
        raise ParameterError("base", base.name, "an algorithm with a server aggregator")
    compress = None
    if quantizer is not None:
        compress = Quantize(quantizer, bits, inferior, layers, target=target)
        if error_feedback:
            compress = ErrorFeedback(compress)
    elif error_feedback:
        raise ParameterError("error_feedback", True, "False when quantizer is None (nothing to feed back)")
    flag = np.asarray(shift)
    tag = ("+FedShift" if flag.ndim == 0 and bool(flag)
           else "+MixedPrecision" if flag.ndim == 0 else "+MixedPrecision/FedShift")
    return dataclasses.replace(base, name=base.name + ("+EF" if error_feedback else "") + tag,
                               aggregate=WeightShift(base.aggregate, inferior, layers, shift), compress=compress)


# ------------------------------------------------------------------------------------ naive reference


def reference_mixed_precision(problem: Problem, base: Algorithm, config: RunConfig, seeds, inferior, *, bits=8,
                              quantizer: str | None = "kmeans", layers=None, shift=True, error_feedback=False,
                              target="weights", w0=None, return_clients: bool = False):
    """Algorithm 2 written again as a per-run, per-client loop: quantize each inferior client's
    vector on its own, shift each inferior client's model by m^{t+1} (eqs. (7)-(9)) when the base
    rule is Algorithm 1's mean, or the aggregate by (|I|/K) m^{t+1} (eq. (10), Algorithm 2 line 19)
    for the mean-update rule. Same random draws as the engine. Returns the global models (T+1, R, d), and
    with ``return_clients`` also {'local': (T, R, N, d) w_{k,K}, 'received': (T, R, N, d) what the server got}.

    The clients are ``sim.reference``'s naive clients (plain initialisation; the local transforms; the oracle).
    """
    streams = RunStreams(seeds)
    R, C, d = streams.runs, problem.n_clients, problem.dim
    K, T = config.local_steps, config.rounds
    N = config.clients_per_round or C
    mask = client_mask(inferior, C)
    blocks = Blocks.of(layers, d)
    bits_r = np.broadcast_to(np.asarray(bits), (R,))
    shift_r = np.broadcast_to(np.asarray(shift, dtype=bool), (R,))
    if not isinstance(base.init, PlainInit):
        raise NotImplementedError("the reference covers plain initialisation")
    w0 = problem.initial_point(0) if w0 is None else np.asarray(w0, float)
    w = [np.array(np.broadcast_to(w0, (R, d))[r]) for r in range(R)]
    ef = [[np.zeros(d) for _ in range(C)] for _ in range(R)]
    clients = NaiveClients(base.local, R, C, d)
    hist = [np.stack(w)]
    locals_, receiveds = [], []
    lr0 = np.broadcast_to(np.asarray(config.lr, float), (R,))
    for t in range(T):
        sel_all = streams.choose_clients(C, N) if N < C else np.broadcast_to(np.arange(C), (R, C))
        draws = config.oracle.draws(streams, R, N, K, d, problem.client_sizes[sel_all])
        new_w, round_local, round_recv = [], [], []
        for r in range(R):
            ends, received = [], []
            lr = None
            for n in range(N):
                i = int(sel_all[r, n])
                grad_at = naive_grad(problem, config.oracle, draws, run=r, pos=n, client=i, variant=0)
                x, lr = clients.local_steps(w[r].copy(), w[r], grad_at, lambda k, r=r: config.lr_at_step(t, k, lr0)[r],
                                            K, r, i)
                ends.append(x)
                out = x
                if mask[i] and quantizer is not None:
                    v = x + ef[r][i] if error_feedback else x
                    ref = w[r] if target == "updates" else np.zeros(d)
                    q = np.empty(d)
                    for s in blocks.slices:  # one layer of one client at a time
                        q[s] = quantize_dequantize((v - ref)[None, s], quantizer, int(bits_r[r]))[0] + ref[s]
                    if error_feedback:
                        ef[r][i] = v - q
                    out = q
                received.append(out)
            K_sel = N
            inf_sel = [bool(mask[int(i)]) for i in sel_all[r]]
            n_inf = sum(inf_sel)
            if isinstance(base.aggregate, MeanModels):
                pre = sum(received) / K_sel
                m = np.concatenate([np.full(sz, pre[s].mean()) for s, sz in zip(blocks.slices, blocks.sizes)])
                if shift_r[r]:  # eq. (7): shift each inferior model; eq. (9): average
                    nw = sum(v - m if f else v for v, f in zip(received, inf_sel)) / K_sel
                else:
                    nw = pre
            elif isinstance(base.aggregate, MeanUpdates):
                eta_g = float(np.broadcast_to(base.aggregate.server_lr, (R,))[r])
                pre = w[r] + eta_g * sum(v - w[r] for v in received) / K_sel
                m = np.concatenate([np.full(sz, pre[s].mean()) for s, sz in zip(blocks.slices, blocks.sizes)])
                nw = pre - (n_inf / K_sel) * m if shift_r[r] else pre  # Algorithm 2, line 19
            else:
                raise NotImplementedError(type(base.aggregate).__name__)
            clients.round_end(r, [int(i) for i in sel_all[r]], [w[r]] * N, ends, w[r] - nw, K, lr)
            new_w.append(nw)
            round_local.append(np.stack(ends))
            round_recv.append(np.stack(received))
        w = new_w
        hist.append(np.stack(w))
        locals_.append(np.stack(round_local))
        receiveds.append(np.stack(round_recv))
    if return_clients:
        return np.stack(hist), {"local": np.stack(locals_), "received": np.stack(receiveds)}
    return np.stack(hist)
