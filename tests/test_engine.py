"""The vectorized engine against the naive per-client reference, determinism, divergence, bad input."""
import dataclasses
import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st

from fedtheory._validation import ParameterError
from fedtheory.sim import (
    AdditiveNoise,
    Exact,
    Minibatch,
    RunConfig,
    fedavg,
    fedcm,
    fedinit,
    fedprox,
    fedsam,
    heterogeneous_least_squares,
    pl_nonconvex,
    scaffold,
    simulate,
    synthetic_logistic,
)
from fedtheory.sim.reference import reference_simulate
from fedtheory.sim.rules import LocalTransform

ALGORITHMS = {
    "fedavg": lambda: fedavg(),
    "fedavg_code": lambda: fedavg("code", server_lr=0.7),
    "fedinit": lambda: fedinit(0.2),
    "fedinit_code": lambda: fedinit(0.2, "code"),
    "scaffold": lambda: scaffold(),
    "scaffold_ri": lambda: scaffold().with_relaxed_init(0.1),
    "fedcm": lambda: fedcm(0.4),
    "fedcm_ri": lambda: fedcm(0.4).with_relaxed_init(0.1),
    "fedprox": lambda: fedprox(0.3),
    "fedsam": lambda: fedsam(0.05),
}
ORACLES = {"exact": lambda: Exact(), "additive": lambda: AdditiveNoise(0.2), "minibatch": lambda: Minibatch(3)}


def _problem(kind, seed):
    if kind == "ls":
        return heterogeneous_least_squares(6, 4, 12, random_state=seed)
    if kind == "pl_ls":
        return heterogeneous_least_squares(6, 5, 12, rank=3, random_state=seed)
    if kind == "pl":
        return pl_nonconvex(6, 4, 12, random_state=seed)
    return synthetic_logistic(6, 3, 3, 12, random_state=seed)


@given(problem=st.sampled_from(["ls", "pl_ls", "pl", "logistic"]), alg=st.sampled_from(sorted(ALGORITHMS)),
       oracle=st.sampled_from(sorted(ORACLES)), N=st.sampled_from([None, 1, 3]), seed=st.integers(0, 10_000),
       schedule=st.sampled_from(["constant", "inverse", "exponential"]))
def test_engine_matches_naive_reference(problem, alg, oracle, N, seed, schedule):
    p = _problem(problem, seed)
    cfg = RunConfig(rounds=4, local_steps=3, lr=0.05, clients_per_round=N, oracle=ORACLES[oracle](),
                    lr_schedule=schedule, lr_decay=0.9)
    seeds = [seed, seed + 1, seed]
    tr = simulate(p, ALGORITHMS[alg](), cfg, seeds, measures=())
    ref, _ = reference_simulate(p, ALGORITHMS[alg](), cfg, seeds)
    np.testing.assert_allclose(tr.final_w, ref, rtol=0, atol=1e-12)


def test_engine_matches_reference_per_run_hyperparameters():
    p = heterogeneous_least_squares(6, 4, 12, random_state=3)
    betas = np.array([0.0, 0.1, 0.3, 0.5])
    lrs = np.array([0.01, 0.02, 0.05, 0.08])
    cfg = RunConfig(rounds=5, local_steps=2, lr=lrs, clients_per_round=4, oracle=AdditiveNoise(0.1))
    tr = simulate(p, fedinit(betas), cfg, [0, 1, 2, 3], measures=())
    for r in range(4):
        ref, _ = reference_simulate(p, fedinit(betas[r]), dataclasses.replace(cfg, lr=lrs[r]), [r])
        np.testing.assert_allclose(tr.final_w[r], ref[0], atol=1e-12)


def test_same_seed_same_bits_and_runs_independent_of_batch():
    p = heterogeneous_least_squares(8, 5, 20, random_state=0)
    cfg = RunConfig(rounds=6, local_steps=3, lr=0.05, clients_per_round=3, oracle=Minibatch(2))
    a = simulate(p, fedinit(0.1), cfg, [5, 6, 7, 8])
    b = simulate(p, fedinit(0.1), cfg, [5, 6, 7, 8])
    alone = simulate(p, fedinit(0.1), cfg, [7])
    assert np.array_equal(a.final_w, b.final_w)
    for k in a.measures:
        assert np.array_equal(a[k], b[k], equal_nan=True)
    assert np.array_equal(a.final_w[2], alone.final_w[0])  # run 2 of the batch == the same seed alone


def test_run_in_a_batch_equals_it_alone_up_to_rounding_on_the_shared_path():
    """Full participation on one data variant uses one BLAS product for all runs: the same draws, the same
    arithmetic, possibly summed in another order."""
    p = heterogeneous_least_squares(8, 6, 20, random_state=0)
    cfg = RunConfig(rounds=20, local_steps=3, lr=0.05, oracle=AdditiveNoise(0.1))
    batch = simulate(p, fedinit(0.1), cfg, list(range(16)))
    alone = simulate(p, fedinit(0.1), cfg, [5])
    np.testing.assert_allclose(batch.final_w[5], alone.final_w[0], rtol=1e-13, atol=1e-15)


def test_coupled_runs_share_streams():
    p = heterogeneous_least_squares(5, 4, 10, random_state=1)
    pn = p.neighbours([(0, 0)], random_state=2)
    cfg = RunConfig(rounds=3, local_steps=2, lr=0.05, clients_per_round=2, oracle=Minibatch(1))
    same = simulate(pn, fedavg(), cfg, [4, 4], variants=[0, 0])
    assert np.array_equal(same.final_w[0], same.final_w[1])
    # identical until the replaced sample is used: full gradients use it at once
    diff = simulate(pn, fedavg(), dataclasses.replace(cfg, oracle=Exact(), clients_per_round=None), [4, 4],
                    variants=[0, 1])
    assert not np.array_equal(diff.final_w[0], diff.final_w[1])


def test_divergence_is_reported_not_raised():
    p = heterogeneous_least_squares(5, 4, 10, random_state=1)
    L = p.constants["L"].value
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tr = simulate(p, fedavg(), RunConfig(rounds=200, local_steps=5, lr=np.array([0.01, 5.0 / L])), [0, 1],
                      measures=("opt_error", "delta"))
    assert tr.diverged_at[0] == -1 and tr.diverged_at[1] >= 0
    assert "w" in tr.diverged_quantity[1]
    assert np.all(np.isfinite(tr["opt_error"][:, 0]))
    assert np.isnan(tr["opt_error"][-1, 1]) and np.isnan(tr.final_w[1]).all()
    assert np.isfinite(tr["opt_error"][tr.diverged_at[1], 1])  # the round before it diverged was recorded


def test_measures_against_direct_computation():
    p = heterogeneous_least_squares(4, 3, 10, random_state=2)
    w0 = p.initial_point(1)
    tr = simulate(p, fedinit(0.3), RunConfig(rounds=3, local_steps=2, lr=0.1), [0], w0=w0, keep_iterates=True,
                  measures=("opt_error", "grad_norm2", "delta", "V2", "population", "loss"))
    W = tr.iterates[:, 0]
    f_star = p.constants["f_star"].value
    np.testing.assert_allclose(tr["opt_error"][:, 0], p.loss(W) - f_star, atol=1e-14)
    np.testing.assert_allclose(tr["grad_norm2"][:, 0], np.sum(p.grad(W) ** 2, axis=1), atol=1e-13)
    np.testing.assert_allclose(tr["V2"][:, 0], np.sum(np.diff(W, axis=0) ** 2, axis=1), atol=1e-14)
    np.testing.assert_allclose(tr["population"][:, 0], p.population_loss(W), atol=1e-14)
    assert tr["delta"][0, 0] == 0.0  # every client's last model is w^0 before round 0


@pytest.mark.parametrize("kwargs, name", [
    ({"rounds": 0}, "rounds"), ({"local_steps": 0}, "local_steps"), ({"lr": -0.1}, "lr"), ({"lr": float("nan")}, "lr"),
    ({"clients_per_round": 11}, "clients_per_round"), ({"lr_schedule": "cosine"}, "lr_schedule"),
    ({"lr": [0.1, 0.2]}, "lr"),
])
def test_bad_run_config_names_the_parameter(kwargs, name):
    p = heterogeneous_least_squares(10, 3, 5, random_state=0)
    cfg = dict(rounds=2, local_steps=2, lr=0.1)
    cfg.update(kwargs)
    with pytest.raises(ParameterError) as e:
        simulate(p, fedavg(), RunConfig(**cfg), [0, 1, 2])
    assert str(e.value).startswith(f"{name}=")


def test_bad_plugin_parameters():
    p = heterogeneous_least_squares(4, 3, 5, random_state=0)
    cfg = RunConfig(rounds=2, local_steps=2, lr=0.1)
    with pytest.raises(ParameterError, match="beta"):
        simulate(p, fedinit(float("inf")), cfg, [0])
    with pytest.raises(ParameterError, match="alpha"):
        simulate(p, fedcm(1.5), cfg, [0])
    with pytest.raises(ParameterError, match="server_rule"):
        fedavg("median")
    with pytest.raises(ParameterError, match="seeds"):
        simulate(p, fedavg(), cfg, [-1])
    with pytest.raises(ParameterError, match="measures"):
        simulate(p, fedavg(), cfg, [0], measures=("accuracy",))
    with pytest.raises(ParameterError, match="w0"):
        simulate(p, fedavg(), cfg, [0], w0=np.zeros(7))
    with pytest.raises(ParameterError, match="variants"):
        simulate(p, fedavg(), cfg, [0], variants=[1])


def test_trace_record_is_json_and_complete():
    import json

    p = heterogeneous_least_squares(4, 3, 5, random_state=0)
    tr = simulate(p, fedinit(np.array([0.0, 0.1])), RunConfig(rounds=2, local_steps=2, lr=np.array([0.1, 0.2]),
                                                             oracle=Minibatch(2)), [3, 4])
    rec = json.loads(json.dumps(tr.record()))
    assert rec["seeds"] == [3, 4] and rec["config"]["lr"] == [0.1, 0.2]
    assert rec["config"]["oracle"] == {"name": "minibatch", "batch_size": 2}
    assert "RelaxedInit" in rec["algorithm"]["init"] and "numpy" in rec["versions"]
    df = tr.to_frame()
    assert set(df["seed"]) == {3, 4} and "relaxed.beta" in df.columns


def test_dist2_opt_is_the_squared_distance_of_the_kept_iterates():
    p = heterogeneous_least_squares(4, 3, 10, random_state=2)
    tr = simulate(p, fedavg(), RunConfig(rounds=5, local_steps=2, lr=0.05), [0, 1], w0=p.initial_point(0),
                  measures=("dist2_opt",), keep_iterates=True)
    expect = np.sum((tr.iterates - p.constants["w_star"].value) ** 2, axis=-1)
    np.testing.assert_array_equal(tr["dist2_opt"], expect)


@given(seeds=st.lists(st.integers(0, 2**32), min_size=1, max_size=4), rounds=st.integers(1, 40),
       shape=st.sampled_from([(3,), (2, 4, 3), (1,), (5, 2, 1)]), ahead=st.sampled_from([0, 1, 7, 100]),
       switch_at=st.integers(0, 45))
def test_draw_ahead_gives_the_streams_of_round_by_round_draws(seeds, rounds, shape, ahead, switch_at):
    """issue 26: rounds of draws taken in one call per run are the numbers round-by-round calls give, also when a
    concern is later drawn in another shape or its generators are used directly (they are put back)."""
    from fedtheory.sim.rng import RunStreams

    a, b = RunStreams(seeds, rounds_ahead=ahead), RunStreams(seeds)
    for t in range(rounds):
        if t == switch_at:  # another kind of draw on the same concerns, then direct use of a generator
            assert np.array_equal(a.uniform("noise", (2,)), b.uniform("noise", (2,)))
            assert np.array_equal(a.generators("batch")[0].random(3), b.generators("batch")[0].random(3))
        assert np.array_equal(a.normal("noise", shape), b.normal("noise", shape))
        assert np.array_equal(a.uniform("batch", shape), b.uniform("batch", shape))
        assert np.array_equal(a.choose_clients(6, 3), b.choose_clients(6, 3))
    for c in ("noise", "batch", "sampling"):
        assert all(np.array_equal(x.random(2), y.random(2)) for x, y in zip(a.generators(c), b.generators(c)))


@given(seeds=st.lists(st.integers(0, 2), min_size=2, max_size=6), rounds=st.integers(1, 30),
       shape=st.sampled_from([(3,), (2, 4, 3)]), ahead=st.sampled_from([7, 100]), switch_at=st.integers(0, 35),
       advance=st.integers(0, 2))
def test_draw_ahead_with_repeated_seeds_gives_each_runs_own_draws(seeds, rounds, shape, ahead, switch_at, advance):
    """issue 26 (speed2): runs in the same generator state (a sweep's paired seeds) draw a block once and copy it;
    every run's numbers, and its generators afterwards, are what its own generator drawing call by call gives, also
    when one of the paired runs' generators was advanced first (then it is not shared)."""
    from fedtheory.sim.rng import RunStreams

    a = RunStreams(seeds, rounds_ahead=ahead)
    a.generators("init")[0].random(advance)  # a concern drawn directly on one run: its pairs now differ
    fresh = [RunStreams([s]) for s in seeds]  # each run alone, drawn call by call
    fresh[0].generators("init")[0].random(advance)
    for t in range(rounds):
        if t == switch_at:
            got = a.generators("batch")[-1].random(3)
            assert np.array_equal(got, fresh[-1].generators("batch")[0].random(3))
        assert np.array_equal(a.normal("noise", shape), np.concatenate([f.normal("noise", shape) for f in fresh]))
        assert np.array_equal(a.uniform("batch", shape), np.concatenate([f.uniform("batch", shape) for f in fresh]))
        assert np.array_equal(a.uniform("init", shape), np.concatenate([f.uniform("init", shape) for f in fresh]))
        assert np.array_equal(a.choose_clients(6, 3), np.concatenate([f.choose_clients(6, 3) for f in fresh]))
    for c in ("noise", "batch", "sampling", "init"):
        assert all(np.array_equal(x.random(2), f.generators(c)[0].random(2)) for x, f in zip(a.generators(c), fresh))


def test_the_oracle_gathers_a_view_only_when_the_participants_change():
    """issue 26: one oracle per simulate call; the participants' data are gathered once under full participation
    and again only in rounds whose participants differ."""
    p = heterogeneous_least_squares(6, 4, 12, random_state=0)
    p.initial_point(0)  # the constants (computed once, through views of every client) before counting
    calls = []
    view = p.view
    p.view = lambda sel, variant: calls.append(np.array(sel)) or view(sel, variant)
    cfg = RunConfig(rounds=7, local_steps=2, lr=0.05, oracle=AdditiveNoise(0.1))
    full = simulate(p, fedinit(0.1), cfg, [0, 1], measures=())
    assert len(calls) == 1
    calls.clear()
    part = simulate(p, fedinit(0.1), dataclasses.replace(cfg, clients_per_round=6), [0, 1], measures=())
    assert len(calls) == 1 and np.array_equal(part.final_w, full.final_w)  # N = C: every client, no draw
    calls.clear()
    simulate(p, fedinit(0.1), dataclasses.replace(cfg, clients_per_round=2), [0, 1], measures=())
    assert 1 <= len(calls) <= 7 and all(not np.array_equal(a, b) for a, b in zip(calls, calls[1:]))


def test_measuring_every_round_gathers_every_client_once():
    """issue 26: f(w^t) and grad f(w^t) measured every round use one view of every client, kept between rounds."""
    p = heterogeneous_least_squares(6, 4, 12, random_state=0)
    p.initial_point(0)
    calls = []
    view = p.view
    p.view = lambda sel, variant: calls.append(np.array(sel)) or view(sel, variant)
    cfg = RunConfig(rounds=9, local_steps=2, lr=0.05, clients_per_round=3, oracle=AdditiveNoise(0.1))
    tr = simulate(p, fedinit(0.1), cfg, [0, 1], measures=("opt_error", "grad_norm2", "client_grad_norm2"))
    every = [c for c in calls if c.shape == (2, 6)]
    assert len(every) == 1 and len(calls) - len(every) <= 9
    ref = simulate(heterogeneous_least_squares(6, 4, 12, random_state=0), fedinit(0.1), cfg, [0, 1],
                   measures=("opt_error", "grad_norm2", "client_grad_norm2"))
    for m in tr.measures:
        assert np.array_equal(tr[m], ref[m])



def test_full_participation_is_one_read_only_selection_and_gathers_a_copy():
    """issue 26: every client in order is one array per shape, recognized by identity (no per-round indexing);
    what a plug-in gathers under it is a copy, as take_along_axis gives."""
    from fedtheory.sim.rules import RoundState, Server, State, every_client

    sel = Server().participants(None, 3, 4, 4)
    assert sel is every_client(3, 4) and not sel.flags.writeable
    assert np.array_equal(sel, np.broadcast_to(np.arange(4), (3, 4)))
    arr = np.random.default_rng(0).standard_normal((3, 4, 2))
    rs = RoundState(t=0, K=1, sel=sel, anchor=None, lr=None, view=None, state=State(w=None, clients={"x": arr}))
    got = rs.gather("x")
    assert np.array_equal(got, arr) and not np.shares_memory(got, arr)


def test_the_step_measures_share_the_oracles_exact_gradient():
    """issue 26: measuring local_grad_sum2 takes the exact gradient at each local iterate once: the oracle's own."""
    p = heterogeneous_least_squares(6, 4, 12, random_state=0)
    w0 = p.initial_point(0)
    count = [0]
    view = p.view

    def counting(sel, variant):
        v = view(sel, variant)
        grad = v.grad
        v.grad = lambda w: count.__setitem__(0, count[0] + 1) or grad(w)
        return v

    p.view = counting
    for oracle in (AdditiveNoise(0.1), Exact()):
        count[0] = 0
        cfg = RunConfig(rounds=5, local_steps=3, lr=0.05, oracle=oracle)
        tr = simulate(p, fedavg(), cfg, [0, 1], w0=w0, measures=("local_grad_sum2",), keep_iterates=True)
        assert count[0] == 5 * 3
    for t in range(5):  # Exact: the sum over clients and local steps of grad f_i(w_{i,k}^t), directly
        w = np.broadcast_to(tr.iterates[t][:, None, :], (2, 6, 4)).copy()
        total = np.zeros((2, 4))
        for _ in range(3):
            g = p.client_grads(w.reshape(-1, 4)[:, :], np.zeros(12, int)).reshape(2, 6, 6, 4)[:, np.arange(6),
                                                                                               np.arange(6)]
            total += g.sum(axis=1)
            w = w - 0.05 * g
        np.testing.assert_allclose(tr["local_grad_sum2"][t], np.sum(total**2, axis=1), rtol=1e-12)


@given(seed=st.integers(0, 2**32), n=st.integers(1, 40), rounds=st.integers(1, 30), prior=st.integers(0, 3),
       data=st.data())
def test_choice_rounds_is_numpys_choice_round_by_round(seed, n, rounds, prior, data):
    """issue 26: the participants of many rounds from one call for the generator's raw output are numpy's
    Generator.choice(n, k, replace=False) round by round, and leave the generator in the same state (a held 32-bit
    half included), whatever was drawn before."""
    from fedtheory.sim.rng import choice_rounds

    k = data.draw(st.integers(1, n))
    a, b = np.random.default_rng(seed), np.random.default_rng(seed)
    for g in (a, b):  # draws that leave a 32-bit half held, or not
        g.choice(7, min(prior + 1, 7), replace=False)
        if prior % 2:
            g.random()
    x = choice_rounds(a, n, k, rounds)
    y = np.stack([b.choice(n, k, replace=False) for _ in range(rounds)])
    assert np.array_equal(x, y) and a.bit_generator.state == b.bit_generator.state


def test_choice_rounds_draws_call_by_call_after_a_rejection():
    """Seed 46 rejects one of Lemire's bounded draws in round 223 of choice(10000, 7) (p ~ 1e-6 per draw): the block
    is drawn call by call instead, with the same numbers."""
    from fedtheory.sim.rng import choice_rounds

    a, b = np.random.default_rng(46), np.random.default_rng(46)
    x = choice_rounds(a, 10_000, 7, 300)
    y = np.stack([b.choice(10_000, 7, replace=False) for _ in range(300)])
    assert np.array_equal(x, y) and a.bit_generator.state == b.bit_generator.state


@given(seed=st.integers(0, 1000), shape=st.sampled_from([(5,), (3, 4), (2, 3, 7), (4, 1, 2)]), special=st.booleans())
def test_numpy_ops_norm_and_max_are_numpys_bit_for_bit(seed, shape, special):
    """issue 26 (speed2): NumpyOps.norm / max along one axis take numpy's own reductions without their Python layers:
    the same numbers as np.linalg.norm / np.max (NaN and infinities included), on every axis, with keepdims."""
    from fedtheory.sim.backend import NumpyOps

    x = np.random.default_rng(seed).standard_normal(shape) * 1e3
    if special:
        x.flat[0], x.flat[-1] = np.nan, np.inf
    for axis in range(-len(shape), len(shape)):
        for keep in (False, True):
            np.testing.assert_array_equal(NumpyOps.norm(x, axis=axis, keepdims=keep),
                                          np.linalg.norm(x, axis=axis, keepdims=keep), strict=True)
        np.testing.assert_array_equal(NumpyOps.max(x, axis=axis), np.max(x, axis=axis), strict=True)


def test_select_reads_one_setting_of_a_batch_as_if_simulated_alone():
    """Several settings in one batch (per-run step and beta, paired seeds), read with Trace.select: each setting's
    runs are those of a batch of its own (the check of FedInit's bounds simulates its admissible and practice
    settings this way)."""
    p = heterogeneous_least_squares(8, 6, 20, random_state=0)
    seeds = [3, 4, 5]
    settings = [(0.0, 0.05), (0.1, 0.05), (0.1, 0.2)]  # (beta, lr)
    betas = np.repeat([b for b, _ in settings], len(seeds))
    lrs = np.repeat([lr for _, lr in settings], len(seeds))
    cfg = RunConfig(rounds=15, local_steps=3, lr=lrs, oracle=AdditiveNoise(0.1))
    measures = ("opt_error", "grad_norm2", "delta")
    batch = simulate(p, fedinit(betas), cfg, np.tile(seeds, len(settings)), measures=measures)
    for j, (beta, lr) in enumerate(settings):
        part = batch.select(slice(j * len(seeds), (j + 1) * len(seeds)))
        alone = simulate(p, fedinit(beta), dataclasses.replace(cfg, lr=lr), seeds, measures=measures)
        assert part.runs == len(seeds) and np.array_equal(part.seeds, alone.seeds)
        assert np.array_equal(part.config.lr, np.full(len(seeds), lr))  # the per-run step, sliced
        assert np.array_equal(part.run_params["relaxed.beta"], np.full(len(seeds), beta))
        assert np.array_equal(part.diverged_at, alone.diverged_at)
        np.testing.assert_allclose(part.final_w, alone.final_w, rtol=1e-13, atol=1e-15)
        for m in measures:
            np.testing.assert_allclose(part[m], alone[m], rtol=1e-12, atol=1e-15)
    mask = np.zeros(batch.runs, dtype=bool)
    mask[[1, 7]] = True
    picked = batch.select(mask)
    assert np.array_equal(picked.seeds, [4, 4]) and np.array_equal(picked["delta"], batch["delta"][:, [1, 7]])
    assert np.array_equal(batch.select([7, 1]).final_w, batch.final_w[[7, 1]])  # in the order given
    with pytest.raises(ParameterError, match="runs"):
        batch.select(np.zeros((2, 2), dtype=int))


# ---------------------------------------------------------------------------------- issue 38: the fused local steps


class _Identity(LocalTransform):
    """Passes the direction through: the round protocol then steps one by one (the path before issue 38)."""

    name = "identity"

    def direction(self, rs, g, w, grad_at):
        return g


def _step_by_step(alg):
    return dataclasses.replace(alg, local=(*alg.local, _Identity()))


_FUSED_MEASURES = ("loss", "opt_error", "grad_norm2", "delta", "client_grad_norm2", "dist2_opt", "delta_code", "drift",
                   "unbiased_gap", "init_offset", "V2", "visited_max_loss", "visited_max_grad")


@given(d=st.sampled_from([1, 2, 5, 12, 20, 33]), R=st.sampled_from([1, 2, 3, 8]), C=st.sampled_from([1, 6, 9]),
       K=st.sampled_from([1, 3]), alg=st.sampled_from(["fedavg", "fedavg_code", "fedinit", "dfedavg", "oledfl"]),
       oracle=st.sampled_from(["exact", "additive"]), N=st.sampled_from([None, 2]), lrs=st.booleans(),
       seed=st.integers(0, 1000))
def test_the_fused_local_steps_are_the_step_by_step_loop(d, R, C, K, alg, oracle, N, lrs, seed):
    """issue 38: with nothing acting between the local steps (no local transform, no per-step step size or hook), the
    least-squares view takes the K steps at once (``descend``): the same elementwise arithmetic, in the same order,
    and C-contiguous local models afterwards, so every measure is the loop's. The one difference: on the shared path
    (every run on the same clients and data) the clients' products see the iterates runs last, (N, d, R), where BLAS
    may take another kernel than for the loop's transposed (R, N, d) operand: bit for bit with one run (a
    matrix-vector product either way; off the shared path, see the next test), within rounding otherwise."""
    from fedtheory.sim import dfedavg, oledfl_sgd, ring

    if alg in ("dfedavg", "oledfl") and (C < 3 or N is not None):
        return
    p = heterogeneous_least_squares(C, d, 12, random_state=seed)
    make = {"fedavg": fedavg, "fedavg_code": lambda: fedavg("code", server_lr=0.7), "fedinit": lambda: fedinit(0.2),
            "dfedavg": lambda: dfedavg(ring(C)), "oledfl": lambda: oledfl_sgd(ring(C), 0.3)}[alg]
    lr = np.linspace(0.02, 0.06, R) if lrs else 0.05
    cfg = RunConfig(rounds=4, local_steps=K, lr=lr, clients_per_round=N if N is None or N < C else None,
                    oracle=AdditiveNoise(0.1) if oracle == "additive" else Exact())
    measures = _FUSED_MEASURES + (("eq15_residual",) if alg in ("fedinit", "oledfl") else ())
    fused = simulate(p, make(), cfg, list(range(seed, seed + R)), measures=measures)
    loop = simulate(p, _step_by_step(make()), cfg, list(range(seed, seed + R)), measures=measures)
    assert set(fused.measures) == set(loop.measures) and np.array_equal(fused.diverged_at, loop.diverged_at)
    if R == 1:
        np.testing.assert_array_equal(fused.final_w, loop.final_w, strict=True)
        for m in loop.measures:
            np.testing.assert_array_equal(fused[m], loop[m], strict=True)
    else:
        np.testing.assert_allclose(fused.final_w, loop.final_w, rtol=1e-13, atol=1e-15)
        for m in loop.measures:
            np.testing.assert_allclose(fused[m], loop[m], rtol=1e-10, atol=1e-14)


@given(d=st.sampled_from([1, 3, 7, 20]), R=st.sampled_from([1, 4, 9]), N=st.sampled_from([1, 5]),
       K=st.sampled_from([1, 4]), noise=st.booleans(), lrs=st.booleans(), total=st.booleans(), seed=st.integers(0, 99))
def test_descend_is_the_loops_elementwise_arithmetic_bit_for_bit(d, R, N, K, noise, lrs, total, seed):
    """issue 38: the view's K steps at once against the loop's arithmetic written out, g = H_i w - h_i (+ xi), the
    direction sum g_0 + g_1 + ..., w - lr g, with each client's product taken as descend takes it (runs last on the
    shared path): bit for bit, whatever the layout of the starting point, and C-contiguous results."""
    rng = np.random.default_rng(seed)
    p = heterogeneous_least_squares(N, d, 6, random_state=seed)
    every = np.broadcast_to(np.arange(N), (R, N))
    lr = (rng.uniform(0.01, 0.1, R) if lrs else np.full(R, 0.05))[:, None, None]
    xi = rng.standard_normal((R, K, N, d)) if noise else None
    w0 = np.array(np.broadcast_to(rng.standard_normal((R, d))[:, None, :], (R, N, d)))  # the plain start's layout
    for view in (p.view(every, np.zeros(R, dtype=np.int64)), _unshared_view(p, every)):
        got, got_sum = view.descend(w0, lr, K, xi, total)
        w, s = w0.copy(), np.zeros_like(w0)
        for k in range(K):
            Hw = (np.matmul(view.H, np.ascontiguousarray(w.transpose(1, 2, 0))).transpose(2, 0, 1) if view.shared
                  else np.matmul(view.H, w[..., None])[..., 0])
            g = Hw - view.h
            if noise:
                g = g + xi[:, k]
            s += g
            w = w - lr * g
        assert got.flags.c_contiguous and np.array_equal(got, w)
        assert (got_sum is None) if not total else (got_sum.flags.c_contiguous and np.array_equal(got_sum, s))


def _unshared_view(p, sel):
    """A view off the shared path: the same data through the per-run gather (as distinct data variants would)."""
    view = p.view(sel, np.zeros(sel.shape[0], dtype=np.int64))
    view.shared = False
    view.H = np.ascontiguousarray(np.broadcast_to(view.H, (sel.shape[0],) + view.H.shape[-3:]))
    view.h = np.ascontiguousarray(np.broadcast_to(view.h, (sel.shape[0],) + view.h.shape[-2:]))
    return view


def test_the_direction_sum_is_kept_only_for_a_rule_or_a_recorded_measure():
    """issue 38: RelaxedInit keeps the sum of the local directions for its eq15_residual only: a FedInit run that does
    not record it takes no sum (one (R, N, d) pass per local step less) and gives the same numbers."""
    from fedtheory.sim.rules import Plugin

    seen = []

    class Spy(Plugin):
        name = "spy"

        def round_end(self, rs):
            seen.append("direction_sum" in rs.extra)

    p = heterogeneous_least_squares(6, 4, 12, random_state=0)
    cfg = RunConfig(rounds=3, local_steps=2, lr=0.05)
    alg = dataclasses.replace(fedinit(0.2), compress=None)
    spied = dataclasses.replace(alg, local=(), aggregate=type("M", (Spy, type(alg.aggregate)), {})())
    a = simulate(p, spied, cfg, [0, 1], measures=("opt_error",))
    assert seen == [False] * 3
    seen.clear()
    b = simulate(p, spied, cfg, [0, 1], measures=("opt_error", "eq15_residual"))
    assert seen == [True] * 3 and np.array_equal(a["opt_error"], b["opt_error"])
    assert np.all(b["eq15_residual"] < 1e-12)  # the identity holds: the sum is the steps' own


def test_a_server_broadcast_is_numpys_broadcast():
    """issue 38: the server's anchor, built without np.broadcast_to's Python layers, is the same read-only view (its
    copy, the plain start, has the same layout, so later sums round alike)."""
    from fedtheory.sim.rules import broadcast_clients

    for w in (np.random.default_rng(0).standard_normal((3, 5)), np.zeros((1, 1)), np.ones((1, 4)), np.ones((3, 1)),
              np.ones((4, 6))[:, ::2]):
        got, ref = broadcast_clients(w, 7), np.broadcast_to(w[:, None, :], (w.shape[0], 7, w.shape[1]))
        assert got.strides == ref.strides and not got.flags.writeable and np.array_equal(got, ref)
        assert np.array(got).strides == np.array(ref).strides


@given(R=st.integers(1, 70), N=st.integers(1, 40), d=st.integers(1, 40), seed=st.integers(0, 99), special=st.booleans())
def test_the_mean_over_the_clients_is_numpys_bit_for_bit(R, N, d, seed, special):
    """issue 38: NumpyOps.mean over the clients of a C-contiguous (R, N, d) array with short rows goes through a
    clients-first copy (numpy adds client after client either way): np.mean's numbers, NaN and infinities included."""
    from fedtheory.sim.backend import NumpyOps

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((R, N, d)) * 10.0 ** rng.integers(-8, 8, (R, N, d))
    if special:
        x.flat[rng.integers(x.size)], x.flat[rng.integers(x.size)] = np.nan, -np.inf
    np.testing.assert_array_equal(NumpyOps.mean(x, axis=1), np.mean(x, axis=1), strict=True)


def test_divergence_flags_take_the_runs_maxima_in_any_layout():
    from fedtheory.sim.rounds import divergence_flags

    rng = np.random.default_rng(1)
    wK = rng.standard_normal((4, 5, 3))
    wK[1, 2, 0], wK[2, 0, 1], wK[3, 4, 2] = np.nan, 50.0, -np.inf
    w = rng.standard_normal((4, 3))
    for x in (wK, np.asfortranarray(wK), wK.transpose(1, 0, 2).copy().transpose(1, 0, 2)):
        w_ok, local_ok = divergence_flags(w, x, 10.0)
        assert w_ok.all() and local_ok.tolist() == [True, False, False, False]
        assert divergence_flags(w, x, np.inf)[1].tolist() == [True, False, True, False]


def test_run_streams_make_each_concerns_generators_when_first_asked_for():
    """issue 38: a concern's generators are made on first use, as child i of each run's SeedSequence: the states of
    spawning every child at once, whatever the order of use; nothing is made for a simulation that draws nothing;
    iterating makes all of them, in the concerns' order (a training checkpoint lists every stream)."""
    from fedtheory.empirical.sampling import TrainStreams
    from fedtheory.sim.rng import CONCERNS, RunStreams

    seeds = [0, 7, 2**40, 7]
    eager = {c: [] for c in CONCERNS}
    for s in seeds:
        for c, child in zip(CONCERNS, np.random.SeedSequence(s).spawn(len(CONCERNS))):
            eager[c].append(np.random.Generator(np.random.PCG64(child)))
    streams = RunStreams(seeds)
    for c in reversed(CONCERNS):
        assert [g.bit_generator.state for g in streams.generators(c)] == [g.bit_generator.state for g in eager[c]]
    from fedtheory.sim.rules import Server

    lazy = RunStreams(range(16), rounds_ahead=5)
    for _ in range(5):  # a round of FedAvg with exact gradients, every client: no draw
        Server().participants(lazy, 16, 6, 6), Exact().draws(lazy, 16, 6, 2, 4, np.full(6, 12))
    assert dict.__len__(vars(lazy)["_gens"]) == 0
    train = TrainStreams([1, 2])
    assert list(train._gens) == [*CONCERNS, "augment"] and len(train._gens) == len(CONCERNS) + 1
