"""The course policy applied to the service's stored attempts: the attempt limit, the counting attempt, a status.

Pure functions of the store and a ``grader.course.policy.Course`` (or a
one-assignment ``Policy``), so they are tested without a hub
(``tests/test_course.py``, ``tests/test_course_assignments.py``); the policy
itself is :mod:`grader.course.policy`.

With several assignments a submission is one attempt of each: it counts
against the attempt limit of every assignment still open (before its last
date; once every one has closed, against all), and is refused when one of
those has no attempt left. Each assignment credits its own steps under its
own dates; a learner's extension moves an assignment's dates only when it
makes them later, and their extra attempts apply to every assignment.

Example::

    >>> import datetime as dt
    >>> from grader.course.policy import parse_policy
    >>> from grader.service.db import Store
    >>> store = Store("sqlite://")
    >>> policy = parse_policy('[assignment]\\ndue = 2030-01-01T00:00:00Z\\n[attempts]\\nlimit = 1\\nwindow_minutes = 60\\n')
    >>> refuse(store, "ana", policy) is None
    True
    >>> _ = store.add_attempt("ana", b"x = 1\\n", seed=1)
    >>> refuse(store, "ana", policy)[0].startswith("at most 1 attempt per 60 minutes")
    True
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math

from grader.course.policy import (
    Attempt,
    Course,
    Policy,
    as_course,
    attempts_left,
    aware,
    course_credit,
    credit,
    iso_utc,
    next_allowed,
    refusal,
)
from grader.outputs.record import LearnerRecord, attempt_record
from grader.service.db import Store, utcnow


def for_learner(policy: Policy | None, terms=None) -> Policy | None:
    """The course policy as it applies to one learner: their own due and late dates, their extra attempts.

    ``terms``: a :class:`grader.service.actions_db.Terms` (``None``: the course's policy as it is). An
    extension without a late date keeps the course's late date when it is still after the new due date.

    >>> from types import SimpleNamespace as Terms
    >>> from grader.course.policy import parse_policy
    >>> p = parse_policy('[assignment]\\ndue = 2030-01-01T00:00:00Z\\n[attempts]\\nlimit = 2\\nwindow_minutes = 60\\n')
    >>> mine = for_learner(p, Terms(due=p.due + dt.timedelta(days=3), late_due=None, extra_attempts=1))
    >>> iso_utc(mine.due), mine.limit, for_learner(p, None) is p
    ('2030-01-04T00:00:00Z', 3, True)
    """
    if policy is None or terms is None:
        return policy
    changes: dict = {}
    if terms.due is not None:
        late_due = terms.late_due
        if late_due is None and policy.late_due is not None and policy.late_due > terms.due:
            late_due = policy.late_due
        changes.update(due=terms.due, late_due=late_due)
    if terms.extra_attempts and policy.limit:
        changes["limit"] = policy.limit + terms.extra_attempts
    return dataclasses.replace(policy, **changes) if changes else policy


def course_for_learner(course: Course, terms=None) -> Course:
    """``course`` as it applies to one learner (:func:`for_learner` per assignment).

    In a course of several assignments an extension never makes an assignment
    due earlier: one whose due date is after the extension's keeps its dates.

    >>> from types import SimpleNamespace as Terms
    >>> from grader.course.policy import parse_course
    >>> c = parse_course('[[assignments]]\\nid = "a"\\nsteps = [1]\\ndue = 2030-01-01T00:00:00Z\\n'
    ...                  '[[assignments]]\\nid = "b"\\nsteps = [2]\\ndue = 2030-02-01T00:00:00Z\\n')
    >>> mine = course_for_learner(c, Terms(due=dt.datetime(2030, 1, 5, tzinfo=dt.timezone.utc), late_due=None,
    ...                                    extra_attempts=0))
    >>> [iso_utc(a.policy.due) for a in mine.assignments]
    ['2030-01-05T00:00:00Z', '2030-02-01T00:00:00Z']
    """
    if terms is None:
        return course
    assignments = []
    for a in course.assignments:
        mine = for_learner(a.policy, terms)
        if not course.single and terms.due is not None and aware(terms.due) < a.policy.due:
            mine = dataclasses.replace(mine, due=a.policy.due, late_due=a.policy.late_due)
        assignments.append(dataclasses.replace(a, policy=mine))
    return dataclasses.replace(course, assignments=tuple(assignments))


def open_assignments(course: Course, now: dt.datetime) -> list:
    """The assignments still open at ``now`` (not past their last date), else every one.

    >>> from grader.course.policy import parse_course
    >>> c = parse_course('[assignment]\\ndue = 2030-01-01T00:00:00Z\\n')
    >>> [a.id for a in open_assignments(c, dt.datetime(2031, 1, 1, tzinfo=dt.timezone.utc))]
    ['lab']
    """
    now = aware(now)
    still = [a for a in course.assignments if now <= (a.policy.late_due or a.policy.due)]
    return still or list(course.assignments)


def _now(now: dt.datetime | None) -> dt.datetime:
    return aware(now or utcnow())


def _recent(store: Store, learner: str, policy: Policy, now: dt.datetime, exclude=()) -> list[dt.datetime]:
    since = (now - dt.timedelta(seconds=policy.window)).replace(tzinfo=None)  # the database keeps naive UTC
    return store.times_since(learner, since, exclude)


def refuse(
    store: Store, learner: str, policy: Policy | None, now: dt.datetime | None = None, exclude=(), terms=None
) -> tuple[str, int] | None:
    """``(message, seconds to wait)`` when ``learner`` may not submit now under the course's attempt limit, else None.

    The message says when the next attempt is allowed (``429`` with ``Retry-After``). Attempts the
    grader failed on, and the ids in ``exclude`` (reports not stored yet), do not count. ``terms``:
    the learner's own (:func:`for_learner`: extra attempts raise their limit). With several
    assignments: the open assignment that makes the learner wait longest refuses, its name first.
    """
    course = as_course(policy)
    if course is None:
        return None
    course = course_for_learner(course, terms)
    if course.single:
        return _refuse(store, learner, course.policy, _now(now), exclude)
    worst: tuple[str, int] | None = None
    for a in open_assignments(course, _now(now)):
        got = _refuse(store, learner, a.policy, _now(now), exclude)
        if got is not None and (worst is None or got[1] > worst[1]):
            worst = (f"{a.name}: {got[0]}", got[1])
    return worst


def _refuse(store: Store, learner: str, policy: Policy, now: dt.datetime, exclude) -> tuple[str, int] | None:
    """:func:`refuse` under one assignment's policy."""
    if not policy.limit:
        return None
    times = _recent(store, learner, policy, now, exclude)
    message = refusal(times, policy, now)
    if message is None:
        return None
    wait = math.ceil((next_allowed(times, policy, now) - now).total_seconds())
    return message, max(1, wait)


def status(
    store: Store, learner: str, policy: Course | Policy | None, now: dt.datetime | None = None, terms=None, sent=None
) -> dict | None:
    """``GET api/course``: the due dates, which attempt counts, attempts used and left, when the next is allowed.

    ``None`` without a course file. The keys (docs/classroom.md, "The course status"): ``name``,
    ``due``, ``late_due``, ``late_credit``, ``counts``, ``limit``,
    ``window_minutes`` (the course file); ``attempts_left``, ``next_allowed``,
    ``period_now`` (as before); and ``attempts_used`` (in the current
    window; ``None`` without a limit), ``attempts_total``, ``credit_now``
    (the share of the points an attempt submitted now keeps), ``now`` (the
    service's clock) and ``counted`` (the attempt counting now:
    ``attempt``, ``credited``, ``max_score``, ``period``, ``why``; ``None``
    before one is graded).

    With several assignments those keys are the next open assignment's
    (the attempt limit: the open one with the fewest attempts left),
    ``counted`` is the total, and ``assignments`` has a line per assignment
    (:func:`assignment_lines`). ``sent``: what the LMS was sent, by assignment
    id (an ISO time, or ``None``: not sent), when the service sends grades to
    one: each line (or, with one assignment, the status) then has ``lms``.

    >>> status(Store("sqlite://"), "ana", None) is None
    True
    >>> from grader.course.policy import parse_policy
    >>> p = parse_policy('[assignment]\\ndue = 2030-01-01T00:00:00Z\\n[attempts]\\nlimit = 3\\nwindow_minutes = 60\\n')
    >>> store = Store("sqlite://"); _ = store.add_attempt("ana", b"x = 1\\n", seed=1)
    >>> got = status(store, "ana", p)
    >>> got["attempts_used"], got["attempts_left"], got["attempts_total"], got["credit_now"], got["counted"]
    (1, 2, 1, 1.0, None)

    ``terms``: the learner's own (:func:`for_learner`): their due dates and limit are the ones shown.
    """
    course = as_course(policy)
    if course is None:
        return None
    course = course_for_learner(course, terms)
    now = _now(now)
    records = credited_records(store.finished_of(learner), course)  # already the learner's own policy
    if course.single:
        shown = _assignment_status(store, learner, course.policy, now)
        if sent is not None:
            shown["lms"] = sent.get(course.assignments[0].id)
    else:
        lines = assignment_lines(store, learner, course, now, records[0].assignments if records else None, sent)
        shown = _course_status(lines, course, now)
    shown["attempts_total"] = store.count_since(learner, dt.datetime(1970, 1, 1))
    shown["now"] = iso_utc(now)
    got = records[0].credit if records else None
    shown["counted"] = {key: got[key] for key in ("attempt", "credited", "max_score", "period", "why")} if got else None
    return shown


def _assignment_status(store: Store, learner: str, policy: Policy, now: dt.datetime) -> dict:
    """One assignment's dates, rule, limit, attempts used and left, and what an attempt now keeps."""
    shown = policy.describe()
    if policy.limit:
        times = _recent(store, learner, policy, now)
        shown["attempts_left"] = attempts_left(times, policy, now)
        shown["next_allowed"] = iso_utc(next_allowed(times, policy, now))
        shown["attempts_used"] = policy.limit - shown["attempts_left"]
    else:
        shown["attempts_left"] = shown["next_allowed"] = shown["attempts_used"] = None
    shown["credit_now"], shown["period_now"] = policy.factor(now)
    return shown


def assignment_lines(store: Store, learner: str, course: Course, now: dt.datetime, entries, sent=None) -> list[dict]:
    """A line per assignment: ``id``, ``steps``, ``points``, its :func:`status` keys, ``counted`` (its credit:
    ``attempt``, ``credited``, ``max_score``, ``period``, ``why``; ``None``: nothing graded) and, when the
    service sends grades to an LMS, ``lms`` (when it was sent, ``None``: not sent).

    ``entries``: the learner's record's ``assignments`` (``None``: nothing graded).
    """
    lines = []
    for a in course.assignments:
        line = {
            "id": a.id,
            "steps": list(a.steps),
            "points": a.points,
            **_assignment_status(store, learner, a.policy, now),
        }
        got = ((entries or {}).get(a.id) or {}).get("credit")
        line["counted"] = {k: got[k] for k in ("attempt", "credited", "max_score", "period", "why")} if got else None
        if sent is not None:
            line["lms"] = sent.get(a.id)
        lines.append(line)
    return lines


def _course_status(lines: list[dict], course: Course, now: dt.datetime) -> dict:
    """The top keys of a course of several assignments: the next open one's, the tightest open limit's."""
    open_ids = [a.id for a in open_assignments(course, now)]
    still = [line for line in lines if line["id"] in open_ids]
    shown = {k: v for k, v in still[0].items() if k not in ("id", "steps", "points", "counted", "lms")}
    limited = [line for line in still if line["limit"]]
    if limited:
        tight = min(limited, key=lambda line: (line["attempts_left"], line["next_allowed"] or ""))
        for key in ("limit", "window_minutes", "attempts_left", "next_allowed", "attempts_used"):
            shown[key] = tight[key]
    shown["assignments"] = lines
    return shown


def credited_records(attempts, policy: Course | Policy, terms: dict | None = None) -> list[LearnerRecord]:
    """One record per learner: the attempt the course policy counts, with its ``credit``, by learner.

    Attempts the grading machinery failed on are no attempts here: they are graded again. ``terms``:
    each learner's own (:func:`for_learner`), by learner: their due dates decide their credit.
    With several assignments the record is the newest graded attempt's, with each assignment's
    credit (``assignments``) and their total (``credit``).
    """
    course = as_course(policy)
    assert course is not None
    if not course.single:
        return _course_records(attempts, course, terms)
    policy = course.policy
    by_learner: dict[str, list] = {}
    for a in attempts:
        if a.report is not None and a.score is not None:
            by_learner.setdefault(a.learner, []).append(a)
    records = []
    for learner in sorted(by_learner):
        mine = {a.id: a for a in by_learner[learner]}
        # The counted run's report when there is one: the weights apply to the checks that count.
        got = credit(
            [
                Attempt(a.id, a.submitted_at, json.loads(getattr(a, "counted_report", None) or a.report))
                for a in mine.values()
            ],
            for_learner(policy, (terms or {}).get(learner)),
        )
        records.append(attempt_record(mine[got.attempt], credit=got.to_dict()))
    return records


def _course_records(attempts, course: Course, terms: dict | None) -> list[LearnerRecord]:
    """:func:`credited_records` of a course of several assignments."""
    by_learner: dict[str, list] = {}
    for a in attempts:
        if a.report is not None and a.score is not None:
            by_learner.setdefault(a.learner, []).append(a)
    records = []
    for learner in sorted(by_learner):
        mine = {a.id: a for a in by_learner[learner]}
        total, entries = course_credit(
            [
                Attempt(a.id, a.submitted_at, json.loads(getattr(a, "counted_report", None) or a.report))
                for a in mine.values()
            ],
            course_for_learner(course, (terms or {}).get(learner)),
        )
        assert total is not None  # every attempt here is graded
        records.append(attempt_record(mine[total.attempt], credit=total.to_dict(), assignments=entries))
    return records


def credited_from_scores(rows, policy: Policy, read, terms: dict | None = None) -> list[LearnerRecord]:
    """:func:`credited_records` chosen from stored scores (``rows``: id, learner, submitted_at, score, max_score).

    Without check weights the credit needs only the score, so ``read(ids)``
    (the store's ``with_reports``) loads the counting attempts' reports only. ``terms``: as in
    :func:`credited_records`.

    >>> from types import SimpleNamespace as Row
    >>> from grader.course.policy import parse_policy
    >>> p = parse_policy('[assignment]\\ndue = 2030-01-01T00:00:00Z\\ncounts = "last"\\n')
    >>> when = dt.datetime(2029, 1, 1)
    >>> rows = [Row(id=1, learner="ana", submitted_at=when, score=9, max_score=9),
    ...         Row(id=2, learner="ana", submitted_at=when + dt.timedelta(hours=1), score=3, max_score=9)]
    >>> asked = []
    >>> _ = credited_from_scores(rows, p, lambda ids: asked.extend(ids) or [])
    >>> asked
    [2]
    """
    by_learner: dict[str, list] = {}
    for r in rows:
        by_learner.setdefault(r.learner, []).append(r)
    chosen = {}
    for learner in sorted(by_learner):
        got = credit(
            [
                Attempt(r.id, r.submitted_at, {"score": r.score, "max_score": r.max_score, "checks": []})
                for r in by_learner[learner]
            ],
            for_learner(policy, (terms or {}).get(learner)),
        )
        if got is not None:
            chosen[got.attempt] = got
    full = {a.id: a for a in read(list(chosen))}
    ids = sorted((i for i in chosen if i in full), key=lambda i: full[i].learner)
    return [attempt_record(full[i], credit=chosen[i].to_dict()) for i in ids]
