"""Doubles for step 11 (``resolve_sku``), merged into :data:`grader.engine.doubles.DOUBLES`.

``spec_resolve`` (for ``resolve_sku``)
    LAB_SPEC step 11 over the module's ``PRODUCTS`` as it is when called:
    a key, else the names containing the stripped, casefolded query (an exact
    name wins over partial ones), ``not_found`` for none or a blank query,
    ``ambiguous`` with every match sorted by sku, each labelled
    ``"<name> (<sku>)"``. The ``handle_named`` checks put it in
    ``resolve_sku``, so a ``resolve_sku`` slip (one that writes into
    ``PRODUCTS``, say, which would change the later queries of a probe on
    some seeds) costs the resolve checks only, and ``handle_named`` is judged
    on its own logic. A module that resolves inside ``handle_named`` is
    judged on that.

Example::

    >>> import types
    >>> m = types.SimpleNamespace(PRODUCTS={"B-2": "Oak hinge", "A-1": "Oak hinge XL", "C-3": "Zinc clamp"})
    >>> resolve = DOUBLES["spec_resolve"](m, {})
    >>> resolve(" oak hinge "), resolve("zinc")["sku"], resolve("\\t")["kind"]
    ({'kind': 'resolved', 'sku': 'B-2'}, 'C-3', 'not_found')
    >>> resolve("OAK")["candidates"][0]
    {'sku': 'A-1', 'label': 'Oak hinge XL (A-1)'}
"""

from __future__ import annotations

from typing import Any

from grader import spec as lab_spec
from grader.engine.wire import JsonDict, LearnerFn


def resolved(products: JsonDict, query: str) -> JsonDict:
    """What ``resolve_sku(query)`` returns under LAB_SPEC step 11 for ``products`` (not changed)."""
    q = query.strip().casefold()
    if not q:  # "" is inside every name
        return {"kind": lab_spec.NOT_FOUND, "query": query}
    for sku in products:
        if sku.casefold() == q:
            return {"kind": lab_spec.RESOLVED, "sku": sku}
    found = sorted(sku for sku, name in products.items() if q in name.casefold())
    exact = [sku for sku in found if products[sku].casefold() == q]
    chosen = exact if len(exact) == 1 else found
    if len(chosen) == 1:
        return {"kind": lab_spec.RESOLVED, "sku": chosen[0]}
    if not found:
        return {"kind": lab_spec.NOT_FOUND, "query": query}
    return {
        "kind": lab_spec.AMBIGUOUS,
        "query": query,
        "candidates": [{"sku": sku, "label": f"{products[sku]} ({sku})"} for sku in found],
    }


def resolve_double(module: Any, params: JsonDict) -> LearnerFn:
    """``resolve_sku(query)`` over ``module.PRODUCTS`` at call time (a copy is read: nothing is written)."""

    def resolve_sku(query: Any) -> JsonDict:
        return resolved(dict(module.PRODUCTS), query)

    return resolve_sku


DOUBLES = {"spec_resolve": resolve_double}
