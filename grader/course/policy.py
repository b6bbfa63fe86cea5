r"""The course file: due date, late credit, which attempt counts, attempt limits, point weights.

A course file is TOML (read with :mod:`tomllib`)::

    [assignment]
    name = "agtool lab"                      # optional, shown to learners
    due = 2026-03-01T23:59:00+01:00          # required; a time zone is required too
    late_due = 2026-03-08T23:59:00+01:00     # optional: after `due`, before this, `late_credit` applies
    late_credit = 0.8                        # required with late_due: the share of the points kept
    counts = "best"                          # "best" (default) or "last"

    [attempts]                               # optional: at most `limit` attempts per `window_minutes`
    limit = 5
    window_minutes = 60

    [weights]                                # optional: points of a step or a check are multiplied
    step3 = 2.0
    "step6/naive_failure_path" = 0.5        # a check's own weight wins over its step's

A course that hands the lab out as several assignments writes one
``[[assignments]]`` table each instead (:func:`parse_course`)::

    [[assignments]]
    id = "lab-a"                             # required: names its grades.csv column and its LMS line item
    name = "Lab A"                           # optional (default: the id)
    steps = [1, 2, 3, 4]                     # required: each step in at most one assignment
    due = 2030-01-10T23:59:00+00:00          # and late_due, late_credit, counts as in [assignment]
    [assignments.attempts]                   # optional, as [attempts]
    limit = 5
    window_minutes = 60
    [assignments.weights]                    # optional, as [weights], of this assignment's steps only
    step3 = 2.0

An ``[assignment]`` file is one assignment, id ``lab``, over every step
(:func:`single_course`): it grades and exports exactly as it always did.

A weight of 0 leaves a step out of both the credited score and its maximum:
a course that teaches part one only (steps 1-8) writes ``step9 = 0``,
``step10 = 0`` and ``step11 = 0`` and grades out of the 133 points of steps
1-8 (the report itself keeps the raw points of every step).

After ``late_due`` (or after ``due`` when there is no late date) an attempt
earns no credit. :func:`credit` picks the attempt that counts and says why;
a late attempt never lowers a learner's credited score: it only counts when
it raises it.

Example::

    >>> import datetime as dt
    >>> policy = parse_policy('''
    ... [assignment]
    ... due = 2026-03-01T12:00:00Z
    ... late_due = 2026-03-08T12:00:00Z
    ... late_credit = 0.8
    ... ''')
    >>> report = {"score": 10, "max_score": 10, "checks": []}
    >>> late = Attempt(2, dt.datetime(2026, 3, 2, tzinfo=dt.timezone.utc), report)
    >>> credit([late], policy).credited
    8.0
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from grader.report import STEPS

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, from PyPI (the batch and service extras name it)
    import tomli as tomllib

BEST, LAST = "best", "last"
ON_TIME, LATE, AFTER_LATE = "on time", "late", "after the late date"
UTC = dt.timezone.utc

_FIELDS = {
    "assignment": {"name", "due", "late_due", "late_credit", "counts"},
    "attempts": {"limit", "window_minutes"},
    "weights": None,  # keys are step or check ids, checked separately
}
_STEP_KEY = re.compile(r"step([0-9]+)\Z")


class CourseError(ValueError):
    """A course file that cannot be used; the message names the field and says how to fix it."""


@dataclass(frozen=True)
class Policy:
    """A validated course file. Times are aware (UTC); ``window`` is seconds (``None``: no limit)."""

    due: dt.datetime
    late_due: dt.datetime | None = None
    late_credit: float = 0.0
    counts: str = BEST
    limit: int | None = None
    window: float | None = None
    weights: dict = field(default_factory=dict)
    name: str = ""

    def factor(self, when: dt.datetime) -> tuple[float, str]:
        """The share of the points an attempt at ``when`` keeps, and its period.

        >>> p = Policy(due=dt.datetime(2026, 3, 1, tzinfo=UTC), late_due=dt.datetime(2026, 3, 8, tzinfo=UTC),
        ...            late_credit=0.8)
        >>> p.factor(dt.datetime(2026, 3, 1, tzinfo=UTC)), p.factor(dt.datetime(2026, 3, 9, tzinfo=UTC))
        ((1.0, 'on time'), (0.0, 'after the late date'))
        """
        when = aware(when)
        if when <= self.due:
            return 1.0, ON_TIME
        if self.late_due is not None and when <= self.late_due:
            return self.late_credit, LATE
        return 0.0, AFTER_LATE

    def weight(self, check_id: str, step: int) -> float:
        """The weight of one check: its own, else its step's, else 1.

        >>> Policy(due=dt.datetime(2026, 1, 1, tzinfo=UTC), weights={"step3": 2.0}).weight("step3/x", 3)
        2.0
        """
        if check_id in self.weights:
            return self.weights[check_id]
        return self.weights.get(f"step{step}", 1.0)

    def describe(self) -> dict:
        """What a learner is shown: the due dates, the late credit, which attempt counts, the limit.

        >>> Policy(due=dt.datetime(2026, 1, 1, tzinfo=UTC)).describe()["due"]
        '2026-01-01T00:00:00Z'
        """
        return {
            "name": self.name,
            "due": iso_utc(self.due),
            "late_due": iso_utc(self.late_due),
            "late_credit": self.late_credit if self.late_due else None,
            "counts": self.counts,
            "limit": self.limit,
            "window_minutes": self.window / 60 if self.window else None,
        }


@dataclass(frozen=True)
class Attempt:
    """One graded attempt as :func:`credit` sees it: an id, when it was submitted, its report (``None``: not graded)."""

    key: object
    submitted_at: dt.datetime
    report: dict | None


@dataclass(frozen=True)
class Credit:
    """The attempt that counts for one learner: its raw, weighted and credited score, and why it counts."""

    attempt: object
    submitted_at: str
    period: str
    raw_score: float
    raw_max: float
    score: float  # weighted
    max_score: float  # weighted
    factor: float
    credited: float
    why: str

    def to_dict(self) -> dict:
        """As JSON (``grades.json``, the service's API).

        >>> Credit(1, "t", ON_TIME, 1, 2, 1, 2, 1.0, 1.0, "only").to_dict()["credited"]
        1.0
        """
        return dict(self.__dict__)


def iso_utc(moment: dt.datetime | None) -> str | None:
    """``moment`` in UTC as ISO 8601 with a ``Z`` (naive times are taken as UTC, as the service stores them).

    >>> iso_utc(dt.datetime(2026, 3, 1, 13, 0, tzinfo=dt.timezone(dt.timedelta(hours=1))))
    '2026-03-01T12:00:00Z'
    """
    if moment is None:
        return None
    return aware(moment).astimezone(UTC).replace(microsecond=0, tzinfo=None).isoformat() + "Z"


def aware(moment: dt.datetime) -> dt.datetime:
    """An aware time; a naive one is UTC (the service's database keeps naive UTC).

    >>> aware(dt.datetime(2026, 1, 1)).tzinfo
    datetime.timezone.utc
    """
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


# ---------------------------------------------------------------------------- loading


def load_policy(path: str | Path) -> Policy:
    """Read and validate a course file; :class:`CourseError` names the field and the fix.

    >>> load_policy("no-such-course.toml")
    Traceback (most recent call last):
    ...
    grader.course.policy.CourseError: course file no-such-course.toml cannot be read (FileNotFoundError); give the path of a TOML course file (docs/classroom.md, "Course policy")
    """
    return parse_policy(_read(path), source=str(path))


def _read(path: str | Path) -> str:
    """A course file's text; :class:`CourseError` when it cannot be read."""
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CourseError(
            f"course file {path} cannot be read ({type(exc).__name__}); "
            'give the path of a TOML course file (docs/classroom.md, "Course policy")'
        ) from None


def _toml(text: str, source: str) -> dict:
    """The TOML of a course file; :class:`CourseError` with the parser's words when it is not TOML."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CourseError(
            f"{source} is not valid TOML ({exc}); fix the syntax there "
            '(strings in "quotes", times like 2026-03-01T23:59:00+01:00)'
        ) from None


def parse_policy(text: str, *, source: str = "course file", check_ids: set[str] | None = None) -> Policy:
    """Validate the TOML ``text`` of a course file (``check_ids``: the known ids; default the registry's).

    >>> parse_policy('[assignment]\\ndue = 2026-03-01\\n')
    Traceback (most recent call last):
    ...
    grader.course.policy.CourseError: course file: [assignment] due = 2026-03-01 is a date without a time and a time zone; write a full time with its zone, e.g. due = 2026-03-01T23:59:00+01:00 (or ...Z for UTC)
    """
    data = _toml(text, source)

    def fail(where: str, problem: str, fix: str) -> None:
        raise CourseError(f"{source}: {where} {problem}; {fix}")

    if "assignments" in data:
        fail(
            "[[assignments]]",
            "makes a course of several assignments",
            "read the file with load_course or parse_course (agtool-grade and the service do)",
        )
    _check_tables(data, fail)
    return _policy(data.get("assignment") or {}, data.get("attempts", {}), data.get("weights", {}), fail, check_ids)


def _policy(table: dict, attempts: dict, weights: dict, fail, check_ids, where: tuple[str, ...] = ()) -> Policy:
    """One assignment's :class:`Policy` from its tables (``where``: the names of the three in messages)."""
    names = where or ("[assignment]", "[attempts]", "[weights]")
    assignment = _assignment(table, fail, names[0])
    limit, window = _attempts(attempts, fail, names[1])
    weighted = _weights(weights, fail, check_ids, names[2])
    return Policy(
        **assignment, limit=limit, window=float(window) * 60 if window is not None else None, weights=weighted
    )


# ---------------------------------------------------------------------------- courses of several assignments

SINGLE_ID = "lab"  # the id of the one assignment of an ``[assignment]`` file (its name is only shown)
_ASSIGNMENT_FIELDS = {"id", "name", "steps", "due", "late_due", "late_credit", "counts", "attempts", "weights"}
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")
# grades.csv's own columns: an assignment's column (named by its id) may not take one's name.
RESERVED_IDS = frozenset(
    {"learner", "score", "max_score", "seed", "error", "source", "weighted_score", "weighted_max", "credit_factor"}
    | {"credited_score", "submitted_at", "period", "counted", "why", "extended_due"}
    | {"overridden_from", "override_reason", "override_by", "override_at"}
    | {f"step{s}" for s in STEPS}
)


@dataclass(frozen=True)
class Assignment:
    """One assignment of a course: its id (a column's name), its name, the steps it covers and its own policy.

    ``policy`` holds its due and late dates, which attempt counts, its attempt
    limit and its weights; :func:`credit_assignment` credits the points of
    ``steps`` only, under those dates.

    >>> a = parse_course('[assignment]\\ndue = 2026-03-01T12:00:00Z\\n').get("lab")
    >>> a.id, a.steps == STEPS, a.policy.counts
    ('lab', True, 'best')
    """

    id: str
    name: str
    steps: tuple[int, ...]
    policy: Policy

    @functools.cached_property
    def points(self) -> float:
        """The most this assignment credits: the weighted points of its steps' checks (an LMS column's maximum).

        >>> Assignment("a", "A", (1,), Policy(due=dt.datetime(2026, 1, 1, tzinfo=UTC), weights={"step1": 0})).points
        0.0
        """
        from grader.checks.registry import checks_for  # late: the registry is read only when asked

        total = sum(c.points * self.policy.weight(c.id, c.step) for c in checks_for(list(self.steps)))
        return round(float(total), 4)

    @property
    def whole(self) -> bool:
        """Whether it covers every step (then its credit is the whole report's, as in a one-assignment file)."""
        return tuple(sorted(self.steps)) == tuple(STEPS)


@dataclass(frozen=True)
class Course:
    """The assignments of a course file, in the file's order; ``single``: the one-table ``[assignment]`` form.

    A ``single`` course grades and exports exactly as a course file always
    did (one credited grade); a course of ``[[assignments]]`` has a credited
    grade per assignment, and a column per assignment in every export.

    >>> course = parse_course('''
    ... [[assignments]]
    ... id = "lab-a"
    ... steps = [1, 2]
    ... due = 2030-01-10T23:59:00+00:00
    ... ''')
    >>> [a.id for a in course.assignments], course.get("lab-a").name, course.single
    (['lab-a'], 'lab-a', False)
    """

    assignments: tuple[Assignment, ...]
    single: bool = False

    def get(self, assignment_id: str) -> Assignment:
        """The assignment with this id; :class:`KeyError` naming the ids there are.

        >>> parse_course('[assignment]\\ndue = 2026-03-01T12:00:00Z\\n').get("lab-z")
        Traceback (most recent call last):
        ...
        KeyError: "no assignment 'lab-z' in the course file; its assignments are: lab"
        """
        for assignment in self.assignments:
            if assignment.id == assignment_id:
                return assignment
        ids = ", ".join(a.id for a in self.assignments)
        raise KeyError(f"no assignment {assignment_id!r} in the course file; its assignments are: {ids}")

    @property
    def ids(self) -> tuple[str, ...]:
        """The assignments' ids, in the file's order."""
        return tuple(a.id for a in self.assignments)

    @property
    def policy(self) -> Policy:
        """The first assignment's policy: the whole course's in a ``single`` course."""
        return self.assignments[0].policy

    @property
    def limited(self) -> bool:
        """Whether any assignment limits attempts."""
        return any(a.policy.limit for a in self.assignments)

    @property
    def weights(self) -> bool:
        """Whether any assignment weighs steps or checks (its credit then needs every check's points)."""
        return any(a.policy.weights for a in self.assignments)


def single_course(policy: Policy) -> Course:
    """The course of an ``[assignment]`` file: one assignment, id ``lab``, covering every step.

    >>> single_course(Policy(due=dt.datetime(2026, 1, 1, tzinfo=UTC), name="Lab")).get("lab").name
    'Lab'
    """
    return Course((Assignment(SINGLE_ID, policy.name or SINGLE_ID, tuple(STEPS), policy),), single=True)


def as_course(course: Course | Policy | None) -> Course | None:
    """A :class:`Course` from what a caller holds: a course, a one-assignment :class:`Policy`, or ``None``.

    >>> as_course(Policy(due=dt.datetime(2026, 1, 1, tzinfo=UTC))).single, as_course(None)
    (True, None)
    """
    if course is None or isinstance(course, Course):
        return course
    return single_course(course)


def load_course(path: str | Path) -> Course:
    """Read and validate a course file of either form (:func:`parse_course`); errors as :func:`load_policy`'s.

    >>> load_course("no-such-course.toml")
    Traceback (most recent call last):
    ...
    grader.course.policy.CourseError: course file no-such-course.toml cannot be read (FileNotFoundError); give the path of a TOML course file (docs/classroom.md, "Course policy")
    """
    return parse_course(_read(path), source=str(path))


def parse_course(text: str, *, source: str = "course file", check_ids: set[str] | None = None) -> Course:
    """A course from a course file's TOML: ``[[assignments]]`` tables, or one ``[assignment]`` table.

    A bad file raises :class:`CourseError` naming the field, the assignment and the fix.

    >>> parse_course('''
    ... [[assignments]]
    ... id = "lab-a"
    ... steps = [1, 2]
    ... ''')
    Traceback (most recent call last):
    ...
    grader.course.policy.CourseError: course file: [[assignments]] "lab-a" due is missing; add the due date, e.g. [[assignments]] "lab-a" due = 2026-03-01T23:59:00+01:00
    """
    data = _toml(text, source)
    if "assignments" not in data:
        return single_course(parse_policy(text, source=source, check_ids=check_ids))

    def fail(where: str, problem: str, fix: str) -> None:
        raise CourseError(f"{source}: {where} {problem}; {fix}")

    _check_course_tables(data, fail)
    assignments: list[Assignment] = []
    for number, table in enumerate(data["assignments"], start=1):
        assignments.append(_course_assignment(table, number, assignments, fail, check_ids))
    return Course(tuple(assignments))


def _check_course_tables(data: dict, fail) -> None:
    """``[[assignments]]`` tables only (a list of tables, at least one), nothing beside them."""
    for table in data:
        if table != "assignments":
            fail(
                f"[{table}]",
                "cannot stand beside [[assignments]]",
                "a course file has either one [assignment] table or [[assignments]] tables; put due dates, "
                "[assignments.attempts] and [assignments.weights] in each [[assignments]] table",
            )
    items = data["assignments"]
    if not isinstance(items, list) or not items or not all(isinstance(t, dict) for t in items):
        fail(
            "assignments",
            "is not a list of tables",
            "write each assignment as [[assignments]] on its own line, its id, name, steps and due below",
        )


def _course_assignment(table: dict, number: int, earlier: list, fail, check_ids) -> Assignment:
    """The ``number``-th ``[[assignments]]`` table, checked against the ``earlier`` ones (ids, steps)."""
    assignment_id = _assignment_id(table, number, earlier, fail)
    where = f'[[assignments]] "{assignment_id}"'
    for key in table:
        if key not in _ASSIGNMENT_FIELDS:
            fail(
                f"{where} {key}",
                "is not a field of an assignment",
                f"the fields are {', '.join(sorted(_ASSIGNMENT_FIELDS))}",
            )
    for key in ("attempts", "weights"):
        if not isinstance(table.get(key, {}), dict):
            fail(
                f"{where} {key}",
                "is a value, not a table",
                f"write it as [assignments.{key}] below the assignment's fields",
            )
    steps = _assignment_steps(table, where, earlier, fail)
    names = (where, f'[assignments.attempts] of "{assignment_id}"', f'[assignments.weights] of "{assignment_id}"')
    fields = {k: table[k] for k in table if k not in ("id", "steps", "attempts", "weights")}
    policy = _policy(fields, table.get("attempts", {}), table.get("weights", {}), fail, check_ids, names)
    for key in policy.weights:
        found = re.match(r"step([0-9]+)", key)
        step = int(found.group(1)) if found else steps[0]
        if step not in steps:
            fail(
                f"{names[2]} {key!r}",
                f"weighs step {step}, which is not in this assignment (steps {_listed(steps)})",
                f"weigh it in the assignment that has step {step}, or add {step} to this one's steps",
            )
    return Assignment(
        assignment_id,
        policy.name or assignment_id,
        steps,
        dataclasses.replace(policy, name=policy.name or assignment_id),
    )


def _assignment_id(table: dict, number: int, earlier: list, fail) -> str:
    """The table's ``id``: present, short, safe as a column name and a URL part, and not used before."""
    assignment_id = table.get("id")
    where = f"[[assignments]] number {number}"
    if assignment_id is None:
        fail(f"{where} id", "is missing", 'give each assignment an id, e.g. id = "lab-a" (it names its grade column)')
    if not isinstance(assignment_id, str) or not _ID.match(assignment_id):
        fail(
            f"{where} id = {assignment_id!r}",
            "is not an id of letters, digits, '.', '_' or '-' (at most 64, starting with a letter or digit)",
            'write e.g. id = "lab-a"',
        )
    if assignment_id in RESERVED_IDS:
        fail(
            f"{where} id = {assignment_id!r}",
            "is the name of a column grades.csv has already",
            'choose another id, e.g. id = "lab-a"',
        )
    if assignment_id in {a.id for a in earlier}:
        fail(
            f"{where} id = {assignment_id!r}",
            "is the id of an earlier assignment too",
            "give each assignment its own id",
        )
    return assignment_id


def _assignment_steps(table: dict, where: str, earlier: list, fail) -> tuple[int, ...]:
    """The table's ``steps``: known step numbers, each once, none in an earlier assignment."""
    steps = table.get("steps")
    example = f"write e.g. steps = [1, 2, 3, 4] (steps {STEPS[0]} to {STEPS[-1]})"
    if steps is None:
        fail(f"{where} steps", "is missing", f"list the steps this assignment grades: {example}")
    if not isinstance(steps, list) or not steps:
        fail(f"{where} steps = {steps!r}", "is not a list of step numbers", example)
    for step in steps:
        if isinstance(step, bool) or not isinstance(step, int) or step not in STEPS:
            fail(f"{where} steps", f"has {step!r}, which is not a step of the lab", example)
    if len(set(steps)) != len(steps):
        twice = sorted(s for s in set(steps) if steps.count(s) > 1)
        fail(f"{where} steps", f"lists step {twice[0]} twice", "list each step once")
    for other in earlier:
        shared = sorted(set(steps) & set(other.steps))
        if shared:
            fail(
                f"{where} steps",
                f'has step {shared[0]}, which assignment "{other.id}" has too',
                "put each step in one assignment only (a step in two would be credited twice)",
            )
    return tuple(steps)


def _listed(steps) -> str:
    return ", ".join(str(s) for s in steps)


def _check_tables(data: dict, fail) -> None:
    """Only the known tables, each a table, each with only its known fields."""
    for table, value in data.items():
        if table not in _FIELDS:
            fail(f"[{table}]", "is not a table of a course file", f"use only {', '.join(f'[{t}]' for t in _FIELDS)}")
        if not isinstance(value, dict):
            fail(table, "is a value, not a table", f"write it as a table: [{table}] on its own line, its fields below")
        known = _FIELDS[table]
        for key in value if known is not None else ():
            if key not in known:
                fail(f"[{table}] {key}", "is not a field of this table", f"the fields are {', '.join(sorted(known))}")


def _moment(assignment: dict, key: str, fail, where: str = "[assignment]") -> dt.datetime | None:
    """``[assignment] key`` (``where``: the table's name in messages): a TOML time with its zone, as UTC."""
    value = assignment.get(key)
    if value is None:
        return None
    shown = value.isoformat() if isinstance(value, (dt.date, dt.time)) else repr(value)
    example = f"{key} = 2026-03-01T23:59:00+01:00 (or ...Z for UTC)"
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            fail(f"{where} {key} = {shown}", "has no time zone", f"add one, e.g. {example}")
        return value.astimezone(UTC)
    if isinstance(value, dt.date):
        fail(
            f"{where} {key} = {shown}",
            "is a date without a time and a time zone",
            f"write a full time with its zone, e.g. {example}",
        )
    fail(f"{where} {key} = {shown}", "is not a time", f"write a TOML time without quotes, e.g. {example}")


def _assignment(assignment: dict, fail, where: str = "[assignment]") -> dict:
    """An assignment's table (``where``: its name in messages): due, late_due, late_credit, counts, name."""
    if "due" not in assignment:
        fail(f"{where} due", "is missing", f"add the due date, e.g. {where} due = 2026-03-01T23:59:00+01:00")
    due, late_due = _moment(assignment, "due", fail, where), _moment(assignment, "late_due", fail, where)
    if late_due is not None and late_due <= due:
        fail(
            f"{where} late_due",
            f"({iso_utc(late_due)}) is not after due ({iso_utc(due)})",
            "give a late date after the due date, or remove late_due",
        )
    late_credit = _late_credit(assignment, late_due, fail, where)
    counts = assignment.get("counts", BEST)
    if counts not in (BEST, LAST):
        fail(f"{where} counts = {counts!r}", "is not a choice", f'write counts = "{BEST}" or counts = "{LAST}"')
    name = assignment.get("name", "")
    if not isinstance(name, str):
        fail(f"{where} name", "is not a string", 'write it in quotes, e.g. name = "agtool lab"')
    return {"due": due, "late_due": late_due, "late_credit": late_credit, "counts": counts, "name": name}


def _late_credit(assignment: dict, late_due: dt.datetime | None, fail, where: str) -> float:
    """``late_credit``: a share between 0 and 1, given exactly when ``late_due`` is."""
    late_credit = assignment.get("late_credit")
    if late_credit is not None:
        if late_due is None:
            fail(
                f"{where} late_credit",
                "is given without late_due",
                "add late_due (until when late credit applies) or remove late_credit",
            )
        if not _number(late_credit) or not 0 <= late_credit <= 1:
            fail(
                f"{where} late_credit = {late_credit!r}",
                "is not a share between 0 and 1",
                "write e.g. late_credit = 0.8 for 80% of the points",
            )
    elif late_due is not None:
        fail(
            f"{where} late_credit",
            "is missing (late_due is given)",
            "add the share of the points a late attempt keeps, e.g. late_credit = 0.8",
        )
    return float(late_credit or 0.0)


def _attempts(attempts: dict, fail, where: str = "[attempts]") -> tuple[int | None, float | None]:
    """An ``[attempts]`` table (``where``: its name in messages): the limit and its window in minutes, both or neither."""
    limit, window = attempts.get("limit"), attempts.get("window_minutes")
    if (limit is None) != (window is None):
        missing = "window_minutes" if window is None else "limit"
        fail(
            f"{where} {missing}",
            "is missing",
            "give both limit (attempts) and window_minutes (per how long), "
            "e.g. limit = 5 and window_minutes = 60, or neither",
        )
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        fail(f"{where} limit = {limit!r}", "is not a whole number of at least 1", "write e.g. limit = 5")
    if window is not None and (not _number(window) or not math.isfinite(window) or window <= 0):
        fail(
            f"{where} window_minutes = {window!r}",
            "is not a number of minutes above 0",
            "write e.g. window_minutes = 60",
        )
    return limit, window


def _weights(table: dict, fail, check_ids: set[str] | None, where: str = "[weights]") -> dict[str, float]:
    """A ``[weights]`` table: a weight of 0 or more per step or check id (the registry's ids, read only when needed)."""
    weights = {}
    ids = check_ids if check_ids is not None or not table else _registry_ids()
    for key, value in table.items():
        step = _STEP_KEY.match(key)
        if not (step and int(step.group(1)) in STEPS) and key not in ids:
            fail(
                f"{where} {key!r}",
                "is neither a step nor a check id",
                f"use step{STEPS[0]} ... step{STEPS[-1]} or a check id such as step3/blocked_before_call "
                "(agtool-grade checks lists them)",
            )
        if not _number(value) or not math.isfinite(value) or value < 0:
            fail(f"{where} {key} = {value!r}", "is not a weight of 0 or more", f"write e.g. {key} = 2.0")
        weights[key] = float(value)
    return weights


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _registry_ids() -> set[str]:
    from grader.checks.registry import checks_for  # late: a course file without weights needs no checks

    return {check.id for check in checks_for()}


# ---------------------------------------------------------------------------- credit


def weighted(report: dict, policy: Policy) -> tuple[float, float]:
    """The report's score and maximum under the policy's weights (the raw points when there are none).

    >>> p = Policy(due=dt.datetime(2026, 1, 1, tzinfo=UTC), weights={"step1": 2.0})
    >>> weighted({"score": 3, "max_score": 4, "checks": [
    ...     {"id": "step1/a", "step": 1, "points": 1, "max_points": 2},
    ...     {"id": "step2/b", "step": 2, "points": 2, "max_points": 2}]}, p)
    (4.0, 6.0)
    """
    if not policy.weights:
        return float(report.get("score") or 0), float(report.get("max_score") or 0)
    score = total = 0.0
    for check in report.get("checks", []):
        w = policy.weight(check["id"], check["step"])
        score += check["points"] * w
        total += check["max_points"] * w
    return round(score, 4), round(total, 4)


def credit(attempts, policy: Policy) -> Credit | None:
    """The attempt that counts among ``attempts`` (:class:`Attempt`), with its scores and why; ``None`` if none is graded.

    ``best``: the highest credited score (the earliest of equal ones).
    ``last``: the last attempt on time; a late attempt replaces it only when
    its credited score is higher, so a late attempt never lowers the grade.

    >>> due = dt.datetime(2026, 3, 1, tzinfo=UTC)
    >>> p = Policy(due=due, late_due=due + dt.timedelta(days=7), late_credit=0.5, counts="last")
    >>> r = lambda s: {"score": s, "max_score": 10, "checks": []}
    >>> day = dt.timedelta(days=1)
    >>> c = credit([Attempt(1, due - day, r(3)), Attempt(2, due + day, r(8)), Attempt(3, due + 2 * day, r(10))], p)
    >>> c.attempt, c.credited, c.period
    (3, 5.0, 'late')
    >>> credit([Attempt(1, due - day, r(6)), Attempt(2, due + day, r(10))], p).attempt
    1
    """
    graded = sorted((a for a in attempts if a.report is not None), key=lambda a: (aware(a.submitted_at), str(a.key)))
    if not graded:
        return None
    best: tuple[Attempt, float, str, float, float, float] | None = None
    for a in graded:
        factor, period = policy.factor(a.submitted_at)
        score, total = weighted(a.report, policy)
        credited = round(score * factor, 4)
        if best is None:
            best = (a, factor, period, score, total, credited)
            continue
        replaces = credited > best[5] if (policy.counts == BEST or period != ON_TIME) else True
        if replaces:
            best = (a, factor, period, score, total, credited)
    a, factor, period, score, total, credited = best
    return Credit(
        attempt=a.key,
        submitted_at=iso_utc(a.submitted_at),
        period=period,
        raw_score=float(a.report.get("score") or 0),
        raw_max=float(a.report.get("max_score") or 0),
        score=score,
        max_score=total,
        factor=factor,
        credited=credited,
        why=_why(a, graded, period, factor, policy),
    )


def credit_assignment(attempts, assignment: Assignment) -> Credit | None:
    """:func:`credit` for one assignment: the points of its steps only, under its own dates, limit and weights.

    Each attempt's report is cut down to the assignment's steps (its score,
    maximum and checks); an assignment covering every step credits the whole
    report, exactly as :func:`credit` does.

    >>> course = parse_course('''
    ... [[assignments]]
    ... id = "lab-a"
    ... steps = [1]
    ... due = 2026-03-01T12:00:00Z
    ... [[assignments]]
    ... id = "lab-b"
    ... steps = [2]
    ... due = 2026-03-08T12:00:00Z
    ... ''')
    >>> report = {"score": 5, "max_score": 7, "steps": {"1": {"score": 1, "max_score": 3},
    ...           "2": {"score": 4, "max_score": 4}}, "checks": []}
    >>> attempt = Attempt(1, dt.datetime(2026, 3, 2, tzinfo=UTC), report)
    >>> [credit_assignment([attempt], a).credited for a in course.assignments]
    [0.0, 4.0]
    """
    if assignment.whole:
        return credit(attempts, assignment.policy)
    steps = set(assignment.steps)
    return credit([Attempt(a.key, a.submitted_at, part_report(a.report, steps)) for a in attempts], assignment.policy)


def part_report(report: dict | None, steps: set[int]) -> dict | None:
    """``report`` cut down to ``steps``: their checks, their entries in ``steps``, their score and maximum.

    The score and maximum are the steps' own (``report["steps"]``), else the sum of their checks.

    >>> part_report({"score": 3, "max_score": 5, "steps": {"1": {"score": 1, "max_score": 2},
    ...              "2": {"score": 2, "max_score": 3}}, "checks": []}, {2})["score"]
    2
    """
    if report is None:
        return None
    checks = [c for c in report.get("checks", []) if c.get("step") in steps]
    table = {k: v for k, v in (report.get("steps") or {}).items() if int(k) in steps}
    if table:
        score, total = (
            sum(v.get("score") or 0 for v in table.values()),
            sum(v.get("max_score") or 0 for v in table.values()),
        )
    else:
        score, total = sum(c.get("points") or 0 for c in checks), sum(c.get("max_points") or 0 for c in checks)
    return {**report, "score": score, "max_score": total, "steps": table, "checks": checks}


def credit_course(attempts, course: Course) -> dict[str, Credit | None]:
    """Each assignment's :func:`credit_assignment`, by id in the file's order (``None``: nothing graded).

    >>> course = parse_course('[assignment]\\ndue = 2026-03-01T12:00:00Z\\n')
    >>> list(credit_course([], course).items())
    [('lab', None)]
    """
    attempts = list(attempts)
    return {a.id: credit_assignment(attempts, a) for a in course.assignments}


def course_total(credits: dict, course: Course, attempt: object, submitted_at: str | None) -> dict:
    """The course grade of several assignments as one credit dict: the sum of the assignments' credited points.

    ``credits``: :func:`credit_course`'s, as dicts (``None`` for an assignment
    nothing was graded for: 0 of its points). ``attempt`` and
    ``submitted_at`` are those of the report shown beside it. Each
    assignment's own credit stays in the record's ``assignments``.

    >>> course = parse_course('[[assignments]]\\nid = "a"\\nsteps = [1]\\ndue = 2026-03-01T12:00:00Z\\n',
    ...                       check_ids=set())
    >>> course_total({"a": {"credited": 2.0, "score": 2.0, "max_score": 3.0, "raw_score": 2, "raw_max": 3}},
    ...              course, 4, "t")["credited"]
    2.0
    """
    got = [credits.get(a.id) for a in course.assignments]
    score = round(sum(c["score"] for c in got if c), 4)
    total = round(sum(c["max_score"] if c else a.points for a, c in zip(course.assignments, got)), 4)
    credited = round(sum(c["credited"] for c in got if c), 4)
    periods = {c["period"] for c in got if c and c.get("period")}
    return {
        "attempt": attempt,
        "submitted_at": submitted_at,
        "period": periods.pop() if len(periods) == 1 else "per assignment",
        "raw_score": round(sum(c["raw_score"] for c in got if c), 4),
        "raw_max": round(sum(c["raw_max"] for c in got if c), 4),
        "score": score,
        "max_score": total,
        "factor": round(credited / score, 4) if score else 1.0,
        "credited": credited,
        "why": "the sum of the assignments' credited scores: "
        + "; ".join(
            f"{a.id} {c['credited']:g}/{c['max_score']:g}" if c else f"{a.id} not graded"
            for a, c in zip(course.assignments, got)
        ),
    }


def assignment_entries(course: Course, credits: dict) -> dict:
    """A record's ``assignments``: per id, the assignment's name, due date, points and credit (``None``: none).

    ``credits``: :func:`credit_course`'s. The exports read these, not the course file.

    >>> course = parse_course('[[assignments]]\\nid = "a"\\nsteps = [1]\\ndue = 2026-03-01T12:00:00Z\\n')
    >>> entry = assignment_entries(course, {"a": None})["a"]
    >>> entry["name"], entry["due"], entry["credit"], entry["points"] > 0
    ('a', '2026-03-01T12:00:00Z', None, True)
    """
    return {
        a.id: {
            "name": a.name,
            "due": iso_utc(a.policy.due),
            "points": a.points,
            "credit": credits[a.id].to_dict() if credits.get(a.id) is not None else None,
        }
        for a in course.assignments
    }


def course_credit(attempts, course: Course, policies: dict | None = None) -> tuple[Credit | None, dict | None]:
    """``(credit, assignments)`` of one learner's attempts: a ``single`` course's :func:`credit` and ``None``;
    else the :func:`course_total` of the assignments and their :func:`assignment_entries`.

    ``policies``: an assignment's policy for this learner (their own dates), by id. The total's
    attempt is the newest graded attempt: the report shown beside the assignments' credits.

    >>> course = parse_course('[assignment]\\ndue = 2026-03-01T12:00:00Z\\n')
    >>> course_credit([], course)
    (None, None)
    """
    attempts = list(attempts)
    mine = course if not policies else _with_policies(course, policies)
    if mine.single:
        return credit(attempts, mine.policy), None
    graded = sorted((a for a in attempts if a.report is not None), key=lambda a: (aware(a.submitted_at), str(a.key)))
    if not graded:
        return None, None
    credits = credit_course(graded, mine)
    as_dicts = {k: c.to_dict() if c is not None else None for k, c in credits.items()}
    total = course_total(as_dicts, mine, graded[-1].key, iso_utc(graded[-1].submitted_at))
    return Credit(**total), assignment_entries(mine, credits)


def _with_policies(course: Course, policies: dict) -> Course:
    assignments = tuple(dataclasses.replace(a, policy=policies.get(a.id, a.policy)) for a in course.assignments)
    return dataclasses.replace(course, assignments=assignments)


def _why(chosen: Attempt, graded: list, period: str, factor: float, policy: Policy) -> str:
    """One sentence: which rule picked this attempt and what its time was worth."""
    n = len(graded)
    if n == 1:
        rule = "the only graded attempt"
    elif policy.counts == BEST:
        rule = f"the highest credited score of {n} attempts"
    elif period == ON_TIME:
        rule = f"the last attempt on time, of {n}"
    else:
        rule = f"a late attempt that raised the credited score, of {n} (a late attempt never lowers it)"
    if period == ON_TIME:
        when = f"on time (due {iso_utc(policy.due)})"
    elif period == LATE:
        when = f"late ({factor:.0%} credit until {iso_utc(policy.late_due)})"
    else:
        when = f"{period} (no credit after {iso_utc(policy.late_due or policy.due)})"
    return f"{rule}; {when}"


# ---------------------------------------------------------------------------- attempt limits


def next_allowed(times, policy: Policy, now: dt.datetime) -> dt.datetime | None:
    """When the next attempt is allowed, given the times of earlier ones; ``None``: it is allowed now.

    >>> p = Policy(due=dt.datetime(2026, 1, 1, tzinfo=UTC), limit=2, window=3600.0)
    >>> t = dt.datetime(2026, 1, 1, 10, 0, tzinfo=UTC)
    >>> next_allowed([t, t + dt.timedelta(minutes=10)], p, t + dt.timedelta(minutes=20))
    datetime.datetime(2026, 1, 1, 11, 0, tzinfo=datetime.timezone.utc)
    >>> next_allowed([t], p, t) is None
    True
    """
    if not policy.limit:
        return None
    now = aware(now)
    window = dt.timedelta(seconds=policy.window)
    recent = sorted(aware(t) for t in times if aware(t) > now - window)
    if len(recent) < policy.limit:
        return None
    # The attempt that frees a place is the limit-th newest: when it leaves the window, one more fits.
    return recent[-policy.limit] + window


def attempts_left(times, policy: Policy, now: dt.datetime) -> int | None:
    """How many attempts are left in the current window (``None``: no limit).

    >>> p = Policy(due=dt.datetime(2026, 1, 1, tzinfo=UTC), limit=3, window=60.0)
    >>> attempts_left([dt.datetime(2026, 1, 1, tzinfo=UTC)], p, dt.datetime(2026, 1, 1, 0, 0, 30, tzinfo=UTC))
    2
    """
    if not policy.limit:
        return None
    now = aware(now)
    start = now - dt.timedelta(seconds=policy.window)
    return max(0, policy.limit - sum(1 for t in times if aware(t) > start))


def refusal(times, policy: Policy, now: dt.datetime) -> str | None:
    """The message refusing one more attempt now (``None``: allowed); it says when the next one is.

    >>> p = Policy(due=dt.datetime(2026, 1, 1, tzinfo=UTC), limit=1, window=600.0)
    >>> t = dt.datetime(2026, 1, 1, 10, 0, tzinfo=UTC)
    >>> refusal([t], p, t + dt.timedelta(minutes=4))
    'at most 1 attempt per 10 minutes; your next attempt is allowed at 2026-01-01T10:10:00Z (in 6 min 0 s)'
    """
    when = next_allowed(times, policy, now)
    if when is None:
        return None
    wait = max(0, math.ceil((when - aware(now)).total_seconds()))
    noun = "attempt" if policy.limit == 1 else "attempts"
    return (
        f"at most {policy.limit} {noun} per {policy.window / 60:g} minutes; your next attempt is allowed at "
        f"{iso_utc(when)} (in {wait // 60} min {wait % 60} s)"
    )


# ---------------------------------------------------------------------------- batch records


def parse_time(text: str | None) -> dt.datetime | None:
    """An ISO 8601 time as stored in a record (``...Z``) as an aware UTC time.

    >>> parse_time("2026-03-01T12:00:00Z")
    datetime.datetime(2026, 3, 1, 12, 0, tzinfo=datetime.timezone.utc)
    """
    if not text:
        return None
    return aware(dt.datetime.fromisoformat(text.replace("Z", "+00:00"))).astimezone(UTC)


def batch_credit(report: dict, submitted_at: str | None, policy: Policy, default_time: dt.datetime) -> dict:
    """The credit (``Credit.to_dict()``) of a batch's one attempt: a batch has one attempt per learner.

    Its time is ``submitted_at`` (the run that first graded those bytes),
    else ``default_time`` (this run).

    >>> p = parse_policy('[assignment]\\ndue = 2026-03-01T12:00:00Z\\n')
    >>> batch_credit({"score": 4, "max_score": 8, "checks": []}, "2026-03-02T00:00:00Z", p,
    ...              dt.datetime.now(UTC))["credited"]
    0.0
    """
    when = parse_time(submitted_at) or aware(default_time)
    return credit([Attempt("batch", when, report)], policy).to_dict()


def batch_course_credit(
    report: dict, submitted_at: str | None, course: Course, default_time: dt.datetime
) -> tuple[dict, dict | None]:
    """``(credit, assignments)`` of a batch's one attempt under ``course`` (:func:`course_credit`), as JSON data.

    A ``single`` course gives :func:`batch_credit`'s credit and no assignments.

    >>> course = parse_course('[[assignments]]\\nid = "a"\\nsteps = [1]\\ndue = 2026-03-01T12:00:00Z\\n')
    >>> got, entries = batch_course_credit({"score": 2, "max_score": 2, "steps": {"1": {"score": 1, "max_score": 2}}},
    ...                                    "2026-03-01T00:00:00Z", course, dt.datetime.now(UTC))
    >>> got["credited"], entries["a"]["credit"]["credited"]
    (1.0, 1.0)
    """
    if course.single:
        return batch_credit(report, submitted_at, course.policy, default_time), None
    when = parse_time(submitted_at) or aware(default_time)
    total, entries = course_credit([Attempt("batch", when, report)], course)
    assert total is not None  # one graded attempt
    return total.to_dict(), entries


def with_credit(record: dict, policy: Policy, default_time: dt.datetime) -> dict:
    """A batch record (as JSON data) with its ``credit`` under ``policy`` (:func:`batch_credit`).

    >>> p = parse_policy('[assignment]\\ndue = 2026-03-01T12:00:00Z\\n')
    >>> r = {"learner": "ana", "report": {"score": 4, "max_score": 8, "checks": []},
    ...      "submitted_at": "2026-03-02T00:00:00Z"}
    >>> with_credit(r, p, dt.datetime.now(UTC))["credit"]["credited"]
    0.0
    """
    return {**record, "credit": batch_credit(record["report"], record.get("submitted_at"), policy, default_time)}
