"""Single plausible mistakes built on correct modules in styles the reference does not use.

``tests/alt_styles/`` holds correct learner modules written from LAB_SPEC in
other styles; four classes of them were found to lose points they had earned:

* ``registry_of_functions_*`` -- a table of the module's own functions, and
  calls through it (``_ROUTES["call"](tool, args)``, ``_SERVICES[...]``,
  ``_API.call_tool``);
* ``own_bookkeeping_report_*`` -- a ``write_report`` that counts with the
  door's own bookkeeping (a tally dict, a ledger object, closures) instead of
  ``CALLS`` differences;
* ``own_state_keys_*`` -- a ``State`` with keys of the learner's own, set by
  the learner's ``pick`` (or ``fetch``) and read by the other nodes;
* ``bound_methods_*`` -- the module's names are bound methods of objects
  whose methods call each other through ``self``/``cls`` (or a closure).

Each entry of :data:`STYLED_MISTAKES` is one mistake a learner writing in
that style could make, a defect of exactly ONE step::

    mistake_id -> (base_style_file_stem, check_id_it_must_fail, edits)

``edits`` are ``(anchor, replacement)`` pairs applied in order to the text of
``tests/alt_styles/<base_style_file_stem>.py``; each anchor must occur exactly
once in the text it is applied to (a drift of the base style then shows up as
a test failure, not as a mistake that silently stops applying). The graded
copy must fail the named check and keep full marks on every step other than
that check's step (``tests/test_styled_corpus.py``).

Example::

    >>> text = materialise_styled("registry_c_cache_stage_before_validation")
    >>> "_DOOR_STAGES = [_stage_cached, _stage_arguments," in text
    True
"""

from __future__ import annotations

from pathlib import Path

ALT_STYLES = Path(__file__).resolve().parents[1] / "alt_styles"

Edits = tuple[tuple[str, str], ...]

STYLED_MISTAKES: dict[str, tuple[str, str, Edits]] = {
    # ------------------------------------------------------------ class 1: a registry of the module's functions
    # The answer names the region of the order, not of the call that produced the rows. On the learner's own
    # route a naive graph's call is always the order's, so only a repair shows it: step 7's, as for the
    # reference (tests/defects/mistakes/step6.py).
    "registry_a_reply_names_the_orders_region": (
        "registry_of_functions_a",
        "step7/answer_names_used_args",
        (
            (
                '    used = state["args"]\n    return {"answer": "Stock of',
                '    used = {**state["args"], "region": state["order"]["region"]}\n    return {"answer": "Stock of',
            ),
        ),
    ),
    # giveup quotes the first reason in errors, not the last: a naive run holds one reason, so step 7's.
    "registry_a_giveup_quotes_the_first_reason": (
        "registry_of_functions_a",
        "step7/giveup_empty",
        (
            (
                '"No answer, the last error was " + state["errors"][-1]',
                '"No answer, the last error was " + state["errors"][0]',
            ),
        ),
    ),
    # The staged door looks in the cache before it validates: a call that became invalid is served.
    "registry_c_cache_stage_before_validation": (
        "registry_of_functions_c",
        "step5/validation_before_cache",
        (("_DOOR_STAGES = [_stage_arguments, _stage_cached,", "_DOOR_STAGES = [_stage_cached, _stage_arguments,"),),
    ),
    # The router reached through the service table allows one fetch more than MAX_ATTEMPTS.
    "registry_b_router_allows_one_attempt_too_many": (
        "registry_of_functions_b",
        "step7/max_attempts_runtime",
        (
            (
                '_SERVICES["can_repair"](state["errors"][-1]) and state["attempts"] < MAX_ATTEMPTS:',
                '_SERVICES["can_repair"](state["errors"][-1]) and state["attempts"] <= MAX_ATTEMPTS:',
            ),
        ),
    ),
    # ------------------------------------------------------------ class 2: the report reads the door's own bookkeeping
    # blocked_before_call counts the refused calls (the tally's "refused"), not the tool bodies they ran.
    "own_tally_a_counts_refusals_as_blocked": (
        "own_bookkeeping_report_a",
        "step8/json_values",
        (
            (
                '    runs = _TALLY["body_runs"]\n    call_tool("stock_lookup", {"sku": "SKU-2040", "region": "west", "limit": 0})',
                '    refused = _TALLY["refused"]\n    call_tool("stock_lookup", {"sku": "SKU-2040", "region": "west", "limit": 0})',
            ),
            ('    blocked = _TALLY["body_runs"] - runs', '    blocked = _TALLY["refused"] - refused'),
        ),
    ),
    # The door counts a body run only when the result was good: a wrong call whose body ran (validation
    # let it through) and returned a bad result is never counted, so blocked_before_call stays 0.
    "own_tally_a_counts_good_runs_only": (
        "own_bookkeeping_report_a",
        "step8/follows_module",
        (
            ('    _TALLY["body_runs"] += 1\n    try:', "    try:"),
            (
                '    CACHE[key] = value\n    return {"ok": True, "value": value, "error": ""}',
                '    _TALLY["body_runs"] += 1\n    CACHE[key] = value\n    return {"ok": True, "value": value, "error": ""}',
            ),
        ),
    ),
    # The ledger mark for memo_second_call_runs is taken before the first of the two calls.
    "own_ledger_b_memo_counts_both_calls": (
        "own_bookkeeping_report_b",
        "step8/json_values",
        (
            (
                '    call_tool("stock_lookup", repeat)\n    mark = _LEDGER.mark()\n    call_tool("stock_lookup", repeat)',
                '    mark = _LEDGER.mark()\n    call_tool("stock_lookup", repeat)\n    call_tool("stock_lookup", repeat)',
            ),
        ),
    ),
    # blocked_before_call counts validate_args' refusals (its verdict closure), not tool body runs.
    "own_closure_c_counts_verdicts_as_blocked": (
        "own_bookkeeping_report_c",
        "step8/json_values",
        (
            (
                "    start = _runs_so_far()\n    for args in (",
                '    start = sum(n for kind, n in _verdicts().items() if kind != "valid")\n    for args in (',
            ),
            (
                "    blocked = _runs_so_far() - start",
                '    blocked = sum(n for kind, n in _verdicts().items() if kind != "valid") - start',
            ),
        ),
    ),
    # ------------------------------------------------------------ class 3: State keys of the learner's own
    # reply reads the region from the request (the order), not from the args of the call. With State keys
    # of its own (no ``order``) and a pick that passes the order's values through, the naive graph's
    # call always has the order's region: only a repair shows the mistake (step 7's rule for it).
    "state_keys_a_reply_names_the_requests_region": (
        "own_state_keys_a",
        "step7/answer_names_used_args",
        (
            (
                '    first = state["rows"][0]\n    args = state["args"]\n',
                '    first = state["rows"][0]\n    args = state["request"]\n',
            ),
        ),
    ),
    # giveup quotes the first reason in errors, next to the plan. The naive graph fetches once (one
    # reason, first == last), so only a repair that ends in a second failure shows it.
    "state_keys_a_giveup_quotes_the_first_reason": (
        "own_state_keys_a",
        "step7/giveup_after_fallback_empty",
        (('{state[\'errors\'][-1]}", "status": "gave up"', '{state[\'errors\'][0]}", "status": "gave up"'),),
    ),
    # fetch records the call's own args dict, and the region fix edits that dict in place: the first
    # calls entry shows the repaired region.
    "state_keys_b_region_fix_edits_the_call_in_place": (
        "own_state_keys_b",
        "step7/calls_keep_history",
        (
            ('    args = dict(state["call"]["args"])\n', '    args = state["call"]["args"]\n'),
            ('"calls": [{"tool": tool, "args": dict(args)}]}', '"calls": [{"tool": tool, "args": args}]}'),
            (
                '        return {"tool": call["tool"], "args": {**call["args"], "region": FALLBACK_REGION}}',
                '        call["args"]["region"] = FALLBACK_REGION\n        return call',
            ),
        ),
    ),
    # A limit out of range always becomes MAX_ROWS, also when it was below 1.
    "state_keys_c_limit_fix_always_max": (
        "own_state_keys_c",
        "step7/repair_limit",
        (
            (
                '"args:range:limit": lambda state: {"limit": min(MAX_ROWS, max(1, state["limit"]))},',
                '"args:range:limit": lambda state: {"limit": MAX_ROWS},',
            ),
        ),
    ),
    # pick tidies the region into its own State key (strip + lower): the call is not the order's.
    "state_keys_c_pick_tidies_the_region": (
        "own_state_keys_c",
        "step6/naive_default_tool",
        (
            (
                '"sku": order["sku"], "region": order["region"], "limit": order["limit"]}',
                '"sku": order["sku"], "region": order["region"].strip().lower(), "limit": order["limit"]}',
            ),
        ),
    ),
    # ------------------------------------------------------------ class 4: bound methods calling through self
    # The service stores a result in the cache before checking it: a failing call is served from the cache.
    "bound_a_caches_before_checking_the_result": (
        "bound_methods_a",
        "step5/failure_not_cached",
        (
            (
                "        reason = self.validate_result(name, value)\n        if reason:\n"
                '            return {"ok": False, "value": None, "error": "result:" + reason}\n'
                "        CACHE[key] = value\n",
                "        CACHE[key] = value\n        reason = self.validate_result(name, value)\n        if reason:\n"
                '            return {"ok": False, "value": None, "error": "result:" + reason}\n',
            ),
        ),
    ),
    # The service's table of repairable reasons also lists result:empty ("try again"): can_repair says yes.
    "bound_a_retries_an_empty_result": (
        "bound_methods_a",
        "step7/can_repair_table",
        (
            (
                '        "result:too_big": "the tool becomes stock_lookup",\n    }',
                '        "result:too_big": "the tool becomes stock_lookup",\n'
                '        "result:empty": "the same call is tried again (stock may have arrived)",\n    }',
            ),
        ),
    ),
    # The agent copies MAX_ATTEMPTS into a field when it is made: changing the module's value later
    # does not change the limit.
    "bound_b_attempt_limit_frozen_at_init": (
        "bound_methods_b",
        "step7/max_attempts_runtime",
        (
            ("    door: _Door\n", "    door: _Door\n    limit: int = MAX_ATTEMPTS\n"),
            ('state["attempts"] < MAX_ATTEMPTS else "giveup"', 'state["attempts"] < self.limit else "giveup"'),
        ),
    ),
    # validate_args checks the region against REGIONS, not against the contract's allowed values.
    "bound_c_allowed_read_from_regions": (
        "bound_methods_c",
        "step2/reads_contract",
        (
            (
                'elif "allowed" in rule and args[arg] not in rule["allowed"]:',
                'elif "allowed" in rule and args[arg] not in REGIONS:',
            ),
        ),
    ),
}


def base_text(mistake_id: str) -> str:
    """The text of the correct alt style the mistake is built on."""
    stem = STYLED_MISTAKES[mistake_id][0]
    return (ALT_STYLES / f"{stem}.py").read_text(encoding="utf-8")


def materialise_styled(mistake_id: str) -> str:
    """The base style's text with the mistake's edits applied (each anchor must occur exactly once)."""
    text = base_text(mistake_id)
    for anchor, replacement in STYLED_MISTAKES[mistake_id][2]:
        count = text.count(anchor)
        if count != 1:
            raise AssertionError(
                f"{mistake_id}: anchor occurs {count} times in {STYLED_MISTAKES[mistake_id][0]}.py: {anchor!r}"
            )
        text = text.replace(anchor, replacement)
    return text


def write_styled(mistake_id: str, folder: Path) -> Path:
    """Write the mistaken copy as ``folder/<mistake_id>/agtool/tools.py`` and return its path."""
    target = Path(folder) / mistake_id / "agtool" / "tools.py"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(materialise_styled(mistake_id), encoding="utf-8")
    return target


# The other steps a mistake may also cost, where the grader cannot put the spec's stand-in in: the
# module's nodes read State keys of its own, so step 7's runs with the grader's pick cannot be built and
# its tidying pick reaches step 7 on the learner's own route (an honest double penalty on
# wrong code rather than a lost point on right code).
ALSO_CHARGED: dict[str, tuple[int, ...]] = {"state_keys_c_pick_tidies_the_region": (7,)}
