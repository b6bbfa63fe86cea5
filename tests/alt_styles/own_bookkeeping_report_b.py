"""A correct learner module in another style: a ledger object records every call the door handles.

Differences from the reference on purpose: ``call_tool`` writes one
``_Entry`` (a dataclass: tool, a copy of the arguments, the outcome and
whether the tool body ran) into ``_LEDGER`` for every call, and
``write_report`` reads the ledger's new entries: ``blocked_before_call`` is
the number of entries of its wrong calls whose body ran, and
``memo_second_call_runs`` whether the second identical call's entry ran a
body. ``validate_args`` is a method-free table walk with ``match``-like
``if`` chains, ``validate_result`` collects every reason and returns the
first in the spec's order, the cache key is a ``str`` of a sorted tuple of
pairs, repairs are ``_Fix`` dataclasses, and routing uses ``Literal`` return
annotations.
"""
from __future__ import annotations

import json
import operator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Callable, Literal, TypedDict

from langgraph.graph import END, START, StateGraph

REGIONS = ["north", "south", "east", "west", "central"]
FALLBACK_REGION = "central"
MAX_ROWS = 5
CALLS = {"stock_lookup": 0, "legacy_stock": 0}


@dataclass(frozen=True)
class _Bin:
    sku: str
    region: str
    bin: str
    count: int

    def row(self) -> dict:
        return {"sku": self.sku, "region": self.region, "bin": self.bin, "count": self.count}


_BINS = (
    _Bin("SKU-1001", "north", "N-01", 12), _Bin("SKU-1001", "north", "N-02", 4),
    _Bin("SKU-1001", "south", "S-01", 7), _Bin("SKU-1001", "central", "C-01", 30),
    _Bin("SKU-2040", "east", "E-01", 3), _Bin("SKU-2040", "west", "W-01", 0),
    _Bin("SKU-2040", "central", "C-02", 15), _Bin("SKU-3300", "north", "N-11", 2),
    _Bin("SKU-3300", "north", "N-12", 5), _Bin("SKU-3300", "north", "N-13", 1),
    _Bin("SKU-3300", "north", "N-14", 9), _Bin("SKU-3300", "north", "N-15", 4),
    _Bin("SKU-3300", "north", "N-16", 6), _Bin("SKU-3300", "north", "N-17", 3),
    _Bin("SKU-3300", "central", "C-03", 11), _Bin("SKU-4411", "south", "S-02", 22),
    _Bin("SKU-4411", "west", "W-02", 5), _Bin("SKU-4411", "central", "C-04", 9),
    _Bin("SKU-5000", "west", "W-03", 2),
)
STOCK = [b.row() for b in _BINS]


def stock_lookup(sku, region, limit):
    CALLS["stock_lookup"] += 1
    hits = [{"bin": r["bin"], "count": r["count"]} for r in STOCK if r["sku"] == sku and r["region"] == region]
    return {"sku": sku, "region": region, "rows": hits[:limit]}


def legacy_stock(sku, region, limit):
    CALLS["legacy_stock"] += 1
    hits = [{"bin": r["bin"], "count": r["count"]} for r in STOCK if r["sku"] == sku and r["region"] == region]
    return {"sku": sku, "region": region, "rows": hits}


TOOLS = {
    name: {
        "fn": fn,
        "args": {"sku": {"type": str, "required": True},
                 "region": {"type": str, "required": True, "allowed": REGIONS},
                 "limit": {"type": int, "required": True, "min": 1, "max": MAX_ROWS}},
        "returns": {"keys": {"sku": str, "region": str, "rows": list},
                    "rows": {"max_len": MAX_ROWS, "item": {"bin": {"type": str}, "count": {"type": int, "min": 0}}}},
    }
    for name, fn in (("stock_lookup", stock_lookup), ("legacy_stock", legacy_stock))
}


def _typed(value: Any, kind: type) -> bool:
    if type(value) is bool:
        return kind is bool
    return isinstance(value, kind)


def validate_args(name, args):
    tool = TOOLS.get(name)
    if tool is None:
        return "unknown_tool"
    contract = tool["args"]
    for arg in args:
        if arg not in contract:
            return "extra:" + arg
    for arg, rule in contract.items():
        present = arg in args
        if not present and rule.get("required"):
            return "missing:" + arg
        if not present:
            continue
        value = args[arg]
        if not _typed(value, rule["type"]):
            return "type:" + arg
        if "allowed" in rule and value not in rule["allowed"]:
            return "allowed:" + arg
        if "min" in rule and value < rule["min"]:
            return "range:" + arg
        if "max" in rule and value > rule["max"]:
            return "range:" + arg
    return ""


def _result_problems(returns: dict, value: Any) -> list:
    if not isinstance(value, dict):
        return ["shape"]
    if not all(k in value and _typed(value[k], t) for k, t in returns["keys"].items()):
        return ["shape"]
    rows, item = value["rows"], returns["rows"]["item"]
    problems = []
    for row in rows:
        if not isinstance(row, dict) or not all(f in row and _typed(row[f], r["type"]) for f, r in item.items()):
            problems.append("shape")
    if not rows:
        problems.append("empty")
    if len(rows) > returns["rows"]["max_len"]:
        problems.append("too_big")
    if "shape" not in problems:
        for row in rows:
            if any("min" in r and row[f] < r["min"] for f, r in item.items()):
                problems.append("range")
    return problems


def validate_result(name, value):
    problems = _result_problems(TOOLS[name]["returns"], value)
    for reason in ("shape", "empty", "too_big", "range"):
        if reason in problems:
            return reason
    return ""


CACHE = {}


def cache_key(name, args):
    return str((name, tuple(sorted((key, repr(value)) for key, value in args.items()))))


@dataclass
class _Entry:
    tool: Any
    args: dict
    error: str = ""
    ran: bool = False


@dataclass
class _Ledger:
    entries: list = field(default_factory=list)

    def open(self, tool, args) -> _Entry:
        entry = _Entry(tool, dict(args) if isinstance(args, dict) else {})
        self.entries.append(entry)
        return entry

    def mark(self) -> int:
        return len(self.entries)

    def since(self, mark: int) -> list:
        return self.entries[mark:]


_LEDGER = _Ledger()


def call_tool(name, args):
    entry = _LEDGER.open(name, args)
    reason = validate_args(name, args)
    if reason:
        entry.error = "args:" + reason
        return {"ok": False, "value": None, "error": entry.error}
    key = cache_key(name, args)
    if key in CACHE:
        return {"ok": True, "value": CACHE[key], "error": ""}
    entry.ran = True
    try:
        value = TOOLS[name]["fn"](**args)
    except Exception as exc:
        entry.error = "raised:" + type(exc).__name__
        return {"ok": False, "value": None, "error": entry.error}
    reason = validate_result(name, value)
    if reason:
        entry.error = "result:" + reason
        return {"ok": False, "value": None, "error": entry.error}
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


def pick(state: State) -> dict:
    order = state["order"]
    return {"tool": order["tool"] if "tool" in order else "stock_lookup",
            "args": {"sku": order["sku"], "region": order["region"], "limit": order["limit"]}}


def fetch(state: State) -> dict:
    tool, args = state["tool"], dict(state["args"])
    got = call_tool(tool, args)
    if got["ok"]:
        return {"ok": True, "rows": got["value"]["rows"], "attempts": 1, "calls": [{"tool": tool, "args": args}]}
    return {"ok": False, "errors": [got["error"]], "attempts": 1,
            "calls": [{"tool": tool, "args": args, "error": got["error"]}]}


def reply(state: State) -> dict:
    first = state["rows"][0]
    return {"answer": f"Bin {first['bin']} has {first['count']} of {state['args']['sku']} "
                      f"(region {state['args']['region']})."}


def giveup(state: State) -> dict:
    return {"answer": f"No reliable stock figure: {state['errors'][-1]}", "rows": []}


def _naive_route(state: State) -> Literal["reply", "giveup"]:
    return "reply" if state["ok"] else "giveup"


def build_naive():
    g = StateGraph(State)
    g.add_node("pick", pick)
    g.add_node("fetch", fetch)
    g.add_node("reply", reply)
    g.add_node("giveup", giveup)
    g.add_edge(START, "pick")
    g.add_edge("pick", "fetch")
    g.add_conditional_edges("fetch", _naive_route)
    g.add_edge("reply", END)
    g.add_edge("giveup", END)
    return g.compile()


def _outcome(final: dict, keys) -> dict:
    defaults = {"ok": False, "answer": "", "rows": [], "errors": [], "calls": [], "fixes": [], "attempts": 0}
    return {k: final.get(k, defaults[k]) for k in keys}


def run_naive(order):
    final = build_naive().invoke({"order": order, "errors": [], "calls": [], "attempts": 0, "fixes": []})
    return _outcome(final, ("ok", "answer", "rows", "errors", "calls"))


MAX_ATTEMPTS = 3


@dataclass(frozen=True)
class _Fix:
    describe: str
    change: Callable[[str, dict], tuple]

    def apply(self, tool: str, args: dict) -> tuple:
        return self.change(tool, dict(args))


REPAIRS = {
    "args:allowed:region": _Fix("region replaced by the fallback region",
                                lambda tool, args: (tool, {**args, "region": FALLBACK_REGION})),
    "args:range:limit": _Fix("limit clamped into 1..MAX_ROWS",
                             lambda tool, args: (tool, {**args, "limit": min(MAX_ROWS, max(1, args["limit"]))})),
    "result:too_big": _Fix("legacy_stock replaced by stock_lookup", lambda tool, args: ("stock_lookup", args)),
}


def can_repair(reason):
    return reason in REPAIRS


def repair(state: State) -> dict:
    reason = state["errors"][-1]
    fix = REPAIRS[reason]
    tool, args = fix.apply(state["tool"], state["args"])
    return {"tool": tool, "args": args, "fixes": [f"{reason}: {fix.describe}"]}


def _route(state: State) -> Literal["reply", "repair", "giveup"]:
    if state["ok"]:
        return "reply"
    if can_repair(state["errors"][-1]) and state["attempts"] < MAX_ATTEMPTS:
        return "repair"
    return "giveup"


def build_graph():
    g = StateGraph(State)
    g.add_node("pick", pick)
    g.add_node("fetch", fetch)
    g.add_node("repair", repair)
    g.add_node("reply", reply)
    g.add_node("giveup", giveup)
    g.add_edge(START, "pick")
    g.add_edge("pick", "fetch")
    g.add_conditional_edges("fetch", _route)
    g.add_edge("repair", "fetch")
    g.add_edge("reply", END)
    g.add_edge("giveup", END)
    return g.compile()


def handle(order):
    before = sum(CALLS.values())
    final = build_graph().invoke({"order": order, "errors": [], "calls": [], "attempts": 0, "fixes": []})
    result = _outcome(final, ("ok", "answer", "rows", "errors", "calls", "fixes", "attempts"))
    result["tool_runs"] = sum(CALLS.values()) - before
    return result


_WRONG = [
    ("stock_lookup", {"sku": "SKU-3300", "region": "central", "limit": 7}),
    ("stock_lookup", {"sku": "SKU-3300", "region": "Central", "limit": 1}),
    ("legacy_stock", {"sku": "SKU-3300", "region": "central", "limit": 1.0}),
    ("legacy_stock", {"sku": "SKU-3300", "region": "central", "limit": 1, "page": 2}),
    ("stock_check", {"sku": "SKU-3300", "region": "central", "limit": 1}),
]


def write_report(folder=None):
    out_dir = Path(folder) if folder is not None else Path(__file__).resolve().parent

    mark = _LEDGER.mark()
    for tool, args in _WRONG:
        call_tool(tool, args)
    blocked = sum(1 for entry in _LEDGER.since(mark) if entry.ran)

    row = {"bin": "C-03", "count": 11}
    reasons = sorted(validate_result("legacy_stock", bad) for bad in (
        [row],
        {"sku": "SKU-3300", "region": "central", "rows": []},
        {"sku": "SKU-3300", "region": "central", "rows": [row] * (MAX_ROWS + 1)},
        {"sku": "SKU-3300", "region": "central", "rows": [{"bin": "C-03", "count": -11}]},
    ))

    repeat = {"sku": "SKU-3300", "region": "central", "limit": 1}
    CACHE.pop(cache_key("stock_lookup", repeat), None)
    call_tool("stock_lookup", repeat)
    mark = _LEDGER.mark()
    call_tool("stock_lookup", repeat)
    memo = sum(1 for entry in _LEDGER.since(mark) if entry.ran)

    repaired = handle({"sku": "SKU-1001", "region": "Atlantis", "limit": 1})
    empty = handle({"sku": "SKU-2040", "region": "north", "limit": 1})
    report = {
        "tools": sorted(TOOLS),
        "blocked_before_call": blocked,
        "bad_result_reasons": reasons,
        "memo_second_call_runs": memo,
        "repaired": repaired["ok"] is True and len(repaired["fixes"]) >= 1,
        "attempts": repaired["attempts"],
        "gave_up": not empty["ok"],
    }
    (out_dir / "tool_report.json").write_text(json.dumps(report, sort_keys=True), encoding="utf-8")
    md = [
        "## Where the tool contract is written", "",
        f"`TOOLS` has {len(report['tools'])} entries, each with fn, args and returns.", "",
        "## What was blocked before calling", "",
        f"{len(_WRONG)} wrong calls; tool bodies run: {blocked}.", "",
        "## How returned results were not trusted", "",
        "validate_result said: " + ", ".join(reasons) + ".", "",
        "## How failure was handled as a path", "",
        f"The repair loop stops after MAX_ATTEMPTS = {MAX_ATTEMPTS} fetches.", "",
    ]
    (out_dir / "tool_report.md").write_text("\n".join(md), encoding="utf-8")
    return report
