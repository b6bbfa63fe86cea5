"""Plausible step-6 mistakes: each must fail the check it names, and no other step.

Also here: mistakes of steps 1-5 that the graph checks (steps 6 and 7) must not charge. Those
checks run on the learner's own route first; a failure there that goes away with the grader's
door in ``call_tool`` (LAB_SPEC steps 2-5 over the spec's contract) is charged to the door's
steps (``grader.grading``), so each of these costs its own step only (``affects`` empty). And the
reply and giveup mistakes that only a repair shows, which step 7 catches.
"""

from __future__ import annotations

from ..catalog import d

_CALL = '        value = TOOLS[name]["fn"](**args)'
_ROW = '        {"bin": row["bin"], "count": row["count"]}\n        for row in STOCK'
_PICK_ARGS = 'args = {"sku": order["sku"], "region": order["region"], "limit": order["limit"]}'

_REPLY_ARGS = '    args = state["args"]\n    return {\n        "answer"'
_GIVEUP = "f\"Could not answer: {state['errors'][-1]}\""

MISTAKES: dict = {
    # -- reply and giveup rules that only show once a repair changes the call or adds a reason: on
    #    the learner's own route a naive graph's call is always the order's and holds one reason, so
    #    step 7's runs catch them (one step); the grader never builds a world its spec forbids (a pick
    #    that changes the order) to charge them to step 6.
    "reply_names_the_orders_region": (
        "step7/answer_names_used_args",
        d((_REPLY_ARGS, '    args = state["order"]\n    return {\n        "answer"')),
    ),
    "reply_names_the_orders_values_over_the_calls": (
        "step7/answer_names_used_args",
        d((_REPLY_ARGS, '    args = {**state["args"], **state["order"]}\n    return {\n        "answer"')),
    ),
    "reply_reads_region_from_the_order_only": (
        "step7/answer_names_used_args",
        d(
            (
                _REPLY_ARGS,
                '    args = {**state["args"], "region": state["order"]["region"]}\n    return {\n        "answer"',
            )
        ),
    ),
    "giveup_quotes_the_first_reason": (
        "step7/giveup_empty",
        d((_GIVEUP, "f\"Could not answer: {state['errors'][0]}\"")),
    ),
    "giveup_quotes_every_reason_but_the_last": (
        "step7/giveup_empty",
        d((_GIVEUP, "f\"Could not answer: {', '.join(state['errors'][:-1]) or state['errors'][0]}\"")),
    ),
    "giveup_quotes_the_reason_before_last": (
        "step7/giveup_empty",
        d((_GIVEUP, "f\"Could not answer: {state['errors'][-2:][0]}\"")),
    ),
    # -- the tool called another way than fn(**args): step 3's rule, never step 6's pick check.
    "tool_called_positionally": (
        "step3/calls_through_table",
        d((_CALL, '        value = TOOLS[name]["fn"](args["sku"], args["region"], args["limit"])')),
    ),
    "tool_called_with_limit_by_keyword_only": (
        "step3/calls_through_table",
        d((_CALL, '        value = TOOLS[name]["fn"](args["sku"], args["region"], limit=args["limit"])')),
    ),
    "tool_called_from_a_list_of_values": (
        "step3/calls_through_table",
        d((_CALL, '        value = TOOLS[name]["fn"](*[args[k] for k in ("sku", "region", "limit")])')),
    ),
    # -- mistakes of the door's steps: the graph runs through the grader's door.
    "graph_unharmed_by_max_off_by_one": (
        "step2/valid_passes",
        d(('if "max" in rule and value > rule["max"]:', 'if "max" in rule and value >= rule["max"]:')),
    ),
    "graph_unharmed_by_allowed_ignored": (
        "step2/allowed_region",
        d(
            (
                '        if "allowed" in rule and value not in rule["allowed"]:\n            return f"allowed:{arg}"\n',
                "",
            )
        ),
    ),
    "graph_unharmed_by_empty_accepted": ("step4/empty", d(('    if not rows:\n        return "empty"\n', ""))),
    "graph_unharmed_by_narrow_except": (
        "step3/raised_as_value",
        d(("    except Exception as exc:  # the boundary", "    except ValueError as exc:  # the boundary")),
    ),
    # -- rows the tool shapes its own way: handle's rows are compared with what the tool returned.
    "rows_are_whole_stock_rows": ("step1/lookup_rows", d((_ROW, "        dict(row)\n        for row in STOCK"))),
    "rows_carry_the_sku": (
        "step1/lookup_rows",
        d((_ROW, '        {"bin": row["bin"], "count": row["count"], "sku": row["sku"]}\n        for row in STOCK')),
    ),
    "rows_in_reverse_table_order": (
        "step1/lookup_rows",
        d(("_matching_rows(sku, region)[:limit]}", "_matching_rows(sku, region)[::-1][:limit]}")),
    ),
    # -- pick tidies the order: the call is not the order's (step 6's pick rule). Step 7's runs
    #    use the grader's pick (grader.engine.doubles_graph), so step 7 keeps its points.
    "pick_lowercases_the_region": (
        "step6/naive_default_tool",
        d(
            (
                _PICK_ARGS,
                'args = {"sku": order["sku"], "region": order["region"].strip().lower() '
                'if isinstance(order["region"], str) else order["region"], "limit": order["limit"]}',
            )
        ),
    ),
    "pick_turns_a_bool_limit_into_an_int": (
        "step6/naive_default_tool",
        d((_PICK_ARGS, 'args = {"sku": order["sku"], "region": order["region"], "limit": int(order["limit"])}')),
    ),
    "pick_strips_the_sku": (
        "step6/naive_default_tool",
        d((_PICK_ARGS, 'args = {"sku": order["sku"].strip(), "region": order["region"], "limit": order["limit"]}')),
    ),
    # -- pick chooses another tool than the order's: the tool a run's order names is drawn per seed,
    #    so only step6/naive_default_tool (which sends every tool choice) may see it, on every seed.
    "pick_defaults_to_legacy_stock": (
        "step6/naive_default_tool",
        d(('order.get("tool", "stock_lookup")', 'order.get("tool", "legacy_stock")')),
    ),
    "pick_swaps_the_tools": (
        "step6/naive_default_tool",
        d(
            (
                'order.get("tool", "stock_lookup")',
                '"legacy_stock" if order.get("tool", "stock_lookup") == "stock_lookup" else "stock_lookup"',
            )
        ),
    ),
    "pick_ignores_a_named_legacy_stock": (
        "step6/naive_default_tool",
        d(
            (
                'order.get("tool", "stock_lookup")',
                '"stock_lookup" if order.get("tool") == "legacy_stock" else order.get("tool", "stock_lookup")',
            )
        ),
    ),
    "pick_upper_cases_the_sku": (
        "step6/naive_default_tool",
        d((_PICK_ARGS, 'args = {"sku": order["sku"].upper(), "region": order["region"], "limit": order["limit"]}')),
    ),
}
