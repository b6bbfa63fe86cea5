"""A correct learner module in another style: the chosen call is one State key, ``call``.

Differences from the reference on purpose: ``State`` has no ``tool`` or
``args``; ``pick`` sets ``call = {"tool": ..., "args": {...}}``, ``fetch``
reads ``state["call"]``, ``repair`` replaces ``call`` with a new dict and
``reply`` reads the region from it. ``fetch`` also sets ``last_result`` (the
door's whole dict) and ``reply`` reads the rows from there as well as from
``rows``. Validation, result checks and repairs are written as small
``@staticmethod`` helpers grouped in plain classes used as namespaces; the
cache key is a ``hashlib.sha1`` of the canonical JSON (name included), shown
in hex; the report writes the Korean headings.
"""
from __future__ import annotations

import hashlib
import json
import operator
from pathlib import Path
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph

REGIONS = ["north", "south", "east", "west", "central"]
FALLBACK_REGION = "central"
MAX_ROWS = 5
CALLS = {"stock_lookup": 0, "legacy_stock": 0}

_RAW = (
    "SKU-1001 north N-01 12 | SKU-1001 north N-02 4 | SKU-1001 south S-01 7 | SKU-1001 central C-01 30 | "
    "SKU-2040 east E-01 3 | SKU-2040 west W-01 0 | SKU-2040 central C-02 15 | SKU-3300 north N-11 2 | "
    "SKU-3300 north N-12 5 | SKU-3300 north N-13 1 | SKU-3300 north N-14 9 | SKU-3300 north N-15 4 | "
    "SKU-3300 north N-16 6 | SKU-3300 north N-17 3 | SKU-3300 central C-03 11 | SKU-4411 south S-02 22 | "
    "SKU-4411 west W-02 5 | SKU-4411 central C-04 9 | SKU-5000 west W-03 2"
)
STOCK = []
for _chunk in _RAW.split("|"):
    _sku, _region, _bin, _count = _chunk.split()
    STOCK.append({"sku": _sku, "region": _region, "bin": _bin, "count": int(_count)})


def stock_lookup(sku, region, limit):
    CALLS["stock_lookup"] += 1
    rows = [{"bin": r["bin"], "count": r["count"]} for r in STOCK if r["sku"] == sku and r["region"] == region]
    return {"sku": sku, "region": region, "rows": rows[:limit]}


def legacy_stock(sku, region, limit):
    CALLS["legacy_stock"] += 1
    rows = [{"bin": r["bin"], "count": r["count"]} for r in STOCK if r["sku"] == sku and r["region"] == region]
    return {"sku": sku, "region": region, "rows": rows}


TOOLS = {}
for _name, _fn in (("stock_lookup", stock_lookup), ("legacy_stock", legacy_stock)):
    TOOLS[_name] = {
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


class _Types:
    @staticmethod
    def ok(value, kind):
        return isinstance(value, kind) and (kind is bool or type(value) is not bool)


class _Args:
    @staticmethod
    def extra(contract, args):
        return next((arg for arg in args if arg not in contract), None)

    @staticmethod
    def problem(arg, rule, value):
        if not _Types.ok(value, rule["type"]):
            return "type"
        if "allowed" in rule and value not in rule["allowed"]:
            return "allowed"
        if "min" in rule and value < rule["min"]:
            return "range"
        if "max" in rule and value > rule["max"]:
            return "range"
        return None


def validate_args(name, args):
    if name not in TOOLS:
        return "unknown_tool"
    contract = TOOLS[name]["args"]
    extra = _Args.extra(contract, args)
    if extra is not None:
        return "extra:" + extra
    for arg, rule in contract.items():
        if arg in args:
            kind = _Args.problem(arg, rule, args[arg])
            if kind:
                return kind + ":" + arg
        elif rule.get("required"):
            return "missing:" + arg
    return ""


class _Result:
    @staticmethod
    def shaped(returns, value):
        if not isinstance(value, dict):
            return False
        if any(key not in value or not _Types.ok(value[key], kind) for key, kind in returns["keys"].items()):
            return False
        item = returns["rows"]["item"]
        return all(isinstance(row, dict) and all(f in row and _Types.ok(row[f], r["type"]) for f, r in item.items())
                   for row in value["rows"])

    @staticmethod
    def below_min(returns, rows):
        item = returns["rows"]["item"]
        return any("min" in rule and row[field] < rule["min"] for row in rows for field, rule in item.items())


def validate_result(name, value):
    returns = TOOLS[name]["returns"]
    if not _Result.shaped(returns, value):
        return "shape"
    rows = value["rows"]
    if not rows:
        return "empty"
    if len(rows) > returns["rows"]["max_len"]:
        return "too_big"
    if _Result.below_min(returns, rows):
        return "range"
    return ""


CACHE = {}


def cache_key(name, args):
    canonical = json.dumps({"tool": name, "args": args}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha1(canonical.encode("utf-8")).hexdigest()


def call_tool(name, args):
    reason = validate_args(name, args)
    if reason:
        return {"ok": False, "value": None, "error": "args:" + reason}
    key = cache_key(name, args)
    if key in CACHE:
        return {"ok": True, "value": CACHE[key], "error": ""}
    try:
        value = TOOLS[name]["fn"](**args)
    except Exception as exc:
        return {"ok": False, "value": None, "error": "raised:" + type(exc).__name__}
    reason = validate_result(name, value)
    if reason:
        return {"ok": False, "value": None, "error": "result:" + reason}
    CACHE[key] = value
    return {"ok": True, "value": value, "error": ""}


class State(TypedDict, total=False):
    order: dict
    call: dict            # {"tool": str, "args": dict}: the call fetch makes next
    last_result: dict     # call_tool's dict of the last fetch
    ok: bool
    rows: list
    answer: str
    errors: Annotated[list, operator.add]
    calls: Annotated[list, operator.add]
    attempts: Annotated[int, operator.add]
    fixes: Annotated[list, operator.add]


def pick(state):
    order = state["order"]
    return {"call": {"tool": order.get("tool", "stock_lookup"),
                     "args": {"sku": order["sku"], "region": order["region"], "limit": order["limit"]}}}


def fetch(state):
    tool = state["call"]["tool"]
    args = dict(state["call"]["args"])
    result = call_tool(tool, args)
    update = {"ok": result["ok"], "last_result": result, "attempts": 1,
              "calls": [{"tool": tool, "args": dict(args)}]}
    if result["ok"]:
        update["rows"] = result["value"]["rows"]
    else:
        update["errors"] = [result["error"]]
    return update


def reply(state):
    first = state["last_result"]["value"]["rows"][0]
    args = state["call"]["args"]
    return {"answer": f"{args['sku']} - {args['region']} - bin {first['bin']} - count {first['count']}"}


def giveup(state):
    return {"answer": "stopped: " + state["errors"][-1], "rows": []}


MAX_ATTEMPTS = 3


class _Fixes:
    @staticmethod
    def region(call):
        return {"tool": call["tool"], "args": {**call["args"], "region": FALLBACK_REGION}}

    @staticmethod
    def limit(call):
        return {"tool": call["tool"], "args": {**call["args"], "limit": min(max(call["args"]["limit"], 1), MAX_ROWS)}}

    @staticmethod
    def tool(call):
        return {"tool": "stock_lookup", "args": dict(call["args"])}


REPAIRS = {"args:allowed:region": _Fixes.region, "args:range:limit": _Fixes.limit, "result:too_big": _Fixes.tool}


def can_repair(reason):
    return reason in REPAIRS


def repair(state):
    reason = state["errors"][-1]
    new_call = REPAIRS[reason](state["call"])
    return {"call": new_call, "fixes": [f"{reason}: now {new_call['tool']} with {new_call['args']}"]}


def _route_naive(state):
    return "reply" if state["ok"] else "giveup"


def _route(state):
    if state["ok"]:
        return "reply"
    if can_repair(state["errors"][-1]) and state["attempts"] < MAX_ATTEMPTS:
        return "repair"
    return "giveup"


def _base():
    graph = StateGraph(State)
    graph.add_node("pick", pick)
    graph.add_node("fetch", fetch)
    graph.add_node("reply", reply)
    graph.add_node("giveup", giveup)
    graph.add_edge(START, "pick")
    graph.add_edge("pick", "fetch")
    graph.add_edge("reply", END)
    graph.add_edge("giveup", END)
    return graph


def build_naive():
    graph = _base()
    graph.add_conditional_edges("fetch", _route_naive, ["reply", "giveup"])
    return graph.compile()


def build_graph():
    graph = _base()
    graph.add_node("repair", repair)
    graph.add_conditional_edges("fetch", _route, ["reply", "repair", "giveup"])
    graph.add_edge("repair", "fetch")
    return graph.compile()


def _initial(order):
    return {"order": order, "errors": [], "calls": [], "attempts": 0, "fixes": []}


def run_naive(order):
    final = build_naive().invoke(_initial(order))
    return {"ok": final["ok"], "answer": final["answer"], "rows": final.get("rows", []),
            "errors": final["errors"], "calls": final["calls"]}


def handle(order):
    before = sum(CALLS.values())
    final = build_graph().invoke(_initial(order))
    return {"ok": final["ok"], "answer": final["answer"], "rows": final.get("rows", []),
            "errors": final["errors"], "calls": final["calls"], "fixes": final["fixes"],
            "attempts": final["attempts"], "tool_runs": sum(CALLS.values()) - before}


def write_report(folder=None):
    folder = Path(__file__).resolve().parent if folder is None else Path(folder)

    start = sum(CALLS.values())
    for name, args in (("stock_lookup", {"sku": "SKU-4411", "region": "west", "limit": 100}),
                       ("legacy_stock", {"sku": "SKU-4411", "region": "WEST", "limit": 1}),
                       ("stock_lookup", {"sku": "SKU-4411", "region": "west"})):
        call_tool(name, args)
    blocked = sum(CALLS.values()) - start

    reasons = sorted(validate_result("stock_lookup", v) for v in (
        {"sku": "SKU-4411", "region": "west"},
        {"sku": "SKU-4411", "region": "west", "rows": []},
        {"sku": "SKU-4411", "region": "west", "rows": [{"bin": "W-02", "count": 5}] * (MAX_ROWS + 1)},
        {"sku": "SKU-4411", "region": "west", "rows": [{"bin": "W-02", "count": -5}]},
    ))

    same = {"sku": "SKU-4411", "region": "central", "limit": 1}
    CACHE.pop(cache_key("stock_lookup", same), None)
    call_tool("stock_lookup", same)
    start = sum(CALLS.values())
    call_tool("stock_lookup", same)
    memo = sum(CALLS.values()) - start

    repaired = handle({"sku": "SKU-1001", "region": "mars", "limit": 2})
    empty = handle({"sku": "SKU-9999", "region": "north", "limit": 2})
    report = {"tools": sorted(TOOLS), "blocked_before_call": blocked, "bad_result_reasons": reasons,
              "memo_second_call_runs": memo, "repaired": bool(repaired["ok"] and repaired["fixes"]),
              "attempts": repaired["attempts"], "gave_up": not empty["ok"]}
    with open(folder / "tool_report.json", "w", encoding="utf-8") as fh:
        json.dump(report, fh, ensure_ascii=False)
    with open(folder / "tool_report.md", "w", encoding="utf-8") as fh:
        fh.write("## 도구 계약을 어디에 적었나\n\n" + ", ".join(report["tools"]) + "\n\n")
        fh.write(f"## 부르기 전에 무엇을 막았나\n\n{blocked}\n\n")
        fh.write(f"## 돌려준 결과를 어떻게 믿지 않았나\n\n{', '.join(reasons)} / {memo}\n\n")
        fh.write(f"## 실패를 어떤 경로로 다뤘나\n\n시도 한도 {MAX_ATTEMPTS}\n")
    return report
