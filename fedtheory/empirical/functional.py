"""A network as a pure function of one flat parameter vector, and its per-client gradients.

The plug-ins of ``sim/rules.py`` act on state arrays shaped (runs, clients, dim); here ``dim`` is
the number of network parameters and each (run, client) row is one flat parameter vector. A row is
turned back into the module's named tensors by views (no copy) and evaluated with
``torch.func.functional_call``.

Two paths compute the (run, client) gradients of a local step:
* ``batched``: all M = runs x clients rows at once (optionally in chunks of ``chunk`` rows to bound
  memory): a few large kernels per step. Two engines: ``vmap(grad_and_value(loss))``, and the
  stacked engine (``stacked.StackedModel``: one forward pass with the rows folded into the channels,
  then plain autograd), which on a CPU keeps activations channels-last and can spread row blocks over
  worker threads (``Workers``);
* ``sequential``: the same per-row function called row by row, as a per-client FL simulator
  does; the reference the batched path is tested against (and timed against).
All return what the others do up to floating-point summation order.
"""
from __future__ import annotations

import copy
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

import torch
from torch import nn
from torch.func import functional_call, grad_and_value, vmap
from torch.nn import functional as F

from .._validation import ParameterError
from .stacked import NotStackable, StackedModel


class FlatModel:
    """``module``'s parameters as one flat vector of length ``dim`` (in ``named_parameters`` order)."""

    def __init__(self, module: nn.Module):
        buffers = [n for n, _ in module.named_buffers()]
        if buffers:
            raise ParameterError("model", type(module).__name__,
                                 f"a model without buffers/running statistics (has {', '.join(buffers[:3])})")
        self.module = module
        self.names, self.shapes, self.numels = [], [], []
        for n, p in module.named_parameters():
            self.names.append(n)
            self.shapes.append(tuple(p.shape))
            self.numels.append(p.numel())
        self.dim = int(sum(self.numels))

    def flat(self, module: nn.Module | None = None) -> torch.Tensor:
        m = self.module if module is None else module
        return torch.cat([p.detach().reshape(-1) for p in m.parameters()])

    def unflatten(self, w: torch.Tensor) -> dict[str, torch.Tensor]:
        out, off = {}, 0
        for n, s, k in zip(self.names, self.shapes, self.numels):
            out[n] = w[off:off + k].view(s)
            off += k
        return out

    def logits(self, w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return functional_call(self.module, self.unflatten(w), (x,))

    def logits_and_features(self, w: torch.Tensor, x: torch.Tensor):
        return functional_call(self.module, self.unflatten(w), (x,), {"return_features": True})


class Workers:
    """CPU worker threads for independent pieces of work (row blocks of a gradient, runs of an evaluation), each
    thread with its own copy of the module (``functional_call`` swaps a module's parameters, so threads cannot
    share one) and ``intra_op`` torch threads. Used by the stacked engine only: vmap is not thread-safe.

    On a CPU two threads each running whole operations on half the rows use two cores better than two torch
    threads splitting every operation (no barrier per operation; under load from other processes the
    latter waits for the slower core at every operation)."""

    def __init__(self, flat: "FlatModel", n: int, intra_op: int = 1):
        self.n, self.intra_op = int(n), int(intra_op)
        # torch's thread count is per thread, but a thread's first parallel call initialises it from the last
        # value set anywhere: initialise this thread's now, before the workers set theirs
        torch.get_num_threads()
        self._flat = flat
        self._local = threading.local()
        self._pool = ThreadPoolExecutor(self.n, thread_name_prefix="fedtheory-worker", initializer=self._init)
        weakref.finalize(self, self._pool.shutdown, wait=False)

    def _init(self):
        torch.set_num_threads(self.intra_op)
        self._local.flat = FlatModel(copy.deepcopy(self._flat.module))

    def flat(self) -> "FlatModel":
        """The calling thread's model (the original outside the workers)."""
        return getattr(self._local, "flat", self._flat)

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        """[fn(item) for item in items], the items spread over the threads; results in order."""
        return list(self._pool.map(fn, items))


ObjectiveTerm = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def make_loss(flat: FlatModel, terms: tuple[ObjectiveTerm, ...] = (), sizes: tuple[int, ...] = ()):
    """The per-row objective as a function of the parameter tensors ``ps`` (a tuple in ``flat.names`` order):
    mean cross-entropy of the minibatch, plus each plug-in objective term term(z_local, z_anchor, params) on the
    representations of the local and the anchor model (the anchor is a flat constant: the gradient is taken in
    the local parameters only). ``params`` holds every term's per-row parameters side by side (``sizes`` each).

    The gradient is taken in the parameter tensors, not in the flat vector they view: differentiating through
    the views would give each tensor's gradient as a zero-filled vector of the full dimension, added up over
    the tensors (most of a CNN2 step's time on a CPU); concatenating the tensors' gradients gives the same
    numbers."""
    names = tuple(flat.names)

    def logits_p(ps, x, features=False):
        return functional_call(flat.module, dict(zip(names, ps)), (x,), {"return_features": True} if features else {})

    if not terms:
        def loss(ps, x, y):
            return F.cross_entropy(logits_p(ps, x), y)
        return loss

    def loss_terms(ps, x, y, anchor, params):
        logits, z = logits_p(ps, x, True)
        _, za = flat.logits_and_features(anchor, x)
        out, off = F.cross_entropy(logits, y), 0
        for term, k in zip(terms, sizes):
            out = out + term(z, za, params[off:off + k])
            off += k
        return out
    return loss_terms


ENGINES = ("vmap", "stacked")


class GradFn:
    """(M, dim) rows + (M, B, ...) minibatches -> ((M, dim) gradients, (M,) minibatch losses).

    ``engine`` (batched path): 'vmap' (``vmap(grad_and_value(loss))``) or 'stacked' (one forward pass of the rows
    folded into the channels, ``stacked.StackedModel``, and plain autograd; ``channels_last`` keeps image
    activations channels-last). ``verify_stacked`` checks the stacked engine against the vmap one on a probe and
    falls back to vmap when they differ; ``engine`` and ``engine_reason`` say what is used and why.

    ``parts`` (stacked engine, no objective terms, no ``chunk``): the rows go in that many contiguous blocks, one
    pass each, spread over ``workers`` (a ``Workers`` pool) when given, else one after the other; the blocks do
    not depend on the workers, so neither do the numbers. ``weight_decay``: the gradient returned is that of the
    loss + (weight_decay/2) ||w||^2 (the stacked engine adds it while it assembles the rows: one pass fewer over
    the (M, dim) gradient, the same bits as adding it afterwards)."""

    def __init__(self, flat: FlatModel, path: str = "batched", chunk: int | None = None,
                 terms: tuple[ObjectiveTerm, ...] = (), sizes: tuple[int, ...] = (), engine: str = "vmap",
                 channels_last: bool = False, parts: int = 1, workers: Workers | None = None,
                 weight_decay: float = 0.0):
        if path not in ("batched", "sequential"):
            raise ParameterError("path", path, "'batched' or 'sequential'")
        if engine not in ENGINES:
            raise ParameterError("engine", engine, "one of " + ", ".join(ENGINES))
        self.path, self.chunk, self.flat = path, chunk, flat
        self.terms, self.sizes = tuple(terms), tuple(sizes)
        self.engine = engine if path == "batched" else "per-row"
        self.engine_reason = "asked for" if path == "batched" else "sequential path"
        self._single = grad_and_value(make_loss(flat, self.terms, self.sizes))
        self._batched = vmap(self._single)
        self._stacked = StackedModel(flat, channels_last)
        self.channels_last = channels_last
        self.parts, self.workers = max(1, int(parts)), workers
        self.weight_decay = float(weight_decay)
        self._local = threading.local()

    def _split(self, W: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """(..., dim) -> the parameter tensors (..., *shape) as views of W."""
        lead = W.shape[:-1]
        return tuple(p.view(*lead, *s) for p, s in zip(torch.split(W, self.flat.numels, dim=-1), self.flat.shapes))

    def _call(self, fn, W, X, Y, *extra):
        gs, v = fn(self._split(W), X, Y, *extra)
        lead = W.shape[:-1]
        return torch.cat([g.reshape(*lead, -1) for g in gs], dim=-1), v

    def _decay(self, g: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
        if self.weight_decay:
            g.add_(W * self.weight_decay)
        return g

    def _call_stacked(self, W, X, Y, *extra, out: torch.Tensor | None = None, decay: float = 0.0):
        """The rows' gradients from one folded forward pass: d(sum of the rows' losses)/d(row m's parameters) is
        row m's gradient, the rows sharing no parameter. Written into ``out`` (M, dim) when given; plus decay * W."""
        M = W.shape[0]
        st = self._thread_stacked()
        with torch.enable_grad():
            ps = tuple(p.detach().requires_grad_() for p in st.split(W))
            if self.terms:
                anchor, params = extra
                logits, z = st.forward(ps, X, features=True)
                with torch.no_grad():
                    _, za = st.forward(st.split(anchor), X, features=True)
            else:
                logits = st.forward(ps, X)
            B = logits.shape[1]
            loss = F.cross_entropy(logits.reshape(M * B, -1), Y.reshape(M * B), reduction="none").view(M, B).mean(1)
            off = 0
            for term, k in zip(self.terms, self.sizes):
                loss = loss + vmap(term)(z, za, params[:, off:off + k])
                off += k
            gs = torch.autograd.grad(loss.sum(), ps, allow_unused=True)
        # each tensor's gradient goes once into its slice of the rows, with the decay term (a channels-last
        # convolution's weight gradient would need a second copy through reshape + cat)
        g = torch.empty((M, self.flat.dim), dtype=W.dtype, device=W.device) if out is None else out
        off = 0
        for gi, p, w in zip(gs, ps, st.split(W)):
            k = p[0].numel()
            dst = g[:, off:off + k].view(p.shape)
            if gi is None:
                dst.copy_(w * decay) if decay else dst.zero_()
            elif decay:
                torch.add(gi, w * decay, out=dst)
            else:
                dst.copy_(gi)
            off += k
        return g, loss.detach()

    def _thread_stacked(self) -> StackedModel:
        if self.workers is None or self.workers.flat() is self.flat:
            return self._stacked
        st = getattr(self._local, "stacked", None)
        if st is None:
            st = self._local.stacked = StackedModel(self.workers.flat(), self.channels_last)
        return st

    def _rows(self, W, X, Y, *extra):
        if self.engine != "stacked":
            g, v = self._call(self._batched, W, X, Y, *extra)
            return self._decay(g, W), v
        M = W.shape[0]
        P = min(self.parts, M) if not self.terms else 1
        if P == 1:
            return self._call_stacked(W, X, Y, *extra, decay=self.weight_decay)
        cuts = [M * i // P for i in range(P + 1)]
        g = torch.empty((M, self.flat.dim), dtype=W.dtype, device=W.device)

        def block(i):  # rows cuts[i]:cuts[i+1], written in place
            a, b = cuts[i], cuts[i + 1]
            return self._call_stacked(W[a:b], X[a:b], Y[a:b], out=g[a:b], decay=self.weight_decay)[1]

        losses = self.workers.map(block, range(P)) if self.workers is not None else [block(i) for i in range(P)]
        return g, torch.cat(losses)

    def verify_stacked(self, W: torch.Tensor, X: torch.Tensor, Y: torch.Tensor, *extra: torch.Tensor,
                       rtol: float | None = None) -> bool:
        """Use the stacked engine only if, on these probe rows, it gives the vmap engine's losses and gradients to
        ``rtol`` of their largest magnitude (default 1e-3 in float32, 1e-9 in float64); else fall back to vmap.
        Deterministic: the same probe gives the same choice."""
        if self.engine != "stacked":
            return False
        if rtol is None:
            rtol = 1e-9 if W.dtype == torch.float64 else 1e-3
        try:
            g, v = self._call_stacked(W, X, Y, *extra)
        except NotStackable as exc:
            self.engine, self.engine_reason = "vmap", f"stacked execution refused the model ({exc}); vmap instead"
            return False
        g_ref, v_ref = self._call(self._batched, W, X, Y, *extra)
        err = max(float((g - g_ref).abs().max() / g_ref.abs().max().clamp_min(1e-30)),
                  float((v - v_ref).abs().max() / v_ref.abs().max().clamp_min(1e-30)))
        if not err <= rtol:
            self.engine, self.engine_reason = "vmap", (f"stacked execution differed from vmap on the probe (relative "
                                                       f"difference {err:.2g} > {rtol:g}); vmap instead")
            return False
        self.engine_reason = f"checked against vmap on a probe (relative difference {err:.2g} <= {rtol:g})"
        return True

    def __call__(self, W: torch.Tensor, X: torch.Tensor, Y: torch.Tensor, *extra: torch.Tensor):
        M = W.shape[0]
        if self.path == "sequential":
            outs = [self._call(self._single, W[m], X[m], Y[m], *(e[m] for e in extra)) for m in range(M)]
            return self._decay(torch.stack([o[0] for o in outs]), W), torch.stack([o[1] for o in outs])
        step = M if not self.chunk else min(self.chunk, M)
        if step >= M:
            return self._rows(W, X, Y, *extra)
        gs, ls = [], []
        for a in range(0, M, step):
            g, v = self._rows(W[a:a + step], X[a:a + step], Y[a:a + step], *(e[a:a + step] for e in extra))
            gs.append(g)
            ls.append(v)
        return torch.cat(gs), torch.cat(ls)


@torch.no_grad()
def per_sample_eval(flat: FlatModel, w: torch.Tensor, x_all: torch.Tensor, y_all: torch.Tensor,
                    prepare: Callable[[torch.Tensor], torch.Tensor],
                    batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-sample cross-entropy and correctness of the model ``w`` (dim,) on every sample (no augmentation)."""
    losses, correct = [], []
    for a in range(0, len(y_all), batch_size):
        x = prepare(x_all[a:a + batch_size])
        y = y_all[a:a + batch_size]
        logits = flat.logits(w, x)
        losses.append(F.cross_entropy(logits, y, reduction="none"))
        correct.append((logits.argmax(dim=1) == y).to(logits.dtype))
    return torch.cat(losses), torch.cat(correct)
