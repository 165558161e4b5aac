"""A network as a pure function of one flat parameter vector, and its per-client gradients.

The plug-ins of ``sim/plugins.py`` act on state arrays shaped (runs, clients, dim); here ``dim`` is
the number of network parameters and each (run, client) row is one flat parameter vector. A row is
turned back into the module's named tensors by views (no copy) and evaluated with
``torch.func.functional_call``.

Two paths compute the (run, client) gradients of a local step:
* ``batched``: ``vmap(grad_and_value(loss))`` over all M = runs x clients rows at once (optionally
  in chunks of ``chunk`` rows to bound memory): a few large kernels per step;
* ``sequential``: the same per-row function called row by row, as a per-client FL simulator
  does; the reference the batched path is tested against (and timed against).
Both return exactly what the other does up to floating-point summation order.
"""
from __future__ import annotations

from typing import Callable

import torch
from torch import nn
from torch.func import functional_call, grad_and_value, vmap
from torch.nn import functional as F

from .._validation import ParameterError


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


class GradFn:
    """(M, dim) rows + (M, B, ...) minibatches -> ((M, dim) gradients, (M,) minibatch losses)."""

    def __init__(self, flat: FlatModel, path: str = "batched", chunk: int | None = None,
                 terms: tuple[ObjectiveTerm, ...] = (), sizes: tuple[int, ...] = ()):
        if path not in ("batched", "sequential"):
            raise ParameterError("path", path, "'batched' or 'sequential'")
        self.path, self.chunk, self.flat = path, chunk, flat
        self._single = grad_and_value(make_loss(flat, tuple(terms), tuple(sizes)))
        self._batched = vmap(self._single)

    def _split(self, W: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """(..., dim) -> the parameter tensors (..., *shape) as views of W."""
        lead = W.shape[:-1]
        return tuple(p.view(*lead, *s) for p, s in zip(torch.split(W, self.flat.numels, dim=-1), self.flat.shapes))

    def _call(self, fn, W, X, Y, *extra):
        gs, v = fn(self._split(W), X, Y, *extra)
        lead = W.shape[:-1]
        return torch.cat([g.reshape(*lead, -1) for g in gs], dim=-1), v

    def __call__(self, W: torch.Tensor, X: torch.Tensor, Y: torch.Tensor, *extra: torch.Tensor):
        M = W.shape[0]
        if self.path == "sequential":
            outs = [self._call(self._single, W[m], X[m], Y[m], *(e[m] for e in extra)) for m in range(M)]
            return torch.stack([o[0] for o in outs]), torch.stack([o[1] for o in outs])
        step = M if not self.chunk else min(self.chunk, M)
        if step >= M:
            return self._call(self._batched, W, X, Y, *extra)
        gs, ls = [], []
        for a in range(0, M, step):
            g, v = self._call(self._batched, W[a:a + step], X[a:a + step], Y[a:a + step],
                              *(e[a:a + step] for e in extra))
            gs.append(g)
            ls.append(v)
        return torch.cat(gs), torch.cat(ls)


@torch.no_grad()
def per_sample_eval(flat: FlatModel, w: torch.Tensor, x_all: torch.Tensor, y_all: torch.Tensor,
                    prepare: Callable[[torch.Tensor], torch.Tensor], batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-sample cross-entropy and correctness of the model ``w`` (dim,) on every sample (no augmentation)."""
    losses, correct = [], []
    for a in range(0, len(y_all), batch_size):
        x = prepare(x_all[a:a + batch_size])
        y = y_all[a:a + batch_size]
        logits = flat.logits(w, x)
        losses.append(F.cross_entropy(logits, y, reduction="none"))
        correct.append((logits.argmax(dim=1) == y).to(logits.dtype))
    return torch.cat(losses), torch.cat(correct)
