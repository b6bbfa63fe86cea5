"""Step 9 checks: a strict coercion allowlist (``COERCIONS``, ``coerce``, ``call_coerced``; LAB_SPEC part two).

Every probe first puts the spec's argument contract in both tools (the module's
step-1 table cannot reach step 9), then calls ``coerce`` with raw arguments of
every class on every run: the seed picks the values inside each class (the
padding, the casing, the digits), never which classes appear. What ``coerce``
should return is worked out here, in the parent, by :func:`grader.spec.coerced_args`
over the contract the probe set. ``call_coerced`` is judged with the grader's
``call_tool`` (and ``validate_args``) doubles in place: step 9 is judged on its
own logic, and the double's record shows which arguments reached the door.
Its checks also call the module's own ``coerce`` on the same raw arguments:
when what reached the door is what that ``coerce`` returns, the failure names
``coerce``, whose rule is wrong, rather than ``call_coerced``.
"""

from __future__ import annotations

import random
import re
from typing import TYPE_CHECKING, Any

from grader import spec
from grader.checks import cases
from grader.checks._common import (
    TOOL_SPIES_ORIGINAL,
    TOOL_SPIES_TABLE,
    Fail,
    add,
    call_op,
    call_probe,
    check_calls_unchanged,
    double_op,
    judged,
    op,
    outcome,
    records_of,
    value_of,
)
from grader.checks.registry import Judge, Observation, Probe, Verdict
from grader.engine.encode import encode, show, strict_equal
from grader.engine.wire import JsonDict

if TYPE_CHECKING:
    from types import EllipsisType

NO_RUNS = {"stock_lookup": 0, "legacy_stock": 0}
_SPACES = [" ", "  ", "   "]  # the pad every strip removes
_ODD_DIGITS = ["\uff13", "\u00b2", "\u0663", "\U0001d7d1", "\u0969"]  # ３ ² ٣ 𝟑 ३: each on every run
_INT_TAKES = [odd for odd in _ODD_DIGITS if odd != "\u00b2"]  # the ones Python's int() accepts


# ---------------------------------------------------------------------------
# Drawing raw values: the class is fixed, the seed picks inside it
# ---------------------------------------------------------------------------


def all_whitespace(rng: random.Random) -> str:
    """Every ASCII whitespace character once, in an order the seed picks (a strip that misses one fails).

    >>> sorted(all_whitespace(random.Random(1))) == sorted(spec.ASCII_WHITESPACE)
    True
    """
    return "".join(rng.sample(spec.ASCII_WHITESPACE, len(spec.ASCII_WHITESPACE)))


def padded(rng: random.Random, text: str, side: str) -> str:
    """``text`` with ASCII whitespace on ``side`` (``left``, ``right`` or ``both``).

    One padded end holds every ASCII whitespace character (in the seed's order); with ``both`` the
    other end holds spaces, and the seed picks which end is which. So a strip of one end only, or of
    spaces only, or of some whitespace only, is missed on no seed.

    >>> value = padded(random.Random(1), "x", "both")
    >>> value.strip() == "x", set(spec.ASCII_WHITESPACE) <= set(value), value[0] != "x" != value[-1]
    (True, True, True)
    """
    full = all_whitespace(rng)
    if side != "both":
        return full + text if side == "left" else text + full
    left, right = full, rng.choice(_SPACES)
    if rng.random() < 0.5:
        left, right = right, left
    return left + text + right


def recased(rng: random.Random, word: str) -> str:
    """``word`` in a casing that is not all lower-case (title, upper, or mixed).

    >>> recased(random.Random(3), "north") != "north"
    True
    """
    choices = [word.title(), word.upper(), "".join(c.upper() if i % 2 else c for i, c in enumerate(word))]
    return rng.choice([c for c in choices if c != word])


def _base(rng: random.Random) -> JsonDict:
    return cases.random_valid_args(rng)


# ---------------------------------------------------------------------------
# Probes: coerce calls that carry what the parent expects
# ---------------------------------------------------------------------------


def on_spec_contract(ops: list[Any], **options: Any) -> Probe:
    """A probe that first puts the spec's ``args`` contract in both tools (undone when it ends).

    >>> [o["path"] for o in on_spec_contract([]).params["operations"]][:2]
    [['stock_lookup', 'args'], ['legacy_stock', 'args']]
    """
    setup = [op("contract", path=[tool, "args"], value=cases.spec_args_contract()) for tool in spec.TOOL_NAMES]
    return call_probe(setup + ops, reset=True, **options)


def coerce_op(tool: str, raw: JsonDict, contract: JsonDict | EllipsisType | None = ..., note: str = "") -> JsonDict:
    """A ``coerce`` call with the spec's answer (``contract``: the tool's args rules; default: the spec's).

    >>> coerce_op("stock_lookup", {"limit": " 2"})["expect_args"]
    {'limit': 2}
    """
    if contract is ...:
        contract = cases.spec_args_contract() if tool in spec.TOOL_NAMES else None
    args, changes = spec.coerced_args(contract, raw)
    operation = call_op("coerce", tool, raw)
    operation["args_after"] = True
    operation["pair"] = True  # LAB_SPEC: any pair that unpacks (a tuple, a NamedTuple, a list of two)
    if note:
        operation["label"] += f"  # {note}"
    operation["expect_args"] = encode(args)
    operation["expect_changes"] = {arg: [encode(a), encode(b), list(rules)] for arg, (a, b, rules) in changes.items()}
    return operation


def _strip_ops(rng: random.Random) -> list[Any]:
    ops = []
    for arg, side in (("sku", "left"), ("sku", "right"), ("region", "both"), ("region", "right")):
        raw = _base(rng)
        raw[arg] = padded(rng, raw[arg], side)
        ops.append(coerce_op(rng.choice(spec.TOOL_NAMES), cases.shuffled(rng, raw)))
    raw = _base(rng)
    raw["sku"] = padded(rng, rng.choice(["sku-1001", "Sku-2040", "ABC"]), "both")  # strip, and nothing else
    ops.append(coerce_op(rng.choice(spec.TOOL_NAMES), raw))
    # ASCII whitespace only (LAB_SPEC step 9): blanks such as '\u00a0' and '\u3000', which str.strip() removes,
    # stay -- alone at both ends, and inside ASCII padding (which goes), for sku and region, on every run.
    for arg, note in (("sku", "no ASCII whitespace: unchanged"), ("region", "no ASCII whitespace: unchanged")):
        raw = _base(rng)
        raw[arg] = cases.unicode_padded(rng, raw[arg])
        ops.append(coerce_op(rng.choice(spec.TOOL_NAMES), raw, note=note))
    for arg in ("sku", "region"):
        raw = _base(rng)
        raw[arg] = padded(rng, cases.unicode_padded(rng, raw[arg]), "both")
        ops.append(coerce_op(rng.choice(spec.TOOL_NAMES), raw, note="only the ASCII whitespace goes"))
    return ops


def _lower_ops(rng: random.Random) -> list[Any]:
    ops = []
    for _ in range(2):
        raw = _base(rng)
        raw["region"] = recased(rng, raw["region"])
        ops.append(coerce_op(rng.choice(spec.TOOL_NAMES), raw))
    raw = _base(rng)
    raw["region"] = padded(rng, recased(rng, raw["region"]), "both")
    ops.append(coerce_op(rng.choice(spec.TOOL_NAMES), raw, note="strip, then lower"))
    raw = _base(rng)
    raw["sku"] = rng.choice(["sku-", "Sku-"]) + raw["sku"][4:]  # no `allowed`: never lower-cased
    ops.append(coerce_op(rng.choice(spec.TOOL_NAMES), raw, note="sku has no 'allowed'"))
    raw = _base(rng)
    raw["region"] = recased(rng, rng.choice(["mars", "arctic", "moon"]))  # its lower form is not allowed either
    ops.append(coerce_op(rng.choice(spec.TOOL_NAMES), raw))
    # str.lower, not str.casefold (LAB_SPEC step 9): 'ſouth'.lower() keeps the long s, so it is not allowed.
    raw = _base(rng)
    raw["region"] = cases.long_s(rng.choice([r for r in spec.REGIONS if "s" in r]))
    ops.append(coerce_op(rng.choice(spec.TOOL_NAMES), raw, note="lower() keeps the long s; casefold() does not"))
    return ops


# Allowed values outside ASCII, with values that str.lower turns into them: a capital that is not an ASCII
# letter, and a sharp s (lower() makes 'straße' of 'STRAßE', casefold() makes 'strasse', which is not allowed).
_ACCENTED = [("zürich", "ZÜRICH"), ("örebro", "Örebro"), ("ålesund", "ÅLESUND"), ("évora", "Évora"), ("łódź", "ŁÓDŹ")]
_SHARP_S = [("straße", "STRAßE"), ("gießen", "GIEßEN"), ("weißwasser", "Weißwasser")]


def _lower_unicode_ops(rng: random.Random) -> list[Any]:
    """A contract whose ``allowed`` holds non-ASCII values: lower() is Unicode-aware and is not casefold().

    The seed picks the words, never the classes (a capital outside A-Z; a sharp s, which casefold() changes).
    """
    tool = rng.choice(spec.TOOL_NAMES)
    (accented, accented_raw), (sharp, sharp_raw) = rng.choice(_ACCENTED), rng.choice(_SHARP_S)
    rules = cases.spec_args_contract()
    rules["region"]["allowed"] = spec.REGIONS + [accented, sharp]
    label = f"TOOLS[{tool!r}]['args']['region'] = {show(rules['region'])}"
    ops = [op("contract", path=[tool, "args", "region", "allowed"], value=list(rules["region"]["allowed"]))]
    for value, note in (
        (accented_raw, "lower() lower-cases every capital, not only A-Z"),
        (padded(rng, sharp_raw, "both"), f"lower() keeps the ß: {sharp!r} is allowed"),
    ):
        ops.append(
            coerce_op(tool, {**_base(rng), "region": value}, {k: dict(v) for k, v in rules.items()}, f"{label}; {note}")
        )
    return ops


def _int_ops(rng: random.Random) -> list[Any]:
    ops = []
    digits = [str(rng.randint(1, spec.MAX_ROWS)), "0" + str(rng.randint(1, 9)), str(rng.randint(6, 99)), "0"]
    for text, side in zip(digits, ["", "left", "right", "both"]):
        raw = _base(rng)
        raw["limit"] = padded(rng, text, side) if side else text
        ops.append(coerce_op(rng.choice(spec.TOOL_NAMES), raw))
    return ops


def _never_values(rng: random.Random) -> list[Any]:
    """``(arg, value)`` pairs that no rule may change: one of each class on every run."""
    n = rng.randint(1, spec.MAX_ROWS)
    return [
        ("limit", True),
        ("limit", False),
        ("region", True),
        ("limit", float(n)),
        ("limit", f"{n}.0"),
        ("limit", "+" + str(n)),
        ("limit", "-" + str(n)),
        ("limit", padded(rng, "+" + str(n), "both")),
        ("limit", f"1,{n}99"),
        ("limit", f"1_{n}00"),
        ("limit", f"{n} 2"),
        ("limit", f"{n} rows"),
        *[("limit", odd) for odd in _ODD_DIGITS],
        ("limit", str(n) + rng.choice(_ODD_DIGITS)),
        ("limit", ""),
        # Text only an unlisted rule would change (a bool or None from a word).
        ("limit", "true"),
        ("sku", "null"),
        ("region", ""),
        ("sku", ""),
        ("limit", all_whitespace(rng)),
        ("region", rng.randint(1, 9)),
        ("limit", n),
        # int_from_str reads the value after step 9's strip (ASCII whitespace): other blanks stay, so no int.
        ("limit", cases.unicode_padded(rng, str(n))),
        ("limit", padded(rng, cases.unicode_padded(rng, str(n)), "both")),
    ]


def _never_ops(rng: random.Random) -> list[Any]:
    ops = []
    for arg, value in _never_values(rng):
        raw = _base(rng)
        raw[arg] = value
        ops.append(coerce_op(rng.choice(spec.TOOL_NAMES), raw))
    raw = _base(rng)
    extra = rng.choice(cases.TYPED_ARG_NAMES["str"])
    raw[extra] = padded(rng, recased(rng, "north"), "both")
    ops.append(coerce_op(rng.choice(spec.TOOL_NAMES), raw, note=f"{extra!r} is not in the contract"))
    raw = {"sku": padded(rng, "SKU-1001", "both"), "region": recased(rng, "north"), "limit": str(n_of(rng))}
    ops.append(coerce_op(rng.choice(["stock_lookupp", "inventory", "Stock_Lookup"]), raw, note="an unknown tool"))
    return ops


def n_of(rng: random.Random) -> int:
    return rng.randint(1, spec.MAX_ROWS)


def _contract_ops(rng: random.Random) -> list[Any]:
    """Contracts the grader changes: an added str/int argument, ``allowed`` grown and shrunk, types swapped."""
    tool = rng.choice(spec.TOOL_NAMES)
    rules = cases.spec_args_contract()
    ops: list[Any] = []

    def change(path: list[Any], value: Any = None, delete: bool = False) -> str:
        target = rules
        for key in path[:-1]:
            target = target[key]
        if delete:
            target.pop(path[-1])
        else:
            target[path[-1]] = value
        ops.append(
            op("contract", path=[tool, "args"] + path, delete=True)
            if delete
            else op("contract", path=[tool, "args"] + path, value=value)
        )
        return f"TOOLS[{tool!r}]['args'][{path[0]!r}]" + (" removed" if delete else f" = {show(rules[path[0]])}")

    def call(raw: JsonDict, note: str) -> None:
        ops.append(coerce_op(tool, {**_base(rng), **raw}, {k: dict(v) for k, v in rules.items()}, note))

    word, number = rng.choice(cases.TYPED_ARG_NAMES["str"]), rng.choice(cases.TYPED_ARG_NAMES["int"])
    note = change([word], {"type": str, "required": False})
    call({word: padded(rng, recased(rng, "memo"), "both")}, note)
    note = change([number], {"type": int, "required": False, "min": 0})
    call({number: padded(rng, str(rng.randint(10, 999)), "both")}, note)
    grown = rng.choice(["mars", "arctic", "moon"])
    note = change(["region", "allowed"], tuple(spec.REGIONS + [grown]))
    call({"region": recased(rng, grown)}, note)
    dropped = rng.choice(spec.REGIONS)
    note = change(["region", "allowed"], [r for r in spec.REGIONS if r != dropped])
    call({"region": recased(rng, dropped)}, note)
    # Values only an unlisted rule would change (booleans or None from text): the allowlist leaves them alone.
    flag = rng.choice(cases.TYPED_ARG_NAMES["bool"])
    note = change([flag], {"type": bool, "required": False})
    for text in ("true", rng.choice(["false", "True", "yes", "no", "on", "1", "0"])):
        call({flag: text}, note + f": no rule of the three changes a str for a bool argument ({text!r} stays {text!r})")
    ratio = rng.choice(cases.TYPED_ARG_NAMES["float"])
    note = change([ratio], {"type": float, "required": False})
    call({ratio: padded(rng, rng.choice(["0.5", "2", "1.25"]), "both")}, note + ": no rule for a float")
    note = change(["limit"], {"type": str, "required": True})
    call({"limit": padded(rng, str(n_of(rng)), "both")}, note)
    note = change(["sku"], {"type": int, "required": True})
    call({"sku": str(rng.randint(100, 9999))}, note)
    note = change(["region"], delete=True)
    call({"region": padded(rng, recased(rng, "south"), "both")}, note)
    return ops


# ---------------------------------------------------------------------------
# Judging
# ---------------------------------------------------------------------------


def split_return(value: Any, label: str) -> tuple[Any, ...]:
    """``(args, coercions)`` of an encoded return value (a tuple or a list of two), else :class:`Fail`.

    >>> split_return({"$tuple": [{}, []]}, "x")
    ({}, [])
    """
    pair = value.get("$tuple") if isinstance(value, dict) and set(value) == {"$tuple"} else value
    if not isinstance(pair, list) or len(pair) != 2:
        raise Fail(
            "coerce must return a pair (args, coercions).", call=label, expected="(args, coercions)", got=show(value)
        )
    return pair[0], pair[1]


def rule_names(rule: Any) -> set[str] | None:
    """The rule names a ledger entry's ``rule`` gives (``'strip+lower'`` or a list), or ``None`` if unreadable.

    >>> sorted(rule_names("strip+lower")), rule_names(["int_from_str"]), rule_names(3)
    (['lower', 'strip'], {'int_from_str'}, None)
    """
    if isinstance(rule, dict) and set(rule) == {"$tuple"}:
        rule = rule["$tuple"]
    if isinstance(rule, str):
        return {part for part in re.split(r"[^A-Za-z_]+", rule) if part}
    if isinstance(rule, list) and all(isinstance(part, str) for part in rule):
        return set(rule)
    return None


def _coerce_records(probes: list[Probe], observations: list[Observation]) -> list[Any]:
    """``(operation, record, return value)`` of every coerce call, with the labels of the calls before it."""
    out = []
    for probe, obs in zip(probes, observations):
        for operation, rec in judged(probe, records_of(probe, obs)):
            if operation.get("fn") == "coerce":
                out.append((operation, rec, value_of(rec, operation, "coerce should return (args, coercions).")))
    return out


def _judge_args(probes: list[Probe], observations: list[Observation], message: str) -> Verdict:
    for operation, _rec, value in _coerce_records(probes, observations):
        args, _ledger = split_return(value, operation["label"])
        if not strict_equal(args, operation["expect_args"]):
            raise Fail(message, call=operation["label"], expected=show(operation["expect_args"]), got=show(args))
    return Verdict.ok()


def args_judge(message: str) -> Judge:
    """A judge of the coerced arguments alone (exact values and types)."""
    return lambda probes, observations: _judge_args(probes, observations, message)


def check_ledger(ledger: Any, changes: JsonDict, label: str) -> None:
    """:class:`Fail` unless ``ledger`` has exactly one right entry per changed argument (any order)."""
    if isinstance(ledger, dict) and set(ledger) == {"$tuple"}:
        ledger = ledger["$tuple"]
    if not isinstance(ledger, list) or not all(isinstance(e, dict) and "$tuple" not in e for e in ledger):
        raise Fail("The ledger (coercions) must be a list of dicts.", call=label, expected="a list", got=show(ledger))
    want = ", ".join(f"{arg}: {'+'.join(rules)}" for arg, (_a, _b, rules) in changes.items()) or "no entry"
    by_arg = [e.get("arg") for e in ledger]
    if sorted(map(str, by_arg)) != sorted(changes) or len(set(map(str, by_arg))) != len(by_arg):
        raise Fail(
            "The ledger needs exactly one entry per argument whose value changed, and none for the others.",
            call=label,
            expected=want,
            got=show(ledger),
        )
    for entry in ledger:
        raw, new, rules = changes[entry["arg"]]
        ok_rules = [set(rules)] + ([{"strip", "int_from_str"}] if rules == ["int_from_str"] else [])
        if not (
            strict_equal(entry.get("from", ...), raw)
            and strict_equal(entry.get("to", ...), new)
            and rule_names(entry.get("rule")) in ok_rules
        ):
            raise Fail(
                "A ledger entry must hold 'arg', 'from' (the raw value), 'to' (the new value) and 'rule' "
                "naming every rule applied, no other.",
                call=label,
                expected=show({"arg": entry["arg"], "from": raw, "to": new, "rule": "+".join(rules)}),
                got=show(entry),
            )


def _ledger_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    for operation, _rec, value in _coerce_records(probes, observations):
        _args, ledger = split_return(value, operation["label"])
        check_ledger(ledger, operation["expect_changes"], operation["label"])
    return Verdict.ok()


def _keys_input_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    for operation, rec, value in _coerce_records(probes, observations):
        args, _ledger = split_return(value, operation["label"])
        raw = operation["args"][1]
        if not isinstance(args, dict) or sorted(map(str, args)) != sorted(raw):
            raise Fail(
                "coerce must return a dict with exactly the keys it was given: nothing added (no "
                "defaults), nothing removed.",
                call=operation["label"],
                expected=sorted(raw),
                got=show(args),
            )
        after = rec.get("args_after")
        if not isinstance(after, list) or not strict_equal(after[1], raw):
            raise Fail(
                "coerce changed the dict it was given: copy it first and change the copy.",
                call=operation["label"],
                expected=show(raw),
                got=show(after[1] if after else after),
            )
    return Verdict.ok()


def _no_body_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    for probe, obs in zip(probes, observations):
        start = obs.get("start") if isinstance(obs, dict) else None
        for operation, rec in judged(probe, records_of(probe, obs)):
            if operation.get("op") != "call":
                continue
            value_of(rec, operation, "coerce should return (args, coercions), without running a tool body.")
            runs = rec.get("spy_runs", {})
            if any(runs.get(tool) for tool in NO_RUNS):
                raise Fail(
                    "coerce ran a tool body: it only rewrites arguments; calling is call_coerced's job.",
                    call=operation["label"],
                    expected="no tool body run",
                    got=show(runs),
                )
            if isinstance(start, dict):
                check_calls_unchanged(
                    start.get("calls"),
                    rec.get("calls"),
                    operation["label"],
                    "coerce made CALLS move: it must never run a tool body.",
                )
    return Verdict.ok()


# ---------------------------------------------------------------------------
# Checks of coerce
# ---------------------------------------------------------------------------


def _table_probes(rng: random.Random) -> list[Any]:
    return [call_probe([op("attr", name="COERCIONS", label="COERCIONS")], reset=True)]


def _table_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    operation, rec = judged(probes[0], records_of(probes[0], observations[0]))[0]
    value = value_of(rec, operation, "The module needs a name COERCIONS.")
    text = show(value, limit=100000)
    missing = [name for name in spec.COERCION_RULES if f"'{name}'" not in text and f'"{name}"' not in text]
    if missing:
        raise Fail(
            "COERCIONS must name the three allowed rules (as strings): strip, lower and int_from_str.",
            call="COERCIONS",
            expected=", ".join(spec.COERCION_RULES),
            got=show(value),
        )
    return Verdict.ok()


add(
    "step9/coercions_table",
    1,
    "COERCIONS names the three allowed rules",
    "Write a module-level COERCIONS table (any shape) whose entries name 'strip', 'lower' and 'int_from_str'.",
    ["9.table"],
    _table_probes,
    _table_judge,
)

add(
    "step9/strip",
    2,
    "strip removes leading/trailing ASCII whitespace of str arguments",
    "For an argument whose contract type is str, remove the ASCII whitespace (' \\t\\n\\r\\x0b\\x0c') at both "
    "ends of a str value (not only at one end) and change nothing else in it. str.strip() with no argument "
    "also removes '\\u00a0' and '\\u3000': pass it the ASCII characters.",
    ["9.strip"],
    lambda rng: [on_spec_contract(_strip_ops(rng))],
    args_judge(
        "A str argument's value must lose its leading and trailing ASCII whitespace, nothing else "
        "(other blanks, such as '\\u00a0' or '\\u3000', stay)."
    ),
)

add(
    "step9/lower",
    2,
    "lower only for an argument with `allowed`, when only the lower-case form is allowed",
    "Lower-case a value only when the rule has 'allowed', the value (after strip) is not in it and its "
    "str.lower() form is. A sku has no 'allowed': leave its case alone. Use lower(), not casefold(): "
    "'ſouth'.casefold() is 'south', 'STRAßE'.casefold() is 'strasse'.",
    ["9.lower"],
    lambda rng: [on_spec_contract(_lower_ops(rng)), on_spec_contract(_lower_unicode_ops(rng))],
    args_judge(
        "lower applies only to an argument with 'allowed', when the value is not allowed but its "
        "str.lower() form (after strip) is."
    ),
)

add(
    "step9/int_from_str",
    2,
    "int_from_str turns ASCII digits (after strip) into an int",
    "For an int argument, strip a str value; if what is left is one or more of the characters 0-9, "
    "return int(...) of it. Do not check the range here: validation does that.",
    ["9.int_from_str"],
    lambda rng: [on_spec_contract(_int_ops(rng))],
    args_judge("A str of ASCII digits (after strip) for an int argument must become that int."),
)

add(
    "step9/never_coerced",
    3,
    "bool, floats, signs, units, non-ASCII digits, '', unlisted args, unknown tools: unchanged",
    "Apply a rule only to a str value, and int_from_str only when every character is one of 0123456789 "
    "(str.isdigit() and int() accept '３', '²' and '٣'). Leave bool, floats, '+3', '1,299', '3 rows', '', "
    "arguments the contract does not list and every argument of an unknown tool as they are.",
    ["9.never"],
    lambda rng: [on_spec_contract(_never_ops(rng))],
    args_judge("This value must be left exactly as it was: no rule of the allowlist applies to it."),
)

add(
    "step9/follows_contract",
    2,
    "the rules follow the contract table when called",
    "Read TOOLS[name]['args'] inside coerce each time: the type decides strip or int_from_str, 'allowed' "
    "decides lower, and an argument the grader adds to the contract is coerced like the others.",
    ["9.contract"],
    lambda rng: [on_spec_contract(_contract_ops(rng))],
    args_judge("The grader changed the contract: coerce must apply the rules the table says now."),
)

add(
    "step9/same_keys_input_unchanged",
    2,
    "coerce returns a new dict with the same keys and leaves its input alone",
    "Start from a copy (dict(raw_args)) and change only values in it: no default added, no key dropped, "
    "and the caller's dict unchanged.",
    ["9.keys", "9.input"],
    lambda rng: [
        on_spec_contract(
            _strip_ops(rng)[:2]
            + _lower_ops(rng)[:1]
            + _int_ops(rng)[:2]
            + [
                coerce_op(
                    rng.choice(spec.TOOL_NAMES),
                    {"sku": padded(rng, "SKU-1001", "both"), "region": "north"},
                    note="limit is missing: not added",
                ),
                coerce_op(rng.choice(spec.TOOL_NAMES), {"region": recased(rng, "west")}, note="only region given"),
            ]
            + _never_ops(rng)[-2:]
        )
    ],
    _keys_input_judge,
)

add(
    "step9/ledger",
    2,
    "one ledger entry per changed argument: arg, from, to, rule",
    "For each argument whose value changed, append {'arg': name, 'from': raw, 'to': new, 'rule': ...} with "
    "every rule applied ('strip+lower'); add no entry for an argument left as it was.",
    ["9.ledger"],
    lambda rng: [
        on_spec_contract(_strip_ops(rng) + _lower_ops(rng) + _int_ops(rng) + _never_ops(rng)[:6]),
        on_spec_contract(_contract_ops(rng)),
    ],
    _ledger_judge,
)

add(
    "step9/no_body_run",
    1,
    "coerce never runs a tool body",
    "coerce only rewrites arguments: it must not call call_tool or a tool function.",
    ["9.no_body"],
    lambda rng: [
        on_spec_contract(_strip_ops(rng)[:2] + _int_ops(rng)[:2] + _never_ops(rng)[:3], spies=TOOL_SPIES_ORIGINAL)
    ],
    _no_body_judge,
)


# ---------------------------------------------------------------------------
# Checks of call_coerced (with the grader's call_tool and validate_args)
# ---------------------------------------------------------------------------


def coerced_call_probe(tool: str, raw: JsonDict, note: str) -> Probe:
    """One ``call_coerced`` call, the grader's ``validate_args`` and ``call_tool`` in place, body spies on."""
    operation = coerce_op(tool, raw)
    operation.update(fn="call_coerced", label=operation["label"].replace("coerce(", "call_coerced(", 1) + f"  # {note}")
    doubles = [double_op("validate_args", contract="spec"), double_op("call_tool", contract="spec")]
    # On the learner's own route call_tool is watched, not replaced: its calls come back the same way.
    return on_spec_contract(doubles + [operation], spies=TOOL_SPIES_TABLE, watch_on_real=["call_tool"])


def _valid_raw(rng: random.Random) -> JsonDict:
    raw = cases.random_valid_args(rng, stocked=True)
    raw["region"] = padded(rng, recased(rng, raw["region"]), "both")
    raw["limit"] = padded(rng, "0" + str(raw["limit"]), "right")
    return raw


def _invalid_raws(rng: random.Random) -> list[Any]:
    """Raw arguments still refused after coercion, one of each kind on every run."""
    out = []
    for arg, value in (
        ("limit", rng.choice(_INT_TAKES)),
        ("limit", str(rng.randint(spec.MAX_ROWS + 1, 99))),
        ("region", padded(rng, recased(rng, "mars"), "both")),
        ("limit", rng.choice([True, False])),
        ("limit", "+" + str(n_of(rng))),
    ):
        raw = cases.random_valid_args(rng, stocked=True)
        raw["sku"] = padded(rng, raw["sku"], "right")
        raw[arg] = value
        out.append(raw)
    return out


def _call_coerced_probes(rng: random.Random) -> list[Any]:
    """Valid once coerced: a call that succeeds with each tool, and one whose result is refused (too_big).

    Each class on every run: whether a result refusal is among them is never the seed's draw.
    """
    calls = []
    for tool in spec.TOOL_NAMES:
        raw = _valid_raw(rng)
        while tool == "legacy_stock" and (raw["sku"], raw["region"].strip().lower()) == spec.BIG_PAIR:
            raw = _valid_raw(rng)  # legacy_stock ignores limit: this pair is result:too_big
        calls.append((tool, raw, "valid once coerced"))
    raw = _valid_raw(rng)
    raw["sku"] = padded(rng, spec.BIG_PAIR[0], "left")
    raw["region"] = padded(rng, recased(rng, spec.BIG_PAIR[1]), "both")
    calls.append(("legacy_stock", raw, "valid once coerced; the result is refused (too_big)"))
    return [coerced_call_probe(*call) for call in calls] + [own_coerce_probe([call[:2] for call in calls])]


def _refused_probes(rng: random.Random) -> list[Any]:
    calls = [(rng.choice(spec.TOOL_NAMES), raw) for raw in _invalid_raws(rng)]
    return [coerced_call_probe(tool, raw, "still refused after coercion") for tool, raw in calls] + [
        own_coerce_probe(calls)
    ]


def own_coerce_probe(calls: list[Any]) -> Probe:
    """The module's own ``coerce`` of each ``call_coerced`` call ``(tool, raw)``, last in a check's probes.

    For the judge only: when call_tool got the wrong arguments (or the ledger is wrong) and they are what
    this ``coerce`` returns, the slip is coerce's, and the failure says so rather than blame call_coerced.

    >>> [o.get("fn") for o in own_coerce_probe([("stock_lookup", {"limit": " 2"})]).params["operations"]][2:]
    ['coerce']
    """
    return on_spec_contract([coerce_op(tool, raw) for tool, raw in calls])


def _own_coerce_fail(own: Any, operation: JsonDict, what: str) -> Fail:
    """The failure of a call_coerced call whose wrong ``what`` is what the module's own coerce returned."""
    coerce_label = operation["label"].split("  # ")[0].replace("call_coerced(", "coerce(", 1)
    want = (
        operation["expect_args"]
        if what == "args"
        else [
            {"arg": arg, "from": a, "to": b, "rule": "+".join(rules)}
            for arg, (a, b, rules) in operation["expect_changes"].items()
        ]
    )
    return Fail(
        f"coerce returns the wrong {'arguments' if what == 'args' else 'ledger'} for these raw arguments, and "
        f"call_coerced passed {'them to call_tool' if what == 'args' else 'it on as coercions'}: the mistake "
        "is in coerce (its own checks, step9/strip ... step9/ledger, say which rule), not in call_coerced.",
        call=f"{coerce_label}  # inside call_coerced",
        expected=show(want),
        got=show(own),
    )


def _own_coerce(own_probe: Probe | None, own_obs: Any, i: int) -> Any:
    """What the module's own coerce returned (a ``(args, ledger)`` list) for the ``i``-th call, else ``None``."""
    if own_probe is None or not isinstance(own_obs, dict):
        return None
    try:
        operation, rec = [
            pair for pair in judged(own_probe, records_of(own_probe, own_obs)) if pair[0].get("fn") == "coerce"
        ][i]
        return list(split_return(rec["value"], operation["label"])) if "value" in rec else None
    except (Fail, IndexError):
        return None


def _judge_door(probe: Probe, obs: JsonDict, refused: bool, own: Any = None) -> None:
    operation, rec = [pair for pair in judged(probe, records_of(probe, obs)) if pair[0].get("op") == "call"][0]
    label = operation["label"]
    value = value_of(rec, operation, "call_coerced should return call_tool's dict plus 'coercions'.")
    seen = obs.get("double_seen", {}).get("call_tool", [])
    want_args = [operation["args"][0], operation["expect_args"]]
    if len(seen) != 1 or not strict_equal(seen[0].get("args"), want_args):
        if own is not None and len(seen) == 1 and strict_equal(seen[0].get("args"), [operation["args"][0], own[0]]):
            raise _own_coerce_fail(own[0], operation, "args")
        raise Fail(
            "call_coerced must call call_tool once, with the arguments coerce returns.",
            call=label,
            expected=f"call_tool{show(want_args)}",
            got=show([s.get("args") for s in seen]) if seen else "no call_tool call",
        )
    returned = seen[0].get("returned")
    if not isinstance(value, dict) or "coercions" not in value or not isinstance(returned, dict):
        raise Fail(
            "call_coerced must return call_tool's dict plus a key 'coercions'.",
            call=label,
            expected=show({**(returned or {}), "coercions": "[...]"}),
            got=outcome(rec),
        )
    rest = {k: v for k, v in value.items() if k != "coercions"}
    if not strict_equal(rest, returned):
        raise Fail(
            "Apart from 'coercions', call_coerced must return what call_tool returned, unchanged.",
            call=label,
            expected=show(returned),
            got=show(rest),
        )
    try:
        check_ledger(value["coercions"], operation["expect_changes"], label)
    except Fail:
        if own is not None and strict_equal(value["coercions"], own[1]):
            raise _own_coerce_fail(own[1], operation, "ledger") from None
        raise
    if refused:
        runs = rec.get("spy_runs", {})
        if any(runs.get(tool) for tool in NO_RUNS) or not str(returned.get("error", "")).startswith("args:"):
            raise Fail(
                "A call still invalid after coercion must be refused by call_tool (args:...) with no tool body run.",
                call=label,
                expected="args:... and no body run",
                got=f"{show(value)}, body runs {show(runs)}",
            )
        start = obs.get("start")
        if isinstance(start, dict):
            check_calls_unchanged(start.get("calls"), rec.get("calls"), label)


def door_judge(refused: bool) -> Judge:
    """A judge of ``call_coerced`` probes (one call each) against the call_tool double's record; the last probe
    holds the module's own coerce of the same raw arguments (:func:`own_coerce_probe`)."""

    def judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
        own_probe, own_obs = probes[-1], observations[-1]
        for i, (probe, obs) in enumerate(zip(probes[:-1], observations[:-1])):
            _judge_door(probe, obs, refused, _own_coerce(own_probe, own_obs, i))
        return Verdict.ok()

    return judge


add(
    "step9/call_coerced",
    2,
    "call_coerced calls call_tool once on the coerced args and adds 'coercions'",
    "call_coerced: args, coercions = coerce(name, raw_args); then return {**call_tool(name, args), "
    "'coercions': coercions}. Call call_tool (by its name) exactly once, with the coerced arguments.",
    ["9.call_coerced"],
    _call_coerced_probes,
    door_judge(refused=False),
)

add(
    "step9/call_coerced_refused",
    2,
    "a call still invalid after coercion is refused as args:... with no body run",
    "Do not call the tool yourself and do not invent your own refusal: pass the coerced arguments to call_tool, "
    "which refuses them with 'args:<reason>' before any tool body runs.",
    ["9.refused"],
    _refused_probes,
    door_judge(refused=True),
)
