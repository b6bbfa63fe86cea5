"""Each assignment's column in each LMS course: found or made once through AGS, or declared by Deep Linking.

A column (an AGS line item) belongs to one assignment of the course file in
one course (the launch's context). :meth:`Columns.column_for` gives its URL:

1. bound already (``lti_lineitems``): that one, never another;
2. else the sender claims the row (:meth:`grader.service.lti.store.LineItems.claim`:
   one sender at a time, across threads and processes), asks the course's
   line item container for ``resource_id`` = the assignment id and binds the
   first found (the tool made it before a crash, or the LMS made it from a
   Deep Linking answer); only when there is none does it make one
   (``label`` the assignment's name, ``scoreMaximum`` its points,
   ``resourceId`` its id, ``tag`` ``agtool``) and bind it.

A column declared in a Deep Linking answer is made by the LMS, not by the
tool: its row is claimed until ``declared_wait`` seconds have passed, so the
sender finds the LMS's column rather than making a second one. Scores go to
bound columns only: a link the learner opened (its own line item) never
decides where a score goes.

Example::

    >>> from sqlalchemy import create_engine
    >>> from grader.service.lti.ags import Answer
    >>> from grader.service.lti.store import LineItems, LtiBase
    >>> engine = create_engine("sqlite://"); LtiBase.metadata.create_all(engine)
    >>> class Lms:
    ...     made = []
    ...     def find_lineitems(self, container, resource_id):
    ...         return Answer(200, ""), [i for i in self.made if i["resourceId"] == resource_id]
    ...     def create_lineitem(self, container, item):
    ...         self.made.append({**item, "id": f"{container}/{len(self.made) + 1}"}); return Answer(201, ""), self.made[-1]
    >>> columns = Columns(LineItems(engine), Lms(), {"lab-a": ("Lab A", 20.0)})
    >>> target = {"issuer": "https://lms", "context_id": "c1", "lineitems": "https://lms/c1/lineitems"}
    >>> columns.column_for(target, "lab-a"), columns.column_for(target, "lab-a"), len(Lms.made)
    ('https://lms/c1/lineitems/1', 'https://lms/c1/lineitems/1', 1)
"""

from __future__ import annotations

import datetime as dt
import logging

from grader.limits import LTI_COLUMN_DECLARED_WAIT
from grader.service.lti.ags import TAG
from grader.service.lti.store import LineItems, utcnow

log = logging.getLogger("agtool.service.lti")
CLAIM_SECONDS = 60.0  # a claim older than this is taken over: its sender died or the LMS did not answer
DECLARED_WAIT = LTI_COLUMN_DECLARED_WAIT  # a column declared by Deep Linking is the LMS's to make for this long


class Columns:
    """The columns of ``assignments`` (``{id: (name, points)}``) through ``client`` (find/create line items)."""

    def __init__(
        self,
        items: LineItems,
        client,
        assignments: dict[str, tuple[str, float]],
        *,
        claim_seconds: float = CLAIM_SECONDS,
        declared_wait: float = DECLARED_WAIT,
    ):
        self.items, self.client, self.assignments = items, client, assignments
        self.claim_seconds, self.declared_wait = claim_seconds, declared_wait

    def column_for(self, target: dict, assignment_id: str) -> str | None:
        """The URL of the column of ``assignment_id`` in ``target``'s course, found or made; None: not yet.

        ``target``: ``issuer``, ``context_id`` and ``lineitems`` (the course's
        line item container, from a launch's AGS claim).
        """
        if assignment_id not in self.assignments:
            return None  # not an assignment of the course file: no column, whatever a launch says
        issuer, context = target["issuer"], target["context_id"]
        row = self.items.get(issuer, context, assignment_id)
        if row is not None and row["lineitem"]:
            return row["lineitem"]
        container = target.get("lineitems")
        if not container:
            return None
        if row is not None:  # declared by Deep Linking, or another sender is at it: the LMS may have it already
            found = self._find(container, assignment_id)
            if found:
                return self._bind(target, assignment_id, found, "found")
        if not self.items.claim(issuer, context, assignment_id, stale_seconds=self.claim_seconds):
            return None
        found = self._find(container, assignment_id)
        if found is None:  # the LMS did not answer: the next round tries again
            self.items.release(issuer, context, assignment_id)
            return None
        if found:
            return self._bind(target, assignment_id, found, "found")
        name, points = self.assignments[assignment_id]
        answer, made = self.client.create_lineitem(
            container, {"label": name, "scoreMaximum": points, "resourceId": assignment_id, "tag": TAG}
        )
        if not answer.ok or made is None:
            log.warning("LTI: the column of %r in course %r not made: %s", assignment_id, context, answer.text[:300])
            self.items.release(issuer, context, assignment_id)
            return None
        log.info("LTI: made the column of %r in course %r: %s", assignment_id, context, made["id"])
        return self._bind(target, assignment_id, made, "created")

    def declare(self, target: dict, assignment_id: str) -> bool:
        """Whether a Deep Linking answer for ``assignment_id`` in ``target``'s course may carry a ``lineItem``.

        Only when the course has no column of it (bound or found) and no
        other sender or answer is making one: the LMS then makes it, and the
        row waits ``declared_wait`` seconds for it before the tool would.
        """
        issuer, context = target["issuer"], target["context_id"]
        row = self.items.get(issuer, context, assignment_id)
        if row is not None:
            return False
        container = target.get("lineitems")
        if container:
            found = self._find(container, assignment_id)
            if found:
                self._bind(target, assignment_id, found, "found")
                return False
        if not self.items.claim(issuer, context, assignment_id, stale_seconds=self.claim_seconds, origin="declared"):
            return False
        self.items.hold(issuer, context, assignment_id, until=utcnow() + dt.timedelta(seconds=self.declared_wait))
        return True

    def _find(self, container: str, assignment_id: str) -> list[dict] | None:
        answer, found = self.client.find_lineitems(container, assignment_id)
        if not answer.ok:
            log.warning("LTI: the line items of %s not read: %s %s", container, answer.status, answer.text[:200])
            return None
        return [i for i in found if i.get("id")]

    def _bind(self, target: dict, assignment_id: str, found, origin: str) -> str:
        item = found[0] if isinstance(found, list) else found
        if isinstance(found, list) and len(found) > 1:
            log.warning(
                "LTI: %d columns of %r in course %r (resourceId); scores go to the first, %s",
                len(found),
                assignment_id,
                target["context_id"],
                item["id"],
            )
        name, points = self.assignments[assignment_id]
        row = self.items.bind(
            target["issuer"],
            target["context_id"],
            assignment_id,
            str(item["id"]),
            origin,
            label=str(item.get("label") or name),
            score_maximum=float(item.get("scoreMaximum") or points),
        )
        return row["lineitem"]
