"""One crash, one row: a call that raises inside the learner's code is one failed row, with its line.

Each case of ``tests/defects/crashes.py`` is graded on its step with two
seeds; the report itself (``grader.grading.same_crash_once``) holds the crash
on exactly one row, naming the line of the learner's file that raised, and
every other row of the step that met the same crash is "not judged: the same
crash" (no call, hint or replay line), in every view (terminal, Markdown,
Check panel, service page). Points are unchanged.
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
        assert len(crashed) == 1, f"{name}: {[c.id for c in crashed]}"  # the report itself holds the crash once
        assert re.search(rf"\(line {line}, in \w+\)$", crashed[0].got), crashed[0].got
        assert crashed[0].hint and crashed[0].reproduce and crashed[0].call
        same = [c for c in report.checks if c.message.startswith("Not judged: the same crash as ")]
        assert all(f"as {crashed[0].id} " in c.message for c in same)
        # Not judged: no call, no hint about another topic, no replay line (its rule was never reached).
        assert all(not (c.passed or c.points or c.call or c.got or c.hint or c.reproduce) for c in same)
        assert crash_notes(report.checks) == {}  # nothing left for a view to fold
        for view in (
            render_text(report),
            render_markdown(report),
            check_panel_text(report, report.checks[0].step),
            render_html(report, report.checks[0].step),
            feedback_html(report.to_dict()),
        ):
            assert view.count(f"line {line}, in") == 1, name
            assert view.count("Not judged: the same crash as") == len(same)


def test_the_step_10_crash_was_seven_rows_and_is_one(graded):
    for report, _ in graded["int_fix_isdigit"]:
        same = [c for c in report.checks if c.message.startswith("Not judged: the same crash as ")]
        assert len(same) >= 4  # five to seven rows showed the same call, error and other topics' hints before
        assert {c.step for c in same} == {10}


def test_collapsing_rows_changes_no_points(graded):
    for name, runs in graded.items():
        for report, _ in runs:
            assert report.score == sum(c.points for c in report.checks) < report.max_score
        assert len({runs[0][0].score, runs[1][0].score}) == 1, f"{name}: another grade on another seed"


def test_a_check_that_never_ran_shows_no_replay_line_and_no_hint(write_module, temp_checks, engine_client):
    """After an endless loop stops the step, the checks after it never ran: replaying one alone would pass."""
    from engine_probes import ENGINE_PROBES
    from helpers import call_check

    from grader import grade as grade_module

    path = write_module("def ok():\n    return 1\ndef loop():\n    while True:\n        pass\n")
    ids = temp_checks(
        call_check(5, "a_before", "ok", expect=1),
        call_check(5, "b_loops", "loop"),
        call_check(5, "c_after", "ok", expect=1),
    )
    report = grade_module(str(path), only=ids, seed=1, timeout=1, engine=engine_client, probe_function=ENGINE_PROBES)
    before, loops, after = (next(c for c in report.checks if c.id == i) for i in ids)
    assert before.passed
    assert not loops.passed and "time limit" in loops.message  # the one that looped: replayed, it loops again
    assert loops.reproduce and loops.hint and loops.call
    assert not after.passed and after.points == 0 and after.message.startswith("Not judged: not run")
    assert (after.call, after.hint, after.reproduce) == ("", "", "")
    for view in (render_text(report), render_markdown(report), render_html(report, 5)):
        assert "step5/zz_engine_c_after --seed" not in view
        assert view.count("engine hint") == 1  # the loop's: replaying it loops again
    assert "--only step5/zz_engine_b_loops --seed" in render_text(report)
