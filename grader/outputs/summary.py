"""``summary.md``: the class in one page (score statistics, steps, hardest checks, wrong answers, errors).

A record the grading machinery failed on is listed under "Could not be
graded" and in no statistic: it is not a grade. Learners who handed in the
starter unchanged are named in their own section and give no wrong answer;
an answer that is the starter's ``NotImplementedError`` is a step not
started, counted per step, never a common wrong answer.

Example::

    >>> print(render_summary([]).splitlines()[0])
    # Class summary
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from grader.escape import md_cell, md_code, md_code_cell, md_text
from grader.limits import ERROR_LINE_CHARS
from grader.outputs.gradebook import (
    COUNTED_RULE,
    COUNTED_RULE_NO_TEXTS,
    Records,
    check_stats,
    counted_records,
    counted_words,
    gradebook_frame,
    step_frame,
    wrong_answers,
)
from grader.outputs.record import LearnerRecord, as_records
from grader.outputs.starter import not_started_step

HARDEST_SHOWN = 10


def render_summary(
    records: Records,
    archive_skipped: list[tuple[str, str]] = (),
    starter: Iterable[str] = (),
    *,
    starter_known: bool = True,
) -> str:
    """``summary.md``: score statistics, per-step means, hardest checks, common wrong answers, errors.

    ``archive_skipped`` lists the zip members that could not be extracted
    (name, why), so a learner whose file was in one is not lost silently.
    ``starter`` names the learners whose file is the starter unchanged
    (:func:`grader.outputs.starter.starter_submissions`); ``starter_known`` is
    ``False`` when the files' texts were not at hand to tell (each statistic
    says so).

    >>> print(render_summary([], [("ana/`x`.py", "bad CRC")]).split("## ")[-1])
    Skipped from the zip
    <BLANKLINE>
    - ``ana/`x`.py``: bad CRC
    <BLANKLINE>
    """
    records = as_records(records)
    starter = sorted(set(starter))
    counted = counted_records(records, starter)  # every statistic below counts these (one rule)
    rule = COUNTED_RULE if starter_known else COUNTED_RULE_NO_TEXTS
    lines = _totals(records, counted, rule)
    answering = [r for r in records if r.learner not in starter]
    for section in (
        _starter(starter),
        _steps(counted, rule),
        _hardest(counted, rule),
        _wrong_answers(records, starter),
        _not_started(answering),
        _errors(records),
        _course(records),
        _skipped(archive_skipped),
    ):
        lines += section
    return "\n".join(lines) + "\n"


def _totals(records: list[LearnerRecord], counted: list[LearnerRecord], rule: str) -> list[str]:
    seeds = sorted({r.seed for r in records if r.seed is not None})
    lines = ["# Class summary", "", f"- learners: {len(records)}", f"- seed: {', '.join(map(str, seeds)) or '-'}"]
    if not records:
        return lines
    book = gradebook_frame(records)
    max_score = int(book["max_score"].max())
    frame = gradebook_frame(counted)
    scores = frame["score"]
    mean = f"{scores.mean():.2f}" if len(scores) else "-"
    median = f"{scores.median():g}" if len(scores) else "-"
    return lines + [
        f"- statistics: {counted_words(len(counted), rule)}",
        f"- mean score: {mean} / {max_score}",
        f"- median score: {median} / {max_score}",
        f"- full marks: {int((scores == frame['max_score']).sum())}",
        f"- could not be graded: {int((book['error'] != '').sum())}",
    ]


def _steps(records: list[LearnerRecord], rule: str) -> list[str]:
    steps = step_frame(records)
    if steps.empty:
        return []
    lines = [
        "",
        "## Score per step",
        "",
        f"Over the {counted_words(steps['learner'].nunique(), rule)}.",
        "",
        "| step | mean | max | learners with full marks |",
        "|---|---|---|---|",
    ]
    for step, group in steps.groupby("step"):
        full = int((group["score"] == group["max_score"]).sum())
        lines.append(f"| {step} | {group['score'].mean():.2f} | {int(group['max_score'].max())} | {full} |")
    return lines


def _hardest(records: list[LearnerRecord], rule: str) -> list[str]:
    stats = check_stats(records)
    if stats.empty:
        return []
    hardest = stats.sort_values(["pass_rate", "check"], kind="mergesort").head(HARDEST_SHOWN)
    lines = [
        "",
        "## Hardest checks",
        "",
        f"Over the {counted_words(len(records), rule)}.",
        "",
        "| check | title | passed | pass rate |",
        "|---|---|---|---|",
    ]
    for row in hardest.itertuples():
        lines.append(
            f"| {md_code_cell(row.check)} | {md_cell(row.title)} | {row.passed}/{row.graded} | {row.pass_rate:.0%} |"
        )
    return lines


def _starter(starter: list[str]) -> list[str]:
    if not starter:
        return []
    who = "learner" if len(starter) == 1 else "learners"
    return [
        "",
        "## Submitted the starter unchanged",
        "",
        f"{len(starter)} {who} handed in the starter as it was given (comments and layout aside); "
        "they are left out of every statistic (their grades are in the gradebook):",
        "",
        *[f"- {md_text(learner)}" for learner in starter],
    ]


def _wrong_answers(records: list[LearnerRecord], starter: list[str]) -> list[str]:
    wrong = wrong_answers(records, starter)  # the dashboard's and the class page's table too
    lines = ["", "## Most common wrong answers", ""]
    if wrong.empty:
        lines.append("No wrong answers among the graded submissions.")
    for row in wrong.itertuples():
        who = "learner" if row.count == 1 else "learners"
        lines.append(
            f"- {row.count} {who} returned {md_code(short(row.got))} where {md_code(short(row.expected))} "
            f"was expected ({md_code(row.check)}): {md_text(row.learners)}"
        )
    return lines


def _not_started(records: list[LearnerRecord]) -> list[str]:
    """Per step, the learners whose answers are still the starter's ``NotImplementedError``."""
    steps: dict[int, set[str]] = {}
    for r in records:
        for c in r.report.get("checks", []) if not r.error else []:
            step = None if c["passed"] else not_started_step(c["got"] or c["message"])
            if step is not None:
                steps.setdefault(step, set()).add(r.learner)
    if not steps:
        return []
    lines = [
        "",
        "## Steps not started",
        "",
        "Answers that are the starter's `NotImplementedError` "
        "(the function of that step is not written yet), left out of the wrong answers:",
        "",
    ]
    return lines + [
        f"- step {step}: {len(who)} {'learner' if len(who) == 1 else 'learners'}: {md_text(', '.join(sorted(who)))}"
        for step, who in sorted(steps.items())
    ]


def _errors(records: list[LearnerRecord]) -> list[str]:
    errors = [(r.learner, r.error) for r in records if r.error]
    if not errors:
        return []
    # An import error's first line is learner text: a code span, never raw HTML or a link.
    return [
        "",
        "## Could not be graded",
        "",
        *[
            f"- {md_text(learner)}: {md_code(short(error.split(chr(10), 1)[0], ERROR_LIMIT))}"
            for learner, error in errors
        ],
    ]


def _course(records: list[LearnerRecord]) -> list[str]:
    credited = [r.credit for r in records if r.credit and r.graded]
    if not credited:
        return []
    periods = Counter(c["period"] for c in credited)
    return [
        "",
        "## Course policy",
        "",
        f"- mean credited score: {sum(c['credited'] for c in credited) / len(credited):.2f}"
        f" / {max(c['max_score'] for c in credited):g}",
        *[f"- {md_text(period)}: {count}" for period, count in sorted(periods.items())],
        *_assignments(records),
    ]


def _assignments(records: list[LearnerRecord]) -> list[str]:
    """A course of several assignments: each one's mean credited score over the learners graded for it."""
    by_id: dict[str, list] = {}
    names: dict[str, str] = {}
    for r in records:
        for key, entry in (r.assignments or {}).items() if r.graded else ():
            names.setdefault(key, entry.get("name") or key)
            by_id.setdefault(key, []).append(entry)
    lines = []
    for key, entries in by_id.items():
        got = [e["credit"] for e in entries if e.get("credit")]
        mean = f"{sum(c['credited'] for c in got) / len(got):.2f}" if got else "-"
        most = max((c["max_score"] for c in got), default=entries[0]["points"])  # as the course line: the reports'
        lines.append(f"- {md_text(names[key])} ({md_code(key)}): mean credited score {mean} / {most:g}")
    return ["", "### Assignments", "", *lines] if lines else []


def _skipped(archive_skipped) -> list[str]:
    if not archive_skipped:
        return []
    return [
        "",
        "## Skipped from the zip",
        "",
        *[f"- {md_code(member)}: {md_text(reason)}" for member, reason in archive_skipped],
    ]


# An ungradable file's first line, whole (grader.limits says why).
ERROR_LIMIT = ERROR_LINE_CHARS


def short(text: str, limit: int = 120) -> str:
    """One line of at most ``limit`` characters, for a summary line (grades.json has it all).

    >>> short("a\\nb"), len(short("x" * 500))
    ('a b', 121)
    """
    text = str(text).replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "\u2026"
