"""A class's outputs as files in one folder (what ``agtool-grade batch --out OUT`` leaves).

``grades.csv``, ``grades.json``, ``summary.md``, ``feedback/<learner>.md``
and ``.txt``, ``gradescope/<learner>/results.json`` and ``plots/*.png``; with a roster,
``lms/*.csv``; with sources, ``similarity.html`` and ``.csv``. Every file is
a pure function of the records, so a batch that was killed and resumed ends
with the same bytes as one that ran straight through.

Example::

    >>> paths = write_outputs(records, "out/")   # doctest: +SKIP
    >>> paths["csv"]                              # doctest: +SKIP
    PosixPath('out/grades.csv')
"""

from __future__ import annotations

import shutil
from pathlib import Path

from grader.outputs.feedback import feedback_text, learner_reports
from grader.outputs.gradebook import (
    COUNTED_RULE,
    COUNTED_RULE_NO_TEXTS,
    Records,
    check_stats,
    counted_records,
    counted_words,
    gradebook_frame,
    step_frame,
    write_gradebook,
    wrong_answers,
)
from grader.outputs.gradescope_results import gradescope_text
from grader.outputs.lms import write_lms
from grader.outputs.plain import feedback_plain_text
from grader.outputs.plots import start_plots
from grader.outputs.record import LearnerRecord, as_records
from grader.outputs.similarity import write_similarity
from grader.outputs.starter import starter_submissions
from grader.outputs.summary import render_summary

PER_LEARNER = ("feedback", "gradescope", "plots")  # emptied first: learners who left leave no files


def write_learner_outputs(record: LearnerRecord | dict, out: Path, *, starter: bool = False) -> None:
    """Write one learner's ``feedback/<learner>.md`` and ``.txt`` and ``gradescope/<learner>/results.json``.

    >>> write_learner_outputs({"learner": "ana", "report": {"seed": 1, "path": "t.py", "checks": []}},
    ...                       Path("out"))   # doctest: +SKIP
    """
    record = as_records([record])[0]
    shown, counting = learner_reports(record)
    (out / "feedback" / f"{record.learner}.md").write_text(
        feedback_text(record, shown, counting, starter=starter), encoding="utf-8"
    )
    (out / "feedback" / f"{record.learner}.txt").write_text(
        feedback_plain_text(record, shown, counting, starter=starter), encoding="utf-8"
    )
    results = out / "gradescope" / record.learner / "results.json"
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(gradescope_text(record), encoding="utf-8")


def write_outputs(
    records: Records,
    out: str | Path,
    *,
    archive_skipped: list[tuple[str, str]] = (),
    sources: dict[str, str] | None = None,
) -> dict[str, Path]:
    """Write every class output under ``out`` and return their paths by name.

    The per-learner folders (``feedback/``, ``gradescope/``) and ``plots/``
    are emptied first, so learners no longer in the class leave no files.
    ``sources`` (learner -> the text of their file) lets ``summary.md`` name
    the learners who handed in the starter unchanged.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    records = as_records(records)
    for sub in PER_LEARNER:
        shutil.rmtree(out / sub, ignore_errors=True)
        (out / sub).mkdir(parents=True)
    starter = starter_submissions(sources or {})
    # Drawn by a second process while this one writes the rest: the plots are half the work. Every plot
    # counts the records summary.md counts (counted_records): no starter unchanged, no ungradable file.
    counted = counted_records(records, starter)
    rule = COUNTED_RULE if sources is not None else COUNTED_RULE_NO_TEXTS
    wait_for_plots = start_plots(
        gradebook_frame(counted), check_stats(counted), step_frame(counted), out / "plots", rule
    )
    paths = write_gradebook(records, out)
    for r in records:
        write_learner_outputs(r, out, starter=r.learner in starter)
    paths["summary"] = out / "summary.md"
    paths["summary"].write_text(
        render_summary(records, archive_skipped, starter, starter_known=sources is not None), encoding="utf-8"
    )
    plots = wait_for_plots()
    return {
        **paths,
        "feedback": out / "feedback",
        "gradescope": out / "gradescope",
        **{f"plot:{p.stem}": p for p in plots},
    }


def class_tables(records: Records, sources: dict[str, str] | None = None) -> dict:
    """The class tables as ``summary.md`` and the plots count them (the instructor dashboard shows these).

    ``starter``: the learners who handed in the starter unchanged (from ``sources``, learner -> text; by
    default each record's file as it is on disk); ``counted``: the learners every statistic counts, and
    ``counted_words`` the rule in words (:func:`~grader.outputs.gradebook.counted_words`); ``checks``:
    pass rates and ``wrong_answers``: the most
    common wrong answers, and ``steps``: points per step, all over
    :func:`~grader.outputs.gradebook.counted_records` (the one rule of every class statistic).

    >>> class_tables([])["wrong_answers"].empty
    True
    """
    records = as_records(records)
    if sources is None:
        sources = {}
        for r in records:
            try:
                sources[r.learner] = Path(r.source).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError, TypeError, ValueError):
                continue  # gone or unreadable: not known to be the starter
    starter = starter_submissions(sources)
    counted = counted_records(records, starter)
    return {
        "starter": starter,
        "counted": [r.learner for r in counted],
        "counted_words": counted_words(len(counted)),
        "checks": check_stats(counted),
        "wrong_answers": wrong_answers(records, starter),
        "steps": step_frame(counted),
    }


def write_extras(
    records: Records,
    out: Path,
    *,
    roster=None,
    assignment: str = "agtool lab",
    sources: dict[str, str] | None = None,
    references: dict[str, str] | None = None,
) -> tuple[dict[str, Path], list, list]:
    """The optional outputs: ``lms/*.csv`` with a roster, ``similarity.*`` with sources or references.

    Returns ``(paths, unmatched learners, similar pairs)``.

    >>> write_extras([], Path("out"))
    ({}, [], [])
    """
    paths: dict[str, Path] = {}
    unmatched: list = []
    pairs: list = []
    if roster is not None:
        got, unmatched = write_lms(records, roster, out / "lms", assignment=assignment)
        paths.update(got)
    if sources is not None or references:
        got, pairs = write_similarity(sources or {}, out, references=references)
        paths.update(got)
    return paths, unmatched, pairs
