"""The class as the service counts it: each learner's counting record, with the course policy and instructor actions.

Pure functions of the store (no request), shared by the request handlers
(:mod:`grader.service.base`, :mod:`grader.service.handlers`, :mod:`grader.service.api`) and the LTI sender.

Example::

    >>> from grader.service.db import Store
    >>> class_data(Store("sqlite://"))[0]
    []
"""

from __future__ import annotations

from grader.course.policy import as_course
from grader.outputs.record import LearnerRecord
from grader.service import attempt_policy, classview
from grader.service.actions import apply_overrides, with_extensions
from grader.service.actions_db import TERMS_KINDS, ActionLog, overrides_of, terms_by_learner
from grader.service.db import Store


def class_data(store: Store, policy=None) -> tuple[list[dict], list[LearnerRecord], dict]:
    """(rows per learner, the counting records, pass rates and wrong answers) from what is stored now.

    Without a course policy the best attempt counts; with one, the attempt
    ``grader.course.policy.credit`` picks, with its credited score and why.
    ``policy``: a ``grader.course.policy.Course`` or a one-assignment ``Policy``;
    with several assignments each record has each one's credit (``assignments``).

    >>> store = Store("sqlite://")
    >>> a = store.add_attempt("ana", b"x = 1\\n", seed=1)
    >>> rows, records, outputs = class_data(store)
    >>> rows[0]["pending"], records, outputs
    (1, [], {'checks': [], 'wrong_answers': []})
    """
    actions = ActionLog(store).all(kinds=TERMS_KINDS)  # not the learners' requests: they change no grade
    terms = terms_by_learner(actions)  # extensions and extra attempts, then overrides: the grade that counts
    records = apply_overrides(with_extensions(counting_records(store, policy, terms), terms), actions)
    rows = classview.class_rows(store.all_summaries(), {r.learner: r for r in records})
    return rows, records, classview.class_outputs(records)


def counting_records(store: Store, policy=None, terms: dict | None = None) -> list[LearnerRecord]:
    """Each learner's counting attempt, reading the reports of those attempts only (not every attempt's).

    The choice is made on the stored scores; a course policy with check
    weights, or of several assignments, needs every graded report (the
    weights apply per check, an assignment credits its own steps).
    """
    rows = store.graded_scores()
    course = as_course(policy)
    if course is None:
        best: dict = {}
        for r in rows:
            kept = best.get(r.learner)
            if kept is None or (r.score, r.id) >= (kept.score, kept.id):
                best[r.learner] = r
        return classview.best_records(store.with_reports(r.id for r in best.values()))
    if course.weights or not course.single:
        return attempt_policy.credited_records(store.with_reports(r.id for r in rows), course, terms)
    return attempt_policy.credited_from_scores(rows, course.policy, store.with_reports, terms)


def _records(attempts, policy, actions=()) -> list[LearnerRecord]:
    """The counting records of one learner's ``attempts`` under ``policy`` (their ``feedback.md``, ``results.json``).

    Called by :class:`grader.service.handlers.learners.LearnerFeedback`; ``actions``: that learner's instructor actions.
    """
    terms = terms_by_learner(actions)
    records = (
        attempt_policy.credited_records(attempts, policy, terms)
        if policy is not None
        else classview.best_records(attempts)
    )
    return apply_overrides(with_extensions(records, terms), list(actions))


def course_status(store: Store, learner: str, policy, sent=None) -> dict | None:
    """``GET api/course`` of ``learner``: their own dates and limit; ``counted`` says when a grade was overridden.

    ``sent``: what reached the LMS, by assignment id (:func:`grader.service.attempt_policy.status`).
    """
    log = ActionLog(store)
    actions = log.all(learner)
    shown = attempt_policy.status(store, learner, policy, terms=terms_by_learner(actions).get(learner), sent=sent)
    override = overrides_of(actions).get(learner)
    if shown is not None and shown.get("counted") and override is not None:
        shown["counted"] = {
            **shown["counted"],
            "credited": override["data"]["score"],
            "why": f"set by your instructor: {override['reason']}",
        }
    return shown
