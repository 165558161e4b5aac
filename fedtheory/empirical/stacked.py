"""Many parameter rows of one network in a single forward pass: the rows folded into the channel dimension.

The batched training path evaluates M = runs x clients copies of a network, each with its own parameters
and its own minibatch. ``torch.func.vmap`` does this generically, but on a CPU its batching rules copy the
activations between layouts around every layer (a (rows, batch, ...) tensor is reshaped into the batch
dimension for max-pooling, into the channel dimension for a convolution) and leave them in the NCHW layout,
where max-pooling small images is slow. ``StackedModel`` runs the module's own ``forward`` once, on
activations shaped (B, M*C, ...), where row m's per-sample activation is channels [m*C, (m+1)*C):

* a convolution with stacked weights (M, C_out, C_in/g, k...) is one grouped convolution with M*g groups;
* a linear layer with weights (M, out, in) on (B, M*in) is one batched matrix product;
* GroupNorm with g groups is GroupNorm with M*g groups (the statistics of a group stay within one row);
* activations, pooling, padding and elementwise sums act on each channel, hence on each row, unchanged;
* ``flatten(1)`` and means over the spatial dimensions keep each row's features contiguous.

Nothing is assumed of the model beyond what it calls: a ``TorchFunctionMode`` sees every torch function the
forward pass calls, applies the rules above, and refuses anything else (``NotStackable``, e.g. ``torch.cat``
along the channels or a parameter used outside a convolution / linear / norm layer). On a CPU the activations
are kept channels-last. ``functional.GradFn`` checks the result against the per-row reference (vmap) on a
small probe before it uses it, and falls back to vmap when the two differ or the model is refused.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import torch
from torch.func import functional_call
from torch.nn import functional as F
from torch.overrides import TorchFunctionMode

from .._validation import FedTheoryError

__all__ = ["NotStackable", "StackedModel"]


class NotStackable(FedTheoryError):
    """The model calls a torch function that stacked (row-folded) execution does not support."""


def _name(func) -> str:
    return getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)


# per-sample functions that act on each channel separately (so on each row), whatever the layout
_CHANNELWISE = {
    F.relu, torch.relu, torch.relu_, F.relu6, F.leaky_relu, F.elu, F.gelu, F.silu, F.mish, F.hardtanh, F.hardswish,
    F.softplus, torch.sigmoid, torch.tanh, F.max_pool1d, F.max_pool2d, F.max_pool3d, F.max_pool1d_with_indices,
    F.max_pool2d_with_indices, F.max_pool3d_with_indices, F.avg_pool1d, F.avg_pool2d, F.avg_pool3d,
    F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d, F.adaptive_max_pool1d, F.adaptive_max_pool2d,
    F.adaptive_max_pool3d, torch.Tensor.relu, torch.Tensor.relu_, torch.Tensor.sigmoid, torch.Tensor.tanh,
    torch.Tensor.contiguous, torch.Tensor.clone, torch.Tensor.float, torch.Tensor.double, torch.Tensor.to,
}
# elementwise with another activation of the same shape or a scalar
_ELEMENTWISE = {
    torch.add, torch.sub, torch.mul, torch.div, torch.Tensor.add, torch.Tensor.add_, torch.Tensor.sub,
    torch.Tensor.sub_, torch.Tensor.mul, torch.Tensor.mul_, torch.Tensor.div, torch.Tensor.div_,
    torch.Tensor.__add__, torch.Tensor.__radd__, torch.Tensor.__iadd__, torch.Tensor.__sub__, torch.Tensor.__rsub__,
    torch.Tensor.__mul__, torch.Tensor.__rmul__, torch.Tensor.__imul__, torch.Tensor.__truediv__,
}
_REDUCTIONS = {torch.mean, torch.sum, torch.amax, torch.amin, torch.Tensor.mean, torch.Tensor.sum, torch.Tensor.amax,
               torch.Tensor.amin}
_METADATA = {torch.Tensor.size, torch.Tensor.dim, torch.Tensor.numel, torch.Tensor.is_contiguous}


class _Folded(TorchFunctionMode):
    """Applies the row-folding rules to the torch calls of one forward pass; ``params`` are the stacked tensors."""

    def __init__(self, rows: int, params: Sequence[torch.Tensor]):
        super().__init__()
        self.M = rows
        self.param_ids = {id(p) for p in params}

    # -------------------------------------------------------------- rules for layers with parameters
    def _conv(self, func, x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
        M = self.M
        if id(w) not in self.param_ids or (b is not None and id(b) not in self.param_ids) or id(x) in self.param_ids:
            raise NotStackable(f"{_name(func)} with weights that are not stacked parameters")
        if x.dim() != w.dim() - 1 or x.shape[1] != M * w.shape[2] * groups:
            raise NotStackable(f"{_name(func)} on an input of shape {tuple(x.shape)}")
        w2 = w.reshape(M * w.shape[1], *w.shape[2:])
        return func(x, w2, None if b is None else b.reshape(-1), stride, padding, dilation, groups * M)

    def _linear(self, x, w, b=None):
        M, out, inp = w.shape[0], w.shape[1], w.shape[2]
        if id(w) not in self.param_ids or (b is not None and id(b) not in self.param_ids) or x.dim() != 2 \
                or x.shape[1] != M * inp:
            raise NotStackable(f"linear on an input of shape {tuple(x.shape)}")
        B = x.shape[0]
        # y^T = w x^T per row: the weight's gradient then comes out in w's own layout (x w^T would give it
        # transposed, and copying it into the flat gradient would cost a transposing pass)
        xt = x.reshape(B, M, inp).permute(1, 2, 0)  # (M, in, B)
        yt = torch.bmm(w, xt) if b is None else torch.baddbmm(b.unsqueeze(2), w, xt)  # (M, out, B)
        return yt.permute(2, 0, 1).reshape(B, M * out)

    def _group_norm(self, x, num_groups, weight=None, bias=None, eps=1e-5):
        for p in (weight, bias):
            if p is not None and id(p) not in self.param_ids:
                raise NotStackable("group_norm with an affine tensor that is not a stacked parameter")
        return F.group_norm(x, num_groups * self.M, None if weight is None else weight.reshape(-1),
                            None if bias is None else bias.reshape(-1), eps)

    def _batch_norm(self, x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
                    eps=1e-5):
        if running_mean is not None or running_var is not None or not training:
            raise NotStackable("batch_norm with running statistics")
        return F.batch_norm(x, None, None, None if weight is None else weight.reshape(-1),
                            None if bias is None else bias.reshape(-1), True, momentum, eps)

    # -------------------------------------------------------------- checks for the rest
    def _no_params(self, func, args, kwargs):
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, torch.Tensor) and id(a) in self.param_ids:
                raise NotStackable(f"{_name(func)} applied to a parameter")

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in (torch.conv1d, torch.conv2d, torch.conv3d):
            return self._conv(func, *args, **kwargs)
        if func is F.linear:
            return self._linear(*args, **kwargs)
        if func is F.group_norm:
            return self._group_norm(*args, **kwargs)
        if func is F.batch_norm:
            return self._batch_norm(*args, **kwargs)
        self._no_params(func, args, kwargs)
        name = getattr(func, "__name__", "")
        if func in _METADATA or name == "__get__":
            return func(*args, **kwargs)
        if func in _CHANNELWISE:
            return func(*args, **kwargs)
        if func is F.pad:
            pad = args[1] if len(args) > 1 else kwargs["pad"]
            if len(pad) > 2 * (args[0].dim() - 2):
                raise NotStackable("pad over the channel or batch dimension")
            return func(*args, **kwargs)
        if func is F.dropout:
            p = args[1] if len(args) > 1 else kwargs.get("p", 0.5)
            training = args[2] if len(args) > 2 else kwargs.get("training", True)
            if p and training:
                raise NotStackable("dropout (randomness)")
            return args[0]
        if func in _ELEMENTWISE:
            a, b = args[0], (args[1] if len(args) > 1 else kwargs.get("other"))
            for o in (a, b):
                if isinstance(o, torch.Tensor) and o.dim() > 0 and o.shape != a.shape:
                    raise NotStackable(f"{_name(func)} with broadcasting ({tuple(a.shape)} and {tuple(o.shape)})")
            return func(*args, **kwargs)
        if func in (torch.flatten, torch.Tensor.flatten):
            x = args[0]
            start = args[1] if len(args) > 1 else kwargs.get("start_dim", 0)
            end = args[2] if len(args) > 2 else kwargs.get("end_dim", -1)
            if start != 1 or end not in (-1, x.dim() - 1):
                raise NotStackable(f"flatten({start}, {end})")
            return func(*args, **kwargs)
        if func in (torch.Tensor.view, torch.Tensor.reshape, torch.reshape):
            x = args[0]
            shape = args[1:] if func is not torch.reshape else args[1]
            if len(shape) == 1 and isinstance(shape[0], (tuple, list, torch.Size)):
                shape = tuple(shape[0])
            if len(shape) == 2 and shape[0] == x.shape[0] and shape[1] in (-1, math.prod(x.shape[1:])):
                return func(*args, **kwargs)  # = flatten(1)
            raise NotStackable(f"{_name(func)} to {tuple(shape)}")
        if func in _REDUCTIONS:
            x = args[0]
            dim = args[1] if len(args) > 1 else kwargs.get("dim")
            dims = (dim,) if isinstance(dim, int) else dim
            if dims is None or any(d % x.dim() < 2 for d in dims):
                raise NotStackable(f"{_name(func)} over dimension(s) {dim}")
            return func(*args, **kwargs)
        raise NotStackable(_name(func))


class StackedModel:
    """``flat``'s module evaluated for M parameter rows at once (see the module docstring).

    ``forward(params, x)``: ``params`` the parameter tensors in ``flat.names`` order, each (M, *shape); ``x`` the
    rows' minibatches (M, B, *input shape). Returns the logits (M, B, classes), and with ``features=True`` also
    the representation ``forward(x, return_features=True)`` gives, (M, B, features). ``channels_last`` keeps
    image activations channels-last (faster on a CPU). Raises ``NotStackable`` for a model it cannot fold."""

    def __init__(self, flat: Any, channels_last: bool = False):
        self.flat = flat
        self.channels_last = channels_last

    def split(self, W: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """(M, dim) rows -> the parameter tensors (M, *shape), views of W."""
        M = W.shape[0]
        return tuple(p.view(M, *s) for p, s in zip(torch.split(W, self.flat.numels, dim=-1), self.flat.shapes))

    def forward(self, params: Sequence[torch.Tensor], x: torch.Tensor, features: bool = False):
        M, B = x.shape[0], x.shape[1]
        xf = x.transpose(0, 1).reshape(B, M * x.shape[2], *x.shape[3:])
        if self.channels_last and xf.dim() == 4:
            xf = xf.contiguous(memory_format=torch.channels_last)
        with _Folded(M, params):
            out = functional_call(self.flat.module, dict(zip(self.flat.names, params)), (xf,),
                                  {"return_features": True} if features else {})
        if features:
            return self._unfold(out[0], M), self._unfold(out[1], M)
        return self._unfold(out, M)

    @staticmethod
    def _unfold(y: torch.Tensor, M: int) -> torch.Tensor:
        if y.dim() != 2:
            raise NotStackable(f"a model output of shape {tuple(y.shape)} (expected (batch, features))")
        return y.view(y.shape[0], M, -1).transpose(0, 1)
