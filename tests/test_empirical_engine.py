"""Empirical layer, training side: the batched path against the sequential reference, the torch engine against
the sim layer's engine and its naive reference on the same problem, local steps against a plain torch.optim
loop, the representation-penalty hook, and the models."""
import numpy as np
import pytest
import torch

from fedtheory._validation import ParameterError
from fedtheory.empirical import algorithms as A
from fedtheory.empirical.config import TrainConfig
from fedtheory.empirical.data import ImageDataset, load_digits_images, synthetic_images
from fedtheory.empirical.models import build_model, count_parameters
from fedtheory.empirical.sampling import TrainStreams, draw_minibatches
from fedtheory.empirical.trainer import Trainer, train
from fedtheory.sim import Exact, LocalTransform, LogisticProblem, RunConfig, simulate
from fedtheory.sim.engine import Algorithm
from fedtheory.sim.reference import reference_simulate

ALL = {"clients_per_round": None}  # gossip: every client trains every round
ALGOS = [("FedAvg", {}, {}), ("FedInit", {"beta": [0.0, 0.1]}, {}),
         ("FedInit", {"beta": 0.1, "server_rule": "code"}, {}), ("SCAFFOLD", {}, {}), ("FedCM", {"alpha": 0.3}, {}),
         ("FedProx", {"mu": 0.1}, {}), ("FedSAM", {"rho": [0.02, 0.1]}, {}),
         ("MoFedSAM", {"rho": 0.05, "alpha": 0.5}, {}),
         ("FedMRUR", {"rho": 0.05, "gamma": [0.0, 0.5], "sigma": 2.0}, {}),
         ("FedMRUR", {"rho": 0.05, "gamma": 0.5, "sigma": 2.0, "normalized": False, "units": "displacement"}, {}),
         ("FedMRUR+RI", {"rho": 0.05, "gamma": 0.5, "sigma": 2.0, "ri_beta": 0.1}, {}),
         ("SCAFFOLD+RI", {"beta": 0.05}, {}), ("FedCM+RI", {"beta": 0.1}, {}), ("DFedAvg", {"topology": "ring"}, ALL),
         ("DFedAvgM", {"theta": 0.5}, ALL), ("DFedSAM", {"topology": "exponential", "rho": 0.05}, ALL),
         ("D-PSGD", {"topology": "grid"}, ALL), ("OledFL-SAM", {"beta": [0.0, 0.2], "topology": "random_k:2"}, ALL),
         ("DFedAvg+RI", {"beta": 0.1}, ALL), ("FedShift", {"bits": 3, "shift": [1, 0]}, {}),
         ("FedShift", {"bits": 4, "quantizer": "uniform", "base": "FedProx"}, {}),
         ("FedShift", {"bits": 2, "layers": "model", "base": "SCAFFOLD"}, {})]
IDS = [f"{n}-{i}" for i, (n, _, _) in enumerate(ALGOS)]
COMPARE = ["lr", "local_loss", "delta_code", "drift", "update_norm", "d_t", "cos_mean", "cos_abs_mean", "cos_min",
           "cos_max", "unbiased_gap", "train_loss", "train_acc", "test_loss", "test_acc", "gen_gap", "delta"]


@pytest.fixture(scope="module")
def tiny_images():
    return synthetic_images(96, 24, shape=(3, 8, 8), n_classes=4, random_state=0)


def _small(**kw):
    base = dict(dataset="synthetic", model="cnn2", model_options={"channels": (3, 4), "hidden": 8}, n_clients=4,
                clients_per_round=2, rounds=2, local_steps=2, batch_size=5, lr=0.1, lr_decay=0.9, weight_decay=1e-3,
                max_grad_norm=2.0, dtype="float64", seeds=(0,), augment=True, crop_padding=2, partition="dirichlet",
                alpha=0.5)
    base.update(kw)
    return TrainConfig(**base)


@pytest.mark.parametrize("name, hp, over", ALGOS, ids=IDS)
def test_batched_path_matches_sequential_reference(tiny_images, name, hp, over):
    res = {}
    for path in ("batched", "sequential"):
        res[path] = train(_small(algorithm=name, hyperparameters=hp, path=path, **over), dataset=tiny_images)
    a, b = res["batched"], res["sequential"]
    scale = float(a.final_w.abs().max())
    assert float((a.final_w - b.final_w).abs().max()) <= 1e-11 * scale
    cols = COMPARE + [c for c in a.metrics.columns if c == "eq15_residual" or c.startswith(("shift_", "consensus",
                                                                                            "normalized."))]
    x, y = a.metrics[cols].to_numpy(float), b.metrics[cols].to_numpy(float)
    assert np.array_equal(np.isnan(x), np.isnan(y))
    assert np.nanmax(np.abs(x - y) / (1 + np.abs(y))) <= 1e-10


def test_resnet_and_vgg_batched_match_sequential(tiny_images):
    for model, opts in (("resnet18gn", {"width": 2, "groups": 2}), ("vgg11", {"width": 4})):
        out = [train(_small(model=model, model_options=opts, algorithm="FedSAM", rounds=1, path=p), dataset=tiny_images)
               for p in ("batched", "sequential")]
        assert float((out[0].final_w - out[1].final_w).abs().max()) <= 1e-11 * float(out[0].final_w.abs().max())


def test_client_chunks_change_nothing(tiny_images):
    a = train(_small(algorithm="FedInit", hyperparameters={"beta": 0.1}), dataset=tiny_images)
    b = train(_small(algorithm="FedInit", hyperparameters={"beta": 0.1}, client_chunk=2), dataset=tiny_images)
    assert float((a.final_w - b.final_w).abs().max()) <= 1e-12 * float(a.final_w.abs().max())


# ------------------------------------------------------------------------------------ against the sim layer


@pytest.fixture(scope="module")
def digits_features():
    """600 digits as 65 'pixels' (64 values / 16 and a constant 1), no normalisation: the sim layer's
    digits_logistic features, so a bias-free linear model is its multinomial logistic regression."""
    d = load_digits_images()
    X = np.hstack([d.x_train.reshape(len(d.y_train), 64), np.ones((len(d.y_train), 1), np.float32)])[:600]
    Xt = np.hstack([d.x_test.reshape(len(d.y_test), 64), np.ones((len(d.y_test), 1), np.float32)])
    return ImageDataset("digits-features", X[:, :, None, None], d.y_train[:600], Xt[:, :, None, None], d.y_test, 10,
                        mean=np.zeros(65), std=np.ones(65))


@pytest.mark.parametrize("name, hp, over", ALGOS, ids=IDS)
def test_torch_engine_matches_sim_engine_and_reference(digits_features, name, hp, over):
    """Full-batch local steps (batch = client size) on a linear model are the sim layer's Exact oracle on
    LogisticProblem with reg = weight_decay: the two engines, and the sim's naive per-client reference, must give
    the same models and measures (float64)."""
    wd, T, K, lr, decay = 1e-2, 4, 3, 0.5, 0.95
    cfg = TrainConfig(**{**dict(dataset="synthetic", model="linear", model_options={"bias": False}, algorithm=name,
                                hyperparameters=hp, seeds=(3, 4), n_clients=4, clients_per_round=3, partition="iid",
                                rounds=T, local_steps=K, batch_size=150, lr=lr, lr_decay=decay, weight_decay=wd,
                                augment=False, dtype="float64"), **over})
    tr = Trainer(cfg, dataset=digits_features)
    assert list(tr.sizes) == [150] * 4
    R, f, k = tr.R, 65, 10
    to_sim = lambda w: w.reshape(-1, k, f).transpose(1, 2).reshape(-1, f * k).cpu().numpy()
    w0 = to_sim(tr.initial_weights())
    res = tr.run()
    X, y = digits_features.x_train[:, :, 0, 0].astype(float), digits_features.y_train
    prob = LogisticProblem([X[p] for p in tr.parts], [y[p] for p in tr.parts], 10, reg=wd)
    alg = A.build_algorithm(name, cfg.algorithm_arguments(), tr.context)
    seeds = [r["seed"] for r in tr.run_specs]
    rc = RunConfig(rounds=T, local_steps=K, lr=lr, clients_per_round=cfg.clients_per_round, oracle=Exact(),
                   lr_schedule="exponential", lr_decay=decay)
    plug = {c: c.split(".", 1)[1] if c.startswith("normalized.") else c for c in res.metrics.columns
            if c == "eq15_residual" or c.startswith(("shift_", "consensus", "normalized."))}
    meas = ("loss", "delta", "delta_code", "drift", "unbiased_gap") + tuple(plug.values())
    sim = simulate(prob, alg, rc, seeds, w0=w0, measures=meas)
    mine = to_sim(res.final_w)
    scale = np.abs(sim.final_w).max()
    assert np.abs(mine - sim.final_w).max() <= 1e-10 * scale
    # the sim layer's naive per-client reference (written from the papers' pseudo-code) for the server algorithms
    if over.get("clients_per_round", 3) is not None and name != "FedShift":
        ref_final, _ = reference_simulate(prob, A.build_algorithm(name, cfg.algorithm_arguments()), rc, seeds, w0=w0)
    else:
        ref_final = None
    if ref_final is not None:
        assert np.abs(mine - ref_final).max() <= 1e-9 * scale
    m = res.metrics.sort_values(["round", "run"])
    get = lambda c: m[c].to_numpy(float).reshape(T + 1, R)
    assert np.allclose(get("delta"), sim["delta"], rtol=1e-9, atol=1e-12)
    for c in ("delta_code", "drift", "unbiased_gap") + tuple(plug):
        s_name = plug.get(c, c)
        assert np.allclose(get(c)[1:], sim[s_name], rtol=1e-9, atol=1e-11, equal_nan=True), c
    # sim's f(w) includes (reg/2)||w||^2; the logged train loss is the clients' cross-entropy alone
    reg = 0.5 * wd * np.sum(mine**2, axis=1)
    assert np.allclose(get("train_loss")[-1], sim["loss"][-1] - reg, rtol=1e-9)


def test_local_steps_equal_a_plain_torch_optim_loop(tiny_images):
    """One client, one round of FedAvg: K steps of torch.optim.SGD(weight_decay) with clip_grad_norm_ on the
    same minibatches give the trainer's model (so the functional path and the step semantics are standard)."""
    cfg = _small(n_clients=1, clients_per_round=1, rounds=1, local_steps=4, batch_size=6, seeds=(5,), augment=False,
                 algorithm="FedAvg", lr_decay=1.0)
    tr = Trainer(cfg, dataset=tiny_images)
    w0 = tr.initial_weights()[0]
    res = tr.run()
    streams = TrainStreams([5])
    streams.model_seeds()
    pos = draw_minibatches(streams.generators("batch"), tr.sizes[None, :1], 4, 6)[0, :, 0]
    model = build_model("cnn2", (3, 8, 8), 4, channels=(3, 4), hidden=8).to(torch.float64)
    torch.nn.utils.vector_to_parameters(w0.clone(), model.parameters())
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    data = tiny_images
    for k in range(4):
        idx = tr.parts[0][pos[k]]
        x = (torch.as_tensor(data.x_train[idx], dtype=torch.float64) / 255 - tr.mean) / tr.std
        loss = torch.nn.functional.cross_entropy(model(x), torch.as_tensor(data.y_train[idx]))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
        opt.step()
    ref = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    assert float((res.final_w[0] - ref).abs().max()) <= 1e-12 * float(ref.abs().max())


# ------------------------------------------------------------------------------------ representation hook


def test_objective_terms_need_a_network_form(tiny_images, monkeypatch):
    """FedMRUR's regulariser enters the loss through its network form: gamma = 0 is MoFedSAM exactly, gamma > 0
    changes the local steps; an objective plug-in without a network form is refused, not trained without its term."""
    kw = dict(local_steps=3, hyperparameters={"rho": 0.05, "gamma": [0.0, 0.5], "sigma": 2.0, "normalized": False})
    with_term = train(_small(algorithm="FedMRUR", **kw), dataset=tiny_images).final_w
    plain = train(_small(algorithm="MoFedSAM", local_steps=3, hyperparameters={"rho": 0.05}),
                  dataset=tiny_images).final_w
    assert float((with_term[:1] - plain).abs().max()) <= 1e-12 * float(plain.abs().max())
    assert float((with_term[1:] - plain).abs().max()) > 1e-6

    class Term(LocalTransform):
        name, objective = "term", True

        def direction(self, rs, g, w, grad_at):
            return g

    A.register_algorithm("WithTerm", lambda: Algorithm("WithTerm", local=(Term(),)))
    try:
        with pytest.raises(ParameterError, match="network form"):
            Trainer(_small(algorithm="WithTerm"), dataset=tiny_images)
    finally:
        A.unregister_algorithm("WithTerm")


# ------------------------------------------------------------------------------------ registry and models


def test_registry_names_and_ri():
    names = set(A.algorithms())
    assert {"FedAvg", "FedInit", "SCAFFOLD", "FedCM", "FedProx", "FedSAM", "MoFedSAM", "DFedAvg", "DFedSAM",
            "OledFL-SGD", "OledFL-SAM", "FedShift"} <= names
    assert "n_clients" not in A.hyperparameter_names("DFedAvg")  # supplied by the trainer, not a hyperparameter
    with pytest.raises(ParameterError, match="context"):
        A.build_algorithm("DFedAvg")
    with pytest.raises(ParameterError, match="topology"):
        A.build_algorithm("DFedAvg", {"topology": "star"}, {"n_clients": 4})
    with pytest.raises(ParameterError, match="base"):
        A.build_algorithm("FedShift", {"base": "FedAvg+RI"},
                          {"n_clients": 4, "layer_sizes": [3], "client_groups": None})
    assert "ri_beta" in A.hyperparameter_names("FedMRUR+RI") and "beta" in A.hyperparameter_names("FedMRUR+RI")
    assert A.build_algorithm("FedMRUR+RI", {"ri_beta": 0.1}).init.beta == 0.1
    alg = A.build_algorithm("scaffold+RI", {"beta": 0.1})
    assert alg.name == "SCAFFOLD+RI" and type(alg.init).__name__ == "RelaxedInit"
    with pytest.raises(ParameterError, match="beta"):
        A.build_algorithm("FedCM+RI", {})
    with pytest.raises(ParameterError, match="without relaxed"):
        A.build_algorithm("FedInit+RI", {"beta": 0.1, "ri_beta": 0.1})
    with pytest.raises(ParameterError, match="one of"):
        A.build_algorithm("FedNope")
    with pytest.raises(ParameterError, match="rho"):
        A.build_algorithm("FedAvg", {"rho": 0.1})
    with pytest.raises(ParameterError, match="hyperparameter 'beta'"):
        A.build_algorithm("FedInit", {})


def test_config_validation_and_sweeps():
    cfg = TrainConfig(algorithm="FedInit", hyperparameters={"beta": [0, 0.1, 0.2], "server_rule": "code"}, seeds=(1, 2))
    runs = cfg.validated().runs()
    assert len(runs) == 6 and runs[3] == {"run": 3, "seed": 2, "hyperparameters": {"beta": 0.1, "server_rule": "code"}}
    args = cfg.algorithm_arguments()
    assert list(args["beta"]) == [0, 0, 0.1, 0.1, 0.2, 0.2] and args["server_rule"] == "code"
    for bad, match in ((dict(lr=-1), "lr"), (dict(seeds=(1, 1)), "distinct"), (dict(rounds=0), "rounds"),
                       (dict(hyperparameters={"server_rule": ["a", "b"]}), "numbers when swept"),
                       (dict(model="resnet50"), "model"), (dict(partition="shards"), "partition"),
                       (dict(clients_per_round=11), "clients_per_round"), (dict(path="fast"), "path")):
        with pytest.raises(ParameterError, match=match):
            TrainConfig(**bad).validated()


@pytest.mark.parametrize("name, shape, n_params", [("resnet18gn", (3, 32, 32), 11_173_962),
                                                   ("vgg11", (3, 32, 32), 9_750_922), ("cnn2", (3, 32, 32), 2_156_490)])
def test_model_sizes(name, shape, n_params):
    """ResNet-18 (CIFAR stem) and VGG-11 (512-512-10 head) have the standard parameter counts; GroupNorm has as
    many parameters as BatchNorm. CNN2: 5x5 convs 3->32->64, fc 64*8*8->512->10."""
    m = build_model(name, shape, 10)
    assert count_parameters(m) == n_params
    logits, z = m(torch.zeros(2, *shape), return_features=True)
    assert logits.shape == (2, 10) and z.ndim == 2


@pytest.mark.parametrize("name", ["resnet18gn", "vgg11", "cnn2", "linear"])
def test_models_accept_small_images(name):
    m = build_model(name, (1, 8, 8), 10, **({"width": 8} if name in ("resnet18gn", "vgg11") else {}))
    assert m(torch.zeros(3, 1, 8, 8)).shape == (3, 10)
    assert not list(m.buffers())


def test_model_options_are_validated():
    with pytest.raises(ParameterError, match="model.width"):
        build_model("resnet18gn", (3, 32, 32), 10, width=0)
    with pytest.raises(ParameterError, match="options"):
        build_model("cnn2", (3, 32, 32), 10, depth=3)
    with pytest.raises(ParameterError, match="valid for resnet18gn"):
        build_model("resnet18gn", (3, 32, 32), 10, width=6, groups=4)


def test_pairwise_cosines_stay_in_range_where_float32_did_not():
    """A resumed ResNet-18 run once stopped in round 3: cos_max = 1.000194787979126, a cosine of ~1.1e7 float32
    coordinates over its range. The cosines now come from a float64 Gram matrix (exact float32 products, slices of
    the coordinates): within 1e-9 of the exact value, so of [-1, 1], whatever the dtype."""
    import torch

    from fedtheory.empirical.trainer import pairwise_cosines

    torch.manual_seed(0)
    d = 4_000_000
    base = torch.randn(d) * torch.logspace(-3, 3, d)[torch.randperm(d)]  # heavy-tailed scales, as a network's
    U = torch.stack([base, base * (1 + 1e-7), base + 1e-6 * torch.randn(d), -base])[None].float()
    exact = torch.nn.functional.cosine_similarity(U.double()[0, :, None, :], U.double()[0, None, :, :], dim=-1)
    off = ~torch.eye(4, dtype=torch.bool)
    Un = U / torch.linalg.vector_norm(U, dim=-1)[..., None]
    float32_error = float(((Un @ Un.transpose(1, 2))[0][off].double() - exact[off]).abs().max())
    assert float32_error > 1e-6  # the old computation, in float32: off by more than 1e-6 on this instance
    c = pairwise_cosines(U)
    assert torch.allclose(c[0], exact[off], rtol=0, atol=1e-9)
    assert float(c.abs().max()) <= 1 + 1e-9
    zero = torch.zeros(1, 2, 5)
    assert pairwise_cosines(zero).tolist() == [[0.0, 0.0]]
