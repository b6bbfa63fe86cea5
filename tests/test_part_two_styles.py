"""Correct steps 9-11 written in other styles get full marks on all eleven steps.

Each fragment ``tests/alt_styles/part_two/step{9,10,11}_{a,b}.py`` is module text
that, appended to the reference solution's steps 1-8, gives a correct module
(written by the step's author, differently from the solution and from each
other). Composed a with a, b with b and mixed, every module must get full marks
on steps 1-11: a check that fails one of them rejects a correct learner.

The part-one text is the solution cut at its part-two banner, so these modules
share nothing with the solution's own steps 9-11.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from defects.catalog import SOLUTION
from helpers import PART_ONE_MARKS

from grader.checks.registry import CHECKS, checks_for
from grader.grading import grade
from grader.report import STEPS

ROOT = Path(__file__).resolve().parent.parent
FRAGMENTS = ROOT / "tests" / "alt_styles" / "part_two"
PART_TWO = (9, 10, 11)
# The solution's banner that opens part two: everything above it is steps 1-8.
PART_TWO_BANNER = "# ===========================================================================\n# Part two:"
FUTURE = "from __future__ import annotations\n"

checks_for()  # load the registry

# Which fragment of each step (9, 10, 11) a composed module takes: "aba" is 9a, 10b, 11a.
MIXED = ["bbb", "aba", "bab", "abb", "baa"]
TWENTY_SEEDS = [
    0,
    1,
    2,
    7,
    42,
    99,
    123,
    256,
    1000,
    4242,
    31337,
    65535,
    99999,
    123456,
    200000,
    314159,
    500000,
    654321,
    777777,
    999999,
]


def part_one_text() -> str:
    """The solution's steps 1-8: its text up to the part-two banner (which must occur once)."""
    text = SOLUTION.read_text(encoding="utf-8")
    assert text.count(PART_TWO_BANNER) == 1, "the solution's part-two banner moved or repeats"
    return text[: text.index(PART_TWO_BANNER)]


def fragment(step: int, style: str) -> str:
    path = FRAGMENTS / f"step{step}_{style}.py"
    assert path.is_file(), f"{path.relative_to(ROOT)} is missing (the step {step} author writes it)"
    # A fragment may start with its own __future__ import to be readable alone; mid-module it is an error.
    return path.read_text(encoding="utf-8").replace(FUTURE, "")


def composed_text(styles: str) -> str:
    """The module's text: steps 1-8 of the solution, then the step 9, 10 and 11 fragments named by ``styles``.

    The 20-seed stability corpus (tests/mutation/stability.py) grades these texts too.
    """
    text = part_one_text()
    for step, style in zip(PART_TWO, styles):
        text += f"\n\n# ---- step {step}, style {style} ----\n" + fragment(step, style)
    return text


def compose(styles: str, folder: Path) -> Path:
    """``composed_text(styles)`` written as ``folder/agtool/tools.py``."""
    (folder / "agtool").mkdir(parents=True)
    path = folder / "agtool" / "tools.py"
    path.write_text(composed_text(styles), encoding="utf-8")
    return path


def _failed_summary(report) -> str:
    return (
        "\n".join(f"{c.id}: {c.message} | call {c.call} | expected {c.expected} | got {c.got}" for c in report.failed)
        or report.error
    )


def _assert_full_marks_on_all_steps(report) -> None:
    assert report.error == "", report.error
    assert len(report.checks) == len(CHECKS)
    assert set(report.steps) == set(STEPS), sorted(report.steps)
    assert report.score == report.max_score, _failed_summary(report)


def test_part_one_is_the_solution_above_the_banner():
    part_one, whole = part_one_text(), SOLUTION.read_text(encoding="utf-8")
    assert whole.startswith(part_one) and "def write_report(" in part_one
    assert not any(f"def {name}(" in part_one for name in ("coerce", "explain", "resolve_sku"))


# Every composition of the two styles of steps 9-11 (``aaa`` and MIXED) is graded on 20 seeds in
# tests/test_stability.py's one sweep (tests.mutation.stability.PART_TWO_STYLES), where
# a correct module must keep every point on every seed.


@pytest.mark.parametrize("step", PART_TWO)
def test_the_two_styles_of_a_step_are_written_differently(step):
    a, b = fragment(step, "a"), fragment(step, "b")
    solution_part_two = SOLUTION.read_text(encoding="utf-8")[len(part_one_text()) :]
    assert a.strip() != b.strip()
    assert a.strip() not in solution_part_two and b.strip() not in solution_part_two


def test_the_solution_s_own_part_two_cut_into_fragments_composes_to_full_marks(tmp_path, monkeypatch):
    # The composition itself (the cut, the order, the __future__ line) loses nothing.
    whole = SOLUTION.read_text(encoding="utf-8")
    starts = [whole.index(f"# ---- Step {step}:") for step in PART_TWO] + [len(whole)]
    own = tmp_path / "fragments"
    own.mkdir()
    for step, start, end in zip(PART_TWO, starts, starts[1:]):
        (own / f"step{step}_s.py").write_text(FUTURE + whole[start:end], encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "FRAGMENTS", own)
    _assert_full_marks_on_all_steps(grade(compose("sss", tmp_path / "module"), seed=11))


def test_a_module_without_part_two_does_not_get_full_marks(tmp_path):
    # The composition test can fail: the same part one without the fragments loses every part-two point.
    (tmp_path / "agtool").mkdir()
    path = tmp_path / "agtool" / "tools.py"
    path.write_text(part_one_text(), encoding="utf-8")
    report = grade(path, seed=3)
    assert report.error == ""
    assert all(report.steps[step]["score"] == 0 for step in PART_TWO if step in report.steps)
    assert report.score < report.max_score
    # ... and keeps every point of steps 1-8 (LAB_SPEC: a module that stops at step 8 keeps 133/133).
    assert sum(report.steps[step]["score"] for step in range(1, 9)) == PART_ONE_MARKS, _failed_summary(report)


def test_the_starter_s_part_two_stubs_earn_nothing(tmp_path):
    # Before: handle_named's stub (it raises NotImplementedError) earned step11/named_order_unchanged, since a
    # call that raises leaves the order as it was. A learner who has not begun a step earns none of its points.
    starter = (ROOT / "starter" / "tools.py").read_text(encoding="utf-8")
    stubs = starter[starter.rindex("\n# ====", 0, starter.index("# Part two")) + 1 :]
    assert "raise NotImplementedError" in stubs and "def handle_named(" in stubs
    (tmp_path / "agtool").mkdir()
    path = tmp_path / "agtool" / "tools.py"
    path.write_text(part_one_text() + "\n\n" + stubs, encoding="utf-8")
    for seed in (3, 11):
        report = grade(path, seed=seed)
        earned = {step: report.steps[step]["score"] for step in PART_TWO}
        assert earned == dict.fromkeys(PART_TWO, 0), _failed_summary(report)
