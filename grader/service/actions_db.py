"""Instructor actions, every one recorded: who, when (UTC), what, why, which learner, and the action's data.

Two tables beside ``attempts`` (Alembic revision 0004):

* ``instructor_actions``: one row per action, never changed nor deleted. ``kind`` is
  ``extension`` (a learner's own due and late dates), ``attempts`` (extra
  attempts added to the course limit for a learner), ``override`` (a grade
  with its required reason; the newest one of a learner counts), ``regrade``
  (attempts graded again after a grader fix), ``appeal`` (a regrade request
  a learner files about their own attempt: ``actor`` is the learner) and
  ``answer`` (the instructor's answer to an appeal: ``refers_to`` is the
  appeal's id, ``data.accepted`` says whether it was accepted).
* ``past_results``: the result an attempt had before a regrade (status,
  scores, reports, when it was graded), so a regrade never loses a grade.

Example::

    >>> from grader.service.db import Store
    >>> store = Store("sqlite://")
    >>> log = ActionLog(store)
    >>> act = log.record("teacher", "attempts", learner="ana", reason="illness", data={"extra": 2})
    >>> act["kind"], act["actor"], act["learner"], act["reason"], act["data"]
    ('attempts', 'teacher', 'ana', 'illness', {'extra': 2})
    >>> log.terms("ana").extra_attempts, log.terms("bob").extra_attempts
    (2, 0)
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

from sqlalchemy import (
    BigInteger,
    DateTime,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    cast,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.orm import Mapped, mapped_column

from grader.service.db import ERROR, GRADED, QUEUED, Attempt, Base, Store, iso, utcnow

EXTENSION, ATTEMPTS, OVERRIDE, REGRADE, APPEAL, ANSWER = (
    "extension",
    "attempts",
    "override",
    "regrade",
    "appeal",
    "answer",
)
LTI = "lti"  # a grade sent to the LMS (grader.service.lti_service): what was sent and what the LMS answered
KINDS = (EXTENSION, ATTEMPTS, OVERRIDE, REGRADE, APPEAL, ANSWER, LTI)
INSTRUCTOR_KINDS = (EXTENSION, ATTEMPTS, OVERRIDE, REGRADE, ANSWER)  # what instructors do (an appeal is a learner's)
TERMS_KINDS = (EXTENSION, ATTEMPTS, OVERRIDE)  # what changes a learner's grade: the class's outputs read these


class InstructorAction(Base):
    """One recorded action: never updated, never deleted (the history is the table)."""

    __tablename__ = "instructor_actions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[dt.datetime] = mapped_column(DateTime, nullable=False)  # UTC, naive as in ``attempts``
    actor: Mapped[str] = mapped_column(String(255), nullable=False)  # the hub name of who did it
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    learner: Mapped[str | None] = mapped_column(String(255))  # None: the whole class
    attempt_id: Mapped[int | None] = mapped_column(Integer)
    refers_to: Mapped[int | None] = mapped_column(Integer)  # an answer: the appeal's id
    reason: Mapped[str] = mapped_column(Text, nullable=False, default="")  # why (an appeal: the learner's text)
    data: Mapped[str] = mapped_column(Text, nullable=False, default="{}")  # JSON

    __table_args__ = (Index("ix_actions_learner_id", "learner", "id"), Index("ix_actions_kind", "kind"))

    def as_dict(self) -> dict:
        return {
            "id": self.id,
            "at": iso(self.at),
            "actor": self.actor,
            "kind": self.kind,
            "learner": self.learner,
            "attempt": self.attempt_id,
            "refers_to": self.refers_to,
            "reason": self.reason,
            "data": json.loads(self.data),
        }


class PastResult(Base):
    """The result an attempt had before a regrade put it back in the queue (``action_id``: that regrade)."""

    __tablename__ = "past_results"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    action_id: Mapped[int] = mapped_column(Integer, nullable=False)
    attempt_id: Mapped[int] = mapped_column(Integer, nullable=False)
    learner: Mapped[str] = mapped_column(String(255), nullable=False)
    status: Mapped[str] = mapped_column(String(16), nullable=False)
    score: Mapped[int | None] = mapped_column(Integer)
    max_score: Mapped[int | None] = mapped_column(Integer)
    seed: Mapped[int] = mapped_column(BigInteger, nullable=False)
    report: Mapped[str | None] = mapped_column(Text)
    counted_report: Mapped[str | None] = mapped_column(Text)
    key_fingerprint: Mapped[str | None] = mapped_column(String(16))
    graded_at: Mapped[dt.datetime | None] = mapped_column(DateTime)

    __table_args__ = (Index("ix_past_results_attempt", "attempt_id"),)

    def as_dict(self) -> dict:
        """What a learner may see of a past result: its scores and when (not the hidden counted run)."""
        return {
            "attempt": self.attempt_id,
            "regrade": self.action_id,
            "status": self.status,
            "score": self.score,
            "max_score": self.max_score,
            "graded_at": iso(self.graded_at),
        }


@dataclass(frozen=True)
class Terms:
    """A learner's own terms: their due and late dates (``None``: the course's) and extra attempts."""

    due: dt.datetime | None = None
    late_due: dt.datetime | None = None
    extra_attempts: int = 0


def terms_of(actions: list[dict]) -> Terms:
    """The terms the actions of one learner (oldest first) grant: the newest extension, the sum of extra attempts.

    >>> terms_of([{"kind": "extension", "data": {"due": "2030-01-02T00:00:00Z", "late_due": None}},
    ...           {"kind": "attempts", "data": {"extra": 1}}, {"kind": "attempts", "data": {"extra": 2}}])
    Terms(due=datetime.datetime(2030, 1, 2, 0, 0, tzinfo=datetime.timezone.utc), late_due=None, extra_attempts=3)
    """
    from grader.course.policy import parse_time

    due = late_due = None
    extra = 0
    for a in actions:
        if a["kind"] == EXTENSION:
            due, late_due = parse_time(a["data"]["due"]), parse_time(a["data"].get("late_due"))
        elif a["kind"] == ATTEMPTS:
            extra += int(a["data"]["extra"])
    return Terms(due=due, late_due=late_due, extra_attempts=extra)


def terms_by_learner(actions: list[dict]) -> dict[str, Terms]:
    """Every learner with an extension or extra attempts in ``actions`` (oldest first): their :class:`Terms`.

    >>> terms_by_learner([{"kind": "attempts", "learner": "ana", "data": {"extra": 1}}, {"kind": "regrade"}])
    {'ana': Terms(due=None, late_due=None, extra_attempts=1)}
    """
    by_learner: dict[str, list] = {}
    for a in actions:
        if a["kind"] in (EXTENSION, ATTEMPTS):
            by_learner.setdefault(a["learner"], []).append(a)
    return {learner: terms_of(mine) for learner, mine in by_learner.items()}


def overrides_of(actions: list[dict]) -> dict[str, dict]:
    """The override that counts per learner: the newest ``override`` action (oldest first in ``actions``).

    >>> overrides_of([{"kind": "override", "learner": "ana", "data": {"score": 1}},
    ...               {"kind": "override", "learner": "ana", "data": {"score": 5}}])["ana"]["data"]["score"]
    5
    """
    return {a["learner"]: a for a in actions if a["kind"] == OVERRIDE}


def open_appeals(actions: list[dict]) -> list[dict]:
    """The appeals no answer refers to yet, oldest first.

    >>> open_appeals([{"id": 1, "kind": "appeal"}, {"id": 2, "kind": "appeal"}, {"id": 3, "kind": "answer",
    ...               "refers_to": 1}])
    [{'id': 2, 'kind': 'appeal'}]
    """
    answered = {a["refers_to"] for a in actions if a["kind"] == ANSWER}
    return [a for a in actions if a["kind"] == APPEAL and a["id"] not in answered]


class ActionLog:
    """The instructor actions of one :class:`~grader.service.db.Store`'s database (same engine, same migrations)."""

    def __init__(self, store: Store):
        self.store = store

    def record(
        self,
        actor: str,
        kind: str,
        *,
        learner: str | None = None,
        attempt: int | None = None,
        refers_to: int | None = None,
        reason: str = "",
        data: dict | None = None,
    ) -> dict:
        """Store one action now; return it as :meth:`InstructorAction.as_dict` gives it."""
        if kind not in KINDS:
            raise ValueError(f"an action is one of {', '.join(KINDS)}, not {kind!r}")
        row = InstructorAction(
            at=utcnow(),
            actor=actor,
            kind=kind,
            learner=learner,
            attempt_id=attempt,
            refers_to=refers_to,
            reason=reason,
            data=json.dumps(data or {}, sort_keys=True, ensure_ascii=False),
        )
        with self.store.session() as s, s.begin():
            s.add(row)
        return row.as_dict()

    def get(self, action_id: int) -> dict | None:
        with self.store.session() as s:
            row = s.get(InstructorAction, action_id)
            return None if row is None else row.as_dict()

    def all(self, learner: str | None = None, *, with_class: bool = False, kinds=None) -> list[dict]:
        """Every action, oldest first; ``learner``: theirs only (``with_class``: and those for the whole class);
        ``kinds``: of those kinds only (e.g. :data:`INSTRUCTOR_KINDS`: not the learners' requests)."""
        query = select(InstructorAction).order_by(InstructorAction.id)
        if learner is not None:
            who = InstructorAction.learner == learner
            query = query.where(who | InstructorAction.learner.is_(None) if with_class else who)
        if kinds is not None:
            query = query.where(InstructorAction.kind.in_(list(kinds)))
        with self.store.session() as s:
            return [row.as_dict() for row in s.scalars(query)]

    def terms(self, learner: str) -> Terms:
        return terms_of(self.all(learner))

    def all_terms(self) -> dict[str, Terms]:
        return terms_by_learner(self.all())

    def overrides(self) -> dict[str, dict]:
        return overrides_of(self.all())

    def version(self) -> int:
        """The newest instructor action's id: the class's outputs change with every one of them.

        A learner's regrade request changes no output (an answer to it is the
        instructor's action), so it leaves the version, and the cached class
        outputs, as they are.

        >>> from grader.service.db import Store
        >>> log = ActionLog(Store("sqlite://"))
        >>> log.version(), log.record("ana", APPEAL, learner="ana", attempt=1, reason="why?")["id"], log.version()
        (0, 1, 0)
        """
        with self.store.session() as s:
            # Nor does a send to the LMS (kind lti): it reports a grade, it changes none.
            return (
                s.scalar(select(func.max(InstructorAction.id)).where(InstructorAction.kind.notin_((APPEAL, LTI)))) or 0
            )

    def requests_since(self, learner: str, since: dt.datetime) -> list[dt.datetime]:
        """When ``learner`` filed each regrade request at or after ``since`` (naive UTC), oldest first: their limit."""
        with self.store.session() as s:
            return list(
                s.scalars(
                    select(InstructorAction.at)
                    .where(
                        InstructorAction.kind == APPEAL,
                        InstructorAction.learner == learner,
                        InstructorAction.at >= since,
                    )
                    .order_by(InstructorAction.at)
                )
            )

    def request_bytes(self, learner: str) -> int:
        """The bytes (UTF-8) of the texts of ``learner``'s regrade requests: they count in the learner's storage bound.

        >>> from grader.service.db import Store
        >>> log = ActionLog(Store("sqlite://"))
        >>> _ = log.record("ana", APPEAL, learner="ana", attempt=1, reason="é" * 3)
        >>> log.request_bytes("ana"), log.request_bytes("bob")
        (6, 0)
        """
        reason = InstructorAction.reason
        size = (
            func.octet_length(reason)
            if self.store.engine.dialect.name == "postgresql"
            else func.length(cast(reason, LargeBinary))
        )  # SQLite: a text cast to a blob is its UTF-8 bytes
        with self.store.session() as s:
            return int(
                s.scalar(
                    select(func.sum(size)).where(InstructorAction.kind == APPEAL, InstructorAction.learner == learner)
                )
                or 0
            )

    def open_requests(self, limit: int) -> tuple[int, int, list[dict]]:
        """The regrade requests no answer refers to yet: how many, from how many learners, and the oldest ``limit``.

        The class page shows these, not every text (``class/actions`` has them all).

        >>> from grader.service.db import Store
        >>> log = ActionLog(Store("sqlite://"))
        >>> first, _ = (log.record(w, APPEAL, learner=w, attempt=1, reason="?") for w in ("ana", "ana"))
        >>> _ = log.record("t", ANSWER, learner="ana", refers_to=first["id"], reason="no")
        >>> count, learners, oldest = log.open_requests(5); count, learners, [a["id"] for a in oldest]
        (1, 1, [2])
        """
        answered = select(InstructorAction.refers_to).where(
            InstructorAction.kind == ANSWER, InstructorAction.refers_to.is_not(None)
        )
        waiting = (InstructorAction.kind == APPEAL) & InstructorAction.id.not_in(answered)
        with self.store.session() as s:
            count = s.scalar(select(func.count()).select_from(InstructorAction).where(waiting)) or 0
            learners = s.scalar(select(func.count(func.distinct(InstructorAction.learner))).where(waiting)) or 0
            oldest = [
                row.as_dict()
                for row in s.scalars(select(InstructorAction).where(waiting).order_by(InstructorAction.id).limit(limit))
            ]
        return count, learners, oldest

    def regrade(
        self,
        actor: str,
        ids,
        *,
        scope: str,
        learner: str | None = None,
        attempt: int | None = None,
        refers_to: int | None = None,
        reason: str = "",
    ) -> tuple[dict, list[tuple[int, str]]]:
        """Record a regrade of the finished attempts among ``ids``, keep their results, queue them: one transaction.

        Returns the action (``data.attempts``: the attempts put back, ``queued``)
        and their ``(id, learner)``; attempts not finished (already queued or
        being graded) are left as they are.

        >>> from grader.service.db import Store
        >>> store = Store("sqlite://"); log = ActionLog(store)
        >>> a = store.add_attempt("ana", b"x", seed=1); _ = store.take(a); _ = store.finish(a, "graded", {"score": 1})
        >>> action, queued = log.regrade("t", [a, 99], scope="all")
        >>> action["data"], queued, store.get(a).status, [p["score"] for p in log.past_results("ana")]
        ({'attempts': [1], 'scope': 'all'}, [(1, 'ana')], 'queued', [1])
        """
        ids = sorted(set(ids))
        with self.store.session() as s, s.begin():
            rows = list(
                s.execute(
                    select(
                        Attempt.id,
                        Attempt.learner,
                        Attempt.status,
                        Attempt.score,
                        Attempt.max_score,
                        Attempt.seed,
                        Attempt.report,
                        Attempt.counted_report,
                        Attempt.key_fingerprint,
                        Attempt.graded_at,
                    )
                    .where(Attempt.id.in_(ids or [-1]), Attempt.status.in_((GRADED, ERROR)))
                    .order_by(Attempt.id)
                    .with_for_update()
                )
            )
            action = InstructorAction(
                at=utcnow(),
                actor=actor,
                kind=REGRADE,
                learner=learner,
                attempt_id=attempt,
                refers_to=refers_to,
                reason=reason,
                data=json.dumps({"scope": scope, "attempts": [r.id for r in rows]}, sort_keys=True),
            )
            s.add(action)
            s.flush()  # the action's id, for its past results
            if rows:
                s.execute(
                    insert(PastResult),
                    [
                        {
                            "action_id": action.id,
                            "attempt_id": r.id,
                            "learner": r.learner,
                            "status": r.status,
                            "score": r.score,
                            "max_score": r.max_score,
                            "seed": r.seed,
                            "report": r.report,
                            "counted_report": r.counted_report,
                            "key_fingerprint": r.key_fingerprint,
                            "graded_at": r.graded_at,
                        }
                        for r in rows
                    ],
                )
                s.execute(
                    update(Attempt)
                    .where(Attempt.id.in_([r.id for r in rows]))
                    .values(
                        status=QUEUED,
                        score=None,
                        max_score=None,
                        report=None,
                        counted_report=None,
                        graded_at=None,
                        stored_bytes=func.length(Attempt.source),
                    )
                )
            return action.as_dict(), [(r.id, r.learner) for r in rows]

    def past_results(self, learner: str | None = None) -> list[dict]:
        """The results regrades replaced, oldest first (``learner``: theirs only)."""
        query = select(PastResult).order_by(PastResult.id)
        if learner is not None:
            query = query.where(PastResult.learner == learner)
        with self.store.session() as s:
            return [row.as_dict() for row in s.scalars(query)]


def kept_bytes(store: Store, learner: str) -> int:
    """What ``learner`` keeps in the service: their attempts (sources and reports) and their regrade requests' texts.

    The per-learner storage bound (``--max-learner-bytes``) holds this, for a submission and for a request alike.

    >>> store = Store("sqlite://"); _ = store.add_attempt("ana", b"x = 1\\n", seed=1)
    >>> _ = ActionLog(store).record("ana", APPEAL, learner="ana", attempt=1, reason="step 2?")
    >>> kept_bytes(store, "ana")
    13
    """
    return store.stored_bytes_of(learner) + ActionLog(store).request_bytes(learner)


def learner_view(actions: list[dict], learner: str, own_ids: set[int]) -> list[dict]:
    """The actions as ``learner`` may see them: a class-wide regrade lists only their own attempts.

    >>> learner_view([{"kind": "regrade", "learner": None, "data": {"scope": "all", "attempts": [1, 2]}}], "ana", {2})
    [{'kind': 'regrade', 'learner': None, 'data': {'scope': 'all', 'attempts': [2]}}]
    """
    shown = []
    for a in actions:
        if a["learner"] is None and a["kind"] == REGRADE:
            a = {**a, "data": {**a["data"], "attempts": [i for i in a["data"].get("attempts", []) if i in own_ids]}}
        shown.append(a)
    return shown
