"""Fair share of the grading workers between learners: round-robin, and a cap on one learner's attempts at once.

A learner who submits many slow attempts must not delay a classmate: the
queue hands out the next attempt of the *next learner in turn* (not the
oldest attempt of anyone), and never lets one learner hold more than
``per_learner`` workers. With ``jobs`` workers and ``per_learner = jobs - 1``
a classmate arriving during one learner's flood always finds a worker free.

Pure and deterministic (no clock, no threads): the queue calls it under its lock.

Example::

    >>> q = FairQueue(per_learner=1)
    >>> for attempt, learner in [(1, "ana"), (2, "ana"), (3, "ana"), (4, "bob")]:
    ...     q.push(attempt, learner)
    >>> q.pop(), q.pop(), q.pop()
    ((1, 'ana'), (4, 'bob'), None)
    >>> q.done("ana"); q.pop()
    (2, 'ana')
"""

from __future__ import annotations

from collections import Counter, deque


def share_for(jobs: int) -> int:
    """Workers one learner may hold at once: all but one, so a classmate always finds one free (at least one).

    >>> share_for(1), share_for(2), share_for(8)
    (1, 1, 7)
    """
    return max(1, jobs - 1)


class FairQueue:
    """Waiting attempts by learner; :meth:`pop` serves learners in turn, each up to ``per_learner`` at once."""

    def __init__(self, per_learner: int = 1):
        self.per_learner = max(1, per_learner)
        self._waiting: dict[str, deque[int]] = {}  # insertion order is the turn order
        self._running: Counter = Counter()

    def push(self, attempt_id: int, learner: str) -> None:
        """Add an attempt at the end of its learner's line (a new learner joins the end of the turn order)."""
        self._waiting.setdefault(learner, deque()).append(attempt_id)

    def pop(self) -> tuple[int, str] | None:
        """The next attempt to grade, ``(id, learner)``, counted as running; None if all waiting are at the cap."""
        for learner in list(self._waiting):
            if self._running[learner] >= self.per_learner:
                continue
            line = self._waiting.pop(learner)
            attempt_id = line.popleft()
            if line:
                self._waiting[learner] = line  # back at the end of the turn order
            self._running[learner] += 1
            return attempt_id, learner
        return None

    def done(self, learner: str) -> None:
        """One of ``learner``'s attempts stopped running (graded, lost, or not claimed)."""
        if self._running[learner] > 0:
            self._running[learner] -= 1
        if not self._running[learner]:
            del self._running[learner]

    def __len__(self) -> int:
        """Attempts waiting (not the running ones)."""
        return sum(len(line) for line in self._waiting.values())
