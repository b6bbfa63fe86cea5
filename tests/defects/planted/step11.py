"""Planted defects of step 11: one per check, each rejected by its check and by no other step."""

from __future__ import annotations

from ..catalog import d

_KEY_LOOP = """    for sku in PRODUCTS:
        if sku.casefold() == q:
            return {"kind": "resolved", "sku": sku}
"""
_MATCHES = "    matches = sorted(sku for sku, name in PRODUCTS.items() if q in name.casefold())\n"
_EXACT = "    exact = [sku for sku in matches if PRODUCTS[sku].casefold() == q]\n"
_PICK = """    chosen = exact if len(exact) == 1 else matches  # an exact name wins over partial ones
    if len(chosen) == 1:
        (sku,) = chosen
        return {"kind": "resolved", "sku": sku}
"""
_CHOSEN = "    chosen = exact if len(exact) == 1 else matches"

_CANDIDATES = '    candidates = [{"sku": sku, "label": _label(sku)} for sku in matches]\n'
_UNRESOLVED = """        return {"ok": False, "kind": found["kind"], "candidates": found.get("candidates", []),
                "answer": _question(found, order["product"]), "tool_runs": 0}"""
_RESOLVED = """    resolved = {key: value for key, value in order.items() if key != "product"}
    resolved["sku"] = found["sku"]
    return {**handle(resolved), "kind": "resolved"}"""

DEFECTS: dict = {
    "step11/products_table": d(
        ('    "SKU-5000": "Rubber gasket",\n}', '    "SKU-5000": "Rubber Gasket",\n}'), why="a name in another case"
    ),
    "step11/resolve_key": d((_KEY_LOOP, ""), why="skus are not looked up as keys"),
    "step11/resolve_unique": d((_CHOSEN, "    chosen = exact"), why="only an exact name resolves"),
    "step11/exact_wins": d((_CHOSEN, "    chosen = matches"), why="an exact name does not beat partial ones"),
    "step11/casefold": d(
        ("    q = query.strip().casefold()\n    if not q:", "    q = query.strip().lower()\n    if not q:"),
        (_MATCHES, _MATCHES.replace("casefold", "lower")),
        (_EXACT, _EXACT.replace("casefold", "lower")),
        (_KEY_LOOP, _KEY_LOOP.replace("casefold", "lower")),
        why="lower() instead of casefold()",
    ),
    "step11/not_found": d(
        (
            '        return {"kind": "not_found", "query": query}\n    for sku',
            '        return {"kind": "not_found", "query": query.strip()}\n    for sku',
        ),
        why="a blank query comes back stripped",
    ),
    "step11/ambiguous": d(
        (_CANDIDATES, _CANDIDATES.replace("in matches]", "in matches[:2]]")), why="only the first two candidates"
    ),
    "step11/candidates_sorted": d(
        (_MATCHES, _MATCHES.replace("sorted(", "list(")), why="candidates in PRODUCTS' order"
    ),
    "step11/candidate_labels": d(
        ('    return f"{PRODUCTS[sku]} ({sku})"', "    return PRODUCTS[sku]"), why="the label is the name alone"
    ),
    "step11/no_tool_runs": d(
        (
            _MATCHES,
            _MATCHES + "    if len(matches) == 1:\n"
            '        call_tool("stock_lookup", {"sku": matches[0], "region": "central", "limit": 1})\n',
        ),
        why="resolve_sku checks its guess with a lookup",
    ),
    "step11/products_unchanged": d(
        (_CANDIDATES, _CANDIDATES + "    PRODUCTS[query] = candidates[0]['label']\n"),
        why="resolve_sku stores the query in PRODUCTS",
    ),
    "step11/named_unresolved": d(
        (_UNRESOLVED, _UNRESOLVED.replace('"tool_runs": 0}', '"tool_runs": None}')), why="tool_runs None instead of 0"
    ),
    "step11/named_answer": d(
        (
            '    return f"{query.strip()!r} matches several products: {labels}. Which one do you mean?"',
            '    return f"{query.strip()!r} matches several products. Which one do you mean?"',
        ),
        why="the answer lists no candidate",
    ),
    "step11/named_resolved": d(
        (_RESOLVED, _RESOLVED.replace('if key != "product"', "if key")), why="product left in handle's order"
    ),
    "step11/named_order_unchanged": d(
        (
            _RESOLVED,
            '    resolved = order\n    resolved["sku"] = found["sku"]\n'
            '    del resolved["product"]\n    return {**handle(resolved), "kind": "resolved"}',
        ),
        why="the caller's order is changed in place",
    ),
}
