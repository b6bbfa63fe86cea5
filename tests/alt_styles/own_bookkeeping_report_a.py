"""A correct learner module in another style: the door keeps its own tally, and the report reads it.

Differences from the reference on purpose: ``call_tool`` keeps ``_TALLY``, a
module-level dict of what it did (``body_runs`` is raised right before the
tool function runs, next to ``refused``, ``cache_hits`` and ``failures``), and
``write_report`` measures ``blocked_before_call`` and
``memo_second_call_runs`` as differences of ``_TALLY["body_runs"]`` instead
of ``CALLS``. (``handle``'s ``tool_runs`` stays the ``CALLS`` difference, as
the spec defines it.) Also: the tools share one private scan with a
``limit=None`` meaning "all"; the cache key spells out each value's type;
``State`` keeps the spec's keys; the report has the English headings in a
list of ``(heading, text)`` pairs.
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


def _scan(sku, region, limit=None):
    found = []
    for row in STOCK:
        if limit is not None and len(found) == limit:
            break
        if row["sku"] == sku and row["region"] == region:
            found.append({"bin": row["bin"], "count": row["count"]})
    return found


def stock_lookup(sku, region, limit):
    CALLS["stock_lookup"] += 1
    return {"sku": sku, "region": region, "rows": _scan(sku, region, limit)}


def legacy_stock(sku, region, limit):
    CALLS["legacy_stock"] += 1
    return {"sku": sku, "region": region, "rows": _scan(sku, region)}


def _contract(fn):
    return {
        "fn": fn,
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


TOOLS = {"stock_lookup": _contract(stock_lookup), "legacy_stock": _contract(legacy_stock)}


def _right_type(value, expected):
    if expected is int and isinstance(value, bool):
        return False
    if expected is not bool and isinstance(value, bool) and issubclass(expected, int):
        return False
    return isinstance(value, expected)


def validate_args(name, args):
    if name not in TOOLS:
        return "unknown_tool"
    rules = TOOLS[name]["args"]
    for arg in args:
        if arg not in rules:
            return "extra:" + arg
    for arg, rule in rules.items():
        if arg not in args:
            if rule.get("required"):
                return "missing:" + arg
            continue
        value = args[arg]
        if not _right_type(value, rule["type"]):
            return "type:" + arg
        if "allowed" in rule and value not in rule["allowed"]:
            return "allowed:" + arg
        if "min" in rule and value < rule["min"]:
            return "range:" + arg
        if "max" in rule and value > rule["max"]:
            return "range:" + arg
    return ""


def validate_result(name, value):
    returns = TOOLS[name]["returns"]
    if not isinstance(value, dict):
        return "shape"
    for key, expected in returns["keys"].items():
        if key not in value or not _right_type(value[key], expected):
            return "shape"
    rows = value["rows"]
    item = returns["rows"]["item"]
    for row in rows:
        if not isinstance(row, dict):
            return "shape"
        for field, rule in item.items():
            if field not in row or not _right_type(row[field], rule["type"]):
                return "shape"
    if not rows:
        return "empty"
    if len(rows) > returns["rows"]["max_len"]:
        return "too_big"
    for row in rows:
        for field, rule in item.items():
            if "min" in rule and row[field] < rule["min"]:
                return "range"
    return ""


CACHE = {}


def cache_key(name, args):
    return name + "|" + "|".join(f"{k}:{type(v).__name__}:{v!r}" for k, v in sorted(args.items()))


# What the door did, counted by the door itself.
_TALLY = {"refused": 0, "cache_hits": 0, "body_runs": 0, "failures": 0}


def call_tool(name, args):
    reason = validate_args(name, args)
    if reason:
        _TALLY["refused"] += 1
        return {"ok": False, "value": None, "error": "args:" + reason}
    key = cache_key(name, args)
    if key in CACHE:
        _TALLY["cache_hits"] += 1
        return {"ok": True, "value": CACHE[key], "error": ""}
    _TALLY["body_runs"] += 1
    try:
        value = TOOLS[name]["fn"](**args)
    except Exception as exc:
        _TALLY["failures"] += 1
        return {"ok": False, "value": None, "error": "raised:" + type(exc).__name__}
    reason = validate_result(name, value)
    if reason:
        _TALLY["failures"] += 1
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


def pick(state):
    order = state["order"]
    return {"tool": order.get("tool", "stock_lookup"),
            "args": {"sku": order["sku"], "region": order["region"], "limit": order["limit"]}}


def fetch(state):
    name, args = state["tool"], dict(state["args"])
    out = call_tool(name, args)
    update = {"ok": out["ok"], "attempts": 1, "calls": [{"tool": name, "args": args, "error": out["error"]}]}
    if out["ok"]:
        update["rows"] = out["value"]["rows"]
    else:
        update["errors"] = [out["error"]]
    return update


def reply(state):
    row = state["rows"][0]
    return {"answer": "{sku} ({region}): bin {bin} holds {count}".format(
        sku=state["args"]["sku"], region=state["args"]["region"], bin=row["bin"], count=row["count"])}


def giveup(state):
    return {"answer": "cannot answer: " + state["errors"][-1], "rows": []}


def build_naive():
    graph = StateGraph(State)
    graph.add_node("pick", pick)
    graph.add_node("fetch", fetch)
    graph.add_node("reply", reply)
    graph.add_node("giveup", giveup)
    graph.add_edge(START, "pick")
    graph.add_edge("pick", "fetch")
    graph.add_conditional_edges("fetch", lambda s: "reply" if s["ok"] else "giveup", ["reply", "giveup"])
    graph.add_edge("reply", END)
    graph.add_edge("giveup", END)
    return graph.compile()


def run_naive(order):
    final = build_naive().invoke({"order": order, "errors": [], "calls": [], "attempts": 0})
    return {"ok": final["ok"], "answer": final["answer"], "rows": final.get("rows", []),
            "errors": final["errors"], "calls": final["calls"]}


MAX_ATTEMPTS = 3

REPAIRS = {
    "args:allowed:region": "region",
    "args:range:limit": "limit",
    "result:too_big": "tool",
}


def can_repair(reason):
    return reason in REPAIRS


def repair(state):
    reason = state["errors"][-1]
    what = REPAIRS[reason]
    tool, args = state["tool"], dict(state["args"])
    if what == "region":
        note = f"region {args['region']!r} replaced by {FALLBACK_REGION!r}"
        args["region"] = FALLBACK_REGION
    elif what == "limit":
        clamped = min(MAX_ROWS, max(1, args["limit"]))
        note = f"limit {args['limit']} clamped to {clamped}"
        args["limit"] = clamped
    else:
        note = f"{tool} replaced by stock_lookup"
        tool = "stock_lookup"
    return {"tool": tool, "args": args, "fixes": [note]}


def _decide(state):
    if state["ok"]:
        return "reply"
    if can_repair(state["errors"][-1]) and state["attempts"] < MAX_ATTEMPTS:
        return "repair"
    return "giveup"


def build_graph():
    graph = StateGraph(State)
    for name, fn in (("pick", pick), ("fetch", fetch), ("repair", repair), ("reply", reply), ("giveup", giveup)):
        graph.add_node(name, fn)
    graph.add_edge(START, "pick")
    graph.add_edge("pick", "fetch")
    graph.add_conditional_edges("fetch", _decide, ["reply", "repair", "giveup"])
    graph.add_edge("repair", "fetch")
    graph.add_edge("reply", END)
    graph.add_edge("giveup", END)
    return graph.compile()


def handle(order):
    before = sum(CALLS.values())
    final = build_graph().invoke({"order": order, "errors": [], "calls": [], "attempts": 0, "fixes": []})
    return {"ok": final["ok"], "answer": final["answer"], "rows": final.get("rows", []),
            "errors": final["errors"], "calls": final["calls"], "fixes": final["fixes"],
            "attempts": final["attempts"], "tool_runs": sum(CALLS.values()) - before}


def write_report(folder=None):
    folder = Path(__file__).resolve().parent if folder is None else Path(folder)

    runs = _TALLY["body_runs"]
    call_tool("stock_lookup", {"sku": "SKU-2040", "region": "west", "limit": 0})
    call_tool("stock_lookup", {"sku": "SKU-2040", "region": "moon", "limit": 1})
    call_tool("legacy_stock", {"sku": 2040, "region": "west", "limit": 1})
    call_tool("stock_lookup", {"sku": "SKU-2040", "limit": 1})
    blocked = _TALLY["body_runs"] - runs

    reasons = sorted([
        validate_result("stock_lookup", "not a result"),
        validate_result("stock_lookup", {"sku": "SKU-2040", "region": "west", "rows": []}),
        validate_result("stock_lookup", {"sku": "SKU-2040", "region": "west",
                                         "rows": [{"bin": "W-01", "count": 0}] * (MAX_ROWS + 1)}),
        validate_result("stock_lookup", {"sku": "SKU-2040", "region": "west", "rows": [{"bin": "W-01", "count": -5}]}),
    ])

    same = {"sku": "SKU-2040", "region": "east", "limit": 1}
    CACHE.pop(cache_key("stock_lookup", same), None)
    call_tool("stock_lookup", same)
    runs = _TALLY["body_runs"]
    call_tool("stock_lookup", same)
    memo = _TALLY["body_runs"] - runs

    repaired = handle({"sku": "SKU-4411", "region": "nowhere", "limit": 3})
    empty = handle({"sku": "SKU-4411", "region": "north", "limit": 3})
    report = {
        "tools": sorted(TOOLS),
        "blocked_before_call": blocked,
        "bad_result_reasons": reasons,
        "memo_second_call_runs": memo,
        "repaired": bool(repaired["ok"]) and bool(repaired["fixes"]),
        "attempts": repaired["attempts"],
        "gave_up": not empty["ok"],
    }
    with open(folder / "tool_report.json", "w", encoding="utf-8") as fh:
        json.dump(report, fh)
    sections = [
        ("Where the tool contract is written", "The TOOLS table: " + ", ".join(report["tools"])),
        ("What was blocked before calling", f"Tool bodies run by wrong calls: {blocked}"),
        ("How returned results were not trusted", "Reasons: " + ", ".join(reasons) + f"; repeat runs: {memo}"),
        ("How failure was handled as a path",
         f"Failures are values and errors; repaired={report['repaired']}, gave_up={report['gave_up']}; "
         f"no order gets more than {MAX_ATTEMPTS} attempts."),
    ]
    text = "# Tool report\n\n" + "\n\n".join(f"## {head}\n\n{body}" for head, body in sections) + "\n"
    (folder / "tool_report.md").write_text(text, encoding="utf-8")
    return report
