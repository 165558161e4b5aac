"""Timing used by every benchmark: best-of-``repeat`` wall-clock times, and the last result."""
import time


def best_of(fn, repeat: int = 3):
    """(best seconds over ``repeat`` calls of ``fn()``, the value of the last call)."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def best_of_interleaved(fns, repeat: int = 3):
    """Call each of ``fns`` in turn, ``repeat`` rounds (a, b, a, b, ...), so that a slow spell of a shared
    machine hits every side alike; returns [(best seconds, value of the last call)] in the order of ``fns``."""
    best, out = [float("inf")] * len(fns), [None] * len(fns)
    for _ in range(repeat):
        for j, fn in enumerate(fns):
            t = time.perf_counter()
            out[j] = fn()
            best[j] = min(best[j], time.perf_counter() - t)
    return list(zip(best, out))


def best_wall_and_cpu(fns, repeat: int = 3):
    """As ``best_of_interleaved``, with each side's best CPU seconds of this process too (on a shared machine the wall
    clock also counts the time other jobs held the core): [(best wall s, best CPU s, value of the last call)]."""
    wall, cpu, out = [float("inf")] * len(fns), [float("inf")] * len(fns), [None] * len(fns)
    for _ in range(repeat):
        for j, fn in enumerate(fns):
            c, t = time.process_time(), time.perf_counter()
            out[j] = fn()
            wall[j] = min(wall[j], time.perf_counter() - t)
            cpu[j] = min(cpu[j], time.process_time() - c)
    return list(zip(wall, cpu, out))
