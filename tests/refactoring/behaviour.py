"""Does a rewrite behave as its base does? Both imported from files, both run on the same fixed inputs.

What is compared (LAB_SPEC's view of a module): ``validate_args`` on valid and
single-defect calls (several defects at once are the learner's choice of
order, so none is sent), ``call_tool`` from an empty ``CACHE`` (its dict and
how ``CALLS`` moved), a repeated call, ``validate_result``, which
``cache_key``\\s are equal (the partition, not the strings), ``run_naive`` and
``handle`` on 20 orders (the results, ``CALLS`` and the order left unchanged),
``write_report``'s dict, and for a module with part two ``coerce``,
``call_coerced``, ``explain``, ``retry_with_suggestion``, ``resolve_sku`` and
``handle_named``. An exception is recorded by its type's name.

Two freedoms are allowed: an answer sentence may be longer than the base's
(``state_key:served_by`` appends the tool that served the rows; the words
LAB_SPEC asks for are the base's, still there at its start), and an entry of
``calls`` may hold keys of the module's own beside the base's (LAB_SPEC step
6: "each a dict with at least ``tool`` and ``args``"; ``state_key:note``).

>>> from tests.refactoring.bases import bases
>>> base = bases()["solution"].text
>>> differences(base, base)
[]
"""

from __future__ import annotations

import copy
import importlib.util
import itertools
import sys
import tempfile
from pathlib import Path
from typing import Any

_COUNTER = itertools.count()

GOOD = {"sku": "SKU-1001", "region": "north", "limit": 2}
ARGS_CASES = [
    ("stock_lookup", GOOD),
    ("legacy_stock", {"sku": "SKU-3300", "region": "north", "limit": 5}),
    ("stock_lookup", {"sku": "SKU-9999", "region": "central", "limit": 1}),
    ("stock_lookup", {"region": "north", "limit": 2}),
    ("stock_lookup", {"sku": "SKU-1001", "limit": 2}),
    ("legacy_stock", {"sku": "SKU-1001", "region": "north"}),
    ("stock_lookup", {**GOOD, "color": "red"}),
    ("stock_lookup", {**GOOD, "limit": True}),
    ("stock_lookup", {**GOOD, "limit": "2"}),
    ("stock_lookup", {**GOOD, "limit": 2.0}),
    ("stock_lookup", {**GOOD, "sku": 1001}),
    ("stock_lookup", {**GOOD, "region": None}),
    ("stock_lookup", {**GOOD, "region": "mars"}),
    ("stock_lookup", {**GOOD, "region": "North"}),
    ("stock_lookup", {**GOOD, "limit": 0}),
    ("stock_lookup", {**GOOD, "limit": 6}),
    ("legacy_stock", {**GOOD, "limit": -3}),
    ("stock_lookup", {**GOOD, "limit": 1}),
    ("stock_lookup", {**GOOD, "limit": 5}),
    ("no_such_tool", GOOD),
]
RESULT_CASES = [
    {"sku": "SKU-1001", "region": "north", "rows": [{"bin": "N-01", "count": 12}]},
    {"sku": "SKU-2040", "region": "west", "rows": [{"bin": "W-01", "count": 0}]},
    ["not", "a", "dict"],
    None,
    {"sku": "SKU-1001", "region": "north"},
    {"sku": 5, "region": "north", "rows": []},
    {"sku": "SKU-1001", "region": "north", "rows": "N-01"},
    {"sku": "SKU-1001", "region": "north", "rows": [["N-01", 1]]},
    {"sku": "SKU-1001", "region": "north", "rows": [{"bin": "N-01"}]},
    {"sku": "SKU-1001", "region": "north", "rows": [{"bin": "N-01", "count": "1"}]},
    {"sku": "SKU-1001", "region": "north", "rows": []},
    {"sku": "SKU-1001", "region": "north", "rows": [{"bin": "N-01", "count": 1}] * 6},
    {"sku": "SKU-1001", "region": "north", "rows": [{"bin": "N-01", "count": 1}] * 5},
    {"sku": "SKU-1001", "region": "north", "rows": [{"bin": "N-01", "count": -1}]},
]
KEY_CASES = [
    ("stock_lookup", {"sku": "SKU-1001", "region": "north", "limit": 2}),
    ("stock_lookup", {"limit": 2, "region": "north", "sku": "SKU-1001"}),
    ("legacy_stock", {"sku": "SKU-1001", "region": "north", "limit": 2}),
    ("stock_lookup", {"sku": "SKU-1001", "region": "north", "limit": 3}),
    ("stock_lookup", {"sku": "SKU-1001", "region": "south", "limit": 2}),
    ("stock_lookup", {"region": "south", "sku": "SKU-1001", "limit": 2}),
]
ORDERS = [
    {"sku": "SKU-1001", "region": "north", "limit": 2},
    {"sku": "SKU-1001", "region": "north", "limit": 1},
    {"sku": "SKU-2040", "region": "west", "limit": 1},
    {"sku": "SKU-3300", "region": "north", "limit": 5},
    {"sku": "SKU-4411", "region": "south", "limit": 3},
    {"sku": "SKU-5000", "region": "west", "limit": 1},
    {"sku": "SKU-1001", "region": "mars", "limit": 2},
    {"sku": "SKU-2040", "region": "Central", "limit": 2},
    {"sku": "SKU-1001", "region": "north", "limit": 9},
    {"sku": "SKU-1001", "region": "south", "limit": 0},
    {"sku": "SKU-3300", "region": "north", "limit": 2, "tool": "legacy_stock"},
    {"sku": "SKU-1001", "region": "north", "limit": 2, "tool": "legacy_stock"},
    {"sku": "SKU-3300", "region": "mars", "limit": 9, "tool": "legacy_stock"},
    {"sku": "SKU-9999", "region": "north", "limit": 2},
    {"sku": "SKU-5000", "region": "central", "limit": 1},
    {"sku": "SKU-5000", "region": "mars", "limit": 1},
    {"sku": "SKU-1001", "region": "north", "limit": True},
    {"sku": "SKU-1001", "region": "north", "limit": 2, "tool": "no_such_tool"},
    {"sku": 1001, "region": "north", "limit": 2},
    {"sku": "SKU-4411", "region": "WEST", "limit": 9},
]
NAIVE_ORDERS = ORDERS[:3] + ORDERS[6:7] + ORDERS[10:11] + ORDERS[13:14]
RAW_ARGS = [
    ("stock_lookup", {"sku": " SKU-1001 ", "region": " North ", "limit": " 2 "}),
    ("stock_lookup", {"sku": "SKU-1001", "region": "NORTH", "limit": "３"}),
    ("legacy_stock", {"sku": "SKU-2040", "region": "west", "limit": "+1"}),
    ("legacy_stock", {"sku": "SKU-2040", "region": " west", "limit": "1", "extra": " x "}),
    ("stock_lookup", {"sku": "SKU-1001", "region": "north", "limit": True}),
    ("stock_lookup", {"sku": "SKU-1001", "region": "north", "limit": "9"}),
    ("nope", {"sku": " a "}),
]
EXPLAIN_ARGS = [
    ("stock_lookup", GOOD),
    ("stock_lookup", {**GOOD, "region": "nrth"}),
    ("stock_lookup", {**GOOD, "region": "wast"}),
    ("stock_lookup", {**GOOD, "region": " North "}),
    ("stock_lookup", {**GOOD, "limit": "3"}),
    ("stock_lookup", {**GOOD, "limit": "9"}),
    ("stock_lookup", {**GOOD, "limit": 9}),
    ("stock_lookup", {**GOOD, "color": "red"}),
    ("stock_lookup", {"sku": "SKU-1001", "region": "north"}),
    ("nope", GOOD),
    ("legacy_stock", {**GOOD, "limit": True}),
]
QUERIES = ["Steel bolt M6", "  copper wire 4 MM ", "bolt", "wire", "sku-5000", "titanium", "", "   ", "Rubber"]
NAMED_ORDERS = [
    {"product": "gasket", "region": "west", "limit": 1},
    {"product": "bolt", "region": "north", "limit": 2},
    {"product": "unobtainium", "region": "north", "limit": 2},
    {"product": "Steel bolt M6", "region": "mars", "limit": 2},
]


def load(text: str, folder: str | Path) -> Any:
    """Import ``text`` as ``folder/tools.py`` under a name of its own, registered in ``sys.modules`` (dataclasses
    and LangGraph's reading of ``State``'s annotations look the module up there); :func:`unload` forgets it."""
    path = Path(folder) / "tools.py"
    path.write_text(text, encoding="utf-8")
    name = f"_refactoring_probe_{next(_COUNTER)}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def unload(module: Any) -> None:
    sys.modules.pop(module.__name__, None)


def _run(fn, *args) -> Any:
    try:
        return ("returned", fn(*args))
    except Exception as exc:  # a difference in what is raised is a difference
        return ("raised", type(exc).__name__)


def _calls(m) -> int:
    return sum(m.CALLS.values())


def observe(m, folder: str | Path) -> dict[str, Any]:
    """What the spec can see of module ``m`` on the fixed inputs (``folder``: where its report goes)."""
    seen: dict[str, Any] = {}
    seen["validate_args"] = [_run(m.validate_args, n, copy.deepcopy(a)) for n, a in ARGS_CASES]
    tool_calls = []
    for n, a in ARGS_CASES:
        m.CACHE.clear()
        before = _calls(m)
        tool_calls.append((_run(m.call_tool, n, copy.deepcopy(a)), _calls(m) - before))
    seen["call_tool"] = tool_calls
    m.CACHE.clear()
    first = _run(m.call_tool, "stock_lookup", dict(GOOD))
    before = _calls(m)
    seen["call_tool_twice"] = (first, _run(m.call_tool, "stock_lookup", dict(GOOD)), _calls(m) - before)
    seen["validate_result"] = [_run(m.validate_result, "stock_lookup", copy.deepcopy(v)) for v in RESULT_CASES]
    keys = [m.cache_key(n, dict(a)) for n, a in KEY_CASES]
    seen["cache_key"] = [[a == b for b in keys] for a in keys]
    seen["run_naive"] = [_order_run(m, m.run_naive, order) for order in NAIVE_ORDERS]
    seen["handle"] = [_order_run(m, m.handle, order) for order in ORDERS]
    m.CACHE.clear()
    seen["write_report"] = _run(m.write_report, str(folder))
    if hasattr(m, "coerce"):
        seen["coerce"] = [_run(m.coerce, n, copy.deepcopy(a)) for n, a in RAW_ARGS]
        seen["call_coerced"] = [_cleared(m, m.call_coerced, n, copy.deepcopy(a)) for n, a in RAW_ARGS]
        seen["explain"] = [_run(m.explain, n, copy.deepcopy(a)) for n, a in EXPLAIN_ARGS]
        seen["retry_with_suggestion"] = [
            _cleared(m, m.retry_with_suggestion, n, copy.deepcopy(a)) for n, a in EXPLAIN_ARGS
        ]
        seen["resolve_sku"] = [_run(m.resolve_sku, q) for q in QUERIES]
        seen["handle_named"] = [_order_run(m, m.handle_named, order) for order in NAMED_ORDERS]
    return seen


def _cleared(m, fn, *args) -> Any:
    m.CACHE.clear()
    before = _calls(m)
    return _run(fn, *args), _calls(m) - before


def _order_run(m, fn, order: dict) -> Any:
    m.CACHE.clear()
    given = copy.deepcopy(order)
    before = _calls(m)
    outcome = _run(fn, given)
    return outcome, _calls(m) - before, given == order


def _same(base: Any, other: Any, more_keys: bool = False) -> bool:
    """Equal, but for two freedoms: a longer ``answer`` that starts with the base's, and (``more_keys``, for
    the entries of ``calls``) keys of the module's own beside the base's."""
    if isinstance(base, dict) and isinstance(other, dict):
        if set(base) != set(other) and not (more_keys and set(base) <= set(other)):
            return False
        for key in base:
            if key == "answer" and isinstance(base[key], str) and isinstance(other[key], str):
                if not other[key].startswith(base[key]):
                    return False
            elif key == "calls" and isinstance(base[key], list) and isinstance(other[key], list):
                if len(base[key]) != len(other[key]) or not all(
                    _same(a, b, more_keys=True) for a, b in zip(base[key], other[key])
                ):
                    return False
            elif not _same(base[key], other[key]):
                return False
        return True
    if isinstance(base, (list, tuple)) and isinstance(other, (list, tuple)):
        return type(base) is type(other) and len(base) == len(other) and all(map(_same, base, other))
    return type(base) is type(other) and base == other


_OBSERVED: dict[str, dict[str, Any]] = {}


def observed(text: str) -> dict[str, Any]:
    """:func:`observe` of the module ``text``, imported from a temporary folder (a base's is kept)."""
    with tempfile.TemporaryDirectory(prefix="refactoring-") as folder:
        module = load(text, folder)
        try:
            return observe(module, folder)
        finally:
            unload(module)


def differences(base_text: str, text: str) -> list[str]:
    """Where the module ``text`` behaves otherwise than ``base_text``: ``["handle", ...]`` (empty: the same)."""
    if base_text not in _OBSERVED:
        _OBSERVED[base_text] = observed(base_text)
    expected = _OBSERVED[base_text]
    try:
        got = observed(text)
    except Exception as exc:
        return [f"import or run: {type(exc).__name__}: {exc}"]
    return [name for name in expected if not _same(expected[name], got.get(name))]
