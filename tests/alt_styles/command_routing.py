"""A correct learner module in another style: LangGraph ``Command`` routing, no conditional edges.

Differences from the reference on purpose: the fetch node returns
``Command(update=..., goto=...)`` and ``repair`` jumps back with
``Command(goto="fetch")`` (so the drawn graph has fewer static edges);
validation is a dispatch table of per-key checks; the cache key joins
``k:v`` pairs with ``;``; ``can_repair`` uses a prefix table; the report
lists the Korean headings in another order.
"""
from __future__ import annotations

import json
import operator
from pathlib import Path
from typing import Annotated, Literal, TypedDict

from langgraph.graph import START, StateGraph
from langgraph.types import Command

REGIONS = ["north", "south", "east", "west", "central"]
FALLBACK_REGION = "central"
MAX_ROWS = 5
CALLS = {"stock_lookup": 0, "legacy_stock": 0}

_BINS = {
    ("SKU-1001", "north"): [("N-01", 12), ("N-02", 4)],
    ("SKU-1001", "south"): [("S-01", 7)],
    ("SKU-1001", "central"): [("C-01", 30)],
    ("SKU-2040", "east"): [("E-01", 3)],
    ("SKU-2040", "west"): [("W-01", 0)],
    ("SKU-2040", "central"): [("C-02", 15)],
    ("SKU-3300", "north"): [("N-11", 2), ("N-12", 5), ("N-13", 1), ("N-14", 9), ("N-15", 4), ("N-16", 6), ("N-17", 3)],
    ("SKU-3300", "central"): [("C-03", 11)],
    ("SKU-4411", "south"): [("S-02", 22)],
    ("SKU-4411", "west"): [("W-02", 5)],
    ("SKU-4411", "central"): [("C-04", 9)],
    ("SKU-5000", "west"): [("W-03", 2)],
}
STOCK = [{"sku": s, "region": r, "bin": b, "count": c} for (s, r), bins in _BINS.items() for b, c in bins]


def stock_lookup(sku, region, limit):
    CALLS["stock_lookup"] += 1
    rows = [{"bin": row["bin"], "count": row["count"]} for row in STOCK if row["sku"] == sku and row["region"] == region]
    del rows[limit:]
    return {"sku": sku, "region": region, "rows": rows}


def legacy_stock(sku, region, limit):
    CALLS["legacy_stock"] += 1
    return {"sku": sku, "region": region,
            "rows": [{"bin": row["bin"], "count": row["count"]} for row in STOCK if row["sku"] == sku and row["region"] == region]}


def _entry(fn):
    return {
        "fn": fn,
        "args": {"sku": {"type": str, "required": True},
                 "region": {"type": str, "required": True, "allowed": list(REGIONS)},
                 "limit": {"type": int, "required": True, "min": 1, "max": MAX_ROWS}},
        "returns": {"keys": {"sku": str, "region": str, "rows": list},
                    "rows": {"max_len": MAX_ROWS, "item": {"bin": {"type": str}, "count": {"type": int, "min": 0}}}},
    }


TOOLS = {"stock_lookup": _entry(stock_lookup), "legacy_stock": _entry(legacy_stock)}


def _type_ok(value, wanted):
    return isinstance(value, wanted) and not (isinstance(value, bool) and wanted is not bool)


_RULE_CHECKS = [
    ("type", lambda v, r: _type_ok(v, r["type"])),
    ("allowed", lambda v, r: "allowed" not in r or v in r["allowed"]),
    ("range", lambda v, r: r.get("min") is None or v >= r["min"]),
    ("range", lambda v, r: r.get("max") is None or v <= r["max"]),
]


def validate_args(name, args):
    if name not in TOOLS:
        return "unknown_tool"
    contract = TOOLS[name]["args"]
    for arg in args:
        if arg not in contract:
            return "extra:%s" % arg
    for arg, rule in contract.items():
        if arg not in args:
            if rule.get("required"):
                return "missing:%s" % arg
            continue
        for label, passes in _RULE_CHECKS:
            if not passes(args[arg], rule):
                return "%s:%s" % (label, arg)
    return ""


def validate_result(name, value):
    returns = TOOLS[name]["returns"]
    if not isinstance(value, dict):
        return "shape"
    for key, wanted in returns["keys"].items():
        if not (key in value and _type_ok(value[key], wanted)):
            return "shape"
    item = returns["rows"]["item"]
    for row in value["rows"]:
        if not isinstance(row, dict) or any(f not in row or not _type_ok(row[f], r["type"]) for f, r in item.items()):
            return "shape"
    if not value["rows"]:
        return "empty"
    if len(value["rows"]) > returns["rows"]["max_len"]:
        return "too_big"
    for row in value["rows"]:
        for f, r in item.items():
            if "min" in r and row[f] < r["min"]:
                return "range"
    return ""


CACHE = {}


def cache_key(name, args):
    return name + "(" + ";".join(f"{k}:{json.dumps(args[k])}" for k in sorted(args)) + ")"


def call_tool(name, args):
    reason = validate_args(name, args)
    if reason:
        return {"ok": False, "value": None, "error": "args:" + reason}
    key = cache_key(name, args)
    if key in CACHE:
        return {"ok": True, "value": CACHE[key], "error": ""}
    fn = TOOLS[name]["fn"]
    try:
        value = fn(**args)
    except Exception as problem:
        return {"ok": False, "value": None, "error": "raised:" + type(problem).__name__}
    reason = validate_result(name, value)
    if reason:
        return {"ok": False, "value": None, "error": "result:" + reason}
    CACHE[key] = value
    return {"ok": True, "value": value, "error": ""}


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


def pick(state) -> Command[Literal["fetch"]]:
    order = state["order"]
    return Command(update={"tool": order.get("tool", "stock_lookup"),
                           "args": {"sku": order["sku"], "region": order["region"], "limit": order["limit"]}},
                   goto="fetch")


def fetch(state):
    """One call_tool; the update only (routing is added by the graph builders)."""
    got = call_tool(state["tool"], state["args"])
    update = {"ok": got["ok"], "attempts": 1, "calls": [{"tool": state["tool"], "args": state["args"]}]}
    if got["ok"]:
        update["rows"] = got["value"]["rows"]
    else:
        update["errors"] = [got["error"]]
    return update


def reply(state):
    first = state["rows"][0]
    return {"answer": f"{state['args']['sku']} @ {state['args']['region']} -> {first['bin']} x{first['count']}"}


def giveup(state):
    return {"answer": "giving up after " + state["errors"][-1]}


def _naive_fetch(state) -> Command[Literal["reply", "giveup"]]:
    update = fetch(state)
    return Command(update=update, goto="reply" if update["ok"] else "giveup")


def _graph(fetch_node, with_repair):
    g = StateGraph(State)
    g.add_node("pick", pick)
    g.add_node("fetch", fetch_node)
    g.add_node("reply", reply)
    g.add_node("giveup", giveup)
    if with_repair:
        g.add_node("repair", repair)
    g.add_edge(START, "pick")
    g.set_finish_point("reply")
    g.set_finish_point("giveup")
    return g.compile()


def build_naive():
    return _graph(_naive_fetch, False)


def _result(final, keys):
    return {k: final.get(k, [] if k in ("errors", "calls", "fixes") else None) for k in keys}


def run_naive(order):
    return _result(build_naive().invoke({"order": order, "errors": [], "calls": []}),
                   ("ok", "answer", "rows", "errors", "calls"))


MAX_ATTEMPTS = 3

REPAIRS = {
    "args:allowed:region": ("args", "region", lambda old: FALLBACK_REGION),
    "args:range:limit": ("args", "limit", lambda old: 1 if old < 1 else MAX_ROWS),
    "result:too_big": ("tool", None, lambda old: "stock_lookup"),
}


def can_repair(reason):
    return reason in REPAIRS


def repair(state) -> Command[Literal["fetch"]]:
    reason = state["errors"][-1]
    where, field, fix = REPAIRS[reason]
    if where == "tool":
        update = {"tool": fix(state["tool"])}
    else:
        update = {"args": {**state["args"], field: fix(state["args"][field])}}
    update["fixes"] = [f"{reason} fixed"]
    return Command(update=update, goto="fetch")


def _repairing_fetch(state) -> Command[Literal["reply", "repair", "giveup"]]:
    update = fetch(state)
    if update["ok"]:
        return Command(update=update, goto="reply")
    made = state.get("attempts", 0) + 1
    if can_repair(update["errors"][-1]) and made < MAX_ATTEMPTS:
        return Command(update=update, goto="repair")
    return Command(update=update, goto="giveup")


def build_graph():
    return _graph(_repairing_fetch, True)


def handle(order):
    runs = sum(CALLS.values())
    final = build_graph().invoke({"order": order, "attempts": 0})
    out = _result(final, ("ok", "answer", "rows", "errors", "calls", "fixes", "attempts"))
    out["tool_runs"] = sum(CALLS.values()) - runs
    return out


def write_report(folder=None):
    target = Path(folder) if folder else Path(__file__).resolve().parent
    start = sum(CALLS.values())
    for bad in ({"sku": "SKU-1001", "region": "north", "limit": 9}, {"sku": "SKU-1001", "limit": 1},
                {"sku": "SKU-1001", "region": "north", "limit": True}):
        call_tool("stock_lookup", bad)
    blocked = sum(CALLS.values()) - start
    reasons = sorted([
        validate_result("stock_lookup", 17),
        validate_result("stock_lookup", {"sku": "x", "region": "y", "rows": []}),
        validate_result("stock_lookup", {"sku": "x", "region": "y", "rows": [{"bin": "b", "count": 1}] * 6}),
        validate_result("stock_lookup", {"sku": "x", "region": "y", "rows": [{"bin": "b", "count": -3}]}),
    ])
    probe = {"sku": "SKU-1001", "region": "south", "limit": 1}
    CACHE.pop(cache_key("stock_lookup", probe), None)
    call_tool("stock_lookup", probe)
    start = sum(CALLS.values())
    call_tool("stock_lookup", probe)
    memo = sum(CALLS.values()) - start
    fixed = handle({"sku": "SKU-2040", "region": "Nowhere", "limit": 2})
    empty = handle({"sku": "SKU-9999", "region": "west", "limit": 3})
    data = {"tools": sorted(TOOLS), "blocked_before_call": blocked, "bad_result_reasons": reasons,
            "memo_second_call_runs": memo, "repaired": bool(fixed["ok"] and fixed["fixes"]),
            "attempts": fixed["attempts"], "gave_up": not empty["ok"]}
    (target / "tool_report.json").write_text(json.dumps(data), encoding="utf-8")
    md = "\n".join([
        "## 돌려준 결과를 어떻게 믿지 않았나", f"{reasons}", "",
        "## 도구 계약을 어디에 적었나", "TOOLS", "",
        "## 실패를 어떤 경로로 다뤘나", f"시도는 최대 {MAX_ATTEMPTS}번.", "",
        "## 부르기 전에 무엇을 막았나", f"{blocked}", "",
    ])
    (target / "tool_report.md").write_text(md, encoding="utf-8")
    return data
