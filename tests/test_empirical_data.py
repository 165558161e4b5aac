"""Empirical layer, data side: CIFAR pickles (fake ones written here), digits, partitions, augmentation, draws."""
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st

from fedtheory._validation import ParameterError
from fedtheory.empirical.augment import crop_flip
from fedtheory.empirical.data import DATA_ENV, DataError, load_cifar, load_dataset, load_digits_images, synthetic_images
from fedtheory.empirical.partitions import make_partition, summarize
from fedtheory.empirical.sampling import TrainStreams, draw_augmentation, draw_minibatches, local_steps_for
from fedtheory.sim.partition import pathological_classes
from fedtheory.sim.rng import RunStreams

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------ fake CIFAR


def _write_cifar10(root: Path, n=20, seed=0):
    rng = np.random.default_rng(seed)
    d = root / "cifar-10-batches-py"
    d.mkdir(parents=True)
    batches = {}
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        x = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
        y = rng.integers(0, 10, n).tolist()
        batches[name] = (x, y)
        with open(d / name, "wb") as f:
            pickle.dump({b"batch_label": name.encode(), b"labels": y, b"data": x, b"filenames": [b"x"] * n},
                        f, protocol=2)
    with open(d / "batches.meta", "wb") as f:
        pickle.dump({b"label_names": [b"c%d" % i for i in range(10)]}, f, protocol=2)
    return batches


def _write_cifar100(root: Path, n=30, seed=1):
    rng = np.random.default_rng(seed)
    d = root / "cifar-100-python"
    d.mkdir(parents=True)
    out = {}
    for name in ("train", "test"):
        x = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
        y = rng.integers(0, 100, n).tolist()
        out[name] = (x, y)
        with open(d / name, "wb") as f:
            pickle.dump({b"data": x, b"fine_labels": y, b"coarse_labels": [0] * n}, f, protocol=2)
    return out


def test_cifar10_reads_the_pickle_layout(tmp_path):
    b = _write_cifar10(tmp_path)
    ds = load_cifar("cifar10", tmp_path)
    assert ds.x_train.shape == (100, 3, 32, 32) and ds.x_test.shape == (20, 3, 32, 32)
    assert ds.x_train.dtype == np.uint8 and ds.n_classes == 10
    # row layout: 1024 red, 1024 green, 1024 blue values, row-major 32x32
    x0 = b["data_batch_1"][0][0]
    assert np.array_equal(ds.x_train[0, 1], x0[1024:2048].reshape(32, 32))
    assert np.array_equal(ds.y_train[20:40], b["data_batch_2"][1])
    assert np.array_equal(ds.y_test, b["test_batch"][1])
    # the folder itself works too, and the environment variable
    assert load_cifar("cifar10", tmp_path / "cifar-10-batches-py").fingerprint() == ds.fingerprint()


def test_cifar_env_var(tmp_path, monkeypatch):
    _write_cifar100(tmp_path)
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    ds = load_dataset("cifar100")
    assert ds.n_classes == 100 and ds.x_train.shape == (30, 3, 32, 32)
    assert np.allclose(ds.mean, ds.scaled(ds.x_train).mean(axis=(0, 2, 3)))


def test_cifar_missing_directory_names_the_layout(tmp_path, monkeypatch):
    monkeypatch.delenv(DATA_ENV, raising=False)
    with pytest.raises(DataError, match="no data directory given.*cifar-10-batches-py"):
        load_cifar("cifar10", None)
    with pytest.raises(DataError, match="does not exist.*data_batch_1"):
        load_cifar("cifar10", tmp_path / "nope")
    with pytest.raises(DataError, match="has no folder 'cifar-100-python'.*train, test"):
        load_cifar("cifar100", tmp_path)
    _write_cifar10(tmp_path)
    os.unlink(tmp_path / "cifar-10-batches-py" / "data_batch_3")
    with pytest.raises(DataError, match="lacks data_batch_3"):
        load_cifar("cifar10", tmp_path)


@pytest.mark.parametrize("damage, match", [
    (lambda p: p.write_bytes(b"not a pickle at all"), "cannot read"),
    (lambda p: p.write_bytes(pickle.dumps([1, 2, 3], protocol=2)), "holds a list"),
    (lambda p: p.write_bytes(pickle.dumps({b"data": np.zeros((2, 3072), np.uint8)}, protocol=2)), "has keys"),
    (lambda p: p.write_bytes(pickle.dumps({b"data": np.zeros((2, 100), np.uint8), b"labels": [0, 1]}, protocol=2)),
     "b'data' is uint8 \\(2, 100\\)"),
    (lambda p: p.write_bytes(pickle.dumps({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0, 10]}, protocol=2)),
     "labels are"),
    (lambda p: p.write_bytes(pickle.dumps({b"data": np.zeros((2, 3072), np.float32), b"labels": [0, 1]}, protocol=2)),
     "float32"),
])
def test_corrupt_cifar_file_is_a_clear_error(tmp_path, damage, match):
    _write_cifar10(tmp_path)
    damage(tmp_path / "cifar-10-batches-py" / "data_batch_2")
    with pytest.raises(DataError, match=match) as err:
        load_cifar("cifar10", tmp_path)
    assert "data_batch_2" in str(err.value) and "3072" in str(err.value)


def test_cifar_pickle_cannot_run_code(tmp_path):
    _write_cifar10(tmp_path)

    class Evil:
        def __reduce__(self):
            return (os.system, ("touch " + str(tmp_path / "pwned"),))

    (tmp_path / "cifar-10-batches-py" / "test_batch").write_bytes(pickle.dumps({b"data": Evil(), b"labels": []}))
    with pytest.raises(DataError, match="refusing to load global"):
        load_cifar("cifar10", tmp_path)
    assert not (tmp_path / "pwned").exists()


def test_digits_and_synthetic():
    d = load_digits_images()
    assert d.x_train.shape[1:] == (1, 8, 8) and len(d.y_train) + len(d.y_test) == 1797
    assert d.x_train.dtype == np.float32 and 0 <= d.x_train.min() and d.x_train.max() <= 1
    assert load_digits_images().fingerprint() == d.fingerprint()
    assert load_digits_images(random_state=1).fingerprint() != d.fingerprint()
    s = synthetic_images(50, 10, random_state=3)
    assert s.x_train.shape == (50, 3, 32, 32) and s.x_train.dtype == np.uint8
    with pytest.raises(ParameterError, match="dataset"):
        load_dataset("mnist")


# ------------------------------------------------------------------------------------ partitions


def _docs_table(page: str, header: str) -> list[list[str]]:
    """The rows (cells) of the Markdown table of docs/PAGE whose header line starts with ``header``."""
    lines = (ROOT / "docs" / page).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {header}"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def test_the_synthetic_data_set_is_described_in_the_docs():
    """issue 47: the synthetic images were described only by their manifest ('class mean image + noise', and the
    docstring's 'weak class signal' was wrong: at 3x32x32 the classes are separable). docs/datasets.md describes the
    draw, its options (the signature's defaults) and its difficulty, recomputed here; the manifest names its
    constants."""
    import inspect

    from fedtheory.empirical import data

    text = (ROOT / "docs" / "datasets.md").read_text()
    lo, hi = data.SYNTHETIC_MEAN_RANGE
    assert f"[{lo:g}, {hi:g}]" in text and f"deviation {data.SYNTHETIC_NOISE_STD:g}" in text
    sig = inspect.signature(synthetic_images).parameters
    options = {r[0]: r[1] for r in _docs_table("datasets.md", "option |")[2:]}
    assert options["`n_train`, `n_test`"] == f"{sig['n_train'].default}, {sig['n_test'].default}"
    assert options["`shape`"] == ",".join(map(str, sig["shape"].default))
    assert options["`n_classes`"] == str(sig["n_classes"].default)
    assert options["`random_state`"] == str(sig["random_state"].default)
    table = _docs_table("datasets.md", "`shape` | 1,1,1")
    shapes, accs = table[0][1:], table[2][1:]
    for shape, acc in zip(shapes, accs):
        ds = synthetic_images(shape=tuple(int(v) for v in shape.split()[0].split(",")))
        X = ds.x_train.reshape(len(ds.y_train), -1).astype(float)
        Xt = ds.x_test.reshape(len(ds.y_test), -1).astype(float)
        means = np.stack([X[ds.y_train == c].mean(axis=0) for c in range(ds.n_classes)])
        pred = np.argmin(((Xt[:, None, :] - means[None]) ** 2).sum(axis=-1), axis=1)
        assert f"{np.mean(pred == ds.y_test):.3f}" == acc, shape
    info = synthetic_images(n_train=4, n_test=2, shape=(1, 2, 2)).describe()
    assert info["mean_image_range"] == [lo, hi] and info["noise_std"] == data.SYNTHETIC_NOISE_STD
    assert "docs/datasets.md" in info["source"]


def test_pathological_every_client_holds_n_classes():
    labels = np.repeat(np.arange(10), 60)
    parts = pathological_classes(labels, 20, 3, random_state=4)
    assert len(parts) == 20
    for p in parts:
        assert np.unique(labels[p]).size == 3
    allidx = np.concatenate(parts)
    assert allidx.size == np.unique(allidx).size  # disjoint
    assert set(np.unique(labels[allidx])) == set(range(10))  # every class held (first class = i mod K)
    again = pathological_classes(labels, 20, 3, random_state=4)
    assert all(np.array_equal(a, b) for a, b in zip(parts, again))
    with pytest.raises(ParameterError, match="classes_per_client"):
        pathological_classes(labels, 20, 11)
    with pytest.raises(ParameterError, match="n_clients"):
        pathological_classes(np.array([0, 0, 1, 1]), 4, 2)


@given(st.integers(1, 40), st.integers(1, 5), st.integers(0, 10_000))
def test_pathological_property(n_clients, n_cls, seed):
    labels = np.random.default_rng(seed).integers(0, 5, 400)
    parts = pathological_classes(labels, n_clients, n_cls, random_state=seed)
    for p in parts:
        assert np.unique(labels[p]).size == n_cls and p.size > 0


@pytest.mark.parametrize("scheme", ["iid", "dirichlet", "dirichlet-replace", "pathological", "label-parity"])
def test_partitions_are_deterministic(scheme):
    y = np.random.default_rng(0).integers(0, 10, 2000)
    a = make_partition(y, scheme, 20, alpha=0.3, random_state=7)
    b = make_partition(y, scheme, 20, alpha=0.3, random_state=7)
    c = make_partition(y, scheme, 20, alpha=0.3, random_state=8)
    assert all(np.array_equal(u, v) for u, v in zip(a, b))
    assert not all(np.array_equal(u, v) for u, v in zip(a, c))
    s = summarize(a, y, 10)
    assert len(s["sizes"]) == 20 and np.sum(s["class_counts"]) == sum(s["sizes"])
    if scheme == "dirichlet-replace":
        assert s["duplicated_assignments"] > 0  # sampling with replacement: clients share samples
    else:
        assert s["duplicated_assignments"] == 0


def test_label_parity_comes_from_the_sim_layer():
    from fedtheory.empirical.partitions import partition_with_groups
    from fedtheory.sim.partition import label_parity_shards

    y = np.repeat(np.arange(10), 20)
    parts, groups = partition_with_groups(y, "label-parity", 10, classes_per_client=2, random_state=3)
    ref, inferior = label_parity_shards(y, 10, 2, random_state=3)
    assert all(np.array_equal(a, b) for a, b in zip(parts, ref)) and np.array_equal(groups, inferior)
    assert all(set(y[p] % 2) == {i % 2} for i, p in enumerate(parts))


def test_dirichlet_small_alpha_many_clients_terminates():
    """A rejection loop ('redraw until every client has >= m samples') hangs here; the partition must not."""
    code = textwrap.dedent("""
        import numpy as np
        from fedtheory.empirical.partitions import make_partition
        y = np.repeat(np.arange(100), 500)  # CIFAR-100-sized labels
        for scheme in ("dirichlet", "dirichlet-replace"):
            parts = make_partition(y, scheme, 1000, alpha=1e-3, random_state=0)
            assert len(parts) == 1000 and all(len(p) == 50 for p in parts)
            print(scheme, max(np.unique(y[p]).size for p in parts))
    """)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr


# ------------------------------------------------------------------------------------ augmentation


def _naive_crop_flip(x, offsets, flips, pad):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    H, W = x.shape[2:]
    out = np.empty_like(x)
    for m in range(len(x)):
        oy, ox = offsets[m]
        c = xp[m, :, oy:oy + H, ox:ox + W]
        out[m] = c[:, :, ::-1] if flips[m] else c
    return out


@given(st.integers(0, 4), st.integers(1, 6), st.integers(0, 1000))
def test_crop_flip_matches_a_per_image_loop(pad, m, seed):
    rng = np.random.default_rng(seed)
    x = rng.random((m, 3, 6, 5))
    offs = rng.integers(0, 2 * pad + 1, (m, 2))
    flips = rng.random(m) < 0.5
    got = crop_flip(torch.as_tensor(x), torch.as_tensor(offs), torch.as_tensor(flips), pad).numpy()
    assert np.array_equal(got, _naive_crop_flip(x, offs, flips, pad))


def test_centre_crop_without_flip_is_identity():
    x = torch.rand(4, 3, 8, 8)
    out = crop_flip(x, torch.full((4, 2), 4), torch.zeros(4, dtype=torch.bool), 4)
    assert torch.equal(out, x)


# ------------------------------------------------------------------------------------ draws


def test_minibatches_walk_through_permutations():
    gens = TrainStreams([3, 4]).generators("batch")
    sizes = np.array([[7, 12, 5], [9, 9, 9]])
    pos = draw_minibatches(gens, sizes, K=6, B=4)  # (R, K, N, B)
    assert pos.shape == (2, 6, 3, 4)
    for r in range(2):
        for n in range(3):
            s = sizes[r, n]
            stream = pos[r, :, n, :].reshape(-1)
            assert stream.min() >= 0 and stream.max() < s
            for e in range(len(stream) // s):  # every full epoch is a permutation of the client's data
                assert sorted(stream[e * s:(e + 1) * s]) == list(range(s))


def test_draws_depend_on_the_runs_own_seed_only():
    a = draw_minibatches(TrainStreams([5, 6]).generators("batch"), np.array([[10, 10], [10, 10]]), 3, 4)
    b = draw_minibatches(TrainStreams([6]).generators("batch"), np.array([[10, 10]]), 3, 4)
    assert np.array_equal(a[1], b[0])
    o1, f1 = draw_augmentation(TrainStreams([5, 6]).generators("augment"), 2, 3, 4, 4)
    o2, f2 = draw_augmentation(TrainStreams([6]).generators("augment"), 2, 3, 4, 4)
    assert np.array_equal(o1[1], o2[0]) and np.array_equal(f1[1], f2[0])
    assert o1.min() >= 0 and o1.max() <= 8


def test_train_streams_extend_the_sim_streams():
    """Client sampling in the empirical layer uses the sim layer's stream: same seed, same clients."""
    a, b = TrainStreams([11, 12]), RunStreams([11, 12])
    assert np.array_equal(a.choose_clients(10, 4), b.choose_clients(10, 4))
    st_ = a.state_json()
    x = a.uniform("batch", (3,))
    a.load_state_json(st_)
    assert np.array_equal(a.uniform("batch", (3,)), x)


def test_local_steps():
    assert local_steps_for(np.array([500] * 10), 50, 5, None) == 50  # seed 000: 5 epochs of 500 samples, batch 50
    assert local_steps_for(np.array([500] * 10), 50, 5, 7) == 7
    assert local_steps_for(np.array([10, 30]), 50, 1, None) == 1
