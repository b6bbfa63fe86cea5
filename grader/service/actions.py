"""Instructor actions as the service performs them: each one checked, recorded, then applied.

The HTTP handlers (:mod:`grader.service.action_handlers`) hand the fields of
a JSON body or a form to :func:`perform`; every text is checked here (length,
no control characters, times with their zone) and an :class:`ActionError`
carries the HTTP status and a message that says what to fix. Recording is
:class:`grader.service.actions_db.ActionLog`; what an action changes is read
back from the log when it is needed:

* extensions and extra attempts: the learner's own policy
  (:func:`grader.service.attempt_policy.for_learner`);
* overrides: :func:`apply_overrides` replaces the grade that counts in the
  records the gradebook, the LMS files and the Gradescope export are made of;
* regrades: the attempts go back to the queue, their old results kept
  (:meth:`~grader.service.actions_db.ActionLog.regrade`).

Example::

    >>> from grader.service.db import Store
    >>> from grader.service.actions_db import ActionLog
    >>> ctx = Context(ActionLog(Store("sqlite://")), queue=None, policy=None, counting=lambda: [])
    >>> perform(ctx, "teacher", "override", {"learner": "ana", "score": "3", "reason": ""})
    Traceback (most recent call last):
    ...
    grader.service.actions.ActionError: an override needs a reason: say why the grade changes (the learner reads it)
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass

from grader.course.policy import as_course, iso_utc, parse_time
from grader.limits import APPEAL_CHARS, EXTRA_ATTEMPTS, LEARNER_NAME_CHARS, REASON_CHARS
from grader.outputs.record import LearnerRecord
from grader.service.actions_db import (
    ANSWER,
    APPEAL,
    ATTEMPTS,
    EXTENSION,
    OVERRIDE,
    REGRADE,
    ActionLog,
    kept_bytes,
    overrides_of,
)
from grader.service.db import iso, utcnow
from grader.service.options import APPEAL_LIMIT, APPEAL_WINDOW, MAX_LEARNER_BYTES

# Caps on the texts and numbers of an action (grader.limits says why).
MAX_REASON, MAX_APPEAL, MAX_NAME, MAX_EXTRA = REASON_CHARS, APPEAL_CHARS, LEARNER_NAME_CHARS, EXTRA_ATTEMPTS
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


class ActionError(ValueError):
    """An action refused: ``status`` is the HTTP status, the message says what to fix (``retry_after``: when, in s)."""

    def __init__(self, message: str, status: int = 400, retry_after: int | None = None):
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


@dataclass(frozen=True)
class RequestLimits:
    """A learner's regrade requests: at most ``limit`` per ``window`` seconds, within ``max_bytes`` kept in all.

    ``max_bytes`` is the per-learner storage bound (``--max-learner-bytes``), shared with their attempts.
    """

    limit: int = APPEAL_LIMIT
    window: float = APPEAL_WINDOW
    max_bytes: int = MAX_LEARNER_BYTES


def request_refusal(times: list[dt.datetime], limits: RequestLimits, now: dt.datetime) -> tuple[str, int] | None:
    """``(message, seconds to wait)`` when one more regrade request now is over the limit, else ``None``.

    ``times``: when the learner filed their earlier requests (naive UTC, as stored).

    >>> t = dt.datetime(2030, 1, 1, 10, 0)
    >>> request_refusal([t], RequestLimits(limit=2, window=3600), t) is None
    True
    >>> print(request_refusal([t, t], RequestLimits(limit=2, window=3600), t + dt.timedelta(minutes=45))[0])
    at most 2 regrade requests per 60 minutes: your next request is allowed at 2030-01-01T11:00:00Z (in 15 min 0 s). Your requests so far are kept; your instructor answers them on your page
    """
    window = dt.timedelta(seconds=limits.window)
    recent = sorted(t for t in times if t > now - window)
    if len(recent) < limits.limit:
        return None
    when = recent[-limits.limit] + window  # the request that frees a place is the limit-th newest
    wait = max(1, math.ceil((when - now).total_seconds()))
    noun = "request" if limits.limit == 1 else "requests"
    return (
        f"at most {limits.limit} regrade {noun} per {limits.window / 60:g} minutes: your next request is "
        f"allowed at {iso(when)} (in {wait // 60} min {wait % 60} s). Your requests so far are kept; your "
        "instructor answers them on your page",
        wait,
    )


_FILING = threading.Lock()  # the limits are checked and a request stored as one step: a burst cannot slip past


@dataclass
class Context:
    """What performing an action needs: the log, the queue (``put``), the course policy, the counting records."""

    log: ActionLog
    queue: object
    policy: object
    counting: Callable[[], list[LearnerRecord]]


def text_field(fields: dict, name: str, *, limit: int, required: bool = False, what: str = "") -> str:
    """A text field: at most ``limit`` characters, no control characters (newlines and tabs are fine).

    >>> text_field({"reason": "x" * 5}, "reason", limit=4)
    Traceback (most recent call last):
    ...
    grader.service.actions.ActionError: reason is 5 characters long; at most 4 are kept: shorten it
    >>> text_field({"reason": "ok\\u202e"}, "reason", limit=9)
    Traceback (most recent call last):
    ...
    grader.service.actions.ActionError: reason has a control character (U+202E); write plain text
    """
    value = fields.get(name)
    value = "" if value is None else str(value).replace("\r\n", "\n").strip()
    if required and not value:
        raise ActionError(what or f"{name} is required")
    if len(value) > limit:
        raise ActionError(f"{name} is {len(value)} characters long; at most {limit} are kept: shorten it")
    bad = _CONTROL.search(value)
    if bad:
        raise ActionError(f"{name} has a control character (U+{ord(bad.group()):04X}); write plain text")
    return value


def learner_field(fields: dict) -> str:
    """The learner an action is about (a hub name: one line, at most 255 characters)."""
    name = text_field(fields, "learner", limit=MAX_NAME, required=True, what="name the learner (learner=NAME)")
    if "\n" in name or "\t" in name:
        raise ActionError("a learner's name is one line")
    return name


def number_field(fields: dict, name: str, *, low: float, high: float, whole: bool = False) -> float:
    """A number between ``low`` and ``high`` (``whole``: an integer).

    >>> number_field({"extra": "2"}, "extra", low=1, high=3, whole=True), number_field({"s": 1.5}, "s", low=0, high=2)
    (2, 1.5)
    """
    raw = fields.get(name)
    try:
        value = float(str(raw).strip())
    except ValueError:
        raise ActionError(f"{name} = {str(raw)[:40]!r} is not a number") from None
    if value != value or not low <= value <= high or (whole and value != int(value)):
        kind = "a whole number" if whole else "a number"
        raise ActionError(f"{name} must be {kind} from {low:g} to {high:g} (got {value:g})")
    return int(value) if whole else value


def time_field(fields: dict, name: str, *, required: bool) -> dt.datetime | None:
    """A time: ISO 8601 with its zone, or a form's ``YYYY-MM-DDTHH:MM`` taken as UTC (the forms say so).

    >>> time_field({"due": "2030-01-02T10:00"}, "due", required=True)
    datetime.datetime(2030, 1, 2, 10, 0, tzinfo=datetime.timezone.utc)
    """
    raw = text_field(fields, name, limit=40)
    if not raw:
        if required:
            raise ActionError(f"{name} is required: a time such as 2030-03-01T23:59:00Z")
        return None
    try:
        moment = dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise ActionError(f"{name} = {raw!r} is not a time; write e.g. 2030-03-01T23:59:00Z (UTC)") from None
    return parse_time(iso_utc(moment))


def id_field(fields: dict, name: str) -> int:
    return int(number_field(fields, name, low=1, high=2**31 - 1, whole=True))


def flag(fields: dict, name: str) -> bool:
    """A yes/no field: JSON true/false, or a form's checkbox (``on``) / ``yes`` / ``true`` / ``1``."""
    value = fields.get(name)
    return value is True or str(value).strip().lower() in ("on", "yes", "true", "1")


# ------------------------------------------------------------------------------- performing


def perform(ctx: Context, actor: str, kind: str, fields: dict) -> dict:
    """Check ``fields``, record the action ``kind`` by ``actor`` (an instructor) and apply it; the action recorded."""
    doers = {EXTENSION: _extension, ATTEMPTS: _attempts, OVERRIDE: _override, REGRADE: _regrade, ANSWER: _answer}
    if kind not in doers:
        raise ActionError(f"no instructor action {kind!r}; the actions are {', '.join(doers)}", 404)
    return doers[kind](ctx, actor, fields)


def _extension(ctx: Context, actor: str, fields: dict) -> dict:
    if ctx.policy is None:
        raise ActionError("no course file: there is no due date to extend (start the service with --course)", 409)
    learner = learner_field(fields)
    due = time_field(fields, "due", required=True)
    late_due = time_field(fields, "late_due", required=False)
    if late_due is not None and late_due <= due:
        raise ActionError(f"late_due ({iso_utc(late_due)}) must be after due ({iso_utc(due)})")
    reason = text_field(fields, "reason", limit=MAX_REASON)
    return ctx.log.record(
        actor, EXTENSION, learner=learner, reason=reason, data={"due": iso_utc(due), "late_due": iso_utc(late_due)}
    )


def _attempts(ctx: Context, actor: str, fields: dict) -> dict:
    if ctx.policy is None or not as_course(ctx.policy).limited:
        raise ActionError("the course file sets no attempt limit: there are no attempts to add", 409)
    learner = learner_field(fields)
    extra = number_field(fields, "extra", low=1, high=MAX_EXTRA, whole=True)
    reason = text_field(fields, "reason", limit=MAX_REASON)
    return ctx.log.record(actor, ATTEMPTS, learner=learner, reason=reason, data={"extra": extra})


def _counting_of(ctx: Context, learner: str) -> LearnerRecord:
    mine = [r for r in ctx.counting() if r.learner == learner and r.graded]
    if not mine:
        raise ActionError(f"{learner!r} has no graded attempt: there is no grade to override", 409)
    return mine[0]


def _override(ctx: Context, actor: str, fields: dict, *, refers_to: int | None = None) -> dict:
    learner = learner_field(fields)
    reason = text_field(
        fields,
        "reason",
        limit=MAX_REASON,
        required=True,
        what="an override needs a reason: say why the grade changes (the learner reads it)",
    )
    record = _counting_of(ctx, learner)
    was, most = _grade_of(record)
    score = number_field(fields, "score", low=0, high=most)
    return ctx.log.record(
        actor,
        OVERRIDE,
        learner=learner,
        attempt=record.attempt,
        refers_to=refers_to,
        reason=reason,
        data={"score": score, "max_score": most, "was": was},
    )


def _grade_of(record: LearnerRecord) -> tuple[float, float]:
    """The grade that counts now and its maximum: the credited one under a policy, else the raw score."""
    if record.credit is not None:
        return float(record.credit["credited"]), float(record.credit["max_score"])
    return float(record.score or 0), float(record.max_score or 0)


def _regrade(ctx: Context, actor: str, fields: dict, *, refers_to: int | None = None) -> dict:
    """``attempt=ID``: that attempt; ``scope=counting``: every learner's counting attempt; ``scope=all``: every one."""
    reason = text_field(fields, "reason", limit=MAX_REASON)
    scope = text_field(fields, "scope", limit=16) or "attempt"
    learner = None
    if scope == "attempt":
        attempt = id_field(fields, "attempt")
        learner = ctx.log.store.learner_of(attempt)
        if learner is None:
            raise ActionError(f"no attempt {attempt}", 404)
        ids = [attempt]
    elif scope == "counting":
        ids = [r.attempt for r in ctx.counting() if r.attempt is not None]
    elif scope == "all":
        ids = [a.id for a in ctx.log.store.finished()]
    else:
        raise ActionError(
            f"scope = {scope!r}: regrade one attempt (scope=attempt, attempt=ID), every learner's "
            "counting attempt (scope=counting) or every finished attempt (scope=all)"
        )
    action, queued = ctx.log.regrade(
        actor,
        ids,
        scope=scope,
        learner=learner,
        attempt=ids[0] if scope == "attempt" else None,
        refers_to=refers_to,
        reason=reason,
    )
    for attempt_id, who in queued:  # stored as queued first: a restart would queue them too
        ctx.queue.put(attempt_id, who)
    return action


def _answer(ctx: Context, actor: str, fields: dict) -> dict:
    """Answer an open appeal: accepted or declined, with a text; accepting may override or regrade too."""
    appeal = ctx.log.get(id_field(fields, "appeal"))
    if appeal is None or appeal["kind"] != APPEAL:
        raise ActionError("no such regrade request", 404)
    if any(a["kind"] == ANSWER and a["refers_to"] == appeal["id"] for a in ctx.log.all(appeal["learner"])):
        raise ActionError(f"regrade request {appeal['id']} is answered already", 409)
    accepted = flag(fields, "accepted")
    text = text_field(fields, "answer", limit=MAX_REASON, required=True, what="write an answer: the learner reads it")
    has_score = str(fields.get("score") or "").strip() != ""
    if has_score and not accepted:
        raise ActionError("an override comes with an accepted request: tick accepted, or leave the score empty")
    follow = {"learner": appeal["learner"], "reason": text}
    done = []
    if accepted and has_score:
        done.append(_override(ctx, actor, {**follow, "score": fields["score"]}, refers_to=appeal["id"])["id"])
    if accepted and flag(fields, "regrade"):
        done.append(
            _regrade(ctx, actor, {**follow, "scope": "attempt", "attempt": appeal["attempt"]}, refers_to=appeal["id"])[
                "id"
            ]
        )
    return ctx.log.record(
        actor,
        ANSWER,
        learner=appeal["learner"],
        attempt=appeal["attempt"],
        refers_to=appeal["id"],
        reason=text,
        data={"accepted": accepted, "actions": done},
    )


def file_appeal(log: ActionLog, learner: str, fields: dict, limits: RequestLimits = RequestLimits()) -> dict:
    """A learner's regrade request about one of their own graded attempts (404 for anyone else's).

    Bounded like their attempts: over ``limits.limit`` requests per window a
    429 says when the next is allowed (``retry_after``); the text counts in
    the learner's storage bound, and over it a 413 says how much is kept.
    """
    attempt = id_field(fields, "attempt")
    if log.store.learner_of(attempt) != learner:
        raise ActionError(f"no attempt {attempt} of yours", 404)
    text = text_field(
        fields, "text", limit=MAX_APPEAL, required=True, what="say what you think was graded wrongly (text=...)"
    )
    size = len(text.encode("utf-8"))
    with _FILING:
        now = utcnow()
        since = now - dt.timedelta(seconds=limits.window)
        refused = request_refusal(log.requests_since(learner, since), limits, now)
        if refused:
            raise ActionError(refused[0], 429, retry_after=refused[1])
        used = kept_bytes(log.store, learner)
        if used + size > limits.max_bytes:
            raise ActionError(
                f"your kept attempts and regrade requests take {used} bytes and this request "
                f"{size} more; each learner may keep at most {limits.max_bytes} bytes (sources, "
                "reports and regrade requests). Ask your instructor in person, or to raise "
                "--max-learner-bytes",
                413,
            )
        return log.record(learner, APPEAL, learner=learner, attempt=attempt, reason=text)


# ------------------------------------------------------------------------------- applying


def apply_overrides(records: list[LearnerRecord], actions: list[dict]) -> list[LearnerRecord]:
    """The records with each override's score as the grade that counts (``credit``), saying it was overridden.

    The report is left as graded; ``credit.override`` keeps who, when, why and
    the grade it replaced, and ``why`` says so (the gradebook, LMS and
    Gradescope files show it).

    >>> r = LearnerRecord("ana", {"score": 3, "max_score": 10}, attempt=4)
    >>> act = {"kind": "override", "learner": "ana", "actor": "t", "at": "2030-01-01T00:00:00Z", "id": 9,
    ...        "reason": "hand-checked", "data": {"score": 7.0, "max_score": 10.0, "was": 3.0}}
    >>> got = apply_overrides([r], [act])[0].credit
    >>> got["credited"], got["why"]
    (7.0, 'overridden by t at 2030-01-01T00:00:00Z: hand-checked (the grade was 3/10)')
    """
    chosen = overrides_of(actions)
    out = []
    for record in records:
        act = chosen.get(record.learner)
        if act is None or not record.graded:
            out.append(record)
            continue
        was, most = _grade_of(record)
        base = record.credit or {"attempt": record.attempt, "max_score": most}
        why = f"overridden by {act['actor']} at {act['at']}: {act['reason']} (the grade was {was:g}/{most:g})"
        credit = {
            **base,
            "credited": act["data"]["score"],
            "why": why,
            "override": {
                "score": act["data"]["score"],
                "reason": act["reason"],
                "by": act["actor"],
                "at": act["at"],
                "was": was,
                "action": act["id"],
            },
        }
        out.append(_with_credit(record, credit))
    return out


def with_extensions(records: list[LearnerRecord], terms: dict) -> list[LearnerRecord]:
    """The records of learners with their own due dates, their ``credit`` saying so (``extension``).

    >>> from grader.service.actions_db import Terms
    >>> r = LearnerRecord("ana", {"score": 1}, credit={"credited": 1.0})
    >>> when = dt.datetime(2030, 1, 2, tzinfo=dt.timezone.utc)
    >>> with_extensions([r], {"ana": Terms(due=when)})[0].credit["extension"]
    {'due': '2030-01-02T00:00:00Z', 'late_due': None}
    """
    out = []
    for record in records:
        mine = terms.get(record.learner)
        if mine is None or mine.due is None or record.credit is None:
            out.append(record)
            continue
        extension = {"due": iso_utc(mine.due), "late_due": iso_utc(mine.late_due)}
        out.append(_with_credit(record, {**record.credit, "extension": extension}))
    return out


def _with_credit(record: LearnerRecord, credit: dict) -> LearnerRecord:
    return dataclasses.replace(record, credit=credit)
