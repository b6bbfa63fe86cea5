"""A learner's feedback (``feedback/<learner>.md``): what to fix first, then what passed, in the learner's words.

The feedback is built once as a :class:`Feedback` (plain values, learner
text not yet escaped) and written for two readers: Markdown here
(:func:`render_feedback`), plain text for an LMS comment box in
:mod:`grader.outputs.plain`. Both name the learner's own file (never the
instructor's path), replay commands the learner can run in the lab
(:data:`LAB_MODULE`, relative), the failed checks before the passing ones,
and one statement of the grade that counts.

Example::

    >>> report = {"seed": 1, "path": "/srv/class/ana/tools.py", "checks": []}
    >>> text = render_feedback({"learner": "ana", "report": report})
    >>> text.splitlines()[0], "/srv/class" in text
    ('# Feedback on tools.py', False)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePath

from grader.escape import md_code, md_fence, md_prose, shell_join
from grader.messages import LAB_MODULE, replay_for
from grader.outputs.record import LearnerRecord
from grader.outputs.starter import not_started_step
from grader.render import crash_notes, shown_details
from grader.report import Report

# The module as the learner's lab holds it: replay commands run from the folder
# that holds agtool/ (the home folder on the hub, the repository in a checkout).
RUN_FROM = "Run a replay command in a terminal from the folder that holds agtool/ (your home folder on the hub)."
KEYED_NOTE = (
    "Your grade comes from cases drawn from a seed that is not shown, so no answer can be fitted to "
    "them. The checks below ran on other cases of the same kinds; each replay command replays exactly "
    "what you see here."
)
CODE_LABELS = ("call", "expected", "got", "replay")  # shown as code; the others are sentences


@dataclass
class FailedCheck:
    """One failed check as the feedback shows it: where, what, and the labelled details (replay made runnable)."""

    step: int
    id: str
    title: str
    points: int
    max_points: int
    details: list[tuple[str, str]]


@dataclass
class Feedback:
    """What one learner's feedback says, before it is written for a reader (text unescaped).

    ``grade`` is the one statement of the grade that counts and ``why`` how
    it was chosen (course policy); ``checks`` counts the checks shown. The
    failed checks come first; ``steps`` folds the passing ones into one row
    a step (points, checks passed).
    """

    file_name: str
    seed: int
    grade: str
    why: str = ""
    keyed: bool = False
    checks: str = ""
    error: str = ""
    replay: str = ""
    failed: list[FailedCheck] = field(default_factory=list)
    steps: list[tuple[int, int, int, int, int]] = field(default_factory=list)  # step, score, max, passed, checks
    output: dict[int, str] = field(default_factory=dict)
    # step -> (failed checks, the starter's "step N: write NAME (labs/...)" they met): one line a step, not a row each
    not_started: dict[int, tuple[int, list[str]]] = field(default_factory=dict)
    starter: bool = False  # the file is the starter as given: one paragraph, no check by check


STARTER_TEXT = (
    "Your file is the starter as it was given: no step is written yet, so every check failed. "
    "Begin with labs/01_contract_table.ipynb; the Check cell at its end grades step 1."
)


def _typed(record: LearnerRecord | dict) -> LearnerRecord:
    return record if isinstance(record, LearnerRecord) else LearnerRecord.from_dict(record)


def learner_reports(record: LearnerRecord | dict) -> tuple[Report, Report]:
    """``(shown, counting)``: the report a learner is shown and the grade that counts, each parsed once.

    They are the same report unless the class has a seed key (a feedback run).

    >>> report = {"seed": 1, "path": "t.py", "checks": []}
    >>> shown, counting = learner_reports({"report": report})
    >>> shown is counting, learner_reports({"report": report, "feedback_report": {**report, "seed": 2}})[0].seed
    (True, 2)
    """
    record = _typed(record)
    return record.shown_report(), record.grade_report()


def _number(value) -> str:
    return f"{float(value):g}"


def which_attempt(credit: dict) -> str:
    """How the feedback names the attempt that counts: a batch grades one submission, the service numbers them.

    >>> which_attempt({"attempt": "batch"}), which_attempt({"attempt": 3})
    ('this submission', 'attempt 3')
    """
    return "this submission" if credit.get("attempt") in (None, "batch") else f"attempt {credit['attempt']}"


def grade_statement(record: LearnerRecord | dict, counting: Report) -> tuple[str, str]:
    """``(grade, why)``: the one sentence stating the grade that counts, and how the course policy chose it.

    With a course policy the grade is the credited score and the sentence
    says which attempt, its points and the late credit; without one it is
    the report's points.

    >>> credit = {"attempt": 3, "credited": 97.6, "max_score": 133.0, "raw_score": 122, "raw_max": 133,
    ...           "score": 122.0, "factor": 0.8, "period": "late", "why": "the last attempt of 3; late"}
    >>> grade_statement({"report": {}, "credit": credit}, Report(seed=1, path="t.py"))[0]
    'The grade that counts: 97.6/133, from attempt 3: 122/133 points, late (80% credit).'
    >>> grade_statement({"report": {}}, Report(seed=1, path="t.py"))
    ('The grade that counts: 0/0.', '')
    >>> grade_statement({"report": {}, "credit": {"attempt": 4, "credited": 7.0, "max_score": 10.0, "why": "seen",
    ...                                           "override": {"was": 3.0}}}, Report(seed=1, path="t.py"))[0]
    'The grade that counts: 7/10, set by your instructor for attempt 4.'
    """
    typed = _typed(record)
    got = typed.credit
    if not got:
        return f"The grade that counts: {counting.score}/{counting.max_score}.", ""
    if typed.assignments and not got.get("override"):  # several assignments: their sum, then each one
        return _assignments_statement(got, typed.assignments)
    if got.get("override"):  # an instructor set it: their reason is the why (the service's overrides)
        return (
            f"The grade that counts: {_number(got['credited'])}/{_number(got['max_score'])}, set by your "
            f"instructor for {which_attempt(got)}.",
            f"Why: {got.get('why', '')}.",
        )
    points = f"{_number(got.get('raw_score', counting.score))}/{_number(got.get('raw_max', counting.max_score))} points"
    if got.get("score") is not None and _number(got["score"]) != _number(got.get("raw_score", got["score"])):
        points += f" (weighted {_number(got['score'])}/{_number(got['max_score'])})"
    factor = float(got.get("factor", 1.0))
    period = f", {got.get('period', '')} ({factor:.0%} credit)" if factor != 1.0 else ""
    grade = (
        f"The grade that counts: {_number(got['credited'])}/{_number(got['max_score'])}, "
        f"from {which_attempt(got)}: {points}{period}."
    )
    return grade, f"Why this one: {got['why']}." if got.get("why") else ""


def _assignments_statement(total: dict, assignments: dict) -> tuple[str, str]:
    """``(grade, why)`` of a course of several assignments: the sum, then each assignment's credited grade.

    >>> grade, why = _assignments_statement({"credited": 4.5, "max_score": 6}, {"lab-a": {"name": "Lab A",
    ...     "points": 3, "credit": {"credited": 1.5, "max_score": 3, "factor": 0.5, "period": "late"}},
    ...     "lab-b": {"name": "Lab B", "points": 3, "credit": None}})
    >>> print(grade); print(why)
    The grade that counts: 4.5/6, the sum of your assignments' credited grades.
    Each assignment: Lab A (lab-a) 1.5/3, late (50% credit); Lab B (lab-b) not graded (of 3).
    """
    parts = []
    for key, entry in assignments.items():
        got = entry.get("credit")
        name = f"{entry.get('name') or key} ({key})"
        if not got:
            parts.append(f"{name} not graded (of {_number(entry.get('points') or 0)})")
            continue
        factor = float(got.get("factor", 1.0))
        period = f", {got.get('period', '')} ({factor:.0%} credit)" if factor != 1.0 else ""
        parts.append(f"{name} {_number(got['credited'])}/{_number(got['max_score'])}{period}")
    grade = f"The grade that counts: {_number(total['credited'])}/{_number(total['max_score'])}, the sum of your assignments' credited grades."
    return grade, "Each assignment: " + "; ".join(parts) + "."


def lab_replay(reproduce: str, module: str = LAB_MODULE) -> str:
    """A check's replay command with the learner's lab path in place of the path it was graded under
    (:func:`grader.messages.replay_for`, reader ``feedback``).

    >>> print(lab_replay("agtool-grade check '/srv/class/ana b/tools.py' --only step1/names --seed 7"))
    agtool-grade check agtool/tools.py --only step1/names --seed 7
    """
    return replay_for(reproduce, "feedback", module=module)


def _starter_body(check) -> str:
    """``"step 3: write call_tool (labs/03_call_boundary.ipynb)"`` when ``check`` met the starter's placeholder, else ``""``.

    >>> from grader.report import CheckResult
    >>> _starter_body(CheckResult("step4/a", 4, False, 0, 1, "a", got="raised NotImplementedError: step 3: write "
    ...                           "call_tool (labs/03_call_boundary.ipynb)"))
    'step 3: write call_tool (labs/03_call_boundary.ipynb)'
    """
    for text in (check.got, check.message):
        if not_started_step(text) is not None:
            found = _PLACEHOLDER.search(text)
            return found.group(1).strip() if found else text
    return ""


_PLACEHOLDER = re.compile(r"NotImplementedError: (step \d+: write [^(\n]*(?:\([^)\n]*\))?)")


def build_feedback(record: LearnerRecord | dict, shown: Report, counting: Report, *, starter: bool = False) -> Feedback:
    """The :class:`Feedback` of one learner from the record's reports (:func:`learner_reports`).

    >>> r = Report(seed=4, path="/srv/ana/tools.py")
    >>> fb = build_feedback({"report": {}}, r, r)
    >>> fb.file_name, fb.replay
    ('tools.py', 'agtool-grade check agtool/tools.py --seed 4')
    """
    record = _typed(record)
    grade, why = grade_statement(record, counting)
    passed = sum(c.passed for c in shown.checks)
    keyed = record.feedback_report is not None
    # Keyed, the points shown are not the grade: said as the points of these cases, never beside it unlabelled.
    points = f", {shown.score}/{shown.max_score} points on these cases" if keyed else ""
    fb = Feedback(
        file_name=PurePath(shown.path or record.source or LAB_MODULE).name,
        seed=shown.seed,
        grade=grade,
        why=why,
        keyed=keyed,
        checks=f"{passed}/{len(shown.checks)} passed{points}",
        error=shown.error,  # not the grader's isolation: the instructor's business (batch prints it)
        replay=shell_join(["agtool-grade", "check", LAB_MODULE, "--seed", str(shown.seed)]),
    )
    notes = crash_notes(shown.checks)  # one crash is shown once
    fb.starter = starter
    for step, total in shown.steps.items():
        in_step = [c for c in shown.checks if c.step == step]
        fb.steps.append((step, total["score"], total["max_score"], sum(c.passed for c in in_step), len(in_step)))
        if total["passed"]:
            continue
        if shown.output.get(str(step)):
            fb.output[step] = shown.output[str(step)]
        if shown.error or starter:  # every check failed alike: said once, above
            continue
        for c in in_step:
            if c.passed:
                continue
            unwritten = _starter_body(c)
            if unwritten:  # the starter's placeholder is not a mistake to read about check by check
                count, which = fb.not_started.get(step, (0, []))
                fb.not_started[step] = (count + 1, which + [unwritten] * (unwritten not in which))
                continue
            fb.failed.append(
                FailedCheck(
                    c.step,
                    c.id,
                    c.title,
                    c.points,
                    c.max_points,
                    [
                        (label, lab_replay(value) if label == "replay" else value)
                        for label, value in shown_details(c, notes)
                    ],
                )
            )
    return fb


# -------------------------------------------------------------------------- Markdown


def render_feedback(record: LearnerRecord | dict) -> str:
    """Markdown feedback for one learner (``feedback/<learner>.md``, the service's ``feedback.md``).

    With a seed key the learner sees the feedback run (its own seed, replayable)
    under the grade that counts, never that grade's cases.

    >>> report = {"seed": 1, "path": "t.py", "checks": [], "score": 0, "max_score": 0}
    >>> "**The grade that counts: 0/0.**" in render_feedback({"report": report})
    True
    """
    return feedback_text(record, *learner_reports(record))


def feedback_text(record: LearnerRecord | dict, shown: Report, counting: Report, *, starter: bool = False) -> str:
    """:func:`render_feedback` from the record's reports, already parsed by :func:`learner_reports`.

    >>> r = Report(seed=1, path="t.py")
    >>> feedback_text({"report": {}}, r, r) == render_feedback({"report": r.to_dict()})
    True
    """
    return feedback_markdown(build_feedback(record, shown, counting, starter=starter))


def feedback_markdown(fb: Feedback) -> str:
    """:class:`Feedback` as Markdown: learner text in code spans and fences, or as prose escaped where needed."""
    out = [f"# Feedback on {md_prose(fb.file_name)}", "", f"**{md_prose(fb.grade)}**"]
    out += [md_prose(fb.why)] if fb.why else []
    out += ["", md_prose(KEYED_NOTE)] if fb.keyed else []
    out += [
        "",
        f"- **File:** {md_code(fb.file_name)}",
        f"- **Checks{' below' if fb.keyed else ''}:** {fb.checks} (seed {fb.seed})",
    ]
    if fb.error:
        out += [
            "",
            "## Your module could not be graded",
            "",
            md_fence(fb.error),
            "",
            f"No check could run. To see it again: {md_code(fb.replay)}",
        ]
    if fb.starter:
        out += ["", "## Not started", "", md_prose(STARTER_TEXT)]
    if fb.failed:
        out += [
            "",
            f"## What to fix ({_count(len(fb.failed), 'check')} failed)",
            "",
            "Start with the first: later checks often fail for the same reason. " + md_prose(RUN_FROM),
        ]
    for check in fb.failed:
        out += [
            "",
            f"### Step {check.step}: {md_prose(check.title)} ({check.points}/{check.max_points})",
            "",
            f"- **check:** {md_code(check.id)}",
        ] + _markdown_details(check.details)
    if fb.not_started:
        out += ["", "## Not written yet", ""]
        out += [
            f"- Step {step}: {_count(count, 'check')} met the starter's placeholder: "
            + "; ".join(md_code(w) for w in which)
            for step, (count, which) in sorted(fb.not_started.items())
        ]
    for step, text in fb.output.items():
        out += [
            "",
            f"<details><summary>Output of your code during step {step}</summary>",
            "",
            md_fence(text.rstrip("\n")),
            "",
            "</details>",
        ]
    return "\n".join(out + _markdown_steps(fb)) + "\n"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _markdown_details(details: list[tuple[str, str]]) -> list[str]:
    lines = []
    for label, value in details:
        if "\n" in value:
            lines += [f"- **{label}:**", "", md_fence(value, indent="  "), ""]
        elif label in CODE_LABELS:
            lines.append(f"- **{label}:** {md_code(value)}")
        else:
            lines.append(f"- **{label}:** {md_prose(value)}")
    return lines


def _markdown_steps(fb: Feedback) -> list[str]:
    if not fb.steps:
        return []
    lines = ["", "## Points per step", "", "| step | points | checks passed |", "|---|---|---|"]
    return lines + [f"| {step} | {score}/{top} | {passed}/{n} |" for step, score, top, passed, n in fb.steps]
