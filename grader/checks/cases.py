"""Random cases drawn in the parent: arguments, results and orders from LAB_SPEC facts.

Everything here is plain data built from a ``random.Random`` the engine seeds
per check, so the same seed gives the same cases and another seed other
values. The table, constants and reason names are the spec's own
(``grader.spec``), not imported from any solution: the grader judges from the
spec. What is drawn here beyond them (bad regions, unknown tools, word
numbers, exception names) is the grader's own choice of test values.

Example::

    >>> import random
    >>> tool, args, reason = single_defect(random.Random(1), "range_high")
    >>> reason, args["limit"] > MAX_ROWS
    ('range:limit', True)
"""
from __future__ import annotations

import random
from typing import Any

from grader.spec import (ALLOWED, ARG_NAMES, EMPTY, EXTRA, FALLBACK_REGION, MAX_ROWS, MISSING, RANGE, REGIONS,
                         SHAPE, SKUS, TOO_BIG, TOOL_NAMES, TYPE, UNKNOWN_SKU, UNKNOWN_TOOL, arg_reason,
                         stocked_pairs)

# Values a model plausibly writes for a region that is not allowed.
# Families: another case, a stray space, a typo, something else entirely.
BAD_REGION_FAMILIES = [["North", "NORTH", "Central", "sOUTH"], [" north", "north ", " west", "central\n"],
                       ["nrth", "westt", "n", "souht"], ["mars", "centre", "South-East", "", "eu-west"]]
BAD_REGIONS = [region for family in BAD_REGION_FAMILIES for region in family]
EXTRA_ARGS = {"color": "red", "warehouse": "W1", "qty": 3, "unit": "box", "urgent": True,
              "note": "rush", "sort": "count"}
UNKNOWN_TOOLS = ["stock_lookups", "lookup", "StockLookup", "delete_stock", "stock-lookup",
                 "inventory", "legacy", ""]
WORD_NUMBERS = ["two", "five", "three", "many", "all", "1O"]
EXCEPTION_TYPES = ["KeyError", "ValueError", "ZeroDivisionError", "RuntimeError",
                   "LookupError", "TimeoutError", "ConnectionError", "IndexError"]
CUSTOM_EXCEPTION_NAMES = ["WarehouseOffline", "StockServiceDown", "LegacyApiError", "BinLocked"]


def random_valid_args(rng: random.Random, *, stocked: bool = False) -> dict:
    """Valid arguments; ``stocked=True`` picks a (sku, region) that has rows."""
    if stocked:
        sku, region = rng.choice(stocked_pairs())
    else:
        sku = rng.choice(SKUS + [UNKNOWN_SKU])
        region = rng.choice(REGIONS)
    return {"sku": sku, "region": region, "limit": rng.randint(1, MAX_ROWS)}


def shuffled(rng: random.Random, args: dict) -> dict:
    """The same arguments in another insertion order (when there is one)."""
    keys = list(args)
    for _ in range(5):
        rng.shuffle(keys)
        if keys != list(args) or len(keys) < 2:
            break
    return {k: args[k] for k in keys}


DEFECT_KINDS = ("unknown_tool", "missing", "extra", "type_wrong", "type_bool", "type_numeric_string",
                "type_float", "allowed", "range_low", "range_high")


def _pick(rng: random.Random, options: list, variant: "int | None") -> Any:
    """``options[variant]`` (cycling) when a variant is asked for, else a random option.

    Checks ask for variants 0, 1, 2... so that every family of bad values is sent on
    every run (a defect that only mishandles one family cannot slip through by luck).
    """
    return rng.choice(options) if variant is None else options[variant % len(options)]


def single_defect(rng: random.Random, kind: str, variant: "int | None" = None) -> tuple[str, dict, str]:
    """One call ``(tool, args, reason)`` with exactly one defect of ``kind``.

    >>> single_defect(random.Random(3), "type_bool", variant=1)[1]["limit"]
    False
    """
    tool = rng.choice(TOOL_NAMES)
    args = random_valid_args(rng)
    if kind == "unknown_tool":
        return rng.choice(UNKNOWN_TOOLS), args, UNKNOWN_TOOL
    if kind == "missing":
        name = _pick(rng, ARG_NAMES, variant)
        del args[name]
        return tool, shuffled(rng, args), arg_reason(MISSING, name)
    if kind == "extra":
        name = rng.choice(sorted(EXTRA_ARGS))
        # Sometimes None: an unknown argument is extra whatever its value.
        args[name] = _pick(rng, [None, EXTRA_ARGS[name]], variant) if variant is not None else \
            (None if rng.random() < 0.3 else EXTRA_ARGS[name])
        return tool, shuffled(rng, args), arg_reason(EXTRA, name)
    if kind in ("type_wrong", "type_wrong_sku", "type_wrong_limit", "type_none"):
        name, value = _pick(rng, {
            "type_wrong": [("sku", rng.randint(1000, 9999)), ("limit", rng.choice(WORD_NUMBERS)), ("limit", None),
                           ("sku", None), ("limit", [2]), ("sku", ["SKU-1001"])],
            "type_wrong_sku": [("sku", rng.randint(1000, 9999)), ("sku", ["SKU-1001"])],
            "type_wrong_limit": [("limit", rng.choice(WORD_NUMBERS)), ("limit", [2])],
            "type_none": [("limit", None), ("sku", None)],
        }[kind], variant)
        args[name] = value
        return tool, args, arg_reason(TYPE, name)
    if kind == "type_bool":
        args["limit"] = _pick(rng, [True, False], variant)
        return tool, args, arg_reason(TYPE, "limit")
    if kind == "type_numeric_string":
        args["limit"] = str(rng.randint(1, MAX_ROWS))
        return tool, args, arg_reason(TYPE, "limit")
    if kind == "type_float":
        args["limit"] = float(rng.randint(1, MAX_ROWS))
        return tool, args, arg_reason(TYPE, "limit")
    if kind == "allowed":
        args["region"] = rng.choice(_pick(rng, BAD_REGION_FAMILIES, variant))
        return tool, args, arg_reason(ALLOWED, "region")
    if kind == "range_low":
        args["limit"] = _pick(rng, [0, rng.choice([-1, rng.randint(-50, -2)])], variant)
        return tool, args, arg_reason(RANGE, "limit")
    if kind == "range_high":
        args["limit"] = _pick(rng, [MAX_ROWS + 1, rng.randint(MAX_ROWS + 2, 99)], variant)
        return tool, args, arg_reason(RANGE, "limit")
    raise ValueError(f"unknown defect kind {kind!r}")


# ---------------------------------------------------------------------------
# Results (step 4)
# ---------------------------------------------------------------------------


def random_rows(rng: random.Random, n: int, *, prefix: str = "") -> list[dict]:
    """``n`` well-formed rows with random bins and counts (0 included)."""
    letters = prefix or rng.choice("NSEWCQZ")
    numbers = rng.sample(range(10, 100), n) if n <= 90 else [rng.randint(10, 99) for _ in range(n)]
    return [{"bin": f"{letters}-{k}", "count": 0 if rng.random() < 0.2 else rng.randint(1, 999)} for k in numbers]


def random_valid_result(rng: random.Random, n: "int | None" = None) -> dict:
    """A result that passes every rule of ``returns`` (1..MAX_ROWS rows)."""
    n = rng.randint(1, MAX_ROWS) if n is None else n
    return {"sku": rng.choice(SKUS), "region": rng.choice(REGIONS), "rows": random_rows(rng, n)}


BAD_RESULT_KINDS = ("shape_not_dict", "shape_missing_key", "shape_key_type", "shape_bad_row",
                    "empty", "too_big", "range")


def bad_result(rng: random.Random, kind: str, variant: "int | None" = None) -> tuple[Any, str]:
    """A result with one defect of ``kind`` and the reason it must give.

    The value may hold tuples; it travels encoded (``grader.engine.encode``).

    >>> bad_result(random.Random(0), "empty")[1]
    'empty'
    """
    good = random_valid_result(rng)
    if kind == "shape_not_dict":
        value = _pick(rng, [rng.choice([None, 42]), rng.choice([good["rows"], list(good.items())]),
                            rng.choice(["rows", (good["sku"], good["region"], good["rows"])])], variant)
        return value, SHAPE
    if kind == "shape_missing_key":
        del good[rng.choice(["sku", "region", "rows"])]
        return good, SHAPE
    if kind == "shape_key_type":
        key, value = _pick(rng, [
            rng.choice([("sku", 1001), ("sku", None)]), ("region", rng.choice([["north"], 7])),
            rng.choice([("rows", tuple(good["rows"])), ("rows", "N-01"), ("rows", None),
                        ("rows", {"bin": "N-01", "count": 1})])], variant)
        good[key] = value
        return good, SHAPE
    if kind == "shape_bad_row":
        i = rng.randrange(len(good["rows"]))
        row = good["rows"][i]
        broken = _pick(rng, [
            rng.choice([[row["bin"], row["count"]], f"{row['bin']}:{row['count']}", None]),
            rng.choice([{"bin": row["bin"]}, {"count": row["count"]}]),
            {"bin": row["bin"], "count": str(row["count"])},
            {"bin": row["bin"], "count": float(row["count"])},
            {"bin": row["bin"], "count": rng.choice([True, False])},
            {"bin": rng.randint(1, 99), "count": row["count"]},
        ], variant)
        good["rows"][i] = broken
        return good, SHAPE
    if kind == "empty":
        good["rows"] = []
        return good, EMPTY
    if kind == "too_big":
        good["rows"] = random_rows(rng, rng.randint(MAX_ROWS + 1, 3 * MAX_ROWS))
        return good, TOO_BIG
    if kind == "range":
        good["rows"][rng.randrange(len(good["rows"]))]["count"] = rng.randint(-99, -1)
        return good, RANGE
    raise ValueError(f"unknown bad-result kind {kind!r}")


# ---------------------------------------------------------------------------
# Orders (steps 6-8)
# ---------------------------------------------------------------------------


def order(sku: str, region: Any, limit: Any, tool: "str | None" = None) -> dict:
    """An order dict; ``tool`` is left out when ``None`` (the default tool applies)."""
    out = {"sku": sku, "region": region, "limit": limit}
    if tool is not None:
        out["tool"] = tool
    return out


def repairable_region_order(rng: random.Random) -> dict:
    """A wrong region for a sku that has stock in the fallback region."""
    sku = rng.choice(sorted({s for s, r in stocked_pairs() if r == FALLBACK_REGION}))
    return order(sku, rng.choice(BAD_REGIONS), rng.randint(1, MAX_ROWS))


def out_of_range_limit(rng: random.Random) -> int:
    return rng.choice([0, -1, rng.randint(-20, -2), rng.randint(MAX_ROWS + 1, 99)])


def clamp(limit: int) -> int:
    return min(max(limit, 1), MAX_ROWS)
