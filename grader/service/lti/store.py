"""What the service keeps for LTI: each learner's launch claims and the outbox of scores for the LMS.

Three tables in the service's database (Alembic revisions 0005 and 0006):

* ``lti_launches``: one row per learner, platform, deployment, context and
  resource link; the launch's ``sub`` (how the LMS knows the learner: scores
  go to it, never to a name), its AGS line item and scopes, its NRPS URL and
  roles. A newer launch of the same link updates the row.
* ``lti_outbox``: one row per line item and ``sub``: the score wanted now
  and the score the LMS last accepted. A row is due while the two differ,
  so the same grade wanted twice is sent once, and a grade that changes while
  the LMS is down is sent once, as it is when the LMS is back.
* ``lti_lineitems``: one row per platform, course (context) and assignment of
  the course file: the AGS line item (the LMS's column) its scores go to.
  The row is unique, and whoever makes the column claims the row first
  (:meth:`LineItems.claim`), so two senders (two threads, a restarted
  service beside the old one) never both make one.

Example::

    >>> from sqlalchemy import create_engine
    >>> engine = create_engine("sqlite://"); LtiBase.metadata.create_all(engine)  # (the service migrates instead)
    >>> launches, outbox = Launches(engine), Outbox(engine)
    >>> claims = {"sub": "u-1", "iss": "https://lms", CLAIM + "deployment_id": "d1",
    ...           CLAIM + "context": {"id": "c1"}, CLAIM + "resource_link": {"id": "r1"},
    ...           AGS: {"lineitem": "https://lms/li/1", "scope": [SCORE_SCOPE]}}
    >>> launches.record("ana", claims)["lineitem"]
    'https://lms/li/1'
    >>> outbox.want(launches.of("ana")[0], 7, 10), outbox.want(launches.of("ana")[0], 7, 10)
    ('queued', 'queued')
    >>> [(r.sub, r.score_given) for r in outbox.due()]
    [('u-1', 7.0)]
    >>> outbox.sent(outbox.due()[0].id, 200, "ok", 7, 10); outbox.want(launches.of("ana")[0], 7, 10), outbox.due()
    ('already sent', [])
"""

from __future__ import annotations

import datetime as dt
import json

from sqlalchemy import DateTime, Float, Index, Integer, String, Text, UniqueConstraint, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, sessionmaker

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
PENDING, SENT, REFUSED = "pending", "sent", "refused"


def utcnow() -> dt.datetime:
    """Naive UTC, as the service's other tables keep times."""
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


class LtiBase(DeclarativeBase):
    pass


class Launch(LtiBase):
    """A learner's launch from one resource link of one context (the newest claims of that link)."""

    __tablename__ = "lti_launches"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    learner: Mapped[str] = mapped_column(String(255), nullable=False)  # the hub name
    sub: Mapped[str] = mapped_column(String(255), nullable=False)  # the LMS's id of the learner
    issuer: Mapped[str] = mapped_column(String(255), nullable=False)
    deployment_id: Mapped[str] = mapped_column(String(255), nullable=False)
    context_id: Mapped[str] = mapped_column(String(255), nullable=False, default="")
    context_title: Mapped[str] = mapped_column(String(255), nullable=False, default="")
    resource_link_id: Mapped[str] = mapped_column(String(255), nullable=False, default="")
    lineitem: Mapped[str | None] = mapped_column(String(2048))  # AGS: where this link's scores go
    lineitems: Mapped[str | None] = mapped_column(String(2048))
    ags_scopes: Mapped[str] = mapped_column(Text, nullable=False, default="[]")  # JSON list
    nrps_url: Mapped[str | None] = mapped_column(String(2048))
    roles: Mapped[str] = mapped_column(Text, nullable=False, default="[]")  # JSON list of role URIs
    launched_at: Mapped[dt.datetime] = mapped_column(DateTime, nullable=False)

    __table_args__ = (
        UniqueConstraint(
            "learner", "issuer", "deployment_id", "context_id", "resource_link_id", name="uq_lti_launch_link"
        ),
        Index("ix_lti_launches_sub", "sub"),
    )

    def as_dict(self) -> dict:
        return {
            "learner": self.learner,
            "sub": self.sub,
            "issuer": self.issuer,
            "deployment_id": self.deployment_id,
            "context_id": self.context_id,
            "context_title": self.context_title,
            "resource_link_id": self.resource_link_id,
            "lineitem": self.lineitem,
            "lineitems": self.lineitems,
            "ags_scopes": json.loads(self.ags_scopes),
            "nrps_url": self.nrps_url,
            "roles": json.loads(self.roles),
            "launched_at": self.launched_at.isoformat() + "Z",
        }


class OutboxRow(LtiBase):
    """The score one learner (``sub``) should have in one line item, and what the LMS last answered."""

    __tablename__ = "lti_outbox"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    learner: Mapped[str] = mapped_column(String(255), nullable=False)
    sub: Mapped[str] = mapped_column(String(255), nullable=False)
    issuer: Mapped[str] = mapped_column(String(255), nullable=False)
    lineitem: Mapped[str] = mapped_column(String(2048), nullable=False)
    scopes: Mapped[str] = mapped_column(Text, nullable=False, default="[]")
    score_given: Mapped[float] = mapped_column(Float, nullable=False)
    score_maximum: Mapped[float] = mapped_column(Float, nullable=False)
    wanted_at: Mapped[dt.datetime] = mapped_column(DateTime, nullable=False)
    sent_given: Mapped[float | None] = mapped_column(Float)  # what the LMS accepted last (None: nothing yet)
    sent_maximum: Mapped[float | None] = mapped_column(Float)
    state: Mapped[str] = mapped_column(String(16), nullable=False, default=PENDING)
    tries: Mapped[int] = mapped_column(Integer, nullable=False, default=0)  # failed tries since the last change
    next_try_at: Mapped[dt.datetime] = mapped_column(DateTime, nullable=False)
    last_status: Mapped[int | None] = mapped_column(Integer)  # the LMS's HTTP status (None: it did not answer)
    last_answer: Mapped[str] = mapped_column(Text, nullable=False, default="")
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime, nullable=False)

    __table_args__ = (
        UniqueConstraint("lineitem", "sub", name="uq_lti_outbox_item_sub"),
        Index("ix_lti_outbox_state_next", "state", "next_try_at"),
    )

    def as_dict(self) -> dict:
        return {
            "id": self.id,
            "learner": self.learner,
            "sub": self.sub,
            "lineitem": self.lineitem,
            "score_given": self.score_given,
            "score_maximum": self.score_maximum,
            "state": self.state,
            "sent_given": self.sent_given,
            "sent_maximum": self.sent_maximum,
            "tries": self.tries,
            "last_status": self.last_status,
            "last_answer": self.last_answer,
            "updated_at": self.updated_at.isoformat() + "Z",
        }


class LineItemRow(LtiBase):
    """The LMS column of one assignment in one course: ``lineitem`` None while it is being found or made."""

    __tablename__ = "lti_lineitems"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    issuer: Mapped[str] = mapped_column(String(255), nullable=False)
    context_id: Mapped[str] = mapped_column(String(255), nullable=False)
    assignment_id: Mapped[str] = mapped_column(String(255), nullable=False)
    lineitem: Mapped[str | None] = mapped_column(String(2048))  # the column's URL (its AGS id)
    origin: Mapped[str] = mapped_column(String(16), nullable=False)  # found, created, declared (deep link)
    label: Mapped[str] = mapped_column(String(255), nullable=False, default="")
    score_maximum: Mapped[float] = mapped_column(Float, nullable=False, default=0.0)
    claimed_at: Mapped[dt.datetime | None] = mapped_column(DateTime)  # a sender is finding or making it
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime, nullable=False)

    __table_args__ = (UniqueConstraint("issuer", "context_id", "assignment_id", name="uq_lti_lineitem_assignment"),)

    def as_dict(self) -> dict:
        return {
            "issuer": self.issuer,
            "context_id": self.context_id,
            "assignment_id": self.assignment_id,
            "lineitem": self.lineitem,
            "origin": self.origin,
            "label": self.label,
            "score_maximum": self.score_maximum,
            "claimed_at": None if self.claimed_at is None else self.claimed_at.isoformat() + "Z",
            "updated_at": self.updated_at.isoformat() + "Z",
        }


class LineItems:
    """The ``lti_lineitems`` table: each assignment's column per course, and who is making a missing one.

    >>> from sqlalchemy import create_engine
    >>> engine = create_engine("sqlite://"); LtiBase.metadata.create_all(engine)
    >>> items = LineItems(engine)
    >>> items.claim("https://lms", "c1", "lab-a", stale_seconds=60), items.claim("https://lms", "c1", "lab-a",
    ...     stale_seconds=60)
    (True, False)
    >>> items.bind("https://lms", "c1", "lab-a", "https://lms/li/1", "created")["lineitem"]
    'https://lms/li/1'
    >>> items.claim("https://lms", "c1", "lab-a", stale_seconds=0), items.of("https://lms", "c1")
    (False, {'lab-a': 'https://lms/li/1'})
    """

    def __init__(self, engine: Engine):
        self._session = sessionmaker(engine, expire_on_commit=False)

    def get(self, issuer: str, context_id: str, assignment_id: str) -> dict | None:
        with self._session() as s:
            row = s.scalars(
                select(LineItemRow).filter_by(issuer=issuer, context_id=context_id, assignment_id=assignment_id)
            ).first()
            return None if row is None else row.as_dict()

    def of(self, issuer: str, context_id: str) -> dict[str, str]:
        """The bound columns of a course: assignment id -> line item URL."""
        with self._session() as s:
            rows = s.scalars(select(LineItemRow).filter_by(issuer=issuer, context_id=context_id))
            return {r.assignment_id: r.lineitem for r in rows if r.lineitem}

    def all(self) -> list[dict]:
        with self._session() as s:
            return [r.as_dict() for r in s.scalars(select(LineItemRow).order_by(LineItemRow.id))]

    def claim(
        self, issuer: str, context_id: str, assignment_id: str, *, stale_seconds: float, origin: str = "created"
    ) -> bool:
        """Take the right to find or make this assignment's column: True for one caller only.

        The first caller inserts the row (the unique constraint refuses every
        other insert); a row already bound is never claimed again; a claim
        older than ``stale_seconds`` (its sender died or the LMS did not
        answer) may be taken over by one caller, by a conditional update.
        """
        from sqlalchemy.exc import IntegrityError

        now = utcnow()
        try:
            with self._session() as s, s.begin():
                s.add(
                    LineItemRow(
                        issuer=issuer,
                        context_id=context_id,
                        assignment_id=assignment_id,
                        origin=origin,
                        claimed_at=now,
                        updated_at=now,
                    )
                )
            return True
        except IntegrityError:
            pass
        cutoff = now - dt.timedelta(seconds=stale_seconds)
        with self._session() as s, s.begin():
            taken = s.execute(
                update(LineItemRow)
                .where(
                    LineItemRow.issuer == issuer,
                    LineItemRow.context_id == context_id,
                    LineItemRow.assignment_id == assignment_id,
                    LineItemRow.lineitem.is_(None),
                    (LineItemRow.claimed_at.is_(None)) | (LineItemRow.claimed_at <= cutoff),
                )
                .values(claimed_at=now, updated_at=now)
            )
            return taken.rowcount == 1

    def hold(self, issuer: str, context_id: str, assignment_id: str, *, until: dt.datetime) -> None:
        """Keep an unbound row claimed until ``until`` (a column the LMS makes from a Deep Linking answer)."""
        with self._session() as s, s.begin():
            s.execute(
                update(LineItemRow)
                .where(
                    LineItemRow.issuer == issuer,
                    LineItemRow.context_id == context_id,
                    LineItemRow.assignment_id == assignment_id,
                    LineItemRow.lineitem.is_(None),
                )
                .values(claimed_at=until, updated_at=utcnow())
            )

    def release(self, issuer: str, context_id: str, assignment_id: str) -> None:
        """Give a claim back (the LMS did not answer): the next round may try at once."""
        with self._session() as s, s.begin():
            s.execute(
                update(LineItemRow)
                .where(
                    LineItemRow.issuer == issuer,
                    LineItemRow.context_id == context_id,
                    LineItemRow.assignment_id == assignment_id,
                    LineItemRow.lineitem.is_(None),
                )
                .values(claimed_at=None, updated_at=utcnow())
            )

    def bind(
        self,
        issuer: str,
        context_id: str,
        assignment_id: str,
        lineitem: str,
        origin: str,
        *,
        label: str = "",
        score_maximum: float = 0.0,
    ) -> dict:
        """Bind the assignment to ``lineitem`` (once: a bound row keeps its first column)."""
        with self._session() as s, s.begin():
            row = s.scalars(
                select(LineItemRow)
                .filter_by(issuer=issuer, context_id=context_id, assignment_id=assignment_id)
                .with_for_update()
            ).first()
            now = utcnow()
            if row is None:
                row = LineItemRow(
                    issuer=issuer, context_id=context_id, assignment_id=assignment_id, origin=origin, updated_at=now
                )
                s.add(row)
            if row.lineitem is None:
                row.lineitem, row.origin, row.claimed_at, row.updated_at = lineitem[:2048], origin, None, now
                row.label, row.score_maximum = label[:255], float(score_maximum)
            s.flush()
            return row.as_dict()


def _text(value, limit: int = 255) -> str:
    """A claim as a bounded string (claims come from the LMS; a huge one is cut, not stored whole)."""
    return ("" if value is None else str(value))[:limit]


class Launches:
    """The ``lti_launches`` table behind short transactions."""

    def __init__(self, engine: Engine):
        self._session = sessionmaker(engine, expire_on_commit=False)

    def record(self, learner: str, claims: dict) -> dict:
        """Store (or refresh) the launch ``claims`` of ``learner``: a verified id_token's payload, as the hub kept it."""
        ags = claims.get(AGS) or {}
        key = dict(
            learner=learner,
            issuer=_text(claims.get("iss")),
            deployment_id=_text(claims.get(CLAIM + "deployment_id")),
            context_id=_text((claims.get(CLAIM + "context") or {}).get("id")),
            resource_link_id=_text((claims.get(CLAIM + "resource_link") or {}).get("id")),
        )
        values = dict(
            sub=_text(claims.get("sub")),
            context_title=_text((claims.get(CLAIM + "context") or {}).get("title")),
            lineitem=_text(ags.get("lineitem"), 2048) or None,
            lineitems=_text(ags.get("lineitems"), 2048) or None,
            ags_scopes=json.dumps([str(s) for s in ags.get("scope") or []]),
            nrps_url=_text((claims.get(NRPS) or {}).get("context_memberships_url"), 2048) or None,
            roles=json.dumps([str(r) for r in claims.get(CLAIM + "roles") or []]),
            launched_at=utcnow(),
        )
        if not values["sub"] or not key["issuer"]:
            raise ValueError("a launch without sub or iss is not stored")
        with self._session() as s, s.begin():
            row = s.scalars(select(Launch).filter_by(**key)).first()
            if row is None:
                row = Launch(**key, **values)
                s.add(row)
            else:
                for name, value in values.items():
                    setattr(row, name, value)
            s.flush()
            return row.as_dict()

    def of(self, learner: str) -> list[dict]:
        """``learner``'s launches, oldest first."""
        with self._session() as s:
            return [r.as_dict() for r in s.scalars(select(Launch).where(Launch.learner == learner).order_by(Launch.id))]

    def all(self) -> list[dict]:
        with self._session() as s:
            return [r.as_dict() for r in s.scalars(select(Launch).order_by(Launch.id))]


class Outbox:
    """The ``lti_outbox`` table: what should be at the LMS, what was accepted, what is due."""

    def __init__(self, engine: Engine):
        self._session = sessionmaker(engine, expire_on_commit=False)

    def want(self, launch: dict, given: float, maximum: float, *, now_please: bool = False) -> str:
        """Want ``given``/``maximum`` for the learner of ``launch`` in its line item: ``queued`` or ``already sent``.

        A row already holding this score is left as it is (one score at the
        LMS); ``now_please`` (an instructor's "send"): a row waiting out a
        backoff, or refused, is due now.
        """
        given, maximum = float(given), float(maximum)
        now = utcnow()
        with self._session() as s, s.begin():
            row = s.scalars(
                select(OutboxRow).filter_by(lineitem=launch["lineitem"], sub=launch["sub"]).with_for_update()
            ).first()
            if row is None:
                s.add(
                    OutboxRow(
                        learner=launch["learner"],
                        sub=launch["sub"],
                        issuer=launch["issuer"],
                        lineitem=launch["lineitem"],
                        scopes=json.dumps(launch["ags_scopes"]),
                        score_given=given,
                        score_maximum=maximum,
                        wanted_at=now,
                        state=PENDING,
                        next_try_at=now,
                        updated_at=now,
                    )
                )
                return "queued"
            if (row.sent_given, row.sent_maximum) == (given, maximum):
                if row.state != SENT:  # it was changed back to what the LMS holds: nothing to send
                    row.score_given, row.score_maximum, row.state, row.tries = given, maximum, SENT, 0
                return "already sent"
            if (row.score_given, row.score_maximum) == (given, maximum) and row.state == PENDING:
                if now_please:
                    row.next_try_at = now
                return "queued"
            if (row.score_given, row.score_maximum) == (given, maximum) and row.state == REFUSED and not now_please:
                return "refused"
            row.score_given, row.score_maximum, row.wanted_at = given, maximum, now
            row.state, row.tries, row.next_try_at, row.updated_at = PENDING, 0, now, now
            row.scopes = json.dumps(launch["ags_scopes"])
            return "queued"

    def due(self, now: dt.datetime | None = None, limit: int = 100) -> list[OutboxRow]:
        """Pending rows whose next try has come, oldest wish first."""
        with self._session() as s:
            return list(
                s.scalars(
                    select(OutboxRow)
                    .where(OutboxRow.state == PENDING, OutboxRow.next_try_at <= (now or utcnow()))
                    .order_by(OutboxRow.wanted_at, OutboxRow.id)
                    .limit(limit)
                )
            )

    def _finish(self, row_id: int, given: float, maximum: float, **values) -> bool:
        # Only if the wish is still the one that was sent: a newer grade wanted meanwhile stays pending.
        with self._session() as s, s.begin():
            done = s.execute(
                update(OutboxRow)
                .where(
                    OutboxRow.id == row_id,
                    OutboxRow.state == PENDING,
                    OutboxRow.score_given == given,
                    OutboxRow.score_maximum == maximum,
                )
                .values(updated_at=utcnow(), **values)
            )
            return done.rowcount == 1

    def sent(self, row_id: int, status: int, answer: str, given: float, maximum: float) -> None:
        """The LMS accepted ``given``/``maximum``."""
        if not self._finish(
            row_id,
            given,
            maximum,
            state=SENT,
            sent_given=given,
            sent_maximum=maximum,
            tries=0,
            last_status=status,
            last_answer=answer[:2000],
        ):
            with self._session() as s, s.begin():  # a newer wish is pending: remember what the LMS holds
                s.execute(
                    update(OutboxRow)
                    .where(OutboxRow.id == row_id)
                    .values(sent_given=given, sent_maximum=maximum, last_status=status, last_answer=answer[:2000])
                )

    def refused(self, row_id: int, status: int, answer: str, given: float, maximum: float) -> None:
        """The LMS refused the score for good (4xx): kept, shown, tried again only when the grade changes."""
        self._finish(row_id, given, maximum, state=REFUSED, last_status=status, last_answer=answer[:2000])

    def failed(self, row_id: int, status: int | None, answer: str, retry_at: dt.datetime) -> None:
        """The LMS did not take it now (down, 5xx, 429): tried again at ``retry_at``."""
        with self._session() as s, s.begin():
            row = s.get(OutboxRow, row_id)
            if row is not None and row.state == PENDING:
                row.tries += 1
                row.next_try_at, row.last_status, row.last_answer = retry_at, status, answer[:2000]
                row.updated_at = utcnow()

    def get(self, row_id: int) -> dict | None:
        with self._session() as s:
            row = s.get(OutboxRow, row_id)
            return None if row is None else row.as_dict()

    def all(self) -> list[dict]:
        with self._session() as s:
            return [r.as_dict() for r in s.scalars(select(OutboxRow).order_by(OutboxRow.id))]

    def pending_count(self) -> int:
        with self._session() as s:
            return len(list(s.scalars(select(OutboxRow.id).where(OutboxRow.state == PENDING))))
