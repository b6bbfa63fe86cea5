"""The grading service's storage: every attempt, kept, in a database reached through SQLAlchemy 2.

One table, ``attempts``. An attempt is stored (status ``queued``) before it
is queued, so a crash between the two loses nothing: on start the queue
grades every stored attempt whose status is still ``queued`` or
``grading``. A result is written by a conditional update that only moves an
attempt out of those two states, so a report is stored once per attempt
even if two gradings of it race.

The schema is created and upgraded by Alembic (``grader/service/migrations``),
never by ``create_all``, so a PostgreSQL database that a cluster keeps
follows the code's migrations.

Example::

    >>> store = Store("sqlite://")
    >>> a = store.add_attempt("ana", b"x = 1\\n", seed=7)
    >>> store.get(a).status, store.get(a).sha256[:8]
    ('queued', '9e26bf36')
    >>> store.claim(a), store.finish(a, "graded", {"score": 1, "max_score": 2}), store.finish(a, "graded", {})
    (True, True, False)
    >>> store.get(a).score
    1
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

from sqlalchemy import (
    BigInteger,
    DateTime,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    create_engine,
    event,
    func,
    select,
    update,
)
from sqlalchemy import desc as descending
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, defer, mapped_column, sessionmaker
from sqlalchemy.pool import StaticPool

QUEUED, GRADING, GRADED, ERROR = "queued", "grading", "graded", "error"
STATUSES = (QUEUED, GRADING, GRADED, ERROR)
UNFINISHED = (QUEUED, GRADING)  # what a (re)start grades
DB_FILE = "agtool-service.sqlite"
MIGRATIONS = Path(__file__).resolve().parent / "migrations"


class Base(DeclarativeBase):
    pass


class Attempt(Base):
    """One submission of one learner: the bytes, how they were graded, and the full report."""

    __tablename__ = "attempts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    learner: Mapped[str] = mapped_column(String(255), nullable=False)
    submitted_at: Mapped[dt.datetime] = mapped_column(DateTime, nullable=False)  # UTC, naive (SQLite has no zones)
    source: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
    sha256: Mapped[str] = mapped_column(String(64), nullable=False)
    seed: Mapped[int] = mapped_column(BigInteger, nullable=False)
    status: Mapped[str] = mapped_column(String(16), nullable=False, default=QUEUED)
    score: Mapped[int | None] = mapped_column(Integer)
    max_score: Mapped[int | None] = mapped_column(Integer)
    report: Mapped[str | None] = mapped_column(Text)  # Report.to_dict() as JSON
    graded_at: Mapped[dt.datetime | None] = mapped_column(DateTime)
    stored_bytes: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)  # source + reports kept
    # With a seed key: the run that counts (hidden per-learner seed; score/max_score are its). ``seed`` and
    # ``report`` stay the run the learner is shown. Never in a learner-facing response.
    counted_report: Mapped[str | None] = mapped_column(Text)
    key_fingerprint: Mapped[str | None] = mapped_column(String(16))  # of the key the counted run was drawn with

    __table_args__ = (Index("ix_attempts_learner_id", "learner", "id"), Index("ix_attempts_status", "status"))

    def summary(self) -> dict:
        """The fields of ``GET api/submissions`` (no source, no report)."""
        return _summary(self)

    def detail(self) -> dict:
        """``GET api/submissions/ID``: the summary, the shown run's seed and report, and the hidden checks failed.

        ``hidden_failed``: ids and titles (never calls, values or hints, never
        the seed) of the checks the counted run failed and the shown run passed.
        """
        report = json.loads(self.report) if self.report else None
        hidden = hidden_failed(json.loads(self.counted_report), report) if self.counted_report and report else []
        return {
            **self.summary(),
            "seed": self.seed,
            "graded_at": iso(self.graded_at),
            "report": report,
            "hidden_failed": hidden,
        }


def hidden_failed(counted: dict, shown: dict) -> list[dict]:
    """The checks failed in the counted run and passed in the shown one, as ``{"id", "title"}`` only.

    >>> hidden_failed({"checks": [{"id": "a", "title": "A", "passed": False, "got": "42"}]},
    ...               {"checks": [{"id": "a", "title": "A", "passed": True}]})
    [{'id': 'a', 'title': 'A'}]
    """
    passed = {c.get("id") for c in shown.get("checks", []) if c.get("passed")}
    return [
        {"id": c.get("id"), "title": c.get("title")}
        for c in counted.get("checks", [])
        if not c.get("passed") and c.get("id") in passed
    ]


REGRADING = "being graded again: the grader failed, not your code; this attempt does not count until then"


NEWEST_FIRST = descending(Attempt.id)  # attempts' ids grow: the newest attempt first
_SUMMARY = (
    Attempt.id,
    Attempt.learner,
    Attempt.submitted_at,
    Attempt.status,
    Attempt.score,
    Attempt.max_score,
    Attempt.sha256,
)


def _summary(row) -> dict:
    """:meth:`Attempt.summary` of a row of the ``_SUMMARY`` columns."""
    return with_note(
        {
            "id": row.id,
            "learner": row.learner,
            "submitted_at": iso(row.submitted_at),
            "status": row.status,
            "score": row.score,
            "max_score": row.max_score,
            "sha256": row.sha256,
        }
    )


def with_note(summary: dict) -> dict:
    """A summary with ``note`` when the attempt is an ``error``: the learner reads that it is graded again.

    >>> with_note({"status": "error"})["note"].startswith("being graded again")
    True
    >>> "note" in with_note({"status": "graded"})
    False
    """
    if summary.get("status") == ERROR:
        summary["note"] = REGRADING
    return summary


def iso(moment: dt.datetime | None) -> str | None:
    """A stored UTC time as ISO 8601 with its zone.

    >>> iso(dt.datetime(2025, 1, 2, 3, 4, 5))
    '2025-01-02T03:04:05Z'
    """
    return None if moment is None else moment.replace(microsecond=0).isoformat() + "Z"


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


def default_url(data_dir: str | Path) -> str:
    """The embedded default: an SQLite file in the service's data folder.

    >>> default_url("/srv/agtool")
    'sqlite:////srv/agtool/agtool-service.sqlite'
    """
    return f"sqlite:///{Path(data_dir).resolve() / DB_FILE}"


def make_engine(url: str) -> Engine:
    """An engine for ``url``; SQLite gets WAL and a busy timeout so the web thread and the queue can both write.

    >>> make_engine("sqlite://").dialect.name
    'sqlite'
    """
    if url.startswith("sqlite"):
        in_memory = url in ("sqlite://", "sqlite:///:memory:")
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": 30},
            **({"poolclass": StaticPool} if in_memory else {}),
        )

        @event.listens_for(engine, "connect")
        def _pragmas(conn, _record):  # per connection: SQLite forgets them
            cur = conn.cursor()
            if not in_memory:
                cur.execute("PRAGMA journal_mode=WAL")  # readers do not block the writer
                # In WAL mode NORMAL syncs at checkpoints, not at every commit: a commit still survives
                # the service's own crash (kill -9: the "stored before queued" promise), only a power
                # loss may take back the last ones. It saves ~7 ms of fsync per attempt (3 commits).
                cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        return engine
    return create_engine(url, pool_pre_ping=True)


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest Alembic revision (run at every start; a no-op when current)."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        # env.py uses this connection, so the URL (and its password) never goes through ini interpolation.
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


class Store:
    """The attempts table behind short transactions; safe to share between threads.

    ``url`` is a SQLAlchemy URL; the schema is migrated on construction.
    """

    def __init__(self, url: str):
        self.url = url
        self.engine = make_engine(url)
        migrate(self.engine)
        self._session = sessionmaker(self.engine, expire_on_commit=False)

    def session(self) -> Session:
        return self._session()

    def add_attempt(self, learner: str, source: bytes, *, seed: int) -> int:
        """Store a new attempt as ``queued`` and return its id (committed before anyone queues it)."""
        attempt = Attempt(
            learner=learner,
            submitted_at=utcnow(),
            source=source,
            sha256=hashlib.sha256(source).hexdigest(),
            seed=seed,
            status=QUEUED,
            stored_bytes=len(source),
        )
        with self.session() as s, s.begin():
            s.add(attempt)
        return attempt.id

    def get(self, attempt_id: int) -> Attempt | None:
        with self.session() as s:
            return s.get(Attempt, attempt_id)

    def attempts_of(self, learner: str, limit: int = 1000) -> list[Attempt]:
        """A learner's attempts with their reports, newest first (not their source bytes: ``get`` has those)."""
        with self.session() as s:
            return list(
                s.scalars(
                    select(Attempt)
                    .options(defer(Attempt.source))
                    .where(Attempt.learner == learner)
                    .order_by(NEWEST_FIRST)
                    .limit(limit)
                )
            )

    def summaries_of(self, learner: str, limit: int = 1000) -> list[dict]:
        """A learner's attempts as ``GET api/submissions`` lists them, newest first (no source, no report read)."""
        with self.session() as s:
            rows = s.execute(select(*_SUMMARY).where(Attempt.learner == learner).order_by(NEWEST_FIRST).limit(limit))
            return [_summary(r) for r in rows]

    def attempt_number(self, learner: str, attempt_id: int) -> int:
        """The attempt's number in its learner's own order (1, 2, 3...), as the learner's page numbers them.

        The service's ids count every learner's attempts; a learner's first is their attempt 1
        (``grader.service.pages.learner_numbers`` orders the same way: ids grow with time).
        """
        with self.session() as s:
            return int(
                s.scalar(
                    select(func.count())
                    .select_from(Attempt)
                    .where(Attempt.learner == learner, Attempt.id <= attempt_id)
                )
                or 0
            )

    def version(self) -> tuple:
        """What the class outputs depend on: the newest attempt's id, how many are finished, the last report's time.

        Every submission raises the first, every stored report the second and
        the third; an ``error`` graded again is finished a second time, at a
        later time, so equal versions still mean equal class pages.

        >>> store = Store("sqlite://")
        >>> v0 = store.version(); a = store.add_attempt("ana", b"x", seed=1)
        >>> v0, store.version()
        ((0, 0, None), (1, 0, None))
        """
        with self.session() as s:
            newest = s.scalar(select(func.max(Attempt.id))) or 0
            done = s.scalar(select(func.count()).select_from(Attempt).where(Attempt.status.in_((GRADED, ERROR)))) or 0
            last = s.scalar(select(func.max(Attempt.graded_at)))
            return newest, done, last.isoformat() if last else None

    def sources(self, ids) -> dict[int, bytes]:
        """The stored bytes of the attempts ``ids`` (similarity reads the counting attempts only)."""
        ids = list(ids)
        if not ids:
            return {}
        with self.session() as s:
            return {r.id: r.source for r in s.execute(select(Attempt.id, Attempt.source).where(Attempt.id.in_(ids)))}

    def count_since(self, learner: str, since: dt.datetime, exclude=()) -> int:
        """How many attempts ``learner`` submitted at or after ``since`` (the rate limit).

        Attempts the grading machinery failed (``error``) and the ids in
        ``exclude`` (the queue's reports not stored yet) do not count: the
        grader's failure never uses up a learner's attempts.
        """
        return len(self.times_since(learner, since, exclude))

    def times_since(self, learner: str, since: dt.datetime, exclude=()) -> list[dt.datetime]:
        """When ``learner`` submitted each counting attempt at or after ``since``, oldest first (the limits).

        >>> store = Store("sqlite://")
        >>> a, b = (store.add_attempt("ana", b"x", seed=1) for _ in range(2))
        >>> _ = store.take(a); _ = store.finish(a, "error", {})
        >>> since = dt.datetime(2000, 1, 1)
        >>> len(store.times_since("ana", since)), store.count_since("ana", since, {b})
        (1, 0)
        """
        query = select(Attempt.submitted_at).where(
            Attempt.learner == learner, Attempt.submitted_at >= since, Attempt.status != ERROR
        )
        exclude = list(exclude)
        if exclude:
            query = query.where(Attempt.id.notin_(exclude))
        with self.session() as s:
            return list(s.scalars(query.order_by(Attempt.submitted_at)))

    def stored_bytes_of(self, learner: str) -> int:
        """The bytes ``learner``'s kept attempts take (sources and reports): the per-learner storage bound.

        >>> store = Store("sqlite://"); _ = store.add_attempt("ana", b"x = 1\\n", seed=1)
        >>> store.stored_bytes_of("ana"), store.stored_bytes_of("bob")
        (6, 0)
        """
        with self.session() as s:
            return int(s.scalar(select(func.sum(Attempt.stored_bytes)).where(Attempt.learner == learner)) or 0)

    def learner_of(self, attempt_id: int) -> str | None:
        """Whose attempt ``attempt_id`` is (None: no such attempt)."""
        with self.session() as s:
            return s.scalar(select(Attempt.learner).where(Attempt.id == attempt_id))

    def unfinished(self) -> list[int]:
        """Ids of every attempt not yet graded (queued, or cut off while grading), oldest first."""
        return [attempt_id for attempt_id, _learner in self.unfinished_with_learners()]

    def unfinished_with_learners(self) -> list[tuple[int, str]]:
        """``(id, learner)`` of every attempt not yet graded, oldest first (the queue shares workers by learner)."""
        with self.session() as s:
            rows = s.execute(
                select(Attempt.id, Attempt.learner).where(Attempt.status.in_(UNFINISHED)).order_by(Attempt.id)
            )
            return [(r.id, r.learner) for r in rows]

    def requeue_error(self, attempt_id: int) -> bool:
        """Put one ``error`` attempt back in the queue (``queued``, its failed report dropped); False if not an error.

        >>> store = Store("sqlite://")
        >>> a = store.add_attempt("ana", b"x", seed=1); _ = store.take(a); _ = store.finish(a, "error", {})
        >>> store.requeue_error(a), store.get(a).status, store.requeue_error(a)
        (True, 'queued', False)
        """
        with self.session() as s, s.begin():
            done = s.execute(
                update(Attempt)
                .where(Attempt.id == attempt_id, Attempt.status == ERROR)
                .values(
                    status=QUEUED,
                    report=None,
                    counted_report=None,
                    graded_at=None,
                    stored_bytes=func.length(Attempt.source),
                )
            )
            return done.rowcount == 1

    def requeue_errors(self) -> list[int]:
        """Put every attempt the grading machinery failed (``error``) back in the queue; their ids, oldest first.

        Such an attempt was never a grade: it is graded again (the service does it at each start).

        >>> store = Store("sqlite://")
        >>> a = store.add_attempt("ana", b"x", seed=1); _ = store.take(a); _ = store.finish(a, "error", {})
        >>> store.requeue_errors(), store.get(a).status, store.requeue_errors()
        ([1], 'queued', [])
        """
        with self.session() as s, s.begin():
            ids = list(s.scalars(select(Attempt.id).where(Attempt.status == ERROR).order_by(Attempt.id)))
            if ids:
                s.execute(
                    update(Attempt)
                    .where(Attempt.id.in_(ids), Attempt.status == ERROR)
                    .values(
                        status=QUEUED,
                        report=None,
                        counted_report=None,
                        graded_at=None,
                        stored_bytes=func.length(Attempt.source),
                    )
                )
            return ids

    def claim(self, attempt_id: int) -> bool:
        """Mark an unfinished attempt ``grading``; False when it was already finished."""
        with self.session() as s, s.begin():
            done = s.execute(
                update(Attempt).where(Attempt.id == attempt_id, Attempt.status.in_(UNFINISHED)).values(status=GRADING)
            )
            return done.rowcount == 1

    def take(self, attempt_id: int) -> Attempt | None:
        """Claim an unfinished attempt (``grading``) and read it, in one transaction; None when finished or gone.

        >>> store = Store("sqlite://")
        >>> a = store.add_attempt("ana", b"x", seed=1)
        >>> store.take(a).status, store.finish(a, "graded", {"score": 1}), store.take(a)
        ('grading', True, None)
        """
        with self.session() as s, s.begin():
            done = s.execute(
                update(Attempt).where(Attempt.id == attempt_id, Attempt.status.in_(UNFINISHED)).values(status=GRADING)
            )
            if done.rowcount != 1:
                return None
            return s.get(Attempt, attempt_id)

    def finish(
        self, attempt_id: int, status: str, report: dict, counted: dict | None = None, fingerprint: str | None = None
    ) -> bool:
        """Store the result of one grading, once: False (and nothing written) if the attempt was already finished.

        ``report`` is the run the learner is shown; ``counted`` (with a seed
        key) the run that counts, whose score is stored, with the key's
        ``fingerprint``. An ``error`` (the grading machinery failed) keeps its
        report but no score: it is not a grade.

        >>> store = Store("sqlite://")
        >>> a = store.add_attempt("ana", b"x", seed=1); _ = store.take(a)
        >>> store.finish(a, "error", {"score": 0, "max_score": 2}), store.get(a).score
        (True, None)
        >>> b = store.add_attempt("ana", b"x", seed=2); _ = store.take(b)
        >>> _ = store.finish(b, "graded", {"score": 2, "max_score": 2}, counted={"score": 1, "max_score": 2})
        >>> store.get(b).score
        1
        """
        if status not in (GRADED, ERROR):
            raise ValueError(f"an attempt finishes as {GRADED!r} or {ERROR!r}, not {status!r}")
        graded = status == GRADED
        counting = counted if counted is not None else report
        text = json.dumps(report, sort_keys=True, ensure_ascii=False)
        hidden = None if counted is None else json.dumps(counted, sort_keys=True, ensure_ascii=False)
        size = len(text.encode("utf-8")) + len((hidden or "").encode("utf-8"))
        with self.session() as s, s.begin():
            done = s.execute(
                update(Attempt)
                .where(Attempt.id == attempt_id, Attempt.status.in_(UNFINISHED))
                .values(
                    status=status,
                    score=counting.get("score") if graded else None,
                    max_score=counting.get("max_score") if graded else None,
                    report=text,
                    counted_report=hidden,
                    key_fingerprint=fingerprint,
                    graded_at=utcnow(),
                    stored_bytes=func.length(Attempt.source) + size,
                )
            )
            return done.rowcount == 1

    def fingerprints(self) -> set[str]:
        """The fingerprints of the seed keys stored attempts were counted with (one, unless the key changed).

        >>> Store("sqlite://").fingerprints()
        set()
        """
        with self.session() as s:
            return set(
                s.scalars(select(Attempt.key_fingerprint).where(Attempt.key_fingerprint.is_not(None)).distinct())
            )

    def requeue_uncounted(self) -> list[int]:
        """Queue again every graded attempt without a counted run (stored before the seed key): their ids.

        >>> store = Store("sqlite://")
        >>> a = store.add_attempt("ana", b"x", seed=1); _ = store.take(a); _ = store.finish(a, "graded", {})
        >>> store.requeue_uncounted(), store.get(a).status
        ([1], 'queued')
        """
        with self.session() as s, s.begin():
            ids = list(
                s.scalars(
                    select(Attempt.id)
                    .where(Attempt.status == GRADED, Attempt.counted_report.is_(None))
                    .order_by(Attempt.id)
                )
            )
            if ids:
                s.execute(
                    update(Attempt)
                    .where(Attempt.id.in_(ids), Attempt.status == GRADED)
                    .values(status=QUEUED, graded_at=None)
                )
            return ids

    def finished(self) -> list[Attempt]:
        """Every graded attempt (with its report), oldest first: what the class outputs are built from."""
        with self.session() as s:
            # Not the source bytes: the class outputs need the reports (Store.sources reads bytes when asked).
            return list(
                s.scalars(
                    select(Attempt)
                    .options(defer(Attempt.source))
                    .where(Attempt.status.in_((GRADED, ERROR)))
                    .order_by(Attempt.id)
                )
            )

    def graded_scores(self) -> list:
        """Rows (id, learner, submitted_at, score, max_score) of every graded attempt, oldest first: no report read.

        The class views pick each learner's counting attempt from these, then read only those reports.
        """
        with self.session() as s:
            return list(
                s.execute(
                    select(Attempt.id, Attempt.learner, Attempt.submitted_at, Attempt.score, Attempt.max_score)
                    .where(Attempt.status == GRADED, Attempt.score.is_not(None))
                    .order_by(Attempt.id)
                )
            )

    def with_reports(self, ids) -> list[Attempt]:
        """The attempts ``ids`` with their reports (not their bytes), oldest first."""
        ids = list(ids)
        if not ids:
            return []
        with self.session() as s:
            return list(
                s.scalars(
                    select(Attempt).options(defer(Attempt.source)).where(Attempt.id.in_(ids)).order_by(Attempt.id)
                )
            )

    def finished_of(self, learner: str) -> list[Attempt]:
        """A learner's finished attempts (with their reports), oldest first: their feedback and results.json."""
        with self.session() as s:
            return list(
                s.scalars(
                    select(Attempt)
                    .options(defer(Attempt.source))
                    .where(Attempt.learner == learner, Attempt.status.in_((GRADED, ERROR)))
                    .order_by(Attempt.id)
                )
            )

    def all_summaries(self) -> list[dict]:
        """Every attempt's summary, oldest first (the class page counts attempts still queued too)."""
        with self.session() as s:
            return [_summary(r) for r in s.execute(select(*_SUMMARY).order_by(Attempt.id))]

    def close(self) -> None:
        self.engine.dispose()
