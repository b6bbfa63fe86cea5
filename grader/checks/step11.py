"""Step 11 checks: identity resolution (``PRODUCTS``, ``resolve_sku``, ``handle_named``; LAB_SPEC part two).

``PRODUCTS`` itself is judged once, against the spec's table. Every other
probe first replaces it (op ``set``) with a table the grader makes for the
seed (:func:`make_table`): random skus and names in shuffled order, built so
that each class of query is planted on every seed -- a key (also one that
another product's name contains), exactly one partial match, an exact name
that beats partial ones, casefold pairs (``"STRASSE"``/``"Straße"``), 2+
matches (a shared word, two products of one name), no match, a sku's bare
number (no key), a blank query -- each with case and whitespace variants,
non-ASCII blanks (``str.strip`` removes them) among them. The seed picks the words, skus
and variants, never the classes, and the parent computes what each query
must give with its own reading of the spec (:func:`expected`).

``handle_named`` runs on the learner's own route first, its ``handle``,
``call_tool`` and ``resolve_sku`` watched (what ``handle`` received and
returned is read off the record); the grader's doubles in those names
(``spec_resolve`` over the ``PRODUCTS`` the probe set) only attribute a
failure to another step. ``PRODUCTS`` is set to the probe's table again before
each order, so a ``resolve_sku`` that writes into it changes no later order
(the seed's order of orders would otherwise decide the grade), and a
failure that comes from ``resolve_sku``'s answer for the order's query names
``resolve_sku``, whose rule is wrong, not ``handle_named``.
"""

from __future__ import annotations

import random
from typing import Any

from grader import spec
from grader.checks import cases
from grader.checks._common import (
    TOOL_SPIES_ORIGINAL,
    Fail,
    add,
    call_op,
    call_probe,
    check_calls_unchanged,
    check_expect,
    double_op,
    judged,
    on_real_route,
    op,
    outcome,
    records_of,
    value_of,
)
from grader.checks.registry import Judge, Observation, Probe, Verdict
from grader.engine.encode import encode, show, strict_equal
from grader.engine.wire import JsonDict

MATERIALS = ["Steel", "Copper", "Brass", "Nylon", "Zinc", "Oak", "Glass", "Cobalt", "Teflon", "Granite", "Chrome"]
ITEMS = [
    "bolt",
    "wire",
    "gasket",
    "washer",
    "hinge",
    "clamp",
    "valve",
    "rivet",
    "bracket",
    "pulley",
    "socket",
    "spacer",
    "flange",
]
SIZES = ["M4", "M6", "M8", "2 mm", "4 mm", "6 mm", "XL", "short", "long"]
# (word in a name, query for it) pairs that only str.casefold matches (lower() keeps the ß).
FOLD_NAME_SHARP = [("Straße", "STRASSE"), ("Maßband", "MASSBAND"), ("Fußteil", "FUSSTEIL")]
FOLD_QUERY_SHARP = [("GROSS", "groß"), ("WEISS", "weiß"), ("SPROSSE", "sproße")]
ABSENT = ["titanium", "sprocket", "magnet", "ladder", "pipe"]
BLANKS = ["", "   ", "\t \n"]
RESOLVE = "resolve_sku"
NAMED = "handle_named"
NO_RUNS = {"stock_lookup": 0, "legacy_stock": 0}


# ---------------------------------------------------------------------------
# The parent's reading of the spec
# ---------------------------------------------------------------------------


def matches(table: JsonDict, query: str) -> list[Any]:
    """Skus whose name contains ``query`` (stripped, casefolded), sorted.

    >>> matches({"B": "Steel bolt", "A": "steel nut", "C": "Oak"}, " STEEL ")
    ['A', 'B']
    """
    q = query.strip().casefold()
    return sorted(sku for sku, name in table.items() if q in name.casefold())


def expected(table: JsonDict, query: str) -> JsonDict:
    """What ``resolve_sku(query)`` must return for ``table`` (candidates as skus only).

    >>> t = {"S-2": "Oak hinge", "S-1": "Oak hinge XL", "S-3": "Zinc clamp"}
    >>> expected(t, "oak hinge"), expected(t, " s-3")
    ({'kind': 'resolved', 'sku': 'S-2'}, {'kind': 'resolved', 'sku': 'S-3'})
    >>> expected(t, "oak"), expected(t, " ")
    ({'kind': 'ambiguous', 'query': 'oak', 'candidates': ['S-1', 'S-2']}, {'kind': 'not_found', 'query': ' '})
    """
    q = query.strip().casefold()
    if not q:
        return {"kind": spec.NOT_FOUND, "query": query}
    keys = [sku for sku in table if sku.casefold() == q]
    if keys:
        return {"kind": spec.RESOLVED, "sku": keys[0]}
    found = matches(table, query)
    exact = [sku for sku in found if table[sku].casefold() == q]
    if len(found) == 1 or len(exact) == 1:
        return {"kind": spec.RESOLVED, "sku": (exact or found)[0]}
    if not found:
        return {"kind": spec.NOT_FOUND, "query": query}
    return {"kind": spec.AMBIGUOUS, "query": query, "candidates": found}


# ---------------------------------------------------------------------------
# The grader's tables, one per probe, every class planted
# ---------------------------------------------------------------------------


# The ways a query is written around a name, one per position in a class's list: the seed picks the names,
# never which of these a class meets, so a matcher that misses one of them fails on every seed.
VARIANTS = ((" \t", "\n", str.upper), ("", " \t", str.swapcase), ("\t", "", str.lower), ("  ", "  ", str.title))


def _variant(text: str, position: int, changed: bool = False) -> str:
    """``text`` written the ``position``-th way (``changed``: never as written), with whitespace matching ignores.

    >>> _variant("Oak hinge", 0), _variant("Oak hinge", 1)
    (' \\tOAK HINGE\\n', 'oAK HINGE \\t')
    >>> _variant("Oak Hinge", 3, changed=True).strip() != "Oak Hinge"
    True
    """
    left, right, case = VARIANTS[position % len(VARIANTS)]
    written = case(text)
    if changed and written == text:
        written = text.swapcase()
    return left + written + right


def _skus(rng: random.Random, n: int) -> list[Any]:
    numbers = rng.sample(range(1000, 10000), n)
    return [f"{rng.choice(['SKU', 'SKU', 'PRD', 'P'])}-{number}" for number in numbers]


def _unsort(pairs: list[Any], positions: list[Any]) -> None:
    """Reverse the entries at ``positions`` when their skus are in sorted order there (a sorted table proves nothing).

    >>> pairs = [("A", "x"), ("C", "y"), ("B", "x")]
    >>> _unsort(pairs, [0, 2]); pairs
    [('B', 'x'), ('C', 'y'), ('A', 'x')]
    """
    skus = [pairs[i][0] for i in positions]
    if skus == sorted(skus):
        entries = [pairs[i] for i in positions]
        for i, entry in zip(positions, reversed(entries)):
            pairs[i] = entry


def make_table(rng: random.Random) -> tuple[JsonDict, JsonDict]:
    """A table of 12 products in shuffled order, and the queries of each class of query.

    >>> table, queries = make_table(random.Random(3))
    >>> sorted(queries) == sorted(CLASSES)
    True
    >>> all(expected(table, q)["kind"] == CLASSES[c] for c, qs in queries.items() for q in qs)
    True
    """
    mats, items, sizes = rng.sample(MATERIALS, 5), rng.sample(ITEMS, 9), rng.sample(SIZES, 4)
    sharp, folded = rng.choice(FOLD_NAME_SHARP), rng.choice(FOLD_QUERY_SHARP)
    names = [f"{mats[0]} {items[i]} {sizes[i]}" for i in range(3)]  # one word, three names
    names += [f"{mats[1]} {items[3]}", f"{mats[1]} {items[3]} {sizes[0]}"]  # exact beats partial
    names += [f"{mats[2]} {items[4]} {sizes[1]}"]  # unique words
    names += [f"{sharp[0]} {items[5]}", f"{folded[0]} {items[6]}"]  # casefold pairs
    names += [f"{mats[3]} {items[7]}"] * 2  # one name, two products
    skus = _skus(rng, len(names) + 2)
    # The shared word's skus run against its names' order: sorted by name is never sorted by sku.
    names[:3], skus[:3] = sorted(names[:3], key=str.casefold), sorted(skus[:3], reverse=True)
    target, kit = skus[-2:]
    pairs = list(zip(skus, names)) + [(target, f"{mats[4]} {items[8]}"), (kit, f"Spare kit for {target}")]
    rng.shuffle(pairs)
    for group in (names[0].split()[0], names[-1]):  # each 2+ match group out of sku order, on every seed
        _unsort(pairs, [i for i, (_, name) in enumerate(pairs) if name.startswith(group)])
    table = dict(pairs)
    unique_sku = next(sku for sku, name in pairs if name.startswith(mats[2]))
    prefix = rng.choice([sku[:-1] for sku in skus[:-2] if sku[:-1] not in target])  # part of a key only
    # A sku's number without its prefix is no key, and no name holds it (the kit's name holds the target's only).
    number = rng.choice(skus[:-2]).partition("-")[2]
    exact = f"{mats[1]} {items[3]}"
    # str.strip removes any Unicode whitespace (LAB_SPEC step 11, unlike step 9's ASCII strip): a key, a unique
    # match and an exact name between non-ASCII blanks ('\u00a0', '\u3000', ...), on every seed.
    queries = {
        "key": [
            _variant(target, 0),
            _variant(unique_sku, 2),
            _variant(rng.choice(skus[:-2]), 1),
            cases.unicode_padded(rng, _variant(rng.choice(skus[:-2]), 3).strip()),
        ],
        "unique": [
            _variant(mats[2], 0),
            _variant(items[4], 1),
            _variant(f"{items[4]} {sizes[1]}", 2),
            cases.unicode_padded(rng, _variant(items[4], 3).strip()),
        ],
        "exact_wins": ["  " + exact + "\t", _variant(exact, 0, changed=True), cases.unicode_padded(rng, exact)],
        "casefold": [" \t" + sharp[1], folded[1] + "\n "],  # padded on both sides, with spaces, tab and newline
        "ambiguous": [_variant(mats[0], 0), _variant(f"{mats[3]} {items[7]}", 1)],
        "not_found": [
            _variant(rng.choice(ABSENT), 0),
            _variant(f"{mats[2]} {items[5]}", 1),
            prefix,
            number,
            f" {number} ",
            *BLANKS,
        ],  # a bare number, and every kind of blank, every seed
    }
    return table, queries


CLASSES = {
    "key": spec.RESOLVED,
    "unique": spec.RESOLVED,
    "exact_wins": spec.RESOLVED,
    "casefold": spec.RESOLVED,
    "ambiguous": spec.AMBIGUOUS,
    "not_found": spec.NOT_FOUND,
}


def _set_products(table: JsonDict) -> JsonDict:
    return op("set", name="PRODUCTS", value=table, label=f"PRODUCTS = {table!r}")


def resolve_probe(
    rng: random.Random, classes: tuple[Any, ...], *, tail: tuple[Any, ...] = (), requery: bool = False
) -> Probe:
    """``resolve_sku`` of every query of ``classes`` on a fresh grader table (spied tools; ``tail`` ops last).

    ``requery``: then the first of those queries once more, after PRODUCTS changed so that its answer
    changes (:func:`_requery_ops`): an answer kept from the table before (a cache) shows there.
    """
    table, queries = make_table(rng)
    calls = [call_op(RESOLVE, q, runs=NO_RUNS) for c in classes for q in queries[c]]
    rng.shuffle(calls)
    again = _requery_ops(table, calls[0]["args"][0]) if requery and calls else []
    probe = call_probe([_set_products(table), *calls, *again, *tail], spies=TOOL_SPIES_ORIGINAL, reset=True)
    probe.params["table"] = encode(table)
    return probe


def _requery_ops(table: JsonDict, query: str) -> list[Any]:
    """PRODUCTS without the products ``query`` resolves to in ``table``, then ``query`` again (judged there).

    >>> ops = _requery_ops({"S-1": "Oak hinge", "S-2": "Zinc clamp"}, " s-1")
    >>> ops[0]["value"], expected(ops[1]["table"], " s-1")["kind"]
    ({'S-2': 'Zinc clamp'}, 'not_found')
    """
    found = expected(table, query)
    gone = {found["sku"]} if "sku" in found else set(found.get("candidates") or [])
    smaller = {sku: name for sku, name in table.items() if sku not in gone}
    operation = call_op(RESOLVE, query, runs=NO_RUNS)
    operation["label"] += REQUERY_NOTE
    operation["table"] = encode(smaller)
    return [_set_products(smaller), operation]


REQUERY_NOTE = "  # the same query again, after PRODUCTS changed"
REQUERY_WHY = (
    "resolve_sku gave the answer of the table before PRODUCTS changed: read PRODUCTS each time it is called, and "
    "keep no answers between calls (a functools.lru_cache or a dict of answers on resolve_sku returns an old "
    "table's sku)."
)


def _resolve_calls(probe: Probe, obs: JsonDict) -> list[Any]:
    """``(query, value, expected, label)`` of each ``resolve_sku`` call (it must have returned)."""
    out = []
    for operation, rec in judged(probe, records_of(probe, obs)):
        if operation.get("fn") != RESOLVE:
            continue
        query = operation["args"][0]
        value = value_of(
            rec, operation, f"resolve_sku did not return for {query!r}: it must return a dict for any str."
        )
        table = operation.get("table", probe.params["table"])  # a call after PRODUCTS changed carries its table
        out.append((query, value, expected(table, query), operation["label"]))
    return out


def _kind_judge(message: str, *, exact_dict: bool = True) -> Judge:
    """A judge: each call returns the expected kind (and, for resolved/not_found, the exact dict)."""

    def judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
        for probe, obs in zip(probes, observations):
            for _query, value, want, label in _resolve_calls(probe, obs):
                # The call after PRODUCTS changed says why it may differ (an answer kept from before).
                why = REQUERY_WHY if label.endswith(REQUERY_NOTE) else message
                if want["kind"] == spec.AMBIGUOUS:
                    got = value.get("kind") if isinstance(value, dict) else value
                    if got != spec.AMBIGUOUS:
                        raise Fail(why, call=label, expected="{'kind': 'ambiguous', ...}", got=show(value))
                elif exact_dict and not strict_equal(value, encode(want)):
                    raise Fail(why, call=label, expected=show(encode(want)), got=show(value))
        return Verdict.ok()

    return judge


add(
    "step11/products_table",
    2,
    "PRODUCTS maps each sku of STOCK to its product name, exactly",
    "Write PRODUCTS as a dict with the five skus of STOCK as keys and the names of notebook 11, "
    "spelled exactly (case and spaces too).",
    ["11.products"],
    lambda rng: [call_probe([op("attr", name="PRODUCTS", label="PRODUCTS")], reset=True)],
    lambda probes, observations: _products_judge(probes, observations),
)


def _products_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    operation, rec = judged(probes[0], records_of(probes[0], observations[0]))[0]
    if "value" not in rec or not strict_equal(rec["value"], encode(spec.PRODUCTS)):
        raise Fail(
            "PRODUCTS is not the spec's table.", call="PRODUCTS", expected=show(encode(spec.PRODUCTS)), got=outcome(rec)
        )
    return Verdict.ok()


def _resolve_check(
    check_id: str, points: int, title: str, hint: str, rules: list[Any], classes: tuple[Any, ...], message: str
) -> None:
    add(
        check_id,
        points,
        title,
        hint,
        ["11.reads_now", *rules],
        # The key check asks one query again after PRODUCTS changed: resolve_sku reads PRODUCTS when called.
        lambda rng: [resolve_probe(rng, classes, requery=check_id == "step11/resolve_key")],
        _kind_judge(message),
    )


_resolve_check(
    "step11/resolve_key",
    2,
    "A query equal to a key of PRODUCTS resolves to that key",
    "Compare q = query.strip().casefold() with each key's casefold() first (str.strip(): any Unicode whitespace "
    "goes): a sku resolves to itself, even when some product's name contains that sku text.",
    ["11.key"],
    ("key",),
    "A sku (any case, with whitespace around it) must give {'kind': 'resolved', 'sku': <that key>}.",
)
_resolve_check(
    "step11/resolve_unique",
    2,
    "Exactly one name containing the query resolves to its sku",
    "Strip the query with str.strip() (any Unicode whitespace, '\\u00a0' and '\\u3000' too: not step 9's ASCII "
    "strip), casefold it and each name, and keep every sku whose name contains it: exactly one such sku is "
    "{'kind': 'resolved', 'sku': sku}.",
    ["11.unique"],
    ("unique",),
    "A query that exactly one name contains must resolve to that product's sku.",
)
_resolve_check(
    "step11/exact_wins",
    2,
    "Several names contain the query but exactly one equals it: that one resolves",
    "When several names contain q, look for names equal to q (casefolded): exactly one such name wins.",
    ["11.exact_wins"],
    ("exact_wins",),
    "An exact name match must win over names that only contain the query.",
)
_resolve_check(
    "step11/casefold",
    1,
    "Matching uses str.casefold: 'STRASSE' finds 'Straße'",
    "Compare with casefold(), not lower(): 'Straße'.lower() keeps the ß, 'Straße'.casefold() is 'strasse'.",
    ["11.unique"],
    ("casefold",),
    "A query that matches a name only under str.casefold must resolve.",
)
_resolve_check(
    "step11/not_found",
    2,
    "No matching name, or a blank query, gives {'kind': 'not_found', 'query': query}",
    "When no name contains q -- and always when q is blank, since '' is inside every name -- return "
    "{'kind': 'not_found', 'query': query} with the query exactly as it was given; a part of a sku (its number "
    "without the prefix, '4411' for 'SKU-4411') is no key.",
    ["11.not_found"],
    ("not_found",),
    "This query matches no product: it must give {'kind': 'not_found', 'query': <the query as given>}.",
)


def _candidates(value: Any, label: str) -> list[Any]:
    """The candidates list of an ambiguous result, or :class:`Fail`."""
    if (
        not isinstance(value, dict)
        or value.get("kind") != spec.AMBIGUOUS
        or not isinstance(value.get("candidates"), list)
    ):
        raise Fail(
            "Several products match this query: the result must be {'kind': 'ambiguous', 'query': ..., "
            "'candidates': [...]} (see step11/ambiguous).",
            call=label,
            expected="an ambiguous result",
            got=show(value),
        )
    candidates: list[Any] = value["candidates"]
    return candidates


def _skus_of(candidates: list[Any], label: str) -> list[Any]:
    if not all(isinstance(c, dict) and "sku" in c for c in candidates):
        raise Fail(
            "Each candidate must be a dict with a 'sku'.",
            call=label,
            expected="[{'sku': ..., 'label': ...}]",
            got=show(candidates),
        )
    return [c["sku"] for c in candidates]


def _ambiguous_calls(probes: list[Probe], observations: list[Observation]) -> list[Any]:
    return [
        (query, value, want, label)
        for probe, obs in zip(probes, observations)
        for query, value, want, label in _resolve_calls(probe, obs)
        if want["kind"] == spec.AMBIGUOUS
    ]


def _ambiguous_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    for query, value, want, label in _ambiguous_calls(probes, observations):
        skus = _skus_of(_candidates(value, label), label)
        if set(value) != {"kind", "query", "candidates"} or not strict_equal(value["query"], query):
            raise Fail(
                "An ambiguous result is exactly {'kind': 'ambiguous', 'query': <the query as given>, "
                "'candidates': [...]}.",
                call=label,
                expected=f"query {show(query)}",
                got=show(value),
            )
        if sorted(map(str, skus)) != want["candidates"] or len(skus) != len(want["candidates"]):
            raise Fail(
                "The candidates must be every product whose name matches, each once, none picked.",
                call=label,
                expected=f"skus {want['candidates']}",
                got=f"skus {show(skus)}",
            )
    return Verdict.ok()


def _sorted_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    for _query, value, want, label in _ambiguous_calls(probes, observations):
        skus = _skus_of(_candidates(value, label), label)
        if skus != want["candidates"]:
            raise Fail(
                "The candidates must be sorted by sku (not in PRODUCTS' order).",
                call=label,
                expected=f"skus {want['candidates']}",
                got=f"skus {show(skus)}",
            )
    return Verdict.ok()


def _labels_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    for probe, obs in zip(probes, observations):
        table = probe.params["table"]
        for _query, value, _want, label in _ambiguous_calls([probe], [obs]):
            candidates = _candidates(value, label)
            for c in candidates:
                if not isinstance(c, dict) or set(c) != {"sku", "label"} or not isinstance(c["label"], str):
                    raise Fail(
                        "Each candidate is exactly {'sku': sku, 'label': <a str>}.",
                        call=label,
                        expected="{'sku': ..., 'label': '...'}",
                        got=show(c),
                    )
                name = table.get(c["sku"]) if isinstance(c["sku"], str) else None
                if name is None or c["sku"] not in c["label"] or name.casefold() not in c["label"].casefold():
                    raise Fail(
                        "A candidate's label must contain the product's name and its sku.",
                        call=label,
                        expected=f"a label with {show(name)} and {show(c['sku'])}",
                        got=show(c),
                    )
            if len({c["label"] for c in candidates}) != len(candidates):
                raise Fail(
                    "Two candidates have the same label: a person could not tell them apart.",
                    call=label,
                    expected="distinct labels",
                    got=show(candidates),
                )
    return Verdict.ok()


add(
    "step11/ambiguous",
    3,
    "Several matches give {'kind': 'ambiguous', 'query', 'candidates'}: all, none picked",
    "When two or more names contain q and not exactly one equals it, return every matching product as a "
    "candidate -- never pick one -- with the query as it was given.",
    ["11.ambiguous"],
    lambda rng: [resolve_probe(rng, ("ambiguous",))],
    _ambiguous_judge,
)
add(
    "step11/candidates_sorted",
    1,
    "Candidates are sorted by sku",
    "Sort the candidates by their sku (sorted(..., key=...)); PRODUCTS may come in any order.",
    ["11.candidates"],
    lambda rng: [resolve_probe(rng, ("ambiguous",))],
    _sorted_judge,
)
add(
    "step11/candidate_labels",
    2,
    "Each candidate is {'sku', 'label'}, the label holding the name and the sku",
    "Build each candidate as {'sku': sku, 'label': f'{name} ({sku})'} or similar: the name and the sku both "
    "appear, so two products of one name differ.",
    ["11.candidates"],
    lambda rng: [resolve_probe(rng, ("ambiguous",))],
    _labels_judge,
)


def _no_runs_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    for probe, obs in zip(probes, observations):
        start = obs.get("start") if isinstance(obs, dict) else None
        _resolve_calls(probe, obs)  # each call returned: a missing or raising resolve_sku ran no tool either
        for operation, rec in judged(probe, records_of(probe, obs)):
            if operation.get("fn") == RESOLVE:
                for tool, n in (rec.get("spy_runs") or {}).items():
                    if n:
                        raise Fail(
                            "resolve_sku ran a tool body: resolving reads PRODUCTS only.",
                            call=operation["label"],
                            expected="0 tool runs",
                            got=f"{tool} ran {n} time(s)",
                        )
                if isinstance(start, dict):
                    check_calls_unchanged(start.get("calls"), rec.get("calls"), operation["label"])
    return Verdict.ok()


def _unchanged_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    for probe, obs in zip(probes, observations):
        table = probe.params["table"]
        _resolve_calls(probe, obs)  # each call returned: a missing or raising resolve_sku changes nothing either
        pairs = judged(probe, records_of(probe, obs))
        (_, keys), (_, after) = pairs[-2], pairs[-1]
        calls = "; then ".join(o["label"] for o, _ in pairs if o.get("fn") == RESOLVE)
        if not strict_equal(after.get("value"), table) or keys.get("value") != list(table):
            raise Fail(
                "resolve_sku changed PRODUCTS (its content or its order): it must only read it.",
                call=calls,
                expected=show(table),
                got=outcome(after) + f" with keys {show(keys.get('value'))}",
            )
    return Verdict.ok()


_AFTER = (op("keys", name="PRODUCTS"), op("attr", name="PRODUCTS"))
add(
    "step11/no_tool_runs",
    2,
    "resolve_sku never runs a tool body",
    "Resolve with PRODUCTS alone: no call_tool, no handle, no lookup to check a guess.",
    ["11.no_body"],
    lambda rng: [resolve_probe(rng, tuple(CLASSES))],
    _no_runs_judge,
)
add(
    "step11/products_unchanged",
    1,
    "resolve_sku never changes PRODUCTS (content or order)",
    "Read PRODUCTS without writing to it: sort a copy (sorted(PRODUCTS)), never PRODUCTS itself, and store "
    "nothing in it.",
    ["11.products_unchanged"],
    lambda rng: [resolve_probe(rng, tuple(CLASSES), tail=_AFTER)],
    _unchanged_judge,
)


# ---------------------------------------------------------------------------
# handle_named, with the grader's handle double
# ---------------------------------------------------------------------------

RESOLVED_CLASSES = ("key", "unique", "exact_wins", "casefold")
UNRESOLVED_CLASSES = ("not_found", "ambiguous")


def _order(rng: random.Random, query: str) -> JsonDict:
    order = {"product": query, "region": rng.choice(spec.REGIONS + ["mars"]), "limit": rng.randint(1, spec.MAX_ROWS)}
    if rng.random() < 0.5:
        order["tool"] = rng.choice(spec.TOOL_NAMES)
    keys = list(order)
    rng.shuffle(keys)
    return {key: order[key] for key in keys}


def _handle_result(rng: random.Random, n: int) -> JsonDict:
    ok = rng.random() < 0.7
    return {
        "ok": ok,
        "answer": f"grader answer {n}-{rng.randint(100, 999)}",
        "rows": [{"bin": f"G-{rng.randint(10, 99)}", "count": rng.randint(0, 40)}] if ok else [],
        "errors": [] if ok else ["result:empty"],
        "calls": [],
        "fixes": [],
        "attempts": rng.randint(1, spec.MAX_ATTEMPTS),
        "tool_runs": rng.randint(0, 2),
    }


def named_probe(rng: random.Random, classes: tuple[Any, ...]) -> Probe:
    """``handle_named`` of an order per query of ``classes``, with the grader's ``handle``/``call_tool``/``resolve_sku``
    doubles."""
    table, queries = make_table(rng)
    orders = [_order(rng, q) for c in classes for q in queries[c]]
    rng.shuffle(orders)
    results = [_handle_result(rng, n) for n in range(len(orders))]
    calls = []
    for order in orders:
        unresolved = expected(table, order["product"])["kind"] != spec.RESOLVED
        # PRODUCTS is the probe's table again before each order: a resolve_sku that writes into it (its own
        # check's business) must not change what the next order meets, or the seed's order of orders would
        # decide the grade.
        calls += [_set_products(table), call_op(NAMED, order, runs=NO_RUNS if unresolved else None)]
        calls[-1]["args_after"] = True
    doubles = [double_op("handle", results=results), double_op("call_tool"), double_op("resolve_sku", "spec_resolve")]
    # On the learner's route resolve_sku is watched too: a failure that comes from its answer names it.
    probe = call_probe(
        [*doubles, *calls], spies=TOOL_SPIES_ORIGINAL, reset=True, watch_on_real=["handle", "call_tool", "resolve_sku"]
    )
    probe.params.update(table=encode(table), results=encode(results))
    return probe


def _own_resolve(probe: Probe, obs: JsonDict, query: Any) -> JsonDict | None:
    """The watched call of the module's own ``resolve_sku`` for ``query`` on the learner's route (``returned`` or
    ``raised``), else ``None`` (the spec's resolve_sku in that name, or no such call)."""
    if not on_real_route(probe):
        return None
    seen = obs.get("double_seen")
    seen = seen if isinstance(seen, dict) else {}
    for entry in seen.get(RESOLVE) or []:
        given = list(entry.get("args") or []) if isinstance(entry, dict) else []
        keywords = entry.get("kwargs") if isinstance(entry, dict) else None
        keywords = keywords if isinstance(keywords, dict) else {}
        # An entry that is no dict has no arguments and never matched: the isinstance only narrows its type.
        if isinstance(entry, dict) and strict_equal(
            given or ([keywords["query"]] if "query" in keywords else []), [query]
        ):
            return entry
    return None


def _as_spec_says(entry: JsonDict, want: JsonDict) -> bool:
    """The watched ``resolve_sku`` call answered what the spec says (kind, sku, candidates' skus in order).

    >>> _as_spec_says({"returned": {"kind": "resolved", "sku": "A"}}, {"kind": "resolved", "sku": "A"})
    True
    >>> _as_spec_says({"raised": "KeyError"}, {"kind": "not_found", "query": "x"})
    False
    """
    value = entry.get("returned")
    if "raised" in entry or not isinstance(value, dict) or value.get("kind") != want["kind"]:
        return False
    if want["kind"] == spec.RESOLVED:
        same_sku: bool = value.get("sku") == want["sku"]
        return same_sku
    if want["kind"] == spec.AMBIGUOUS:
        found = value.get("candidates")
        return (
            isinstance(found, list)
            and [c.get("sku") if isinstance(c, dict) else c for c in found] == want["candidates"]
        )
    return True


def _resolve_fail(probe: Probe, obs: JsonDict, order: JsonDict, want: JsonDict, label: str) -> Fail | None:
    """The failure to report when the module's own resolve_sku answered this order's query otherwise than the
    spec: handle_named acted on that answer, so the mistake to fix is resolve_sku's."""
    entry = _own_resolve(probe, obs, order.get("product"))
    if entry is None or _as_spec_says(entry, want):
        return None
    got = f"raised {entry['raised']}" if "raised" in entry else show(entry.get("returned"))
    return Fail(
        "resolve_sku answers this query otherwise than the spec, and handle_named acted on its answer: "
        "the mistake is in resolve_sku (its checks, step11/resolve_key ... step11/ambiguous, say which "
        "rule), not in handle_named.",
        call=f"resolve_sku({order.get('product')!r})  # inside {label}",
        expected=show(encode(want)),
        got=got,
    )


def _named_calls(probe: Probe, obs: JsonDict, *, returned: bool = True) -> list[Any]:
    """``(order, record, expected resolve, label)`` per ``handle_named`` call."""
    out = []
    for operation, rec in judged(probe, records_of(probe, obs)):
        if operation.get("fn") == NAMED:
            order = operation["args"][0]
            want = expected(probe.params["table"], order["product"])
            if returned and "value" not in rec:
                raise _resolve_fail(probe, obs, order, want, operation["label"]) or value_of(
                    rec, operation, "handle_named did not return: it must return a dict for every order."
                )
            out.append((order, rec, want, operation["label"]))
    return out


def _first_resolve_fail(probe: Probe, obs: JsonDict, calls: list[Any]) -> Fail | None:
    """The resolve_sku failure of the first of ``calls`` whose query it answered otherwise than the spec."""
    return next(
        (
            f
            for order, _rec, want, label in calls
            for f in [_resolve_fail(probe, obs, order, want, label)]
            if f is not None
        ),
        None,
    )


def resolve_named(judge: Judge) -> Judge:
    """``judge`` of handle_named, whose failure names resolve_sku when resolve_sku's answer was the wrong one."""

    def judged_with_resolve(probes: list[Probe], observations: list[Observation]) -> Verdict:
        for probe, obs in zip(probes, observations):
            try:
                judge([probe], [obs])
            except Fail as exc:
                try:
                    calls = _named_calls(probe, obs, returned=False)
                    mentioned = [c for c in calls if c[3] in (exc.call or "")] or calls
                    better = _first_resolve_fail(probe, obs, mentioned)
                except Fail:
                    better = None
                raise (better or exc) from None
        return Verdict.ok()

    return judged_with_resolve


def _unresolved_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    for probe, obs in zip(probes, observations):
        for _order, rec, want, label in _named_calls(probe, obs):
            value = rec["value"]
            cands = [{"sku": s} for s in want.get("candidates", [])]
            shape = isinstance(value, dict) and set(value) == set(spec.NAMED_KEYS)
            if (
                not shape
                or value["ok"] is not False
                or value["kind"] != want["kind"]
                or type(value["tool_runs"]) is not int
                or value["tool_runs"] != 0
                or not isinstance(value["answer"], str)
            ):
                raise Fail(
                    "An order whose product is not resolved gives exactly {'ok': False, 'kind': <the kind>, "
                    "'candidates': [...], 'answer': <a question>, 'tool_runs': 0}.",
                    call=label,
                    expected=f"ok False, kind {want['kind']!r}, tool_runs 0",
                    got=show(value),
                )
            got = value["candidates"]
            if not isinstance(got, list) or [c.get("sku") if isinstance(c, dict) else c for c in got] != [
                c["sku"] for c in cands
            ]:
                raise Fail(
                    "'candidates' is the ambiguous result's candidates (sorted by sku), [] when not found.",
                    call=label,
                    expected=f"skus {[c['sku'] for c in cands]}",
                    got=show(got),
                )
            check_expect(
                {"runs": NO_RUNS, "label": label}, rec, "A tool body ran for an unresolved order.", obs.get("start")
            )
        seen = obs.get("double_seen") or {}
        for name in ("handle", "call_tool"):
            if seen.get(name):
                raise Fail(
                    f"handle_named called {name} for an order it could not resolve: ask back instead.",
                    call=f"{name}{show(seen[name][0].get('args'))}",
                    expected=f"no {name} call",
                    got=f"{len(seen[name])} call(s)",
                )
    return Verdict.ok()


def _answer_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    for probe, obs in zip(probes, observations):
        for order, rec, _want, label in _named_calls(probe, obs):
            value = rec["value"]
            answer = value.get("answer") if isinstance(value, dict) else None
            cands = value.get("candidates") if isinstance(value, dict) else None
            labels = [c.get("label") for c in cands if isinstance(c, dict)] if isinstance(cands, list) else []
            needed = [order["product"].strip(), *labels]
            missing = [
                text
                for text in needed
                if not isinstance(text, str) or not isinstance(answer, str) or text not in answer
            ]
            if missing:
                raise Fail(
                    "The answer must ask back: name the query and every candidate's label.",
                    call=label,
                    expected=f"an answer containing {show(needed)}",
                    got=show(answer),
                )
    return Verdict.ok()


def _resolved_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    for probe, obs in zip(probes, observations):
        calls = _named_calls(probe, obs)
        seen = (obs.get("double_seen") or {}).get("handle", [])
        if len(seen) != len(calls):
            raise Fail(
                "handle_named must call handle once per resolved order.",
                call="; then ".join(c[3] for c in calls),
                expected=f"{len(calls)} handle call(s)",
                got=f"{len(seen)} handle call(s)",
            )
        for i, ((order, rec, want, label), entry) in enumerate(zip(calls, seen)):
            sent = {k: v for k, v in order.items() if k != "product"}
            sent["sku"] = want["sku"]
            if not strict_equal(entry.get("args"), [sent]) or entry.get("kwargs"):
                raise Fail(
                    "handle must get the order with 'sku' set to the resolved sku and without 'product'.",
                    call=label,
                    expected=f"handle({show(sent)})",
                    got=f"handle({show(entry.get('args'))}, {show(entry.get('kwargs') or {})})",
                )
            handled = entry.get("returned") if on_real_route(probe) else probe.params["results"][i]
            if not isinstance(handled, dict):
                raise Fail(
                    "handle() did not return a dict for this order, so handle_named has nothing to return.",
                    call=label,
                    expected="a dict from handle()",
                    got=show(handled),
                )
            want_value = {**handled, "kind": spec.RESOLVED}
            if not strict_equal(rec["value"], want_value):
                raise Fail(
                    "A resolved order returns what handle() returned, plus 'kind': 'resolved'.",
                    call=label,
                    expected=show(want_value),
                    got=show(rec["value"]),
                )
    return Verdict.ok()


def _order_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    for probe, obs in zip(probes, observations):
        for order, rec, _want, label in _named_calls(probe, obs):
            # Each call returned (above): a missing or raising handle_named leaves the order alone without earning it.
            if not strict_equal(rec.get("args_after"), [order]):
                raise Fail(
                    "handle_named changed the caller's order: build a new dict for handle.",
                    call=label,
                    expected=show(order),
                    got=show((rec.get("args_after") or [None])[0]),
                )
    return Verdict.ok()


add(
    "step11/named_unresolved",
    3,
    "handle_named asks back for an unresolved product: ok False, tool_runs 0, no tool",
    "Resolve first; when the kind is not 'resolved', return {'ok': False, 'kind': kind, 'candidates': "
    "<the candidates, or []>, 'answer': <a question>, 'tool_runs': 0} and call no tool and no handle.",
    ["11.named_unresolved"],
    lambda rng: [named_probe(rng, UNRESOLVED_CLASSES)],
    resolve_named(_unresolved_judge),
)
add(
    "step11/named_answer",
    2,
    "The answer of an unresolved order names the query and every candidate's label",
    "Write the answer as a question back: put the (stripped) query and each candidate's label in it.",
    ["11.named_answer"],
    lambda rng: [named_probe(rng, UNRESOLVED_CLASSES)],
    resolve_named(_answer_judge),
)
add(
    "step11/named_resolved",
    3,
    "A resolved order runs handle() with 'sku' set and no 'product', plus kind 'resolved'",
    "Copy the order without 'product', set 'sku' to the resolved sku, call handle(new_order) and return its "
    "dict with 'kind': 'resolved' added.",
    ["11.named_resolved"],
    lambda rng: [named_probe(rng, RESOLVED_CLASSES)],
    resolve_named(_resolved_judge),
)
add(
    "step11/named_order_unchanged",
    1,
    "handle_named never changes the caller's order",
    "Never pop or set keys on the order you were given: build a new dict for handle.",
    ["11.named_order"],
    lambda rng: [named_probe(rng, RESOLVED_CLASSES), named_probe(rng, UNRESOLVED_CLASSES)],
    _order_judge,
)
