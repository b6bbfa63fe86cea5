"""A correct learner module in another style: one routing table of the module's own functions.

Differences from the reference on purpose: every step reaches the others
through ``_ROUTES``, a module-level dict of the functions themselves built at
the bottom of the file. ``fetch`` calls ``_ROUTES["call"](tool, args)`` (never
the name ``call_tool``), ``call_tool`` checks with ``_ROUTES["check_args"]``,
``_ROUTES["check_result"]`` and keys with ``_ROUTES["key"]``, both graphs take
their nodes from the table and ``write_report`` measures through it. The
functions are long and defensive (explicit loops, early returns, one reason
at a time); the cache key is the ``repr`` of a sorted tuple; ``repair`` is
one ``if``/``elif`` chain over the reason.
"""
from __future__ import annotations

import json
import operator
import os
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph

# ----------------------------------------------------------------- step 1

REGIONS = ["north", "south", "east", "west", "central"]
FALLBACK_REGION = "central"
MAX_ROWS = 5
CALLS = {"stock_lookup": 0, "legacy_stock": 0}

STOCK = []
for _sku, _region, _bin, _count in (
    ("SKU-1001", "north", "N-01", 12),
    ("SKU-1001", "north", "N-02", 4),
    ("SKU-1001", "south", "S-01", 7),
    ("SKU-1001", "central", "C-01", 30),
    ("SKU-2040", "east", "E-01", 3),
    ("SKU-2040", "west", "W-01", 0),
    ("SKU-2040", "central", "C-02", 15),
    ("SKU-3300", "north", "N-11", 2),
    ("SKU-3300", "north", "N-12", 5),
    ("SKU-3300", "north", "N-13", 1),
    ("SKU-3300", "north", "N-14", 9),
    ("SKU-3300", "north", "N-15", 4),
    ("SKU-3300", "north", "N-16", 6),
    ("SKU-3300", "north", "N-17", 3),
    ("SKU-3300", "central", "C-03", 11),
    ("SKU-4411", "south", "S-02", 22),
    ("SKU-4411", "west", "W-02", 5),
    ("SKU-4411", "central", "C-04", 9),
    ("SKU-5000", "west", "W-03", 2),
):
    STOCK.append({"sku": _sku, "region": _region, "bin": _bin, "count": _count})


def stock_lookup(sku, region, limit):
    CALLS["stock_lookup"] += 1
    rows = []
    for row in STOCK:
        if row["sku"] != sku or row["region"] != region:
            continue
        if len(rows) >= limit:
            break
        rows.append({"bin": row["bin"], "count": row["count"]})
    return {"sku": sku, "region": region, "rows": rows}


def legacy_stock(sku, region, limit):
    CALLS["legacy_stock"] += 1
    rows = []
    for row in STOCK:
        if row["sku"] == sku and row["region"] == region:
            rows.append({"bin": row["bin"], "count": row["count"]})
    return {"sku": sku, "region": region, "rows": rows}


TOOLS = {}
for _fn in (stock_lookup, legacy_stock):
    TOOLS[_fn.__name__] = {
        "fn": _fn,
        "args": {
            "sku": {"type": str, "required": True},
            "region": {"type": str, "required": True, "allowed": REGIONS},
            "limit": {"type": int, "required": True, "min": 1, "max": MAX_ROWS},
        },
        "returns": {
            "keys": {"sku": str, "region": str, "rows": list},
            "rows": {"max_len": MAX_ROWS, "item": {"bin": {"type": str}, "count": {"type": int, "min": 0}}},
        },
    }

# ----------------------------------------------------------------- step 2


def _of_type(value, wanted):
    if wanted is not bool and type(value) is bool:
        return False
    return isinstance(value, wanted)


def validate_args(name, args):
    if name not in TOOLS:
        return "unknown_tool"
    rules = TOOLS[name]["args"]
    for given in args:
        if given not in rules:
            return "extra:" + given
    for arg in rules:
        rule = rules[arg]
        if arg not in args:
            if rule.get("required", False):
                return "missing:" + arg
            continue
        value = args[arg]
        if not _of_type(value, rule["type"]):
            return "type:" + arg
        if "allowed" in rule:
            if value not in rule["allowed"]:
                return "allowed:" + arg
        if "min" in rule:
            if value < rule["min"]:
                return "range:" + arg
        if "max" in rule:
            if value > rule["max"]:
                return "range:" + arg
    return ""

# ----------------------------------------------------------------- step 4


def validate_result(name, value):
    returns = TOOLS[name]["returns"]
    if not isinstance(value, dict):
        return "shape"
    for key in returns["keys"]:
        if key not in value:
            return "shape"
        if not _of_type(value[key], returns["keys"][key]):
            return "shape"
    item = returns["rows"]["item"]
    rows = value["rows"]
    for row in rows:
        if not isinstance(row, dict):
            return "shape"
        for field in item:
            if field not in row:
                return "shape"
            if not _of_type(row[field], item[field]["type"]):
                return "shape"
    if len(rows) == 0:
        return "empty"
    if len(rows) > returns["rows"]["max_len"]:
        return "too_big"
    for row in rows:
        for field in item:
            if "min" in item[field] and row[field] < item[field]["min"]:
                return "range"
    return ""

# ----------------------------------------------------------------- step 5

CACHE = {}


def cache_key(name, args):
    return repr((name, tuple(sorted(args.items()))))

# ----------------------------------------------------------------- step 3


def call_tool(name, args):
    problem = _ROUTES["check_args"](name, args)
    if problem != "":
        return {"ok": False, "value": None, "error": "args:" + problem}
    key = _ROUTES["key"](name, args)
    if key in CACHE:
        return {"ok": True, "value": CACHE[key], "error": ""}
    try:
        value = TOOLS[name]["fn"](**args)
    except Exception as exc:
        return {"ok": False, "value": None, "error": "raised:" + type(exc).__name__}
    problem = _ROUTES["check_result"](name, value)
    if problem != "":
        return {"ok": False, "value": None, "error": "result:" + problem}
    CACHE[key] = value
    return {"ok": True, "value": value, "error": ""}

# ----------------------------------------------------------------- step 6


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


def pick(state):
    order = state["order"]
    tool = "stock_lookup"
    if "tool" in order:
        tool = order["tool"]
    args = {}
    for field in ("sku", "region", "limit"):
        args[field] = order[field]
    return {"tool": tool, "args": args}


def fetch(state):
    tool = state["tool"]
    sent = dict(state["args"])
    outcome = _ROUTES["call"](tool, sent)
    update = {"ok": outcome["ok"], "attempts": 1, "calls": [{"tool": tool, "args": dict(sent)}]}
    if outcome["ok"]:
        update["rows"] = outcome["value"]["rows"]
    else:
        update["errors"] = [outcome["error"]]
    return update


def reply(state):
    row = state["rows"][0]
    used = state["args"]
    return {"answer": "Stock of %s in %s: bin %s has %d." % (used["sku"], used["region"], row["bin"], row["count"])}


def giveup(state):
    return {"answer": "No answer, the last error was " + state["errors"][-1], "rows": []}


def _naive_next(state):
    if state.get("ok"):
        return "reply"
    return "giveup"


def build_naive():
    graph = StateGraph(State)
    for name in ("pick", "fetch", "reply", "giveup"):
        graph.add_node(name, _ROUTES[name])
    graph.add_edge(START, "pick")
    graph.add_edge("pick", "fetch")
    graph.add_conditional_edges("fetch", _naive_next, {"reply": "reply", "giveup": "giveup"})
    graph.add_edge("reply", END)
    graph.add_edge("giveup", END)
    return graph.compile()


def run_naive(order):
    final = _ROUTES["naive"]().invoke({"order": order, "errors": [], "calls": [], "attempts": 0})
    return {
        "ok": final.get("ok", False),
        "answer": final.get("answer", ""),
        "rows": final.get("rows", []),
        "errors": final.get("errors", []),
        "calls": final.get("calls", []),
    }

# ----------------------------------------------------------------- step 7

MAX_ATTEMPTS = 3

REPAIRS = {
    "args:allowed:region": "use the fallback region",
    "args:range:limit": "clamp the limit into 1..MAX_ROWS",
    "result:too_big": "switch to stock_lookup",
}


def can_repair(reason):
    return reason in REPAIRS


def repair(state):
    reason = state["errors"][-1]
    tool = state["tool"]
    args = dict(state["args"])
    if reason == "args:allowed:region":
        args["region"] = FALLBACK_REGION
    elif reason == "args:range:limit":
        if args["limit"] < 1:
            args["limit"] = 1
        elif args["limit"] > MAX_ROWS:
            args["limit"] = MAX_ROWS
    elif reason == "result:too_big":
        tool = "stock_lookup"
    return {"tool": tool, "args": args, "fixes": [reason + " -> " + REPAIRS[reason]]}


def _repairing_next(state):
    if state.get("ok"):
        return "reply"
    last = state["errors"][-1]
    if not _ROUTES["can_repair"](last):
        return "giveup"
    if state["attempts"] >= MAX_ATTEMPTS:
        return "giveup"
    return "repair"


def build_graph():
    graph = StateGraph(State)
    for name in ("pick", "fetch", "reply", "giveup", "repair"):
        graph.add_node(name, _ROUTES[name])
    graph.add_edge(START, "pick")
    graph.add_edge("pick", "fetch")
    graph.add_conditional_edges("fetch", _repairing_next,
                                {"reply": "reply", "repair": "repair", "giveup": "giveup"})
    graph.add_edge("repair", "fetch")
    graph.add_edge("reply", END)
    graph.add_edge("giveup", END)
    return graph.compile()


def handle(order):
    runs_before = sum(CALLS.values())
    final = _ROUTES["graph"]().invoke({"order": order, "errors": [], "calls": [], "attempts": 0, "fixes": []})
    runs_after = sum(CALLS.values())
    return {
        "ok": final.get("ok", False),
        "answer": final.get("answer", ""),
        "rows": final.get("rows", []),
        "errors": final.get("errors", []),
        "calls": final.get("calls", []),
        "fixes": final.get("fixes", []),
        "attempts": final.get("attempts", 0),
        "tool_runs": runs_after - runs_before,
    }

# ----------------------------------------------------------------- step 8


def write_report(folder=None):
    if folder is None:
        folder = os.path.dirname(os.path.abspath(__file__))
    call = _ROUTES["call"]

    start = sum(CALLS.values())
    call("stock_lookup", {"sku": "SKU-4411", "region": "south", "limit": 0})
    call("stock_lookup", {"sku": "SKU-4411", "region": "atlantis", "limit": 1})
    call("legacy_stock", {"sku": "SKU-4411", "limit": 1})
    call("warehouse", {"sku": "SKU-4411", "region": "south", "limit": 1})
    blocked = sum(CALLS.values()) - start

    check = _ROUTES["check_result"]
    reasons = sorted([
        check("stock_lookup", "rows please"),
        check("stock_lookup", {"sku": "SKU-4411", "region": "south", "rows": []}),
        check("stock_lookup", {"sku": "SKU-4411", "region": "south",
                               "rows": [{"bin": "S-02", "count": 22}] * (MAX_ROWS + 1)}),
        check("stock_lookup", {"sku": "SKU-4411", "region": "south", "rows": [{"bin": "S-02", "count": -22}]}),
    ])

    again = {"sku": "SKU-4411", "region": "west", "limit": 1}
    CACHE.pop(_ROUTES["key"]("stock_lookup", again), None)
    call("stock_lookup", again)
    start = sum(CALLS.values())
    call("stock_lookup", again)
    second = sum(CALLS.values()) - start

    fixed = _ROUTES["handle"]({"sku": "SKU-4411", "region": "nowhere", "limit": 1})
    empty = _ROUTES["handle"]({"sku": "SKU-0000", "region": "south", "limit": 1})

    report = {
        "tools": sorted(TOOLS),
        "blocked_before_call": blocked,
        "bad_result_reasons": reasons,
        "memo_second_call_runs": second,
        "repaired": bool(fixed["ok"]) and len(fixed["fixes"]) > 0,
        "attempts": fixed["attempts"],
        "gave_up": not empty["ok"],
    }
    with open(os.path.join(folder, "tool_report.json"), "w", encoding="utf-8") as out:
        json.dump(report, out, indent=2)
    lines = [
        "# Report",
        "## Where the tool contract is written",
        "In TOOLS: " + ", ".join(report["tools"]) + ".",
        "## What was blocked before calling",
        "Wrong calls ran a body %d times." % report["blocked_before_call"],
        "## How returned results were not trusted",
        "Refused results: " + ", ".join(report["bad_result_reasons"]) + ".",
        "## How failure was handled as a path",
        "At most %d attempts per order; a bad region was repaired: %s." % (MAX_ATTEMPTS, report["repaired"]),
    ]
    with open(os.path.join(folder, "tool_report.md"), "w", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
    return report


_ROUTES = {
    "check_args": validate_args,
    "check_result": validate_result,
    "key": cache_key,
    "call": call_tool,
    "pick": pick,
    "fetch": fetch,
    "reply": reply,
    "giveup": giveup,
    "repair": repair,
    "can_repair": can_repair,
    "naive": build_naive,
    "graph": build_graph,
    "handle": handle,
}
