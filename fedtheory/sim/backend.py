"""The few array operations plug-ins use, for numpy arrays and torch tensors alike.

Plug-ins call ``xp = ops(x)`` on an array they receive and use only these functions, so one
implementation of an algorithm's rule serves the numpy engine (sim/) and the torch engine
(empirical/). torch is imported only when a torch tensor is seen.

A third kind of array brings its own namespace: an object with a method ``__fedtheory_ops__()`` returning one
(the PEP's arrays of symbolic points, ``fedtheory.worst.pep.protocol``, which runs the same plug-ins as a
performance estimation problem). Such a namespace offers the functions below that its algebra can express and
refuses the others by name.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

SHORT_ROW = 32  # the longest last axis for which a clients-first copy makes a mean over the clients faster
SHORT_ROW_MIN_SIZE = 1 << 10  # and the smallest array (below it, the copy's call costs more than it saves)


def _short_rows(x: np.ndarray) -> bool:
    """A C-contiguous (R, N, d) array, R > 1 runs, 1 < d <= SHORT_ROW: a sum over its clients (axis 1) runs along
    d-long inner loops, client after client (d = 1 would pair the clients up along the contiguous axis instead)."""
    return 1 < x.shape[2] <= SHORT_ROW and x.shape[0] > 1 and x.size >= SHORT_ROW_MIN_SIZE and x.flags.c_contiguous


class NumpyOps:
    name = "numpy"

    @staticmethod
    def asarray(x, like=None):
        return np.asarray(x, dtype=np.float64) if not isinstance(x, np.ndarray) else x

    @staticmethod
    def norm(x, axis=-1, keepdims=False):
        if isinstance(axis, int) and isinstance(x, np.ndarray) and x.dtype == np.float64:
            # np.linalg.norm's own arithmetic for one axis (sqrt of add.reduce of x * x), without its Python layers
            return np.sqrt(np.add.reduce(x * x, axis=axis, keepdims=keepdims))
        return np.linalg.norm(x, axis=axis, keepdims=keepdims)

    @staticmethod
    def sum(x, axis=None, keepdims=False):
        if isinstance(axis, int) and isinstance(x, np.ndarray) and x.dtype == np.float64:
            return np.add.reduce(x, axis=axis, keepdims=keepdims)  # np.sum's own reduction, without its Python layers
        return np.sum(x, axis=axis, keepdims=keepdims)

    @staticmethod
    def mean(x, axis=None, keepdims=False):
        if isinstance(axis, int) and isinstance(x, np.ndarray) and x.dtype == np.float64:
            # np.mean's own arithmetic (add.reduce, then a division by the count), without its Python layers
            if axis == 1 and x.ndim == 3 and not keepdims and _short_rows(x):
                # over the clients of (R, N, d) with short rows: numpy adds client after client along d-long inner
                # loops; a clients-first copy (N, R, d) adds client after client along R d-long ones: the same sums
                return np.add.reduce(np.ascontiguousarray(x.transpose(1, 0, 2)), axis=0) / x.shape[1]
            return np.add.reduce(x, axis=axis, keepdims=keepdims) / x.shape[axis]
        return np.mean(x, axis=axis, keepdims=keepdims)

    @staticmethod
    def max(x, axis=None):
        if isinstance(axis, int) and isinstance(x, np.ndarray):
            return np.maximum.reduce(x, axis=axis)  # np.max's own reduction, without its Python layers
        return np.max(x, axis=axis)

    # numpy's own functions where the signature is numpy's
    where = staticmethod(np.where)
    sqrt = staticmethod(np.sqrt)
    maximum = staticmethod(np.maximum)
    exp = staticmethod(np.exp)
    matmul = staticmethod(np.matmul)
    broadcast_to = staticmethod(np.broadcast_to)

    @staticmethod
    def zeros(shape, like=None):
        return np.zeros(shape)

    @staticmethod
    def take_clients(arr, sel):
        """arr (R, C, ...) and sel (R, N) -> (R, N, ...)."""
        idx = sel.reshape(sel.shape + (1,) * (arr.ndim - 2))
        return np.take_along_axis(arr, idx, axis=1)

    @staticmethod
    def put_clients(arr, sel, values):
        idx = sel.reshape(sel.shape + (1,) * (arr.ndim - 2))
        np.put_along_axis(arr, idx, values, axis=1)

    @staticmethod
    def copy(x):
        return np.array(x, copy=True)

    @staticmethod
    def sgd_step(w, lr, g):
        """w - lr g (a new array)."""
        return w - lr * g

    @staticmethod
    def is_array(x) -> bool:
        return isinstance(x, np.ndarray)

    @staticmethod
    def run_mask(mask, like=None):
        return np.asarray(mask, dtype=bool)

    @staticmethod
    def finite_and_bounded(x, threshold) -> np.ndarray:
        """(R, ...) -> (R,) bool: every entry of a run finite and |entry| <= threshold (a number, or one per run (R,));
        the maximum is exact in any layout: no reshape, which would copy an array not laid out C-contiguous."""
        axes = 1 if x.ndim == 2 else tuple(range(1, x.ndim))
        if x.ndim > 2 and x.flags.c_contiguous:  # one axis: a view, and numpy's quicker single-axis reduction
            x, axes = x.reshape(x.shape[0], -1), 1
        finite = math.isfinite(threshold) if np.ndim(threshold) == 0 else bool(np.all(np.isfinite(threshold)))
        if finite:  # one reduction: a NaN makes the row's max NaN, an infinity exceeds the threshold
            return np.maximum.reduce(np.abs(x), axis=axes) <= threshold
        return np.all(np.isfinite(x), axis=axes) & (np.abs(x).max(axis=axes) <= threshold)


class TorchOps:
    name = "torch"

    def __init__(self):
        import torch

        self.t = torch

    def asarray(self, x, like=None):
        t = self.t
        if isinstance(x, t.Tensor):
            return x if like is None else x.to(device=like.device, dtype=like.dtype)
        kw = {"dtype": like.dtype, "device": like.device} if like is not None else {"dtype": t.float64}
        return t.as_tensor(np.asarray(x), **kw)

    def norm(self, x, axis=-1, keepdims=False):
        return self.t.linalg.vector_norm(x, dim=axis, keepdim=keepdims)

    def sum(self, x, axis=None, keepdims=False):
        return x.sum() if axis is None else x.sum(dim=axis, keepdim=keepdims)

    def mean(self, x, axis=None, keepdims=False):
        return x.mean() if axis is None else x.mean(dim=axis, keepdim=keepdims)

    def where(self, c, a, b):
        return self.t.where(c, a, b)

    def max(self, x, axis=None):
        return x.amax() if axis is None else x.amax(dim=axis)

    def zeros(self, shape, like=None):
        return self.t.zeros(shape, dtype=like.dtype if like is not None else self.t.float32,
                            device=like.device if like is not None else None)

    def _index(self, arr, sel):
        sel = self.t.as_tensor(np.asarray(sel) if not isinstance(sel, self.t.Tensor) else sel, device=arr.device)
        return sel.reshape(tuple(sel.shape) + (1,) * (arr.ndim - 2)).expand(tuple(sel.shape) + tuple(arr.shape[2:]))

    def take_clients(self, arr, sel):
        return self.t.gather(arr, 1, self._index(arr, sel))

    def put_clients(self, arr, sel, values):
        arr.scatter_(1, self._index(arr, sel), values)

    def sqrt(self, x):
        return self.t.sqrt(x)

    def maximum(self, a, b):
        return self.t.maximum(a, b)

    def exp(self, x):
        return self.t.exp(x)

    def matmul(self, a, b):
        return self.t.matmul(a, b)

    def copy(self, x):
        return x.clone()

    def sgd_step(self, w, lr, g):
        """w - lr g (a new tensor; the same bits as the expression, one temporary fewer)."""
        t = lr * g
        if t.shape != w.shape or t.dtype != w.dtype:
            return w - t
        return self.t.sub(w, t, out=t)

    def is_array(self, x) -> bool:
        return isinstance(x, self.t.Tensor)

    def broadcast_to(self, x, shape):
        return x.expand(shape)

    def run_mask(self, mask, like=None):
        return self.t.as_tensor(np.asarray(mask, dtype=bool), device=like.device if like is not None else None)

    def finite_and_bounded(self, x, threshold: float) -> np.ndarray:
        x = x.reshape(x.shape[0], -1)
        ok = self.t.isfinite(x).all(dim=1) & (x.abs().amax(dim=1) <= threshold)
        return ok.cpu().numpy()


_NUMPY = NumpyOps()
_TORCH: TorchOps | None = None


def ops(x: Any):
    """The ops namespace for ``x``'s array library."""
    global _TORCH
    if isinstance(x, np.ndarray) or np.isscalar(x):
        return _NUMPY
    mod = type(x).__module__
    if mod.startswith("torch"):
        if _TORCH is None:
            _TORCH = TorchOps()
        return _TORCH
    own = getattr(x, "__fedtheory_ops__", None)
    if own is not None:
        return own()
    return _NUMPY
