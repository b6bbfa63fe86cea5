"""The course policy applied to the service's stored attempts: the attempt limit, the counting attempt, a status.

Pure functions of the store and a ``grader.course.policy.Policy``, so they
are tested without a hub (``tests/test_course.py``); the policy itself is :mod:`grader.course.policy`.

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

from grader.course.policy import Attempt, Policy, attempts_left, aware, credit, iso_utc, next_allowed, refusal
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
    the learner's own (:func:`for_learner`: extra attempts raise their limit).
    """
    policy = for_learner(policy, terms)
    if policy is None or not policy.limit:
        return None
    now = _now(now)
    times = _recent(store, learner, policy, now, exclude)
    message = refusal(times, policy, now)
    if message is None:
        return None
    wait = math.ceil((next_allowed(times, policy, now) - now).total_seconds())
    return message, max(1, wait)


def status(
    store: Store, learner: str, policy: Policy | None, now: dt.datetime | None = None, terms=None
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
    if policy is None:
        return None
    policy = for_learner(policy, terms)
    now = _now(now)
    shown = policy.describe()
    if policy.limit:
        times = _recent(store, learner, policy, now)
        shown["attempts_left"] = attempts_left(times, policy, now)
        shown["next_allowed"] = iso_utc(next_allowed(times, policy, now))
        shown["attempts_used"] = policy.limit - shown["attempts_left"]
    else:
        shown["attempts_left"] = shown["next_allowed"] = shown["attempts_used"] = None
    shown["credit_now"], shown["period_now"] = policy.factor(now)
    shown["attempts_total"] = store.count_since(learner, dt.datetime(1970, 1, 1))
    shown["now"] = iso_utc(now)
    records = credited_records(store.finished_of(learner), policy)  # already the learner's own policy
    got = records[0].credit if records else None
    shown["counted"] = {key: got[key] for key in ("attempt", "credited", "max_score", "period", "why")} if got else None
    return shown


def credited_records(attempts, policy: Policy, terms: dict | None = None) -> list[LearnerRecord]:
    """One record per learner: the attempt the course policy counts, with its ``credit``, by learner.

    Attempts the grading machinery failed on are no attempts here: they are graded again. ``terms``:
    each learner's own (:func:`for_learner`), by learner: their due dates decide their credit.
    """
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
