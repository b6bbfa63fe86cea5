"""A correct learner module in another style: hashed cache keys, set of regions, state-level repairs.

Differences from the reference on purpose: ``allowed`` is a set; validation
checks missing, type, range, allowed and only then extra; the cache key is a
SHA-256 hex digest; ``State`` is ``total=True`` and invoked without initial
values for the reducer fields; repairs are functions of the whole state
returning an update; ``calls`` entries carry more fields; the report writes
with ``os.path`` and a title line before the English headings.
"""
import hashlib
import itertools
import json
import operator
import os
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
]
STOCK += [{"sku": "SKU-3300", "region": "north", "bin": f"N-1{i}", "count": c}
          for i, c in zip(range(1, 8), (2, 5, 1, 9, 4, 6, 3))]
STOCK += [
    {"sku": "SKU-3300", "region": "central", "bin": "C-03", "count": 11},
    {"sku": "SKU-4411", "region": "south", "bin": "S-02", "count": 22},
    {"sku": "SKU-4411", "region": "west", "bin": "W-02", "count": 5},
    {"sku": "SKU-4411", "region": "central", "bin": "C-04", "count": 9},
    {"sku": "SKU-5000", "region": "west", "bin": "W-03", "count": 2},
]


def _matches(sku, region):
    for row in STOCK:
        if row["sku"] == sku and row["region"] == region:
            yield {"bin": row["bin"], "count": row["count"]}


def stock_lookup(sku, region, limit):
    CALLS["stock_lookup"] += 1
    return {"sku": sku, "region": region, "rows": list(itertools.islice(_matches(sku, region), limit))}


def legacy_stock(sku, region, limit):
    CALLS["legacy_stock"] += 1
    return {"sku": sku, "region": region, "rows": list(_matches(sku, region))}


TOOLS = {}
for _fn in (stock_lookup, legacy_stock):
    TOOLS[_fn.__name__] = {
        "fn": _fn,
        "args": {"sku": {"type": str, "required": True},
                 "region": {"type": str, "required": True, "allowed": set(REGIONS)},
                 "limit": {"type": int, "required": True, "min": 1, "max": MAX_ROWS}},
        "returns": {"keys": {"sku": str, "region": str, "rows": list},
                    "rows": {"max_len": MAX_ROWS,
                             "item": {"bin": {"type": str}, "count": {"type": int, "min": 0}}}},
    }


def _right_type(value, wanted):
    if wanted is int and isinstance(value, bool):
        return False
    return isinstance(value, wanted)


def validate_args(name, args):
    if name not in TOOLS:
        return "unknown_tool"
    contract = TOOLS[name]["args"]
    present = {a: r for a, r in contract.items() if a in args}
    for arg, rule in contract.items():
        if rule["required"] and arg not in args:
            return f"missing:{arg}"
    for arg, rule in present.items():
        if not _right_type(args[arg], rule["type"]):
            return f"type:{arg}"
    for arg, rule in present.items():
        if ("min" in rule and args[arg] < rule["min"]) or ("max" in rule and args[arg] > rule["max"]):
            return f"range:{arg}"
    for arg, rule in present.items():
        if "allowed" in rule and args[arg] not in rule["allowed"]:
            return f"allowed:{arg}"
    for arg in args:
        if arg not in contract:
            return f"extra:{arg}"
    return ""


def validate_result(name, value):
    spec = TOOLS[name]["returns"]
    item, max_len = spec["rows"]["item"], spec["rows"]["max_len"]
    try:
        if not all(_right_type(value[k], t) for k, t in spec["keys"].items()):
            return "shape"
        rows = value["rows"]
        if not all(isinstance(r, dict) and all(_right_type(r.get(f), rule["type"]) for f, rule in item.items())
                   for r in rows):
            return "shape"
    except (TypeError, KeyError, IndexError):
        return "shape"
    if not isinstance(value, dict):
        return "shape"
    if rows == []:
        return "empty"
    if len(rows) > max_len:
        return "too_big"
    if any(r[f] < rule["min"] for r in rows for f, rule in item.items() if "min" in rule):
        return "range"
    return ""


CACHE = {}


def cache_key(name, args):
    text = json.dumps([name, sorted(args.items())], default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _fail(error):
    return {"ok": False, "value": None, "error": error}


def call_tool(name, args):
    reason = validate_args(name, args)
    if reason != "":
        return _fail("args:" + reason)
    key = cache_key(name, args)
    cached = CACHE.get(key)
    if cached is not None:
        return {"ok": True, "value": cached, "error": ""}
    try:
        value = TOOLS[name]["fn"](**args)
    except Exception as exc:  # noqa: BLE001
        return _fail(f"raised:{type(exc).__name__}")
    reason = validate_result(name, value)
    if reason != "":
        return _fail("result:" + reason)
    CACHE[key] = value
    return {"ok": True, "value": value, "error": ""}


class State(TypedDict):
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
    return {"tool": order["tool"] if "tool" in order else "stock_lookup",
            "args": {"sku": order["sku"], "region": order["region"], "limit": order["limit"]}}


def fetch(state):
    attempt = state.get("attempts", 0) + 1
    result = call_tool(state["tool"], state["args"])
    entry = {"attempt": attempt, "tool": state["tool"], "args": state["args"], "error": result["error"]}
    update = {"ok": result["ok"], "calls": [entry], "attempts": 1}
    if result["ok"]:
        update["rows"] = result["value"]["rows"]
    else:
        update["errors"] = [result["error"]]
    return update


def reply(state):
    first, args = state["rows"][0], state["args"]
    return {"answer": f"There are {first['count']} units of {args['sku']} in bin {first['bin']} "
                      f"(region {args['region']})."}


def giveup(state):
    return {"answer": f"Stopped: {state['errors'][-1]}", "rows": []}


def _builder(repairing):
    g = StateGraph(State)
    nodes = {"pick": pick, "fetch": fetch, "reply": reply, "giveup": giveup}
    if repairing:
        nodes["repair"] = repair
    for name, fn in nodes.items():
        g.add_node(name, fn)
    g.add_edge(START, "pick")
    g.add_edge("pick", "fetch")
    g.add_edge("reply", END)
    g.add_edge("giveup", END)
    if repairing:
        g.add_edge("repair", "fetch")
        g.add_conditional_edges("fetch", decide, ["reply", "repair", "giveup"])
    else:
        g.add_conditional_edges("fetch", lambda s: ["giveup", "reply"][bool(s["ok"])], ["reply", "giveup"])
    return g.compile()


def build_naive():
    return _builder(False)


def _pack(final, keys):
    return {k: final.get(k, [] if k in ("rows", "errors", "calls", "fixes") else None) for k in keys}


def run_naive(order):
    return _pack(build_naive().invoke({"order": order}), ("ok", "answer", "rows", "errors", "calls"))


MAX_ATTEMPTS = 3


def _to_fallback(state):
    return {"args": {**state["args"], "region": FALLBACK_REGION}, "fixes": [f"region -> {FALLBACK_REGION}"]}


def _clamp(state):
    limit = state["args"]["limit"]
    new = 1 if limit < 1 else min(limit, MAX_ROWS)
    return {"args": {**state["args"], "limit": new}, "fixes": [f"limit {limit} -> {new}"]}


def _honest_tool(state):
    return {"tool": "stock_lookup", "fixes": ["use stock_lookup, which honours limit"]}


REPAIRS = {"args:allowed:region": _to_fallback, "args:range:limit": _clamp, "result:too_big": _honest_tool}


def can_repair(reason):
    return isinstance(reason, str) and reason in REPAIRS


def repair(state):
    return REPAIRS[state["errors"][-1]](state)


def decide(state):
    if state["ok"]:
        return "reply"
    tries_left = state["attempts"] < globals()["MAX_ATTEMPTS"]
    return "repair" if tries_left and can_repair(state["errors"][-1]) else "giveup"


def build_graph():
    return _builder(True)


def handle(order):
    before = sum(CALLS.values())
    final = build_graph().invoke({"order": order})
    out = _pack(final, ("ok", "answer", "rows", "errors", "calls", "fixes", "attempts"))
    out["tool_runs"] = sum(CALLS.values()) - before
    return out


def _count_runs(action):
    before = sum(CALLS.values())
    action()
    return sum(CALLS.values()) - before


def write_report(folder=None):
    folder = str(folder) if folder is not None else os.path.dirname(os.path.realpath(__file__))
    wrong = [("stock_lookup", {"sku": "SKU-1001", "region": "north", "limit": "2"}),
             ("legacy_stock", {"region": "north", "limit": 2}),
             ("nope", {})]
    blocked = _count_runs(lambda: [call_tool(n, a) for n, a in wrong])
    good = {"sku": "SKU-1001", "region": "south", "rows": [{"bin": "S-01", "count": 7}]}
    bad = [{**good, "rows": "S-01"}, {**good, "rows": []}, {**good, "rows": good["rows"] * 8},
           {**good, "rows": [{"bin": "S-01", "count": -7}]}]
    reasons = sorted(validate_result("stock_lookup", b) for b in bad)
    args = {"sku": "SKU-2040", "region": "east", "limit": 3}
    CACHE.pop(cache_key("stock_lookup", args), None)
    call_tool("stock_lookup", args)
    memo = _count_runs(lambda: call_tool("stock_lookup", args))
    fixed = handle({"sku": "SKU-3300", "region": "Central", "limit": 4})
    empty = handle({"sku": "SKU-2040", "region": "south", "limit": 1})
    report = {"tools": sorted(TOOLS), "blocked_before_call": blocked, "bad_result_reasons": reasons,
              "memo_second_call_runs": memo, "repaired": fixed["ok"] and bool(fixed["fixes"]),
              "attempts": fixed["attempts"], "gave_up": not empty["ok"]}
    with open(os.path.join(folder, "tool_report.json"), "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=2)
    lines = ["# What my tools.py measured", "",
             "## Where the tool contract is written", "The TOOLS table: fn, args, returns.", "",
             "## What was blocked before calling", f"Bodies run by bad calls: {blocked}.", "",
             "## How returned results were not trusted", "Reasons: " + ", ".join(reasons) + ".", "",
             "## How failure was handled as a path",
             f"A wrong region was repaired ({report['repaired']}); the loop stops after MAX_ATTEMPTS = {MAX_ATTEMPTS} tries."]
    with open(os.path.join(folder, "tool_report.md"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    return report
