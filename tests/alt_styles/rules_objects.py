"""A correct learner module in another style: rule objects, custom reducers, Korean report.

Differences from the reference on purpose: ``allowed`` is a tuple, validation
walks a list of small rule checks, the cache key is ``name|k=v&...``, the
cache stores whole results, ``State`` is ``total=True`` and its reducers are
hand-written functions, ``REPAIRS`` maps reasons to objects with an ``apply``
method, answers are worded differently, and the report uses the Korean
headings.
"""
import json
import os
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph

REGIONS = ["north", "south", "east", "west", "central"]
FALLBACK_REGION = "central"
MAX_ROWS = 5
CALLS = {"stock_lookup": 0, "legacy_stock": 0}

_TABLE = [
    ("SKU-1001", "north", "N-01", 12), ("SKU-1001", "north", "N-02", 4), ("SKU-1001", "south", "S-01", 7),
    ("SKU-1001", "central", "C-01", 30), ("SKU-2040", "east", "E-01", 3), ("SKU-2040", "west", "W-01", 0),
    ("SKU-2040", "central", "C-02", 15), ("SKU-3300", "north", "N-11", 2), ("SKU-3300", "north", "N-12", 5),
    ("SKU-3300", "north", "N-13", 1), ("SKU-3300", "north", "N-14", 9), ("SKU-3300", "north", "N-15", 4),
    ("SKU-3300", "north", "N-16", 6), ("SKU-3300", "north", "N-17", 3), ("SKU-3300", "central", "C-03", 11),
    ("SKU-4411", "south", "S-02", 22), ("SKU-4411", "west", "W-02", 5), ("SKU-4411", "central", "C-04", 9),
    ("SKU-5000", "west", "W-03", 2),
]
STOCK = [dict(zip(("sku", "region", "bin", "count"), row)) for row in _TABLE]


def stock_lookup(sku, region, limit):
    CALLS["stock_lookup"] = CALLS["stock_lookup"] + 1
    found = []
    for row in STOCK:
        if len(found) == limit:
            break
        if row["sku"] == sku and row["region"] == region:
            found.append({"bin": row["bin"], "count": row["count"]})
    return {"sku": sku, "region": region, "rows": found}


def legacy_stock(sku, region, limit):
    CALLS["legacy_stock"] = CALLS["legacy_stock"] + 1
    rows = [{"bin": r["bin"], "count": r["count"]} for r in STOCK if (r["sku"], r["region"]) == (sku, region)]
    return {"region": region, "sku": sku, "rows": rows}


def _contract():
    return {
        "sku": {"required": True, "type": str},
        "region": {"required": True, "type": str, "allowed": tuple(REGIONS)},
        "limit": {"required": True, "type": int, "max": MAX_ROWS, "min": 1},
    }


def _returns():
    return {"rows": {"item": {"count": {"min": 0, "type": int}, "bin": {"type": str}}, "max_len": MAX_ROWS},
            "keys": {"rows": list, "region": str, "sku": str}}


TOOLS = {
    "legacy_stock": {"returns": _returns(), "args": _contract(), "fn": legacy_stock},
    "stock_lookup": {"args": _contract(), "returns": _returns(), "fn": stock_lookup},
}


def _is(value, kind):
    if kind is int:
        return type(value) is int or (isinstance(value, int) and not isinstance(value, bool))
    return isinstance(value, kind)


class _Check:
    """One rule of one argument; ``problem`` returns a reason or None."""

    def __init__(self, arg, rule):
        self.arg, self.rule = arg, rule

    def problem(self, args):
        if self.arg not in args:
            return "missing:" + self.arg if self.rule.get("required", False) else None
        value = args[self.arg]
        if not _is(value, self.rule["type"]):
            return "type:" + self.arg
        if "allowed" in self.rule and value not in self.rule["allowed"]:
            return "allowed:" + self.arg
        low, high = self.rule.get("min"), self.rule.get("max")
        if (low is not None and value < low) or (high is not None and value > high):
            return "range:" + self.arg
        return None


def validate_args(name, args):
    tool = TOOLS.get(name)
    if tool is None:
        return "unknown_tool"
    checks = [_Check(arg, rule) for arg, rule in tool["args"].items()]
    for check in checks:
        reason = check.problem(args)
        if reason:
            return reason
    strangers = sorted(set(args) - set(tool["args"]))
    return "extra:" + strangers[0] if strangers else ""


def _row_ok(row, item):
    return isinstance(row, dict) and all(f in row and _is(row[f], r["type"]) for f, r in item.items())


def validate_result(name, value):
    spec = TOOLS[name]["returns"]
    if type(value) is not dict:
        return "shape"
    if any(k not in value or not _is(value[k], t) for k, t in spec["keys"].items()):
        return "shape"
    rows = value["rows"]
    item = spec["rows"]["item"]
    if not all(_row_ok(row, item) for row in rows):
        return "shape"
    if len(rows) == 0:
        return "empty"
    if len(rows) > spec["rows"]["max_len"]:
        return "too_big"
    for row in rows:
        if any("min" in r and row[f] < r["min"] for f, r in item.items()):
            return "range"
    return ""


CACHE = {}


def cache_key(name, args):
    return name + "|" + "&".join(f"{k}={args[k]!r}" for k in sorted(args))


def call_tool(name, args):
    problem = validate_args(name, args)
    if problem:
        return {"ok": False, "value": None, "error": f"args:{problem}"}
    key = cache_key(name, args)
    if key in CACHE:
        return dict(CACHE[key])
    function = TOOLS[name]["fn"]
    try:
        value = function(**args)
    except Exception as error:
        return {"ok": False, "value": None, "error": f"raised:{error.__class__.__name__}"}
    problem = validate_result(name, value)
    if problem:
        return {"ok": False, "value": None, "error": f"result:{problem}"}
    result = {"ok": True, "value": value, "error": ""}
    CACHE[key] = result
    return dict(result)


def _append(old, new):
    return list(old or []) + list(new or [])


def _plus(old, new):
    return (old or 0) + (new or 0)


class State(TypedDict):
    order: dict
    tool: str
    args: dict
    ok: bool
    rows: list
    answer: str
    errors: Annotated[list, _append]
    calls: Annotated[list, _append]
    attempts: Annotated[int, _plus]
    fixes: Annotated[list, _append]


def pick(state):
    order = state["order"]
    return {"tool": order.get("tool") or "stock_lookup",
            "args": {"sku": order["sku"], "region": order["region"], "limit": order["limit"]}}


def fetch(state):
    outcome = call_tool(state["tool"], dict(state["args"]))
    entry = {"tool": state["tool"], "args": dict(state["args"]), "ok": outcome["ok"]}
    if outcome["ok"]:
        return {"ok": True, "rows": outcome["value"]["rows"], "calls": [entry], "attempts": 1}
    return {"ok": False, "errors": [outcome["error"]], "calls": [entry], "attempts": 1}


def reply(state):
    top = state["rows"][0]
    a = state["args"]
    return {"answer": f"Bin {top['bin']} has {top['count']} of {a['sku']} ({a['region']})."}


def giveup(state):
    return {"answer": "I will not guess. Last problem: " + state["errors"][-1], "rows": []}


def _start(order):
    return {"order": order, "tool": "", "args": {}, "ok": False, "rows": [], "answer": "",
            "errors": [], "calls": [], "attempts": 0, "fixes": []}


def build_naive():
    g = StateGraph(State)
    g.add_node("pick", pick)
    g.add_node("fetch", fetch)
    g.add_node("reply", reply)
    g.add_node("giveup", giveup)
    g.add_edge(START, "pick")
    g.add_edge("pick", "fetch")
    g.add_conditional_edges("fetch", lambda s: "reply" if s["ok"] else "giveup", {"reply": "reply", "giveup": "giveup"})
    g.add_edge("reply", END)
    g.add_edge("giveup", END)
    return g.compile()


def run_naive(order):
    end = build_naive().invoke(_start(order))
    return {"ok": end["ok"], "answer": end["answer"], "rows": end["rows"], "errors": end["errors"],
            "calls": end["calls"]}


MAX_ATTEMPTS = 3


class _RegionFix:
    def apply(self, tool, args):
        return tool, dict(args, region=FALLBACK_REGION), "region replaced by the fallback region"


class _LimitFix:
    def apply(self, tool, args):
        clamped = max(1, min(MAX_ROWS, args["limit"]))
        return tool, dict(args, limit=clamped), f"limit clamped to {clamped}"


class _ToolFix:
    def apply(self, tool, args):
        return "stock_lookup", dict(args), "switched to the tool that honours limit"


REPAIRS = {"args:allowed:region": _RegionFix(), "args:range:limit": _LimitFix(), "result:too_big": _ToolFix()}


def can_repair(reason):
    return reason in REPAIRS


def repair(state):
    last = state["errors"][-1]
    tool, args, note = REPAIRS[last].apply(state["tool"], state["args"])
    return {"tool": tool, "args": args, "fixes": [note]}


def _route(state):
    if state["ok"]:
        return "reply"
    # MAX_ATTEMPTS is a global, so it is looked up now, not when the graph was built.
    return "repair" if can_repair(state["errors"][-1]) and state["attempts"] < MAX_ATTEMPTS else "giveup"


def build_graph():
    g = StateGraph(State)
    for name, node in (("pick", pick), ("fetch", fetch), ("repair", repair), ("reply", reply), ("giveup", giveup)):
        g.add_node(name, node)
    g.add_edge(START, "pick")
    g.add_edge("pick", "fetch")
    g.add_conditional_edges("fetch", _route, ["reply", "repair", "giveup"])
    g.add_edge("repair", "fetch")
    g.add_edge("reply", END)
    g.add_edge("giveup", END)
    return g.compile()


def handle(order):
    runs_before = sum(CALLS.values())
    end = build_graph().invoke(_start(order))
    out = {k: end[k] for k in ("ok", "answer", "rows", "errors", "calls", "fixes", "attempts")}
    out["tool_runs"] = sum(CALLS.values()) - runs_before
    return out


def _runs():
    return sum(CALLS.values())


def write_report(folder=None):
    folder = folder if folder is not None else os.path.dirname(os.path.abspath(__file__))
    start = _runs()
    for args in ({"sku": "SKU-1001"}, {"sku": "SKU-1001", "region": "nowhere", "limit": 1},
                 {"sku": "SKU-1001", "region": "north", "limit": 0}, {"sku": 5, "region": "north", "limit": 1}):
        call_tool("stock_lookup", args)
    call_tool("missing_tool", {})
    blocked = _runs() - start
    bad = [None, {"sku": "a", "region": "b", "rows": []},
           {"sku": "a", "region": "b", "rows": [{"bin": "x", "count": 1}] * 9},
           {"sku": "a", "region": "b", "rows": [{"bin": "x", "count": -5}]}]
    reasons = sorted(validate_result("legacy_stock", b) for b in bad)
    args = {"sku": "SKU-4411", "region": "south", "limit": 1}
    CACHE.pop(cache_key("stock_lookup", args), None)
    call_tool("stock_lookup", args)
    mark = _runs()
    call_tool("stock_lookup", args)
    memo = _runs() - mark
    fixed = handle({"sku": "SKU-1001", "region": "mars", "limit": 2})
    empty = handle({"sku": "SKU-9999", "region": "north", "limit": 2})
    data = {"tools": sorted(TOOLS.keys()), "blocked_before_call": blocked, "bad_result_reasons": reasons,
            "memo_second_call_runs": memo, "repaired": fixed["ok"] and len(fixed["fixes"]) > 0,
            "attempts": fixed["attempts"], "gave_up": not empty["ok"]}
    with open(os.path.join(folder, "tool_report.json"), "w", encoding="utf-8") as fh:
        json.dump(data, fh, ensure_ascii=False)
    text = (f"## 도구 계약을 어디에 적었나\n\nTOOLS: {len(data['tools'])}개 도구.\n\n"
            f"## 부르기 전에 무엇을 막았나\n\n잘못된 호출에서 본문 실행 {blocked}회.\n\n"
            f"## 돌려준 결과를 어떻게 믿지 않았나\n\n{', '.join(reasons)}; 두 번째 호출 실행 {memo}회.\n\n"
            f"## 실패를 어떤 경로로 다뤘나\n\n최대 시도 횟수는 {MAX_ATTEMPTS}회입니다.\n")
    with open(os.path.join(folder, "tool_report.md"), "w", encoding="utf-8") as fh:
        fh.write(text)
    return data
