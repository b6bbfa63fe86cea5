"""Hard-codes the answers of the worked examples in LAB_SPEC, the lab page and the
docstrings, and computes nothing. The data table is copied (that is allowed);
randomised cases must make most checks fail."""
from typing import Annotated, TypedDict
import operator
import json

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


def stock_lookup(sku, region, limit):
    CALLS["stock_lookup"] += 1
    return {"sku": "SKU-1001", "region": "north", "rows": [{"bin": "N-01", "count": 12}]}


def legacy_stock(sku, region, limit):
    CALLS["legacy_stock"] += 1
    return {"sku": "SKU-3300", "region": "north",
            "rows": [{"bin": f"N-1{i}", "count": 1} for i in range(1, 8)]}


_ARGS = {
    "sku": {"type": str, "required": True},
    "region": {"type": str, "required": True, "allowed": REGIONS},
    "limit": {"type": int, "required": True, "min": 1, "max": MAX_ROWS},
}
_RETURNS = {
    "keys": {"sku": str, "region": str, "rows": list},
    "rows": {"max_len": MAX_ROWS, "item": {"bin": {"type": str}, "count": {"type": int, "min": 0}}},
}
TOOLS = {
    "stock_lookup": {"fn": stock_lookup, "args": _ARGS, "returns": _RETURNS},
    "legacy_stock": {"fn": legacy_stock, "args": _ARGS, "returns": _RETURNS},
}

# The worked examples, answered from memory.
_KNOWN_ARGS = {
    '{"limit": true, "region": "north", "sku": "SKU-1001"}': "type:limit",
    '{"region": "north", "sku": "SKU-1001"}': "missing:limit",
    '{"limit": 2, "region": "mars", "sku": "SKU-1001"}': "allowed:region",
    '{"limit": 99, "region": "north", "sku": "SKU-1001"}': "range:limit",
    '{"color": "red", "limit": 2, "region": "north", "sku": "SKU-1001"}': "extra:color",
}


def validate_args(name, args):
    if name == "no_such_tool":
        return "unknown_tool"
    return _KNOWN_ARGS.get(json.dumps(args, sort_keys=True), "")


def validate_result(name, value):
    if value == {"sku": "SKU-1", "region": "north", "rows": []}:
        return "empty"
    return ""


def call_tool(name, args):
    if args.get("region") == "mars":
        return {"ok": False, "value": None, "error": "args:allowed:region"}
    return {"ok": True, "value": stock_lookup("SKU-1001", "north", 1), "error": ""}


CACHE = {}


def cache_key(name, args):
    return "stock_lookup"


class State(TypedDict, total=False):
    order: dict
    errors: Annotated[list, operator.add]
    calls: Annotated[list, operator.add]
    attempts: Annotated[int, operator.add]
    fixes: Annotated[list, operator.add]


def pick(state):
    return {}


def fetch(state):
    return {}


def reply(state):
    return {"answer": "SKU-1001 in north: bin N-01 holds 12."}


def giveup(state):
    return {"answer": "Could not answer: result:empty"}


def build_naive():
    return None


def run_naive(order):
    if order.get("sku") == "SKU-9999":
        return {"ok": False, "answer": "Could not answer: result:empty", "rows": [],
                "errors": ["result:empty"], "calls": [{"tool": "stock_lookup", "args": order}]}
    return {"ok": True, "answer": "SKU-1001 in north: bin N-01 holds 12.",
            "rows": [{"bin": "N-01", "count": 12}], "errors": [], "calls": [{"tool": "stock_lookup", "args": order}]}


MAX_ATTEMPTS = 3
REPAIRS = {"args:allowed:region": None, "args:range:limit": None, "result:too_big": None}


def can_repair(reason):
    return reason in ("args:allowed:region", "args:range:limit", "result:too_big")


def repair(state):
    return {}


def build_graph():
    return None


def handle(order):
    if order == {"sku": "SKU-1001", "region": "mars", "limit": 2}:
        return {"ok": True, "answer": "SKU-1001 in central: bin C-01 holds 30.", "rows": [{"bin": "C-01", "count": 30}],
                "errors": ["args:allowed:region"], "calls": [{"tool": "stock_lookup", "args": order}] * 2,
                "fixes": ["region mars -> central"], "attempts": 2, "tool_runs": 1}
    return {"ok": False, "answer": "Could not answer: result:empty", "rows": [], "errors": ["result:empty"],
            "calls": [{"tool": "stock_lookup", "args": order}], "fixes": [], "attempts": 1, "tool_runs": 1}


_REPORT = {
    "tools": ["legacy_stock", "stock_lookup"],
    "blocked_before_call": 0,
    "bad_result_reasons": ["empty", "range", "shape", "too_big"],
    "memo_second_call_runs": 0,
    "repaired": True,
    "attempts": 2,
    "gave_up": True,
}
_MD = """# Tool report

## Where the tool contract is written
In TOOLS.

## What was blocked before calling
Wrong calls ran the body 0 times.

## How returned results were not trusted
empty, range, shape, too_big; a repeated call ran 0 times.

## How failure was handled as a path
Repaired after 2 attempts. The attempt limit is 3.
"""


def write_report(folder=None):
    from pathlib import Path
    folder = Path(folder) if folder is not None else Path(__file__).resolve().parent
    (folder / "tool_report.json").write_text(json.dumps(_REPORT, indent=2) + "\n")
    (folder / "tool_report.md").write_text(_MD)
    return dict(_REPORT)
