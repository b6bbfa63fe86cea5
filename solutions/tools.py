"""Reference solution for the agtool lab (steps 1-8 of LAB_SPEC).

This file is the source of truth for how a correct learner module behaves.
It is written to be shown to learners after the deadline: every function is
short, and a comment explains each rule whose reason is not obvious.

The grader never imports this file while grading; it judges a learner's
module from the spec and from what it observes.
"""
from __future__ import annotations

import json
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph

# --------------------------------------------------------------------------
# Step 1: data, tools and the contract table
# --------------------------------------------------------------------------

REGIONS = ["north", "south", "east", "west", "central"]
FALLBACK_REGION = "central"
MAX_ROWS = 5
CALLS = {"stock_lookup": 0, "legacy_stock": 0}

STOCK = [
    {"sku": "SKU-1001", "region": "north", "bin": "N-01", "count": 12},
    {"sku": "SKU-1001", "region": "north", "bin": "N-02", "count": 4},
    {"sku": "SKU-1001", "region": "south", "bin": "S-01", "count": 7},
    {"sku": "SKU-1001", "region": "central", "bin": "C-01", "count": 30},
    {"sku": "SKU-2040", "region": "east", "bin": "E-01", "count": 3},
    {"sku": "SKU-2040", "region": "west", "bin": "W-01", "count": 0},
    {"sku": "SKU-2040", "region": "central", "bin": "C-02", "count": 15},
    {"sku": "SKU-3300", "region": "north", "bin": "N-11", "count": 2},
    {"sku": "SKU-3300", "region": "north", "bin": "N-12", "count": 5},
    {"sku": "SKU-3300", "region": "north", "bin": "N-13", "count": 1},
    {"sku": "SKU-3300", "region": "north", "bin": "N-14", "count": 9},
    {"sku": "SKU-3300", "region": "north", "bin": "N-15", "count": 4},
    {"sku": "SKU-3300", "region": "north", "bin": "N-16", "count": 6},
    {"sku": "SKU-3300", "region": "north", "bin": "N-17", "count": 3},
    {"sku": "SKU-3300", "region": "central", "bin": "C-03", "count": 11},
    {"sku": "SKU-4411", "region": "south", "bin": "S-02", "count": 22},
    {"sku": "SKU-4411", "region": "west", "bin": "W-02", "count": 5},
    {"sku": "SKU-4411", "region": "central", "bin": "C-04", "count": 9},
    {"sku": "SKU-5000", "region": "west", "bin": "W-03", "count": 2},
]


def _matching_rows(sku: str, region: str) -> list[dict]:
    return [
        {"bin": row["bin"], "count": row["count"]}
        for row in STOCK
        if row["sku"] == sku and row["region"] == region
    ]


def stock_lookup(sku: str, region: str, limit: int) -> dict:
    """Return at most ``limit`` bins of ``sku`` in ``region``, in table order.

    >>> stock_lookup("SKU-1001", "north", 1)["rows"]
    [{'bin': 'N-01', 'count': 12}]
    """
    # Counted on the first line, so a run that fails later still counts.
    CALLS["stock_lookup"] += 1
    return {"sku": sku, "region": region, "rows": _matching_rows(sku, region)[:limit]}


def legacy_stock(sku: str, region: str, limit: int) -> dict:
    """Return every bin of ``sku`` in ``region``; ``limit`` is ignored (old API).

    >>> len(legacy_stock("SKU-3300", "north", 1)["rows"])
    7
    """
    CALLS["legacy_stock"] += 1
    return {"sku": sku, "region": region, "rows": _matching_rows(sku, region)}


# Both tools share one argument contract and one result contract.
_STOCK_ARGS = {
    "sku": {"type": str, "required": True},
    "region": {"type": str, "required": True, "allowed": REGIONS},
    "limit": {"type": int, "required": True, "min": 1, "max": MAX_ROWS},
}
_STOCK_RETURNS = {
    "keys": {"sku": str, "region": str, "rows": list},
    "rows": {
        "max_len": MAX_ROWS,
        "item": {"bin": {"type": str}, "count": {"type": int, "min": 0}},
    },
}

TOOLS = {
    "stock_lookup": {"fn": stock_lookup, "args": _STOCK_ARGS, "returns": _STOCK_RETURNS},
    "legacy_stock": {"fn": legacy_stock, "args": _STOCK_ARGS, "returns": _STOCK_RETURNS},
}


# --------------------------------------------------------------------------
# Step 2: validate the arguments before the call
# --------------------------------------------------------------------------


def _has_type(value: Any, expected: type) -> bool:
    # bool is a subclass of int in Python, so isinstance(True, int) is True;
    # a model that writes `true` for a count must still be refused.
    if isinstance(value, bool) and expected is not bool:
        return False
    return isinstance(value, expected)


def validate_args(name: str, args: dict) -> str:
    """Return "" for a valid call, else one reason such as ``missing:limit``.

    >>> validate_args("stock_lookup", {"sku": "SKU-1001", "region": "north", "limit": True})
    'type:limit'
    """
    if name not in TOOLS:
        return "unknown_tool"
    contract = TOOLS[name]["args"]
    for arg in args:
        if arg not in contract:
            return f"extra:{arg}"
    for arg, rule in contract.items():
        if arg not in args:
            if rule.get("required"):
                return f"missing:{arg}"
            continue
        value = args[arg]
        if not _has_type(value, rule["type"]):
            return f"type:{arg}"
        if "allowed" in rule and value not in rule["allowed"]:
            return f"allowed:{arg}"
        if "min" in rule and value < rule["min"]:
            return f"range:{arg}"
        if "max" in rule and value > rule["max"]:
            return f"range:{arg}"
    return ""


# --------------------------------------------------------------------------
# Step 4: do not trust what came back (used by call_tool below)
# --------------------------------------------------------------------------


def _row_has_shape(row: Any, item: dict) -> bool:
    if not isinstance(row, dict):
        return False
    return all(field in row and _has_type(row[field], rule["type"]) for field, rule in item.items())


def validate_result(name: str, value: Any) -> str:
    """Return "" for a trustworthy result, else ``shape``, ``empty``, ``too_big`` or ``range``.

    >>> validate_result("stock_lookup", {"sku": "SKU-1", "region": "north", "rows": []})
    'empty'
    """
    returns = TOOLS[name]["returns"]
    if not isinstance(value, dict):
        return "shape"
    for key, expected in returns["keys"].items():
        if key not in value or not _has_type(value[key], expected):
            return "shape"
    rows, rows_rule = value["rows"], returns["rows"]
    if not all(_row_has_shape(row, rows_rule["item"]) for row in rows):
        return "shape"
    # An empty list is not an error to Python, but an answer built on it is invented.
    if not rows:
        return "empty"
    if len(rows) > rows_rule["max_len"]:
        return "too_big"
    for row in rows:
        for field, rule in rows_rule["item"].items():
            if "min" in rule and row[field] < rule["min"]:
                return "range"
    return ""


# --------------------------------------------------------------------------
# Step 5: remember successes
# --------------------------------------------------------------------------

CACHE: dict[str, dict] = {}


def cache_key(name: str, args: dict) -> str:
    """Return one string per (tool, arguments) pair, whatever the argument order.

    >>> cache_key("stock_lookup", {"b": 1, "a": 2}) == cache_key("stock_lookup", {"a": 2, "b": 1})
    True
    """
    return name + ":" + json.dumps(args, sort_keys=True, ensure_ascii=False)


# --------------------------------------------------------------------------
# Step 3: the one door every call goes through
# --------------------------------------------------------------------------


def _failure(error: str) -> dict:
    return {"ok": False, "value": None, "error": error}


def call_tool(name: str, args: dict) -> dict:
    """Call a tool through its contract; failure comes back as a value.

    >>> call_tool("stock_lookup", {"sku": "SKU-1001", "region": "mars", "limit": 2})
    {'ok': False, 'value': None, 'error': 'args:allowed:region'}
    """
    reason = validate_args(name, args)
    if reason:
        # Refused before the body runs: a wrong call never reaches the tool.
        return _failure("args:" + reason)
    key = cache_key(name, args)
    if key in CACHE:
        return {"ok": True, "value": CACHE[key], "error": ""}
    try:
        value = TOOLS[name]["fn"](**args)
    except Exception as exc:  # the boundary: no exception crosses it
        return _failure("raised:" + type(exc).__name__)
    reason = validate_result(name, value)
    if reason:
        return _failure("result:" + reason)
    # Only successes are stored: a cached failure would block the retry.
    CACHE[key] = value
    return {"ok": True, "value": value, "error": ""}


# --------------------------------------------------------------------------
# Step 6: failure is a path in the graph
# --------------------------------------------------------------------------


class State(TypedDict, total=False):
    order: dict
    tool: str
    args: dict
    ok: bool
    rows: list
    answer: str
    errors: Annotated[list, operator.add]
    calls: Annotated[list, operator.add]
    attempts: Annotated[int, operator.add]
    fixes: Annotated[list, operator.add]


def pick(state: State) -> dict:
    """Turn the order into a tool name and arguments (a real agent asks a model here)."""
    order = state["order"]
    args = {"sku": order["sku"], "region": order["region"], "limit": order["limit"]}
    return {"tool": order.get("tool", "stock_lookup"), "args": args}


def fetch(state: State) -> dict:
    """Make exactly one ``call_tool``; a failure is recorded in ``errors``, never raised."""
    tool, args = state["tool"], dict(state["args"])
    result = call_tool(tool, args)
    update = {
        "ok": result["ok"],
        "attempts": 1,
        "calls": [{"tool": tool, "args": args, "error": result["error"]}],
    }
    if result["ok"]:
        update["rows"] = result["value"]["rows"]
    else:
        update["errors"] = [result["error"]]
    return update


def reply(state: State) -> dict:
    """Build the answer sentence from the first row."""
    first = state["rows"][0]
    args = state["args"]
    return {
        "answer": f"{args['sku']} in {args['region']}: bin {first['bin']} holds {first['count']}."
    }


def giveup(state: State) -> dict:
    """Answer honestly with the last reason instead of inventing stock."""
    return {"answer": f"Could not answer: {state['errors'][-1]}", "rows": []}


def _after_naive_fetch(state: State) -> str:
    return "reply" if state["ok"] else "giveup"


def _new_graph() -> StateGraph:
    graph = StateGraph(State)
    for node in (pick, fetch, reply, giveup):
        graph.add_node(node.__name__, node)
    graph.add_edge(START, "pick")
    graph.add_edge("pick", "fetch")
    graph.add_edge("reply", END)
    graph.add_edge("giveup", END)
    return graph


def build_naive():
    """Compile pick -> fetch -> reply | giveup (no repair)."""
    graph = _new_graph()
    graph.add_conditional_edges("fetch", _after_naive_fetch, ["reply", "giveup"])
    return graph.compile()


def _initial_state(order: dict) -> dict:
    return {"order": order, "errors": [], "calls": [], "attempts": 0, "fixes": []}


def run_naive(order: dict) -> dict:
    """Run one order through the naive graph.

    >>> run_naive({"sku": "SKU-9999", "region": "north", "limit": 2})["errors"]
    ['result:empty']
    """
    final = build_naive().invoke(_initial_state(order))
    return {key: final.get(key) for key in ("ok", "answer", "rows", "errors", "calls")}


# --------------------------------------------------------------------------
# Step 7: read the reason, fix, try again
# --------------------------------------------------------------------------

MAX_ATTEMPTS = 3


def _fallback_region(tool: str, args: dict) -> tuple[str, dict, str]:
    return tool, {**args, "region": FALLBACK_REGION}, f"region {args['region']!r} -> {FALLBACK_REGION!r}"


def _clamp_limit(tool: str, args: dict) -> tuple[str, dict, str]:
    limit = min(max(args["limit"], 1), MAX_ROWS)
    return tool, {**args, "limit": limit}, f"limit {args['limit']} -> {limit}"


def _use_stock_lookup(tool: str, args: dict) -> tuple[str, dict, str]:
    # legacy_stock ignores limit; stock_lookup honours it.
    return "stock_lookup", args, f"tool {tool} -> stock_lookup"


# reason -> fix(tool, args) returning (tool, args, description).
# result:empty and raised:* are left out on purpose: asking again gives the same.
REPAIRS = {
    "args:allowed:region": _fallback_region,
    "args:range:limit": _clamp_limit,
    "result:too_big": _use_stock_lookup,
}


def can_repair(reason: str) -> bool:
    """Whether ``REPAIRS`` knows a fix for this reason.

    >>> can_repair("args:allowed:region"), can_repair("result:empty")
    (True, False)
    """
    return reason in REPAIRS


def repair(state: State) -> dict:
    """Apply the fix for the last reason and record what was changed."""
    reason = state["errors"][-1]
    tool, args, description = REPAIRS[reason](state["tool"], dict(state["args"]))
    return {"tool": tool, "args": args, "fixes": [f"{reason}: {description}"]}


def _after_fetch(state: State) -> str:
    if state["ok"]:
        return "reply"
    # MAX_ATTEMPTS is looked up now, at run time, not when the graph was built.
    if can_repair(state["errors"][-1]) and state["attempts"] < MAX_ATTEMPTS:
        return "repair"
    return "giveup"


def build_graph():
    """Compile pick -> fetch -> (reply | repair -> fetch | giveup)."""
    graph = _new_graph()
    graph.add_node("repair", repair)
    graph.add_conditional_edges("fetch", _after_fetch, ["reply", "repair", "giveup"])
    graph.add_edge("repair", "fetch")
    return graph.compile()


def handle(order: dict) -> dict:
    """Run one order through the repairing graph.

    >>> handle({"sku": "SKU-1001", "region": "mars", "limit": 2})["attempts"]
    2
    """
    before = sum(CALLS.values())
    final = build_graph().invoke(_initial_state(order))
    result = {
        key: final.get(key)
        for key in ("ok", "answer", "rows", "errors", "calls", "fixes", "attempts")
    }
    result["tool_runs"] = sum(CALLS.values()) - before
    return result


# --------------------------------------------------------------------------
# Step 8: record what was measured
# --------------------------------------------------------------------------

_WRONG_ARGS = [
    ("stock_lookup", {"sku": "SKU-1001", "region": "north"}),
    ("stock_lookup", {"sku": "SKU-1001", "region": "north", "limit": 2, "color": "red"}),
    ("stock_lookup", {"sku": "SKU-1001", "region": "north", "limit": True}),
    ("stock_lookup", {"sku": "SKU-1001", "region": "mars", "limit": 2}),
    ("stock_lookup", {"sku": "SKU-1001", "region": "north", "limit": 99}),
    ("no_such_tool", {"sku": "SKU-1001", "region": "north", "limit": 2}),
]

_BAD_RESULTS = [
    ["not", "a", "dict"],
    {"sku": "SKU-1001", "region": "north", "rows": []},
    {"sku": "SKU-1001", "region": "north", "rows": [{"bin": "N-01", "count": 1}] * (MAX_ROWS + 1)},
    {"sku": "SKU-1001", "region": "north", "rows": [{"bin": "N-01", "count": -1}]},
]


def _total_runs() -> int:
    return sum(CALLS.values())


def _measure() -> dict:
    before = _total_runs()
    for name, args in _WRONG_ARGS:
        call_tool(name, args)
    blocked_before_call = _total_runs() - before

    bad_result_reasons = sorted(validate_result("stock_lookup", bad) for bad in _BAD_RESULTS)

    args = {"sku": "SKU-2040", "region": "central", "limit": 1}
    CACHE.pop(cache_key("stock_lookup", args), None)  # make the first call a real one
    call_tool("stock_lookup", args)
    before = _total_runs()
    call_tool("stock_lookup", args)
    memo_second_call_runs = _total_runs() - before

    repaired = handle({"sku": "SKU-1001", "region": "mars", "limit": 2})
    empty = handle({"sku": "SKU-9999", "region": "north", "limit": 2})
    return {
        "tools": sorted(TOOLS),
        "blocked_before_call": blocked_before_call,
        "bad_result_reasons": bad_result_reasons,
        "memo_second_call_runs": memo_second_call_runs,
        "repaired": bool(repaired["ok"] and repaired["fixes"]),
        "attempts": repaired["attempts"],
        "gave_up": not empty["ok"],
    }


def _markdown(report: dict) -> str:
    return "\n".join([
        "# Tool report",
        "",
        "## Where the tool contract is written",
        f"One table, `TOOLS`, holds {', '.join(report['tools'])}: function, arguments and result shape.",
        "",
        "## What was blocked before calling",
        f"Calls with wrong arguments ran a tool body {report['blocked_before_call']} times.",
        "",
        "## How returned results were not trusted",
        f"Bad results were refused as: {', '.join(report['bad_result_reasons'])}. "
        f"A repeated call ran the body {report['memo_second_call_runs']} more times.",
        "",
        "## How failure was handled as a path",
        f"Errors stay in the state; a wrong region was repaired: {report['repaired']} "
        f"after {report['attempts']} attempts; an empty result gave up: {report['gave_up']}. "
        f"The attempt limit is {MAX_ATTEMPTS}.",
        "",
    ])


def write_report(folder: str | Path | None = None) -> dict:
    """Measure the module now and write ``tool_report.json`` and ``tool_report.md``.

    >>> write_report("/tmp")["blocked_before_call"]
    0
    """
    folder = Path(folder) if folder is not None else Path(__file__).resolve().parent
    report = _measure()
    (folder / "tool_report.json").write_text(
        json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    (folder / "tool_report.md").write_text(_markdown(report), encoding="utf-8")
    return report


# ===========================================================================
# Part two: steps 9-11 (LAB_SPEC part two). They add names and change nothing
# that steps 1-8 define.
# ===========================================================================

# ---- Step 9: a strict coercion allowlist (labs/09_coercion.ipynb) ----

# The only changes coerce may make; anything else is left for validate_args to refuse.
# strip: a str argument's value loses its ASCII whitespace at both ends; lower: a value whose
# lower-case form alone is in `allowed`; int_from_str: ASCII digits 0-9 for an int argument.
COERCIONS = ("strip", "lower", "int_from_str")

# ASCII only: str.strip() would also remove non-breaking and ideographic spaces.
_SPACE_CHARS = " \t\n\r\x0b\x0c"
_DIGIT_CHARS = "0123456789"


def _coerce_value(rule: dict, value: Any) -> tuple[Any, list[str]]:
    """The coerced value of one argument and the names of the rules applied (none: unchanged)."""
    # bool, int, float and every other non-str value is never coerced.
    if not isinstance(value, str):
        return value, []
    bare = value.strip(_SPACE_CHARS)
    if rule.get("type") is int:
        # isdigit() would accept "３", "²" and "٣": only the ten ASCII digits may become a number.
        if bare and all(char in _DIGIT_CHARS for char in bare):
            return int(bare), ["int_from_str"]
        return value, []
    applied = ["strip"] if rule.get("type") is str and bare != value else []
    new = bare if applied else value
    allowed = rule.get("allowed")
    if allowed is not None and new not in allowed and new.lower() in allowed:
        new, applied = new.lower(), applied + ["lower"]
    return new, applied


def coerce(name: str, raw_args: dict) -> tuple[dict, list[dict]]:
    """Apply the COERCIONS rules to a copy of ``raw_args``; return it and one ledger entry per change.

    >>> coerce("stock_lookup", {"sku": "SKU-1001", "region": " North ", "limit": "３"})
    ({'sku': 'SKU-1001', 'region': 'north', 'limit': '３'}, [{'arg': 'region', 'from': ' North ', 'to': 'north', 'rule': 'strip+lower'}])
    """
    args = dict(raw_args)
    if name not in TOOLS:
        return args, []
    contract = TOOLS[name]["args"]
    coercions = []
    for arg, value in raw_args.items():
        if arg not in contract:
            continue
        new, applied = _coerce_value(contract[arg], value)
        if applied:
            args[arg] = new
            coercions.append({"arg": arg, "from": value, "to": new, "rule": "+".join(applied)})
    return args, coercions


def call_coerced(name: str, raw_args: dict) -> dict:
    """``coerce``, then ``call_tool`` on the coerced arguments; the result gains ``coercions``.

    >>> out = call_coerced("stock_lookup", {"sku": "SKU-1001", "region": "north", "limit": " 1 "})
    >>> out["ok"], out["coercions"][0]["to"]
    (True, 1)
    """
    args, coercions = coerce(name, raw_args)
    return {**call_tool(name, args), "coercions": coercions}

# ---- Step 10: errors as prompts (labs/10_errors_as_prompts.ipynb) ----

# str.strip() and str.isdigit() know Unicode: "３".isdigit() is True. The rules name ASCII only.
_ASCII_SPACE = " \t\n\r\x0b\x0c"
_ASCII_DIGITS = "0123456789"


def _one_edit_apart(a: str, b: str) -> bool:
    """Whether one insertion, deletion or substitution turns ``a`` into ``b``.

    >>> _one_edit_apart("nrth", "north"), _one_edit_apart("wast", "west"), _one_edit_apart("north", "north")
    (True, True, False)
    """
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b)) == 1
    # One deletion from the longer gives the shorter (never true when the lengths differ by 2 or more).
    longer, shorter = (a, b) if len(a) > len(b) else (b, a)
    return any(longer[:i] + longer[i + 1:] == shorter for i in range(len(longer)))


def _allowed_fix(value: Any, allowed: Any) -> Any:
    """The one allowed value ``value`` was meant to be, or ``None`` when there is no single honest fix."""
    if not isinstance(value, str):
        return None
    wanted = value.strip(_ASCII_SPACE).lower()
    if wanted in allowed:
        return wanted
    # Two candidates ("wast": east or west) is a coin flip, not a fix.
    near = {option for option in allowed if isinstance(option, str) and _one_edit_apart(wanted, option)}
    return near.pop() if len(near) == 1 else None


def _int_fix(value: Any) -> Any:
    """``int(value)`` when ``value`` is a str of ASCII digits (after strip), else ``None``."""
    if not isinstance(value, str):
        return None
    text = value.strip(_ASCII_SPACE)
    if text and all(char in _ASCII_DIGITS for char in text):
        return int(text)
    return None


def _fixed_args(name: str, reason: str, args: dict) -> "dict | None":
    """A corrected copy of ``args`` for the reasons with an honest fix; ``None`` for the others."""
    kind, _, arg = reason.partition(":")
    if kind == "extra":
        return {key: value for key, value in args.items() if key != arg}
    if kind not in ("allowed", "type"):
        # range, missing, unknown_tool: any fix would invent a value.
        return None
    rule = TOOLS[name]["args"][arg]
    if kind == "allowed":
        fixed = _allowed_fix(args[arg], rule["allowed"])
    elif rule["type"] is int:
        fixed = _int_fix(args[arg])
    else:
        fixed = None
    return None if fixed is None else {**args, arg: fixed}


def _suggestion(name: str, reason: str, args: dict) -> "dict | None":
    fixed = _fixed_args(name, reason, args)
    # A fix that would still be refused ("9" -> 9 for limit) is no suggestion.
    if fixed is None or validate_args(name, fixed):
        return None
    return fixed


def _accepted(rule: dict) -> str:
    """What the contract accepts for one argument, in words."""
    if "allowed" in rule:
        return "accepted values: " + ", ".join(repr(option) for option in rule["allowed"])
    # A missing bound shows as None: "1..None" still says what is accepted.
    return f"accepted: {rule.get('min')}..{rule.get('max')}"


def _message(name: str, reason: str, arg: "str | None", args: dict) -> str:
    """One sentence a caller (a model or a person) can act on."""
    kind = reason.partition(":")[0]
    if arg is None:
        return f"There is no tool {name!r}; the tools are {', '.join(map(repr, TOOLS))}."
    if kind == "missing":
        return f"{name} needs the argument {arg!r}, which was not given."
    shown = f"Argument {arg!r} = {args[arg]!r}"
    if kind in ("allowed", "range"):
        return f"{shown} is not accepted by {name}; {_accepted(TOOLS[name]['args'][arg])}."
    # extra and type: the reason's kind, the name and the value say what to change.
    return f"{shown} was refused by {name} ({kind})."


def explain(name: str, args: dict) -> dict:
    """Turn ``validate_args``' reason into a message and, when one honest fix exists, a suggestion.

    >>> explain("stock_lookup", {"sku": "SKU-1001", "region": "nrth", "limit": 2})["suggestion"]
    {'sku': 'SKU-1001', 'region': 'north', 'limit': 2}
    >>> explain("stock_lookup", {"sku": "SKU-1001", "region": "wast", "limit": 2})["suggestion"] is None
    True
    """
    reason = validate_args(name, args)
    if not reason:
        return {"error": "", "arg": None, "value": None, "message": "", "suggestion": None}
    arg = reason.partition(":")[2] or None
    return {"error": reason, "arg": arg, "value": args.get(arg) if arg else None,
            "message": _message(name, reason, arg, args), "suggestion": _suggestion(name, reason, args)}


def retry_with_suggestion(name: str, args: dict) -> dict:
    """Call the tool; when the arguments are refused and one honest fix exists, call once more with it.

    >>> result = retry_with_suggestion("stock_lookup", {"sku": "SKU-1001", "region": " North ", "limit": 1})
    >>> result["ok"], result["suggested"], result["explanation"]["error"]
    (True, True, 'allowed:region')
    """
    first = call_tool(name, args)
    # explain runs no body; its reason is the one call_tool refused with ("args:" + reason).
    explanation = explain(name, args)
    if not explanation["error"]:
        return {**first, "suggested": False, "explanation": None}
    if explanation["suggestion"] is None:
        return {**first, "suggested": False, "explanation": explanation}
    # The one retry: the refused call never ran a body, so at most one run in total.
    return {**call_tool(name, explanation["suggestion"]), "suggested": True, "explanation": explanation}


# ---- Step 11: identity resolution (labs/11_identity.ipynb) ----

PRODUCTS = {
    "SKU-1001": "Steel bolt M6",
    "SKU-2040": "Steel bolt M8",
    "SKU-3300": "Copper wire 2 mm",
    "SKU-4411": "Copper wire 4 mm",
    "SKU-5000": "Rubber gasket",
}


def _label(sku: str) -> str:
    return f"{PRODUCTS[sku]} ({sku})"


def resolve_sku(query: str) -> dict:
    """Turn a product name (or a sku) into one sku, or say why it cannot: never guess.

    >>> resolve_sku("  copper wire 4 MM ")
    {'kind': 'resolved', 'sku': 'SKU-4411'}
    >>> resolve_sku("bolt")["candidates"][0]
    {'sku': 'SKU-1001', 'label': 'Steel bolt M6 (SKU-1001)'}
    >>> resolve_sku("titanium")
    {'kind': 'not_found', 'query': 'titanium'}
    """
    q = query.strip().casefold()
    if not q:  # "" is inside every name: a blank query would otherwise match them all
        return {"kind": "not_found", "query": query}
    for sku in PRODUCTS:
        if sku.casefold() == q:
            return {"kind": "resolved", "sku": sku}
    matches = sorted(sku for sku, name in PRODUCTS.items() if q in name.casefold())
    exact = [sku for sku in matches if PRODUCTS[sku].casefold() == q]
    chosen = exact if len(exact) == 1 else matches  # an exact name wins over partial ones
    if len(chosen) == 1:
        (sku,) = chosen
        return {"kind": "resolved", "sku": sku}
    if not matches:
        return {"kind": "not_found", "query": query}
    candidates = [{"sku": sku, "label": _label(sku)} for sku in matches]
    return {"kind": "ambiguous", "query": query, "candidates": candidates}


def _question(found: dict, query: str) -> str:
    if found["kind"] == "not_found":
        return f"No product matches {query.strip()!r}: which product do you mean?"
    labels = "; ".join(c["label"] for c in found["candidates"])
    return f"{query.strip()!r} matches several products: {labels}. Which one do you mean?"


def handle_named(order: dict) -> dict:
    """``handle`` an order that names its product: resolve first, ask back instead of guessing.

    >>> handle_named({"product": "bolt", "region": "north", "limit": 2})["candidates"][1]["sku"]
    'SKU-2040'
    >>> handle_named({"product": "gasket", "region": "west", "limit": 1})["rows"]
    [{'bin': 'W-03', 'count': 2}]
    """
    found = resolve_sku(order["product"])
    if found["kind"] != "resolved":
        return {"ok": False, "kind": found["kind"], "candidates": found.get("candidates", []),
                "answer": _question(found, order["product"]), "tool_runs": 0}
    resolved = {key: value for key, value in order.items() if key != "product"}
    resolved["sku"] = found["sku"]
    return {**handle(resolved), "kind": "resolved"}
