"""A correct learner module in another style: closures keep the door's counts, and the report asks them.

Differences from the reference on purpose: ``_make_run_counter()`` returns
two closures over a private ``collections.Counter``: ``_run_counted(fn,
args)``, which ``call_tool`` uses to run a tool (it counts the run, then
calls ``fn(**args)``), and ``_runs_so_far()``. ``validate_args`` also
counts its verdicts in a closure (``_note_verdict``/``_verdicts``).
``write_report`` measures ``blocked_before_call`` and
``memo_second_call_runs`` with ``_runs_so_far()`` differences, never with
``CALLS``. Other choices: ``STOCK`` comes from a CSV string through the
``csv`` module; validation is one generator of reasons per argument; the
cache key is ``urllib.parse.urlencode`` of the sorted, ``repr``-ed pairs;
``State`` is declared with the functional ``TypedDict`` syntax; ``repair``
dispatches on the reason's prefix.
"""
from __future__ import annotations

import collections
import csv
import io
import json
import operator
import urllib.parse
from pathlib import Path
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph

REGIONS = ["north", "south", "east", "west", "central"]
FALLBACK_REGION = "central"
MAX_ROWS = 5
CALLS = {"stock_lookup": 0, "legacy_stock": 0}

_CSV = """sku,region,bin,count
SKU-1001,north,N-01,12
SKU-1001,north,N-02,4
SKU-1001,south,S-01,7
SKU-1001,central,C-01,30
SKU-2040,east,E-01,3
SKU-2040,west,W-01,0
SKU-2040,central,C-02,15
SKU-3300,north,N-11,2
SKU-3300,north,N-12,5
SKU-3300,north,N-13,1
SKU-3300,north,N-14,9
SKU-3300,north,N-15,4
SKU-3300,north,N-16,6
SKU-3300,north,N-17,3
SKU-3300,central,C-03,11
SKU-4411,south,S-02,22
SKU-4411,west,W-02,5
SKU-4411,central,C-04,9
SKU-5000,west,W-03,2
"""
STOCK = [{**row, "count": int(row["count"])} for row in csv.DictReader(io.StringIO(_CSV))]


def stock_lookup(sku, region, limit):
    CALLS["stock_lookup"] += 1
    rows = []
    for row in STOCK:
        if row["sku"] == sku and row["region"] == region and len(rows) < limit:
            rows.append({"bin": row["bin"], "count": row["count"]})
    return {"sku": sku, "region": region, "rows": rows}


def legacy_stock(sku, region, limit):
    CALLS["legacy_stock"] += 1
    rows = [{"bin": row["bin"], "count": row["count"]} for row in STOCK
            if row["sku"] == sku and row["region"] == region]
    return {"sku": sku, "region": region, "rows": rows}


_LIMIT_RULE = {"type": int, "required": True, "min": 1, "max": MAX_ROWS}
TOOLS = {
    "stock_lookup": {
        "fn": stock_lookup,
        "args": {"sku": {"type": str, "required": True},
                 "region": {"type": str, "required": True, "allowed": REGIONS},
                 "limit": dict(_LIMIT_RULE)},
        "returns": {"keys": {"sku": str, "region": str, "rows": list},
                    "rows": {"max_len": MAX_ROWS, "item": {"bin": {"type": str}, "count": {"type": int, "min": 0}}}},
    },
    "legacy_stock": {
        "fn": legacy_stock,
        "args": {"sku": {"type": str, "required": True},
                 "region": {"type": str, "required": True, "allowed": REGIONS},
                 "limit": dict(_LIMIT_RULE)},
        "returns": {"keys": {"sku": str, "region": str, "rows": list},
                    "rows": {"max_len": MAX_ROWS, "item": {"bin": {"type": str}, "count": {"type": int, "min": 0}}}},
    },
}


def _make_run_counter():
    runs = collections.Counter()

    def run_counted(fn, name, args):
        runs[name] += 1
        return fn(**args)

    def runs_so_far():
        return sum(runs.values())

    return run_counted, runs_so_far


_run_counted, _runs_so_far = _make_run_counter()


def _make_verdict_counter():
    seen = collections.Counter()

    def note(reason):
        seen[reason.split(":")[0] if reason else "valid"] += 1
        return reason

    return note, lambda: dict(seen)


_note_verdict, _verdicts = _make_verdict_counter()


def _type_matches(value, expected):
    return isinstance(value, expected) and not (isinstance(value, bool) and expected is not bool)


def _reasons_for(arg, value, rule):
    if not _type_matches(value, rule["type"]):
        yield "type:" + arg
        return
    if "allowed" in rule and value not in rule["allowed"]:
        yield "allowed:" + arg
    if "min" in rule and value < rule["min"]:
        yield "range:" + arg
    if "max" in rule and value > rule["max"]:
        yield "range:" + arg


def validate_args(name, args):
    if name not in TOOLS:
        return _note_verdict("unknown_tool")
    contract = TOOLS[name]["args"]
    for arg in args:
        if arg not in contract:
            return _note_verdict("extra:" + arg)
    for arg, rule in contract.items():
        if arg not in args:
            if rule.get("required"):
                return _note_verdict("missing:" + arg)
            continue
        for reason in _reasons_for(arg, args[arg], rule):
            return _note_verdict(reason)
    return _note_verdict("")


def validate_result(name, value):
    spec = TOOLS[name]["returns"]
    if not isinstance(value, dict):
        return "shape"
    for key, kind in spec["keys"].items():
        if key not in value or not _type_matches(value[key], kind):
            return "shape"
    item = spec["rows"]["item"]
    for row in value["rows"]:
        if not isinstance(row, dict):
            return "shape"
        if any(f not in row or not _type_matches(row[f], r["type"]) for f, r in item.items()):
            return "shape"
    if len(value["rows"]) == 0:
        return "empty"
    if len(value["rows"]) > spec["rows"]["max_len"]:
        return "too_big"
    if any("min" in r and row[f] < r["min"] for row in value["rows"] for f, r in item.items()):
        return "range"
    return ""


CACHE = {}


def cache_key(name, args):
    return name + "?" + urllib.parse.urlencode([(k, repr(args[k])) for k in sorted(args)])


def call_tool(name, args):
    reason = validate_args(name, args)
    if reason:
        return {"ok": False, "value": None, "error": f"args:{reason}"}
    key = cache_key(name, args)
    if key in CACHE:
        return {"ok": True, "value": CACHE[key], "error": ""}
    try:
        value = _run_counted(TOOLS[name]["fn"], name, args)
    except Exception as exc:
        return {"ok": False, "value": None, "error": f"raised:{type(exc).__name__}"}
    reason = validate_result(name, value)
    if reason:
        return {"ok": False, "value": None, "error": f"result:{reason}"}
    CACHE[key] = value
    return {"ok": True, "value": value, "error": ""}


State = TypedDict("State", {
    "order": dict,
    "tool": str,
    "args": dict,
    "ok": bool,
    "rows": list,
    "answer": str,
    "errors": Annotated[list, operator.add],
    "calls": Annotated[list, operator.add],
    "attempts": Annotated[int, operator.add],
    "fixes": Annotated[list, operator.add],
}, total=False)


def pick(state):
    order = state["order"]
    return {"tool": order.get("tool", "stock_lookup"),
            "args": {"sku": order["sku"], "region": order["region"], "limit": order["limit"]}}


def fetch(state):
    tool, args = state["tool"], dict(state["args"])
    result = call_tool(tool, args)
    update = {"ok": result["ok"], "attempts": 1, "calls": [{"tool": tool, "args": args, "ok": result["ok"]}]}
    update.update({"rows": result["value"]["rows"]} if result["ok"] else {"errors": [result["error"]]})
    return update


def reply(state):
    args, first = state["args"], state["rows"][0]
    return {"answer": f"{args['sku']} in {args['region']}: {first['count']} in {first['bin']}"}


def giveup(state):
    return {"answer": f"no answer ({state['errors'][-1]})", "rows": []}


MAX_ATTEMPTS = 3

REPAIRS = {
    "args:allowed:region": "set region to FALLBACK_REGION",
    "args:range:limit": "clamp limit into 1..MAX_ROWS",
    "result:too_big": "use stock_lookup, which honours limit",
}


def can_repair(reason):
    return reason in REPAIRS


def repair(state):
    reason = state["errors"][-1]
    tool, args = state["tool"], dict(state["args"])
    if reason.startswith("args:allowed:"):
        args["region"] = FALLBACK_REGION
    elif reason.startswith("args:range:"):
        args["limit"] = min(max(args["limit"], 1), MAX_ROWS)
    elif reason.startswith("result:"):
        tool = "stock_lookup"
    return {"tool": tool, "args": args, "fixes": [f"{reason}: {REPAIRS[reason]}"]}


def _graph(with_repair):
    graph = StateGraph(State)
    graph.add_node("pick", pick)
    graph.add_node("fetch", fetch)
    graph.add_node("reply", reply)
    graph.add_node("giveup", giveup)
    graph.add_edge(START, "pick")
    graph.add_edge("pick", "fetch")
    graph.add_edge("reply", END)
    graph.add_edge("giveup", END)
    if not with_repair:
        graph.add_conditional_edges("fetch", lambda s: "reply" if s["ok"] else "giveup", ["reply", "giveup"])
        return graph.compile()

    def after_fetch(state):
        if state["ok"]:
            return "reply"
        if can_repair(state["errors"][-1]) and state["attempts"] < MAX_ATTEMPTS:
            return "repair"
        return "giveup"

    graph.add_node("repair", repair)
    graph.add_conditional_edges("fetch", after_fetch, ["reply", "repair", "giveup"])
    graph.add_edge("repair", "fetch")
    return graph.compile()


def build_naive():
    return _graph(False)


def build_graph():
    return _graph(True)


def _start(order):
    return {"order": order, "errors": [], "calls": [], "attempts": 0, "fixes": []}


def run_naive(order):
    end = build_naive().invoke(_start(order))
    return {"ok": end["ok"], "answer": end["answer"], "rows": end.get("rows", []), "errors": end["errors"],
            "calls": end["calls"]}


def handle(order):
    start = sum(CALLS.values())
    end = build_graph().invoke(_start(order))
    return {"ok": end["ok"], "answer": end["answer"], "rows": end.get("rows", []), "errors": end["errors"],
            "calls": end["calls"], "fixes": end["fixes"], "attempts": end["attempts"],
            "tool_runs": sum(CALLS.values()) - start}


def write_report(folder=None):
    place = Path(folder if folder is not None else Path(__file__).resolve().parent)

    start = _runs_so_far()
    for args in ({"sku": "SKU-1001", "region": "south", "limit": True},
                 {"sku": "SKU-1001", "region": "sud", "limit": 1},
                 {"sku": "SKU-1001", "region": "south", "limit": 10},
                 {"sku": "SKU-1001", "region": "south", "limit": 1, "verbose": True}):
        call_tool("stock_lookup", args)
    blocked = _runs_so_far() - start

    reasons = sorted([
        validate_result("stock_lookup", None),
        validate_result("stock_lookup", {"sku": "SKU-1001", "region": "south", "rows": []}),
        validate_result("stock_lookup", {"sku": "SKU-1001", "region": "south",
                                         "rows": [{"bin": "S-01", "count": n} for n in range(MAX_ROWS + 1)]}),
        validate_result("stock_lookup", {"sku": "SKU-1001", "region": "south", "rows": [{"bin": "S-01", "count": -7}]}),
    ])

    args = {"sku": "SKU-1001", "region": "south", "limit": 1}
    CACHE.pop(cache_key("stock_lookup", args), None)
    call_tool("stock_lookup", args)
    start = _runs_so_far()
    call_tool("stock_lookup", args)
    memo = _runs_so_far() - start

    repaired = handle({"sku": "SKU-1001", "region": "mars", "limit": 2})
    empty = handle({"sku": "SKU-9999", "region": "north", "limit": 2})
    report = {"tools": sorted(TOOLS), "blocked_before_call": blocked, "bad_result_reasons": reasons,
              "memo_second_call_runs": memo, "repaired": bool(repaired["ok"] and repaired["fixes"]),
              "attempts": repaired["attempts"], "gave_up": not empty["ok"]}
    (place / "tool_report.json").write_text(json.dumps(report), encoding="utf-8")
    (place / "tool_report.md").write_text("\n".join([
        "## 도구 계약을 어디에 적었나",
        "TOOLS: " + ", ".join(report["tools"]),
        "## 부르기 전에 무엇을 막았나",
        f"blocked_before_call = {blocked} (verdicts so far: {_verdicts()})",
        "## 돌려준 결과를 어떻게 믿지 않았나",
        f"bad_result_reasons = {reasons}, memo_second_call_runs = {memo}",
        "## 실패를 어떤 경로로 다뤘나",
        f"MAX_ATTEMPTS = {MAX_ATTEMPTS}",
    ]) + "\n", encoding="utf-8")
    return report
