"""A correct learner module in another style: a namespace of the module's functions, and a staged door.

Differences from the reference on purpose: ``_API`` (a ``SimpleNamespace``
built at the bottom) holds the module's functions, and the module calls
through it: ``fetch`` runs ``_API.call_tool(...)``, the stages of the door run
``_API.validate_args``/``_API.validate_result``/``_API.cache_key``,
``handle`` compiles ``_API.build_graph()``. ``call_tool`` is a loop over
``_DOOR_STAGES``, a list of stage functions that each end the call or pass a
context on. ``write_report`` calls through ``functools.partial`` objects made
from the namespace's entries. ``REPAIRS`` maps reasons to small functions of
``(tool, args)``; the graph's conditional edges use path maps.
"""
from __future__ import annotations

import functools
import json
import operator
import types
from pathlib import Path
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph

REGIONS = ["north", "south", "east", "west", "central"]
FALLBACK_REGION = "central"
MAX_ROWS = 5
CALLS = {"stock_lookup": 0, "legacy_stock": 0}

_LAYOUT = {
    "SKU-1001": [("north", "N-01", 12), ("north", "N-02", 4), ("south", "S-01", 7), ("central", "C-01", 30)],
    "SKU-2040": [("east", "E-01", 3), ("west", "W-01", 0), ("central", "C-02", 15)],
    "SKU-3300": [("north", "N-11", 2), ("north", "N-12", 5), ("north", "N-13", 1), ("north", "N-14", 9),
                 ("north", "N-15", 4), ("north", "N-16", 6), ("north", "N-17", 3), ("central", "C-03", 11)],
    "SKU-4411": [("south", "S-02", 22), ("west", "W-02", 5), ("central", "C-04", 9)],
    "SKU-5000": [("west", "W-03", 2)],
}
STOCK = [{"sku": sku, "region": region, "bin": bin_, "count": count}
         for sku, places in _LAYOUT.items() for region, bin_, count in places]


def _select(sku, region):
    return [{"bin": row["bin"], "count": row["count"]} for row in STOCK
            if row["sku"] == sku and row["region"] == region]


def stock_lookup(sku, region, limit):
    CALLS["stock_lookup"] += 1
    rows = _select(sku, region)
    return {"sku": sku, "region": region, "rows": rows[:limit]}


def legacy_stock(sku, region, limit):
    CALLS["legacy_stock"] += 1
    return {"sku": sku, "region": region, "rows": _select(sku, region)}


_ARGS = {
    "sku": {"type": str, "required": True},
    "region": {"type": str, "required": True, "allowed": REGIONS},
    "limit": {"type": int, "required": True, "min": 1, "max": MAX_ROWS},
}
_RETURNS = {
    "keys": {"sku": str, "region": str, "rows": list},
    "rows": {"max_len": MAX_ROWS, "item": {"bin": {"type": str}, "count": {"type": int, "min": 0}}},
}
TOOLS = {
    "stock_lookup": {"fn": stock_lookup, "args": _ARGS, "returns": _RETURNS},
    "legacy_stock": {"fn": legacy_stock, "args": _ARGS, "returns": _RETURNS},
}


def _is_a(value, kind):
    if isinstance(value, bool):
        return kind is bool or kind is object
    return isinstance(value, kind)


def validate_args(name, args):
    entry = TOOLS.get(name) if isinstance(name, str) else None
    if entry is None:
        return "unknown_tool"
    spec = entry["args"]
    unknown = sorted(set(args) - set(spec))
    if unknown:
        return "extra:" + unknown[0]
    for arg, rule in spec.items():
        if arg not in args:
            if rule.get("required") is True:
                return "missing:" + arg
            continue
        value = args[arg]
        if not _is_a(value, rule["type"]):
            return "type:" + arg
        if "allowed" in rule and value not in rule["allowed"]:
            return "allowed:" + arg
        if ("min" in rule and value < rule["min"]) or ("max" in rule and value > rule["max"]):
            return "range:" + arg
    return ""


def validate_result(name, value):
    spec = TOOLS[name]["returns"]
    if not isinstance(value, dict):
        return "shape"
    for key, kind in spec["keys"].items():
        if key not in value or not _is_a(value[key], kind):
            return "shape"
    rows, item = value["rows"], spec["rows"]["item"]
    for row in rows:
        if not isinstance(row, dict):
            return "shape"
        for field, rule in item.items():
            if field not in row or not _is_a(row[field], rule["type"]):
                return "shape"
    if rows == []:
        return "empty"
    if len(rows) > spec["rows"]["max_len"]:
        return "too_big"
    for row in rows:
        for field, rule in item.items():
            if rule.get("min") is not None and row[field] < rule["min"]:
                return "range"
    return ""


CACHE = {}


def cache_key(name, args):
    parts = [f"{key}={args[key]!r}" for key in sorted(args)]
    return f"{name}?{'&'.join(parts)}"


# The door: each stage gets the call's context and returns the call's final dict, or None to go on.

def _stage_arguments(ctx):
    reason = _API.validate_args(ctx["name"], ctx["args"])
    if reason:
        return {"ok": False, "value": None, "error": "args:" + reason}
    return None


def _stage_cached(ctx):
    ctx["key"] = _API.cache_key(ctx["name"], ctx["args"])
    if ctx["key"] in CACHE:
        return {"ok": True, "value": CACHE[ctx["key"]], "error": ""}
    return None


def _stage_run(ctx):
    fn = TOOLS[ctx["name"]]["fn"]
    try:
        ctx["value"] = fn(**ctx["args"])
    except Exception as exc:
        return {"ok": False, "value": None, "error": "raised:" + type(exc).__name__}
    return None


def _stage_result(ctx):
    reason = _API.validate_result(ctx["name"], ctx["value"])
    if reason:
        return {"ok": False, "value": None, "error": "result:" + reason}
    return None


def _stage_store(ctx):
    CACHE[ctx["key"]] = ctx["value"]
    return {"ok": True, "value": ctx["value"], "error": ""}


_DOOR_STAGES = [_stage_arguments, _stage_cached, _stage_run, _stage_result, _stage_store]


def call_tool(name, args):
    ctx = {"name": name, "args": args}
    for stage in _DOOR_STAGES:
        done = stage(ctx)
        if done is not None:
            return done
    raise AssertionError("the last stage always ends the call")


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
    return {"tool": order.get("tool", "stock_lookup"),
            "args": {"sku": order["sku"], "region": order["region"], "limit": order["limit"]}}


def fetch(state):
    name = state["tool"]
    args = dict(state["args"])
    result = _API.call_tool(name, args)
    update = {"ok": result["ok"], "attempts": 1, "calls": [{"tool": name, "args": args}]}
    if result["ok"]:
        update["rows"] = list(result["value"]["rows"])
    else:
        update["errors"] = [result["error"]]
    return update


def reply(state):
    first = state["rows"][0]
    sku, region = state["args"]["sku"], state["args"]["region"]
    return {"answer": f"Found {sku} in {region}: {first['count']} units in bin {first['bin']}."}


def giveup(state):
    return {"answer": "Sorry, no stock answer: " + state["errors"][-1]}


MAX_ATTEMPTS = 3

REPAIRS = {
    "args:allowed:region": lambda tool, args: (tool, dict(args, region=FALLBACK_REGION), "region -> fallback"),
    "args:range:limit": lambda tool, args: (tool, dict(args, limit=sorted((1, args["limit"], MAX_ROWS))[1]),
                                            "limit clamped"),
    "result:too_big": lambda tool, args: ("stock_lookup", dict(args), "tool -> stock_lookup"),
}


def can_repair(reason):
    return reason in REPAIRS


def repair(state):
    reason = state["errors"][-1]
    tool, args, note = REPAIRS[reason](state["tool"], state["args"])
    return {"tool": tool, "args": args, "fixes": [f"{reason}: {note}"]}


def _after_naive(state):
    return "good" if state["ok"] else "bad"


def _after_fetch(state):
    if state["ok"]:
        return "good"
    if _API.can_repair(state["errors"][-1]) and state["attempts"] < MAX_ATTEMPTS:
        return "again"
    return "bad"


def _skeleton(nodes):
    graph = StateGraph(State)
    for name, fn in nodes.items():
        graph.add_node(name, fn)
    graph.add_edge(START, "pick")
    graph.add_edge("pick", "fetch")
    graph.add_edge("reply", END)
    graph.add_edge("giveup", END)
    return graph


def build_naive():
    graph = _skeleton({"pick": _API.pick, "fetch": _API.fetch, "reply": _API.reply, "giveup": _API.giveup})
    graph.add_conditional_edges("fetch", _after_naive, {"good": "reply", "bad": "giveup"})
    return graph.compile()


def build_graph():
    graph = _skeleton({"pick": _API.pick, "fetch": _API.fetch, "reply": _API.reply, "giveup": _API.giveup,
                       "repair": _API.repair})
    graph.add_conditional_edges("fetch", _after_fetch, {"good": "reply", "again": "repair", "bad": "giveup"})
    graph.add_edge("repair", "fetch")
    return graph.compile()


_EMPTY_RUN = {"ok": False, "answer": "", "rows": [], "errors": [], "calls": [], "fixes": [], "attempts": 0}


def run_naive(order):
    final = _API.build_naive().invoke({"order": order, "errors": [], "calls": [], "attempts": 0})
    return {key: final.get(key, _EMPTY_RUN[key]) for key in ("ok", "answer", "rows", "errors", "calls")}


def handle(order):
    start = sum(CALLS.values())
    final = _API.build_graph().invoke({"order": order, "errors": [], "calls": [], "attempts": 0, "fixes": []})
    result = {key: final.get(key, default) for key, default in _EMPTY_RUN.items()}
    result["tool_runs"] = sum(CALLS.values()) - start
    return result


def write_report(folder=None):
    target = Path(folder) if folder is not None else Path(__file__).parent.resolve()
    lookup = functools.partial(_API.call_tool, "stock_lookup")
    judge = functools.partial(_API.validate_result, "stock_lookup")

    before = sum(CALLS.values())
    for wrong in ({"sku": "SKU-1001", "region": "north", "limit": False},
                  {"sku": "SKU-1001", "region": "Mars", "limit": 1},
                  {"sku": "SKU-1001", "region": "north", "limit": -4},
                  {"region": "north", "limit": 1}):
        lookup(wrong)
    blocked = sum(CALLS.values()) - before

    ok_row = {"bin": "X-1", "count": 1}
    reasons = sorted([
        judge(("sku", "region", "rows")),
        judge({"sku": "S", "region": "r", "rows": []}),
        judge({"sku": "S", "region": "r", "rows": [ok_row] * (MAX_ROWS + 2)}),
        judge({"sku": "S", "region": "r", "rows": [{"bin": "X-1", "count": -1}]}),
    ])

    twice = {"sku": "SKU-1001", "region": "north", "limit": 1}
    CACHE.pop(_API.cache_key("stock_lookup", twice), None)
    lookup(twice)
    before = sum(CALLS.values())
    lookup(twice)
    memo = sum(CALLS.values()) - before

    repaired = _API.handle({"sku": "SKU-2040", "region": "mars", "limit": 2})
    empty = _API.handle({"sku": "SKU-9999", "region": "east", "limit": 2})
    report = {
        "tools": sorted(TOOLS),
        "blocked_before_call": blocked,
        "bad_result_reasons": reasons,
        "memo_second_call_runs": memo,
        "repaired": bool(repaired["ok"] and repaired["fixes"]),
        "attempts": repaired["attempts"],
        "gave_up": not empty["ok"],
    }
    target.joinpath("tool_report.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    target.joinpath("tool_report.md").write_text(
        "## Where the tool contract is written\n"
        f"TOOLS (a dict): {report['tools']}\n\n"
        "## What was blocked before calling\n"
        f"{report['blocked_before_call']} body runs for wrong arguments.\n\n"
        "## How returned results were not trusted\n"
        f"{report['bad_result_reasons']}; cached repeat ran {report['memo_second_call_runs']} bodies.\n\n"
        "## How failure was handled as a path\n"
        f"Attempt limit: {MAX_ATTEMPTS}. Repaired: {report['repaired']}. Gave up on empty: {report['gave_up']}.\n",
        encoding="utf-8")
    return report


_API = types.SimpleNamespace(
    validate_args=validate_args, validate_result=validate_result, cache_key=cache_key, call_tool=call_tool,
    pick=pick, fetch=fetch, reply=reply, giveup=giveup, repair=repair, can_repair=can_repair,
    build_naive=build_naive, build_graph=build_graph, handle=handle,
)
