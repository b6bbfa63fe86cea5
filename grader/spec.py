"""The facts of LAB_SPEC, in one place: the stock table, names, constants, reasons, rules.

The grader judges from the spec, never from the solution: the checks, the
random cases, the probes of the engine, the playgrounds and the notebook
generator all read these facts from here (``tests/test_spec_calls.py`` and
friends hold them against ``solutions/tools.py``, so a drift shows there).
Nothing here runs learner code or imports another grader module.

Example::

    >>> len(STOCK), STOCK[0]
    (19, {'sku': 'SKU-1001', 'region': 'north', 'bin': 'N-01', 'count': 12})
    >>> rows_for("SKU-2040", "west")
    [{'bin': 'W-01', 'count': 0}]
"""

from __future__ import annotations

from typing import Any, TypedDict

REGIONS = ["north", "south", "east", "west", "central"]
FALLBACK_REGION = "central"
MAX_ROWS = 5
MAX_ATTEMPTS = 3
TOOL_NAMES = ["stock_lookup", "legacy_stock"]
ARG_NAMES = ["sku", "region", "limit"]

_ROWS = """
SKU-1001 north N-01 12|SKU-1001 north N-02 4|SKU-1001 south S-01 7|SKU-1001 central C-01 30
SKU-2040 east E-01 3|SKU-2040 west W-01 0|SKU-2040 central C-02 15
SKU-3300 north N-11 2|SKU-3300 north N-12 5|SKU-3300 north N-13 1|SKU-3300 north N-14 9
SKU-3300 north N-15 4|SKU-3300 north N-16 6|SKU-3300 north N-17 3|SKU-3300 central C-03 11
SKU-4411 south S-02 22|SKU-4411 west W-02 5|SKU-4411 central C-04 9|SKU-5000 west W-03 2
"""


class StockRow(TypedDict):
    """One row of the stock table."""

    sku: str
    region: str
    bin: str
    count: int


STOCK: list[StockRow] = [
    {"sku": s, "region": r, "bin": b, "count": int(c)}
    for line in _ROWS.replace("\n", "|").split("|")
    if line.strip()
    for s, r, b, c in [line.split()]
]
SKUS = sorted({row["sku"] for row in STOCK})
# Step 1 facts the grader relies on: a sku with no rows at all, the one pair with more
# rows than MAX_ROWS, and a sku with no stock in the fallback region.
UNKNOWN_SKU = "SKU-9999"
BIG_PAIR = ("SKU-3300", "north")
NO_FALLBACK_SKU = "SKU-5000"
# CALLS right after import: tool name -> times its body ran.
CALLS_START = {name: 0 for name in TOOL_NAMES}

# Step 2: the reasons of validate_args; all but UNKNOWN_TOOL are written "<kind>:<arg>".
UNKNOWN_TOOL = "unknown_tool"
MISSING, EXTRA, TYPE, ALLOWED, RANGE = "missing", "extra", "type", "allowed", "range"
# Step 4: the reasons of validate_result (RANGE is shared with step 2, without an argument).
SHAPE, EMPTY, TOO_BIG = "shape", "empty", "too_big"
RESULT_REASONS = [SHAPE, EMPTY, TOO_BIG, RANGE]
# Steps 3-4: how call_tool prefixes an error by where it happened.
ARGS_PREFIX, RAISED_PREFIX, RESULT_PREFIX = "args:", "raised:", "result:"


def arg_reason(kind: str, arg: str) -> str:
    """The ``validate_args`` reason of one defect of argument ``arg``.

    >>> arg_reason(RANGE, "limit")
    'range:limit'
    """
    return f"{kind}:{arg}"


# Step 7: the reasons the repair loop may fix, and the one it must not (besides any raised:...).
REPAIR_REGION = ARGS_PREFIX + arg_reason(ALLOWED, "region")
REPAIR_LIMIT = ARGS_PREFIX + arg_reason(RANGE, "limit")
REPAIR_TOOL = RESULT_PREFIX + TOO_BIG
REPAIRABLE = [REPAIR_REGION, REPAIR_LIMIT, REPAIR_TOOL]
NOT_REPAIRABLE = RESULT_PREFIX + EMPTY
# Step 7: the spec's two worked examples (repaired in 2 attempts; gives up).
REPAIR_EXAMPLE = {"sku": "SKU-1001", "region": "mars", "limit": 2}
EMPTY_EXAMPLE = {"sku": UNKNOWN_SKU, "region": "north", "limit": 2}

# Step 8: the two files, the JSON a correct module writes, and the two heading sets.
REPORT_FILES = ("tool_report.json", "tool_report.md")
REPORT_EXPECTED = {
    "tools": sorted(TOOL_NAMES),
    "blocked_before_call": 0,
    "bad_result_reasons": sorted(RESULT_REASONS),
    "memo_second_call_runs": 0,
    "repaired": True,
    "attempts": 2,
    "gave_up": True,
}
REPORT_KEYS = tuple(REPORT_EXPECTED)
HEADING_SETS = {
    "Korean": (
        "## 도구 계약을 어디에 적었나",
        "## 부르기 전에 무엇을 막았나",
        "## 돌려준 결과를 어떻게 믿지 않았나",
        "## 실패를 어떤 경로로 다뤘나",
    ),
    "English": (
        "## Where the tool contract is written",
        "## What was blocked before calling",
        "## How returned results were not trusted",
        "## How failure was handled as a path",
    ),
}


def args_contract() -> dict[str, dict[str, Any]]:
    """LAB_SPEC step 1's ``args`` contract of both tools, as a new dict each call (the one place it is written).

    >>> args_contract()["limit"] == {"type": int, "required": True, "min": 1, "max": MAX_ROWS}
    True
    """
    return {
        "sku": {"type": str, "required": True},
        "region": {"type": str, "required": True, "allowed": list(REGIONS)},
        "limit": {"type": int, "required": True, "min": 1, "max": MAX_ROWS},
    }


def returns_contract() -> dict[str, Any]:
    """LAB_SPEC step 1's ``returns`` contract of both tools, as a new dict each call.

    >>> returns_contract()["rows"]["max_len"] == MAX_ROWS
    True
    """
    return {
        "keys": {"sku": str, "region": str, "rows": list},
        "rows": {"max_len": MAX_ROWS, "item": {"bin": {"type": str}, "count": {"type": int, "min": 0}}},
    }


def rows_for(sku: str, region: str, limit: int | None = None) -> list[dict[str, Any]]:
    """Rows ``{"bin", "count"}`` of the spec table for one sku and region, in table order.

    >>> rows_for("SKU-2040", "west")
    [{'bin': 'W-01', 'count': 0}]
    """
    rows = [{"bin": r["bin"], "count": r["count"]} for r in STOCK if r["sku"] == sku and r["region"] == region]
    return rows if limit is None else rows[:limit]


def lookup_result(sku: str, region: str, limit: int | None = None) -> dict[str, Any]:
    """The exact result a correct tool returns (``limit=None``: the legacy tool).

    >>> lookup_result("SKU-1001", "north", 1)
    {'sku': 'SKU-1001', 'region': 'north', 'rows': [{'bin': 'N-01', 'count': 12}]}
    """
    return {"sku": sku, "region": region, "rows": rows_for(sku, region, limit)}


def args_reason_of(tool: object, args: object) -> str:
    """``""`` or the one reason a correct ``validate_args`` gives a call of the spec's tools (LAB_SPEC step 2).

    >>> args_reason_of("stock_lookup", {"sku": "S", "region": "mars", "limit": 2})
    'allowed:region'
    >>> args_reason_of("lookup", {}), args_reason_of("legacy_stock", {"sku": "S", "region": "north", "limit": True})
    ('unknown_tool', 'type:limit')
    """
    if tool not in TOOL_NAMES:
        return UNKNOWN_TOOL
    if not isinstance(args, dict):
        return arg_reason(MISSING, ARG_NAMES[0])
    contract = args_contract()
    for arg in args:
        if arg not in contract:
            return arg_reason(EXTRA, arg)
    for arg, rule in contract.items():
        if arg not in args:
            return arg_reason(MISSING, arg)
        value = args[arg]
        if type(value) is bool or not isinstance(value, rule["type"]):
            return arg_reason(TYPE, arg)
        if "allowed" in rule and value not in rule["allowed"]:
            return arg_reason(ALLOWED, arg)
        if value < rule.get("min", value) or value > rule.get("max", value):
            return arg_reason(RANGE, arg)
    return ""


def handle_outcome(order: object) -> tuple[bool, list[str]]:
    """``(ok, errors)`` of a correct module's ``handle(order)`` (LAB_SPEC steps 2-7 over the spec's table).

    >>> handle_outcome(REPAIR_EXAMPLE), handle_outcome(EMPTY_EXAMPLE)
    ((True, ['args:allowed:region']), (False, ['result:empty']))
    >>> handle_outcome({"sku": UNKNOWN_SKU, "region": "", "limit": 2})
    (False, ['args:allowed:region', 'result:empty'])
    """
    if not isinstance(order, dict):
        return False, [ARGS_PREFIX + arg_reason(MISSING, ARG_NAMES[0])]
    tool = order.get("tool", "stock_lookup")
    args = {key: order[key] for key in ARG_NAMES if key in order}
    errors: list[Any] = []
    for attempt in range(1, MAX_ATTEMPTS + 1):
        reason = args_reason_of(tool, args)
        if reason:
            error = ARGS_PREFIX + reason
        else:
            rows = rows_for(args["sku"], args["region"], None if tool == "legacy_stock" else args["limit"])
            error = "" if rows and len(rows) <= MAX_ROWS else RESULT_PREFIX + (EMPTY if not rows else TOO_BIG)
        if not error:
            return True, errors
        errors.append(error)
        if error not in REPAIRABLE or attempt == MAX_ATTEMPTS:
            return False, errors
        if error == REPAIR_REGION:
            args = {**args, "region": FALLBACK_REGION}
        elif error == REPAIR_LIMIT:
            args = {**args, "limit": min(max(args["limit"], 1), MAX_ROWS)}
        else:
            tool = "stock_lookup"
    return False, errors


def order_kind(order: object) -> str:
    """``repaired``, ``empty`` or ``other``: what a correct module's ``handle`` does with ``order``.

    ``repaired``: ends ok after exactly one fix, of a wrong region; ``empty``: gives up on an empty
    result (LAB_SPEC step 8's two orders).

    >>> order_kind(REPAIR_EXAMPLE), order_kind(EMPTY_EXAMPLE), order_kind({"sku": "SKU-5000", "region": "mars", "limit": 2})
    ('repaired', 'empty', 'empty')
    >>> order_kind({"sku": "SKU-1001", "region": "mars", "limit": 0}), order_kind({"sku": "SKU-1001"})
    ('other', 'other')
    """
    if not isinstance(order, dict) or not all(key in order for key in ARG_NAMES):
        return "other"
    if order.get("tool", "stock_lookup") not in TOOL_NAMES:
        return "other"
    ok, errors = handle_outcome(order)
    if ok and errors == [REPAIR_REGION]:
        return "repaired"
    if not ok and errors and errors[-1] == NOT_REPAIRABLE:
        return "empty"
    return "other"


def stocked_pairs() -> list[tuple[str, str]]:
    """(sku, region) pairs with at least one row, in table order, without repeats.

    >>> stocked_pairs()[:3]
    [('SKU-1001', 'north'), ('SKU-1001', 'south'), ('SKU-1001', 'central')]
    """
    seen: list[tuple[str, str]] = []
    for row in STOCK:
        pair = (row["sku"], row["region"])
        if pair not in seen:
            seen.append(pair)
    return seen


# ---------------------------------------------------------------------------
# The LAB_SPEC rules, for the coverage table (docs/checks.md)
# ---------------------------------------------------------------------------

RULES: dict[str, str] = {
    "1.names": "`REGIONS`, `MAX_ROWS` and `CALLS` have exactly the spec's values",
    "1.stock": "`STOCK` holds exactly the 19 rows of the table, in order",
    "1.lookup": "`stock_lookup` returns `{sku, region, rows}` with the matching rows in table order, at most `limit`",
    "1.legacy": "`legacy_stock` returns the same shape but ignores `limit`",
    "1.zero": "a count of 0 is valid stock, not an empty result",
    "1.calls_own": "each tool adds 1 to `CALLS[<own name>]`",
    "1.calls_first": "the count happens on the first line, before anything can fail",
    "1.tools": "`TOOLS` has one entry per tool holding exactly `fn`, `args`, `returns`; `fn` is the function",
    "1.args": "`args` contract: sku str required; region str required, allowed = REGIONS; limit int required, 1..MAX_ROWS",
    "1.returns": "`returns` contract: keys sku/region/rows with types; rows max_len MAX_ROWS; item bin str, count int min 0",
    "2.valid": '`validate_args` returns `""` for a valid call',
    "2.unknown_tool": "`unknown_tool` when the name is not a key of `TOOLS`",
    "2.missing": "`missing:<arg>` when a required argument is absent",
    "2.extra": "`extra:<arg>` for an argument the contract does not list",
    "2.type": "`type:<arg>` for a wrong type",
    "2.bool": "`bool` is never accepted where `int` is asked",
    "2.allowed": "`allowed:<arg>` for a value not in `allowed`",
    "2.range": "`range:<arg>` below `min` or above `max` (inclusive bounds)",
    "2.contract_only": "`validate_args` reads only the contract table",
    "2.no_body": "`validate_args` never runs a tool body",
    "2.plain_str": "`validate_args` returns a `str`",
    "3.shape": "`call_tool` always returns `{ok, value, error}`",
    "3.args_prefix": 'validation failure: `ok=False`, `value=None`, `error="args:" + reason`',
    "3.blocked": "a call refused by validation never runs the tool body",
    "3.through_table": 'the function comes from `TOOLS[name]["fn"]`, called as `fn(**args)`',
    "3.raised": 'a tool that raises gives `error="raised:" + type(exc).__name__`',
    "3.no_exception": "`call_tool` never lets an `Exception` out",
    "3.success": 'success: `ok=True`, `value=<result>`, `error=""`',
    "4.valid": '`validate_result` returns `""` for a trustworthy result',
    "4.shape": "`shape`: not a dict, key missing or of wrong type, or a bad row",
    "4.empty": "`empty`: `rows` is an empty list",
    "4.too_big": "`too_big`: more rows than `max_len`",
    "4.range": "`range`: a row field below its `min`",
    "4.contract_only": "`validate_result` reads only the contract's `returns`",
    "4.call_tool": '`call_tool` validates every successful return: `error="result:" + reason`',
    "4.legacy_too_big": "`legacy_stock` for SKU-3300 in north gives `result:too_big` for any limit",
    "5.key_order": "`cache_key` gives the same string whatever the argument order",
    "5.key_distinct": "`cache_key` differs for different arguments or tool names",
    "5.key_str": "`cache_key` returns a `str`",
    "5.after_validation": "the cache is looked up after validation passes",
    "5.success_only": "only successes (after result validation) are stored in `CACHE`, a module-level dict",
    "5.second_call": "a second identical successful call runs the body 0 more times",
    "5.failure_every_time": "a failing call runs the body every time",
    "5.lives_long": "nothing clears the cache by itself",
    "6.state": "`State` reducers: `errors`/`calls` append, `attempts` adds",
    "6.nodes": "`build_naive()` compiles pick -> fetch -> reply | giveup",
    "6.pick": "`pick` passes the order's values through unchanged; tool defaults to `stock_lookup`",
    "6.fetch": "`fetch` makes one `call_tool`; a failure is appended to `errors`, nothing raised",
    "6.reply": "`reply`'s answer contains the sku, region, bin and count of the first row",
    "6.giveup": "`giveup`'s answer contains the last reason in `errors`",
    "6.reply_used_args": "the answer names the region of the call that produced the rows (after a repair, the repaired one)",
    "6.calls_history": "a `calls` entry records the arguments as passed to that call: a later repair never changes it",
    "6.no_mutation": "nodes never mutate what they are given: the caller's order is unchanged after the run",
    "3.base_exception": "`call_tool` catches `Exception`, not `BaseException`: `KeyboardInterrupt` passes through",
    "6.run_naive": "`run_naive` returns ok/answer/rows/errors/calls; one `calls` entry per call_tool with tool and args",
    "7.constants": '`MAX_ATTEMPTS = 3`, `FALLBACK_REGION = "central"`',
    "7.repairable": "repairable: args:allowed:region, args:range:limit, result:too_big",
    "7.not_repairable": "not repairable: result:empty and any raised:...",
    "7.fixes": "region -> FALLBACK_REGION, limit clamped into 1..MAX_ROWS, too_big -> stock_lookup",
    "7.limit": "repair only while fewer than MAX_ATTEMPTS fetches were made, else give up",
    "7.runtime": "`MAX_ATTEMPTS` is read when the graph runs",
    "7.repair_node": "`repair` reads the last reason, applies the fix, appends a description to `fixes`",
    "7.no_mutation": "`repair` returns new arguments; it never changes the args dict in place",
    "7.handle": "`handle` returns ok/answer/rows/errors/calls/fixes/attempts/tool_runs",
    "7.tool_runs": "`tool_runs` is the sum of `CALLS` after the run minus before it",
    "7.examples": "the spec's worked examples (mars -> repaired in 2 attempts; SKU-9999 -> gives up)",
    "7.graph": "`build_graph()` has a `repair` node",
    "8.files": "`write_report(folder)` writes `tool_report.json` and `tool_report.md` into `folder`",
    "8.default_folder": "without a folder, the files go next to the module file",
    "8.returns": "`write_report` returns the JSON dict",
    "8.values": "every value is measured from the module at that moment",
    "8.headings": "four `##` sections, all from one heading set (Korean or English)",
    "8.attempt_limit": "the last section states `MAX_ATTEMPTS` as a number",
}


# ---------------------------------------------------------------------------
# Part two (LAB_SPEC steps 9-11): the facts of each step, and its rules (added to RULES).
# ---------------------------------------------------------------------------

# ---- step 9: a strict coercion allowlist ----
COERCION_RULES = ("strip", "lower", "int_from_str")
ASCII_WHITESPACE = " \t\n\r\x0b\x0c"
ASCII_DIGITS = "0123456789"


def coerced_value(rule: dict[str, Any], value: object) -> tuple[object, tuple[str, ...]]:
    """One argument under LAB_SPEC step 9: ``(new value, rules applied)``; no rule: the value as it was.

    ``rule`` is the argument's contract entry. For an ``int`` argument the strip is part of
    ``int_from_str`` (the ``strip`` rule is for ``str`` arguments).

    >>> coerced_value({"type": str, "allowed": REGIONS}, " North ")
    ('north', ('strip', 'lower'))
    >>> coerced_value({"type": int}, " 07 "), coerced_value({"type": int}, "\\uff13"), coerced_value({"type": int}, True)
    ((7, ('int_from_str',)), ('３', ()), (True, ()))
    """
    if not isinstance(value, str):
        return value, ()
    bare = value.strip(ASCII_WHITESPACE)
    if rule.get("type") is int:
        if bare and all(char in ASCII_DIGITS for char in bare):
            return int(bare), ("int_from_str",)
        return value, ()
    applied: tuple[Any, ...] = ("strip",) if rule.get("type") is str and bare != value else ()
    new = bare if applied else value
    allowed = rule.get("allowed")
    if allowed is not None and new not in allowed and new.lower() in allowed:
        new, applied = new.lower(), applied + ("lower",)
    return new, applied


def coerced_args(contract: dict[str, Any] | None, raw_args: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``coerce`` under LAB_SPEC step 9 over an ``args`` contract (``None``: unknown tool).

    Returns the new arguments and ``{arg: (from, to, rules)}`` for each changed argument.

    >>> coerced_args({"limit": {"type": int}}, {"limit": "3", "x": " 3"})
    ({'limit': 3, 'x': ' 3'}, {'limit': ('3', 3, ('int_from_str',))})
    >>> coerced_args(None, {"limit": "3"})
    ({'limit': '3'}, {})
    """
    args, changes = dict(raw_args), {}
    for arg, value in raw_args.items():
        if contract is None or arg not in contract:
            continue
        new, applied = coerced_value(contract[arg], value)
        if applied:
            args[arg] = new
            changes[arg] = (value, new, applied)
    return args, changes


RULES.update(
    {
        "9.table": "`COERCIONS` is a module-level table naming the three rules strip, lower and int_from_str",
        "9.strip": "strip: a str value of a str argument loses leading/trailing ASCII whitespace",
        "9.lower": "lower: only for an argument with `allowed`, when only the lower-case form (after strip) is allowed",
        "9.int_from_str": "int_from_str: a str value of an int argument, ASCII digits only after strip, becomes int",
        "9.never": "never coerced: bool, floats, signs, separators/units, non-ASCII digits, '', unlisted args, "
        "an unknown tool",
        "9.contract": "the rules follow the contract table when called (types, `allowed`, added arguments)",
        "9.keys": "`coerce` returns a new dict with the same keys: nothing added, nothing removed",
        "9.input": "`coerce` never changes the dict it was given",
        "9.ledger": "one ledger entry per changed argument: arg, from, to, rule naming every applied rule",
        "9.no_body": "`coerce` never runs a tool body",
        "9.call_coerced": "`call_coerced` returns `call_tool`'s dict on the coerced args plus `coercions`",
        "9.refused": "a call still invalid after coercion is refused as args:... with no body run",
    }
)


# ---- step 10: errors as prompts ----
# explain's dict for valid arguments, and the keys of every explanation.
EMPTY_EXPLANATION = {"error": "", "arg": None, "value": None, "message": "", "suggestion": None}
EXPLANATION_KEYS = tuple(EMPTY_EXPLANATION)
# The reason kinds with an honest fix (type: only for an int argument and a str of ASCII digits).
SUGGESTING_KINDS = (ALLOWED, TYPE, EXTRA)


def one_edit(a: str, b: str) -> bool:
    """``a`` and ``b`` differ by exactly one insertion, deletion or substitution (step 10's honest fix).

    >>> one_edit("wast", "east"), one_edit("sout", "south"), one_edit("mars", "north"), one_edit("a", "a")
    (True, True, False, False)
    """
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    short, long_ = sorted((a, b), key=len)
    if len(short) == len(long_):
        return sum(x != y for x, y in zip(a, b)) == 1
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


RETRY_KEYS = ("suggested", "explanation")
RULES.update(
    {
        "10.reason": "`explain`'s `error` is `validate_args`' reason; `arg` the argument it names, `value` its value",
        "10.valid": "valid arguments give the empty explanation",
        "10.message": "`message` names the argument, shows the value (`repr`), and for allowed/range what is accepted",
        "10.allowed": "allowed: the allowed value equal to the stripped, lower-cased value, or the unique one at "
        "edit distance 1; none for two or more",
        "10.int": "type of an int argument: the `int_from_str` value; none for bool, float and anything else",
        "10.extra": "extra: `args` without that argument",
        "10.none": "no suggestion for range, missing, unknown_tool",
        "10.validates": "a suggestion always passes `validate_args`",
        "10.no_body": "`explain` never runs a tool body",
        "10.retry": "`retry_with_suggestion`: `call_tool`, then once more with the suggestion; the last dict plus "
        "`suggested` and `explanation`",
        "10.retry_runs": "`retry_with_suggestion` runs a tool body at most once in total",
    }
)


# ---- step 11: identity resolution ----

# LAB_SPEC step 11: sku -> product name, exactly (the grader replaces it with tables of its own per seed).
PRODUCTS = {
    "SKU-1001": "Steel bolt M6",
    "SKU-2040": "Steel bolt M8",
    "SKU-3300": "Copper wire 2 mm",
    "SKU-4411": "Copper wire 4 mm",
    "SKU-5000": "Rubber gasket",
}
RESOLVED, NOT_FOUND, AMBIGUOUS = "resolved", "not_found", "ambiguous"
NAMED_KEYS = ("ok", "kind", "candidates", "answer", "tool_runs")

RULES.update(
    {
        "11.products": "`PRODUCTS` maps each sku of `STOCK` to the spec's product name, exactly",
        "11.reads_now": "`resolve_sku` reads `PRODUCTS` when called, whatever its order",
        "11.key": "a query equal to a key of `PRODUCTS` (after `strip`, casefolded) resolves to that key",
        "11.unique": "exactly one name containing the query (after `strip`, `casefold`) resolves to its sku",
        "11.exact_wins": "several names contain the query but exactly one equals it: that one resolves",
        "11.not_found": "no name contains the query, or a blank query: `{kind: not_found, query}`",
        "11.ambiguous": "otherwise `{kind: ambiguous, query, candidates}`: every match, never one picked",
        "11.candidates": "candidates sorted by sku, each `{sku, label}`, the label holding name and sku",
        "11.no_body": "`resolve_sku` never runs a tool body",
        "11.products_unchanged": "`resolve_sku` never changes `PRODUCTS` (content or order)",
        "11.named_unresolved": "`handle_named` unresolved: `{ok: False, kind, candidates, answer, tool_runs: 0}`, no tool called",
        "11.named_answer": "that answer names the query and every candidate's label",
        "11.named_resolved": "`handle_named` resolved: `handle()` of the order with `sku` set and no `product`, plus `kind`",
        "11.named_order": "`handle_named` never changes the caller's order",
    }
)


# The steps whose rules each module name's function carries (LAB_SPEC's headings): its own first, then
# those of the functions the spec has it call (call_tool validates, caches and checks the result). A check's
# failure that goes away when the spec's stand-in takes one of these names is charged to those steps
# (grader.grading).
_DOOR = (2, 3, 4, 5)
FUNCTION_STEPS: dict[str, tuple[int, ...]] = {
    "stock_lookup": (1,),
    "legacy_stock": (1,),
    "validate_args": (2,),
    "call_tool": (3, 2, 4, 5),
    "validate_result": (4,),
    "cache_key": (5,),
    "pick": (6,),
    "fetch": (6, 1) + _DOOR,
    "reply": (6,),
    "giveup": (6,),
    "build_naive": (6, 1) + _DOOR,
    "run_naive": (6, 1) + _DOOR,
    "can_repair": (7,),
    "repair": (7,),
    "build_graph": (7, 6, 1) + _DOOR,
    "handle": (7, 6, 1) + _DOOR,
    "write_report": (8, 7, 6, 1) + _DOOR,
    "coerce": (9,),
    "call_coerced": (9, 1) + _DOOR,
    "explain": (10, 2, 9),
    "retry_with_suggestion": (10, 9, 1) + _DOOR,
    "resolve_sku": (11,),
    "handle_named": (11, 7, 6, 1) + _DOOR,
}
