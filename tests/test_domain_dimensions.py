"""The spec's whole domain, dimension by dimension: each is sent on every run, each mistake fails its own check
with a hint that names what the differing input varied, and correct choices keep their points.

The dimensions: contract rules with one bound alone (step 2), every kind of ``Exception`` a tool may raise
(step 3), a refused result kept in ``value`` (step 4), a loop whose reason comes back and a graph built before
``MAX_ATTEMPTS`` changes (step 7), an attempt limit of 1 where the report's ``handle`` must end as the module's own
does outside the report (step 8), values only an unlisted coercion rule would change (step 9). The planted
mistakes are in ``tests/defects/mistakes/`` (the stability sweep, ``test_stability.py``, grades each on several
seeds and checks that no other step loses points); here each is graded once, on its own step, for its hint.
The reference solution is the starting text; the grader never imports it.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from defects.catalog import SOLUTION, materialise_more

from grader.checks import cases
from grader.checks.registry import CHECKS, check_rng
from grader.grading import grade

ALT_STYLES = Path(__file__).parent / "alt_styles"


def _failed(report) -> dict:
    return {c.id: c for c in report.checks if not c.passed}


def _write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "agtool").mkdir(exist_ok=True)
    path = tmp_path / "agtool" / "tools.py"
    path.write_text(text, encoding="utf-8")
    return path


def _edited(*edits: tuple[str, str]) -> str:
    text = SOLUTION.read_text(encoding="utf-8")
    for anchor, replacement in edits:
        assert text.count(anchor) == 1, anchor
        text = text.replace(anchor, replacement)
    return text


# mistake -> (its step, the check that must fail, words its message or call line must hold: the dimension)
DIMENSIONS = {
    "range_only_with_both_bounds": (2, "step2/reads_contract", ["has 'min'", "no 'max'"]),
    "max_checked_inside_min": (2, "step2/reads_contract", ["has 'max'", "no 'min'"]),
    "type_error_escapes": (3, "step3/raised_as_value", ["raised TypeError", "TypeError included"]),
    "own_class_named_by_builtin_base": (3, "step3/raised_as_value", ["a class of "]),
    "result_failure_keeps_value": (4, "step4/call_tool_result_prefix", ["'value': None", "refused result"]),
    "empty_checked_before_shape": (4, "step4/shape_missing_key", ["gave 'empty'", "shape first"]),
    "limit_read_at_build": (7, "step7/max_attempts_runtime", ["compiled", "MAX_ATTEMPTS = 2 was set after"]),
    "stops_when_reason_repeats": (7, "step7/max_attempts_runtime", ["same reason", "result:too_big"]),
    "limit_pinned_while_measuring": (8, "step8/follows_module", ["Outside write_report", "MAX_ATTEMPTS (1)"]),
    "limit_at_least_two_while_measuring": (8, "step8/follows_module", ["same MAX_ATTEMPTS (1)", "pin"]),
    "bool_from_str_rule": (9, "step9/follows_contract", ["bool argument"]),
    "null_word_to_none": (9, "step9/never_coerced", ["'null'"]),
}


@pytest.mark.parametrize("name", sorted(DIMENSIONS))
def test_each_dimension_fails_its_check_with_a_hint_naming_what_varied(name, tmp_path):
    step, check_id, words = DIMENSIONS[name]
    seed = sorted(DIMENSIONS).index(name) + 1
    report = grade(materialise_more(name, tmp_path), steps=[step], seed=seed)
    failed = _failed(report)
    assert check_id in failed, f"{name} passed {check_id} on seed {seed}"
    text = failed[check_id].message + " " + failed[check_id].call
    missing = [w for w in words if w not in text]
    assert not missing, f"{name}: the hint does not say {missing}: {text}"


# The weak hints of an earlier pass: each mistake's failing check now names the real cause.
_LRU_RESOLVE = (
    "def resolve_sku(query: str) -> dict:",
    "@functools.lru_cache(maxsize=None)\ndef resolve_sku(query: str) -> dict:",
)
_CHECKPOINTER = (
    (
        "from langgraph.graph import END, START, StateGraph\n",
        "from langgraph.checkpoint.memory import MemorySaver\nfrom langgraph.graph import END, START, StateGraph\n\n"
        '_SAVER = MemorySaver()\n_RUN = {"configurable": {"thread_id": "lab"}}\n',
    ),
    (
        '    graph.add_conditional_edges("fetch", _after_naive_fetch, ["reply", "giveup"])\n    return graph.compile()',
        '    graph.add_conditional_edges("fetch", _after_naive_fetch, ["reply", "giveup"])\n'
        "    return graph.compile(checkpointer=_SAVER)",
    ),
    (
        "    final = build_naive().invoke(_initial_state(order))",
        "    final = build_naive().invoke(_initial_state(order), _RUN)",
    ),
)
WEAK_HINTS = {
    # a cache on resolve_sku: resolve_key asks a query again after PRODUCTS changed
    "lru_cache_on_resolve_sku": (
        [_LRU_RESOLVE, ("import json\n", "import functools\nimport json\n")],
        11,
        "step11/resolve_key",
        ["lru_cache", "PRODUCTS changed"],
        ["handle_named"],
    ),
    # one checkpointer and one thread_id for every run: the calls of the run before come along
    "checkpointer_reused_across_runs": (list(_CHECKPOINTER), 6, "step6/naive_ok", ["checkpointer", "earlier run"], []),
    # 'empty' for rows that are missing: the order of the checks, not the rule alone
    "empty_checked_before_shape": (
        [
            (
                '    returns = TOOLS[name]["returns"]\n    if not isinstance(value, dict):\n        return "shape"\n',
                '    returns = TOOLS[name]["returns"]\n    if not isinstance(value, dict):\n        return "shape"\n'
                '    if not value.get("rows"):\n        return "empty"\n',
            )
        ],
        4,
        "step4/shape_missing_key",
        ["shape first"],
        [],
    ),
    # the reason without its prefix: step3/unknown_tool names the prefix, not a KeyError
    "missing_args_prefix": (
        [('        return _failure("args:" + reason)', "        return _failure(reason)")],
        3,
        "step3/unknown_tool",
        ["without its prefix", "'args:'"],
        ["KeyError"],
    ),
}


@pytest.mark.parametrize("name", sorted(WEAK_HINTS))
def test_a_weak_hint_of_an_earlier_pass_now_names_the_cause(name, tmp_path):
    edits, step, check_id, words, not_words = WEAK_HINTS[name]
    report = grade(_write(tmp_path, _edited(*edits)), steps=[step], seed=3)
    failed = _failed(report)
    assert check_id in failed, f"{name} passed {check_id}"
    message = failed[check_id].message
    assert all(w in message for w in words), f"{name}: {message}"
    assert not any(w in message for w in not_words), f"{name}: {message}"


# Correct modules that make a choice the spec leaves to the learner, or write the spec's shapes another way.
CORRECT_CHOICES = {
    # can_repair says True for args:type:limit (a reason the spec leaves to the learner) and repair makes the
    # text an int: giveup_raised's worlds still fail at every call, so the run gives up on every seed.
    "repairs_a_limit_written_as_text": (
        [
            (
                '    "result:too_big": _use_stock_lookup,\n}',
                '    "result:too_big": _use_stock_lookup,\n    "args:type:limit": _limit_from_text,\n}',
            ),
            (
                "# reason -> fix(tool, args) returning (tool, args, description).",
                "def _limit_from_text(tool: str, args: dict) -> tuple[str, dict, str]:\n"
                '    text = args["limit"]\n'
                "    limit = int(text) if isinstance(text, str) and text.strip().isdigit() else 1\n"
                '    return tool, {**args, "limit": limit}, f"limit {text!r} -> {limit}"\n\n\n'
                "# reason -> fix(tool, args) returning (tool, args, description).",
            ),
        ],
        [7],
    ),
    # coerce returns a NamedTuple: a pair that unpacks and indexes as (args, coercions)
    "coerce_returns_a_named_tuple": (
        [
            (
                "def coerce(name: str, raw_args: dict) -> tuple[dict, list[dict]]:",
                "class Coerced(NamedTuple):\n    args: dict\n    coercions: list\n\n\n"
                "def coerce(name: str, raw_args: dict) -> tuple[dict, list[dict]]:",
            ),
            ("    return args, coercions\n", "    return Coerced(args, coercions)\n"),
            (
                "from typing import Annotated, Any, TypedDict",
                "from typing import Annotated, Any, NamedTuple, TypedDict",
            ),
        ],
        [9],
    ),
}


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("name", sorted(CORRECT_CHOICES))
def test_a_correct_choice_keeps_full_marks_on_every_seed(name, seed, tmp_path):
    edits, steps = CORRECT_CHOICES[name]
    report = grade(_write(tmp_path, _edited(*edits)), steps=steps, seed=seed)
    assert not _failed(report), {k: v.message for k, v in _failed(report).items()}


def test_success_error_none_costs_step_3_and_not_the_cached_call(tmp_path):
    report = grade(materialise_more("success_error_none_everywhere", tmp_path), steps=[3, 5], seed=4)
    failed = _failed(report)
    assert "step3/success_result" in failed and not [c for c in failed if c.startswith("step5/")], sorted(failed)


# A bound mistake (max taken as exclusive) in styles whose door the doubles cannot reach: the probes of steps
# 3-7 that are not about the bounds keep limit inside them, so the same checks fail on every seed.
@pytest.mark.parametrize("style", ["bound_methods_a", "registry_of_functions_a"])
def test_a_bound_mistake_in_another_style_costs_the_same_checks_on_every_seed(style, tmp_path):
    text = (ALT_STYLES / f"{style}.py").read_text(encoding="utf-8")
    text, n = re.subn(
        r'if (?:"max" in rule and )?value > rule\["max"\]:', lambda m: m.group(0).replace(">", ">="), text
    )
    assert n == 1
    path = _write(tmp_path, text)
    outcomes = {seed: sorted(_failed(grade(path, steps=[3, 4, 5, 6, 7], seed=seed))) for seed in (1, 2, 3, 4)}
    assert len({tuple(v) for v in outcomes.values()}) == 1, outcomes


def test_step_3_sends_every_kind_of_exception_on_every_run():
    kinds = set()
    for seed in range(8):
        ops = CHECKS["step3/raised_as_value"].probes(check_rng(seed, "step3/raised_as_value"))[0].params["operations"]
        sent = {o["label"].rsplit("(", 1)[1] for o in ops if o.get("op") == "call"}
        builtins = {o["expect"]["error"] for o in ops if o.get("op") == "call" and "built-in" in o["label"]}
        assert builtins == {f"raised:{n}" for n in cases.EXCEPTION_TYPES + cases.MORE_EXCEPTION_TYPES}
        assert "raised:TypeError" in builtins
        kinds.add(len(sent))
    assert kinds == {3}  # built-in, a class of Exception, a class of a built-in


def test_tool_exceptions_draw_only_names():
    a, b = cases.tool_exceptions(random.Random(1)), cases.tool_exceptions(random.Random(2))
    assert [what.split(" of ")[0] for _, _, what in a] == [what.split(" of ")[0] for _, _, what in b]


# A graph builder that fails only when the grader calls it itself (step 7 builds a graph ahead of a run, then
# changes MAX_ATTEMPTS): the failure of that call is judged, whatever handle's own calls of build_graph do.
_BUILDER = '    """Compile pick -> fetch -> (reply | repair -> fetch | giveup)."""\n'
_FROM_OUTSIDE = "    if __import__('sys')._getframe(1).f_globals is not globals():\n"
ONLY_OUTSIDE = {
    "raises_when_called_from_outside": _FROM_OUTSIDE + "        raise MemoryError('no room for a graph')\n",
    "raises_on_its_third_call": (
        "    _BUILDS.append(1)\n    if len(_BUILDS) == 3:\n        raise RuntimeError('third build')\n"
    ),
    "exits_the_builder_by_keyboard_interrupt_from_outside": _FROM_OUTSIDE + "        raise KeyboardInterrupt\n",
}


@pytest.mark.parametrize("name", sorted(ONLY_OUTSIDE))
def test_a_builder_that_fails_when_the_grader_builds_ahead_loses_step_7(name, tmp_path):
    text = _edited((_BUILDER, _BUILDER + ONLY_OUTSIDE[name])) + "\n_BUILDS: list = []\n"
    report = grade(_write(tmp_path, text), steps=[7], seed=3)
    failed = _failed(report)
    assert failed, f"{name} kept step 7"
    assert {c.step for c in report.checks if not c.passed} == {7}
    if name == "raises_when_called_from_outside":  # the others meet other runs first, in their own words
        message = failed["step7/max_attempts_runtime"].message
        assert "build_graph() must build the graph whenever it is called" in message, message
