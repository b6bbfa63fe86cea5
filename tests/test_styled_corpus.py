"""Correct modules in styles the grader had not seen keep full marks; one mistake in them costs one step.

The grader's first rule: a correct module in any style gets full marks on steps
1-8, and one defect costs exactly one step. Outside testers found correct
modules (written from LAB_SPEC by people who never saw the reference) that
lost points; ``tests/alt_styles`` now holds three or more of each class:

* ``registry_of_functions_*`` -- calls through a table of the module's own
  functions (``_ROUTES["call"](...)``, ``_SERVICES[...]``, a ``SimpleNamespace``);
* ``own_bookkeeping_report_*`` -- ``write_report`` counts with the door's own
  bookkeeping (a tally dict, a ledger object, closures), not ``CALLS``;
* ``own_state_keys_*`` -- ``State`` keys of the learner's own, set by ``pick``
  or ``fetch`` and read by the other nodes (``request``/``plan``, one ``call``
  dict, flat ``sku``/``region``/``limit``);
* ``bound_methods_*`` -- the module's names are bound methods (or classmethods)
  calling each other through ``self``/``cls``, ``fetch`` reaching ``call_tool``
  through a saved reference.

(a) each of these gets full marks on steps 1-8 on three seeds; (b) each
mistake of ``tests/defects/styled.py`` fails the check it names and leaves
every other step at full marks, on three seeds.
"""

from __future__ import annotations

import pytest
from defects.styled import ALSO_CHARGED, ALT_STYLES, STYLED_MISTAKES, materialise_styled
from helpers import PART_ONE_MARKS

from grader.checks.registry import CHECKS, checks_for
from grader.grading import grade
from grader.locate import Submission

checks_for()  # load the registry

CLASSES = ("registry_of_functions", "own_bookkeeping_report", "own_state_keys", "bound_methods")
NEW_STYLES = [f"{cls}_{letter}" for cls in CLASSES for letter in "abc"]
SEEDS = (3, 11, 2024)
PART_ONE = list(range(1, 9))


def _graded(source: str, name: str, seed: int):
    return grade(Submission(source=source.encode("utf-8"), name=f"{name}/agtool/tools.py"), seed=seed, steps=PART_ONE)


def _failed_summary(report) -> str:
    return (
        "\n".join(f"{c.id}: {c.message} | call {c.call} | expected {c.expected} | got {c.got}" for c in report.failed)
        or report.error
    )


# ---------------------------------------------------------------- the corpus is what it claims to be


def test_each_class_has_at_least_three_new_styles_on_disk():
    on_disk = {p.stem for p in ALT_STYLES.glob("*.py")}
    assert set(NEW_STYLES) <= on_disk, sorted(set(NEW_STYLES) - on_disk)
    for cls in CLASSES:
        assert len([s for s in on_disk if s.startswith(cls + "_")]) >= 3, cls


def test_each_class_has_at_least_three_styled_mistakes():
    for cls in CLASSES:
        built_on = [mid for mid, (stem, _, _) in STYLED_MISTAKES.items() if stem.startswith(cls + "_")]
        assert len(built_on) >= 3, (cls, built_on)


@pytest.mark.parametrize("mistake_id", sorted(STYLED_MISTAKES))
def test_a_styled_mistake_applies_to_its_base_and_names_a_real_check(mistake_id):
    stem, check_id, edits = STYLED_MISTAKES[mistake_id]
    assert stem in NEW_STYLES, stem
    assert check_id in CHECKS and CHECKS[check_id].step in PART_ONE, check_id
    assert edits, mistake_id
    base = (ALT_STYLES / f"{stem}.py").read_text(encoding="utf-8")
    text = materialise_styled(mistake_id)  # raises when an anchor is missing or repeated
    assert text != base
    compile(text, f"{mistake_id}.py", "exec")


def test_materialise_styled_refuses_an_anchor_that_does_not_occur_once(monkeypatch):
    stem = NEW_STYLES[0]
    monkeypatch.setitem(STYLED_MISTAKES, "probe", (stem, "step6/naive_ok", (("no such text anywhere", "x"),)))
    with pytest.raises(AssertionError, match="anchor occurs 0 times"):
        materialise_styled("probe")
    monkeypatch.setitem(STYLED_MISTAKES, "probe", (stem, "step6/naive_ok", (("\n", "x"),)))
    with pytest.raises(AssertionError, match="anchor occurs"):
        materialise_styled("probe")


# ---------------------------------------------------------------- (a) correct styles: full marks on steps 1-8


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("stem", NEW_STYLES)
def test_a_correct_module_in_a_new_style_gets_full_marks_on_steps_1_to_8(stem, seed):
    source = (ALT_STYLES / f"{stem}.py").read_text(encoding="utf-8")
    report = _graded(source, stem, seed)
    assert report.error == "", report.error
    assert {c.step for c in report.checks} == set(PART_ONE)
    assert report.max_score == PART_ONE_MARKS
    assert report.score == report.max_score, f"{stem} (seed {seed}) lost points:\n{_failed_summary(report)}"


# ---------------------------------------------------------------- (b) one styled mistake costs its own step only


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("mistake_id", sorted(STYLED_MISTAKES))
def test_a_styled_mistake_fails_its_check_and_no_other_step(mistake_id, seed):
    stem, check_id, _ = STYLED_MISTAKES[mistake_id]
    report = _graded(materialise_styled(mistake_id), mistake_id, seed)
    assert report.error == "", report.error
    verdicts = {c.id: c for c in report.checks}
    own_step = CHECKS[check_id].step
    assert not verdicts[check_id].passed, (
        f"{mistake_id} (on {stem}, seed {seed}) passed {check_id}; it failed:\n{_failed_summary(report)}"
    )
    elsewhere = [c for c in report.failed if c.step != own_step and c.step not in ALSO_CHARGED.get(mistake_id, ())]
    assert elsewhere == [], f"{mistake_id} (on {stem}, seed {seed}) lost points outside step {own_step}:\n" + "\n".join(
        f"{c.id}: {c.message} | got {c.got}" for c in elsewhere
    )
