"""Renderers against golden files. Refresh them with ``UPDATE_GOLDEN=1 pytest tests/test_render.py``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from grader.escape import md_text
from grader.render import render_json, render_markdown, render_text
from grader.report import CheckResult, Report

GOLDEN = Path(__file__).resolve().parent / "golden"
REPLAY = "agtool-grade check 'my work/tools.py' --only {} --seed 4242"


def sample_report() -> Report:
    """A fixed report with passes, failures, a multi-line message, learner output and non-ASCII text."""
    return Report(
        seed=4242,
        path="my work/tools.py",
        checks=[
            CheckResult(
                id="step1/stock_rows", step=1, passed=True, points=2, max_points=2, title="STOCK holds the 19 rows"
            ),
            CheckResult(
                id="step1/calls_counter",
                step=1,
                passed=False,
                points=0,
                max_points=1,
                title="Tools count their runs | first line",
                call="stock_lookup('SKU-1001', 'north', 2)",
                expected="CALLS['stock_lookup'] == 1",
                got="0",
                message="The tool ran but its counter did not move (<b>0</b> & more).",
                hint="Add 1 to CALLS[<own name>] on the tool's first line.",
                reproduce=REPLAY.format("step1/calls_counter"),
            ),
            CheckResult(
                id="step2/type_bool_limit",
                step=2,
                passed=False,
                points=0,
                max_points=3,
                title="bool is not an int",
                call="validate_args('stock_lookup', {'limit': True, ...})",
                expected="'type:limit'",
                got="''",
                message='Traceback (most recent call last):\n  File "tools.py", line 3\nValueError: `x`',
                hint="isinstance(True, int) is True; check bool first.",
                reproduce=REPLAY.format("step2/type_bool_limit"),
            ),
            CheckResult(id="step2/unknown_tool", step=2, passed=True, points=1, max_points=1, title="Unknown tool"),
            # Part two: two-digit steps come after step 9, not between steps 1 and 2.
            CheckResult(
                id="step10/one_honest_fix",
                step=10,
                passed=False,
                points=0,
                max_points=2,
                title="A suggestion exactly when one honest fix exists",
                call="explain('stock_lookup', {'sku': 'SKU-1001', 'region': 'wast', 'limit': 2})",
                expected="suggestion None",
                got="{'region': 'east'}",
                message="'wast' is one edit from both east and west: a suggestion would be a coin flip.",
                hint="Suggest only when exactly one allowed value is one edit away.",
                reproduce=REPLAY.format("step10/one_honest_fix"),
            ),
            CheckResult(
                id="step11/ambiguous",
                step=11,
                passed=True,
                points=2,
                max_points=2,
                title='"bolt" matching two products asks back',
            ),
        ],
        output={"1": "결과: 100/100 PASSED\n```\nnot a fence\n", "2": ""},
    )


def import_error_report() -> Report:
    error = "Your module could not be imported: SyntaxError at tools.py line 3: invalid syntax\n    3 | def f(:"
    return Report(
        seed=7,
        path="tools.py",
        error=error,
        checks=[
            CheckResult(
                id=f"step{n}/x",
                step=n,
                passed=False,
                points=0,
                max_points=1,
                title="x",
                message=error,
                hint="h",
                reproduce=f"agtool-grade check tools.py --only step{n}/x --seed 7",
            )
            for n in (1, 2)
        ],
    )


CASES = {
    "report.md": lambda: render_markdown(sample_report()),
    "report.json": lambda: render_json(sample_report()),
    "report.txt": lambda: render_text(sample_report()),
    "import_error.md": lambda: render_markdown(import_error_report()),
    "import_error.txt": lambda: render_text(import_error_report()),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendering_matches_golden_file(name):
    rendered = CASES[name]()
    golden = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(rendered, encoding="utf-8")
    assert golden.exists(), f"missing {golden}; create it with UPDATE_GOLDEN=1 pytest tests/test_render.py"
    assert rendered == golden.read_text(encoding="utf-8")


def test_json_round_trips_to_the_same_report():
    report = sample_report()
    again = Report.from_dict(json.loads(render_json(report)))
    assert again.to_dict() == report.to_dict()


def test_every_failure_detail_appears_in_text_and_markdown():
    report = sample_report()
    for rendered, shown in ((render_text(report), str), (render_markdown(report), md_text)):
        for check in report.failed:
            for value in (check.call, check.expected, check.got, check.reproduce):
                assert value in rendered  # code spans show values verbatim
            assert shown(check.hint) in rendered
        assert "4242" in rendered


def test_markdown_never_passes_learner_text_through_as_html():
    rendered = render_markdown(sample_report())
    assert "<b>" not in rendered and "&lt;b&gt;0&lt;/b&gt; &amp; more" in rendered


def test_import_error_is_printed_once_not_per_check():
    for rendered in (render_text(import_error_report()), render_markdown(import_error_report())):
        assert rendered.count("could not be imported") == 1
    # The terminal lists one row and one replay line, as the Check panel does, not one per check.
    text = render_text(import_error_report())
    assert text.count("FAIL") == 1 and text.count("reproduce:") == 1 and "--only" not in text
    assert "All 2 checks of steps 1-2 need your module to import" in text


def crash_report() -> Report:
    """Step 10's one crash (``int('²')`` inside explain) seen by five checks, and a different failure."""
    got = "raised ValueError: invalid literal for int() with base 10: '²' (line 596, in _int_fix)"
    call = "explain('stock_lookup', {'sku': 'SKU-1001', 'region': 'south', 'limit': '²'})"
    checks = [
        CheckResult(
            f"step10/{name}",
            10,
            False,
            0,
            2,
            name,
            call=call,
            expected="a dict",
            got=got,
            hint=f"hint about {name}",
            reproduce=f"agtool-grade check t.py --only step10/{name} --seed 1",
        )
        for name in ("reason", "message", "suggest_allowed", "suggest_extra", "no_invented_fix")
    ]
    checks.insert(
        2,
        CheckResult(
            "step10/suggest_int",
            10,
            False,
            0,
            2,
            "suggest_int",
            call="explain(3)",
            expected="None",
            got="3",
            hint="int hint",
            reproduce="agtool-grade check t.py --only step10/suggest_int --seed 1",
        ),
    )
    return Report(seed=1, path="t.py", checks=checks)


def test_one_crash_is_one_row_with_its_line_and_the_others_follow_from_it():
    report = crash_report()
    for rendered in (render_text(report), render_markdown(report)):
        assert rendered.count("line 596, in _int_fix") == 1  # the crash and its line, once
        assert rendered.count("Not judged: the same crash as step10/reason") == 4
        assert "hint about message" not in rendered and "hint about reason" in rendered
        assert "int hint" in rendered  # a different failure keeps its own details
        assert rendered.count("--only step10/") == 2
    assert report.score == 0 and report.max_score == 12  # the points are the report's, unchanged


def test_text_lines_start_with_a_clear_mark():
    check_lines = [line.strip() for line in render_text(sample_report()).splitlines() if "  step" in line]
    assert [line.split()[0] for line in check_lines] == ["PASS", "FAIL", "FAIL", "PASS", "FAIL", "PASS"]
