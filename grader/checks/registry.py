"""The check registry: every check the grader knows, as data.

A check is one behaviour of LAB_SPEC. It has a stable id (``stepN/<behaviour>``),
a step, points, a one-line title, a hint for the learner, and two functions:

* ``probes(rng)`` runs in the **parent**. It draws this check's random cases
  from ``rng`` (a ``random.Random`` seeded from the run seed and the check id,
  so ``--only`` replays the very same cases) and returns a list of
  :class:`Probe` -- plain JSON data describing what the child must call.
* ``judge(probes, observations)`` runs in the **parent**. It receives the same
  probes and, for each, the JSON observation the child sent back (or ``None``
  when the child died before sending it), and returns a :class:`Verdict`.

Nothing that decides a score runs in the process that holds learner code: the
child only executes probes (``grader.engine.probes``) and reports what it saw.

Example::

    >>> from grader.checks.registry import checks_for
    >>> [check.step for check in checks_for(only=["step2/type_bool_limit"])]
    [2]
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from grader.engine.wire import JsonDict, to_wire


class UnknownCheck(KeyError):
    """A check id that the registry does not hold; the message lists the unknown ids."""

    def __str__(self) -> str:  # KeyError's own str() quotes the message
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class Probe:
    """One thing for the child to do, as JSON: a probe kind and its parameters.

    ``kind`` names a function in ``grader.engine.probes.PROBES``; ``params`` must be
    JSON-serialisable (the child decodes tagged values such as the bool trap
    with ``grader.engine.encode.decode``).
    """

    kind: str
    params: JsonDict = field(default_factory=dict)
    label: str = ""  # the learner-facing call, as Python text, shown if the child dies here

    def to_json(self) -> JsonDict:
        """What the child receives: the fields the probe protocol declares (:mod:`grader.engine.wire`), no others.

        Checks keep what they expect beside the call (the spec's answer, the
        expected runs, labels); only declared fields travel to the process that
        runs learner code, so no learner code can read the answers off its
        caller's frames, whatever a judge-side field is called.

        >>> Probe("graph_nodes", {"builder": "build_naive", "case": {"reason": "x"}}).to_json()
        {'kind': 'graph_nodes', 'params': {'builder': 'build_naive'}}
        """
        return to_wire({"kind": self.kind, "params": self.params})


@dataclass(frozen=True)
class Verdict:
    """The judgement of one check.

    ``call`` is the learner-facing call that was made, written as Python
    (e.g. ``validate_args('stock_lookup', {'sku': 'SKU-1001', ...})``);
    ``expected``/``got`` are short human-readable strings; ``message`` says
    what went wrong in one sentence. All empty when the check passed.
    """

    passed: bool
    call: str = ""
    expected: str = ""
    got: str = ""
    message: str = ""

    @classmethod
    def ok(cls) -> Verdict:
        return cls(passed=True)

    @classmethod
    def fail(cls, message: str, *, call: str = "", expected: Any = "", got: Any = "") -> Verdict:
        return cls(False, call=call, expected=_text(expected), got=_text(got), message=message)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)


ProbeFactory = Callable[[random.Random], "list[Probe]"]
# What the step child sent back for one probe: its JSON observation, or None when the child died before
# sending it. Any on purpose: judges read it as the JSON they expect, and safe_judge (grader.checks._common)
# turns a read that fails (a learner value of any shape, a missing key, None) into a failed verdict.
Observation = Any
Judge = Callable[[list[Probe], list[Observation]], Verdict]


@dataclass(frozen=True)
class Check:
    """One registered check (see the module docstring)."""

    id: str
    step: int
    points: int
    title: str
    hint: str
    probes: ProbeFactory
    judge: Judge
    rules: tuple[str, ...] = ()  # LAB_SPEC rules this check covers (for the table of docs/checks.md)


CHECKS: dict[str, Check] = {}


def register(check: Check) -> Check:
    """Add a check to the registry; ids are unique and start with ``step<N>/``."""
    if check.id in CHECKS:
        raise ValueError(f"duplicate check id {check.id!r}")
    if not check.id.startswith(f"step{check.step}/"):
        raise ValueError(f"check id {check.id!r} must start with 'step{check.step}/'")
    CHECKS[check.id] = check
    return check


class CheckRandom(random.Random):
    """A check's random source that can also hand out cases shared with other checks.

    ``shared(name)`` gives the same stream to every check of the run that asks
    for ``name``: checks that draw their scenario from it send identical
    probes, and the engine runs an identical ``fresh`` probe once per step
    and gives its observation to each check (see ``grader.grading``).

    >>> a, b = check_rng(5, "step6/x"), check_rng(5, "step6/y")
    >>> a.shared("orders").random() == b.shared("orders").random()
    True
    """

    def __init__(self, seed: int, check_id: str) -> None:
        super().__init__(f"{seed}:{check_id}")
        self.run_seed = seed

    def shared(self, name: str) -> random.Random:
        """A fresh ``random.Random`` for ``name``, the same for every check of this run."""
        return random.Random(f"{self.run_seed}:shared:{name}")


def shared_rng(rng: random.Random, name: str) -> random.Random:
    """``rng.shared(name)`` for a :class:`CheckRandom`; for a plain ``Random`` (tests), one drawn from it.

    >>> shared_rng(check_rng(1, "a"), "n").random() == shared_rng(check_rng(1, "b"), "n").random()
    True
    """
    if isinstance(rng, CheckRandom):
        return rng.shared(name)
    return random.Random(f"{rng.random()}:shared:{name}")


def check_rng(seed: int, check_id: str) -> CheckRandom:
    """The random source of one check: same seed and id, same cases."""
    return CheckRandom(seed, check_id)


def checks_for(steps: list[int] | None = None, only: list[str] | None = None) -> list[Check]:
    """Registered checks by step, in registry order within a step, filtered by step numbers and/or ids.

    By step first: a module that imports a step module before the registry
    loads them all (``from grader.checks import step7``) registers that
    step's checks first, and the order must not depend on it.
    """
    _load_all()
    selected = sorted(CHECKS.values(), key=lambda check: check.step)  # stable: registry order within a step
    if steps:
        selected = [c for c in selected if c.step in steps]
    if only:
        unknown = sorted(set(only) - set(CHECKS))
        if unknown:
            raise UnknownCheck(f"unknown check id(s): {', '.join(unknown)}")
        selected = [c for c in selected if c.id in only]
    return selected


STEP_MODULES = tuple(f"grader.checks.step{n}" for n in range(1, 12))


def _load_all() -> None:
    # The step modules register their checks when imported: the one import
    # cycle of the grader (the step modules import this registry).
    for name in STEP_MODULES:
        importlib.import_module(name)
