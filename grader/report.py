"""The result of grading one submission: plain data, no rendering.

Renderers (``grader.render``), the notebook widget, the batch gradebook and
the Gradescope writer all read a :class:`Report` and add no judgement.

Example::

    >>> r = Report(seed=7, path="tools.py", checks=[
    ...     CheckResult(id="step1/names", step=1, passed=True, points=2, max_points=2,
    ...                 title="Data names")])
    >>> r.score, r.max_score, r.steps[1]["passed"]
    (2, 2, True)
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any

STEPS = tuple(range(1, 12))  # part one: steps 1-8; part two (LAB_SPEC): steps 9-11
SEED_RANGE = 1_000_000  # six digits at most: short enough to type in a replay command


def new_seed(avoid: int | None = None) -> int:
    """A new random seed for a run's cases, different from ``avoid`` (the last one shown).

    >>> 0 <= new_seed() < SEED_RANGE, new_seed(avoid=5) != 5
    (True, True)
    """
    while True:
        seed = secrets.randbelow(SEED_RANGE)
        if seed != avoid:
            return seed


def clean_text(text: object) -> str:
    """Learner text made encodable: a lone surrogate becomes U+FFFD, everything else stays.

    Exception messages, return values and output come from learner code and
    can hold lone surrogates (``"\\ud800"``), which no UTF-8 file, pipe or
    terminal accepts: one such string must not stop a whole class's outputs.
    Cleaned once, where text enters a :class:`Report`, every writer is safe.

    >>> clean_text("ok \\ud800 \\U0001f600") == "ok \\ufffd \\U0001f600"
    True
    """
    if text.__class__ is str and text.isascii():  # most text: no surrogate possible, no encoding tried
        return text
    text = str(text)
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:  # utf-16 pairs valid surrogates back up; lone ones are replaced
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


class FailureKind(str, Enum):
    """Who or what stopped a grading: the one word every reader of a :class:`Failure` branches on."""

    LEARNER = "learner"  # the learner's code: it does not import, is too large, is not UTF-8 text...
    GRADER = "grader"  # the grading machinery: an exception of the grader, a worker that died, a full disk
    TIME = "time"  # the submission's whole time budget ran out before its steps did
    REFUSED = "refused"  # the input was refused before grading: no tools.py, a link out of the class folder...


@dataclass(frozen=True)
class Failure:
    """Why a submission could not be graded as a whole, typed: ``kind`` says who failed, ``message`` what.

    One rule for batch, ``--resume``, the service and every export: a failure
    of the grading machinery (:attr:`retry`) is graded again and never stored
    or counted as a grade.

    >>> Failure(FailureKind.GRADER, "worker died").retry, Failure("learner", "SyntaxError").retry
    (True, False)
    >>> Failure.from_dict(Failure("time", "over 60 s").to_dict())
    Failure(kind=<FailureKind.TIME: 'time'>, message='over 60 s')
    """

    kind: FailureKind
    message: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", FailureKind(self.kind))
        object.__setattr__(self, "message", clean_text(self.message))

    @property
    def retry(self) -> bool:
        """Whether the machinery failed, not the submission: grade it again, never count it."""
        # Only the machinery's own failures. A submission that used up its whole time
        # budget is the learner's (each step and the import have bounds of their own, so an
        # honest module ends well inside it): it counts, as tests/test_batch.py's resume test says.
        return self.kind is FailureKind.GRADER

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "message": self.message}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Failure | None:
        return cls(data["kind"], data.get("message", "")) if data else None

    @classmethod
    def from_text(cls, message: str) -> Failure | None:
        """The failure an untyped error text stands for (reports stored before failures had a kind).

        Read from the prefixes the grader used to write; any other text is the learner's.

        >>> Failure.from_text("the grading process died").kind.value, Failure.from_text("SyntaxError").kind.value
        ('grader', 'learner')
        >>> Failure.from_text("grading stopped: over the time limit of 60 s").kind.value, Failure.from_text("")
        ('time', None)
        """
        if not message:
            return None
        for kind, marks in _OLD_MARKS:
            if message.startswith(marks[0]) or any(mark in message for mark in marks[1]):
                return cls(kind, message)
        return cls(FailureKind.LEARNER, message)


# How untyped error texts of older reports say who failed: (kind, (prefixes, fragments)).
_OLD_MARKS = (
    (
        FailureKind.GRADER,
        (
            (
                "the grader failed: ",
                "the grading process died",
                "grading failed on the Dask cluster: ",
                "internal grader error",
            ),
            (),
        ),
    ),
    (FailureKind.TIME, (("grading stopped: over the time limit",), ())),
    (
        FailureKind.REFUSED,
        (
            ("no tools.py found",),
            (
                "; it was not graded",
                "does not exist. Give the path",
                "is a symbolic link to",
                "hard links:",
                "leads out of",
                "was moved out of",
                "is not a regular file",
                "is a folder without tools.py",
                "the grader does not read it",
            ),
        ),
    ),
)


def failure_of(report: dict[str, Any]) -> Failure | None:
    """The typed failure of a stored ``Report.to_dict()``, also of one written before the ``failure`` key.

    The one reading batch, ``--resume``, the service and the class outputs
    share: ``failure_of(report).retry`` means grade again, never count.

    >>> failure_of({"failure": {"kind": "grader", "message": "worker died"}}).retry
    True
    >>> failure_of({"error": "the grader failed: OSError: disk full"}).kind.value
    'grader'
    >>> failure_of({"error": "", "failure": None}) is None
    True
    """
    if "failure" in report:
        return Failure.from_dict(report["failure"])
    return Failure.from_text(report.get("error") or "")


@dataclass
class CheckResult:
    """One check's outcome, with everything a learner needs to act on it."""

    id: str
    step: int
    passed: bool
    points: int
    max_points: int
    title: str
    call: str = ""
    expected: str = ""
    got: str = ""
    message: str = ""
    hint: str = ""
    reproduce: str = ""

    def __post_init__(self) -> None:
        # Built 80 times a report, and again for every report a batch's outputs read:
        # the field names are looked up once (_CHECK_FIELDS), and only text not
        # already clean is replaced.
        for name in _CHECK_FIELDS:
            value = getattr(self, name)
            cleaned = clean_text(value) if isinstance(value, str) else value
            if cleaned is not value:
                setattr(self, name, cleaned)

    def to_dict(self) -> dict[str, Any]:
        """The check as plain JSON data, fields in declaration order (``dataclasses.asdict``'s shape).

        Its values are text, numbers and booleans, so a plain copy is a deep one
        (``asdict`` deep-copies each value, which cost more than the rest of a
        report's ``to_dict``).

        >>> CheckResult(id="a", step=1, passed=True, points=1, max_points=1, title="t").to_dict()["title"]
        't'
        """
        return {name: getattr(self, name) for name in _CHECK_FIELDS}


_CHECK_FIELDS = tuple(f.name for f in fields(CheckResult))


@dataclass
class Report:
    """All check results of one grading run.

    ``output`` maps a step number (as a string) to the learner's captured,
    capped stdout+stderr during that step. ``failure`` is set when the
    submission could not be graded as a whole (it does not import, the
    grader failed...): its kind says who failed; the checks are then all
    failed with its message. ``error`` is that message (``""`` without a
    failure), kept for readers of the older shape: setting it alone types
    the failure from its text (:meth:`Failure.from_text`).

    >>> r = Report(seed=1, path="tools.py", failure=Failure("grader", "the grading process died"))
    >>> r.error, Report(seed=1, path="t.py", error="SyntaxError").failure.kind.value
    ('the grading process died', 'learner')
    """

    seed: int
    path: str
    checks: list[CheckResult] = field(default_factory=list)
    output: dict[str, str] = field(default_factory=dict)
    error: str = ""
    elapsed: float = 0.0
    # The limits that held for each step as a whole (cgroup, priority, disk, sandbox), as the engine said.
    limits: str = ""
    failure: Failure | None = None
    # The isolation learner code ran under (sandbox, account: grader.engine.sandbox.Isolation.words);
    # "" in reports older than it, and in reports no step ran for.
    isolation: str = ""

    def __post_init__(self) -> None:
        self.output = {str(k): clean_text(v) for k, v in self.output.items()}
        # Built with one of ``error`` or ``failure`` (or both, alike): the other follows it.
        self.__dict__["_ready"] = True
        self.failure = self.failure if self.failure is not None else Failure.from_text(self.error)

    def __setattr__(self, name: str, value: Any) -> None:
        # Text is cleaned as it enters; ``failure`` and ``error`` (its message) are kept together,
        # whichever is set after construction.
        if name in ("path", "error", "limits", "isolation"):
            value = clean_text(value)
        super().__setattr__(name, value)
        if not self.__dict__.get("_ready"):
            return
        if name == "failure":  # the message always goes with the failure
            super().__setattr__("error", value.message if value is not None else "")
        elif name == "error" and (self.failure is None or self.failure.message != value):
            super().__setattr__("failure", Failure.from_text(value))

    def add_output(self, step: int, text: str) -> None:
        """Keep a step's captured learner output (cleaned like every text of the report)."""
        self.output[str(step)] = clean_text(text)

    @property
    def score(self) -> int:
        return sum(c.points for c in self.checks)

    @property
    def max_score(self) -> int:
        return sum(c.max_points for c in self.checks)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def failed(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.passed]

    @property
    def steps(self) -> dict[int, dict[str, Any]]:
        """Per-step subtotals for the steps that were graded."""
        totals: dict[int, dict[str, Any]] = {}
        for c in self.checks:
            t = totals.setdefault(c.step, {"score": 0, "max_score": 0, "passed": True})
            t["score"] += c.points
            t["max_score"] += c.max_points
            t["passed"] = t["passed"] and c.passed
        return dict(sorted(totals.items()))

    def summary(self) -> str:
        n_pass = sum(c.passed for c in self.checks)
        return f"{n_pass}/{len(self.checks)} checks passed, {self.score}/{self.max_score} points"

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape documented in docs/learner.md, "The grade report as JSON"."""
        return {
            "seed": self.seed,
            "path": self.path,
            "score": self.score,
            "max_score": self.max_score,
            "steps": {str(k): v for k, v in self.steps.items()},
            "checks": [c.to_dict() for c in self.checks],
            "output": dict(self.output),
            "error": self.error,
            "failure": self.failure.to_dict() if self.failure is not None else None,
            "limits": self.limits,
            "isolation": self.isolation,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        """The report ``to_dict`` gave (also of an older shape, without ``failure``: typed from ``error``).

        >>> Report.from_dict(Report(seed=1, path="t.py", error="the grading process died").to_dict()).failure.retry
        True
        """
        return cls(
            seed=data["seed"],
            path=data["path"],
            checks=[CheckResult(**c) for c in data["checks"]],
            output=dict(data.get("output", {})),
            failure=failure_of(data),
            limits=data.get("limits", ""),
            isolation=data.get("isolation", ""),
        )
