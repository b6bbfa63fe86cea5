"""The mutation tool of tests/mutation: its mutants, its step map, its equivalent list.

Fast: the whole set is generated (about a second), but only a few mutants are
graded here. ``make mutation`` grades them all.
"""

from __future__ import annotations

import ast
import doctest
import json
from pathlib import Path

import mutation.classify
import mutation.equivalent
import mutation.gate
import mutation.mutator
import mutation.operators
import mutation.outputs
import mutation.run
import mutation.stability
import mutation.steps
import pytest
from mutation import generate
from mutation.__main__ import main as mutation_main
from mutation.equivalent import CHOICE_NAMES, CODE_EQUIVALENT, EQUIVALENT, LEARNER_CHOICE
from mutation.gate import CLEAN, compare, load_debt, updated_debt, write_debt
from mutation.mutator import SOLUTION, baseline_source
from mutation.run import SEED_PAIR
from mutation.runner import grade_all, grade_source
from mutation.steps import ALL_STEPS, STEPS, steps_of

SOURCE = SOLUTION.read_text(encoding="utf-8")
# The kinds of change the mutator makes; each must make mutants of the solution.
NAMED_OPERATORS = {
    "cmp_boundary",
    "cmp_negate",
    "int_up",
    "str_empty",
    "boolop_swap",
    "not_drop",
    "stmt_pass",
    "return_none",
    "return_other",
    "except_narrow",
    "except_widen",
    "args_swap",
    "copy_drop",
    "kwarg_bool",
    "item_drop",
    "index_flip",
}
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
    names |= {
        t.id
        for n in tree.body
        if isinstance(n, (ast.Assign, ast.AnnAssign))
        for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
        if isinstance(t, ast.Name)
    }
    assert names == set(STEPS)
    assert {m.function for m in mutants} <= set(STEPS)
    assert all(steps and steps <= ALL_STEPS for steps in STEPS.values())


@pytest.mark.parametrize(
    "module",
    [
        mutation.classify,
        mutation.equivalent,
        mutation.gate,
        mutation.mutator,
        mutation.operators,
        mutation.run,
        mutation.outputs,
        mutation.stability,
        mutation.steps,
    ],
    ids=lambda m: m.__name__,
)
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


GATE_RUN = Path(__file__).resolve().parents[1] / "build" / "mutation" / "mutation.json"  # what `make mutation` writes


def _graded_equivalents(by_id: dict) -> dict[str, dict]:
    """Each listed mutant's grading: read from the gate's run of this very tree, else graded here on the seed pair.

    CI runs `make mutation` (every mutant on one seed of the pair; `make
    mutation` alone grades both) just before the suite; its rows are the same
    gradings, so they are read, not repeated: whether a verdict holds on every
    seed is the stability sweep's question, as it is for the gate. Only a run
    of a clean checkout at this commit, on seeds of the pair, counts
    (``tree_state`` without changed files): any other gets the mutants graded
    again here.
    """
    state = mutation.outputs.tree_state()
    if GATE_RUN.is_file() and state != "unknown" and "changed" not in state:
        run = json.loads(GATE_RUN.read_text(encoding="utf-8"))
        rows = {row["id"]: row for row in run["mutants"]}
        seeds = tuple(run["summary"].get("seeds") or ())
        if run["summary"].get("tree") == state and seeds and set(seeds) <= set(SEED_PAIR):
            if set(EQUIVALENT) <= set(rows):
                return {i: rows[i] for i in sorted(EQUIVALENT)}
    return grade_all([by_id[i] for i in sorted(EQUIVALENT)], SEED_PAIR, jobs=2)


def test_the_equivalent_list_is_small_and_each_listed_mutant_exists_and_gets_full_marks(mutants, by_id):
    assert len(CODE_EQUIVALENT) <= len(mutants) // 25, "keep the list of equivalent code small"
    assert {key.split(":")[0] for key in LEARNER_CHOICE} <= CHOICE_NAMES, "only data the spec leaves to the learner"
    assert not set(CODE_EQUIVALENT) & set(LEARNER_CHOICE)
    assert not set(EQUIVALENT) - set(by_id), "listed ids the mutator no longer makes"
    graded = _graded_equivalents(by_id)
    failing = {
        i: [s["failed_checks"] for s in g["seeds"]]
        for i, g in graded.items()
        if g["error"] or any(s["failed_checks"] for s in g["seeds"])
    }
    assert not failing, f"not equivalent: {failing}"


# ------------------------------------------------------------------ the gate and its debt list
def _rows(classes: dict[str, str]) -> list[dict]:
    return [{"id": mutant, "class": kind} for mutant, kind in classes.items()]


def test_the_gate_fails_on_a_new_offender_a_cleared_or_changed_listing_and_a_stale_one():
    run = _rows(
        {
            "a:1:x:0": "own",
            "b:1:x:0": "survived",
            "c:1:x:0": "collateral",
            "d:1:x:0": "seed_dependent",
            "e:1:x:0": "equivalent",
        }
    )
    debt = {
        "a:1:x:0": "collateral",
        "c:1:x:0": "collateral",
        "d:1:x:0": "collateral",
        "e:1:x:0": "survived",
        "gone:1:x:0": "survived",
    }
    verdict = compare(run, debt, generated={row["id"] for row in run})
    assert verdict.new == {"b:1:x:0": "survived"}
    assert verdict.cleared == {"a:1:x:0": "collateral", "e:1:x:0": "survived"}
    assert verdict.changed == {"d:1:x:0": "listed collateral, now seed_dependent"}
    assert verdict.stale == {"gone:1:x:0": "survived"}
    assert not verdict.passed and verdict.judged == 4
    # What the run measured, listed as measured, passes; a partial run judges no stale ids.
    assert compare(
        run,
        {"b:1:x:0": "survived", "c:1:x:0": "collateral", "d:1:x:0": "seed_dependent"},
        generated={row["id"] for row in run},
    ).passed
    assert compare(run[:1], {"gone:1:x:0": "survived"}).passed


def test_the_debt_list_is_rewritten_from_a_run_and_read_back(tmp_path):
    path = tmp_path / "debt.json"
    debt = updated_debt(
        _rows({"a:1:x:0": "own", "b:1:x:0": "survived"}),
        {"a:1:x:0": "collateral", "z:1:x:0": "elsewhere", "gone:1:x:0": "error"},
        generated={"a:1:x:0", "b:1:x:0", "z:1:x:0"},
    )
    write_debt(debt, {"mutants": 2, "counts": {}, "score": 1.0}, path)
    assert load_debt(path) == {"b:1:x:0": "survived", "z:1:x:0": "elsewhere"}
    assert json.loads(path.read_text(encoding="utf-8"))["measured"]["mutants"] == 2


def test_make_mutation_exits_1_when_the_gate_fails_and_0_when_it_passes(tmp_path, monkeypatch, capsys):
    # A written run of two mutants, judged again (--from) against two debt lists.
    mutant_id = "cache_key:6:kwarg_drop:0"
    seeds = [
        {"seed": s, "failed_steps": [5, 8], "failed_checks": ["step5/x", "step8/y"], "failure": ""} for s in SEED_PAIR
    ]
    row = {
        "id": mutant_id,
        "function": "cache_key",
        "line": 1,
        "operator": "kwarg_drop",
        "before": "",
        "after": "",
        "seconds": 0.1,
        "error": "",
        "seeds": seeds,
    }
    run_json = tmp_path / "mutation.json"
    run_json.write_text(json.dumps({"summary": {"seeds": list(SEED_PAIR)}, "mutants": [row]}), encoding="utf-8")
    debt = tmp_path / "debt.json"
    monkeypatch.setattr(mutation.gate, "DEBT", debt)
    argv = ["--from", str(run_json), "--out", str(tmp_path / "out"), "--gate"]
    assert mutation_main(argv) == 1  # no debt list: the collateral mutant is a new offender
    assert f"new offender (collateral, not on the debt list): {mutant_id}" in capsys.readouterr().out
    assert mutation_main(argv[:-1]) == 0  # without --gate it measures only
    assert mutation_main(argv[:-1] + ["--write-debt"]) == 0
    assert load_debt(debt) == {mutant_id: "collateral"}
    assert mutation_main(argv) == 0
    row["seeds"] = [{**s, "failed_steps": [5], "failed_checks": ["step5/x"]} for s in seeds]
    run_json.write_text(json.dumps({"summary": {}, "mutants": [row]}), encoding="utf-8")
    assert mutation_main(argv) == 1  # now own step only: the listing must go
    assert "cleared (listed as collateral" in capsys.readouterr().out


def test_the_debt_list_names_only_mutants_the_mutator_makes_in_offending_classes(by_id):
    debt = load_debt()
    assert not set(debt) - set(by_id), "listed ids the mutator no longer makes: regenerate with --write-debt"
    assert not set(debt) & set(EQUIVALENT), "a mutant is listed as equivalent and as debt"
    assert {kind for kind in debt.values()} <= set(mutation.classify.CLASSES) - set(CLEAN)
