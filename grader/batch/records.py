"""A batch's saved results: one JSON record per learner under ``OUT/results/``, written atomically.

Each record (a :class:`grader.outputs.record.LearnerRecord`) holds the sha256
of the bytes that were graded, the seed and the selection, so ``--resume``
can tell which results still stand, and the class outputs can be rebuilt
from these files alone.

Example::

    >>> result_record("ana", "ana/tools.py", "ab12", 7, {"steps": None, "only": None}, {}).learner
    'ana'
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from grader.outputs.record import LearnerRecord

RESULTS_DIR = "results"
MANIFEST = "batch.json"


def write_json_atomically(path: Path, data: dict) -> None:
    """Write ``data`` as JSON so that readers see the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    # Compact: with ``indent`` json falls back to its pure-Python encoder, ~10x slower, once per learner.
    tmp.write_text(json.dumps(data, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def result_record(
    learner: str,
    display: str,
    sha256: str,
    seed: int,
    selection: dict,
    report: dict,
    feedback: tuple[int, dict] | None = None,
    submitted_at: str | None = None,
) -> LearnerRecord:
    """One learner's saved result; ``feedback`` is ``(seed, report)`` of the run they are shown, if separate.

    ``report`` is the grade that counts. With a seed key (``grader.seeds``) its
    seed is secret and stays in this instructor-only file; the learner's
    feedback comes from ``feedback_report``, graded on other cases.
    ``submitted_at`` (ISO 8601, UTC) is the attempt's time under a course
    policy: the run that first graded these bytes (kept by ``--resume``).
    """
    feedback_seed, feedback_report = feedback if feedback is not None else (None, None)
    return LearnerRecord(
        learner=learner,
        source=display,
        sha256=sha256,
        seed=seed,
        selection=selection,
        report=report,
        feedback_seed=feedback_seed,
        feedback_report=feedback_report,
        submitted_at=submitted_at,
    )


def load_record(out: Path, learner: str) -> LearnerRecord | None:
    """The saved record of ``learner`` under ``out/results``, or ``None`` (none, or not readable as one)."""
    try:
        data = json.loads((Path(out) / RESULTS_DIR / f"{learner}.json").read_text(encoding="utf-8"))
        return LearnerRecord.from_dict(data)
    except (FileNotFoundError, json.JSONDecodeError, TypeError, AttributeError):
        return None


def load_records(out: str | os.PathLike[str], learners: Iterable[str] | None = None) -> list[LearnerRecord]:
    """The result records under ``out/results``, sorted by learner (all, or only ``learners``).

    >>> [r.learner for r in load_records("out/")]   # doctest: +SKIP
    ['alice', 'bob']
    """
    out = Path(out)
    if learners is None:
        learners = [p.stem for p in (out / RESULTS_DIR).glob("*.json")]
    records = [load_record(out, learner) for learner in sorted(learners)]
    return [r for r in records if r]
