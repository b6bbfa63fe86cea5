"""Seed policy: the grade that counts is drawn from a seed no learner sees.

A learner who knows the seed of the grade that counts can enumerate its
cases and hard-code the answers. So a class has a secret key (kept by the
instructor, never written into feedback), and:

* the **grading seed** of a learner is ``HMAC-SHA256(key, "grade:" + learner id)``
  folded to 63 bits: fixed for a learner and a key (a regrade or ``--resume``
  gives the same grade), different for every learner, unknowable without the key;
* the **feedback seed** is ``HMAC(key, "feedback:" + learner id + ":" + round)``:
  what feedback files print and replay (``agtool-grade check FILE --seed S``
  reproduces exactly what the learner was shown), never the grading seed.
  A new ``round`` (a new batch run) gives new feedback cases.

``agtool-grade check --seed S`` keeps working for any seed: replays are
unaffected. Without a key (a laptop, a notebook's Check cell) there is
nothing to protect and the seeds are random.

Example::

    >>> key = b"class-2026-secret"
    >>> grading_seed(key, "alice") == grading_seed(key, "alice")
    True
    >>> grading_seed(key, "alice") != grading_seed(key, "bob")
    True
    >>> feedback_seed(key, "alice", 1) != grading_seed(key, "alice")
    True
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import unicodedata
from dataclasses import dataclass

SEED_KEY_ENV = "AGTOOL_SEED_KEY"  # the setting ``seed_key`` of grader.settings (read there, not here)
_SEED_BITS = 63  # a positive int that every JSON reader and spreadsheet keeps exact as text


def new_key() -> str:
    """A fresh class key (hex): store it with the instructor's files, outside anything learners see.

    >>> len(new_key())
    64
    """
    return secrets.token_hex(32)


def class_key(value: str | bytes | None = None, settings=None) -> bytes | None:
    """The class key from ``value``, else ``settings.seed_key`` (``$AGTOOL_SEED_KEY``), else ``None`` (random seeds).

    ``settings`` is a :class:`grader.settings.Settings`, which the caller
    reads (this module sits below it and imports nothing of the grader).

    >>> from types import SimpleNamespace as Settings
    >>> class_key("abc"), class_key(settings=Settings(seed_key="k1")), class_key() is None
    (b'abc', b'k1', True)
    >>> class_key("") is None
    True
    """
    if value is None:
        value = settings.seed_key if settings is not None else ""
    if isinstance(value, str):
        value = value.strip().encode("utf-8")
    return value or None


def grading_seed(key: bytes, learner_id: str) -> int:
    """The seed of ``learner_id``'s grade that counts: derived from the secret key, never shown.

    >>> grading_seed(b"k", "alice")
    1604875965072329152
    """
    return _derive(key, "grade:" + _norm(learner_id))


def feedback_seed(key: bytes, learner_id: str, round_: int | str = 0) -> int:
    """The seed feedback shows and replays for ``learner_id`` (a different one per ``round_``).

    >>> feedback_seed(b"k", "alice", 1) != feedback_seed(b"k", "alice", 2)
    True
    """
    return _derive(key, f"feedback:{_norm(learner_id)}:{round_}")


def _norm(learner_id: str) -> str:
    # The same learner id typed or read back in another Unicode form derives the same seed.
    return unicodedata.normalize("NFC", str(learner_id))


def _derive(key: bytes, message: str) -> int:
    digest = hmac.new(key, message.encode("utf-8", "surrogatepass"), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") >> (64 - _SEED_BITS)


@dataclass(frozen=True)
class SeedPlan:
    """The seeds a batch or the service grades with: one class seed, or per-learner seeds from a secret key.

    Without a key every learner's grade uses ``seed`` (printed in the
    feedback, so it replays). With a key (this module's) the grade that
    counts uses a seed derived from the key and the learner id, never shown,
    and each learner also gets a feedback run on a seed of ``round``: a new
    batch run is a new round (new feedback cases), ``--resume`` keeps it.

    >>> SeedPlan(seed=7).grading("ana"), SeedPlan(seed=7).feedback("ana")
    (7, None)
    >>> keyed = SeedPlan(key=b"k", round=1)
    >>> keyed.grading("ana") != keyed.feedback("ana"), keyed.manifest()["seed"]
    (True, None)
    """

    seed: int | None = None
    key: bytes | None = None
    round: int = 0

    def grading(self, learner: str) -> int:
        return grading_seed(self.key, learner) if self.key else self.seed

    def feedback(self, learner: str) -> int | None:
        return feedback_seed(self.key, learner, self.round) if self.key else None

    def manifest(self) -> dict:
        # Never the key; with one, not even a seed: they are derived per learner.
        return {"seed": None, "seed_policy": "keyed", "feedback_round": self.round} if self.key else {"seed": self.seed}

    def describe(self) -> str:
        return f"per-learner seeds (keyed), feedback round {self.round}" if self.key else f"seed {self.seed}"
