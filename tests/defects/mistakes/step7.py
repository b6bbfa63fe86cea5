"""Plausible step-7 mistakes: each must fail the check it names, and no other step."""

from __future__ import annotations

from ..catalog import d

_CAN_REPAIR = "    return reason in REPAIRS\n"
_REPAIR_READS = '    reason = state["errors"][-1]\n    tool, args, description = REPAIRS[reason]'
_REPAIR_RETURNS = '    return {"tool": tool, "args": args, "fixes": [f"{reason}: {description}"]}'

_CLAMP = 'limit = min(max(args["limit"], 1), MAX_ROWS)'
_FALLBACK = '{**args, "region": FALLBACK_REGION}'
_ROUTE_DOC = "    # MAX_ATTEMPTS is looked up now, at run time, not when the graph was built.\n"
_EDGES = '    graph.add_conditional_edges("fetch", _after_fetch, ["reply", "repair", "giveup"])'

MISTAKES: dict = {
    # -- a wrong fix whose effect on the rest of the run depends on the drawn values (which side of
    #    the range a limit is on, whether the drawn sku has stock in the region used): the fix's own
    #    check alone, on every seed (the attempt limit and the answer are judged on the loop alone).
    "clamp_only_the_high_side": ("step7/repair_limit", d((_CLAMP, 'limit = min(args["limit"], MAX_ROWS)'))),
    "clamp_to_one_always": ("step7/repair_limit", d((_CLAMP, "limit = 1"))),
    "clamp_only_the_low_side": ("step7/repair_limit", d((_CLAMP, 'limit = max(args["limit"], 1)'))),
    "fallback_to_the_region_tidied": (
        "step7/repair_region",
        d((_FALLBACK, '{**args, "region": args["region"].strip().lower()}')),
    ),
    "fallback_to_north": ("step7/repair_region", d((_FALLBACK, '{**args, "region": "north"}'))),
    "fallback_to_a_region_of_the_list": ("step7/repair_region", d((_FALLBACK, '{**args, "region": REGIONS[-2]}'))),
    # -- can_repair says yes to a reason outside the spec's list, and repair has no fix for it:
    #    handle raises (LAB_SPEC leaves such reasons to the learner, not an exception).
    "can_repair_every_args_reason": (
        "step7/giveup_raised",
        d((_CAN_REPAIR, '    return reason in REPAIRS or reason.startswith("args:")\n')),
    ),
    "can_repair_every_args_or_result_reason": (
        "step7/giveup_raised",
        d((_CAN_REPAIR, '    return reason.split(":")[0] in ("args", "result") and reason != "result:empty"\n')),
    ),
    "can_repair_anything_but_the_spec_refusals": (
        "step7/giveup_raised",
        d((_CAN_REPAIR, '    return reason != "result:empty" and not reason.startswith("raised:")\n')),
    ),
    # -- can_repair itself fails on a reason it does not expect (a malformed or unknown text).
    "can_repair_splits_the_reason": (
        "step7/can_repair_table",
        d((_CAN_REPAIR, '    kind, detail = reason.split(":", 1)\n    return kind + ":" + detail in REPAIRS\n')),
    ),
    "can_repair_returns_the_fix": (
        "step7/can_repair_table",
        d((_CAN_REPAIR, "    return REPAIRS.get(reason, False)\n")),
    ),
    "can_repair_indexes_the_table": (
        "step7/can_repair_table",
        d(
            (
                _CAN_REPAIR,
                '    return bool(REPAIRS[reason]) if reason.startswith("args:a") or reason.startswith("args:r") '
                'or reason.startswith("result:t") else False\n',
            )
        ),
    ),
    # -- fixes written twice: the whole list returned through an appending reducer. Not an
    #    attempt-limit failure: fixes_reducer names it.
    "fixes_list_returned_whole": (
        "step7/fixes_reducer",
        d(
            (
                _REPAIR_RETURNS,
                '    return {"tool": tool, "args": args, "fixes": state["fixes"] + [f"{reason}: {description}"]}',
            )
        ),
    ),
    "fixes_list_copied_then_extended": (
        "step7/fixes_reducer",
        d(
            (
                _REPAIR_RETURNS,
                '    fixes = list(state["fixes"])\n    fixes.append(f"{reason}: {description}")\n'
                '    return {"tool": tool, "args": args, "fixes": fixes}',
            )
        ),
    ),
    "fixes_every_description_so_far": (
        "step7/fixes_reducer",
        d(
            (
                _REPAIR_RETURNS,
                '    return {"tool": tool, "args": args, "fixes": [*state["fixes"], f"{reason}: {description}"]}',
            )
        ),
    ),
    # -- repair reads another reason than the last one: the second repair of a run applies the
    #    first fix again. The clamp itself is right; the message says which reason was read.
    "repair_reads_the_first_reason": (
        "step7/repair_limit",
        d((_REPAIR_READS, '    reason = state["errors"][0]\n    tool, args, description = REPAIRS[reason]')),
    ),
    "repair_reads_the_first_repairable_reason": (
        "step7/repair_limit",
        d(
            (
                _REPAIR_READS,
                '    reason = next(r for r in state["errors"] if r in REPAIRS)\n'
                "    tool, args, description = REPAIRS[reason]",
            )
        ),
    ),
    "repair_reads_the_oldest_of_the_last_two": (
        "step7/repair_limit",
        d((_REPAIR_READS, '    reason = state["errors"][-2:][0]\n    tool, args, description = REPAIRS[reason]')),
    ),
    # -- the limit read when the graph is built (max_attempts_runtime builds a graph, then changes MAX_ATTEMPTS)
    "limit_read_at_build": (
        "step7/max_attempts_runtime",
        d(
            ("def _after_fetch(state: State) -> str:", "def _after_fetch(state: State, limit: int = 3) -> str:"),
            ('state["attempts"] < MAX_ATTEMPTS', 'state["attempts"] < limit'),
            (
                _EDGES,
                "    limit = MAX_ATTEMPTS  # read once, when the graph is built\n"
                '    graph.add_conditional_edges("fetch", lambda state: _after_fetch(state, limit), '
                '["reply", "repair", "giveup"])',
            ),
        ),
    ),
    "limit_as_default_argument_at_build": (
        "step7/max_attempts_runtime",
        d(
            ("def _after_fetch(state: State) -> str:", "def _after_fetch(state: State, limit: int = 3) -> str:"),
            ('state["attempts"] < MAX_ATTEMPTS', 'state["attempts"] < limit'),
            (
                _EDGES,
                "    def route(state, limit=MAX_ATTEMPTS):\n        return _after_fetch(state, limit)\n\n"
                '    graph.add_conditional_edges("fetch", route, ["reply", "repair", "giveup"])',
            ),
        ),
    ),
    # -- the loop stops when a reason comes back (max_attempts_runtime meets result:too_big after each fix)
    "stops_when_reason_repeats": (
        "step7/max_attempts_runtime",
        d(
            (
                _ROUTE_DOC,
                '    if state["errors"][-1] in state["errors"][:-1]:\n        return "giveup"  # the fix did not help\n'
                + _ROUTE_DOC,
            )
        ),
    ),
    "stops_when_reason_repeats_in_a_row": (
        "step7/max_attempts_runtime",
        d(
            (
                _ROUTE_DOC,
                '    if len(state["errors"]) > 1 and state["errors"][-1] == state["errors"][-2]:\n'
                '        return "giveup"\n' + _ROUTE_DOC,
            )
        ),
    ),
    "one_fix_per_reason": (
        "step7/max_attempts_runtime",
        d(
            (
                _ROUTE_DOC,
                '    if any(fix.startswith(state["errors"][-1] + ":") for fix in state.get("fixes") or []):\n'
                '        return "giveup"  # this fix was tried already\n' + _ROUTE_DOC,
            )
        ),
    ),
}
