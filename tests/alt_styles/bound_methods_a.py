"""A correct learner module in another style: one service object, its bound methods as the module's names.

Differences from the reference on purpose: everything after the tools lives
in ``_Service``, whose methods call each other through ``self``
(``self.call_tool``, ``self.validate_args``, ``self.handle`` ...). One
instance is made at import and its bound methods are assigned to the names
the spec asks for (``call_tool = _svc.call_tool``, ``fetch = _svc.fetch`` ...).
The service reads the module's ``TOOLS``, ``CACHE``, ``CALLS`` and
``MAX_ATTEMPTS`` when it runs (never a copy). The graphs' nodes are the bound
methods too. The cache key is ``name`` + ``json.dumps(args, sort_keys=True)``
with a different separator; the report uses the English headings.
"""
from __future__ import annotations

import json
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph

REGIONS = ["north", "south", "east", "west", "central"]
FALLBACK_REGION = "central"
MAX_ROWS = 5
MAX_ATTEMPTS = 3
CALLS = {"stock_lookup": 0, "legacy_stock": 0}
CACHE: dict = {}

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


def stock_lookup(sku, region, limit):
    CALLS["stock_lookup"] += 1
    rows = [{"bin": r["bin"], "count": r["count"]} for r in STOCK if r["sku"] == sku and r["region"] == region]
    return {"sku": sku, "region": region, "rows": rows[:limit]}


def legacy_stock(sku, region, limit):
    CALLS["legacy_stock"] += 1
    rows = [{"bin": r["bin"], "count": r["count"]} for r in STOCK if r["sku"] == sku and r["region"] == region]
    return {"sku": sku, "region": region, "rows": rows}


_SHARED_ARGS = {
    "sku": {"type": str, "required": True},
    "region": {"type": str, "required": True, "allowed": REGIONS},
    "limit": {"type": int, "required": True, "min": 1, "max": MAX_ROWS},
}
_SHARED_RETURNS = {
    "keys": {"sku": str, "region": str, "rows": list},
    "rows": {"max_len": MAX_ROWS, "item": {"bin": {"type": str}, "count": {"type": int, "min": 0}}},
}
TOOLS = {
    "stock_lookup": {"fn": stock_lookup, "args": _SHARED_ARGS, "returns": _SHARED_RETURNS},
    "legacy_stock": {"fn": legacy_stock, "args": _SHARED_ARGS, "returns": _SHARED_RETURNS},
}


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


class _Service:
    """The door, the graphs and the report, as one object."""

    repairable = {
        "args:allowed:region": "the region becomes FALLBACK_REGION",
        "args:range:limit": "the limit is clamped into 1..MAX_ROWS",
        "result:too_big": "the tool becomes stock_lookup",
    }

    # -- step 2 / 4: contracts ---------------------------------------------
    @staticmethod
    def _kind_ok(value: Any, kind: type) -> bool:
        return isinstance(value, kind) and not (isinstance(value, bool) and kind is not bool)

    def validate_args(self, name, args):
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
                continue
            reason = self._value_reason(args[arg], rule)
            if reason:
                return reason + ":" + arg
        return ""

    def _value_reason(self, value, rule):
        if not self._kind_ok(value, rule["type"]):
            return "type"
        if "allowed" in rule and value not in rule["allowed"]:
            return "allowed"
        if "min" in rule and value < rule["min"]:
            return "range"
        if "max" in rule and value > rule["max"]:
            return "range"
        return ""

    def _row_ok(self, row, item):
        return isinstance(row, dict) and all(f in row and self._kind_ok(row[f], r["type"]) for f, r in item.items())

    def validate_result(self, name, value):
        returns = TOOLS[name]["returns"]
        if not isinstance(value, dict):
            return "shape"
        for key, kind in returns["keys"].items():
            if key not in value or not self._kind_ok(value[key], kind):
                return "shape"
        rows, item = value["rows"], returns["rows"]["item"]
        if not all(self._row_ok(row, item) for row in rows):
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

    # -- step 5 and 3: the door --------------------------------------------
    def cache_key(self, name, args):
        return f"{name}#{json.dumps(args, sort_keys=True)}"

    def call_tool(self, name, args):
        reason = self.validate_args(name, args)
        if reason:
            return {"ok": False, "value": None, "error": "args:" + reason}
        key = self.cache_key(name, args)
        if key in CACHE:
            return {"ok": True, "value": CACHE[key], "error": ""}
        try:
            value = TOOLS[name]["fn"](**args)
        except Exception as exc:
            return {"ok": False, "value": None, "error": "raised:" + type(exc).__name__}
        reason = self.validate_result(name, value)
        if reason:
            return {"ok": False, "value": None, "error": "result:" + reason}
        CACHE[key] = value
        return {"ok": True, "value": value, "error": ""}

    # -- step 6: nodes -----------------------------------------------------
    def pick(self, state):
        order = state["order"]
        return {"tool": order.get("tool", "stock_lookup"),
                "args": {"sku": order["sku"], "region": order["region"], "limit": order["limit"]}}

    def fetch(self, state):
        tool, args = state["tool"], dict(state["args"])
        result = self.call_tool(tool, args)
        update = {"ok": result["ok"], "attempts": 1, "calls": [{"tool": tool, "args": args}]}
        if result["ok"]:
            update["rows"] = result["value"]["rows"]
        else:
            update["errors"] = [result["error"]]
        return update

    def reply(self, state):
        first, args = state["rows"][0], state["args"]
        return {"answer": f"{args['sku']} in {args['region']}: bin {first['bin']} holds {first['count']}."}

    def giveup(self, state):
        return {"answer": "Could not answer: " + state["errors"][-1], "rows": []}

    def _naive_route(self, state):
        return "reply" if state["ok"] else "giveup"

    def _builder(self):
        graph = StateGraph(State)
        graph.add_node("pick", self.pick)
        graph.add_node("fetch", self.fetch)
        graph.add_node("reply", self.reply)
        graph.add_node("giveup", self.giveup)
        graph.add_edge(START, "pick")
        graph.add_edge("pick", "fetch")
        graph.add_edge("reply", END)
        graph.add_edge("giveup", END)
        return graph

    def build_naive(self):
        graph = self._builder()
        graph.add_conditional_edges("fetch", self._naive_route, ["reply", "giveup"])
        return graph.compile()

    def _start(self, order):
        return {"order": order, "errors": [], "calls": [], "attempts": 0, "fixes": []}

    def run_naive(self, order):
        final = self.build_naive().invoke(self._start(order))
        return {k: final.get(k) for k in ("ok", "answer", "rows", "errors", "calls")}

    # -- step 7: repair ----------------------------------------------------
    def can_repair(self, reason):
        return reason in self.repairable

    def repair(self, state):
        reason = state["errors"][-1]
        tool, args = state["tool"], dict(state["args"])
        if reason == "args:allowed:region":
            args["region"] = FALLBACK_REGION
        elif reason == "args:range:limit":
            args["limit"] = max(1, min(MAX_ROWS, args["limit"]))
        elif reason == "result:too_big":
            tool = "stock_lookup"
        return {"tool": tool, "args": args, "fixes": [f"{reason}: {self.repairable[reason]} ({tool} {args})"]}

    def _route(self, state):
        if state["ok"]:
            return "reply"
        if self.can_repair(state["errors"][-1]) and state["attempts"] < MAX_ATTEMPTS:
            return "repair"
        return "giveup"

    def build_graph(self):
        graph = self._builder()
        graph.add_node("repair", self.repair)
        graph.add_conditional_edges("fetch", self._route, ["reply", "repair", "giveup"])
        graph.add_edge("repair", "fetch")
        return graph.compile()

    def handle(self, order):
        before = sum(CALLS.values())
        final = self.build_graph().invoke(self._start(order))
        result = {k: final.get(k) for k in ("ok", "answer", "rows", "errors", "calls", "fixes", "attempts")}
        result["tool_runs"] = sum(CALLS.values()) - before
        return result

    # -- step 8: report ----------------------------------------------------
    def _runs(self):
        return sum(CALLS.values())

    def write_report(self, folder=None):
        folder = Path(folder) if folder is not None else Path(__file__).resolve().parent
        start = self._runs()
        self.call_tool("stock_lookup", {"sku": "SKU-1001", "region": "north", "limit": 42})
        self.call_tool("stock_lookup", {"sku": "SKU-1001", "region": "pluto", "limit": 2})
        self.call_tool("stock_lookup", {"sku": "SKU-1001", "region": "north", "limit": 2, "x": 1})
        self.call_tool("ghost_tool", {"sku": "SKU-1001", "region": "north", "limit": 2})
        blocked = self._runs() - start

        reasons = sorted([
            self.validate_result("stock_lookup", "nope"),
            self.validate_result("stock_lookup", {"sku": "SKU-1001", "region": "north", "rows": []}),
            self.validate_result("stock_lookup", {"sku": "SKU-1001", "region": "north",
                                                  "rows": [{"bin": "N-01", "count": 1}] * (MAX_ROWS + 1)}),
            self.validate_result("stock_lookup", {"sku": "SKU-1001", "region": "north",
                                                  "rows": [{"bin": "N-01", "count": -1}]}),
        ])

        args = {"sku": "SKU-1001", "region": "north", "limit": 1}
        CACHE.pop(self.cache_key("stock_lookup", args), None)
        self.call_tool("stock_lookup", args)
        start = self._runs()
        self.call_tool("stock_lookup", args)
        memo = self._runs() - start

        repaired = self.handle({"sku": "SKU-1001", "region": "mars", "limit": 2})
        empty = self.handle({"sku": "SKU-9999", "region": "north", "limit": 2})
        report = {"tools": sorted(TOOLS), "blocked_before_call": blocked, "bad_result_reasons": reasons,
                  "memo_second_call_runs": memo, "repaired": bool(repaired["ok"] and repaired["fixes"]),
                  "attempts": repaired["attempts"], "gave_up": not empty["ok"]}
        (folder / "tool_report.json").write_text(json.dumps(report), encoding="utf-8")
        (folder / "tool_report.md").write_text("\n".join([
            "## Where the tool contract is written",
            f"TOOLS: {', '.join(report['tools'])}.",
            "## What was blocked before calling",
            f"Wrong arguments ran {blocked} tool bodies.",
            "## How returned results were not trusted",
            f"Refused: {', '.join(reasons)}; a repeated call ran {memo} bodies.",
            "## How failure was handled as a path",
            f"Repair and retry up to {MAX_ATTEMPTS} attempts, then give up with the reason.",
        ]) + "\n", encoding="utf-8")
        return report


_svc = _Service()

validate_args = _svc.validate_args
validate_result = _svc.validate_result
cache_key = _svc.cache_key
call_tool = _svc.call_tool
pick = _svc.pick
fetch = _svc.fetch
reply = _svc.reply
giveup = _svc.giveup
build_naive = _svc.build_naive
run_naive = _svc.run_naive
REPAIRS = _Service.repairable
can_repair = _svc.can_repair
repair = _svc.repair
build_graph = _svc.build_graph
handle = _svc.handle
write_report = _svc.write_report
