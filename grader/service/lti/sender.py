"""The background sender: keeps the LMS's gradebook equal to the grades that count, without ever blocking grading.

A daemon thread wakes every ``interval`` seconds (or when poked). When the
class changed (``version()``: new results or instructor actions) it asks for
the grades that count, per assignment of the course file (``grades()``, the
service's own computation), and wants each changed one in the outbox, in
that assignment's column of each course the learner launched from
(:class:`grader.service.lti.columns.Columns`: found or made once, never the
line item of whatever link the learner opened); then it sends what is due. An LMS that does not answer, or
answers 5xx/429, is tried again after ``base * 2**tries`` seconds (at most
``cap``); a 4xx is a refusal, kept with its answer and shown. Grading never
waits for any of this: the queue only stores results, and the sender reads
them later.

Every send is reported to ``record(learner, text, data)`` (the service puts
it in the instructor actions' log) and logged.

Example::

    >>> backoff_seconds(0, base=2, cap=300), backoff_seconds(3, base=2, cap=300), backoff_seconds(20, base=2, cap=300)
    (2, 16, 300)
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable

from grader.service.lti.ags import Answer
from grader.service.lti.store import SCORE_SCOPE, Launches, Outbox, utcnow

log = logging.getLogger("agtool.service.lti")
NEVER_LAUNCHED = "never launched the assignment from the LMS: not sent (no LMS id to send it to; names are not matched)"
NO_LINEITEM = "launched without the LMS's gradebook service (no AGS line items in the launch): not sent"
NO_COLUMN = "the LMS's column of this assignment is not found or made yet: sent when it is"


def targets(learner_launches: list[dict], every_launch: list[dict]) -> list[dict]:
    """The courses a learner launched from: per platform and context, their ``sub`` and the course's container.

    The container (AGS ``lineitems``) is the newest any launch of that course
    carried, the learner's or another's (an instructor's Deep Linking launch).

    >>> mine = [{"issuer": "i", "context_id": "c1", "sub": "u1", "learner": "ana", "lineitems": None, "id": 1}]
    >>> alls = mine + [{"issuer": "i", "context_id": "c1", "sub": "t", "learner": "tea", "lineitems": "L", "id": 2}]
    >>> targets(mine, alls)
    [{'issuer': 'i', 'context_id': 'c1', 'sub': 'u1', 'learner': 'ana', 'lineitems': 'L'}]
    """
    containers: dict[tuple[str, str], str] = {}
    for launch in every_launch:
        if launch.get("lineitems"):
            containers[(launch["issuer"], launch["context_id"])] = launch["lineitems"]
    mine: dict[tuple[str, str], dict] = {}
    for launch in learner_launches:
        key = (launch["issuer"], launch["context_id"])
        mine[key] = {
            "issuer": launch["issuer"],
            "context_id": launch["context_id"],
            "sub": launch["sub"],
            "learner": launch["learner"],
            "lineitems": containers.get(key),
        }
    return list(mine.values())


def backoff_seconds(tries: int, *, base: float, cap: float) -> float:
    """Seconds to wait after ``tries`` failed tries in a row: doubling from ``base``, at most ``cap``."""
    return min(cap, base * 2 ** min(tries, 30))


def fmt(score: float) -> str:
    """A score as the gradebook shows it.

    >>> fmt(7.0), fmt(7.25)
    ('7', '7.25')
    """
    return f"{score:g}"


class Sender:
    """Outbox, client and the service's callbacks; ``start()`` runs the thread, ``send_class()`` is the action."""

    def __init__(
        self,
        outbox: Outbox,
        launches: Launches,
        client,
        *,
        grades: Callable[[], dict[str, dict[str, tuple[float, float]]]],
        columns,
        version: Callable[[], object],
        record: Callable[[str, str, str, dict], None],
        sync: Callable[[set[str] | None], object] | None = None,
        interval: float = 2.0,
        base: float = 2.0,
        cap: float = 300.0,
    ):
        self.outbox, self.launches, self.client = outbox, launches, client
        self.grades, self.version, self.record, self.sync = grades, version, record, sync
        self.columns = columns
        self.interval, self.base, self.cap = interval, base, cap
        self._seen_version = None
        self._wanted: dict[str, dict[str, tuple[float, float]]] = {}
        self._sending = threading.Lock()  # the thread and an instructor's action never send the same row twice
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ the thread

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="agtool-lti-sender", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def poke(self) -> None:
        """Look now (a grade may have changed) instead of at the next interval."""
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.step()
            except Exception:  # the sender must outlive any one bad row or database hiccup
                log.exception("LTI sender: a round failed; trying again in %s s", self.interval)
            self._wake.wait(self.interval)
            self._wake.clear()

    def step(self) -> list[dict]:
        """One round: want the grades that changed since the last round, then send what is due."""
        version = self.version()
        if version != self._seen_version:
            grades = self.grades()
            if self.sync is not None:  # the launches of learners whose grade changed: the link they came from now
                self.sync({learner for learner, grade in grades.items() if self._wanted.get(learner) != grade})
            # A column not found or made yet (the LMS down): look again next round, not at the next change.
            self._seen_version = version if self._want_changed(grades) else None
        return self.send_due()

    def _want_changed(self, grades: dict[str, dict[str, tuple[float, float]]]) -> bool:
        """Want every changed grade in its column; whether every one had its column."""
        complete, every = True, self.launches.all()
        for learner, per_assignment in grades.items():
            if self._wanted.get(learner) == per_assignment:
                continue
            whole = True
            for target in targets(self.launches.of(learner), every):
                if not target["lineitems"]:  # no AGS in that course's launches: nothing to find until a new launch
                    continue
                for assignment_id, grade in per_assignment.items():
                    if self._want_one(target, assignment_id, grade) is None:
                        whole = False
            if whole:
                self._wanted[learner] = per_assignment
            complete = complete and whole
        return complete

    def _want_one(self, target: dict, assignment_id: str, grade: tuple[float, float], **kw) -> str | None:
        """Want ``grade`` in the column of ``assignment_id`` in ``target``'s course: the outbox's answer, or None
        when the column is not found or made yet."""
        column = self.columns.column_for(target, assignment_id)
        if column is None:
            return None
        wish = {**target, "lineitem": column, "ags_scopes": [SCORE_SCOPE]}
        return self.outbox.want(wish, *grade, **kw)

    # ------------------------------------------------------------------ sending

    def send_due(self, learners: set[str] | None = None, actor: str = "agtool-lti") -> list[dict]:
        """Send every due row (``learners``: theirs only); one result per row sent."""
        results = []
        with self._sending:
            for row in self.outbox.due():
                if learners is not None and row.learner not in learners:
                    continue
                results.append(self._send(row, actor))
        return results

    def _send(self, row, actor: str) -> dict:
        import json

        answer: Answer = self.client.post_score(
            row.lineitem, json.loads(row.scopes), row.sub, row.score_given, row.score_maximum, row.wanted_at
        )
        grade = f"{fmt(row.score_given)}/{fmt(row.score_maximum)}"
        data = {
            "lineitem": row.lineitem,
            "sub": row.sub,
            "score_given": row.score_given,
            "score_maximum": row.score_maximum,
            "status": answer.status,
            "answer": answer.text[:500],
        }
        if answer.ok:
            self.outbox.sent(row.id, answer.status, answer.text, row.score_given, row.score_maximum)
            text, result = f"grade {grade} sent to the LMS: it answered {answer.status}", "sent"
            log.info("LTI score %s for %s (sub %s) accepted by the LMS: %s", grade, row.learner, row.sub, answer.status)
        elif answer.retry:
            wait = backoff_seconds(row.tries, base=self.base, cap=self.cap)
            when = utcnow() + dt.timedelta(seconds=wait)
            self.outbox.failed(row.id, answer.status, answer.text, when)
            said = "did not answer" if answer.status is None else f"answered {answer.status}"
            text, result = (
                f"grade {grade} not sent yet: the LMS {said}; tried again at "
                f"{when.replace(microsecond=0).isoformat()}Z",
                "waiting",
            )
            data["retry_at"] = when.isoformat() + "Z"
            log.warning(
                "LTI score %s for %s (sub %s) not delivered: the LMS %s (%s); retry in %g s",
                grade,
                row.learner,
                row.sub,
                said,
                answer.text[:200],
                wait,
            )
        else:
            self.outbox.refused(row.id, answer.status, answer.text, row.score_given, row.score_maximum)
            text, result = f"grade {grade} refused by the LMS ({answer.status}): {answer.text[:300]}", "refused"
            log.warning(
                "LTI score %s for %s (sub %s) refused by the LMS: %s %s",
                grade,
                row.learner,
                row.sub,
                answer.status,
                answer.text[:300],
            )
        self.record(actor, row.learner, text, {**data, "result": result})
        return {"learner": row.learner, "result": result, "text": text, **data}

    def send_class(self, actor: str) -> list[dict]:
        """The instructor action: want every counted grade now and send it; one result per learner with a grade.

        Learners who never launched are listed as such (never guessed by
        name); a grade the LMS already holds is not sent again.
        """
        if self.sync is not None:
            self.sync(None)  # every hub user's launch: the instructor asks for the whole class
        grades = self.grades()
        every = self.launches.all()
        results: dict[str, list[dict]] = {}
        for learner, per_assignment in sorted(grades.items()):
            launches = self.launches.of(learner)
            if not launches:
                results[learner] = [{"learner": learner, "result": "not sent", "text": NEVER_LAUNCHED}]
                continue
            whole = True
            for target in targets(launches, every):
                if not target["lineitems"]:
                    results.setdefault(learner, []).append(
                        {"learner": learner, "result": "not sent", "text": NO_LINEITEM}
                    )
                    whole = False
                    continue
                for assignment_id, grade in per_assignment.items():
                    state = self._want_one(target, assignment_id, grade, now_please=True)
                    if state is None:
                        whole = False
                        results.setdefault(learner, []).append(
                            {"learner": learner, "result": "not sent", "assignment": assignment_id, "text": NO_COLUMN}
                        )
                    elif state == "already sent":
                        results.setdefault(learner, []).append(
                            {
                                "learner": learner,
                                "result": "already sent",
                                "assignment": assignment_id,
                                "text": f"{assignment_id}: grade {fmt(grade[0])}/{fmt(grade[1])} is what the LMS "
                                "holds: not sent again",
                            }
                        )
            if whole:
                self._wanted[learner] = per_assignment
        for sent in self.send_due(set(grades), actor=actor):
            results.setdefault(sent["learner"], []).append(sent)
        for row in self.outbox.all():  # wanted but not sent now (a retry is waiting): say so
            if row["learner"] in grades and row["state"] == "pending" and row["learner"] not in results:
                results[row["learner"]] = [
                    {
                        "learner": row["learner"],
                        "result": "waiting",
                        "text": f"waiting for the LMS: {row['last_answer'][:200]}",
                    }
                ]
        return [item for learner in sorted(results) for item in results[learner]]
