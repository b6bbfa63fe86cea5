"""A correct learner module in another style: decorators, graphs compiled once, total=False state.

Differences from the reference on purpose: a decorator counts ``CALLS``
before the body runs and registers each tool in ``TOOLS``; ``allowed`` is a
frozenset; ``validate_args`` looks for extra arguments first; ``type(v) is``
checks instead of the bool special case; the cache key is the ``repr`` of
sorted items; both graphs are compiled once at import (the routing function
reads ``MAX_ATTEMPTS`` at run time); ``REPAIRS`` holds lambdas returning a
new order; answers and fixes are worded differently; ``pathlib`` writes the
report with the English headings in another order.
"""
from __future__ import annotations

import functools
import json
import operator
from pathlib import Path
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph

REGIONS = ["north", "south", "east", "west", "central"]
FALLBACK_REGION = "central"
MAX_ROWS = 5
CALLS = {"stock_lookup": 0, "legacy_stock": 0}

STOCK = []
for _line in """SKU-1001 north N-01 12; SKU-1001 north N-02 4; SKU-1001 south S-01 7; SKU-1001 central C-01 30;
SKU-2040 east E-01 3; SKU-2040 west W-01 0; SKU-2040 central C-02 15; SKU-3300 north N-11 2;
SKU-3300 north N-12 5; SKU-3300 north N-13 1; SKU-3300 north N-14 9; SKU-3300 north N-15 4;
SKU-3300 north N-16 6; SKU-3300 north N-17 3; SKU-3300 central C-03 11; SKU-4411 south S-02 22;
SKU-4411 west W-02 5; SKU-4411 central C-04 9; SKU-5000 west W-03 2""".split(";"):
    _sku, _region, _bin, _count = _line.split()
    STOCK.append({"sku": _sku, "region": _region, "bin": _bin, "count": int(_count)})

ARGS = {
    "sku": {"type": str, "required": True},
    "region": {"type": str, "required": True, "allowed": frozenset(REGIONS)},
    "limit": {"type": int, "required": True, "min": 1, "max": MAX_ROWS},
}
RETURNS = {"keys": {"sku": str, "region": str, "rows": list},
           "rows": {"max_len": MAX_ROWS, "item": {"bin": {"type": str}, "count": {"type": int, "min": 0}}}}
TOOLS = {}


def tool(fn):
    """Count every run of ``fn`` before its body, and list it in TOOLS."""

    @functools.wraps(fn)
    def counted(*args, **kwargs):
        CALLS[fn.__name__] += 1
        return fn(*args, **kwargs)

    TOOLS[fn.__name__] = {"fn": counted, "args": ARGS, "returns": RETURNS}
    return counted


def _rows(sku, region):
    return [{"bin": r["bin"], "count": r["count"]} for r in STOCK if r["sku"] == sku and r["region"] == region]


@tool
def stock_lookup(sku, region, limit):
    return {"sku": sku, "region": region, "rows": _rows(sku, region)[:limit]}


@tool
def legacy_stock(sku, region, limit):
    return {"sku": sku, "region": region, "rows": _rows(sku, region)}


def _typed(value, kind):
    return type(value) is kind or (kind is not int and isinstance(value, kind))


def validate_args(name, args):
    if name not in TOOLS:
        return "unknown_tool"
    rules = TOOLS[name]["args"]
    extra = [a for a in args if a not in rules]
    if extra:
        return "extra:" + str(extra[0])
    for arg, rule in rules.items():
        if arg not in args:
            if rule["required"]:
                return "missing:" + arg
            continue
        value = args[arg]
        if not _typed(value, rule["type"]):
            return "type:" + arg
        if value not in rule.get("allowed", [value]):
            return "allowed:" + arg
        if not rule.get("min", value) <= value <= rule.get("max", value):
            return "range:" + arg
    return ""


def validate_result(name, value):
    contract = TOOLS[name]["returns"]
    keys, rows_rule = contract["keys"], contract["rows"]
    well_formed = isinstance(value, dict) and all(k in value and _typed(value[k], t) for k, t in keys.items())
    if not well_formed:
        return "shape"
    for row in value["rows"]:
        if not isinstance(row, dict):
            return "shape"
        for field, rule in rows_rule["item"].items():
            if field not in row or not _typed(row[field], rule["type"]):
                return "shape"
    n = len(value["rows"])
    if n == 0:
        return "empty"
    if n > rows_rule["max_len"]:
        return "too_big"
    low = [row for row in value["rows"]
           for field, rule in rows_rule["item"].items() if "min" in rule and row[field] < rule["min"]]
    return "range" if low else ""


CACHE = {}


def cache_key(name, args):
    return repr((name, sorted(args.items())))


def call_tool(name, args):
    why = validate_args(name, args)
    if why:
        return {"ok": False, "value": None, "error": "args:" + why}
    key = cache_key(name, args)
    if key not in CACHE:
        try:
            got = TOOLS[name]["fn"](**args)
        except Exception as exc:
            return {"ok": False, "value": None, "error": "raised:" + type(exc).__name__}
        why = validate_result(name, got)
        if why:
            return {"ok": False, "value": None, "error": "result:" + why}
        CACHE[key] = got
    return {"ok": True, "value": CACHE[key], "error": ""}


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
    o = state["order"]
    return {"tool": o.get("tool", "stock_lookup"), "args": {k: o[k] for k in ("sku", "region", "limit")}}


def fetch(state):
    res = call_tool(state["tool"], state["args"])
    update = {"ok": res["ok"], "attempts": 1, "calls": [{"tool": state["tool"], "args": state["args"]}]}
    if res["ok"]:
        update["rows"] = res["value"]["rows"]
    else:
        update["errors"] = [res["error"]]
    return update


def reply(state):
    row = state["rows"][0]
    return {"answer": "{sku}/{region}: {count} in {bin}".format(sku=state["args"]["sku"],
                                                                region=state["args"]["region"], **row)}


def giveup(state):
    return {"answer": f"No answer ({state['errors'][-1]})."}


def _graph(with_repair):
    g = StateGraph(State)
    g.add_node("pick", pick)
    g.add_node("fetch", fetch)
    g.add_node("reply", reply)
    g.add_node("giveup", giveup)
    g.add_edge(START, "pick")
    g.add_edge("pick", "fetch")
    if with_repair:
        g.add_node("repair", repair)
        g.add_conditional_edges("fetch", _next_after_fetch, ["reply", "repair", "giveup"])
        g.add_edge("repair", "fetch")
    else:
        g.add_conditional_edges("fetch", lambda s: "reply" if s["ok"] else "giveup", ["reply", "giveup"])
    g.add_edge("reply", END)
    g.add_edge("giveup", END)
    return g.compile()


def build_naive():
    return _NAIVE


def run_naive(order):
    out = build_naive().invoke({"order": order})
    return {"ok": out["ok"], "answer": out["answer"], "rows": out.get("rows", []),
            "errors": out.get("errors", []), "calls": out.get("calls", [])}


MAX_ATTEMPTS = 3

REPAIRS = {
    "args:allowed:region": lambda tool, args: (tool, {**args, "region": FALLBACK_REGION}, "fallback region"),
    "args:range:limit": lambda tool, args: (tool, {**args, "limit": sorted((1, args["limit"], MAX_ROWS))[1]},
                                            "limit clamped"),
    "result:too_big": lambda tool, args: ("stock_lookup", args, "legacy -> stock_lookup"),
}


def can_repair(reason):
    return REPAIRS.get(reason) is not None


def repair(state):
    tool_name, args, what = REPAIRS[state["errors"][-1]](state["tool"], state["args"])
    return {"tool": tool_name, "args": args, "fixes": [what]}


def _next_after_fetch(state):
    if state["ok"]:
        return "reply"
    if state["attempts"] >= MAX_ATTEMPTS or not can_repair(state["errors"][-1]):
        return "giveup"
    return "repair"


def build_graph():
    return _FULL


_NAIVE = _graph(False)
_FULL = _graph(True)


def handle(order):
    start = sum(CALLS.values())
    out = build_graph().invoke({"order": order})
    result = {"ok": out["ok"], "answer": out["answer"], "rows": out.get("rows", []),
              "errors": out.get("errors", []), "calls": out.get("calls", []), "fixes": out.get("fixes", []),
              "attempts": out.get("attempts", 0)}
    result["tool_runs"] = sum(CALLS.values()) - start
    return result


def write_report(folder=None):
    where = Path(__file__).parent if folder is None else Path(folder)
    before = sum(CALLS.values())
    call_tool("stock_lookup", {"sku": "SKU-1001", "region": "north", "limit": 2, "size": "L"})
    call_tool("legacy_stock", {"sku": "SKU-1001", "region": "north", "limit": False})
    call_tool("stock_lookup", {"sku": "SKU-1001", "region": "Mars", "limit": 2})
    blocked = sum(CALLS.values()) - before
    samples = ["rows", {"sku": "s", "region": "r", "rows": []},
               {"sku": "s", "region": "r", "rows": [{"bin": "b", "count": 0}] * (MAX_ROWS + 2)},
               {"sku": "s", "region": "r", "rows": [{"bin": "b", "count": -1}]}]
    reasons = sorted(validate_result("stock_lookup", s) for s in samples)
    CACHE.clear()
    call_tool("stock_lookup", {"sku": "SKU-3300", "region": "central", "limit": 1})
    before = sum(CALLS.values())
    call_tool("stock_lookup", {"sku": "SKU-3300", "region": "central", "limit": 1})
    memo = sum(CALLS.values()) - before
    fixed = handle({"sku": "SKU-4411", "region": "atlantis", "limit": 1})
    empty = handle({"sku": "SKU-9999", "region": "east", "limit": 1})
    report = {"tools": sorted(TOOLS), "blocked_before_call": blocked, "bad_result_reasons": reasons,
              "memo_second_call_runs": memo, "repaired": bool(fixed["ok"] and fixed["fixes"]),
              "attempts": fixed["attempts"], "gave_up": not empty["ok"]}
    (where / "tool_report.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    sections = {
        "## How failure was handled as a path": f"Failures stay in `errors`; at most {MAX_ATTEMPTS} attempts.",
        "## Where the tool contract is written": "In `TOOLS`, filled by the `@tool` decorator.",
        "## What was blocked before calling": f"{blocked} body runs after bad arguments.",
        "## How returned results were not trusted": f"Reasons seen: {reasons}; repeat runs: {memo}.",
    }
    (where / "tool_report.md").write_text("\n\n".join(f"{h}\n{t}" for h, t in sections.items()) + "\n",
                                          encoding="utf-8")
    return report
