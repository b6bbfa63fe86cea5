"""Step 11 in another style: an index of casefolded names built per call, a match class, a ``match`` statement.

Differences from the reference on purpose: ``PRODUCTS`` is built from a list of
pairs with ``dict(...)``; ``resolve_sku`` casefolds the whole table into a list
of ``Match`` tuples first and picks by counting; labels are ``"SKU-1001 · Steel
bolt M6"`` (sku first); ``handle_named`` dispatches with ``match`` and builds
the order for ``handle`` with ``dict(order, sku=...)`` then ``del`` on the copy.
"""
from __future__ import annotations

from typing import NamedTuple

PRODUCTS = dict([
    ("SKU-1001", "Steel bolt M6"),
    ("SKU-2040", "Steel bolt M8"),
    ("SKU-3300", "Copper wire 2 mm"),
    ("SKU-4411", "Copper wire 4 mm"),
    ("SKU-5000", "Rubber gasket"),
])


class Match(NamedTuple):
    sku: str
    name: str
    exact: bool


def _matching(folded: str) -> list:
    table = dict(PRODUCTS)  # read at call time; a copy so nothing here can write into it
    found = [Match(sku, name, name.casefold() == folded) for sku, name in table.items() if folded in name.casefold()]
    return sorted(found, key=lambda m: m.sku)


def resolve_sku(query: str) -> dict:
    """Resolve a product query to exactly one sku, or report not found / ambiguous.

    >>> resolve_sku("sku-5000")
    {'kind': 'resolved', 'sku': 'SKU-5000'}
    """
    folded = query.strip().casefold()
    if folded == "":
        return {"kind": "not_found", "query": query}
    by_key = {sku.casefold(): sku for sku in PRODUCTS}
    if folded in by_key:
        return {"kind": "resolved", "sku": by_key[folded]}
    found = _matching(folded)
    exact = [m for m in found if m.exact]
    chosen = found if len(found) == 1 else exact if len(exact) == 1 else []
    if chosen:
        return {"kind": "resolved", "sku": chosen[0].sku}
    if not found:
        return {"kind": "not_found", "query": query}
    return {"kind": "ambiguous", "query": query,
            "candidates": [{"sku": m.sku, "label": f"{m.sku} · {m.name}"} for m in found]}


def handle_named(order: dict) -> dict:
    """Resolve ``order["product"]``, then run ``handle``; ask back when it cannot resolve.

    >>> handle_named({"product": "nothing like it", "region": "north", "limit": 1})["kind"]
    'not_found'
    """
    outcome = resolve_sku(order["product"])
    match outcome:
        case {"kind": "resolved", "sku": sku}:
            new_order = dict(order, sku=sku)
            del new_order["product"]
            result = dict(handle(new_order))
            result["kind"] = "resolved"
            return result
        case {"kind": "ambiguous", "candidates": candidates}:
            options = " or ".join(c["label"] for c in candidates)
            answer = f"Which one do you mean by {order['product'].strip()}: {options}?"
            return {"ok": False, "kind": "ambiguous", "candidates": candidates, "answer": answer, "tool_runs": 0}
        case _:
            answer = f"I found no product called {order['product'].strip()}. Could you give its sku?"
            return {"ok": False, "kind": outcome["kind"], "candidates": [], "answer": answer, "tool_runs": 0}
