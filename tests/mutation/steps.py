"""Which lab step(s) each top-level name of ``solutions/tools.py`` belongs to (from LAB_SPEC.md).

A name shared by two steps belongs to both: ``_has_type`` is step 2's bool
rule and step 4's row types; ``call_tool`` is the step-3 door that also runs
step 4's result validation and step 5's cache look-up and store;
``_new_graph`` and ``_initial_state`` build both graphs (steps 6 and 7).
Everything of step 1 (the data, the tools, the contract table) feeds the
later steps: a change there may fail them too (:func:`allowed_steps`).

>>> sorted(allowed_steps("validate_args")), sorted(allowed_steps("FALLBACK_REGION"))[:3]
([2], [1, 2, 3])
"""

from __future__ import annotations

ALL_STEPS = frozenset(range(1, 12))

STEPS: dict[str, frozenset[int]] = {
    name: frozenset(steps)
    for name, steps in {
        # Step 1: data, tools and the contract table.
        "REGIONS": {1},
        "MAX_ROWS": {1},
        "CALLS": {1},
        "STOCK": {1},
        "FALLBACK_REGION": {1, 7},  # listed with the data, used by step 7's repair
        "_matching_rows": {1},
        "stock_lookup": {1},
        "legacy_stock": {1},
        "_STOCK_ARGS": {1},
        "_STOCK_RETURNS": {1},
        "TOOLS": {1},
        # Step 2: validate the arguments before the call.
        "_has_type": {2, 4},
        "validate_args": {2},
        # Step 4: do not trust what came back.
        "_row_has_shape": {4},
        "validate_result": {4},
        # Step 5: remember successes.
        "CACHE": {5},
        "cache_key": {5},
        # Step 3: the one door (with step 4's and step 5's parts inside it).
        "_failure": {3},
        "call_tool": {3, 4, 5},
        # Step 6: failure is a path.
        "State": {6, 7},
        "pick": {6},
        "fetch": {6},
        "reply": {6},
        "giveup": {6},
        "_after_naive_fetch": {6},
        "_new_graph": {6, 7},
        "build_naive": {6},
        "_initial_state": {6, 7},
        "run_naive": {6},
        # Step 7: read the reason, fix, try again.
        "MAX_ATTEMPTS": {7},
        "_fallback_region": {7},
        "_clamp_limit": {7},
        "_use_stock_lookup": {7},
        "REPAIRS": {7},
        "can_repair": {7},
        "repair": {7},
        "_after_fetch": {7},
        "build_graph": {7},
        "handle": {7},
        # Step 8: record what was measured.
        "_WRONG_ARGS": {8},
        "_BAD_RESULTS": {8},
        "_total_runs": {8},
        "_measure": {8},
        "_markdown": {8},
        "write_report": {8},
        # Step 9: a strict coercion allowlist.
        "COERCIONS": {9},
        "coerce": {9},
        "call_coerced": {9},
        "_SPACE_CHARS": {9},
        "_DIGIT_CHARS": {9},
        "_coerce_value": {9},
        # Step 10: errors as prompts.
        "explain": {10},
        "retry_with_suggestion": {10},
        "_ASCII_SPACE": {10},
        "_ASCII_DIGITS": {10},
        "_one_edit_apart": {10},
        "_allowed_fix": {10},
        "_int_fix": {10},
        "_fixed_args": {10},
        "_suggestion": {10},
        "_accepted": {10},
        "_message": {10},
        # Step 11: identity resolution.
        "PRODUCTS": {11},
        "resolve_sku": {11},
        "handle_named": {11},
        "_label": {11},
        "_question": {11},
    }.items()
}


# Lines that carry a rule of another step too (``function:line-in-function``, as in the mutant ids):
# the line belongs to both. ``fetch`` (step 6) counts each fetch in ``attempts``, which is what step 7's
# limit reads ("repair ... while fewer than MAX_ATTEMPTS fetches were made"); step 6's run_naive does not
# return ``attempts``, so a change of that line can only show in step 7.
# ``giveup`` quotes the last reason in ``errors``: a naive run holds one reason, so which one it quotes
# shows only after a repair added another (step 7's runs; the grader builds no world where a naive run
# holds two).
LINES: dict[str, frozenset[int]] = {"fetch:6": frozenset({6, 7}), "giveup:2": frozenset({6, 7})}


def steps_of(name: str) -> frozenset[int]:
    """The step(s) a top-level name (or a ``name:line`` site of :data:`LINES`) belongs to.

    ``KeyError`` for a name the map does not declare; a site that is not in
    :data:`LINES` belongs to its function's steps.

    >>> sorted(steps_of("call_tool")), sorted(steps_of("fetch:6")), sorted(steps_of("fetch:2"))
    ([3, 4, 5], [6, 7], [6])
    """
    if name in LINES:
        return LINES[name]
    return STEPS[name.split(":")[0]]


def allowed_steps(name: str) -> frozenset[int]:
    """The steps a mutant of ``name`` may fail: its own, and every later one for step-1 names.

    >>> sorted(allowed_steps("STOCK")) == list(range(1, 12))
    True
    """
    own = steps_of(name)
    return own | frozenset(s for s in ALL_STEPS if s > 1) if 1 in own else own
