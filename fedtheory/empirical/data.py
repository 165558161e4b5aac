"""Image data sets for the empirical layer: CIFAR-10/100 from the python-pickle layout, scikit-learn's
bundled digits (no download), and CIFAR-shaped synthetic images for timing (docs/datasets.md describes each).

Nothing is downloaded. CIFAR is read from a directory the user names (``--data-dir`` or the
``FEDTHEORY_DATA_DIR`` environment variable) that holds the archives' extracted folders::

    DATA_DIR/cifar-10-batches-py/{data_batch_1..data_batch_5, test_batch, batches.meta}
    DATA_DIR/cifar-100-python/{train, test, meta}

(``DATA_DIR`` may also be the ``cifar-10-batches-py`` / ``cifar-100-python`` folder itself.)
The pickles are read with a restricted unpickler that only rebuilds plain containers and numpy
arrays, so a tampered file cannot run code.
"""
from __future__ import annotations

import hashlib
import io
import os
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import FedTheoryError, ParameterError, check_float, check_int, check_random_state

DATA_ENV = "FEDTHEORY_DATA_DIR"
DATASETS = ("cifar10", "cifar100", "digits", "synthetic")

CIFAR_LAYOUT = {
    "cifar10": ("cifar-10-batches-py", [f"data_batch_{i}" for i in range(1, 6)], ["test_batch"], b"labels", 10),
    "cifar100": ("cifar-100-python", ["train"], ["test"], b"fine_labels", 100),
}


class DataError(FedTheoryError):
    """A data set could not be found or read; the message says what layout is expected."""


@dataclass
class ImageDataset:
    """Train and test images with labels.

    x_* : (n, channels, height, width) uint8 (scaled by 1/255 on use) or float32 already in [0, 1]
    y_* : (n,) int64 in [0, n_classes)
    mean, std: per-channel normalisation applied after augmentation (computed on the train split).
    """

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    n_classes: int
    mean: np.ndarray = field(default=None)  # (channels,)
    std: np.ndarray = field(default=None)
    source: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        for split, x, y in (("train", self.x_train, self.y_train), ("test", self.x_test, self.y_test)):
            if x.ndim != 4 or len(x) != len(y) or len(y) == 0:
                raise DataError(f"{self.name}: {split} images must be (n, channels, height, width) with one label "
                                f"each; got images {x.shape} and labels {y.shape}")
            if y.min() < 0 or y.max() >= self.n_classes:
                raise DataError(f"{self.name}: {split} labels must lie in [0, {self.n_classes - 1}]; "
                                f"got [{y.min()}, {y.max()}]")
        if self.x_train.shape[1:] != self.x_test.shape[1:]:
            raise DataError(f"{self.name}: train and test images differ in shape: {self.x_train.shape[1:]} vs "
                            f"{self.x_test.shape[1:]}")
        if self.mean is None or self.std is None:
            xs = self.scaled(self.x_train)
            self.mean = xs.mean(axis=(0, 2, 3))
            self.std = xs.std(axis=(0, 2, 3))
        self.std = np.where(np.asarray(self.std) > 0, self.std, 1.0)

    @property
    def image_shape(self) -> tuple[int, int, int]:
        return tuple(self.x_train.shape[1:])

    @staticmethod
    def scaled(x: np.ndarray) -> np.ndarray:
        return x.astype(np.float32) / 255.0 if x.dtype == np.uint8 else x.astype(np.float32)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source, "n_train": int(len(self.y_train)),
                "n_test": int(len(self.y_test)), "image_shape": list(self.image_shape), "n_classes": self.n_classes,
                "mean": [float(v) for v in self.mean], "std": [float(v) for v in self.std],
                "fingerprint": self.fingerprint(), **self.info}

    def fingerprint(self) -> str:
        """sha256 of the labels and a strided sample of the pixels: identifies the data a run used."""
        h = hashlib.sha256()
        for a in (self.y_train, self.y_test, self.x_train[:: max(1, len(self.x_train) // 256)],
                  self.x_test[:: max(1, len(self.x_test) // 64)]):
            h.update(np.ascontiguousarray(a).tobytes())
        return h.hexdigest()[:16]


# ------------------------------------------------------------------------------------ loading


def load_dataset(name: str, data_dir: str | os.PathLike | None = None, *, random_state=0, **kwargs) -> ImageDataset:
    """Load one of ``DATASETS``. CIFAR needs ``data_dir`` (or $FEDTHEORY_DATA_DIR); digits and
    synthetic need nothing. ``random_state`` fixes the digits test split and the synthetic draws."""
    if name in CIFAR_LAYOUT:
        return load_cifar(name, data_dir)
    if name == "digits":
        return load_digits_images(random_state=random_state, **kwargs)
    if name == "synthetic":
        return synthetic_images(random_state=random_state, **kwargs)
    raise ParameterError("dataset", name, "one of " + ", ".join(DATASETS))


def resolve_data_dir(data_dir) -> Path | None:
    if data_dir is None or str(data_dir) == "":
        env = os.environ.get(DATA_ENV)
        return Path(env).expanduser() if env else None
    return Path(data_dir).expanduser()


def _layout_text(name: str) -> str:
    folder, train, test, _, _ = CIFAR_LAYOUT[name]
    archive = "cifar-10-python.tar.gz" if name == "cifar10" else "cifar-100-python.tar.gz"
    return (f"DATA_DIR/{folder}/{{{', '.join(train + test)}}}, i.e. {archive} (python version) extracted into "
            f"DATA_DIR; pass --data-dir DATA_DIR or set {DATA_ENV}")


def load_cifar(name: str, data_dir=None) -> ImageDataset:
    """CIFAR-10 or CIFAR-100 from the python-pickle layout (see module docstring)."""
    if name not in CIFAR_LAYOUT:
        raise ParameterError("dataset", name, "cifar10 or cifar100")
    folder, train_files, test_files, label_key, n_classes = CIFAR_LAYOUT[name]
    root = resolve_data_dir(data_dir)
    if root is None:
        raise DataError(f"{name}: no data directory given. Expected layout: {_layout_text(name)}")
    if not root.is_dir():
        raise DataError(f"{name}: data directory {str(root)!r} does not exist. Expected layout: {_layout_text(name)}")
    base = root if root.name == folder else root / folder
    if not base.is_dir():
        raise DataError(f"{name}: {str(root)!r} has no folder {folder!r}. Expected layout: {_layout_text(name)}")
    missing = [f for f in train_files + test_files if not (base / f).is_file()]
    if missing:
        raise DataError(f"{name}: {str(base)!r} lacks {', '.join(missing)}. Expected layout: {_layout_text(name)}")
    xs, ys = [], []
    for files in (train_files, test_files):
        parts = [_read_cifar_batch(base / f, label_key, n_classes, name) for f in files]
        xs.append(np.concatenate([p[0] for p in parts]))
        ys.append(np.concatenate([p[1] for p in parts]))
    return ImageDataset(name, xs[0], ys[0], xs[1], ys[1], n_classes, source=str(base),
                        info={"files": sorted(train_files + test_files)})


_ALLOWED_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"): ("numpy._core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"): ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"): ("numpy._core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"): ("numpy._core.multiarray", "scalar"),
    ("numpy", "ndarray"): ("numpy", "ndarray"),
    ("numpy", "dtype"): ("numpy", "dtype"),
    ("_codecs", "encode"): ("_codecs", "encode"),
}


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        target = _ALLOWED_GLOBALS.get((module, name))
        if target is None:
            raise pickle.UnpicklingError(f"refusing to load global {module}.{name} (not part of the CIFAR format)")
        import importlib

        return getattr(importlib.import_module(target[0]), target[1])


def _read_cifar_batch(path: Path, label_key: bytes, n_classes: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    expect = (f"a pickled dict with b'data' (n x 3072 uint8, rows = 1024 red, 1024 green, 1024 blue values of a 32x32 "
              f"image) and {label_key!r} (n labels in [0, {n_classes - 1}])")
    try:
        with open(path, "rb") as f:
            d = _SafeUnpickler(io.BytesIO(f.read()), encoding="bytes").load()
    except Exception as exc:  # noqa: BLE001 - any read failure is a corrupt file for the user
        raise DataError(f"{name}: cannot read {str(path)!r} ({type(exc).__name__}: {exc}); expected {expect}") from None
    if not isinstance(d, dict):
        raise DataError(f"{name}: {str(path)!r} holds a {type(d).__name__}; expected {expect}")
    d = {(k.encode() if isinstance(k, str) else k): v for k, v in d.items()}
    if b"data" not in d or label_key not in d:
        raise DataError(f"{name}: {str(path)!r} has keys {sorted(map(repr, d))}; expected {expect}")
    x = np.asarray(d[b"data"])
    y = np.asarray(d[label_key])
    if x.dtype != np.uint8 or x.ndim != 2 or x.shape[1] != 3072:
        raise DataError(f"{name}: {str(path)!r} b'data' is {x.dtype} {x.shape}; expected {expect}")
    if (y.ndim != 1 or len(y) != len(x) or not np.issubdtype(y.dtype, np.integer)
            or (len(y) and (y.min() < 0 or y.max() >= n_classes))):
        raise DataError(f"{name}: {str(path)!r} labels are {y.dtype} {y.shape} (range "
                        f"{(int(y.min()), int(y.max())) if y.size and np.issubdtype(y.dtype, np.number) else '-'}); "
                        f"expected {expect}")
    return x.reshape(-1, 3, 32, 32), y.astype(np.int64)


def load_digits_images(test_fraction: float = 0.2, *, random_state=0) -> ImageDataset:
    """scikit-learn's bundled digits: 1797 8x8 grey images (values 0..16, scaled to [0, 1]), 10 classes,
    shipped inside the scikit-learn wheel. ``test_fraction`` is held out by a seeded permutation."""
    from sklearn.datasets import load_digits

    test_fraction = check_float("test_fraction", test_fraction, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)[:, None, :, :]
    y = d.target.astype(np.int64)
    perm = check_random_state(random_state).permutation(len(y))
    n_test = int(round(test_fraction * len(y)))
    te, tr = np.sort(perm[:n_test]), np.sort(perm[n_test:])
    return ImageDataset("digits", x[tr], y[tr], x[te], y[te], 10, source="sklearn.datasets.load_digits",
                        info={"test_fraction": test_fraction, "split_seed": _seed_repr(random_state)})


#: the synthetic images: each class's mean image has every pixel uniform in this range, and each image adds
#: Gaussian noise of this standard deviation to its class's mean (then clipped to [0, 255] and rounded down to uint8)
SYNTHETIC_MEAN_RANGE = (64.0, 192.0)
SYNTHETIC_NOISE_STD = 48.0


def synthetic_images(n_train: int = 5000, n_test: int = 1000, shape=(3, 32, 32), n_classes: int = 10, *,
                     random_state=0) -> ImageDataset:
    """CIFAR-shaped uint8 images, a Gaussian cloud around a mean image per class: for timing and smoke tests,
    not for statements about real data.

    Parameters
    ----------
    n_train, n_test : int
        Images in the train and test splits (>= 1 each).
    shape : (channels, height, width)
        The image shape.
    n_classes : int
        Classes (>= 2); each image's label is uniform over them.
    random_state : int or numpy Generator
        Fixes the mean images, then the train split, then the test split (drawn in that order).

    Returns
    -------
    ImageDataset
        Class c's mean image m_c has every pixel uniform in ``SYNTHETIC_MEAN_RANGE``; an image of class y is
        ``floor(clip(m_y + N(0, SYNTHETIC_NOISE_STD^2) per pixel, 0, 255))``. At the default 3x32x32 the classes are
        far apart (the nearest class mean classifies the test split without error); small images overlap
        (docs/datasets.md has the measured accuracies)."""
    n_train = check_int("n_train", n_train, 1)
    n_test = check_int("n_test", n_test, 1)
    n_classes = check_int("n_classes", n_classes, 2)
    shape = tuple(check_int("shape", s, 1) for s in shape)
    if len(shape) != 3:
        raise ParameterError("shape", shape, "(channels, height, width)")
    rng = check_random_state(random_state)
    proto = rng.uniform(*SYNTHETIC_MEAN_RANGE, size=(n_classes,) + shape)

    def draw(n):
        y = rng.integers(0, n_classes, n)
        x = np.clip(proto[y] + rng.normal(0, SYNTHETIC_NOISE_STD, size=(n,) + shape), 0, 255).astype(np.uint8)
        return x, y.astype(np.int64)

    xtr, ytr = draw(n_train)
    xte, yte = draw(n_test)
    lo, hi = SYNTHETIC_MEAN_RANGE
    return ImageDataset("synthetic", xtr, ytr, xte, yte, n_classes,
                        source=f"synthetic: a mean image per class (pixels uniform in [{lo:g}, {hi:g}]) plus Gaussian "
                               f"noise (std {SYNTHETIC_NOISE_STD:g}), clipped to [0, 255] (docs/datasets.md)",
                        info={"seed": _seed_repr(random_state), "mean_image_range": [lo, hi],
                              "noise_std": SYNTHETIC_NOISE_STD})


def _seed_repr(rs):
    return int(rs) if isinstance(rs, (int, np.integer)) else repr(rs)
