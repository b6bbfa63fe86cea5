"""A correct learner module in another style: two collaborating objects, the graph's holding the door's.

Differences from the reference on purpose: ``_Door`` (a dataclass) owns
steps 2-5 and ``_Agent`` (a dataclass with a ``door`` field) owns steps 6-8;
the agent reaches the door only through the reference it was given
(``self.door.call_tool(...)``: ``call_tool`` is called as a bound method of
another object), and the module's names are the two objects' bound methods
(``call_tool = _DOOR.call_tool``, ``fetch = _AGENT.fetch`` ...). The door
finds the contract table, the cache and the tools through the module's names
at call time. ``State`` has one more field than the reference (``trace``, a
list of node names with an appending reducer). Validation is a list of
``(reason, predicate)`` pairs; the cache key is a sorted ``k=v`` string in
brackets.
"""
from __future__ import annotations

import json
import operator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph

REGIONS = ["north", "south", "east", "west", "central"]
FALLBACK_REGION = "central"
MAX_ROWS = 5
CALLS = {"stock_lookup": 0, "legacy_stock": 0}

STOCK = [
    {"sku": sku, "region": region, "bin": bin_, "count": count}
    for sku, region, bin_, count in [
        ("SKU-1001", "north", "N-01", 12), ("SKU-1001", "north", "N-02", 4),
        ("SKU-1001", "south", "S-01", 7), ("SKU-1001", "central", "C-01", 30),
        ("SKU-2040", "east", "E-01", 3), ("SKU-2040", "west", "W-01", 0),
        ("SKU-2040", "central", "C-02", 15),
        ("SKU-3300", "north", "N-11", 2), ("SKU-3300", "north", "N-12", 5),
        ("SKU-3300", "north", "N-13", 1), ("SKU-3300", "north", "N-14", 9),
        ("SKU-3300", "north", "N-15", 4), ("SKU-3300", "north", "N-16", 6),
        ("SKU-3300", "north", "N-17", 3), ("SKU-3300", "central", "C-03", 11),
        ("SKU-4411", "south", "S-02", 22), ("SKU-4411", "west", "W-02", 5),
        ("SKU-4411", "central", "C-04", 9),
        ("SKU-5000", "west", "W-03", 2),
    ]
]


def stock_lookup(sku, region, limit):
    CALLS["stock_lookup"] += 1
    out = []
    for row in STOCK:
        if row["sku"] == sku and row["region"] == region:
            out.append({"bin": row["bin"], "count": row["count"]})
    return {"sku": sku, "region": region, "rows": out[:limit]}


def legacy_stock(sku, region, limit):
    CALLS["legacy_stock"] += 1
    out = []
    for row in STOCK:
        if row["sku"] == sku and row["region"] == region:
            out.append({"bin": row["bin"], "count": row["count"]})
    return {"sku": sku, "region": region, "rows": out}


TOOLS = {
    "stock_lookup": {
        "fn": stock_lookup,
        "args": {"sku": {"type": str, "required": True},
                 "region": {"type": str, "required": True, "allowed": REGIONS},
                 "limit": {"type": int, "required": True, "min": 1, "max": MAX_ROWS}},
        "returns": {"keys": {"sku": str, "region": str, "rows": list},
                    "rows": {"max_len": MAX_ROWS, "item": {"bin": {"type": str}, "count": {"type": int, "min": 0}}}},
    },
    "legacy_stock": {
        "fn": legacy_stock,
        "args": {"sku": {"type": str, "required": True},
                 "region": {"type": str, "required": True, "allowed": REGIONS},
                 "limit": {"type": int, "required": True, "min": 1, "max": MAX_ROWS}},
        "returns": {"keys": {"sku": str, "region": str, "rows": list},
                    "rows": {"max_len": MAX_ROWS, "item": {"bin": {"type": str}, "count": {"type": int, "min": 0}}}},
    },
}
CACHE = {}
MAX_ATTEMPTS = 3


def _strict_isinstance(value: Any, kind: type) -> bool:
    if isinstance(value, bool):
        return kind is bool or kind is object
    return isinstance(value, kind)


_VALUE_RULES = [
    ("type", lambda value, rule: _strict_isinstance(value, rule["type"])),
    ("allowed", lambda value, rule: "allowed" not in rule or value in rule["allowed"]),
    ("range", lambda value, rule: "min" not in rule or value >= rule["min"]),
    ("range", lambda value, rule: "max" not in rule or value <= rule["max"]),
]


@dataclass
class _Door:
    """Steps 2-5: the contract checks, the cache key and the one door every call goes through."""

    def validate_args(self, name, args):
        if name not in TOOLS:
            return "unknown_tool"
        contract = TOOLS[name]["args"]
        for arg in args:
            if arg not in contract:
                return f"extra:{arg}"
        for arg, rule in contract.items():
            if arg not in args:
                if rule.get("required"):
                    return f"missing:{arg}"
                continue
            for reason, holds in _VALUE_RULES:
                if not holds(args[arg], rule):
                    return f"{reason}:{arg}"
        return ""

    def validate_result(self, name, value):
        returns = TOOLS[name]["returns"]
        if not isinstance(value, dict):
            return "shape"
        for key, kind in returns["keys"].items():
            if key not in value or not _strict_isinstance(value[key], kind):
                return "shape"
        item = returns["rows"]["item"]
        for row in value["rows"]:
            if not isinstance(row, dict):
                return "shape"
            for field, rule in item.items():
                if field not in row or not _strict_isinstance(row[field], rule["type"]):
                    return "shape"
        if not value["rows"]:
            return "empty"
        if len(value["rows"]) > returns["rows"]["max_len"]:
            return "too_big"
        for row in value["rows"]:
            for field, rule in item.items():
                if "min" in rule and row[field] < rule["min"]:
                    return "range"
        return ""

    def cache_key(self, name, args):
        return name + "[" + ",".join(f"{k}={args[k]!r}" for k in sorted(args)) + "]"

    def call_tool(self, name, args):
        reason = self.validate_args(name, args)
        if reason:
            return {"ok": False, "value": None, "error": f"args:{reason}"}
        key = self.cache_key(name, args)
        hit = CACHE.get(key)
        if key in CACHE:
            return {"ok": True, "value": hit, "error": ""}
        try:
            value = TOOLS[name]["fn"](**args)
        except Exception as exc:
            return {"ok": False, "value": None, "error": f"raised:{type(exc).__name__}"}
        reason = self.validate_result(name, value)
        if reason:
            return {"ok": False, "value": None, "error": f"result:{reason}"}
        CACHE[key] = value
        return {"ok": True, "value": value, "error": ""}


class State(TypedDict, total=False):
    order: dict
    tool: str
    args: dict
    ok: bool
    rows: list
    answer: str
    trace: Annotated[list, operator.add]
    errors: Annotated[list, operator.add]
    calls: Annotated[list, operator.add]
    attempts: Annotated[int, operator.add]
    fixes: Annotated[list, operator.add]


REPAIRS = {
    "args:allowed:region": ("region", lambda args: FALLBACK_REGION),
    "args:range:limit": ("limit", lambda args: min(MAX_ROWS, max(1, args["limit"]))),
    "result:too_big": ("tool", lambda args: "stock_lookup"),
}


@dataclass
class _Agent:
    """Steps 6-8: nodes, graphs, runs and the report, calling the door it holds."""

    door: _Door

    def pick(self, state):
        order = state["order"]
        return {"tool": order.get("tool", "stock_lookup"), "trace": ["pick"],
                "args": {"sku": order["sku"], "region": order["region"], "limit": order["limit"]}}

    def fetch(self, state):
        tool, args = state["tool"], dict(state["args"])
        result = self.door.call_tool(tool, args)
        update = {"ok": result["ok"], "attempts": 1, "trace": ["fetch"],
                  "calls": [{"tool": tool, "args": args, "error": result["error"]}]}
        if result["ok"]:
            update["rows"] = result["value"]["rows"]
        else:
            update["errors"] = [result["error"]]
        return update

    def reply(self, state):
        row, args = state["rows"][0], state["args"]
        return {"answer": f"{args['sku']}, {args['region']}: {row['count']} units in {row['bin']}", "trace": ["reply"]}

    def giveup(self, state):
        return {"answer": f"giving up: {state['errors'][-1]}", "rows": [], "trace": ["giveup"]}

    def can_repair(self, reason):
        return reason in REPAIRS

    def repair(self, state):
        reason = state["errors"][-1]
        what, fix = REPAIRS[reason]
        tool, args = state["tool"], dict(state["args"])
        if what == "tool":
            tool = fix(args)
        else:
            args[what] = fix(args)
        return {"tool": tool, "args": args, "fixes": [f"{reason}: {what} fixed"], "trace": ["repair"]}

    def _after_naive(self, state):
        return "reply" if state["ok"] else "giveup"

    def _after(self, state):
        if state["ok"]:
            return "reply"
        return "repair" if self.can_repair(state["errors"][-1]) and state["attempts"] < MAX_ATTEMPTS else "giveup"

    def _graph(self, repairing):
        graph = StateGraph(State)
        graph.add_node("pick", self.pick)
        graph.add_node("fetch", self.fetch)
        graph.add_node("reply", self.reply)
        graph.add_node("giveup", self.giveup)
        graph.add_edge(START, "pick")
        graph.add_edge("pick", "fetch")
        if repairing:
            graph.add_node("repair", self.repair)
            graph.add_conditional_edges("fetch", self._after, ["reply", "repair", "giveup"])
            graph.add_edge("repair", "fetch")
        else:
            graph.add_conditional_edges("fetch", self._after_naive, ["reply", "giveup"])
        graph.add_edge("reply", END)
        graph.add_edge("giveup", END)
        return graph.compile()

    def build_naive(self):
        return self._graph(False)

    def build_graph(self):
        return self._graph(True)

    @staticmethod
    def _seed(order):
        return {"order": order, "errors": [], "calls": [], "attempts": 0, "fixes": [], "trace": []}

    def run_naive(self, order):
        final = self.build_naive().invoke(self._seed(order))
        return {"ok": final["ok"], "answer": final["answer"], "rows": final.get("rows", []),
                "errors": final["errors"], "calls": final["calls"]}

    def handle(self, order):
        before = sum(CALLS.values())
        final = self.build_graph().invoke(self._seed(order))
        return {"ok": final["ok"], "answer": final["answer"], "rows": final.get("rows", []),
                "errors": final["errors"], "calls": final["calls"], "fixes": final["fixes"],
                "attempts": final["attempts"], "tool_runs": sum(CALLS.values()) - before}

    def write_report(self, folder=None):
        out = Path(folder) if folder is not None else Path(__file__).resolve().parent

        def counted(action):
            before = sum(CALLS.values())
            action()
            return sum(CALLS.values()) - before

        wrong = [{"sku": "SKU-5000", "region": "west", "limit": 0},
                 {"sku": "SKU-5000", "region": "wset", "limit": 1},
                 {"sku": None, "region": "west", "limit": 1}]
        blocked = counted(lambda: [self.door.call_tool("stock_lookup", args) for args in wrong])

        reasons = sorted(self.door.validate_result("stock_lookup", value) for value in [
            "W-03",
            {"sku": "SKU-5000", "region": "west", "rows": []},
            {"sku": "SKU-5000", "region": "west", "rows": [{"bin": "W-03", "count": 2}] * (MAX_ROWS + 1)},
            {"sku": "SKU-5000", "region": "west", "rows": [{"bin": "W-03", "count": -2}]},
        ])

        args = {"sku": "SKU-4411", "region": "south", "limit": 1}
        CACHE.pop(self.door.cache_key("stock_lookup", args), None)
        self.door.call_tool("stock_lookup", args)
        memo = counted(lambda: self.door.call_tool("stock_lookup", args))

        repaired = self.handle({"sku": "SKU-1001", "region": "mars", "limit": 2})
        empty = self.handle({"sku": "SKU-9999", "region": "north", "limit": 2})
        report = {"tools": sorted(TOOLS), "blocked_before_call": blocked, "bad_result_reasons": reasons,
                  "memo_second_call_runs": memo, "repaired": bool(repaired["ok"] and repaired["fixes"]),
                  "attempts": repaired["attempts"], "gave_up": not empty["ok"]}
        (out / "tool_report.json").write_text(json.dumps(report), encoding="utf-8")
        (out / "tool_report.md").write_text(
            "## Where the tool contract is written\n\nTOOLS\n\n"
            f"## What was blocked before calling\n\n{blocked} body runs\n\n"
            f"## How returned results were not trusted\n\n{reasons}\n\n"
            f"## How failure was handled as a path\n\nMAX_ATTEMPTS is {MAX_ATTEMPTS}.\n",
            encoding="utf-8")
        return report


_DOOR = _Door()
_AGENT = _Agent(door=_DOOR)

validate_args = _DOOR.validate_args
validate_result = _DOOR.validate_result
cache_key = _DOOR.cache_key
call_tool = _DOOR.call_tool

pick = _AGENT.pick
fetch = _AGENT.fetch
reply = _AGENT.reply
giveup = _AGENT.giveup
repair = _AGENT.repair
can_repair = _AGENT.can_repair
build_naive = _AGENT.build_naive
build_graph = _AGENT.build_graph
run_naive = _AGENT.run_naive
handle = _AGENT.handle
write_report = _AGENT.write_report
