"""Plausible step-8 mistakes: each must fail the check it names, and no other step.

Grouped by the classes of cases for ``write_report``: numbers written by
hand (the report then cannot follow a module whose validation comes too late,
whose cache stores nothing or whose ``handle`` ends another way), counters
read at the wrong moment, values read from the wrong run, and measurements
that cannot measure (wrong calls that no validation could let through, a
second call of a call that never succeeds, bad results that are not one of
each kind, orders of the wrong kind), and measurements made under an attempt
limit of the report's own (the limit set, pinned or raised while ``handle``
runs: the no-cache report sets ``MAX_ATTEMPTS = 1`` and runs the module's own
``handle`` once outside the report). The grader's doubles stand in for steps
2-7 in every report, so the three reports send each class on every run.
"""

from __future__ import annotations

from ..catalog import d

_MEMO = (
    '    call_tool("stock_lookup", args)\n    before = _total_runs()\n    call_tool("stock_lookup", args)\n'
    "    memo_second_call_runs = _total_runs() - before\n"
)
_BLOCKED = (
    "    before = _total_runs()\n    for name, args in _WRONG_ARGS:\n        call_tool(name, args)\n"
    "    blocked_before_call = _total_runs() - before\n"
)
_VALUE_WRONG_CALLS = (
    '    ("stock_lookup", {"sku": "SKU-1001", "region": "north", "limit": True}),\n'
    '    ("stock_lookup", {"sku": "SKU-1001", "region": "mars", "limit": 2}),\n'
    '    ("stock_lookup", {"sku": "SKU-1001", "region": "north", "limit": 99}),\n'
)
_MEMO_ARGS = '    args = {"sku": "SKU-2040", "region": "central", "limit": 1}'
_REPAIR_ORDER = '    repaired = handle({"sku": "SKU-1001", "region": "mars", "limit": 2})'
_EMPTY_ORDER = '    empty = handle({"sku": "SKU-9999", "region": "north", "limit": 2})'
_ORDERS = _REPAIR_ORDER + "\n" + _EMPTY_ORDER + "\n"


def _under(limit: str, orders: str = _ORDERS) -> str:
    """``orders`` run with ``MAX_ATTEMPTS`` set to ``limit`` (an expression of the old value) and put back."""
    body = "".join("    " + line + "\n" for line in orders.splitlines())
    return (
        "    global MAX_ATTEMPTS\n    kept = MAX_ATTEMPTS\n"
        f"    MAX_ATTEMPTS = {limit}\n    try:\n{body}    finally:\n        MAX_ATTEMPTS = kept\n"
    )


MISTAKES: dict = {
    # -- measured under an attempt limit of the report's own, not the module's at that moment
    "limit_pinned_while_measuring": ("step8/follows_module", d((_ORDERS, _under("3")))),
    "limit_at_least_two_while_measuring": ("step8/follows_module", d((_ORDERS, _under("max(MAX_ATTEMPTS, 2)")))),
    "limit_raised_for_the_repair_order": (
        "step8/follows_module",
        d((_REPAIR_ORDER + "\n", _under("MAX_ATTEMPTS + 1", _REPAIR_ORDER + "\n"))),
    ),
    "limit_set_to_the_spec_and_kept": (
        "step8/follows_module",
        d((_REPAIR_ORDER + "\n", "    global MAX_ATTEMPTS\n    MAX_ATTEMPTS = 3\n" + _REPAIR_ORDER + "\n")),
    ),
    # -- numbers written by hand (blocked, gave_up and memo typed in write_report)
    "blocked_written_by_hand": (
        "step8/follows_module",
        d(('"blocked_before_call": blocked_before_call,', '"blocked_before_call": 0,')),
    ),
    "gave_up_written_by_hand": ("step8/follows_module", d(('"gave_up": not empty["ok"],', '"gave_up": True,'))),
    "memo_written_by_hand": (
        "step8/follows_module",
        d(('"memo_second_call_runs": memo_second_call_runs,', '"memo_second_call_runs": 0,')),
    ),
    "attempts_written_by_hand": ("step8/follows_module", d(('"attempts": repaired["attempts"],', '"attempts": 2,'))),
    "tools_written_by_hand": (
        "step8/follows_module",
        d(('"tools": sorted(TOOLS),', '"tools": ["legacy_stock", "stock_lookup"],')),
    ),
    # -- counters read at the wrong moment
    "memo_read_after_the_second_call": (
        "step8/follows_module",
        d(
            (
                _MEMO,
                '    call_tool("stock_lookup", args)\n    call_tool("stock_lookup", args)\n'
                "    before = _total_runs()\n    memo_second_call_runs = _total_runs() - before\n",
            )
        ),
    ),
    "memo_counts_both_calls": (
        "step8/json_values",
        d(
            (
                _MEMO,
                '    before = _total_runs()\n    call_tool("stock_lookup", args)\n    call_tool("stock_lookup", args)\n'
                "    memo_second_call_runs = _total_runs() - before\n",
            )
        ),
    ),
    "blocked_read_before_the_calls": (
        "step8/follows_module",
        d(
            (
                _BLOCKED,
                "    before = _total_runs()\n    blocked_before_call = _total_runs() - before\n"
                "    for name, args in _WRONG_ARGS:\n        call_tool(name, args)\n",
            )
        ),
    ),
    "blocked_counts_refusals": (
        "step8/json_values",
        d((_BLOCKED, '    blocked_before_call = sum(not call_tool(name, args)["ok"] for name, args in _WRONG_ARGS)\n')),
    ),
    # -- values read from the wrong run or the wrong field
    "attempts_of_the_empty_order": (
        "step8/json_values",
        d(('"attempts": repaired["attempts"],', '"attempts": empty["attempts"],')),
    ),
    "gave_up_of_the_repaired_order": (
        "step8/json_values",
        d(('"gave_up": not empty["ok"],', '"gave_up": not repaired["ok"],')),
    ),
    "repaired_is_ok_alone": (
        "step8/follows_module",
        d(('"repaired": bool(repaired["ok"] and repaired["fixes"]),', '"repaired": bool(repaired["ok"]),')),
    ),
    "repaired_is_a_fix_alone": (
        "step8/follows_module",
        d(('"repaired": bool(repaired["ok"] and repaired["fixes"]),', '"repaired": bool(repaired["fixes"]),')),
    ),
    # -- measurements that cannot measure
    "wrong_calls_python_refuses_anyway": ("step8/json_values", d((_VALUE_WRONG_CALLS, ""))),
    "memo_call_refused": (
        "step8/json_values",
        d((_MEMO_ARGS, '    args = {"sku": "SKU-2040", "region": "central", "limit": 0}')),
    ),
    "memo_call_finds_nothing": (
        "step8/json_values",
        d((_MEMO_ARGS, '    args = {"sku": "SKU-9999", "region": "central", "limit": 1}')),
    ),
    "bad_results_two_shapes": (
        "step8/json_values",
        d(('"rows": [{"bin": "N-01", "count": -1}]},', '"rows": [{"bin": "N-01", "count": "-1"}]},')),
    ),
    "repair_order_without_fallback_stock": (
        "step8/json_values",
        d((_REPAIR_ORDER, '    repaired = handle({"sku": "SKU-5000", "region": "mars", "limit": 2})')),
    ),
    "gave_up_on_an_order_with_rows": (
        "step8/json_values",
        d((_EMPTY_ORDER, '    empty = handle({"sku": "SKU-1001", "region": "north", "limit": 2})')),
    ),
}
