"""The execution layer: independent units of work run in this process or on a Dask cluster.

``fedtheory check``, ``train`` and ``worst`` cut their work into :class:`Task` s (a check group, a training cell,
a chunk of a worst-case population) and hand them to an :class:`Executor`:

    from fedtheory.parallel import Task, make_executor

    with make_executor(workers=2) as ex:             # a Dask LocalCluster of 2 worker processes
        out = ex.run([Task("a", f, (1,)), Task("b", f, (2,))], retries=1, progress=True)
    out.results                                     # in task order, whatever order the tasks finished in
    out.failures                                    # the tasks that failed every attempt, by name, with their error
    print(out.summary())                            # counts, retried and failed tasks

* :func:`make_executor`: ``workers=None, scheduler=None`` -> :class:`SerialExecutor` (this process, task order);
  ``workers=N`` -> :class:`DaskExecutor` on a new ``LocalCluster`` of N processes; ``scheduler=ADDRESS`` -> a
  running Dask cluster (one started by ``dask scheduler`` / ``dask worker``, dask-jobqueue, Kubernetes, ...).
* Retries: a task that raises, or whose worker dies under it, is submitted again, ``retries`` times (default 1);
  one that fails every attempt is reported in :attr:`Outcome.failures` and the others still finish. A deliberate
  ``FedTheoryError`` (bad input, an unusable run directory: it fails the same way every time) is not retried.
* Results come back in task order; Dask gets the tasks longest first (``Task.cost``), which never changes a
  result: a unit of work computes the same arithmetic wherever and whenever it runs.
* Worker threads: each worker process runs one task at a time with ``threads`` BLAS/OpenMP/torch threads
  (default 1): N single-threaded workers fill N cores without oversubscription, the small matrices here gain
  little from threaded BLAS, and a thread count fixed by the command rather than by the host keeps threaded
  reductions summing in the same order on every machine.
* Dask is the optional extra ``fedtheory[dask]``; without it, asking for workers is a ParameterError naming
  ``pip install 'fedtheory[dask]'``.
"""
from __future__ import annotations

import os
import time
import traceback
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from ._validation import FedTheoryError, ParameterError, check_int

__all__ = ["DASK_EXTRA", "INSTALL_DASK", "DaskExecutor", "Executor", "Outcome", "Progress", "SerialExecutor", "Task",
           "TaskFailure", "dask_available", "make_executor", "require_dask", "visible_gpus"]

DASK_EXTRA = "dask"
INSTALL_DASK = "pip install 'fedtheory[dask]'"
CONNECT_TIMEOUT_S = 10.0  # how long --scheduler ADDRESS may take to answer
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
                    "NUMEXPR_NUM_THREADS")


@dataclass(frozen=True)
class Task:
    """One unit of work: ``fn(*args, **kwargs)``, run once (or again, on a failure) somewhere.

    name: unique within a run; what progress, failures and summaries call it. cost: the expected run time in any
    unit (longer tasks are submitted first; it never changes a result). resources: what a Dask worker must
    advertise to run it (e.g. ``{"GPU": 1}``); ignored by the serial executor. ``fn`` must be importable on the
    workers (a module-level function of an installed package), its arguments and result picklable."""

    name: str
    fn: Callable[..., Any]
    args: tuple = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    cost: float = 1.0
    resources: Mapping[str, float] = field(default_factory=dict)


@dataclass
class TaskFailure:
    """A task that failed every attempt: its name, the last error (``Type: message``), the traceback, attempts."""

    name: str
    error: str
    traceback: str = ""
    attempts: int = 1
    exception: BaseException | None = field(default=None, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "error": self.error, "attempts": self.attempts}


@dataclass
class Outcome:
    """What :meth:`Executor.run` returns. results: one per task, in task order (None where the task failed);
    failures: the tasks that failed every attempt; retried: task name -> the errors of its failed attempts that
    were retried (a task in both lists failed every attempt)."""

    names: list[str]
    results: list[Any]
    failures: list[TaskFailure]
    retried: dict[str, list[str]]
    workers: int
    executor: str
    elapsed_s: float

    @property
    def ok(self) -> bool:
        return not self.failures

    def failed(self, name: str) -> TaskFailure | None:
        return next((f for f in self.failures if f.name == name), None)

    def summary(self) -> str:
        """One line of counts, then one line per retried or failed task."""
        done = len(self.names) - len(self.failures)
        head = (f"{len(self.names)} task(s) on {self.executor} ({self.workers} worker(s)) in {self.elapsed_s:.1f} s: "
                f"{done} done, {len(self.retried)} retried, {len(self.failures)} failed")
        lines = [head]
        failed = {f.name for f in self.failures}
        for name, errors in self.retried.items():
            if name not in failed:
                lines.append(f"  retried {name} (succeeded on attempt {len(errors) + 1}; before: {errors[-1]})")
        for f in self.failures:
            lines.append(f"  FAILED {f.name} after {f.attempts} attempt(s): {f.error}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"executor": self.executor, "workers": self.workers, "tasks": len(self.names),
                "elapsed_s": round(self.elapsed_s, 3), "retried": {k: list(v) for k, v in self.retried.items()},
                "failed": [f.to_json() for f in self.failures]}


class Progress:
    """One progress bar over the tasks of one or more :meth:`Executor.run` calls (tqdm, on stderr)."""

    def __init__(self, total: int, desc: str, workers: int, enabled: bool = True):
        self.bar = None
        self.retried = self.failed = 0
        if enabled:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc=f"{desc} [{workers} worker{'s' if workers != 1 else ''}]", unit="task",
                            dynamic_ncols=True)

    def update(self, n: int = 1, postfix: str | None = None) -> None:
        if self.bar is not None:
            self.bar.update(n)
            extra = [x for x in (f"{self.retried} retried" if self.retried else "",
                                 f"{self.failed} failed" if self.failed else "", postfix or "") if x]
            if extra:
                self.bar.set_postfix_str(", ".join(extra))

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _error_text(exc: BaseException) -> str:
    if type(exc).__name__ == "KilledWorker":
        last = getattr(exc, "last_worker", None)
        where = getattr(last, "address", None) or str(last or "")
        return f"KilledWorker: the worker process died while running it{f' ({where})' if where else ''}"
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 500 else text[:497] + "..."


def _retryable(exc: BaseException) -> bool:
    return not isinstance(exc, FedTheoryError)


def _check_tasks(tasks: Sequence[Task], retries: int) -> None:
    check_int("retries", retries, 0)
    names = [t.name for t in tasks]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise ParameterError("tasks", dup, "tasks with distinct names")


class Executor:
    """Runs :class:`Task` s; see the module docstring. Use as a context manager (``close`` on exit)."""

    kind = "abstract"
    threads: int | None = None
    outcomes: list[Outcome]  # every run's outcome, in order (see ``summary``)

    @property
    def workers(self) -> int:
        raise NotImplementedError

    @property
    def description(self) -> str:
        return self.kind

    def resources(self) -> dict[str, float]:
        """The resources the workers advertise, summed (e.g. ``{"GPU": 2}``); {} for the serial executor."""
        return {}

    def share(self, obj: Any) -> Any:
        """A handle to pass to several tasks in place of a large argument, sent to the workers once."""
        return obj

    def run(self, tasks: Iterable[Task], *, retries: int = 1, progress: bool | Progress = False,
            desc: str = "tasks", fatal: tuple[type[BaseException], ...] = ()) -> Outcome:
        """Run ``tasks``; return their results in task order with the failures and retries (:class:`Outcome`).

        retries: further attempts of a failed task (not for a FedTheoryError); progress: a bar over the tasks (or a
        :class:`Progress` shared by several calls); fatal: exception types that stop the whole run at once
        (re-raised here after the other tasks are cancelled), e.g. a user's interruption."""
        raise NotImplementedError

    def close(self) -> None:
        pass

    def _record(self, outcome: Outcome) -> Outcome:
        if not hasattr(self, "outcomes"):
            self.outcomes = []
        self.outcomes.append(outcome)
        return outcome

    def combined(self, since: int = 0) -> Outcome:
        """The outcomes of the runs since run ``since`` as one (e.g. every generation of a search)."""
        outs = getattr(self, "outcomes", [])[since:]
        retried: dict[str, list[str]] = {}
        for o in outs:
            for k, v in o.retried.items():
                retried.setdefault(k, []).extend(v)
        return Outcome([n for o in outs for n in o.names], [r for o in outs for r in o.results],
                       [f for o in outs for f in o.failures], retried,
                       max([o.workers for o in outs], default=self.workers), self.description,
                       sum(o.elapsed_s for o in outs))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _progress(self, progress, n: int, desc: str) -> tuple[Progress, bool]:
        if isinstance(progress, Progress):
            return progress, False
        return Progress(n, desc, self.workers, enabled=bool(progress)), True

    def to_json(self) -> dict[str, Any]:
        return {"executor": self.description, "workers": self.workers, "threads_per_worker": self.threads}


class SerialExecutor(Executor):
    """Every task in this process, in task order, one after the other (the same retry rule as Dask's)."""

    kind = "serial"

    def __init__(self, threads: int | None = None):
        # informational: callers that can set their threads (training cells) use it
        self.threads = None if threads is None else check_int("threads", threads, 1)

    @property
    def workers(self) -> int:
        return 1

    @property
    def description(self) -> str:
        return "this process (serial)"

    def run(self, tasks: Iterable[Task], *, retries: int = 1, progress: bool | Progress = False,
            desc: str = "tasks", fatal: tuple[type[BaseException], ...] = ()) -> Outcome:
        tasks = list(tasks)
        _check_tasks(tasks, retries)
        t0 = time.perf_counter()
        bar, own = self._progress(progress, len(tasks), desc)
        results: list[Any] = [None] * len(tasks)
        failures: list[TaskFailure] = []
        retried: dict[str, list[str]] = {}
        try:
            for i, t in enumerate(tasks):
                for attempt in range(1, retries + 2):
                    try:
                        results[i] = t.fn(*t.args, **dict(t.kwargs))
                        break
                    except Exception as exc:  # noqa: BLE001 - reported by name, the other tasks go on
                        if isinstance(exc, fatal):
                            raise
                        if attempt <= retries and _retryable(exc):
                            retried.setdefault(t.name, []).append(_error_text(exc))
                            bar.retried += 1
                            continue
                        failures.append(TaskFailure(t.name, _error_text(exc), traceback.format_exc()[-4000:], attempt,
                                                    exc))
                        bar.failed += 1
                        break
                bar.update(1)
        finally:
            if own:
                bar.close()
        return self._record(Outcome([t.name for t in tasks], results, failures, retried, 1, self.description,
                                    time.perf_counter() - t0))


class DaskExecutor(Executor):
    """Tasks on a Dask ``distributed`` cluster through a ``Client``: :meth:`local` starts a ``LocalCluster``,
    :meth:`connect` joins a running scheduler. Each attempt is one Dask task with a fresh key; a failed attempt
    (an exception, or ``KilledWorker`` when its worker died) is resubmitted by this client, so every retry is
    counted and named. At most as many tasks are in flight as the workers have task slots (threads), longest
    first: none waits parked on a busy worker, so a worker's death fails only the task it was running. On a
    cluster this executor started, the scheduler gives up on a task at the first worker death
    (``allowed_failures=0``) and leaves the retry to this client; a scheduler started elsewhere keeps its own
    ``distributed.scheduler.allowed-failures`` (default 3) before this client's retries."""

    kind = "dask"

    def __init__(self, client: Any, cluster: Any = None, threads: int | None = None):
        self.client = client
        self.cluster = cluster
        self.threads = threads

    @classmethod
    def local(cls, workers: int, threads: int = 1, resources: Mapping[str, float] | None = None,
              memory_limit: str | float | None = "auto", gpus: Sequence[str] | None = None) -> "DaskExecutor":
        """A ``LocalCluster`` of ``workers`` processes on this machine, one task at a time each, ``threads``
        BLAS/OpenMP/torch threads per process, each advertising ``resources``.

        gpus: CUDA device ids; worker i < len(gpus) sees only device gpus[i] (``CUDA_VISIBLE_DEVICES``) and
        advertises ``GPU=1``, the others see none. Default: the devices torch sees, when this process has imported
        torch already (``fedtheory train``), else none (``check`` and ``worst`` run on CPU workers)."""
        workers = check_int("workers", workers, 1)
        threads = check_int("threads", threads, 1)
        require_dask("--workers", workers)
        import logging

        import dask
        from distributed import Client, LocalCluster, Nanny, Scheduler, SpecCluster

        env = {v: str(threads) for v in THREAD_VARIABLES}
        gpu_ids = [str(g) for g in (visible_gpus() if gpus is None else gpus)]
        quiet = logging.CRITICAL
        # no dashboard; the scheduler's HTTP endpoints on a free local port; the first worker death fails the task
        # (this client retries it, and counts it)
        sched = {"allowed_failures": 0, "dashboard_address": "127.0.0.1:0"}
        # Dask's default MALLOC_TRIM_THRESHOLD_=65536 turns off glibc's adaptive mmap threshold: every large tensor
        # is then a fresh mmap (page faults); it measured a training cell 2.2x slower (2.97 s vs 1.37 s)
        with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}):
            if not gpu_ids:
                cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                                       silence_logs=quiet, env=env, scheduler_kwargs=sched, memory_limit=memory_limit,
                                       **({"resources": dict(resources)} if resources else {}))
            else:
                specs = {}
                for i in range(workers):
                    res = dict(resources or {})
                    if i < len(gpu_ids):
                        res["GPU"] = 1
                    specs[i] = {"cls": Nanny, "options": {
                        "nthreads": 1, "memory_limit": memory_limit, "silence_logs": quiet, "resources": res or None,
                        "env": {**env, "CUDA_VISIBLE_DEVICES": gpu_ids[i] if i < len(gpu_ids) else ""}}}
                cluster = SpecCluster(workers=specs, silence_logs=quiet, scheduler={
                    "cls": Scheduler, "options": {"host": "127.0.0.1", "dashboard": False, **sched}})
        try:
            client = Client(cluster, set_as_default=False)
        except BaseException:
            cluster.close()
            raise
        return cls(client, cluster, threads)

    @classmethod
    def connect(cls, address: str, timeout: float | None = None) -> "DaskExecutor":
        """A running Dask scheduler at ``address`` (e.g. ``tcp://host:8786``); its workers' threads and
        resources are theirs (``dask worker --nthreads 1 --resources GPU=1``)."""
        require_dask("--scheduler", address)
        from distributed import Client

        timeout = CONNECT_TIMEOUT_S if timeout is None else timeout
        if not isinstance(address, str) or not address.strip():
            raise ParameterError("--scheduler", address,
                                 "the address of a running Dask scheduler, e.g. tcp://host:8786")
        try:
            client = Client(address, timeout=f"{timeout}s", set_as_default=False)
        except (OSError, TimeoutError, ValueError, TypeError) as exc:
            raise ParameterError("--scheduler", address, f"the address of a running Dask scheduler, e.g. "
                                 f"tcp://host:8786 (connecting failed: {type(exc).__name__}: {exc})") from None
        return cls(client, None, None)

    @property
    def workers(self) -> int:
        return len(self.client.nthreads())

    @property
    def description(self) -> str:
        if self.cluster is not None:
            return "Dask LocalCluster"
        return f"Dask scheduler {self.client.scheduler.address}"

    def resources(self) -> dict[str, float]:
        try:
            info = self.client.scheduler_info(n_workers=-1)  # newer distributed lists 5 workers by default
        except TypeError:
            info = self.client.scheduler_info()
        total: dict[str, float] = {}
        for w in info["workers"].values():
            for k, v in (w.get("resources") or {}).items():
                total[k] = total.get(k, 0.0) + float(v)
        return total

    def share(self, obj: Any) -> Any:
        return self.client.scatter(obj, broadcast=True, hash=False)

    def worker_pids(self) -> dict[str, int]:
        """Worker address -> process id (for fault tests and diagnostics)."""
        return self.client.run(os.getpid)

    def run(self, tasks: Iterable[Task], *, retries: int = 1, progress: bool | Progress = False,
            desc: str = "tasks", fatal: tuple[type[BaseException], ...] = ()) -> Outcome:
        from collections import deque

        from distributed import as_completed

        tasks = list(tasks)
        _check_tasks(tasks, retries)
        have = self.resources()
        for t in tasks:
            for k, v in t.resources.items():
                if have.get(k, 0.0) < v:
                    raise ParameterError("resources", dict(t.resources), f"resources some worker advertises "
                                         f"(task {t.name}; the workers have {have or 'none'})")
        t0 = time.perf_counter()
        bar, own = self._progress(progress, len(tasks), desc)
        n = len(tasks)
        results: list[Any] = [None] * n
        failures: list[TaskFailure] = []
        retried: dict[str, list[str]] = {}
        attempts = [0] * n
        queue = deque(sorted(range(n), key=lambda i: (-float(tasks[i].cost), i)))  # longest first
        run_id = uuid.uuid4().hex[:8]
        index: dict[str, int] = {}
        live: dict[str, Any] = {}
        pending = as_completed(loop=self.client.loop)
        slots = {"n": 0, "at": 0.0}

        def capacity() -> int:  # the cluster's task slots, re-read at most once a second (workers come and go)
            if time.perf_counter() - slots["at"] > 1.0:
                slots["n"], slots["at"] = max(1, sum(self.client.nthreads().values())), time.perf_counter()
            return slots["n"]

        def fill() -> None:
            # no more tasks in flight than slots: a task is never parked on a busy worker, so a worker that dies
            # takes down exactly the task it was running (which alone counts the failed attempt)
            while queue and len(live) < capacity():
                i = queue.popleft()
                t = tasks[i]
                attempts[i] += 1
                key = f"fedtheory-{t.name}-{run_id}-{attempts[i]}"
                index[key] = i
                fut = self.client.submit(t.fn, *t.args, key=key, pure=False, resources=dict(t.resources) or None,
                                         **dict(t.kwargs))
                live[key] = fut
                pending.add(fut)

        def failed(i: int, exc: BaseException, tb=None) -> None:
            t = tasks[i]
            if attempts[i] <= retries and _retryable(exc):
                retried.setdefault(t.name, []).append(_error_text(exc))
                bar.retried += 1
                bar.update(0)
                slots["at"] = 0.0  # a worker may have died: count the slots again
                queue.appendleft(i)
                return
            text = "".join(traceback.format_tb(tb))[-4000:] if tb is not None else ""
            failures.append(TaskFailure(t.name, _error_text(exc), text, attempts[i], exc))
            bar.failed += 1
            bar.update(1)

        try:
            fill()
            for fut in pending:
                live.pop(fut.key, None)
                i = index[fut.key]
                if fut.status == "finished":
                    try:
                        results[i] = fut.result()
                        bar.update(1)
                    except Exception as exc:  # noqa: BLE001 - the result could not be fetched (its worker died)
                        failed(i, exc)
                else:
                    exc = fut.exception()
                    if isinstance(exc, fatal):
                        raise exc
                    failed(i, exc, fut.traceback())
                fut.release()
                fill()
        except BaseException:
            for f in live.values():
                f.cancel()
            raise
        finally:
            if own:
                bar.close()
        failures.sort(key=lambda f: _index_of(tasks, f.name))
        return self._record(Outcome([t.name for t in tasks], results, failures, retried, self.workers,
                                    self.description, time.perf_counter() - t0))

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()


def _index_of(tasks: Sequence[Task], name: str) -> int:
    return next(i for i, t in enumerate(tasks) if t.name == name)


def visible_gpus() -> list[str]:
    """The CUDA devices of this process (ids as CUDA_VISIBLE_DEVICES names them), if it has imported torch already
    and torch sees some; else [] (never imports torch: ``check`` and ``worst`` stay light)."""
    import sys

    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return []
    n = torch.cuda.device_count()
    vis = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = [x.strip() for x in vis.split(",") if x.strip()] if vis else [str(i) for i in range(n)]
    return ids[:n]


def dask_available() -> bool:
    """Whether Dask distributed (the ``fedtheory[dask]`` extra) can be imported."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


def require_dask(parameter: str = "--workers", value: Any = None) -> None:
    """A ParameterError naming ``pip install 'fedtheory[dask]'`` when Dask distributed is missing."""
    if not dask_available():
        raise ParameterError(parameter, value, f"absent unless the optional extra is installed: {INSTALL_DASK} "
                             "(Dask distributed is not importable here)")


def make_executor(workers: int | None = None, scheduler: str | None = None, *, threads: int = 1,
                  resources: Mapping[str, float] | None = None, gpus: Sequence[str] | None = None) -> Executor:
    """The executor a command asked for: neither -> :class:`SerialExecutor`; ``workers=N`` -> a LocalCluster of
    N processes (``threads`` threads each, advertising ``resources``; ``gpus``: see :meth:`DaskExecutor.local`);
    ``scheduler=ADDRESS`` -> that cluster."""
    if workers is not None and scheduler is not None:
        raise ParameterError("--scheduler", scheduler, "absent when --workers is given (one or the other)")
    if workers is not None:
        if isinstance(workers, bool):
            raise ParameterError("--workers", workers, "an integer >= 1")
        check_int("--workers", workers, 1)
        check_int("--worker-threads", threads, 1)
        return DaskExecutor.local(int(workers), threads=int(threads), resources=resources, gpus=gpus)
    if scheduler is not None:
        return DaskExecutor.connect(scheduler)
    return SerialExecutor()
