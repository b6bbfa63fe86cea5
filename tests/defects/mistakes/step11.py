"""Plausible step-11 mistakes: each must fail the check it names, and no other step."""

from __future__ import annotations

from ..catalog import d

_KEY_LOOP = """    for sku in PRODUCTS:
        if sku.casefold() == q:
            return {"kind": "resolved", "sku": sku}
"""
_START = "    q = query.strip().casefold()\n    if not q:"
_MATCHES = "    matches = sorted(sku for sku, name in PRODUCTS.items() if q in name.casefold())\n"
_EXACT = "    exact = [sku for sku in matches if PRODUCTS[sku].casefold() == q]\n"
_PICK = """    chosen = exact if len(exact) == 1 else matches  # an exact name wins over partial ones
    if len(chosen) == 1:
        (sku,) = chosen
        return {"kind": "resolved", "sku": sku}
"""

_CANDIDATES = '    candidates = [{"sku": sku, "label": _label(sku)} for sku in matches]\n'
_AMBIGUOUS = '    return {"kind": "ambiguous", "query": query, "candidates": candidates}\n'
_UNRESOLVED = """        return {"ok": False, "kind": found["kind"], "candidates": found.get("candidates", []),
                "answer": _question(found, order["product"]), "tool_runs": 0}"""
_RESOLVED = """    resolved = {key: value for key, value in order.items() if key != "product"}
    resolved["sku"] = found["sku"]
    return {**handle(resolved), "kind": "resolved"}"""
_NOT_FOUND_Q = '    return f"No product matches {query.strip()!r}: which product do you mean?"'

MISTAKES: dict = {
    # -- the spec's table mistyped
    "products_missing_gasket": ("step11/products_table", d(('    "SKU-5000": "Rubber gasket",\n}', "}"))),
    "products_wire_without_space": ("step11/products_table", d(('"Copper wire 2 mm"', '"Copper wire 2mm"'))),
    "products_as_list_of_pairs": (
        "step11/products_table",
        d(('PRODUCTS = {\n    "SKU-1001": "Steel bolt M6",', 'PRODUCTS = {\n    "SKU-1001": "Steel Bolt M6",')),
    ),
    # -- keys: compared without casefold, or not at all, or after the names
    "key_case_sensitive": (
        "step11/resolve_key",
        d((_KEY_LOOP, _KEY_LOOP.replace("sku.casefold() == q", "sku == query.strip()"))),
    ),
    "key_without_strip": (
        "step11/resolve_key",
        d((_KEY_LOOP, _KEY_LOOP.replace("sku.casefold() == q", "sku.casefold() == query.casefold()"))),
    ),
    "key_after_names": ("step11/resolve_key", d((_KEY_LOOP, ""), (_PICK, _PICK + _KEY_LOOP))),
    # -- unique partial matches
    "unique_needs_word_start": (
        "step11/resolve_unique",
        d((_MATCHES, _MATCHES.replace("q in name.casefold()", "name.casefold().startswith(q)"))),
    ),
    "unique_query_not_stripped": (
        "step11/resolve_unique",
        d(
            (_MATCHES, _MATCHES.replace("q in name", "query.casefold() in name")),
            (_EXACT, _EXACT.replace("== q", "== query.casefold()")),
        ),
    ),
    "unique_whole_words_only": (
        "step11/resolve_unique",
        d((_MATCHES, _MATCHES.replace("q in name.casefold()", "q in name.casefold().split()"))),
    ),
    # -- exact match
    "exact_compared_case_sensitively": (
        "step11/exact_wins",
        d((_EXACT, _EXACT.replace("PRODUCTS[sku].casefold() == q", "PRODUCTS[sku] == query.strip()"))),
    ),
    "exact_not_stripped": (
        "step11/exact_wins",
        d((_EXACT, _EXACT.replace("PRODUCTS[sku].casefold() == q", "PRODUCTS[sku].casefold() == query.casefold()"))),
    ),
    "exact_means_starts_with": (
        "step11/exact_wins",
        d((_EXACT, _EXACT.replace("PRODUCTS[sku].casefold() == q", "PRODUCTS[sku].casefold().startswith(q)"))),
    ),
    # -- casefold
    "lower_for_names_only": ("step11/casefold", d((_MATCHES, _MATCHES.replace("name.casefold()", "name.lower()")))),
    "lower_for_query": ("step11/casefold", d((_START, "    q = query.strip().lower()\n    if not q:"))),
    "lower_then_sharp_s_by_hand": (
        "step11/casefold",
        d(
            (_START, '    q = query.strip().lower().replace("ß", "ss")\n    if not q:'),
            (_MATCHES, _MATCHES.replace("name.casefold()", "name.lower()")),
        ),
    ),
    # -- not found / blank
    "blank_not_special": ("step11/not_found", d((_START, "    q = query.strip().casefold()\n    if False:"))),
    "blank_checked_before_strip": (
        "step11/not_found",
        d((_START, "    q = query.strip().casefold()\n    if not query:")),
    ),
    "key_prefix_counts": (
        "step11/not_found",
        d((_KEY_LOOP, _KEY_LOOP.replace("sku.casefold() == q", "sku.casefold().startswith(q)"))),
    ),
    # -- ambiguous: picking one, or dropping some
    "ambiguous_picks_first": (
        "step11/ambiguous",
        d((_PICK, _PICK.replace("if len(chosen) == 1:", "if len(chosen) >= 1:\n        chosen = chosen[:1]"))),
    ),
    "ambiguous_query_stripped": (
        "step11/ambiguous",
        d((_AMBIGUOUS, _AMBIGUOUS.replace('"query": query,', '"query": query.strip(),'))),
    ),
    "ambiguous_duplicates_names_once": (
        "step11/ambiguous",
        d(
            (
                _CANDIDATES,
                '    candidates = [{"sku": sku, "label": _label(sku)} for sku in '
                "{PRODUCTS[s]: s for s in matches}.values()]\n",
            )
        ),
    ),
    # -- candidates sorted and labelled
    "candidates_sorted_by_name": (
        "step11/candidates_sorted",
        d(
            (
                _MATCHES,
                _MATCHES.replace("sorted(sku for", "sorted((sku for").replace(
                    "name.casefold())", "name.casefold()), key=lambda s: (PRODUCTS[s], s[::-1]))"
                ),
            )
        ),
    ),
    "candidates_reversed": (
        "step11/candidates_sorted",
        d((_CANDIDATES, _CANDIDATES.replace("in matches]", "in reversed(matches)]"))),
    ),
    "candidates_table_order": (
        "step11/candidates_sorted",
        d((_CANDIDATES, _CANDIDATES.replace("in matches]", "in PRODUCTS if sku in matches]"))),
    ),
    "label_sku_only": ("step11/candidate_labels", d(('    return f"{PRODUCTS[sku]} ({sku})"', "    return sku"))),
    "label_key_named_name": (
        "step11/candidate_labels",
        d((_CANDIDATES, '    candidates = [{"sku": sku, "name": _label(sku)} for sku in matches]\n')),
    ),
    "label_with_extra_field": (
        "step11/candidate_labels",
        d(
            (
                _CANDIDATES,
                '    candidates = [{"sku": sku, "label": _label(sku), "name": PRODUCTS[sku]} for sku in matches]\n',
            )
        ),
    ),
    # -- tool bodies and PRODUCTS
    "resolve_checks_stock": (
        "step11/no_tool_runs",
        d((_PICK, '    for sku in matches:\n        stock_lookup(sku, "central", 1)\n' + _PICK)),
    ),
    "resolve_confirms_with_call_tool": (
        "step11/no_tool_runs",
        d(
            (
                _PICK,
                _PICK.replace(
                    '        return {"kind": "resolved", "sku": sku}',
                    '        call_tool("stock_lookup", {"sku": sku, "region": "central", "limit": 1})\n'
                    '        return {"kind": "resolved", "sku": sku}',
                ),
            )
        ),
    ),
    "resolve_prunes_with_legacy_stock": (
        "step11/no_tool_runs",
        d(
            (
                _CANDIDATES,
                '    matches = [sku for sku in matches if legacy_stock(sku, "central", 1) or True]\n' + _CANDIDATES,
            )
        ),
    ),
    "resolve_casefolds_products_once": (
        "step11/products_unchanged",
        d(
            (
                _MATCHES,
                "    for sku, name in list(PRODUCTS.items()):\n        PRODUCTS[sku] = name.casefold()\n" + _MATCHES,
            )
        ),
    ),
    "resolve_products_sorted_in_place": (
        "step11/products_unchanged",
        d(
            (
                _MATCHES,
                "    ordered = sorted(PRODUCTS.items())\n    PRODUCTS.clear()\n    PRODUCTS.update(ordered)\n"
                + _MATCHES,
            )
        ),
    ),
    "resolve_memoises_in_products": (
        "step11/products_unchanged",
        d(
            (
                _PICK,
                _PICK.replace(
                    '        return {"kind": "resolved", "sku": sku}',
                    "        PRODUCTS.setdefault(query.strip(), PRODUCTS[sku])  # remember the answer\n"
                    '        return {"kind": "resolved", "sku": sku}',
                ),
            )
        ),
    ),
    # -- resolve_sku writes into PRODUCTS: the resolve checks see it; handle_named's checks, with the
    #    grader's resolve_sku in that name, do not (on no seed, whatever order the probe's queries come in).
    "resolve_remembers_unknown_queries": (
        "step11/products_unchanged",
        d(
            (
                '    if not matches:\n        return {"kind": "not_found", "query": query}\n',
                "    if not matches:\n        PRODUCTS[query.strip()] = query.strip()  # known next time\n"
                '        return {"kind": "not_found", "query": query}\n',
            )
        ),
    ),
    "resolve_drops_duplicate_names": (
        "step11/products_unchanged",
        d(
            (
                _CANDIDATES,
                _CANDIDATES + "    for sku in matches[1:]:\n        if PRODUCTS[sku] == PRODUCTS[matches[0]]:\n"
                "            del PRODUCTS[sku]  # one product per name\n",
            )
        ),
    ),
    "resolve_renames_to_labels": (
        "step11/products_unchanged",
        d(
            (
                _CANDIDATES,
                _CANDIDATES + "    for candidate in candidates:\n"
                "        PRODUCTS[candidate['sku']] = candidate['label']  # told apart next time\n",
            )
        ),
    ),
    "resolve_stores_ambiguous_labels": (
        "step11/products_unchanged",
        d(
            (
                _CANDIDATES,
                _CANDIDATES
                + '    PRODUCTS[query.strip()] = "; ".join(c["label"] for c in candidates)  # the last list\n',
            )
        ),
    ),
    "resolve_tags_names_with_skus": (
        "step11/products_unchanged",
        d((_CANDIDATES, _CANDIDATES + '    for sku in matches:\n        PRODUCTS[sku] = f"{PRODUCTS[sku]} #{sku}"\n')),
    ),
    # -- handle_named, not resolved
    "named_tool_runs_missing": (
        "step11/named_unresolved",
        d((_UNRESOLVED, _UNRESOLVED.replace(', "tool_runs": 0}', "}"))),
    ),
    "named_candidates_none": (
        "step11/named_unresolved",
        d((_UNRESOLVED, _UNRESOLVED.replace('found.get("candidates", [])', 'found.get("candidates")'))),
    ),
    "named_calls_handle_anyway": (
        "step11/named_unresolved",
        d((_UNRESOLVED, '        handle({**order, "sku": order["product"]})\n' + _UNRESOLVED)),
    ),
    "named_answer_without_query": ("step11/named_answer", d((_NOT_FOUND_Q, '    return "No such product."'))),
    "named_answer_names_skus_only": (
        "step11/named_answer",
        d(
            (
                '    labels = "; ".join(c["label"] for c in found["candidates"])',
                '    labels = "; ".join(c["sku"] for c in found["candidates"])',
            )
        ),
    ),
    "named_answer_first_label_only": (
        "step11/named_answer",
        d(
            (
                '    labels = "; ".join(c["label"] for c in found["candidates"])',
                '    labels = found["candidates"][0]["label"]',
            )
        ),
    ),
    # -- handle_named, resolved
    "named_kind_missing": ("step11/named_resolved", d((_RESOLVED, _RESOLVED.replace(', "kind": "resolved"}', "}")))),
    "named_sku_is_query": (
        "step11/named_resolved",
        d((_RESOLVED, _RESOLVED.replace('resolved["sku"] = found["sku"]', 'resolved["sku"] = order["product"]'))),
    ),
    "named_result_rebuilt": (
        "step11/named_resolved",
        d(
            (
                _RESOLVED,
                _RESOLVED.replace(
                    'return {**handle(resolved), "kind": "resolved"}',
                    'result = handle(resolved)\n    return {"ok": result["ok"], '
                    '"answer": result["answer"], "kind": "resolved"}',
                ),
            )
        ),
    ),
    "named_pops_product": (
        "step11/named_order_unchanged",
        d(
            (
                _RESOLVED,
                '    resolved = order\n    resolved.pop("product")\n    resolved["sku"] = found["sku"]\n'
                '    return {**handle(dict(resolved)), "kind": "resolved"}',
            )
        ),
    ),
    "named_sets_sku_on_order": (
        "step11/named_order_unchanged",
        d((_RESOLVED, '    order["sku"] = found["sku"]\n' + _RESOLVED.replace("order.items()", "order.items()"))),
    ),
    "named_shallow_update": (
        "step11/named_order_unchanged",
        d(
            (
                _RESOLVED,
                '    order.update(sku=found["sku"])\n    resolved = {k: v for k, v in order.items() if k != "product"}\n'
                '    return {**handle(resolved), "kind": "resolved"}',
            )
        ),
    ),
    # -- (part-two hints) a query matches a key or a name, never a bare number (the part of a sku after its prefix).
    "bare_number_resolves": (
        "step11/not_found",
        d(
            (
                _KEY_LOOP,
                _KEY_LOOP.replace(
                    "if sku.casefold() == q:", 'if q in (sku.casefold(), sku.casefold().partition("-")[2]):'
                ),
            )
        ),
    ),
    "bare_number_matches_key_end": (
        "step11/not_found",
        d(
            (
                _KEY_LOOP,
                _KEY_LOOP.replace(
                    "if sku.casefold() == q:",
                    "if sku.casefold() == q or (q[:1].isdigit() and sku.casefold().endswith(q)):",
                ),
            )
        ),
    ),
    # -- (part-two hints) a query is stripped with str.strip (any Unicode whitespace), not step 9's ASCII strip.
    "resolve_strips_ascii_only": (
        "step11/resolve_unique",
        d((_START, '    q = query.strip(" \\t\\n\\r\\x0b\\x0c").casefold()\n    if not q:')),
    ),
    "key_compared_with_ascii_strip": (
        "step11/resolve_key",
        d(
            (
                _KEY_LOOP,
                _KEY_LOOP.replace(
                    "sku.casefold() == q", 'sku.casefold() == query.strip(" \\t\\n\\r\\x0b\\x0c").casefold()'
                ),
            )
        ),
    ),
}
