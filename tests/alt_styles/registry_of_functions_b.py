"""A correct learner module in another style: decorators fill registries, and calls go through them.

Differences from the reference on purpose: ``@tool`` puts each tool function
(unchanged) into ``TOOLS``; ``@service`` puts the door's functions into
``_SERVICES`` and ``@node`` the graph's nodes into ``_NODES``, and every caller
goes through those tables: ``fetch`` runs ``_SERVICES["call_tool"](...)``, the
graphs are assembled from ``_NODES``, ``write_report`` measures with
``_SERVICES[...]``. ``TOOLS`` entries are read by helpers too (``_run`` calls
``TOOLS[name]["fn"](**args)``, ``_rules`` and ``_result_rules`` read the
contracts, the report lists each entry's arguments). Argument checks are a
tuple of small functions; the cache key is JSON of the sorted pairs; the
report uses the Korean headings.
"""
from __future__ import annotations

import json
import operator
from pathlib import Path
from typing import Annotated, Any, Callable, TypedDict

from langgraph.graph import END, START, StateGraph

REGIONS = ["north", "south", "east", "west", "central"]
FALLBACK_REGION = "central"
MAX_ROWS = 5
CALLS = {"stock_lookup": 0, "legacy_stock": 0}

_COLUMNS = ("sku", "region", "bin", "count")
STOCK = [dict(zip(_COLUMNS, line.split())) for line in """
SKU-1001 north N-01 12
SKU-1001 north N-02 4
SKU-1001 south S-01 7
SKU-1001 central C-01 30
SKU-2040 east E-01 3
SKU-2040 west W-01 0
SKU-2040 central C-02 15
SKU-3300 north N-11 2
SKU-3300 north N-12 5
SKU-3300 north N-13 1
SKU-3300 north N-14 9
SKU-3300 north N-15 4
SKU-3300 north N-16 6
SKU-3300 north N-17 3
SKU-3300 central C-03 11
SKU-4411 south S-02 22
SKU-4411 west W-02 5
SKU-4411 central C-04 9
SKU-5000 west W-03 2
""".strip().splitlines()]
for _row in STOCK:
    _row["count"] = int(_row["count"])

TOOLS: dict[str, dict] = {}


def _stock_args() -> dict:
    return {
        "sku": {"type": str, "required": True},
        "region": {"type": str, "required": True, "allowed": REGIONS},
        "limit": {"type": int, "required": True, "min": 1, "max": MAX_ROWS},
    }


def _stock_returns() -> dict:
    return {
        "keys": {"sku": str, "region": str, "rows": list},
        "rows": {"max_len": MAX_ROWS, "item": {"bin": {"type": str}, "count": {"type": int, "min": 0}}},
    }


def tool(fn: Callable) -> Callable:
    """Register ``fn`` itself in TOOLS, with the stock contract."""
    TOOLS[fn.__name__] = {"fn": fn, "args": _stock_args(), "returns": _stock_returns()}
    return fn


def _bins(sku: str, region: str) -> list:
    return [{"bin": r["bin"], "count": r["count"]} for r in STOCK if (r["sku"], r["region"]) == (sku, region)]


@tool
def stock_lookup(sku, region, limit):
    CALLS["stock_lookup"] += 1
    return {"sku": sku, "region": region, "rows": _bins(sku, region)[:limit]}


@tool
def legacy_stock(sku, region, limit):
    CALLS["legacy_stock"] += 1
    return {"sku": sku, "region": region, "rows": _bins(sku, region)}


_SERVICES: dict[str, Callable] = {}


def service(fn: Callable) -> Callable:
    _SERVICES[fn.__name__] = fn
    return fn


def _rules(name: str) -> dict:
    return TOOLS[name]["args"]


def _result_rules(name: str) -> dict:
    return TOOLS[name]["returns"]


def _run(name: str, args: dict) -> Any:
    return TOOLS[name]["fn"](**args)


def _type_ok(value: Any, wanted: type) -> bool:
    return isinstance(value, wanted) and (wanted is bool or not isinstance(value, bool))


def _check_type(value, rule):
    return None if _type_ok(value, rule["type"]) else "type"


def _check_allowed(value, rule):
    return "allowed" if "allowed" in rule and value not in rule["allowed"] else None


def _check_bounds(value, rule):
    too_low = "min" in rule and value < rule["min"]
    too_high = "max" in rule and value > rule["max"]
    return "range" if too_low or too_high else None


_ARG_CHECKS = (_check_type, _check_allowed, _check_bounds)


@service
def validate_args(name, args):
    if name not in TOOLS:
        return "unknown_tool"
    rules = _rules(name)
    extra = [arg for arg in args if arg not in rules]
    if extra:
        return f"extra:{extra[0]}"
    for arg, rule in rules.items():
        if arg not in args:
            if rule.get("required"):
                return f"missing:{arg}"
            continue
        for check in _ARG_CHECKS:
            kind = check(args[arg], rule)
            if kind:
                return f"{kind}:{arg}"
    return ""


def _row_ok(row, item) -> bool:
    return isinstance(row, dict) and all(f in row and _type_ok(row[f], r["type"]) for f, r in item.items())


@service
def validate_result(name, value):
    rules = _result_rules(name)
    if not isinstance(value, dict):
        return "shape"
    if any(k not in value or not _type_ok(value[k], t) for k, t in rules["keys"].items()):
        return "shape"
    item = rules["rows"]["item"]
    rows = value["rows"]
    if not all(_row_ok(row, item) for row in rows):
        return "shape"
    if not rows:
        return "empty"
    if len(rows) > rules["rows"]["max_len"]:
        return "too_big"
    low = [row for row in rows for f, r in item.items() if "min" in r and row[f] < r["min"]]
    return "range" if low else ""


CACHE: dict = {}


@service
def cache_key(name, args):
    return json.dumps([name, sorted(args.items())])


@service
def call_tool(name, args):
    reason = _SERVICES["validate_args"](name, args)
    if reason:
        return {"ok": False, "value": None, "error": f"args:{reason}"}
    key = _SERVICES["cache_key"](name, args)
    if key in CACHE:
        return {"ok": True, "value": CACHE[key], "error": ""}
    try:
        value = _run(name, args)
    except Exception as exc:
        return {"ok": False, "value": None, "error": f"raised:{type(exc).__name__}"}
    reason = _SERVICES["validate_result"](name, value)
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
    errors: Annotated[list, operator.add]
    calls: Annotated[list, operator.add]
    attempts: Annotated[int, operator.add]
    fixes: Annotated[list, operator.add]


_NODES: dict[str, Callable] = {}


def node(fn: Callable) -> Callable:
    _NODES[fn.__name__] = fn
    return fn


@node
def pick(state):
    order = state["order"]
    return {"tool": order.get("tool", "stock_lookup"),
            "args": {key: order[key] for key in ("sku", "region", "limit")}}


@node
def fetch(state):
    tool_name, args = state["tool"], {**state["args"]}
    got = _SERVICES["call_tool"](tool_name, args)
    out = {"ok": got["ok"], "attempts": 1, "calls": [{"tool": tool_name, "args": {**args}, "error": got["error"]}]}
    if got["ok"]:
        out["rows"] = got["value"]["rows"]
    else:
        out["errors"] = [got["error"]]
    return out


@node
def reply(state):
    top = state["rows"][0]
    used = state["args"]
    return {"answer": f"{used['sku']} / {used['region']}: {top['count']} in bin {top['bin']}"}


@node
def giveup(state):
    return {"answer": f"gave up ({state['errors'][-1]})", "rows": []}


MAX_ATTEMPTS = 3


def _region_fix(tool_name, args):
    return tool_name, {**args, "region": FALLBACK_REGION}


def _limit_fix(tool_name, args):
    return tool_name, {**args, "limit": max(1, min(MAX_ROWS, args["limit"]))}


def _tool_fix(tool_name, args):
    return "stock_lookup", {**args}


REPAIRS = {"args:allowed:region": _region_fix, "args:range:limit": _limit_fix, "result:too_big": _tool_fix}


@service
def can_repair(reason):
    return reason in REPAIRS


@node
def repair(state):
    reason = state["errors"][-1]
    new_tool, new_args = REPAIRS[reason](state["tool"], state["args"])
    return {"tool": new_tool, "args": new_args, "fixes": [f"{reason} ({state['tool']} {state['args']} -> "
                                                          f"{new_tool} {new_args})"]}


def _route_naive(state):
    return "reply" if state["ok"] else "giveup"


def _route_repairing(state):
    if state["ok"]:
        return "reply"
    if _SERVICES["can_repair"](state["errors"][-1]) and state["attempts"] < MAX_ATTEMPTS:
        return "repair"
    return "giveup"


def _assemble(names, router, targets):
    graph = StateGraph(State)
    for name in names:
        graph.add_node(name, _NODES[name])
    graph.add_edge(START, "pick")
    graph.add_edge("pick", "fetch")
    graph.add_conditional_edges("fetch", router, targets)
    if "repair" in names:
        graph.add_edge("repair", "fetch")
    graph.add_edge("reply", END)
    graph.add_edge("giveup", END)
    return graph.compile()


@service
def build_naive():
    return _assemble(("pick", "fetch", "reply", "giveup"), _route_naive, ["reply", "giveup"])


@service
def build_graph():
    return _assemble(("pick", "fetch", "reply", "giveup", "repair"), _route_repairing, ["reply", "repair", "giveup"])


def _start(order):
    return {"order": order, "errors": [], "calls": [], "attempts": 0, "fixes": []}


@service
def run_naive(order):
    final = _SERVICES["build_naive"]().invoke(_start(order))
    return {k: final.get(k) for k in ("ok", "answer", "rows", "errors", "calls")}


@service
def handle(order):
    before = sum(CALLS.values())
    final = _SERVICES["build_graph"]().invoke(_start(order))
    out = {k: final.get(k) for k in ("ok", "answer", "rows", "errors", "calls", "fixes", "attempts")}
    out["tool_runs"] = sum(CALLS.values()) - before
    return out


def _runs() -> int:
    return sum(CALLS.values())


def _runs_during(action: Callable[[], Any]) -> int:
    before = _runs()
    action()
    return _runs() - before


@service
def write_report(folder=None):
    where = Path(__file__).resolve().parent if folder is None else Path(folder)
    call = _SERVICES["call_tool"]
    wrong_calls = [
        ("stock_lookup", {"sku": "SKU-5000", "region": "west", "limit": 6}),
        ("legacy_stock", {"sku": "SKU-5000", "region": "west", "limit": "1"}),
        ("stock_lookup", {"sku": "SKU-5000", "region": "west"}),
        ("stock_lookup", {"sku": "SKU-5000", "region": "west", "limit": 1, "colour": "red"}),
    ]
    blocked = _runs_during(lambda: [call(name, args) for name, args in wrong_calls])
    bad_results = [
        None,
        {"sku": "SKU-5000", "region": "west", "rows": []},
        {"sku": "SKU-5000", "region": "west", "rows": [{"bin": "W-03", "count": 2} for _ in range(MAX_ROWS + 1)]},
        {"sku": "SKU-5000", "region": "west", "rows": [{"bin": "W-03", "count": -2}]},
    ]
    reasons = sorted(_SERVICES["validate_result"]("stock_lookup", bad) for bad in bad_results)
    good = {"sku": "SKU-5000", "region": "west", "limit": 1}
    CACHE.pop(_SERVICES["cache_key"]("stock_lookup", good), None)
    call("stock_lookup", good)
    memo = _runs_during(lambda: call("stock_lookup", good))
    fixed = _SERVICES["handle"]({"sku": "SKU-3300", "region": "Central", "limit": 1})
    empty = _SERVICES["handle"]({"sku": "SKU-5000", "region": "north", "limit": 1})
    data = {
        "tools": sorted(TOOLS),
        "blocked_before_call": blocked,
        "bad_result_reasons": reasons,
        "memo_second_call_runs": memo,
        "repaired": fixed["ok"] is True and bool(fixed["fixes"]),
        "attempts": fixed["attempts"],
        "gave_up": not empty["ok"],
    }
    (where / "tool_report.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    listing = "\n".join(f"- `{name}`: {', '.join(entry['args'])}" for name, entry in sorted(TOOLS.items()))
    md = (f"## 도구 계약을 어디에 적었나\n\n{listing}\n\n"
          f"## 부르기 전에 무엇을 막았나\n\n잘못된 호출 뒤 본문 실행: {blocked}\n\n"
          f"## 돌려준 결과를 어떻게 믿지 않았나\n\n{', '.join(reasons)}; 두 번째 호출 실행: {memo}\n\n"
          f"## 실패를 어떤 경로로 다뤘나\n\n최대 시도 횟수는 {MAX_ATTEMPTS}회.\n")
    (where / "tool_report.md").write_text(md, encoding="utf-8")
    return data
