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

# ---- Step 10: errors as prompts (labs/10_errors_as_prompts.ipynb) ----

# ---- Step 11: identity resolution (labs/11_identity.ipynb) ----
