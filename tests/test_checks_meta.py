"""The checks vouch for something: each can fail, none fails a correct module.

* every registered check has a planted defect (``tests/defects/catalog.py``)
  and every defect's anchors still occur exactly once in the solution;
* (the reference solution's full marks on 20 seeds, and each planted defect failing its own check
  with every step outside its ``affects`` at full marks, are judged in ``tests/test_stability.py``'s
  one sweep of the corpora);
* the starter scores 0 without crashing the grader;
* correct modules written in other styles (``tests/alt_styles/``, steps 1-8 only) keep full
  marks on steps 1-8 and fail every check of steps 9-11 cleanly (a missing name, no crash);
  correct modules that keep state between runs (``STATEFUL_BUT_CORRECT``) get full marks;
* the rules table in ``docs/checks.md`` is generated from the registry and up to date.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from defects.catalog import DEFECTS, SOLUTION, materialise_more, materialise_text
from helpers import PART_ONE_MARKS

from grader.checks import RULES, rules_table_markdown
from grader.checks.registry import CHECKS, checks_for
from grader.checks.sentences import NOTEBOOK_SENTENCES, normalised
from grader.grading import grade
from grader.report import STEPS

ROOT = Path(__file__).resolve().parent.parent
STARTER = ROOT / "starter" / "tools.py"
ALT_STYLES = sorted((ROOT / "tests" / "alt_styles").glob("*.py"))

checks_for()  # load the registry


def _failed_summary(report) -> str:
    return (
        "\n".join(f"{c.id}: {c.message} | call {c.call} | expected {c.expected} | got {c.got}" for c in report.failed)
        or report.error
    )


def test_every_check_has_a_defect_and_every_defect_a_check():
    assert sorted(CHECKS) == sorted(DEFECTS)


@pytest.mark.parametrize("check_id", sorted(DEFECTS))
def test_defect_anchors_occur_once_in_the_solution(check_id):
    planted = materialise_text(check_id)  # raises when an anchor is missing or repeated
    assert planted != SOLUTION.read_text(encoding="utf-8")


def test_there_are_enough_checks_and_each_is_well_formed():
    assert len(CHECKS) >= 40
    for check in CHECKS.values():
        assert 1 <= check.points <= 3, check.id
        assert check.title and "\n" not in check.title, check.id
        assert check.hint, check.id
        assert check.rules and set(check.rules) <= set(RULES), check.id
    assert {c.step for c in CHECKS.values()} == set(STEPS)


# Rules of LAB_SPEC that no check can observe yet, each with what it waits for. docs/checks.md
# shows them as "not covered"; a rule leaves this list as soon as a check covers it.
WAITING_FOR_PROBES = {}


def test_every_lab_spec_rule_is_covered_by_a_check():
    covered = {rule for check in CHECKS.values() for rule in check.rules}
    assert sorted(set(RULES) - covered) == sorted(WAITING_FOR_PROBES)
    assert set(WAITING_FOR_PROBES) <= set(RULES)


def _notebook_texts() -> dict:
    from helpers import notebook_builder

    generator = notebook_builder()
    texts = {
        page["file"]: normalised("\n".join(cell.source for cell in generator.build(step).cells))
        for step, page in enumerate(generator.NOTEBOOKS, start=1)
    }
    return texts, generator._fill


def test_every_quoted_notebook_sentence_is_in_its_notebook_and_states_a_rule():
    texts, fill = _notebook_texts()
    for notebook, sentence, rule in NOTEBOOK_SENTENCES:
        assert rule in RULES, (notebook, sentence, rule)
        assert normalised(fill(sentence)) in texts[notebook], f"{notebook} no longer says: {sentence}"


def test_the_sentence_test_can_fail():
    texts, fill = _notebook_texts()
    assert normalised(fill("Catch `BaseException` so that nothing escapes.")) not in texts["03_call_boundary.ipynb"]


def test_docs_checks_table_is_up_to_date():
    written = (ROOT / "docs" / "checks.md").read_text(encoding="utf-8")
    assert written == rules_table_markdown(), (
        'docs/checks.md is stale: python -c "import grader.checks as c; '
        "print(c.rules_table_markdown(), end='')\" > docs/checks.md"
    )


# The solution on 20 seeds, each planted defect and each plausible mistake are graded once, in
# tests/test_stability.py's one sweep: full marks on every seed, each defect fails its own check
# (test_a_correct_module_keeps_full_marks_and_a_mistake_fails_its_check_on_every_seed) and costs no step
# outside its own and its affects (test_a_defect_or_a_mistake_costs_only_its_own_steps_on_every_seed),
# on two seeds each (of the first ten, picked by name) instead of one.


@pytest.mark.parametrize("seed", [1, 2])
def test_a_report_in_the_working_folder_costs_only_the_default_folder_check(seed, tmp_path):
    report = grade(materialise_more("report_in_working_folder", tmp_path), seed=seed)
    assert [c.id for c in report.failed] == ["step8/default_folder"], _failed_summary(report)


def test_starter_scores_zero_without_crashing():
    report = grade(STARTER, seed=5)
    assert report.error == ""
    assert len(report.checks) == len(CHECKS)
    passed = [c.id for c in report.checks if c.passed]
    assert passed == [] and report.score == 0


PART_ONE = range(1, 9)  # LAB_SPEC part one; part two (steps 9-11) adds names a part-one module lacks
_MISSING_WORDS = ("has no name", "missing", "not defined", "does not define")


def _fails_cleanly_for_a_missing_name(check) -> bool:
    """A part-two check a part-one module fails: no points, and a text that names what is missing."""
    said = f"{check.message} {check.got} {check.expected}".lower()
    return not check.passed and check.points == 0 and any(word in said for word in _MISSING_WORDS)


@pytest.mark.parametrize("path", ALT_STYLES, ids=[p.stem for p in ALT_STYLES])
@pytest.mark.parametrize("seed", [3, 2024])
def test_correct_part_one_modules_in_other_styles_keep_steps_1_to_8(path, seed):
    report = grade(path, seed=seed)
    assert report.error == "", report.error
    assert len(report.checks) == len(CHECKS)
    part_one = [c for c in report.checks if c.step in PART_ONE]
    assert sum(c.points for c in part_one) == sum(c.max_points for c in part_one) == PART_ONE_MARKS, _failed_summary(
        report
    )
    part_two = [c for c in report.checks if c.step not in PART_ONE]
    unclean = [f"{c.id}: {c.message} | got {c.got}" for c in part_two if not _fails_cleanly_for_a_missing_name(c)]
    assert unclean == [], "\n".join(unclean)


def test_the_clean_missing_test_can_fail():
    from grader.report import CheckResult

    crashed = CheckResult(
        id="step9/x", step=9, passed=False, points=0, max_points=2, title="t", message="coerce raised ZeroDivisionError"
    )
    assert not _fails_cleanly_for_a_missing_name(crashed)
    assert _fails_cleanly_for_a_missing_name(
        CheckResult(
            id="step9/x", step=9, passed=False, points=0, max_points=2, title="t", got="the module has no name 'coerce'"
        )
    )


# Correct modules that keep state between runs, as the spec allows: graphs a step's runs
# share and logs that change no result. Graph runs are ``reset`` probes on one module per
# step (CACHE cleared, spies undone), so what one run leaves is there for the next.
_HANDLE_TOOL_RUNS = '    result["tool_runs"] = sum(CALLS.values()) - before\n'
STATEFUL_BUT_CORRECT = {
    "graphs_compiled_once": [
        (
            "    final = build_graph().invoke(_initial_state(order))",
            "    final = _compiled(build_graph).invoke(_initial_state(order))",
        ),
        (
            "    final = build_naive().invoke(_initial_state(order))",
            "    final = _compiled(build_naive).invoke(_initial_state(order))",
        ),
        (
            "def can_repair(reason: str) -> bool:",
            "_COMPILED = {}\n\n\ndef _compiled(builder):\n    if builder.__name__ not in _COMPILED:\n"
            "        _COMPILED[builder.__name__] = builder()\n    return _COMPILED[builder.__name__]\n\n\n"
            "def can_repair(reason: str) -> bool:",
        ),
    ],
    "runs_logged": [
        (_HANDLE_TOOL_RUNS, _HANDLE_TOOL_RUNS + "    HISTORY.append(dict(result))\n"),
        ("def can_repair(reason: str) -> bool:", "HISTORY = []\n\n\ndef can_repair(reason: str) -> bool:"),
    ],
    "can_repair_memoized": [
        (
            "def can_repair(reason: str) -> bool:",
            "@functools.lru_cache(maxsize=None)\ndef can_repair(reason: str) -> bool:",
        ),
        ("import json\n", "import functools\nimport json\n"),
    ],
}


@pytest.mark.parametrize("name", sorted(STATEFUL_BUT_CORRECT))
@pytest.mark.parametrize("seed", [5, 77])
def test_correct_modules_that_keep_state_between_runs_get_full_marks(name, seed, tmp_path):
    text = SOLUTION.read_text(encoding="utf-8")
    for anchor, replacement in STATEFUL_BUT_CORRECT[name]:
        assert text.count(anchor) == 1, anchor
        text = text.replace(anchor, replacement)
    (tmp_path / "agtool").mkdir()
    path = tmp_path / "agtool" / "tools.py"
    path.write_text(text, encoding="utf-8")
    report = grade(path, seed=seed)
    assert report.score == report.max_score, _failed_summary(report)


def test_there_are_at_least_three_alternative_styles():
    assert len(ALT_STYLES) >= 3
