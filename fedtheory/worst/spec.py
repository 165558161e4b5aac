"""The public declaration a bound needs for the worst-case search: :class:`WorstCaseSpec`.

A spec says, for one bound record:
* ``space``: the problem class, a parametrised family whose ``decode(theta)`` returns instances that satisfy
  the record's assumptions by construction (e.g. :class:`~fedtheory.worst.quadratic.QuadraticClass`);
* ``algorithm`` and ``config``: what runs on each instance (one batched ``simulate`` per population);
* ``measure(trace, instances, which)``: the measured left side per run (``which[r]``: run r's instance);
* ``constants_from_instance(instances, trace, which)``: the values the record's bound is evaluated at, per
  instance (arrays of length P) or shared (scalars): the stated constants where the class pins them, the
  instance's exact or measured constants where the statement takes them from the instance;
* ``seeds``: one per run of an instance (one seed and an Exact oracle: deterministic, the comparison is exact);
* ``settings``: the run's structural settings (checked against the record's ``requires``);
* ``params``: the keyword arguments its factory was called with (stored in the instance file for replay);
* ``runner`` (optional): how a population is run, ``runner(spec, instances, seeds) -> fedtheory.sim.Trace`` (what
  ``simulate`` returns; anything else is refused, naming the runner), for runs that need more than the default
  call: a setting taken from each instance (a step 1/L of the instance's own L: docs/extending.md, "A worst-case
  runner of your own"), or more than one data set per instance (coupled runs on neighbouring data sets for uniform
  stability, ``coupled_runner``). Its runs are instance-major, run r = (instance r // len(seeds), seed r %
  len(seeds)), len(instances) x len(seeds) of them or a multiple (2 per logical run for a coupled pair);
  ``measure`` and ``constants_from_instance`` read that trace. Default: ONE ``simulate`` call with instance p as
  data variant p, once per seed (instance-major); ``measure`` then receives ``which`` = each logical run's
  instance, as usual;
* ``bound_per_run``: the right side depends on the run's own measurements (FedMRUR's sum_t d_t, the recursion of
  FedInit's Lemma 4): ``constants_from_instance`` returns per-run values (leading axis R = P x seeds), one bound
  per run; an instance's ratio uses the mean bound over its seeds, and the verdict compares left side and bound
  run by run (the paired gap);
* ``conditions``: conditions the declaration adds to the record's own (theory ``Condition`` records evaluated at
  the same values), e.g. where a printed statement as encoded is undefined: a failed one gives not_applicable;
* ``starts``: parameter vectors (rows of ``space``'s parameters) the search's first population includes, e.g. the
  instance of today's check, so that the worst case found is at least as bad as the check's.

A factory ``make(record_id, **params) -> WorstCaseSpec`` is registered with :func:`register_worst_case`, optionally with
a ``reference(seed) -> dict`` that takes the constants from today's ``fedtheory check`` result and reports its
ratio (``random_ratio``). Built-in records and plug-ins use the same call (see docs/worst-case.md).
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .._validation import FedTheoryError, ParameterError


@dataclass(frozen=True)
class WorstCaseSpec:
    """What the worst-case search of one bound record needs: the class searched, what runs on each instance, the
    measured left side and the values the bound is evaluated at (the module docstring and docs/worst-case.md,
    "A plug-in's bound").

    Built by a factory ``make(record_id, **params)`` registered with :func:`register_worst_case`; searched by
    :func:`worst_case`.

    Parameters
    ----------
    record_id : str
        The bound record searched (its registered id).
    space : object
        The problem class: ``decode(theta)`` returns instances that satisfy the record's assumptions by
        construction; it also has ``bounds``, ``n_params`` and ``random(n, rng)``, and may have ``violations(inst)``
        and ``instance_type`` (e.g. :class:`QuadraticClass`).
    algorithm : Algorithm
        The ``fedtheory.sim`` algorithm run on every instance.
    config : RunConfig
        The run settings (``simulate``'s ``config``).
    measure : callable
        ``measure(trace, instances, which)``: the measured left side per logical run, (R,) or (m, R) for m
        statements per run (``which[r]``: run r's instance).
    constants_from_instance : callable
        ``constants_from_instance(instances, trace, which)``: the values the record's bound is evaluated at, by
        symbol: scalars (shared), arrays (P,) (per instance) or arrays broadcasting to (P, m); per run (leading
        axis R = P x seeds) where ``bound_per_run``.
    measures : tuple of str, default ()
        The engine's measures the runs record (``simulate``'s ``measures``).
    seeds : tuple of int, default (0,)
        One seed per run of an instance; more than one makes the spec stochastic (``stochastic``).
    settings : mapping of str to object, default {}
        The run's structural settings, checked against the record's ``requires``.
    params : mapping of str to object, default {}
        The keyword arguments the factory was called with (stored in the instance file for replay).
    note : str, default ""
        A note carried into the record.
    runner : callable, optional
        ``runner(spec, instances, seeds) -> fedtheory.sim.Trace``, instance-major runs (run r = instance
        r // len(seeds), seed r % len(seeds)), len(instances) x len(seeds) of them or a multiple (e.g.
        :func:`coupled_runner`). None: one ``simulate`` call with instance p as data variant p.
    bound_per_run : bool, default False
        Whether ``constants_from_instance`` returns per-run values (one bound per run; an instance's ratio uses the
        mean bound over its seeds).
    conditions : tuple, default ()
        Conditions (theory ``Condition`` records) added to the record's own; a failed one gives ``not_applicable``.
    starts : array_like, optional
        Parameter vectors (rows inside ``space.bounds``) that replace the last rows of the search's first
        population (at most popsize - 1 of them), e.g. the instance of today's check.
    record_override : Bound, optional
        A bound used in place of the registered record (e.g. ``fedtheory.testing.scaled_bound``'s).
    """

    record_id: str
    space: Any
    algorithm: Any
    config: Any
    measure: Callable[[Any, Any, np.ndarray], np.ndarray]
    constants_from_instance: Callable[[Any, Any, np.ndarray], Mapping[str, Any]]
    measures: tuple[str, ...] = ()
    seeds: tuple[int, ...] = (0,)
    settings: Mapping[str, Any] = field(default_factory=dict)
    params: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""
    runner: Callable[[Any, Any, tuple[int, ...]], Any] | None = None
    bound_per_run: bool = False
    conditions: tuple = ()
    starts: Any = None
    # a Bound used in place of the registered record (e.g. fedtheory.testing.scaled_bound's weakened bound)
    record_override: Any = None

    def extra_conditions_failed(self, values: Mapping[str, Any]) -> list[str]:
        """The declaration's own conditions that fail at ``values`` (the record's ``conditions_failed`` format)."""
        return self._condition_probe.conditions_failed(values) if self.conditions else []

    @cached_property
    def _condition_probe(self):
        from ..theory import Bound

        rec = self.record
        return Bound(id=rec.id + " (declared conditions)", paper=rec.paper, title=rec.title, source=rec.source,
                     symbols=rec.symbols, expr=rec.expr, definitions=rec.definitions, conditions=tuple(self.conditions))

    @property
    def record(self):
        """The bound record: ``record_override`` if given, else the registered ``record_id``."""
        if self.record_override is not None:
            return self.record_override
        from ..plugins import record

        return record(self.record_id)

    @property
    def stochastic(self) -> bool:
        return len(self.seeds) > 1


@dataclass(frozen=True)
class WorstCaseEntry:
    record_id: str
    make: Callable[..., WorstCaseSpec]
    reference: Callable[..., Mapping[str, Any]] | None = None
    description: str = ""


_REGISTRY: dict[str, WorstCaseEntry] = {}


def register_worst_case(record_id: str, make: Callable[..., WorstCaseSpec], *,
                        reference: Callable[..., Mapping[str, Any]] | None = None, description: str = "") -> None:
    """Declare that ``record_id`` can be searched (``fedtheory worst ID``); a later call for the same id replaces the
    earlier declaration.

    Parameters
    ----------
    record_id : str
        The bound record.
    make : callable
        ``make(record_id, **params) -> WorstCaseSpec``; its ``int`` and ``float`` annotations are checked before it
        is called (:func:`make_spec`).
    reference : callable, optional
        ``reference(seed, **selection) -> {"params": ..., "random_ratio": ..., "label": ...}``: the constants of
        today's check (``fedtheory check``), which :func:`run_worst` starts from.
    description : str, default ""
        One line ``fedtheory worst --list`` prints beside the id.
    """
    _REGISTRY[record_id] = WorstCaseEntry(record_id, make, reference, description)


def worst_case_entries() -> dict[str, WorstCaseEntry]:
    from ..plugins import load_plugins

    load_plugins()  # a paper plug-in registers its declarations (the built-in papers too) when it is imported

    return dict(_REGISTRY)


def entry(record_id: str) -> WorstCaseEntry:
    entries = worst_case_entries()
    if record_id not in entries:
        raise ParameterError("ID", record_id, "a record with a worst-case declaration: " + ", ".join(sorted(entries))
                             + " (load a plug-in's with --plugin)")
    return entries[record_id]


#: The largest magnitude an integer parameter of a spec factory may have (T, K, C, d, runs, ...: sizes; a parameter
#: whose name ends in "seed" is exempt). Checked before the factory runs, so that no factory builds anything from
#: T = 1e308 or runs = 1e8; the search and replay then check the size of the simulation itself (search.check_size).
MAX_INT_PARAM = 10**6


def _annotation_kind(annotation: Any) -> str | None:
    """'integer', 'real' or None (anything else) for a factory parameter's annotation (a string under
    ``from __future__ import annotations``), None allowed beside it ('int | None', 'Optional[float]')."""
    import re

    if annotation is inspect.Parameter.empty:
        return None
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", None) or str(annotation)
    words = set(re.findall(r"[A-Za-z_][\w.]*", text)) - {"None", "Optional", "typing.Optional", "NoneType"}
    if words == {"int"}:
        return "integer"
    if words in ({"float"}, {"float", "int"}):
        return "real"
    return None


def check_params(make: Callable[..., Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` checked against ``make``'s annotations before it is called: a parameter annotated ``int`` must be
    an integer (an integral float becomes one: T=2.5 is refused, not rounded) of magnitude <= MAX_INT_PARAM; one
    annotated ``float``, a finite real number; None only where the annotation allows it. A ParameterError names the
    parameter."""
    import numbers

    try:
        sig = inspect.signature(make).parameters
    except (TypeError, ValueError):
        return dict(params)
    out = dict(params)
    for k, v in params.items():
        p = sig.get(k)
        kind = _annotation_kind(p.annotation) if p is not None else None
        if kind is None:
            continue
        if v is None:
            ann = p.annotation if isinstance(p.annotation, str) else str(p.annotation)
            if "None" in ann or "Optional" in ann:
                continue
            raise ParameterError(k, v, f"{'an integer' if kind == 'integer' else 'a finite real number'} (not None)")
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not np.isfinite(float(v)):
            raise ParameterError(k, v, "an integer" if kind == "integer" else "a finite real number")
        if kind == "integer":
            if not isinstance(v, numbers.Integral) and not float(v).is_integer():
                raise ParameterError(k, v, f"an integer ({getattr(make, '__name__', 'the spec')} declares {k}: int; "
                                           f"it is not rounded)")
            if abs(v) > MAX_INT_PARAM and not k.endswith("seed"):
                raise ParameterError(k, v, f"an integer of magnitude at most {MAX_INT_PARAM} (the stated limit on a "
                                           f"spec's integer parameters: sizes such as T, K, C, d and runs)")
            out[k] = int(v)
    return out


def make_spec(record_id: str, params: Mapping[str, Any]) -> WorstCaseSpec:
    """The spec of ``record_id`` built by its registered factory from ``params``.

    Parameters
    ----------
    record_id : str
        A record with a worst-case declaration (:func:`register_worst_case`).
    params : mapping of str to object
        The factory's keyword arguments (a ``record_id`` key is ignored). Checked against the factory's annotations
        first: an ``int`` parameter must be an integer (an integral float becomes one) of magnitude at most
        ``MAX_INT_PARAM`` (10^6; a name ending in "seed" is exempt), a ``float`` one a finite real number, None
        only where the annotation allows it.

    Returns
    -------
    WorstCaseSpec
        What the factory returns.

    Raises
    ------
    ParameterError
        ``record_id`` has no declaration, a parameter fails its check, or the factory does not accept the names.
    """
    e = entry(record_id)
    params = check_params(e.make, {k: v for k, v in params.items() if k != "record_id"})
    try:
        return e.make(record_id, **params)
    except TypeError as exc:
        raise ParameterError("--set", sorted(params), f"names the spec of {record_id} accepts ({exc})") from None


def parse_sets(items: Sequence[str]) -> dict[str, Any]:
    """NAME=VALUE strings -> {name: float or int}; bad input names the parameter."""
    out: dict[str, Any] = {}
    for it in items:
        if "=" not in it:
            raise ParameterError("--set", it, "NAME=VALUE (e.g. --set T=50)")
        k, v = it.split("=", 1)
        try:
            num = float(v)
        except ValueError:
            raise ParameterError(k.strip(), v, "a number") from None
        if not np.isfinite(num):
            raise ParameterError(k.strip(), v, "a finite number")
        out[k.strip()] = int(num) if num.is_integer() and "." not in v and "e" not in v.lower() else num
    return out


class WorstCaseError(FedTheoryError):
    pass
