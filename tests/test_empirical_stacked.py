"""The CPU execution of the batched path (issue 14 item 10): the stacked engine (rows folded into the channels)
against the vmap engine and against each row computed alone, its refusals and the probe that falls back to vmap,
the worker threads, and the fused weight decay / SGD step against the plain expressions, bit for bit."""
import json

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st
from torch import nn
from torch.nn import functional as F

from fedtheory.empirical import device as device_module, models as M
from fedtheory.empirical.config import TrainConfig
from fedtheory.empirical.data import synthetic_images
from fedtheory.empirical.device import choose_engine
from fedtheory.empirical.functional import FlatModel, GradFn, Workers, make_loss
from fedtheory.empirical.objectives import adapter_for
from fedtheory.empirical.runs import MANIFEST
from fedtheory.empirical.stacked import NotStackable, StackedModel
from fedtheory.empirical.trainer import train
from fedtheory.sim.backend import ops
from fedtheory.sim.hyperbolic import HyperbolicRegularizer

MODELS = [("cnn2", {"channels": (3, 4), "hidden": 8}), ("resnet18gn", {"width": 2, "groups": 2}),
          ("vgg11", {"width": 4}), ("linear", {})]


def _rows(model, opts, rows=5, batch=3, shape=(3, 8, 8), classes=4, dtype=torch.float64, seed=0):
    torch.manual_seed(seed)
    m = M.build_model(model, shape, classes, **opts).to(dtype)
    flat = FlatModel(m)
    W = flat.flat() + 0.1 * torch.randn(rows, flat.dim, dtype=dtype)
    X = torch.randn(rows, batch, *shape, dtype=dtype)
    Y = torch.randint(0, classes, (rows, batch))
    return flat, W, X, Y


@pytest.mark.parametrize("model, opts", MODELS, ids=[m for m, _ in MODELS])
@pytest.mark.parametrize("channels_last", [False, True])
def test_stacked_engine_equals_each_row_alone(model, opts, channels_last):
    """Row m's loss and gradient from the folded pass equal those of row m's network on its own minibatch
    (torch.autograd on the plain module), for every built-in model, in float64."""
    flat, W, X, Y = _rows(model, opts)
    g, v = GradFn(flat, engine="stacked", channels_last=channels_last)(W, X, Y)
    loss = make_loss(flat)
    for m in range(W.shape[0]):
        ps = tuple(p.detach().clone().requires_grad_() for p in GradFn(flat)._split(W[m]))
        val = loss(ps, X[m], Y[m])
        ref = torch.cat([gi.reshape(-1) for gi in torch.autograd.grad(val, ps)])
        assert float((g[m] - ref).abs().max()) <= 1e-12 * float(ref.abs().max())
        assert abs(float(v[m] - val.detach())) <= 1e-13 * abs(float(val.detach()))


@pytest.mark.parametrize("model, opts", [MODELS[0], MODELS[3]], ids=["cnn2", "linear"])
def test_stacked_engine_with_objective_terms_equals_vmap(model, opts):
    """FedMRUR's representation term (features of the local and the anchor model) through the stacked engine."""
    flat, W, X, Y = _rows(model, opts)
    ad = adapter_for(HyperbolicRegularizer())
    anchor = W.flip(0)
    params = torch.tensor([[0.5, 2.0, 1.0]], dtype=W.dtype).expand(W.shape[0], 3)
    a = GradFn(flat, engine="stacked", terms=(ad.term,), sizes=(3,))(W, X, Y, anchor, params)
    b = GradFn(flat, engine="vmap", terms=(ad.term,), sizes=(3,))(W, X, Y, anchor, params)
    assert float((a[0] - b[0]).abs().max()) <= 1e-12 * float(b[0].abs().max())
    assert float((a[1] - b[1]).abs().max()) <= 1e-12 * float(b[1].abs().max())


@settings(max_examples=10, deadline=None)
@given(perm_seed=st.integers(0, 2**31 - 1), parts=st.integers(1, 4))
def test_rows_are_independent(perm_seed, parts):
    """Permuting the rows permutes the gradients (no row sees another's parameters or data), whatever the number of
    blocks the rows are cut into."""
    flat, W, X, Y = _rows("cnn2", MODELS[0][1], rows=6)
    gf = GradFn(flat, engine="stacked", parts=parts)
    perm = torch.as_tensor(np.random.default_rng(perm_seed).permutation(6))
    g, v = gf(W, X, Y)
    gp, vp = gf(W[perm], X[perm], Y[perm])
    assert float((gp - g[perm]).abs().max()) <= 1e-12 * float(g.abs().max())
    assert float((vp - v[perm]).abs().max()) <= 1e-13 * float(v.abs().max())


class _Concat(nn.Module):
    """Two convolutions joined along the channels: not foldable (a concatenation interleaves the rows)."""

    def __init__(self, size=8):
        super().__init__()
        self.a, self.b = nn.Conv2d(3, 2, 3, padding=1), nn.Conv2d(3, 2, 3, padding=1)
        self.head = nn.Linear(4 * size * size, 4)

    def forward(self, x, return_features=False):
        z = torch.cat([self.a(x), self.b(x)], dim=1).flatten(1)
        return (self.head(z), z) if return_features else self.head(z)


class _Scaled(nn.Module):
    """Scales its features by 1/sqrt(their number) read from the activation: every call is allowed, but folded the
    activation has M times the features, so the numbers differ; only the probe can tell."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 2, 3, padding=1)
        self.head = nn.Linear(2 * 8 * 8, 4)

    def forward(self, x, return_features=False):
        z = F.relu(self.conv(x)).flatten(1)
        z = z * (z.shape[1] ** -0.5)
        return (self.head(z), z) if return_features else self.head(z)


def test_unsupported_models_are_refused_or_caught_by_the_probe():
    torch.manual_seed(0)
    for module, why in ((_Concat().double(), "vmap instead"), (_Scaled().double(), "differed from vmap")):
        flat = FlatModel(module)
        W = flat.flat() + 0.1 * torch.randn(3, flat.dim, dtype=torch.float64)
        X, Y = torch.randn(3, 2, 3, 8, 8, dtype=torch.float64), torch.randint(0, 4, (3, 2))
        gf = GradFn(flat, engine="stacked")
        assert gf.verify_stacked(W, X, Y) is False
        assert gf.engine == "vmap" and why in gf.engine_reason
        g, _ = gf(W, X, Y)  # the vmap engine now, equal to the rows alone
        ref, _ = GradFn(flat, path="sequential")(W, X, Y)
        assert float((g - ref).abs().max()) <= 1e-12 * float(ref.abs().max())
    with pytest.raises(NotStackable, match="cat"):
        flat = FlatModel(_Concat())
        StackedModel(flat).forward(StackedModel(flat).split(flat.flat().expand(2, -1)), torch.randn(2, 1, 3, 8, 8))


def test_trainer_records_the_engine_and_falls_back(tmp_path, monkeypatch):
    """CPU: the stacked engine, checked on a probe and recorded in the manifest; a model it cannot fold trains with
    vmap, says why, and still equals the sequential reference."""
    data = synthetic_images(48, 12, shape=(3, 8, 8), n_classes=4, random_state=0)
    assert choose_engine(torch.device("cpu"))[0] == "stacked" and choose_engine(torch.device("cuda"))[0] == "vmap"
    base = dict(dataset="synthetic", model="cnn2", model_options={"channels": (3, 4), "hidden": 8}, n_clients=4,
                clients_per_round=2, rounds=1, local_steps=2, batch_size=4, dtype="float64", device="cpu")
    train(TrainConfig(**base), tmp_path / "a", dataset=data)
    ex = json.loads((tmp_path / "a" / MANIFEST).read_text())["execution"]
    assert ex["engine"] == "stacked" and "checked against vmap on a probe" in ex["engine_reason"]
    monkeypatch.setitem(M.MODELS, "concat", lambda shape, n_classes: _Concat(shape[-1]))
    cfg = dict(base, model="concat", model_options={})
    res = train(TrainConfig(**cfg), tmp_path / "b", dataset=data)
    ex = json.loads((tmp_path / "b" / MANIFEST).read_text())["execution"]
    assert ex["engine"] == "vmap" and "refused the model" in ex["engine_reason"] and "cat" in ex["engine_reason"]
    assert ex["path"] == "batched" and "with vmap" in ex["path_reason"]  # 8x8: vmap beat client-by-client calls
    seq = train(TrainConfig(path="sequential", **cfg), dataset=data)
    assert float((res.final_w - seq.final_w).abs().max()) <= 1e-11 * float(seq.final_w.abs().max())
    big = synthetic_images(24, 8, shape=(3, 32, 32), n_classes=4, random_state=0)
    train(TrainConfig(**dict(cfg, local_steps=1)), tmp_path / "c", dataset=big)
    ex = json.loads((tmp_path / "c" / MANIFEST).read_text())["execution"]
    assert ex["path"] == "sequential" and "client by client measured faster" in ex["path_reason"]
    # a model batched on 32x32 images with the stacked engine only (as ResNet-18-GN): refused, it trains sequentially
    monkeypatch.setattr(device_module, "CPU_STACKED_MODELS", ("concat",))
    train(TrainConfig(**dict(cfg, local_steps=1)), tmp_path / "d", dataset=big)
    ex = json.loads((tmp_path / "d" / MANIFEST).read_text())["execution"]
    assert ex["engine"] == "per-row" and ex["path"] == "sequential" and "cannot take the model" in ex["path_reason"]


def test_workers_give_the_same_bits():
    """Blocks spread over two worker threads (each with its own module copy) = the same blocks one after the other;
    the weight decay added while assembling = added afterwards; in float32, where rounding would show."""
    flat, W, X, Y = _rows("cnn2", {"channels": (8, 16), "hidden": 32}, rows=8, batch=10, dtype=torch.float32)
    pool = Workers(flat, 2)
    for _ in range(2):
        a = GradFn(flat, engine="stacked", channels_last=True, parts=2, workers=pool, weight_decay=1e-3)(W, X, Y)
        b = GradFn(flat, engine="stacked", channels_last=True, parts=2)(W, X, Y)
        assert torch.equal(a[0], b[0].add_(W * 1e-3)) and torch.equal(a[1], b[1])
    assert pool.flat() is flat  # the main thread keeps the original module


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), rows=st.integers(1, 4), cols=st.integers(1, 300),
       dtype=st.sampled_from([torch.float32, torch.float64]))
def test_sgd_step_is_the_expression(seed, rows, cols, dtype):
    """The protocol's step w - lr g (sim.backend.ops(w).sgd_step) with one temporary fewer: the same bits."""
    gen = torch.Generator().manual_seed(seed)
    w = torch.randn(rows, 2, cols, generator=gen, dtype=dtype)
    g = torch.randn(rows, 2, cols, generator=gen, dtype=dtype)
    lr = torch.rand(rows, 1, 1, generator=gen, dtype=dtype)
    assert torch.equal(ops(w).sgd_step(w, lr, g), w - lr * g)
    wn, gn, lrn = w.numpy(), g.numpy(), lr.numpy()
    assert np.array_equal(ops(wn).sgd_step(wn, lrn, gn), wn - lrn * gn)
