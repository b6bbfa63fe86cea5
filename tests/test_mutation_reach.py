"""The mutation gate grades a mutant on the steps whose probes reach its change (tests/mutation/reach.py).

What makes that safe is proved here on a few mutants of different steps (each
graded both ways) and on the whole set by ``make reach-proof``; these tests
also show each part can fail: a tracer that sees nothing, a span that misses
its change, a reach that leaves out a step that loses points.
"""

from __future__ import annotations

import pytest
from mutation.mutator import SOLUTION, generate
from mutation.reach import ALL_STEPS, differences, import_lines, reached_steps, step_lines
from mutation.run import SEED_PAIR
from mutation.runner import grade_all

SOURCE = SOLUTION.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def mutants():
    return generate(SOURCE)


@pytest.fixture(scope="module")
def lines():
    return step_lines(SEED_PAIR)


def _body(name: str) -> set[int]:
    """The lines of the body of the solution's top-level function ``name`` (its def line left out)."""
    import ast

    node = next(n for n in ast.parse(SOURCE).body if isinstance(n, ast.FunctionDef) and n.name == name)
    return set(range(node.body[0].lineno, node.end_lineno + 1))


def test_every_step_runs_lines_of_its_own_functions_and_not_of_a_later_steps(lines):
    assert all(lines[step] for step in ALL_STEPS), {step: len(found) for step, found in lines.items()}
    own = {2: "validate_args", 4: "validate_result", 5: "cache_key", 8: "_measure", 9: "coerce", 11: "resolve_sku"}
    for step, name in own.items():
        assert lines[step] & _body(name), f"step {step} ran no line of {name}"
    assert not lines[2] & _body("resolve_sku") and not lines[2] & _body("_measure")


def test_a_change_that_runs_at_import_is_graded_on_every_step(mutants, lines):
    loaded = set(import_lines())
    stock = next(m for m in mutants if m.function == "STOCK")
    assert reached_steps(stock.span, lines, import_lines=loaded) == list(ALL_STEPS)
    assert reached_steps((0, 0), lines, import_lines=loaded) == list(ALL_STEPS)  # no span: every step
    resolve = next(m for m in mutants if m.function == "resolve_sku" and m.operator != "return_none")
    assert 11 in reached_steps(resolve.span, lines, import_lines=loaded)
    assert len(reached_steps(resolve.span, lines, import_lines=loaded)) < len(ALL_STEPS)


def test_every_span_holds_its_change(mutants):
    assert all(m.span[0] <= m.line <= m.span[1] for m in mutants), [
        (m.id, m.span) for m in mutants if not m.span[0] <= m.line <= m.span[1]
    ][:5]


# One mutant of each kind of place: a step-2 rule, a step-7 routing function read by steps 7, 8 and 11,
# a step-8 report helper, a step-9 coercion, a step-10 explanation and step 11's resolution.
PROVED = ("validate_args", "_after_fetch", "_measure", "_coerce_value", "explain", "resolve_sku")


def test_grading_by_reach_gives_what_grading_every_step_gives(mutants, lines):
    loaded = set(import_lines())
    chosen = []
    for name in PROVED:
        partial = [m for m in mutants if m.function == name and m.operator != "return_none"]
        chosen.append(next(m for m in partial if len(reached_steps(m.span, lines, import_lines=loaded)) < 11))
    steps = {m.id: reached_steps(m.span, lines, import_lines=loaded) for m in chosen}
    by_reach = grade_all(chosen, SEED_PAIR, jobs=2, steps=steps)
    every = grade_all(chosen, SEED_PAIR, jobs=2)
    assert differences(every, by_reach) == {}
    assert any(seed["failed_checks"] for row in every.values() for seed in row["seeds"]), "the sample kills nothing"
    # The comparison can fail: a reach that leaves out the steps a mutant loses points in.
    killed = next(m for m in chosen if any(seed["failed_steps"] for seed in every[m.id]["seeds"]))
    blind = grade_all([killed], SEED_PAIR, jobs=1, steps={killed.id: []})
    assert killed.id in differences({killed.id: every[killed.id]}, blind)
