"""Client partitions of a labelled data set, deterministic per seed; shared by sim/ and empirical/.

Every function returns a list of index arrays (one per client) into the data set. None of them
loops without a bound: small Dirichlet concentrations with many clients terminate (see
``dirichlet_label_skew``), unlike rejection loops that redraw until every client is non-empty.
"""
from __future__ import annotations

import numpy as np

from .._validation import ParameterError, check_float, check_int, check_random_state

__all__ = ["dirichlet_label_skew", "iid", "label_parity_shards", "pathological_classes"]


def iid(n_samples: int, n_clients: int, random_state=0) -> list[np.ndarray]:
    n_samples = check_int("n_samples", n_samples, 1)
    n_clients = check_int("n_clients", n_clients, 1, n_samples)
    perm = check_random_state(random_state).permutation(n_samples)
    return [np.sort(p) for p in np.array_split(perm, n_clients)]


def dirichlet_label_skew(
    labels: np.ndarray,
    n_clients: int,
    alpha: float,
    samples_per_client: int | None = None,
    *,
    replace: bool = False,
    random_state=0,
) -> list[np.ndarray]:
    """Dirichlet label skew as Hsu, Qi & Brown (2019) define it.

    Client i draws class proportions q_i ~ Dir(alpha * p), p the data set's class frequencies,
    and receives ``samples_per_client`` samples (default: n // n_clients) with class counts from
    q_i (largest-remainder rounding, so counts are deterministic given q_i).

    replace=False: samples are drawn without replacement from per-class pools. When a pool runs
    dry, the client's shortfall is refilled from the classes that still have samples, in
    proportion to q_i restricted to them; each refill pass empties a pool or closes the gap,
    so the loop ends after at most n_classes passes per client (no rejection sampling).
    replace=True: the FedInit authors' variant (seed 000, App. B.1): each client samples its
    counts from the class pools with replacement, so clients may share samples and some
    samples are used by nobody.
    """
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.size == 0:
        raise ParameterError("labels", labels.shape, "a non-empty 1-D array of class labels")
    n = labels.size
    n_clients = check_int("n_clients", n_clients, 1, n)
    alpha = check_float("alpha", alpha, 0.0, None, low_inclusive=False)
    per_client = (n // n_clients if samples_per_client is None
                  else check_int("samples_per_client", samples_per_client, 1))
    if not replace and per_client * n_clients > n:
        raise ParameterError("samples_per_client", per_client,
                             f"<= n_samples // n_clients = {n // n_clients} when replace=False")
    rng = check_random_state(random_state)
    classes, y = np.unique(labels, return_inverse=True)
    k = classes.size
    prior = np.bincount(y, minlength=k) / n
    q = rng.dirichlet(np.maximum(alpha * prior, 1e-300), size=n_clients)
    q = np.nan_to_num(q / q.sum(axis=1, keepdims=True), nan=1.0 / k)
    pools = [rng.permutation(np.flatnonzero(y == c)) for c in range(k)]
    counts = np.stack([_largest_remainder(per_client, qi) for qi in q])
    out: list[np.ndarray] = []
    if replace:
        for i in range(n_clients):
            parts = [rng.choice(pools[c], size=counts[i, c], replace=True) for c in range(k) if counts[i, c] > 0]
            out.append(np.sort(np.concatenate(parts)) if parts else np.empty(0, dtype=np.int64))
        return out
    cursor = np.zeros(k, dtype=np.int64)
    supply = np.array([p.size for p in pools])
    for i in range(n_clients):
        take = np.minimum(counts[i], supply - cursor)
        gap = per_client - take.sum()
        passes = 0
        while gap > 0:
            passes += 1
            left = supply - cursor - take
            avail = left > 0
            if not avail.any() or passes > k + 1:
                break
            w = np.where(avail, q[i], 0.0)
            w = w if w.sum() > 0 else left.astype(float)
            extra = np.minimum(_largest_remainder(gap, w / w.sum()), left)
            if extra.sum() == 0:  # rounding put the gap on empty classes: take from the largest pool
                extra[np.argmax(left)] = min(gap, left.max())
            take += extra
            gap = per_client - take.sum()
        idx = [pools[c][cursor[c]:cursor[c] + take[c]] for c in range(k)]
        cursor += take
        out.append(np.sort(np.concatenate(idx)))
    return out


def _largest_remainder(total: int, weights: np.ndarray) -> np.ndarray:
    raw = total * np.asarray(weights, dtype=float)
    base = np.floor(raw).astype(np.int64)
    short = int(total - base.sum())
    if short > 0:
        base[np.argsort(-(raw - base), kind="stable")[:short]] += 1
    return base


def label_parity_shards(labels: np.ndarray, n_clients: int, labels_per_client: int = 2, *,
                        random_state=0) -> tuple[list[np.ndarray], np.ndarray]:
    """FedShift's label-parity split (seed 004, Sec. V-A2 and Fig. 6).

    Even-indexed clients (0, 2, ...) form the superior group and hold only even labels; odd-indexed
    clients form the inferior group and hold only odd labels. Within a group, each client gets
    ``labels_per_client`` distinct labels (fewer if its group has fewer), dealt round-robin over a
    random permutation of the group's labels, so every label of a group is held by at least one
    client when (clients in the group) x labels_per_client >= (labels in the group); each label's
    samples are then split evenly, at random, among the clients that hold it. Every sample goes to
    exactly one client.

    Returns (parts, inferior): parts[i] the sorted sample indices of client i; inferior (n_clients,)
    bool, True for the odd-indexed (odd-label) clients.
    """
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.size == 0 or not np.issubdtype(labels.dtype, np.integer):
        raise ParameterError("labels", labels.shape if labels.ndim != 1 else labels.dtype,
                             "a non-empty 1-D array of integer class labels")
    n_clients = check_int("n_clients", n_clients, 2, labels.size)
    labels_per_client = check_int("labels_per_client", labels_per_client, 1)
    rng = check_random_state(random_state)
    inferior = np.arange(n_clients) % 2 == 1
    parts: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * n_clients
    for parity in (0, 1):
        clients = np.flatnonzero(inferior == bool(parity))
        group = np.unique(labels[labels % 2 == parity])
        if group.size == 0:
            raise ParameterError("labels", np.unique(labels).tolist(), "labels of both parities (even and odd)")
        per = min(labels_per_client, group.size)
        if clients.size * per < group.size:
            raise ParameterError("labels_per_client", labels_per_client,
                                 f"large enough that the {clients.size} {'odd' if parity else 'even'}-indexed clients "
                                 f"hold all {group.size} {'odd' if parity else 'even'} labels (>= "
                                 f"{-(-group.size // clients.size)})")
        order = rng.permutation(group)
        held = {int(c): [int(order[(j * per + s) % group.size]) for s in range(per)] for j, c in enumerate(clients)}
        holders = {int(lab): [c for c in clients if int(lab) in held[int(c)]] for lab in group}
        chunks: dict[int, list[np.ndarray]] = {int(c): [] for c in clients}
        for lab, hs in holders.items():
            idx = rng.permutation(np.flatnonzero(labels == lab))
            for c, piece in zip(hs, np.array_split(idx, len(hs))):
                chunks[c].append(piece)
        for c in clients:
            parts[c] = np.sort(np.concatenate(chunks[int(c)])).astype(np.int64)
    empty = [i for i, p in enumerate(parts) if p.size == 0]
    if empty:
        raise ParameterError("n_clients", n_clients,
                             f"small enough that every client gets a sample (client {empty[0]} got none)")
    return parts, inferior


def pathological_classes(labels: np.ndarray, n_clients: int, classes_per_client: int, *,
                         random_state=0) -> list[np.ndarray]:
    """Pathological-n label skew ("Path(n)", seed 003 Sec. 5.1; "#C=n" in Li et al. 2022, NIID-Bench):
    every client holds exactly ``classes_per_client`` distinct classes.

    Client i's first class is i mod K (so every class is held when n_clients >= K); its other
    classes are drawn uniformly without replacement from the remaining K - 1. Each class's samples,
    shuffled, are split as evenly as possible among the clients that hold it (samples of classes
    nobody holds are unused). No rejection loop: one pass over clients, one over classes.
    """
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.size == 0:
        raise ParameterError("labels", labels.shape, "a non-empty 1-D array of class labels")
    classes, y = np.unique(labels, return_inverse=True)
    k = classes.size
    n_clients = check_int("n_clients", n_clients, 1, labels.size)
    n_per = check_int("classes_per_client", classes_per_client, 1, k)
    rng = check_random_state(random_state)
    held = np.zeros((n_clients, k), dtype=bool)
    for i in range(n_clients):
        first = i % k
        rest = rng.choice(np.delete(np.arange(k), first), size=n_per - 1, replace=False)
        held[i, first] = True
        held[i, rest] = True
    parts: list[list[np.ndarray]] = [[] for _ in range(n_clients)]
    for c in range(k):
        holders = np.flatnonzero(held[:, c])
        if holders.size == 0:
            continue
        pool = rng.permutation(np.flatnonzero(y == c))
        if pool.size < holders.size:
            raise ParameterError("n_clients", n_clients, f"small enough that each of the {holders.size} clients "
                                 f"holding class {classes[c]!r} gets a sample (it has {pool.size})")
        for i, chunk in zip(holders, np.array_split(pool, holders.size)):
            parts[i].append(chunk)
    return [np.sort(np.concatenate(p)) for p in parts]
