"""Planted defects: for every check id, one small edit of ``solutions/tools.py`` it must reject.

Each :class:`Defect` is a list of ``(anchor, replacement)`` edits; every anchor
must occur exactly once in the solution (so a drift of the solution shows up
as a test failure, not as a defect that silently stops applying). ``affects``
lists the other steps the defect may legitimately break (a broken
``validate_args`` also breaks ``call_tool``); every step outside it and the
defect's own step must keep full marks.

The planted copies are written to a temporary folder at test time
(:func:`materialise`); none is committed.

Example::

    >>> text = materialise_text("step2/extra")
    >>> 'return f"unknown:{arg}"' in text
    True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

SOLUTION = Path(__file__).resolve().parents[2] / "solutions" / "tools.py"


@dataclass(frozen=True)
class Defect:
    edits: tuple[tuple[str, str], ...]
    affects: frozenset[int] = field(default_factory=frozenset)
    why: str = ""


def d(*edits: tuple[str, str], affects: tuple = (), why: str = "") -> Defect:
    return Defect(tuple(edits), frozenset(affects), why)


_LAST_ROW = '    {"sku": "SKU-5000", "region": "west", "bin": "W-03", "count": 2},\n]'
_LOOKUP_RETURN = 'return {"sku": sku, "region": region, "rows": _matching_rows(sku, region)[:limit]}'
_VALIDATE_TAIL = '            return f"range:{arg}"\n    return ""'
_MIN_CHECK = 'if "min" in rule and value < rule["min"]:\n            return f"range:{arg}"'
_MAX_CHECK = 'if "max" in rule and value > rule["max"]:'
_TYPE_CHECK = 'if not _has_type(value, rule["type"]):'
_ARGS_REFUSED = '        return _failure("args:" + reason)'
_CALL = '        value = TOOLS[name]["fn"](**args)'
_STORE = '    CACHE[key] = value\n    return {"ok": True, "value": value, "error": ""}'
_RESULT_REFUSED = '    if reason:\n        return _failure("result:" + reason)'

DEFECTS: dict[str, Defect] = {
    # ---------------------------------------------------------------- step 1
    "step1/names": d(
        (
            'REGIONS = ["north", "south", "east", "west", "central"]',
            'REGIONS = ["north", "south", "west", "east", "central"]',
        ),
        why="REGIONS in another order",
    ),
    "step1/stock_table": d(
        (_LAST_ROW, _LAST_ROW[:-1] + '    {"sku": "SKU-7777", "region": "east", "bin": "E-09", "count": 1},\n]'),
        why="a 20th row",
    ),
    "step1/lookup_rows": d(
        (_LOOKUP_RETURN, 'return {"sku": sku, "region": region, "rows": _matching_rows(sku, region)[::-1][:limit]}'),
        affects=(7,),
        why="rows in reverse table order",
    ),
    "step1/legacy_ignores_limit": d(
        ('"rows": _matching_rows(sku, region)}', '"rows": _matching_rows(sku, region)[:limit]}'),
        affects=(4, 7),
        why="legacy_stock honours limit",
    ),
    "step1/zero_count_is_stock": d(
        (
            'if row["sku"] == sku and row["region"] == region',
            'if row["sku"] == sku and row["region"] == region and row["count"] > 0',
        ),
        affects=(7,),
        why="empty bins dropped",
    ),
    "step1/calls_count_own_tool": d(
        ('    CALLS["legacy_stock"] += 1', '    CALLS["stock_lookup"] += 1'),
        why="legacy_stock counted under stock_lookup",
    ),
    "step1/calls_first_line": d(
        (
            '    CALLS["stock_lookup"] += 1\n    ' + _LOOKUP_RETURN,
            "    result = " + _LOOKUP_RETURN[len("return ") :] + '\n    CALLS["stock_lookup"] += 1\n    return result',
        ),
        why="counted after the body",
    ),
    "step1/tools_entries": d(
        ('"legacy_stock": {"fn": legacy_stock,', '"legacy_stock": {"fn": lambda **kw: legacy_stock(**kw),'),
        why="fn is a wrapper, not the function",
    ),
    "step1/args_contract": d(
        ('"limit": {"type": int, "required": True,', '"limit": {"type": int, "required": 1,'),
        why="required is 1, not True",
    ),
    "step1/returns_contract": d(
        ('"count": {"type": int, "min": 0}}', '"count": {"type": int, "min": 0, "max": 10**6}}'),
        why="an extra rule in item",
    ),
    # ---------------------------------------------------------------- step 2
    "step2/valid_passes": d((_MAX_CHECK, 'if "max" in rule and value >= rule["max"]:'), why="max treated as exclusive"),
    "step2/unknown_tool": d(('        return "unknown_tool"', '        return "unknown"')),
    "step2/missing": d(('return f"missing:{arg}"', 'return f"missing_{arg}"')),
    "step2/extra": d(('return f"extra:{arg}"', 'return f"unknown:{arg}"')),
    "step2/type_wrong": d(
        (_TYPE_CHECK, 'if rule["type"] is not str and not _has_type(value, rule["type"]):'),
        why="str arguments not type-checked",
    ),
    "step2/type_bool_limit": d(
        ("    if isinstance(value, bool) and expected is not bool:", "    if False:"),
        affects=(4,),
        why="the bool trap (_has_type is step 4's row check too)",
    ),
    "step2/type_numeric_string": d(
        (
            _TYPE_CHECK,
            'if isinstance(value, str) and value.isdigit() and rule["type"] is int:\n'
            "            value = int(value)\n        " + _TYPE_CHECK,
        ),
        why='"3" converted to 3',
    ),
    "step2/type_float": d(
        (_TYPE_CHECK, 'if not _has_type(value, rule["type"]) and not isinstance(value, float):'),
        why="floats accepted as ints",
    ),
    "step2/allowed_region": d(
        ('if "allowed" in rule and value not in rule["allowed"]:', "if False:"), why="allowed not checked"
    ),
    "step2/range_low": d((_MIN_CHECK, 'if False:\n            return f"range:{arg}"')),
    "step2/range_high": d((_MAX_CHECK, "if False:")),
    "step2/never_runs_body": d(
        (
            '    contract = TOOLS[name]["args"]\n    for arg in args:\n',
            '    contract = TOOLS[name]["args"]\n    try:\n        TOOLS[name]["fn"](**args)  # a dry run\n'
            "    except Exception:\n        pass\n    for arg in args:\n",
        ),
        why="a dry run inside validation",
    ),
    "step2/reads_contract": d((_MAX_CHECK, 'if "max" in rule and value > MAX_ROWS:'), why="max copied from MAX_ROWS"),
    "step2/returns_plain_str": d(
        (_VALIDATE_TAIL, '            return f"range:{arg}"\n    return type("Reason", (str,), {})("")'),
        why="a str subclass",
    ),
    "step2/optional_args": d(
        ('            if rule.get("required"):', '            if "required" in rule:'),
        why="every listed argument treated as required",
    ),
    "step2/declared_types": d(
        ("    if isinstance(value, bool) and expected is not bool:", "    if isinstance(value, bool):"),
        why="bool refused even where the contract asks for bool",
    ),
    # ---------------------------------------------------------------- step 3
    "step3/success_result": d(
        (_STORE, '    CACHE[key] = value\n    return {"ok": True, "value": value, "error": None}'),
        why="error None on success",
    ),
    "step3/args_prefix": d((_ARGS_REFUSED, "        return _failure(reason)"), why="no args: prefix"),
    "step3/blocked_before_call": d(
        (
            _ARGS_REFUSED,
            '        try:\n            TOOLS[name]["fn"](**args)\n'
            "        except Exception:\n            pass\n" + _ARGS_REFUSED,
        ),
        why="the body runs before the refusal",
    ),
    # Step 4 meets its bad results by the module's own functions too (STOCK), and steps 5-7 feed
    # theirs through spies on every route (every_route), so this fault costs step 3 only.
    "step3/calls_through_table": d(
        (_CALL, "        value = globals()[name](**args)"), why="calls the module function, not TOOLS[name]['fn']"
    ),
    "step3/raised_as_value": d(('_failure("raised:" + type(exc).__name__)', '_failure("raised:" + repr(exc))')),
    "step3/interrupt_passes_through": d(
        (
            "    except Exception as exc:  # the boundary: no exception crosses it",
            "    except BaseException as exc:  # the boundary: nothing crosses it",
        ),
        why="call_tool catches BaseException: KeyboardInterrupt comes back as a value",
    ),
    "step3/unknown_tool": d(
        (
            "    reason = validate_args(name, args)\n    if reason:\n        # Refused",
            "    entry = TOOLS[name]\n    reason = validate_args(name, args)\n    if reason:\n        # Refused",
        ),
        why="KeyError for an unknown tool",
    ),
    # ---------------------------------------------------------------- step 4
    "step4/valid_passes": d(
        ('if "min" in rule and row[field] < rule["min"]:', 'if "min" in rule and row[field] <= rule["min"]:'),
        why="count 0 refused",
    ),
    "step4/shape_not_dict": d(('    if not isinstance(value, dict):\n        return "shape"\n', "")),
    "step4/shape_missing_key": d(
        (
            "if key not in value or not _has_type(value[key], expected):",
            "if key in value and not _has_type(value[key], expected):",
        )
    ),
    "step4/shape_key_type": d(("if key not in value or not _has_type(value[key], expected):", "if key not in value:")),
    "step4/shape_bad_row": d(
        ('    if not all(_row_has_shape(row, rows_rule["item"]) for row in rows):\n        return "shape"\n', "")
    ),
    "step4/empty": d(('    if not rows:\n        return "empty"\n', "")),
    "step4/too_big": d(('    if len(rows) > rows_rule["max_len"]:\n        return "too_big"\n', "")),
    "step4/range": d(
        (
            '            if "min" in rule and row[field] < rule["min"]:\n                return "range"',
            "            pass",
        )
    ),
    "step4/reads_contract": d(
        ('if len(rows) > rows_rule["max_len"]:', "if len(rows) > MAX_ROWS:"), why="max_len copied from MAX_ROWS"
    ),
    "step4/call_tool_result_prefix": d((_RESULT_REFUSED, "    if reason:\n        return _failure(reason)")),
    "step4/legacy_too_big": d(
        ('if len(rows) > rows_rule["max_len"]:', 'if name != "legacy_stock" and len(rows) > rows_rule["max_len"]:'),
        why="legacy results not size-checked",
    ),
    # ---------------------------------------------------------------- step 5
    "step5/key_is_str": d(
        (
            '    return name + ":" + json.dumps(args, sort_keys=True, ensure_ascii=False)',
            "    return (name, json.dumps(args, sort_keys=True, ensure_ascii=False))",
        )
    ),
    "step5/key_order_independent": d(
        ("json.dumps(args, sort_keys=True, ensure_ascii=False)", "json.dumps(args, ensure_ascii=False)")
    ),
    "step5/key_distinguishes": d(
        (
            '    return name + ":" + json.dumps(args, sort_keys=True, ensure_ascii=False)',
            '    return ":".join(str(v) for v in sorted(map(str, args.values())))',
        ),
        why="the tool name and argument names left out",
    ),
    "step5/second_call_cached": d(
        ("def _failure(error: str) -> dict:\n", "def _failure(error: str) -> dict:\n    CACHE.clear()\n"),
        why="any failure empties the cache",
    ),
    "step5/failure_not_cached": d(
        (_RESULT_REFUSED, '    if reason:\n        CACHE[key] = value\n        return _failure("result:" + reason)'),
        why="bad results stored",
    ),
    "step5/validation_before_cache": d(
        (
            "    reason = validate_args(name, args)\n    if reason:\n        # Refused before the body runs: a wrong call never "
            'reaches the tool.\n        return _failure("args:" + reason)\n    key = cache_key(name, args)\n    if key in CACHE:\n'
            '        return {"ok": True, "value": CACHE[key], "error": ""}\n',
            '    key = cache_key(name, args)\n    if key in CACHE:\n        return {"ok": True, "value": CACHE[key], "error": ""}\n'
            '    reason = validate_args(name, args)\n    if reason:\n        return _failure("args:" + reason)\n',
        ),
        why="cache looked up before validation",
    ),
    "step5/cache_holds_success_only": d(
        (_ARGS_REFUSED, "        CACHE[cache_key(name, args)] = None\n" + _ARGS_REFUSED),
        why="refused calls remembered in CACHE",
    ),
    # ---------------------------------------------------------------- step 6
    "step6/state_reducers": d(("    errors: Annotated[list, operator.add]\n", "    errors: list\n"), affects=(7,)),
    "step6/naive_graph_nodes": d(
        (
            "        graph.add_node(node.__name__, node)",
            '        graph.add_node({"pick": "choose"}.get(node.__name__, node.__name__), node)',
        ),
        (
            '    graph.add_edge(START, "pick")\n    graph.add_edge("pick", "fetch")',
            '    graph.add_edge(START, "choose")\n    graph.add_edge("choose", "fetch")',
        ),
        affects=(7,),
        why="pick registered as 'choose'",
    ),
    "step6/naive_ok": d(("holds {first['count']}.", "has stock."), why="the count left out of the answer"),
    "step6/naive_failure_path": d(("f\"Could not answer: {state['errors'][-1]}\"", '"Could not answer."')),
    "step6/naive_empty": d(
        (
            'return "reply" if state["ok"] else "giveup"',
            'return "reply" if state["ok"] or state["errors"][-1] == "result:empty" else "giveup"',
        ),
        why="an empty result goes to reply",
    ),
    "step6/naive_default_tool": d(('order.get("tool", "stock_lookup")', '"stock_lookup"')),
    "step6/order_unchanged": d(
        (
            '    return {"tool": order.get("tool", "stock_lookup"), "args": args}',
            '    return {"tool": order.setdefault("tool", "stock_lookup"), "args": args}',
        ),
        why="pick writes the default tool into the caller's order",
    ),
    "step6/naive_no_retry": d(
        (
            '    graph.add_conditional_edges("fetch", _after_naive_fetch, ["reply", "giveup"])',
            '    graph.add_node("repair", repair)\n'
            '    graph.add_conditional_edges("fetch", _after_fetch, ["reply", "repair", "giveup"])\n'
            '    graph.add_edge("repair", "fetch")',
        ),
        why="the naive graph retries",
    ),
    # ---------------------------------------------------------------- step 7
    "step7/constants": d(("MAX_ATTEMPTS = 3\n", "MAX_ATTEMPTS = 4\n"), affects=(8,)),
    "step7/can_repair_table": d(
        (
            '    "result:too_big": _use_stock_lookup,\n}',
            '    "result:too_big": _use_stock_lookup,\n    "result:empty": _use_stock_lookup,\n}',
        )
    ),
    "step7/repair_region": d(('{**args, "region": FALLBACK_REGION}', '{**args, "region": "south"}')),
    "step7/repair_limit": d(('limit = min(max(args["limit"], 1), MAX_ROWS)', 'limit = max(args["limit"], 1)')),
    "step7/repair_too_big": d(
        (
            'return "stock_lookup", args, f"tool {tool} -> stock_lookup"',
            'return tool, {**args, "limit": 1}, f"limit -> 1"',
        )
    ),
    "step7/giveup_empty": d(
        (
            '    result["tool_runs"] = sum(CALLS.values()) - before\n',
            '    result["tool_runs"] = sum(CALLS.values()) - before\n'
            '    if not result["ok"]:\n        result["answer"] = "Sorry, nothing in stock."\n',
        ),
        why="handle hides the reason",
    ),
    "step7/giveup_after_fallback_empty": d(
        (
            '    result["tool_runs"] = sum(CALLS.values()) - before\n',
            '    result["tool_runs"] = sum(CALLS.values()) - before\n'
            '    if not result["ok"]:\n'
            '        result["answer"] = f"Could not answer: {result[\'errors\'][0]}"\n',
        ),
        why="handle rewrites the answer with the first reason",
    ),
    "step7/giveup_raised": d(
        ("    return reason in REPAIRS\n", '    return reason in REPAIRS or reason.startswith("raised:")\n'),
        affects=(8,),
    ),
    "step7/max_attempts_runtime": d(
        ("MAX_ATTEMPTS = 3\n", "MAX_ATTEMPTS = 3\n_LIMIT_AT_IMPORT = MAX_ATTEMPTS\n"),
        ('state["attempts"] < MAX_ATTEMPTS', 'state["attempts"] < _LIMIT_AT_IMPORT'),
        why="the limit read at import time",
    ),
    "step7/handle_shape": d(
        (
            '    result["tool_runs"] = sum(CALLS.values()) - before\n',
            '    result["runs"] = sum(CALLS.values()) - before\n',
        )
    ),
    "step7/tool_runs_measured": d(
        (
            '    result["tool_runs"] = sum(CALLS.values()) - before\n',
            '    result["tool_runs"] = len(result["calls"])\n',
        ),
        why="fetches counted instead of tool runs",
    ),
    "step7/answer_names_used_args": d(
        (
            '    result["tool_runs"] = sum(CALLS.values()) - before\n',
            '    result["tool_runs"] = sum(CALLS.values()) - before\n'
            '    if result["ok"]:\n'
            '        result["answer"] = result["answer"].replace(FALLBACK_REGION, order["region"])\n',
        ),
        why="handle names the order's region: after a repair it says 'mars'",
    ),
    "step7/calls_keep_history": d(
        ('    tool, args = state["tool"], dict(state["args"])', '    tool, args = state["tool"], state["args"]'),
        (
            '    return tool, {**args, "region": FALLBACK_REGION}, f"region',
            '    args["region"] = FALLBACK_REGION\n    return tool, args, f"region',
        ),
        ('REPAIRS[reason](state["tool"], dict(state["args"]))', 'REPAIRS[reason](state["tool"], state["args"])'),
        why="repair changes the args dict in place: calls[0] shows the repaired region",
    ),
    "step7/order_unchanged": d(
        (
            '    return {"tool": tool, "args": args, "fixes": [f"{reason}: {description}"]}',
            '    state["order"].update(args)\n'
            '    return {"tool": tool, "args": args, "fixes": [f"{reason}: {description}"]}',
        ),
        why="repair writes the repaired arguments back into the caller's order",
    ),
    "step7/graph_has_repair": d(
        (
            '    graph.add_node("repair", repair)\n    graph.add_conditional_edges("fetch", _after_fetch, '
            '["reply", "repair", "giveup"])\n    graph.add_edge("repair", "fetch")',
            '    graph.add_node("fix", repair)\n    graph.add_conditional_edges("fetch", _after_fetch, '
            '{"reply": "reply", "repair": "fix", "giveup": "giveup"})\n    graph.add_edge("fix", "fetch")',
        ),
        why="the repair node is called 'fix'",
    ),
    "step7/fixes_reducer": d(("    fixes: Annotated[list, operator.add]\n", "    fixes: list\n")),
    # ---------------------------------------------------------------- step 8
    "step8/writes_both_files": d(('(folder / "tool_report.md")', '(folder / "tool-report.md")')),
    "step8/default_folder": d(("Path(__file__).resolve().parent", "Path.cwd()")),
    "step8/returns_json_dict": d(("    return report\n", '    return {**report, "written": True}\n')),
    "step8/json_values": d(
        ('"blocked_before_call": blocked_before_call,', '"blocked_before_call": blocked_before_call + 1,')
    ),
    "step8/md_headings": d(
        ('"## What was blocked before calling",', '"## 부르기 전에 무엇을 막았나",'), why="mixed heading sets"
    ),
    "step8/md_attempt_limit": d(('f"The attempt limit is {MAX_ATTEMPTS}."', '"The attempt limit is fixed."')),
    "step8/follows_module": d(
        ('f"The attempt limit is {MAX_ATTEMPTS}."', '"The attempt limit is 3."'), why="a hand-written number"
    ),
}


def materialise_text(check_id: str, source: str | None = None) -> str:
    """The solution's text with the defect of ``check_id`` planted (anchors must occur once)."""
    text = SOLUTION.read_text(encoding="utf-8") if source is None else source
    for anchor, replacement in DEFECTS[check_id].edits:
        count = text.count(anchor)
        if count != 1:
            raise AssertionError(f"{check_id}: anchor occurs {count} times in solutions/tools.py: {anchor!r}")
        text = text.replace(anchor, replacement)
    return text


def materialise(check_id: str, folder: Path) -> Path:
    """Write the planted copy as ``folder/<id>/tools.py`` and return its path."""
    target = folder / check_id.replace("/", "__") / "tools.py"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(materialise_text(check_id), encoding="utf-8")
    return target


# Plausible mistakes beyond one-per-check: each must fail the check named first.
_HANDLE_TOOL_RUNS = '    result["tool_runs"] = sum(CALLS.values()) - before\n'
_CAN_REPAIR = "def can_repair(reason: str) -> bool:"

MORE_DEFECTS: dict[str, tuple[str, Defect]] = {
    "region_lowercased": (
        "step2/allowed_region",
        d(
            (
                'if "allowed" in rule and value not in rule["allowed"]:',
                'if "allowed" in rule and value.lower() not in rule["allowed"]:',
            )
        ),
    ),
    "region_stripped": (
        "step2/allowed_region",
        d(
            (
                'if "allowed" in rule and value not in rule["allowed"]:',
                'if "allowed" in rule and value.strip() not in rule["allowed"]:',
            )
        ),
    ),
    "bool_passes_as_int": (
        "step2/type_bool_limit",
        d(("    if isinstance(value, bool) and expected is not bool:\n        return False\n", ""), affects=(4,)),
    ),
    "extra_none_ignored": (
        "step2/extra",
        d(
            (
                '        if arg not in contract:\n            return f"extra:{arg}"',
                '        if arg not in contract and args[arg] is not None:\n            return f"extra:{arg}"',
            )
        ),
    ),
    "limit_optional": (
        "step2/missing",
        d(('            if rule.get("required"):', '            if rule.get("required") and arg != "limit":')),
    ),
    "rows_sorted_by_count": (
        "step1/lookup_rows",
        d(
            (
                _LOOKUP_RETURN,
                'return {"sku": sku, "region": region, "rows": sorted(_matching_rows(sku, region), '
                'key=lambda r: r["count"])[:limit]}',
            ),
            affects=(7,),
        ),
    ),
    "float_count_accepted": (
        "step4/shape_bad_row",
        d(
            (
                '    return all(field in row and _has_type(row[field], rule["type"]) for field, rule in item.items())',
                '    return all(field in row and (_has_type(row[field], rule["type"]) or isinstance(row[field], float))'
                " for field, rule in item.items())",
            )
        ),
    ),
    "stored_before_result_check": (
        "step5/failure_not_cached",
        d(
            (
                '    reason = validate_result(name, value)\n    if reason:\n        return _failure("result:" + reason)\n',
                "    CACHE[key] = value\n    reason = validate_result(name, value)\n    if reason:\n"
                '        return _failure("result:" + reason)\n',
            )
        ),
    ),
    "key_without_limit": (
        "step5/key_distinguishes",
        d(
            (
                "json.dumps(args, sort_keys=True, ensure_ascii=False)",
                'json.dumps({k: v for k, v in args.items() if k != "limit"}, sort_keys=True)',
            )
        ),
    ),
    "answer_from_last_row": ("step6/naive_ok", d(('first = state["rows"][0]', 'first = state["rows"][-1]'))),
    "pick_clamps_limit": (
        "step6/naive_failure_path",
        d(
            (
                'args = {"sku": order["sku"], "region": order["region"], "limit": order["limit"]}',
                'args = {"sku": order["sku"], "region": order["region"], "limit": min(max(order["limit"], 1), 5) '
                'if type(order["limit"]) is int else order["limit"]}',
            )
        ),
    ),
    "naive_retries_after_raise": (
        "step6/naive_no_retry",
        d(
            (
                "    result = call_tool(tool, args)\n    update = {",
                '    result = call_tool(tool, args)\n    if not result["ok"] and result["error"].startswith("raised:"):\n'
                "        result = call_tool(tool, args)\n    update = {",
            )
        ),
    ),
    "one_attempt_too_many": (
        "step7/max_attempts_runtime",
        d(('state["attempts"] < MAX_ATTEMPTS', 'state["attempts"] <= MAX_ATTEMPTS')),
    ),
    "clamp_below_max": (
        "step7/repair_limit",
        d(('limit = min(max(args["limit"], 1), MAX_ROWS)', 'limit = min(max(args["limit"], 1), MAX_ROWS - 1)')),
    ),
    "tool_runs_of_one_tool": (
        "step7/tool_runs_measured",
        d(
            (
                '    result["tool_runs"] = sum(CALLS.values()) - before\n',
                '    result["tool_runs"] = CALLS["stock_lookup"] - before\n',
            )
        ),
    ),
    # A dry run before the refusal that goes around TOOLS: the module's own
    # function (seen by the grader's module-level spy) ...
    "dry_run_by_module_name": (
        "step3/blocked_before_call",
        d(
            (
                _ARGS_REFUSED,
                "        if name in TOOLS:\n            try:\n                globals()[name](**args)\n"
                "            except Exception:\n                pass\n" + _ARGS_REFUSED,
            )
        ),
    ),
    # ... or a reference saved at import, which no spy can replace: only CALLS shows it.
    "dry_run_through_saved_reference": (
        "step3/blocked_before_call",
        d(
            (
                "def call_tool(name: str, args: dict) -> dict:\n",
                '_DRY_RUN = {"stock_lookup": stock_lookup, "legacy_stock": legacy_stock}\n\n\n'
                "def call_tool(name: str, args: dict) -> dict:\n",
            ),
            (
                _ARGS_REFUSED,
                "        if name in _DRY_RUN:\n            try:\n                _DRY_RUN[name](**args)\n"
                "            except Exception:\n                pass\n" + _ARGS_REFUSED,
            ),
        ),
    ),
    # Double-penalty shapes: CALLS held by a Counter is right; a counting fault on top of
    # it costs step 1 only (step 7's tool_runs reads the same counts whatever dict holds them).
    "counter_counts_wrong_tool": (
        "step1/calls_count_own_tool",
        d(
            (
                'CALLS = {"stock_lookup": 0, "legacy_stock": 0}',
                'CALLS = __import__("collections").Counter({"stock_lookup": 0, "legacy_stock": 0})',
            ),
            ('    CALLS["legacy_stock"] += 1', '    CALLS["stock_lookup"] += 1'),
        ),
    ),
    "counter_counted_late": (
        "step1/calls_first_line",
        d(
            (
                'CALLS = {"stock_lookup": 0, "legacy_stock": 0}',
                'CALLS = __import__("collections").Counter({"stock_lookup": 0, "legacy_stock": 0})',
            ),
            (
                '    CALLS["stock_lookup"] += 1\n    ' + _LOOKUP_RETURN,
                "    result = "
                + _LOOKUP_RETURN[len("return ") :]
                + '\n    CALLS.update(["stock_lookup"])\n    return result',
            ),
        ),
    ),
    # A tool that counts itself twice is step 1's fault: handle reports the CALLS difference it
    # sees, so step 7's tool_runs (judged against CALLS) keeps its marks.
    "legacy_counted_twice": (
        "step1/calls_count_own_tool",
        d(('    CALLS["legacy_stock"] += 1', '    CALLS["legacy_stock"] += 2')),
    ),
    # A key without the tool name mixes up the two tools in CACHE: step 5 only (the later steps
    # never repeat one set of arguments with the other tool while the first is cached).
    "cache_key_without_name": (
        "step5/key_distinguishes",
        d(
            (
                '    return name + ":" + json.dumps(args, sort_keys=True, ensure_ascii=False)',
                "    return json.dumps(args, sort_keys=True, ensure_ascii=False)",
            )
        ),
    ),
    # A call_tool through references saved at import (not TOOLS[name]['fn']): step 3 only, as above.
    "calls_saved_reference": (
        "step3/calls_through_table",
        d(
            (
                "def call_tool(name: str, args: dict) -> dict:\n",
                '_SAVED = {"stock_lookup": stock_lookup, "legacy_stock": legacy_stock}\n\n\n'
                "def call_tool(name: str, args: dict) -> dict:\n",
            ),
            (_CALL, "        value = _SAVED[name](**args)"),
        ),
    ),
    "report_ignores_folder": (
        "step8/writes_both_files",
        d(
            (
                "folder = Path(folder) if folder is not None else Path(__file__).resolve().parent",
                "folder = Path(__file__).resolve().parent",
            )
        ),
    ),
    # Judged by where the files went (default_folder) only: the checks of what they say read them there.
    "report_in_working_folder": (
        "step8/default_folder",
        d(
            (
                "folder = Path(folder) if folder is not None else Path(__file__).resolve().parent",
                "folder = Path(folder) if folder is not None else Path.cwd()",
            )
        ),
    ),
    "reasons_written_by_hand": (
        "step8/follows_module",
        d(
            (
                '"bad_result_reasons": bad_result_reasons,',
                '"bad_result_reasons": ["empty", "range", "shape", "too_big"],',
            )
        ),
    ),
    "repaired_written_by_hand": (
        "step8/follows_module",
        d(('"repaired": bool(repaired["ok"] and repaired["fixes"]),', '"repaired": True,')),
    ),
    # State kept between runs in a module-level list: right on a module's first run, wrong on
    # the next. Graph runs that each started in a fork of the just-imported step child would
    # hide all but the last of these (133/133); as reset probes (the step's module, as the spec
    # says) the runs see what the earlier ones left.
    "fixes_kept_between_runs": (
        "step7/giveup_empty",
        d(
            (
                _HANDLE_TOOL_RUNS,
                _HANDLE_TOOL_RUNS + '    _ALL_FIXES.extend(result["fixes"] or [])\n'
                '    result["fixes"] = list(_ALL_FIXES)\n',
            ),
            (_CAN_REPAIR, "_ALL_FIXES = []\n\n\n" + _CAN_REPAIR),
        ),
    ),
    "errors_kept_between_runs": (
        "step7/giveup_empty",
        d(
            (
                _HANDLE_TOOL_RUNS,
                _HANDLE_TOOL_RUNS + '    _ALL_ERRORS.extend(result["errors"] or [])\n'
                '    result["errors"] = list(_ALL_ERRORS)\n',
            ),
            (_CAN_REPAIR, "_ALL_ERRORS = []\n\n\n" + _CAN_REPAIR),
        ),
    ),
    "attempts_kept_between_runs": (
        "step7/giveup_empty",
        d(
            (
                _HANDLE_TOOL_RUNS,
                _HANDLE_TOOL_RUNS + '    _ATTEMPTS[0] += result["attempts"] or 0\n'
                '    result["attempts"] = _ATTEMPTS[0]\n',
            ),
            (_CAN_REPAIR, "_ATTEMPTS = [0]\n\n\n" + _CAN_REPAIR),
            affects=(8,),
        ),
    ),
    "naive_calls_kept_between_runs": (
        "step6/naive_empty",
        d(
            (
                '    return {key: final.get(key) for key in ("ok", "answer", "rows", "errors", "calls")}\n',
                '    _NAIVE_CALLS.extend(final.get("calls") or [])\n'
                '    return {**{key: final.get(key) for key in ("ok", "answer", "rows", "errors")}, "calls": list(_NAIVE_CALLS)}\n',
            ),
            ("def run_naive(order: dict) -> dict:", "_NAIVE_CALLS = []\n\n\ndef run_naive(order: dict) -> dict:"),
        ),
    ),
}


# Planted defects of the later steps (tests/defects/planted/stepN.py, each a ``DEFECTS`` dict of
# check id -> Defect), merged into ``DEFECTS``; a check id defined twice is an error.
def _merge_planted_files() -> None:
    import importlib
    import pkgutil

    from . import planted

    for info in sorted(pkgutil.iter_modules(planted.__path__), key=lambda i: i.name):
        extra = importlib.import_module(f"{planted.__name__}.{info.name}").DEFECTS
        clash = sorted(set(extra) & set(DEFECTS))
        if clash:
            raise AssertionError(f"planted/{info.name}.py redefines {clash}")
        DEFECTS.update(extra)


_merge_planted_files()


# Mistakes grouped by the step whose check must catch them (tests/defects/mistakes/stepN.py,
# each a ``MISTAKES`` dict of the same shape as ``MORE_DEFECTS``), merged here so that every
# test of plausible mistakes sees them; a name defined twice is an error, not a silent overwrite.
def _merge_mistake_files() -> None:
    import importlib
    import pkgutil

    from . import mistakes

    for info in sorted(pkgutil.iter_modules(mistakes.__path__), key=lambda i: i.name):
        extra = importlib.import_module(f"{mistakes.__name__}.{info.name}").MISTAKES
        clash = sorted(set(extra) & set(MORE_DEFECTS))
        if clash:
            raise AssertionError(f"mistakes/{info.name}.py redefines {clash}")
        MORE_DEFECTS.update(extra)


_merge_mistake_files()


def materialise_more(name: str, folder: Path) -> Path:
    """Write the planted copy of ``MORE_DEFECTS[name]`` and return its path."""
    text = SOLUTION.read_text(encoding="utf-8")
    for anchor, replacement in MORE_DEFECTS[name][1].edits:
        if text.count(anchor) != 1:
            raise AssertionError(f"{name}: anchor occurs {text.count(anchor)} times: {anchor!r}")
        text = text.replace(anchor, replacement)
    target = folder / name / "tools.py"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target
