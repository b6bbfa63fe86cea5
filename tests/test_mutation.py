"""The mutation tool of tests/mutation: its mutants, its step map, its equivalent list (issue 26, item 1).

Fast: the whole set is generated (about a second), but only a few mutants are
graded here. ``make mutation`` grades them all.
"""
from __future__ import annotations

import ast
import doctest

import pytest

import mutation.classify
import mutation.equivalent
import mutation.mutator
import mutation.operators
import mutation.outputs
import mutation.run
import mutation.steps
from mutation import generate
from mutation.equivalent import EQUIVALENT
from mutation.mutator import SOLUTION, baseline_source
from mutation.run import SEED_PAIR
from mutation.runner import grade_all, grade_source
from mutation.steps import STEPS, steps_of

SOURCE = SOLUTION.read_text(encoding="utf-8")
# The kinds of change issue 26 names; each must make mutants of the solution.
NAMED_OPERATORS = {"cmp_boundary", "cmp_negate", "int_up", "str_empty", "boolop_swap", "not_drop", "stmt_pass",
                   "return_none", "return_other", "except_narrow", "except_widen", "args_swap", "copy_drop",
                   "kwarg_bool", "item_drop", "index_flip"}
# Two mutants of different functions, and the step each must fail.
HAND_PICKED = {"validate_args:22:cmp_boundary:0": 2, "cache_key:6:kwarg_drop:0": 5}


@pytest.fixture(scope="module")
def mutants():
    return generate(SOURCE)


@pytest.fixture(scope="module")
def by_id(mutants):
    return {m.id: m for m in mutants}


def test_the_mutator_makes_many_distinct_mutants_that_all_compile(mutants):
    assert len(mutants) > 800
    assert len({m.source for m in mutants}) == len(mutants)
    for mutant in mutants:
        compile(mutant.source, mutant.id, "exec")
    assert NAMED_OPERATORS <= {m.operator for m in mutants}


def test_mutant_ids_are_unique_and_stable(mutants):
    ids = [m.id for m in mutants]
    assert len(set(ids)) == len(ids)
    assert ids == [m.id for m in generate(SOURCE)]
    # An id names a line inside its function: an edit of another function leaves it as it is.
    edited = SOURCE.replace("def _failure(", "def _unused():\n    return 1\n\n\ndef _failure(", 1)
    moved = {m.id for m in generate(edited) if m.function == "validate_args"}
    assert moved == {i for i in ids if i.startswith("validate_args:")}


def test_the_step_map_declares_every_top_level_name_of_the_solution(mutants):
    tree = ast.parse(SOURCE)
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    names |= {t.id for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))
              for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
    assert names == set(STEPS)
    assert {m.function for m in mutants} <= set(STEPS)
    assert all(steps and steps <= set(range(1, 9)) for steps in STEPS.values())


@pytest.mark.parametrize("module", [mutation.classify, mutation.equivalent, mutation.mutator, mutation.operators, mutation.run,
                                    mutation.outputs, mutation.steps], ids=lambda m: m.__name__)
def test_the_mutation_modules_examples_hold(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0


def test_the_unmutated_solution_gets_full_marks_as_written_and_as_mutants_are_written():
    assert grade_source(SOURCE, "solutions/tools.py", SEED_PAIR[0])["failed_checks"] == []
    for seed in SEED_PAIR:
        assert grade_source(baseline_source(SOURCE), "baseline/tools.py", seed)["failed_checks"] == []


@pytest.mark.parametrize("mutant_id", sorted(HAND_PICKED))
def test_a_hand_picked_mutant_fails_its_own_step(by_id, mutant_id):
    mutant, step = by_id[mutant_id], HAND_PICKED[mutant_id]
    assert step in steps_of(mutant.function)
    for seed in SEED_PAIR:
        assert step in grade_source(mutant.source, f"{mutant.function}/tools.py", seed, steps=[step])["failed_steps"]


def test_the_equivalent_list_is_small_and_each_listed_mutant_exists_and_gets_full_marks(mutants, by_id):
    assert len(EQUIVALENT) <= len(mutants) // 25, "keep the equivalent list small"
    assert not set(EQUIVALENT) - set(by_id), "listed ids the mutator no longer makes"
    graded = grade_all([by_id[i] for i in sorted(EQUIVALENT)], SEED_PAIR, jobs=2)
    failing = {i: [s["failed_checks"] for s in g["seeds"]] for i, g in graded.items()
               if g["error"] or any(s["failed_checks"] for s in g["seeds"])}
    assert not failing, f"not equivalent: {failing}"
