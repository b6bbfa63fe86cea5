"""A correct learner module in another style: the graph's State has keys of the learner's own.

Differences from the reference on purpose: the order travels in
``State["request"]`` (not ``order``); ``pick`` reads it and sets ``tool``,
``args`` and ``plan`` (a one-line description of the call it chose), which the
other nodes read: ``fetch`` calls with ``state["tool"]``/``state["args"]``,
``repair`` rewrites all three, ``giveup`` names the plan it gave up on
besides the last reason, and ``status`` records ``"answered"`` or
``"gave up"``. The rest is written in a plain, explicit style with small
helpers; the cache key is ``name`` plus sorted ``key=value`` pairs through
``json.dumps`` per value; the report uses the English headings.
"""
from __future__ import annotations

import json
import operator
from pathlib import Path
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph

REGIONS = ["north", "south", "east", "west", "central"]
FALLBACK_REGION = "central"
MAX_ROWS = 5
CALLS = {"stock_lookup": 0, "legacy_stock": 0}

STOCK = [
    dict(sku="SKU-1001", region="north", bin="N-01", count=12),
    dict(sku="SKU-1001", region="north", bin="N-02", count=4),
    dict(sku="SKU-1001", region="south", bin="S-01", count=7),
    dict(sku="SKU-1001", region="central", bin="C-01", count=30),
    dict(sku="SKU-2040", region="east", bin="E-01", count=3),
    dict(sku="SKU-2040", region="west", bin="W-01", count=0),
    dict(sku="SKU-2040", region="central", bin="C-02", count=15),
    dict(sku="SKU-3300", region="north", bin="N-11", count=2),
    dict(sku="SKU-3300", region="north", bin="N-12", count=5),
    dict(sku="SKU-3300", region="north", bin="N-13", count=1),
    dict(sku="SKU-3300", region="north", bin="N-14", count=9),
    dict(sku="SKU-3300", region="north", bin="N-15", count=4),
    dict(sku="SKU-3300", region="north", bin="N-16", count=6),
    dict(sku="SKU-3300", region="north", bin="N-17", count=3),
    dict(sku="SKU-3300", region="central", bin="C-03", count=11),
    dict(sku="SKU-4411", region="south", bin="S-02", count=22),
    dict(sku="SKU-4411", region="west", bin="W-02", count=5),
    dict(sku="SKU-4411", region="central", bin="C-04", count=9),
    dict(sku="SKU-5000", region="west", bin="W-03", count=2),
]


def _rows_of(sku, region):
    return [dict(bin=row["bin"], count=row["count"]) for row in STOCK
            if row["sku"] == sku and row["region"] == region]


def stock_lookup(sku, region, limit):
    CALLS["stock_lookup"] += 1
    return dict(sku=sku, region=region, rows=_rows_of(sku, region)[:limit])


def legacy_stock(sku, region, limit):
    CALLS["legacy_stock"] += 1
    return dict(sku=sku, region=region, rows=_rows_of(sku, region))


def _args_contract():
    return {
        "sku": {"type": str, "required": True},
        "region": {"type": str, "required": True, "allowed": REGIONS},
        "limit": {"type": int, "required": True, "min": 1, "max": MAX_ROWS},
    }


def _returns_contract():
    return {
        "keys": {"sku": str, "region": str, "rows": list},
        "rows": {"max_len": MAX_ROWS, "item": {"bin": {"type": str}, "count": {"type": int, "min": 0}}},
    }


TOOLS = {
    "stock_lookup": {"fn": stock_lookup, "args": _args_contract(), "returns": _returns_contract()},
    "legacy_stock": {"fn": legacy_stock, "args": _args_contract(), "returns": _returns_contract()},
}


def _fits(value, kind):
    if isinstance(value, bool) and kind is not bool:
        return False
    return isinstance(value, kind)


def validate_args(name, args):
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
        if not _fits(value, rule["type"]):
            return f"type:{arg}"
        if "allowed" in rule and value not in rule["allowed"]:
            return f"allowed:{arg}"
        if "min" in rule and value < rule["min"]:
            return f"range:{arg}"
        if "max" in rule and value > rule["max"]:
            return f"range:{arg}"
    return ""


def validate_result(name, value):
    contract = TOOLS[name]["returns"]
    if not isinstance(value, dict):
        return "shape"
    for key, kind in contract["keys"].items():
        if key not in value or not _fits(value[key], kind):
            return "shape"
    item = contract["rows"]["item"]
    for row in value["rows"]:
        if not isinstance(row, dict):
            return "shape"
        for field, rule in item.items():
            if field not in row or not _fits(row[field], rule["type"]):
                return "shape"
    if not value["rows"]:
        return "empty"
    if len(value["rows"]) > contract["rows"]["max_len"]:
        return "too_big"
    for row in value["rows"]:
        for field, rule in item.items():
            if "min" in rule and row[field] < rule["min"]:
                return "range"
    return ""


CACHE = {}


def cache_key(name, args):
    return name + ":" + ",".join(f"{key}={json.dumps(args[key])}" for key in sorted(args))


def call_tool(name, args):
    reason = validate_args(name, args)
    if reason:
        return {"ok": False, "value": None, "error": f"args:{reason}"}
    key = cache_key(name, args)
    if key in CACHE:
        return {"ok": True, "value": CACHE[key], "error": ""}
    try:
        value = TOOLS[name]["fn"](**args)
    except Exception as exc:
        return {"ok": False, "value": None, "error": f"raised:{type(exc).__name__}"}
    reason = validate_result(name, value)
    if reason:
        return {"ok": False, "value": None, "error": f"result:{reason}"}
    CACHE[key] = value
    return {"ok": True, "value": value, "error": ""}


class State(TypedDict, total=False):
    request: dict          # the order, as the caller gave it
    tool: str
    args: dict
    plan: str              # what pick (or the last repair) decided, in words
    ok: bool
    rows: list
    answer: str
    status: str
    errors: Annotated[list, operator.add]
    calls: Annotated[list, operator.add]
    attempts: Annotated[int, operator.add]
    fixes: Annotated[list, operator.add]


def _describe(tool, args):
    return f"{tool}(sku={args['sku']!r}, region={args['region']!r}, limit={args['limit']!r})"


def pick(state):
    request = state["request"]
    tool = request.get("tool", "stock_lookup")
    args = {"sku": request["sku"], "region": request["region"], "limit": request["limit"]}
    return {"tool": tool, "args": args, "plan": _describe(tool, args)}


def fetch(state):
    tool = state["tool"]
    args = dict(state["args"])
    result = call_tool(tool, args)
    update = {"ok": result["ok"], "attempts": 1, "calls": [{"tool": tool, "args": args}]}
    if result["ok"]:
        update["rows"] = result["value"]["rows"]
    else:
        update["errors"] = [result["error"]]
    return update


def reply(state):
    first = state["rows"][0]
    args = state["args"]
    return {"answer": f"{args['sku']} in {args['region']}: bin {first['bin']} holds {first['count']}.",
            "status": "answered"}


def giveup(state):
    return {"answer": f"Gave up on {state['plan']}: {state['errors'][-1]}", "status": "gave up", "rows": []}


def build_naive():
    graph = StateGraph(State)
    graph.add_node("pick", pick)
    graph.add_node("fetch", fetch)
    graph.add_node("reply", reply)
    graph.add_node("giveup", giveup)
    graph.add_edge(START, "pick")
    graph.add_edge("pick", "fetch")
    graph.add_conditional_edges("fetch", _naive_next, ["reply", "giveup"])
    graph.add_edge("reply", END)
    graph.add_edge("giveup", END)
    return graph.compile()


def _naive_next(state):
    return "reply" if state["ok"] else "giveup"


def _first_state(order):
    return {"request": order, "errors": [], "calls": [], "attempts": 0, "fixes": []}


def run_naive(order):
    final = build_naive().invoke(_first_state(order))
    return {"ok": final["ok"], "answer": final["answer"], "rows": final.get("rows", []),
            "errors": final["errors"], "calls": final["calls"]}


MAX_ATTEMPTS = 3


def _to_fallback(tool, args):
    return tool, {**args, "region": FALLBACK_REGION}


def _clamp(tool, args):
    return tool, {**args, "limit": min(MAX_ROWS, max(1, args["limit"]))}


def _to_lookup(tool, args):
    return "stock_lookup", dict(args)


REPAIRS = {"args:allowed:region": _to_fallback, "args:range:limit": _clamp, "result:too_big": _to_lookup}


def can_repair(reason):
    return reason in REPAIRS


def repair(state):
    reason = state["errors"][-1]
    tool, args = REPAIRS[reason](state["tool"], state["args"])
    plan = _describe(tool, args)
    return {"tool": tool, "args": args, "plan": plan, "fixes": [f"{reason}: {state['plan']} -> {plan}"]}


def _next(state):
    if state["ok"]:
        return "reply"
    if can_repair(state["errors"][-1]) and state["attempts"] < MAX_ATTEMPTS:
        return "repair"
    return "giveup"


def build_graph():
    graph = StateGraph(State)
    graph.add_node("pick", pick)
    graph.add_node("fetch", fetch)
    graph.add_node("repair", repair)
    graph.add_node("reply", reply)
    graph.add_node("giveup", giveup)
    graph.add_edge(START, "pick")
    graph.add_edge("pick", "fetch")
    graph.add_conditional_edges("fetch", _next, ["reply", "repair", "giveup"])
    graph.add_edge("repair", "fetch")
    graph.add_edge("reply", END)
    graph.add_edge("giveup", END)
    return graph.compile()


def handle(order):
    before = sum(CALLS.values())
    final = build_graph().invoke(_first_state(order))
    return {"ok": final["ok"], "answer": final["answer"], "rows": final.get("rows", []),
            "errors": final["errors"], "calls": final["calls"], "fixes": final["fixes"],
            "attempts": final["attempts"], "tool_runs": sum(CALLS.values()) - before}


def write_report(folder=None):
    folder = Path(folder) if folder is not None else Path(__file__).resolve().parent

    before = sum(CALLS.values())
    call_tool("stock_lookup", {"sku": "SKU-1001", "region": "north", "limit": 0})
    call_tool("stock_lookup", {"sku": "SKU-1001", "region": "narnia", "limit": 2})
    call_tool("legacy_stock", {"sku": "SKU-1001", "region": "north", "limit": "2"})
    call_tool("nope", {"sku": "SKU-1001", "region": "north", "limit": 2})
    blocked = sum(CALLS.values()) - before

    reasons = sorted([
        validate_result("stock_lookup", 42),
        validate_result("stock_lookup", {"sku": "SKU-1001", "region": "north", "rows": []}),
        validate_result("stock_lookup", {"sku": "SKU-1001", "region": "north",
                                         "rows": [{"bin": "N-01", "count": 1}] * (MAX_ROWS + 1)}),
        validate_result("stock_lookup", {"sku": "SKU-1001", "region": "north", "rows": [{"bin": "N-01", "count": -1}]}),
    ])

    repeat = {"sku": "SKU-1001", "region": "central", "limit": 1}
    CACHE.pop(cache_key("stock_lookup", repeat), None)
    call_tool("stock_lookup", repeat)
    before = sum(CALLS.values())
    call_tool("stock_lookup", repeat)
    memo = sum(CALLS.values()) - before

    repaired = handle({"sku": "SKU-1001", "region": "mars", "limit": 2})
    empty = handle({"sku": "SKU-9999", "region": "north", "limit": 2})
    report = {
        "tools": sorted(TOOLS),
        "blocked_before_call": blocked,
        "bad_result_reasons": reasons,
        "memo_second_call_runs": memo,
        "repaired": bool(repaired["ok"] and repaired["fixes"]),
        "attempts": repaired["attempts"],
        "gave_up": not empty["ok"],
    }
    (folder / "tool_report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    (folder / "tool_report.md").write_text(
        f"# agtool report\n\n"
        f"## Where the tool contract is written\n\nTOOLS: {', '.join(report['tools'])}\n\n"
        f"## What was blocked before calling\n\nbody runs after wrong calls: {blocked}\n\n"
        f"## How returned results were not trusted\n\n{', '.join(reasons)}\n\n"
        f"## How failure was handled as a path\n\nEach order gets at most {MAX_ATTEMPTS} attempts.\n",
        encoding="utf-8")
    return report
