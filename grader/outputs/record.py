"""One learner's result, typed: what every class output (gradebook, LMS files, summary, feedback) reads.

A batch saves one as ``OUT/results/<learner>.json`` (:mod:`grader.batch.records`);
the grading service builds one per learner from its stored attempts
(:func:`attempt_record`). Both give the same :class:`LearnerRecord`, so the
outputs of :mod:`grader.outputs` are the same functions for both. Its JSON
shape is ``tests/schemas/learner_record.schema.json``.

A record whose report carries a failure of the grading machinery (see
:class:`grader.report.Failure`) is a row without a grade: :attr:`LearnerRecord.graded`
is false, so no output counts its zero.

Example::

    >>> r = LearnerRecord.from_dict({"learner": "ana", "seed": 3, "report": {"score": 2, "max_score": 4}})
    >>> r.score, r.graded, LearnerRecord.from_dict(r.to_dict()) == r
    (2, True, True)
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field, fields

from grader.report import Failure, Report, failure_of

NO_SELECTION = {"steps": None, "only": None}
# Keys written only when they hold something, so a record's JSON is what it was before this type existed.
_OPTIONAL = ("feedback_seed", "feedback_report", "submitted_at", "attempt", "credit", "assignments")


@dataclass
class LearnerRecord:
    """What is known of one learner: the file graded, its hash and seed, the grade report, and its credit.

    ``report`` is the grade that counts (``Report.to_dict()``). With a seed key,
    ``feedback_seed``/``feedback_report`` are the run the learner is shown.
    ``submitted_at`` (ISO 8601 UTC) is the attempt's time under a course
    policy; ``attempt`` the service's attempt id; ``credit`` what the course
    policy made of it (``grader.course.policy.Credit.to_dict()``; with several
    assignments, their total). ``assignments``: with several assignments, each
    one's name, due date, points and credit by id (``grader.course.policy.assignment_entries``).

    >>> LearnerRecord("ana", {"score": 0, "max_score": 4, "error": "x"}).to_dict()["selection"]
    {'steps': None, 'only': None}
    """

    learner: str
    report: dict
    source: str = ""
    sha256: str = ""
    seed: int | None = None
    selection: dict = field(default_factory=lambda: dict(NO_SELECTION))
    feedback_seed: int | None = None
    feedback_report: dict | None = None
    submitted_at: str | None = None
    attempt: int | None = None
    credit: dict | None = None
    assignments: dict | None = None
    # The parsed reports, made once: feedback, Gradescope and LMS outputs each read them
    # (parsing 80 checks three times a learner cost a class's outputs 6 ms a learner).
    _parsed: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def grade_report(self) -> Report:
        """The grade that counts as a :class:`grader.report.Report` (parsed once per record).

        >>> r = LearnerRecord("ana", {"seed": 1, "path": "t.py", "checks": []})
        >>> r.grade_report() is r.grade_report(), r.grade_report().seed
        (True, 1)
        """
        if "grade" not in self._parsed:
            self._parsed["grade"] = Report.from_dict(self.report)
        return self._parsed["grade"]

    def shown_report(self) -> Report:
        """The report the learner is shown: the feedback run with a seed key, else the grade (parsed once).

        >>> r = LearnerRecord("ana", {"seed": 1, "path": "t.py", "checks": []})
        >>> r.shown_report() is r.grade_report()
        True
        """
        if not self.feedback_report:
            return self.grade_report()
        if "shown" not in self._parsed:
            self._parsed["shown"] = Report.from_dict(self.feedback_report)
        return self._parsed["shown"]

    @classmethod
    def from_dict(cls, data: dict) -> LearnerRecord:
        """A record from its JSON data (unknown keys are ignored, missing ones take their defaults).

        >>> LearnerRecord.from_dict({"report": {}}).learner
        ''
        """
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values.setdefault("learner", "")
        values.setdefault("report", {})
        return cls(**values)

    def to_dict(self) -> dict:
        """The record as JSON data: the saved file's shape, optional keys only when set.

        >>> LearnerRecord("ana", {}, credit={"credited": 1.0}).to_dict()["credit"]
        {'credited': 1.0}
        """
        data = {
            "learner": self.learner,
            "source": self.source,
            "sha256": self.sha256,
            "seed": self.seed,
            "selection": self.selection,
            "report": self.report,
        }
        for name in _OPTIONAL:
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        return data

    # Read like its JSON too (``record["report"]``), for code and notebooks written against the saved files.
    def __getitem__(self, key: str):
        """``record[key]``: the value :meth:`to_dict` has under ``key`` (``KeyError`` for an unset optional key).

        >>> LearnerRecord("ana", {"score": 1})["report"]["score"]
        1
        """
        return self.to_dict()[key]

    def __contains__(self, key: str) -> bool:
        return key in self.to_dict()

    def get(self, key: str, default=None):
        """``record.get(key, default)``, as on the JSON dict."""
        return self.to_dict().get(key, default)

    @property
    def failure(self) -> Failure | None:
        """Why the submission could not be graded as a whole, typed (``None``: it was graded)."""
        return failure_of(self.report)

    @property
    def graded(self) -> bool:
        """Whether the report is a grade: not a failure of the grading machinery (which is graded again).

        >>> LearnerRecord("ana", {"score": 0, "failure": {"kind": "grader", "message": "died"}}).graded
        False
        """
        failure = self.failure
        return failure is None or not failure.retry

    @property
    def score(self) -> int | None:
        """The report's points, or ``None`` when it is not a grade."""
        return self.report.get("score") if self.graded else None

    @property
    def max_score(self) -> int | None:
        return self.report.get("max_score")

    @property
    def error(self) -> str:
        """Why the submission could not be graded (``""`` when it was)."""
        return self.report.get("error") or ""


def as_records(records: Iterable[LearnerRecord | dict]) -> list[LearnerRecord]:
    """Records, typed and sorted by learner (dicts, e.g. read from JSON, are parsed), so outputs do not depend on order.

    >>> [r.learner for r in as_records([{"learner": "bo", "report": {}}, LearnerRecord("al", {})])]
    ['al', 'bo']
    """
    typed = [r if isinstance(r, LearnerRecord) else LearnerRecord.from_dict(r) for r in records]
    return sorted(typed, key=lambda r: r.learner)


def attempt_record(attempt, *, credit: dict | None = None, assignments: dict | None = None) -> LearnerRecord:
    """The record of one of the service's stored attempts (an object with ``learner``, ``id``, ``sha256``,
    ``seed``, ``report`` (JSON text) and ``submitted_at``).

    With a ``counted_report`` (the service's seed key) the record is the keyed
    batch's: ``report``/``seed`` are the counted run (instructor-only files),
    ``feedback_report``/``feedback_seed`` the run the learner was shown.

    >>> from types import SimpleNamespace as A
    >>> attempt_record(A(learner="ana", id=4, sha256="ab", seed=1, report='{"score": 1}')).source
    'ana/attempt-4/tools.py'
    >>> r = attempt_record(A(learner="ana", id=4, sha256="ab", seed=1, report='{"seed": 1, "score": 2}',
    ...                      counted_report='{"seed": 99, "score": 1}'))
    >>> r.seed, r.score, r.feedback_seed, r.feedback_report["score"]
    (99, 1, 1, 2)
    """
    shown = json.loads(attempt.report)
    counted = getattr(attempt, "counted_report", None)
    runs = {"seed": attempt.seed, "report": shown}
    if counted:
        counted = json.loads(counted)
        runs = {"seed": counted.get("seed"), "report": counted, "feedback_seed": attempt.seed, "feedback_report": shown}
    return LearnerRecord(
        learner=attempt.learner,
        source=f"{attempt.learner}/attempt-{attempt.id}/tools.py",
        sha256=attempt.sha256,
        attempt=attempt.id,
        credit=credit,
        assignments=assignments,
        **runs,
    )
