"""A correct learner module in another style: a class of classmethods, and a fetch that closes over the door.

Differences from the reference on purpose: ``_Lab`` is never instantiated;
its classmethods call each other through ``cls`` (``cls.validate_args``,
``cls.call_tool`` ...), and the module's names are those methods bound to the
class (``call_tool = _Lab.call_tool``). The tools are ``staticmethod``\\ s of
the class (so ``stock_lookup = _Lab.stock_lookup`` is the plain function,
also held by ``TOOLS``). ``fetch`` is made by ``_make_fetch(door)``, a closure
over the bound ``call_tool`` it was given at import. The cache key is the
``repr`` of a list holding the name and the sorted pairs, ``validate_result`` walks
a list of ``(reason, test)`` pairs in the spec's order, the report folder is
found with ``os.path``.
"""
from __future__ import annotations

import json
import operator
import os
from typing import Annotated, Callable, TypedDict

from langgraph.graph import END, START, StateGraph

REGIONS = ["north", "south", "east", "west", "central"]
FALLBACK_REGION = "central"
MAX_ROWS = 5
MAX_ATTEMPTS = 3
CALLS = {"stock_lookup": 0, "legacy_stock": 0}
CACHE = {}

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


def _fits(value, kind):
    return isinstance(value, kind) and (kind is bool or not isinstance(value, bool))


class _Lab:
    # ---------------------------------------------------------------- tools
    @staticmethod
    def stock_lookup(sku, region, limit):
        CALLS["stock_lookup"] += 1
        rows = [{"bin": r["bin"], "count": r["count"]} for r in STOCK if r["sku"] == sku and r["region"] == region]
        return {"sku": sku, "region": region, "rows": rows[:limit]}

    @staticmethod
    def legacy_stock(sku, region, limit):
        CALLS["legacy_stock"] += 1
        rows = [{"bin": r["bin"], "count": r["count"]} for r in STOCK if r["sku"] == sku and r["region"] == region]
        return {"sku": sku, "region": region, "rows": rows}

    # ---------------------------------------------------------------- door
    @classmethod
    def validate_args(cls, name, args):
        if name not in TOOLS:
            return "unknown_tool"
        contract = TOOLS[name]["args"]
        for arg in args:
            if arg not in contract:
                return "extra:" + arg
        for arg, rule in contract.items():
            if arg not in args:
                if rule.get("required"):
                    return "missing:" + arg
            elif not _fits(args[arg], rule["type"]):
                return "type:" + arg
            elif "allowed" in rule and args[arg] not in rule["allowed"]:
                return "allowed:" + arg
            elif ("min" in rule and args[arg] < rule["min"]) or ("max" in rule and args[arg] > rule["max"]):
                return "range:" + arg
        return ""

    @classmethod
    def _result_tests(cls, returns):
        keys, rows_rule = returns["keys"], returns["rows"]
        item = rows_rule["item"]

        def shape_ok(value):
            if not isinstance(value, dict):
                return False
            if not all(k in value and _fits(value[k], t) for k, t in keys.items()):
                return False
            return all(isinstance(row, dict) and all(f in row and _fits(row[f], r["type"]) for f, r in item.items())
                       for row in value["rows"])

        return [
            ("shape", shape_ok),
            ("empty", lambda value: len(value["rows"]) > 0),
            ("too_big", lambda value: len(value["rows"]) <= rows_rule["max_len"]),
            ("range", lambda value: all(row[f] >= r["min"] for row in value["rows"]
                                        for f, r in item.items() if "min" in r)),
        ]

    @classmethod
    def validate_result(cls, name, value):
        for reason, passes in cls._result_tests(TOOLS[name]["returns"]):
            if not passes(value):
                return reason
        return ""

    @classmethod
    def cache_key(cls, name, args):
        return repr([name, sorted(args.items())])

    @classmethod
    def call_tool(cls, name, args):
        reason = cls.validate_args(name, args)
        if reason:
            return {"ok": False, "value": None, "error": "args:" + reason}
        key = cls.cache_key(name, args)
        if key in CACHE:
            return {"ok": True, "value": CACHE[key], "error": ""}
        try:
            value = TOOLS[name]["fn"](**args)
        except Exception as exc:
            return {"ok": False, "value": None, "error": "raised:" + type(exc).__name__}
        reason = cls.validate_result(name, value)
        if reason:
            return {"ok": False, "value": None, "error": "result:" + reason}
        CACHE[key] = value
        return {"ok": True, "value": value, "error": ""}

    # ---------------------------------------------------------------- nodes (fetch is below, a closure)
    @classmethod
    def pick(cls, state):
        order = state["order"]
        return {"tool": order.get("tool", "stock_lookup"),
                "args": {"sku": order["sku"], "region": order["region"], "limit": order["limit"]}}

    @classmethod
    def reply(cls, state):
        first = state["rows"][0]
        return {"answer": "{0[sku]} in {0[region]} - bin {1[bin]}: {1[count]}".format(state["args"], first)}

    @classmethod
    def giveup(cls, state):
        return {"answer": "no answer because " + state["errors"][-1], "rows": []}

    @classmethod
    def can_repair(cls, reason):
        return reason in REPAIRS

    @classmethod
    def repair(cls, state):
        reason = state["errors"][-1]
        fix = REPAIRS[reason]
        tool, args = fix(state["tool"], dict(state["args"]))
        return {"tool": tool, "args": args, "fixes": [f"{reason} -> {fix.__name__}"]}

    @classmethod
    def _graph(cls, repairing):
        graph = StateGraph(State)
        graph.add_node("pick", cls.pick)
        graph.add_node("fetch", fetch)
        graph.add_node("reply", cls.reply)
        graph.add_node("giveup", cls.giveup)
        graph.add_edge(START, "pick")
        graph.add_edge("pick", "fetch")
        if repairing:
            graph.add_node("repair", cls.repair)
            graph.add_conditional_edges("fetch", cls._after_fetch, ["reply", "repair", "giveup"])
            graph.add_edge("repair", "fetch")
        else:
            graph.add_conditional_edges("fetch", lambda s: "reply" if s["ok"] else "giveup", ["reply", "giveup"])
        graph.add_edge("reply", END)
        graph.add_edge("giveup", END)
        return graph.compile()

    @classmethod
    def _after_fetch(cls, state):
        if state["ok"]:
            return "reply"
        if cls.can_repair(state["errors"][-1]) and state["attempts"] < MAX_ATTEMPTS:
            return "repair"
        return "giveup"

    @classmethod
    def build_naive(cls):
        return cls._graph(False)

    @classmethod
    def build_graph(cls):
        return cls._graph(True)

    @classmethod
    def run_naive(cls, order):
        final = cls.build_naive().invoke({"order": order, "errors": [], "calls": [], "attempts": 0})
        return {"ok": final["ok"], "answer": final["answer"], "rows": final.get("rows", []),
                "errors": final["errors"], "calls": final["calls"]}

    @classmethod
    def handle(cls, order):
        before = sum(CALLS.values())
        final = cls.build_graph().invoke({"order": order, "errors": [], "calls": [], "attempts": 0, "fixes": []})
        return {"ok": final["ok"], "answer": final["answer"], "rows": final.get("rows", []),
                "errors": final["errors"], "calls": final["calls"], "fixes": final["fixes"],
                "attempts": final["attempts"], "tool_runs": sum(CALLS.values()) - before}

    # ---------------------------------------------------------------- report
    @classmethod
    def write_report(cls, folder=None):
        if folder is None:
            folder = os.path.dirname(os.path.realpath(__file__))
        total = lambda: sum(CALLS.values())  # noqa: E731

        start = total()
        cls.call_tool("stock_lookup", {"sku": "SKU-3300", "region": "north", "limit": 8})
        cls.call_tool("legacy_stock", {"sku": "SKU-3300", "region": "nord", "limit": 2})
        cls.call_tool("stock_lookup", {"sku": "SKU-3300", "region": "north", "limit": 2.5})
        blocked = total() - start

        reasons = sorted([
            cls.validate_result("stock_lookup", 3300),
            cls.validate_result("stock_lookup", {"sku": "SKU-3300", "region": "north", "rows": []}),
            cls.validate_result("stock_lookup", {"sku": "SKU-3300", "region": "north",
                                                 "rows": [{"bin": "N-11", "count": 2}] * (MAX_ROWS + 1)}),
            cls.validate_result("stock_lookup", {"sku": "SKU-3300", "region": "north",
                                                 "rows": [{"bin": "N-11", "count": -2}]}),
        ])

        same = {"sku": "SKU-3300", "region": "north", "limit": 2}
        CACHE.pop(cls.cache_key("stock_lookup", same), None)
        cls.call_tool("stock_lookup", same)
        start = total()
        cls.call_tool("stock_lookup", same)
        memo = total() - start

        repaired = cls.handle({"sku": "SKU-3300", "region": "mars", "limit": 2})
        empty = cls.handle({"sku": "SKU-3300", "region": "east", "limit": 2})
        report = {"tools": sorted(TOOLS), "blocked_before_call": blocked, "bad_result_reasons": reasons,
                  "memo_second_call_runs": memo, "repaired": bool(repaired["ok"] and repaired["fixes"]),
                  "attempts": repaired["attempts"], "gave_up": not empty["ok"]}
        with open(os.path.join(folder, "tool_report.json"), "w", encoding="utf-8") as fh:
            fh.write(json.dumps(report))
        with open(os.path.join(folder, "tool_report.md"), "w", encoding="utf-8") as fh:
            fh.write("## 도구 계약을 어디에 적었나\nTOOLS\n"
                     f"## 부르기 전에 무엇을 막았나\n{blocked}\n"
                     f"## 돌려준 결과를 어떻게 믿지 않았나\n{', '.join(reasons)}\n"
                     f"## 실패를 어떤 경로로 다뤘나\n최대 {MAX_ATTEMPTS}번 시도합니다.\n")
        return report


stock_lookup = _Lab.stock_lookup
legacy_stock = _Lab.legacy_stock

TOOLS = {}
for _name in ("stock_lookup", "legacy_stock"):
    TOOLS[_name] = {
        "fn": getattr(_Lab, _name),
        "args": {"sku": {"type": str, "required": True},
                 "region": {"type": str, "required": True, "allowed": REGIONS},
                 "limit": {"type": int, "required": True, "min": 1, "max": MAX_ROWS}},
        "returns": {"keys": {"sku": str, "region": str, "rows": list},
                    "rows": {"max_len": MAX_ROWS, "item": {"bin": {"type": str}, "count": {"type": int, "min": 0}}}},
    }


def _fallback_region(tool, args):
    return tool, {**args, "region": FALLBACK_REGION}


def _clamp_limit(tool, args):
    return tool, {**args, "limit": min(MAX_ROWS, max(1, args["limit"]))}


def _use_stock_lookup(tool, args):
    return "stock_lookup", args


REPAIRS = {"args:allowed:region": _fallback_region, "args:range:limit": _clamp_limit,
           "result:too_big": _use_stock_lookup}


def _make_fetch(door: Callable) -> Callable:
    def fetch(state):
        tool, args = state["tool"], dict(state["args"])
        result = door(tool, args)
        update = {"ok": result["ok"], "attempts": 1, "calls": [{"tool": tool, "args": args}]}
        if result["ok"]:
            update["rows"] = result["value"]["rows"]
        else:
            update["errors"] = [result["error"]]
        return update

    return fetch


validate_args = _Lab.validate_args
validate_result = _Lab.validate_result
cache_key = _Lab.cache_key
call_tool = _Lab.call_tool
pick = _Lab.pick
fetch = _make_fetch(_Lab.call_tool)
reply = _Lab.reply
giveup = _Lab.giveup
can_repair = _Lab.can_repair
repair = _Lab.repair
build_naive = _Lab.build_naive
build_graph = _Lab.build_graph
run_naive = _Lab.run_naive
handle = _Lab.handle
write_report = _Lab.write_report
