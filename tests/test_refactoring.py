"""The refactoring gate's generator (tests/refactoring): many distinct rewrites, all compiling, all behaving.

Fast: the whole set is generated once (some seconds) and nothing is graded;
``make refactoring`` grades every rewrite on three seeds. The behaviour check
imports a sample of rewrites and their bases as modules and compares what
LAB_SPEC can see of them (``refactoring/behaviour.py``).
"""

from __future__ import annotations

import doctest
from collections import Counter

import pytest
import refactoring.astkit
import refactoring.bases
import refactoring.behaviour
import refactoring.gate
import refactoring.outputs
import refactoring.rewrites
import refactoring.run
from refactoring import KINDS, generate
from refactoring.__main__ import main as refactoring_main
from refactoring.bases import PART_ONE_STEPS, bases
from refactoring.behaviour import differences
from refactoring.gate import judge
from refactoring.outputs import render_markdown
from refactoring.rewrites import rewrites_of
from refactoring.run import MIN_REWRITES, controls, sample

# The kinds whose rewrites keep another step's function in a saved reference, an object or a table.
HOLDING = ("table", "closure", "partial", "bound_methods", "bound_late", "rebind")


@pytest.fixture(scope="module")
def rewrites():
    return generate(jobs=2)


def test_enough_distinct_rewrites(rewrites):
    assert len(rewrites) >= MIN_REWRITES
    assert len({r.source for r in rewrites}) == len(rewrites)
    assert len({r.id for r in rewrites}) == len(rewrites)
    every = bases()
    assert not {r.source for r in rewrites} & {b.text for b in every.values()}


def test_every_rewrite_compiles(rewrites):
    for rewrite in rewrites:
        compile(rewrite.source, rewrite.id, "exec")


def test_every_kind_contributes_on_every_kind_of_base(rewrites):
    kinds = Counter(r.kind for r in rewrites)
    assert set(kinds) == set(KINDS), set(KINDS) - set(kinds)
    assert set(r.base for r in rewrites) == set(bases())
    families = {"solution": "solution", "alt": "alt_styles", "part_two": "part_two"}
    for prefix, family in families.items():
        made = {r.kind for r in rewrites if r.base.split("/")[0] == prefix}
        # Every kind applies to the solution and to the composed modules; the part-one styles lack some patterns.
        assert made == set(KINDS) or prefix == "alt", (family, set(KINDS) - made)
    assert {r.kind for r in rewrites if r.base.startswith("alt/")} >= set(HOLDING)


def test_the_steps_graded_follow_the_base(rewrites):
    for rewrite in rewrites:
        expected = PART_ONE_STEPS if rewrite.base.startswith("alt/") else None
        assert rewrite.steps == expected, rewrite.id
    control, unparsed = controls(["alt/hashed_keys"])
    assert (control.id, control.kind, control.steps) == ("alt/hashed_keys:base:as_written", "base", PART_ONE_STEPS)
    assert control.source == bases()["alt/hashed_keys"].text
    assert unparsed.id == "alt/hashed_keys:base:unparsed" and unparsed.source != control.source


def test_ids_are_stable(rewrites):
    # The fixture's list was made in two worker processes; here the solution's again, in this one.
    again = rewrites_of(bases()["solution"])
    assert [r.id for r in again] == [r.id for r in rewrites if r.base == "solution"]
    assert [r.source for r in again] == [r.source for r in rewrites if r.base == "solution"]


def _behaviour_sample(rewrites) -> list:
    """One rewrite of each kind from each family of bases (the solution, the part-one styles, the composed
    modules), a different variant and base for each kind."""
    chosen, names = {}, list(bases())
    for turn, kind in enumerate(KINDS):
        for family in ("solution", "alt/", "part_two/"):
            of_kind = [r for r in rewrites if r.kind == kind and r.base.startswith(family)]
            if of_kind:
                pick = of_kind[(turn * 7) % len(of_kind)]
                chosen[pick.id] = pick
    return sorted(chosen.values(), key=lambda r: (names.index(r.base), r.id))


def test_a_sample_of_rewrites_behaves_as_its_base(rewrites):
    every = bases()
    sample_ = _behaviour_sample(rewrites)
    assert len(sample_) >= 2 * len(KINDS) and {r.kind for r in sample_} == set(KINDS)
    wrong = {r.id: differences(every[r.base].text, r.source) for r in sample_}
    assert not {k: v for k, v in wrong.items() if v}


def test_the_behaviour_check_sees_a_change():
    base = bases()["solution"].text
    # validate_result, and write_report's bad_result_reasons measured with it
    assert differences(base, base.replace('return "range"', 'return "shape"', 1)) == ["validate_result", "write_report"]
    assert differences(base, base.replace('tool_runs"] = sum(CALLS.values()) - before', 'tool_runs"] = 0')) == [
        "handle",
        "handle_named",
    ]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_transform_that_does_not_apply_says_none(kind):
    tiny = "X = 1\n\n\ndef f(a):\n    return a\n"
    transform = KINDS[kind].transform
    variants = KINDS[kind].variants(refactoring.astkit.parse(tiny)) or ["validate_args"]
    for variant in [*variants, "call_tool", "call_tool.validate_args", "try:validate_args", "dict"]:
        try:
            result = transform(tiny, variant)
        except KeyError:  # a variant name this kind does not know
            continue
        assert result is None or result != tiny and compile(result, kind, "exec")


def test_the_gate_fails_on_a_lost_point_and_on_too_few_and_says_which():
    row = {
        "id": "solution:table:call_tool",
        "base": "solution",
        "kind": "table",
        "error": "",
        "lost": [{"seed": 22, "failure": "", "failed": [{"id": "step3/calls_fn", "message": "not the spy"}]}],
        "seeds": [11, 22, 33],
        "scores": ["202/202", "200/202", "202/202"],
    }
    clean = {**row, "id": "solution:table:handle", "lost": [], "scores": ["202/202"] * 3}
    verdict = judge([clean, row], generated=400, minimum=300)
    assert not verdict.passed and [r["id"] for r in verdict.losing] == ["solution:table:call_tool"]
    assert verdict.failures() == [
        {
            "rewrite": "solution:table:call_tool",
            "base": "solution",
            "kind": "table",
            "seed": 22,
            "check": "step3/calls_fn",
            "message": "not the spy",
            "base_too": False,
        }
    ]
    assert "    solution:table:call_tool (seeds 22): not the spy" in verdict.lines()
    assert judge([clean], generated=400, minimum=300).passed
    assert not judge([clean], generated=299, minimum=300).passed
    summary = {
        "generated": 400,
        "graded": 2,
        "seeds": [11, 22, 33],
        "passed": False,
        "losing": 1,
        "generated_by_kind": {"table": 2},
        "generated_by_base": {"solution": 2},
        **verdict.summary(),
    }
    text = render_markdown(summary, [clean, row])
    assert (
        "| `solution:table:call_tool` | solution | table | 11: 202/202, 22: 200/202, 33: 202/202 | "
        "seed 22: `step3/calls_fn` |" in text
    )


def test_a_sample_takes_every_kind_first(rewrites):
    taken = sample(rewrites, len(KINDS))
    assert {r.kind for r in taken} == set(KINDS)


def test_the_command_lists_the_rewrites(capsys):
    assert refactoring_main(["--list", "--base", "solution", "--kind", "closure"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "solution:closure:fetch.call_tool" in out and out[-1].endswith("rewrites")


@pytest.mark.parametrize(
    "module",
    [
        refactoring.astkit,
        refactoring.bases,
        refactoring.behaviour,
        refactoring.gate,
        refactoring.outputs,
        refactoring.rewrites,
        refactoring.run,
    ],
    ids=lambda m: m.__name__,
)
def test_the_refactoring_modules_examples_hold(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0
