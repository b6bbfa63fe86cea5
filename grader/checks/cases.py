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

from grader.engine.wire import JsonDict
from grader.spec import (
    ALLOWED,
    ARG_NAMES,
    EMPTY,
    EXTRA,
    FALLBACK_REGION,
    MAX_ROWS,
    MISSING,
    RANGE,
    REGIONS,
    SHAPE,
    SKUS,
    TOO_BIG,
    TOOL_NAMES,
    TYPE,
    UNKNOWN_SKU,
    UNKNOWN_TOOL,
    arg_reason,
    args_contract,
    stocked_pairs,
)

# Values a model plausibly writes for a region that is not allowed.
# Families: another case, a stray space, a typo, something else entirely.
BAD_REGION_FAMILIES = [
    ["North", "NORTH", "Central", "sOUTH"],
    [" north", "north ", " west", "central\n"],
    ["nrth", "westt", "n", "souht"],
    ["mars", "centre", "South-East", "", "eu-west"],
]
BAD_REGIONS = [region for family in BAD_REGION_FAMILIES for region in family]
# Wrong regions that stay wrong after any tidying (strip, lower, casefold): where a check judges
# what happens after a region repair, not whether a region was repaired.
UNTIDYABLE_REGIONS = BAD_REGION_FAMILIES[3]
EXTRA_ARGS = {
    "color": "red",
    "warehouse": "W1",
    "qty": 3,
    "unit": "box",
    "urgent": True,
    "note": "rush",
    "sort": "count",
}
UNKNOWN_TOOLS = ["stock_lookups", "lookup", "StockLookup", "delete_stock", "stock-lookup", "inventory", "legacy", ""]
# Tool names written another way: a key of TOOLS is matched exactly, like an allowed value.
TOOL_LOOKALIKES = [
    "stock_lookup ",
    " legacy_stock",
    "Stock_Lookup",
    "LEGACY_STOCK",
    "stock_lookup\u200b",
    "\uff53tock_lookup",
]
WORD_NUMBERS = ["two", "five", "three", "many", "all", "1O"]
EXCEPTION_TYPES = [
    "KeyError",
    "ValueError",
    "ZeroDivisionError",
    "RuntimeError",
    "LookupError",
    "TimeoutError",
    "ConnectionError",
    "IndexError",
]
CUSTOM_EXCEPTION_NAMES = ["WarehouseOffline", "StockServiceDown", "LegacyApiError", "BinLocked"]
# Built-in exceptions a tool body raises besides EXCEPTION_TYPES: a wrong keyword (TypeError), a missing
# attribute, the file system, an assert, Exception itself, and StopIteration (special in generators).
MORE_EXCEPTION_TYPES = ["TypeError", "AttributeError", "OSError", "AssertionError", "Exception", "StopIteration"]
# The built-in classes a learner's own exception class derives from (besides Exception).
CUSTOM_EXCEPTION_BASES = ["ConnectionError", "ValueError", "LookupError", "RuntimeError"]


def tool_exceptions(rng: random.Random) -> list[tuple[str, Any, str]]:
    """Every kind of ``Exception`` a tool may raise, as ``(name, spy exc, what it is)``, the same kinds on every run.

    Each built-in of :data:`EXCEPTION_TYPES` and :data:`MORE_EXCEPTION_TYPES`, a learner-style
    class of ``Exception`` and one of a built-in class; the seed draws only the classes' names
    and the built-in base.

    >>> kinds = tool_exceptions(random.Random(3))
    >>> [what for _, _, what in kinds].count("a built-in exception") == len(EXCEPTION_TYPES + MORE_EXCEPTION_TYPES)
    True
    >>> [what for _, _, what in kinds][-2:][0], len(kinds) - len(EXCEPTION_TYPES + MORE_EXCEPTION_TYPES)
    ('a class of Exception', 2)
    """
    own, derived = rng.sample(CUSTOM_EXCEPTION_NAMES, 2)
    base = rng.choice(CUSTOM_EXCEPTION_BASES)
    kinds: list[tuple[str, Any, str]] = [
        (name, name, "a built-in exception") for name in EXCEPTION_TYPES + MORE_EXCEPTION_TYPES
    ]
    kinds += [
        (own, {"custom": own}, "a class of Exception"),
        (derived, {"custom": derived, "base": base}, f"a class of {base}"),
    ]
    return kinds


def random_valid_args(rng: random.Random, *, stocked: bool = False, inner: bool = False) -> JsonDict:
    """Valid arguments; ``stocked=True`` picks a (sku, region) that has rows.

    ``inner=True`` keeps ``limit`` strictly between its bounds: a check about
    something else then meets a bound mistake on no seed rather than on some
    (the bounds have checks of their own, which send them on every run).
    """
    if stocked:
        sku, region = rng.choice(stocked_pairs())
    else:
        sku = rng.choice(SKUS + [UNKNOWN_SKU])
        region = rng.choice(REGIONS)
    limit = rng.randint(2, MAX_ROWS - 1) if inner else rng.randint(1, MAX_ROWS)
    return {"sku": sku, "region": region, "limit": limit}


def spec_args_contract() -> JsonDict:
    """The ``args`` contract of both tools as LAB_SPEC step 1 writes it (a new dict each call).

    >>> spec_args_contract()["limit"] == {"type": int, "required": True, "min": 1, "max": MAX_ROWS}
    True
    """
    return args_contract()  # written once, in grader.spec


def shuffled(rng: random.Random, args: JsonDict) -> JsonDict:
    """The same arguments in another insertion order (when there is one)."""
    keys = list(args)
    for _ in range(5):
        rng.shuffle(keys)
        if keys != list(args) or len(keys) < 2:
            break
    return {k: args[k] for k in keys}


DEFECT_KINDS = (
    "unknown_tool",
    "missing",
    "extra",
    "type_wrong",
    "type_bool",
    "type_numeric_string",
    "type_float",
    "allowed",
    "range_low",
    "range_high",
)


def _pick(rng: random.Random, options: list[Any], variant: int | None) -> Any:
    """``options[variant]`` (cycling) when a variant is asked for, else a random option.

    Checks ask for variants 0, 1, 2... so that every family of bad values is sent on
    every run (a defect that only mishandles one family cannot slip through by luck).
    """
    return rng.choice(options) if variant is None else options[variant % len(options)]


Defect = tuple[str, JsonDict, str]  # (tool, args, reason): one call with exactly one defect


def _unknown_tool(rng: random.Random, tool: str, args: JsonDict, variant: int | None, kind: str) -> Defect:
    # Only a check that asks for variants meets the look-alikes (the other steps' draws stay as they were).
    name = rng.choice(UNKNOWN_TOOLS) if variant is None else _pick(rng, UNKNOWN_TOOLS + TOOL_LOOKALIKES, variant)
    return name, args, UNKNOWN_TOOL


def _missing(rng: random.Random, tool: str, args: JsonDict, variant: int | None, kind: str) -> Defect:
    name = _pick(rng, ARG_NAMES, variant)
    del args[name]
    return tool, shuffled(rng, args), arg_reason(MISSING, name)


def _extra(rng: random.Random, tool: str, args: JsonDict, variant: int | None, kind: str) -> Defect:
    name = rng.choice(sorted(EXTRA_ARGS))
    # Sometimes None: an unknown argument is extra whatever its value.
    args[name] = (
        _pick(rng, [None, EXTRA_ARGS[name]], variant)
        if variant is not None
        else (None if rng.random() < 0.3 else EXTRA_ARGS[name])
    )
    return tool, shuffled(rng, args), arg_reason(EXTRA, name)


def _type_wrong(rng: random.Random, tool: str, args: JsonDict, variant: int | None, kind: str) -> Defect:
    # Every family's values are drawn, whichever kind is asked (the seeds' cases stay as they were).
    families: dict[str, list[tuple[str, Any]]] = {
        "type_wrong": [
            ("sku", rng.randint(1000, 9999)),
            ("limit", rng.choice(WORD_NUMBERS)),
            ("limit", None),
            ("sku", None),
            ("limit", [2]),
            ("sku", ["SKU-1001"]),
        ],
        "type_wrong_sku": [("sku", rng.randint(1000, 9999)), ("sku", ["SKU-1001"])],
        "type_wrong_limit": [("limit", rng.choice(WORD_NUMBERS)), ("limit", [2])],
        "type_none": [("limit", None), ("sku", None)],
    }
    name, value = _pick(rng, families[kind], variant)
    args[name] = value
    return tool, args, arg_reason(TYPE, name)


def _type_bool(rng: random.Random, tool: str, args: JsonDict, variant: int | None, kind: str) -> Defect:
    args["limit"] = _pick(rng, [True, False], variant)
    return tool, args, arg_reason(TYPE, "limit")


def _type_numeric_string(rng: random.Random, tool: str, args: JsonDict, variant: int | None, kind: str) -> Defect:
    args["limit"] = str(rng.randint(1, MAX_ROWS))
    return tool, args, arg_reason(TYPE, "limit")


def _type_float(rng: random.Random, tool: str, args: JsonDict, variant: int | None, kind: str) -> Defect:
    args["limit"] = float(rng.randint(1, MAX_ROWS))
    return tool, args, arg_reason(TYPE, "limit")


def _allowed(rng: random.Random, tool: str, args: JsonDict, variant: int | None, kind: str) -> Defect:
    args["region"] = rng.choice(_pick(rng, BAD_REGION_FAMILIES, variant))
    return tool, args, arg_reason(ALLOWED, "region")


def _range_low(rng: random.Random, tool: str, args: JsonDict, variant: int | None, kind: str) -> Defect:
    args["limit"] = _pick(rng, [0, rng.choice([-1, rng.randint(-50, -2)])], variant)
    return tool, args, arg_reason(RANGE, "limit")


def _range_high(rng: random.Random, tool: str, args: JsonDict, variant: int | None, kind: str) -> Defect:
    args["limit"] = _pick(rng, [MAX_ROWS + 1, rng.randint(MAX_ROWS + 2, 99)], variant)
    return tool, args, arg_reason(RANGE, "limit")


def _allowed_lookalike(rng: random.Random, tool: str, args: JsonDict, variant: int | None, kind: str) -> Defect:
    # Variant i is class i of region_lookalikes(): every class is sent on every run.
    args["region"] = _pick(rng, region_lookalikes(rng.choice(REGIONS)), variant)[1]
    return tool, args, arg_reason(ALLOWED, "region")


def _extra_lookalike(rng: random.Random, tool: str, args: JsonDict, variant: int | None, kind: str) -> Defect:
    # A listed name written another way is not listed: names are compared exactly too.
    listed = rng.choice(ARG_NAMES)
    name = _pick(rng, [listed.capitalize(), listed + " ", listed.upper()], variant)
    args[name] = args[listed]
    return tool, shuffled(rng, args), arg_reason(EXTRA, name)


# One function per defect kind: each draws after the tool and the valid arguments, in this order.
_DEFECTS = {
    "unknown_tool": _unknown_tool,
    "missing": _missing,
    "extra": _extra,
    "type_wrong": _type_wrong,
    "type_wrong_sku": _type_wrong,
    "type_wrong_limit": _type_wrong,
    "type_none": _type_wrong,
    "type_bool": _type_bool,
    "type_numeric_string": _type_numeric_string,
    "type_float": _type_float,
    "allowed": _allowed,
    "range_low": _range_low,
    "range_high": _range_high,
    "allowed_lookalike": _allowed_lookalike,
    "extra_lookalike": _extra_lookalike,
}


def single_defect(
    rng: random.Random, kind: str, variant: int | None = None, *, inner: bool = False
) -> tuple[str, JsonDict, str]:
    """One call ``(tool, args, reason)`` with exactly one defect of ``kind``.

    ``inner``: the valid arguments around the defect keep ``limit`` off its bounds
    (:func:`random_valid_args`). The tool and the valid arguments are drawn
    first, then the defect (:data:`_DEFECTS`), so a seed gives the same call
    whatever the kind.

    >>> single_defect(random.Random(3), "type_bool", variant=1)[1]["limit"]
    False
    """
    tool = rng.choice(TOOL_NAMES)
    args = random_valid_args(rng, inner=inner)
    defect = _DEFECTS.get(kind)
    if defect is None:
        raise ValueError(f"unknown defect kind {kind!r}")
    return defect(rng, tool, args, variant, kind)


# ---------------------------------------------------------------------------
# Whole domains (steps 1-2): every class on every run, the seed picks inside each
# ---------------------------------------------------------------------------

_FULLWIDTH = {c: chr(ord(c) - ord("a") + ord("\uff41")) for c in "abcdefghijklmnopqrstuvwxyz"}
# Cyrillic letters drawn like Latin ones; each region holds at least one of the Latin three.
_HOMOGLYPHS = {"o": "\u043e", "e": "\u0435", "a": "\u0430"}


def _homoglyph(word: str) -> str:
    i = next(k for k, c in enumerate(word) if c in _HOMOGLYPHS)
    return word[:i] + _HOMOGLYPHS[word[i]] + word[i + 1 :]


def region_lookalikes(region: str) -> list[tuple[str, str]]:
    """``(class, value)``: one value of each class that looks like ``region`` and is not in ``REGIONS``.

    An allowed value is compared exactly (LAB_SPEC step 2): stripping, lower-casing,
    Unicode normalisation or dropping invisible characters would let each through.

    >>> [name for name, value in region_lookalikes("north") if value.strip() == "north"]
    ['trailing space', 'leading tab', 'no-break space', 'new line']
    """
    return [
        ("trailing space", region + " "),
        ("leading tab", "\t" + region),
        ("no-break space", "\u00a0" + region),
        ("zero-width space", region + "\u200b"),
        ("full-width letter", _FULLWIDTH[region[0]] + region[1:]),
        ("Cyrillic look-alike", _homoglyph(region)),
        ("capital letter", region.capitalize()),
        ("new line", region + "\n"),
    ]


def any_str_values(rng: random.Random) -> list[tuple[str, str]]:
    """``(class, value)``: one value of each class of ``str`` a rule that states only ``type: str`` allows.

    The contract gives ``sku`` no pattern, prefix, length or alphabet, so every one is
    valid (LAB_SPEC: everything not named is the learner's choice, never the grader's rule).

    >>> [name for name, _ in any_str_values(random.Random(0))][:4]
    ['lower case', 'no prefix', 'spaces', 'empty']
    """
    n = rng.randint(1000, 9999)
    digits = "".join(chr(ord("\uff10") + int(c)) for c in str(n))
    return [
        ("lower case", f"sku-{n}"),
        ("no prefix", str(n)),
        ("spaces", rng.choice([f"SKU {n}", f" SKU-{n}", f"SKU-{n} "])),
        ("empty", ""),
        ("non-ASCII", rng.choice([f"SKU-{digits}", f"\u00c4rtikel-{n}", f"\u8d27\u53f7-{n}", f"SKU-{n}-\u00df"])),
        ("very long", "SKU-" + str(n) * rng.randint(30, 60)),
        ("control character", rng.choice([f"SKU-{n}\n", f"SKU-\t{n}"])),
        ("other separator", rng.choice([f"SKU_{n}", f"SKU.{n}", f"SKU/{n}"])),
    ]


# Types a grader-made contract declares (LAB_SPEC: ``type`` is a Python type object),
# each with a name pool for the argument it adds.
DECLARED_TYPES = {"str": str, "int": int, "float": float, "bool": bool, "list": list}
TYPED_ARG_NAMES = {
    "str": ["note", "channel", "memo"],
    "int": ["batch", "priority", "shelf"],
    "float": ["ratio", "weight", "discount"],
    "bool": ["fresh", "dry_run", "notify"],
    "list": ["tags", "bins", "codes"],
}


def typed_values(rng: random.Random, type_name: str) -> tuple[list[Any], list[Any]]:
    """``(valid, invalid)`` lists of ``(class, value)`` for an argument of type ``type_name``.

    Every class is in the lists on every run; the seed picks the values inside.
    Left out on purpose, because LAB_SPEC leaves them to the learner: an ``int``
    (or a ``bool``) where ``float`` is asked, a ``tuple`` where ``list`` is asked.

    >>> valid, invalid = typed_values(random.Random(0), "bool")
    >>> [v for _, v in valid], [v for _, v in invalid][:2]
    ([True, False], [1, 0])
    """
    n, word = rng.randint(2, 999), rng.choice(["red", "box", "rush", "north"])
    x = rng.randint(1, 99) + rng.choice([0.5, 0.25, 0.75])
    table: dict[str, tuple[list[tuple[str, Any]], list[tuple[str, Any]]]] = {
        "str": (
            [("a word", word), ("empty", ""), ("non-ASCII", f"{word}-\u00e9\u4e2d"), ("spaces", f" {word} {n} ")],
            [
                ("int of the same text", n),
                ("None", None),
                ("list", [word]),
                ("bool", rng.choice([True, False])),
                ("float", float(n)),
            ],
        ),
        "int": (
            [("positive", n), ("zero", 0), ("negative", -n), ("large", 10 ** rng.randint(10, 18))],
            [
                ("True", True),
                ("False", False),
                ("float of the same value", float(n)),
                ("numeric str", str(n)),
                ("None", None),
                ("list", [n]),
            ],
        ),
        "float": (
            [("fraction", x), ("zero", 0.0), ("negative", -x), ("whole", float(n))],
            [("numeric str", str(x)), ("None", None), ("list", [x])],
        ),
        "bool": (
            [("True", True), ("False", False)],
            [("1", 1), ("0", 0), ("str", rng.choice(["True", "false", "yes"])), ("None", None)],
        ),
        "list": ([("empty", []), ("items", [word, n])], [("str", f"{word},{n}"), ("None", None), ("dict", {word: n})]),
    }
    return table[type_name]


# ---------------------------------------------------------------------------
# Results (step 4)
# ---------------------------------------------------------------------------


def random_rows(rng: random.Random, n: int, *, prefix: str = "") -> list[JsonDict]:
    """``n`` well-formed rows with random bins and counts (0 included)."""
    letters = prefix or rng.choice("NSEWCQZ")
    numbers = rng.sample(range(10, 100), n) if n <= 90 else [rng.randint(10, 99) for _ in range(n)]
    return [{"bin": f"{letters}-{k}", "count": 0 if rng.random() < 0.2 else rng.randint(1, 999)} for k in numbers]


def random_valid_result(rng: random.Random, n: int | None = None) -> JsonDict:
    """A result that passes every rule of ``returns`` (1..MAX_ROWS rows)."""
    n = rng.randint(1, MAX_ROWS) if n is None else n
    return {"sku": rng.choice(SKUS), "region": rng.choice(REGIONS), "rows": random_rows(rng, n)}


BAD_RESULT_KINDS = (
    "shape_not_dict",
    "shape_missing_key",
    "shape_key_type",
    "shape_bad_row",
    "empty",
    "too_big",
    "range",
)


def bad_result(rng: random.Random, kind: str, variant: int | None = None) -> tuple[Any, str]:
    """A result with one defect of ``kind`` and the reason it must give.

    The value may hold tuples; it travels encoded (``grader.engine.encode``).

    >>> bad_result(random.Random(0), "empty")[1]
    'empty'
    """
    good = random_valid_result(rng)
    if kind == "shape_not_dict":
        value = _pick(
            rng,
            [
                rng.choice([None, 42]),
                rng.choice([good["rows"], list(good.items())]),
                rng.choice(["rows", (good["sku"], good["region"], good["rows"])]),
            ],
            variant,
        )
        return value, SHAPE
    if kind == "shape_missing_key":
        del good[rng.choice(["sku", "region", "rows"])]
        return good, SHAPE
    if kind == "shape_key_type":
        key, value = _pick(
            rng,
            [
                rng.choice([("sku", 1001), ("sku", None)]),
                ("region", rng.choice([["north"], 7])),
                rng.choice(
                    [
                        ("rows", tuple(good["rows"])),
                        ("rows", "N-01"),
                        ("rows", None),
                        ("rows", {"bin": "N-01", "count": 1}),
                    ]
                ),
            ],
            variant,
        )
        good[key] = value
        return good, SHAPE
    if kind == "shape_bad_row":
        i = rng.randrange(len(good["rows"]))
        row = good["rows"][i]
        broken = _pick(
            rng,
            [
                rng.choice([[row["bin"], row["count"]], f"{row['bin']}:{row['count']}", None]),
                rng.choice([{"bin": row["bin"]}, {"count": row["count"]}]),
                {"bin": row["bin"], "count": str(row["count"])},
                {"bin": row["bin"], "count": float(row["count"])},
                {"bin": row["bin"], "count": rng.choice([True, False])},
                {"bin": rng.randint(1, 99), "count": row["count"]},
            ],
            variant,
        )
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


def order(sku: str, region: Any, limit: Any, tool: str | None = None) -> JsonDict:
    """An order dict; ``tool`` is left out when ``None`` (the default tool applies)."""
    out = {"sku": sku, "region": region, "limit": limit}
    if tool is not None:
        out["tool"] = tool
    return out


def repairable_region_order(rng: random.Random) -> JsonDict:
    """A wrong region for a sku that has stock in the fallback region."""
    sku = rng.choice(sorted({s for s, r in stocked_pairs() if r == FALLBACK_REGION}))
    return order(sku, rng.choice(BAD_REGIONS), rng.randint(1, MAX_ROWS))


def out_of_range_limit(rng: random.Random) -> int:
    return rng.choice([0, -1, rng.randint(-20, -2), rng.randint(MAX_ROWS + 1, 99)])


def clamp(limit: int) -> int:
    return min(max(limit, 1), MAX_ROWS)


# ---------------------------------------------------------------------------
# Part two: what the Unicode-aware str methods do beyond the rules of steps 9-11
# ---------------------------------------------------------------------------

# Non-ASCII blanks: str.strip() removes each (str.isspace() is true), step 9's strip (ASCII whitespace only)
# keeps them, step 11's str.strip removes them. No ASCII character is here: "\x1c".."\x1f" are str.isspace()
# too, but whether they count as whitespace is nothing the spec decides.
NAMED_BLANKS = ("\u00a0", "\u3000")  # the no-break and the ideographic space: one on each side, on every run
UNICODE_BLANKS = ["\u00a0", "\u3000", "\u2003", "\u2009", "\u202f", "\u205f", "\u2007", "\u1680"]


def unicode_padded(rng: random.Random, text: str) -> str:
    """``text`` with non-ASCII blanks at both ends: each of :data:`NAMED_BLANKS` on one side (the seed picks
    which) and, on a side the seed picks, one more blank the seed picks.

    >>> value = unicode_padded(random.Random(4), "north")
    >>> value.strip() == "north", value.strip(" \\t\\n\\r\\x0b\\x0c") == value, set(NAMED_BLANKS) <= set(value)
    (True, True, True)
    """
    left, right = rng.sample(NAMED_BLANKS, 2)
    more = rng.choice(UNICODE_BLANKS)
    if rng.random() < 0.5:
        left += more
    else:
        right = more + right
    return left + text + right


# Lower-case letters whose str.casefold() is another text (str.lower() keeps them): a casefold in place of
# lower turns "ſouth" into "south" and "straße" into "strasse".
CASEFOLD_ONLY = {"s": "\u017f"}  # the long s


def long_s(word: str) -> str | None:
    """``word`` with its first ``s`` written as the long s (``ſ``): ``lower()`` keeps it, ``casefold()`` gives ``word``;
    ``None`` for a word without an ``s``.

    >>> long_s("west"), long_s("west").casefold() == "west", long_s("west").lower() == "west", long_s("north")
    ('weſt', True, False, None)
    """
    i = word.find("s")
    return None if i < 0 else word[:i] + CASEFOLD_ONLY["s"] + word[i + 1 :]
