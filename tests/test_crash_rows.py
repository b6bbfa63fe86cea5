"""One crash, one row (issue 36.4): a call that raises inside the learner's code is shown once, with its line.

Each case of ``tests/defects/crashes.py`` is graded on its step with two
seeds; the report must show the crash on exactly one row, naming the line of
the learner's file that raised, and every other row of the step that met the
same crash only says it follows from that row, in every view (terminal,
Markdown, Check panel, service page). Collapsing rows changes how failures
are shown, never the points.
"""

from __future__ import annotations

import re

import pytest
from defects.crashes import CRASHES, materialise_crash

from agtool_lab.view import check_panel_text, render_html
from grader import grade
from grader.render import crash_notes, render_markdown, render_text
from grader.service.pages import feedback_html

SEEDS = (1, 2)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("crashes")
    out = {}
    for name, (step, _, _) in CRASHES.items():
        path, line = materialise_crash(name, folder)
        out[name] = [(grade(str(path), steps=[step], seed=seed), line) for seed in SEEDS]
    return out


@pytest.mark.parametrize("name", sorted(CRASHES))
def test_a_crash_is_one_row_naming_its_line(graded, name):
    for report, line in graded[name]:
        crashed = [c for c in report.checks if not c.passed and c.got.startswith("raised ")]
        assert crashed, f"{name}: no check met the crash"
        notes = crash_notes(report.checks)
        shown = [c for c in crashed if c.id not in notes]
        assert len(shown) == 1, [c.id for c in shown]
        assert re.search(rf"\(line {line}, in \w+\)$", shown[0].got), shown[0].got
        for view in (
            render_text(report),
            render_markdown(report),
            check_panel_text(report, report.checks[0].step),
            render_html(report, report.checks[0].step),
            feedback_html(report.to_dict()),
        ):
            assert view.count(f"line {line}, in") == 1, name
            assert view.count("Follows from the crash shown under") == len(crashed) - 1


def test_the_step_10_crash_was_five_rows_and_is_one(graded):
    for report, _ in graded["int_fix_isdigit"]:
        assert len(crash_notes(report.checks)) >= 4  # five rows showed the same call and error before


def test_collapsing_rows_changes_no_points(graded):
    for name, runs in graded.items():
        for report, _ in runs:
            assert report.score == sum(c.points for c in report.checks) < report.max_score
        assert len({runs[0][0].score, runs[1][0].score}) == 1, f"{name}: another grade on another seed"
