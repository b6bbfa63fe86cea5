"""A learner's feedback (``feedback/<learner>.md``): the grade report rendered as ``agtool-grade check`` shows it.

Example::

    >>> report = {"seed": 1, "path": "t.py", "checks": []}
    >>> render_feedback({"learner": "ana", "report": report}).startswith("# ")
    True
"""
from __future__ import annotations

from grader.escape import md_text
from grader.outputs.record import LearnerRecord
from grader.render import render_markdown
from grader.report import Report

KEYED_NOTE = ("**The grade that counts: {score}/{max_score}.** It was graded on cases drawn from a seed "
              "that is not shown, so no answer can be fitted to them. The checks below ran on other cases "
              "of the same kinds; each failed one has a command that replays exactly what you see here.\n\n")


def _typed(record: "LearnerRecord | dict") -> LearnerRecord:
    return record if isinstance(record, LearnerRecord) else LearnerRecord.from_dict(record)


def credit_line(record: "LearnerRecord | dict") -> str:
    """One Markdown line saying what counted under the course policy (``""`` without a policy).

    >>> print(credit_line({"report": {}, "credit": {"credited": 8.0, "max_score": 10.0, "attempt": 3,
    ...                                              "why": "late *80%*"}}))
    **Credited: 8/10** (attempt 3): late \\*80%\\*
    <BLANKLINE>
    <BLANKLINE>
    """
    got = _typed(record).credit
    if not got:
        return ""
    return (f"**Credited: {got['credited']:g}/{got['max_score']:g}** (attempt {md_text(got['attempt'])}): "
            f"{md_text(got['why'])}\n\n")


def learner_reports(record: "LearnerRecord | dict") -> "tuple[Report, Report]":
    """``(shown, counting)``: the report a learner is shown and the grade that counts, each parsed once.

    They are the same report unless the class has a seed key (a feedback run).

    >>> report = {"seed": 1, "path": "t.py", "checks": []}
    >>> shown, counting = learner_reports({"report": report})
    >>> shown is counting, learner_reports({"report": report, "feedback_report": {**report, "seed": 2}})[0].seed
    (True, 2)
    """
    record = _typed(record)
    return record.shown_report(), record.grade_report()


def render_feedback(record: "LearnerRecord | dict") -> str:
    """Markdown feedback for one learner: the grader's own renderer, so it matches ``agtool-grade check``.

    With a seed key the learner sees the feedback run (its own seed, replayable)
    under the score of the grade that counts, never that grade's cases.

    >>> report = {"seed": 1, "path": "t.py", "checks": [], "score": 0, "max_score": 0}
    >>> render_feedback({"report": report, "feedback_report": {**report, "seed": 2}}).startswith("**The grade")
    True
    """
    return feedback_text(record, *learner_reports(record))


def feedback_text(record: "LearnerRecord | dict", shown: Report, counting: Report) -> str:
    """:func:`render_feedback` from the record's reports, already parsed by :func:`learner_reports`.

    >>> r = Report(seed=1, path="t.py")
    >>> feedback_text({"report": {}}, r, r) == render_markdown(r)
    True
    """
    record = _typed(record)
    if record.feedback_report is None:
        return credit_line(record) + render_markdown(shown)
    return (credit_line(record) + KEYED_NOTE.format(score=counting.score, max_score=counting.max_score)
            + render_markdown(shown))
