"""Step 11 in a third style: a resolver class, a generator of hits and ``operator.itemgetter``.

Differences from the reference on purpose: ``PRODUCTS`` is written in sku
order but the work is done by a small ``_Resolver`` class made per call;
matches come from a generator and are sorted with ``itemgetter``; the exact
match is found with ``next(...)`` after counting; labels are
``"Steel bolt M6 [SKU-1001]"``; ``handle_named`` copies the order with ``{**order}``
and ``pop``s ``product`` off the copy, and its answer is built from a list of parts.
"""
from __future__ import annotations

import operator

PRODUCTS = {}
PRODUCTS["SKU-1001"] = "Steel bolt M6"
PRODUCTS["SKU-2040"] = "Steel bolt M8"
PRODUCTS["SKU-3300"] = "Copper wire 2 mm"
PRODUCTS["SKU-4411"] = "Copper wire 4 mm"
PRODUCTS["SKU-5000"] = "Rubber gasket"


class _Resolver:
    def __init__(self, table: dict, query: str) -> None:
        self.items = list(table.items())
        self.query = query
        self.q = query.strip().casefold()

    def hits(self):
        for sku, name in self.items:
            if self.q in name.casefold():
                yield {"sku": sku, "label": f"{name} [{sku}]", "name": name}

    def answer(self) -> dict:
        if not self.q:
            return {"kind": "not_found", "query": self.query}
        for sku, _name in self.items:
            if self.q == sku.casefold():
                return {"kind": "resolved", "sku": sku}
        hits = sorted(self.hits(), key=operator.itemgetter("sku"))
        if not hits:
            return {"kind": "not_found", "query": self.query}
        exact_count = sum(1 for h in hits if h["name"].casefold() == self.q)
        if len(hits) == 1:
            return {"kind": "resolved", "sku": hits[0]["sku"]}
        if exact_count == 1:
            return {"kind": "resolved", "sku": next(h["sku"] for h in hits if h["name"].casefold() == self.q)}
        return {"kind": "ambiguous", "query": self.query,
                "candidates": [{"sku": h["sku"], "label": h["label"]} for h in hits]}


def resolve_sku(query: str) -> dict:
    """One sku for a query, or why not.

    >>> resolve_sku(" STEEL BOLT ")["kind"]
    'ambiguous'
    """
    return _Resolver(PRODUCTS, query).answer()


def handle_named(order: dict) -> dict:
    """``handle`` for an order naming a product.

    >>> handle_named({"product": "", "region": "north", "limit": 1})["tool_runs"]
    0
    """
    found = resolve_sku(order["product"])
    if found["kind"] == "resolved":
        copy = {**order}
        copy.pop("product")
        copy["sku"] = found["sku"]
        return {**handle(copy), "kind": found["kind"]}
    parts = [f"'{order['product'].strip()}'"]
    candidates = found.get("candidates") or []
    if candidates:
        parts.append("could be " + ", ".join(c["label"] for c in candidates))
    else:
        parts.append("matches no product")
    return {"ok": False, "kind": found["kind"], "candidates": candidates,
            "answer": " ".join(parts) + ". Which product do you mean?", "tool_runs": 0}
