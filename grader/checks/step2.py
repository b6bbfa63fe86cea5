"""Step 2 checks: ``validate_args`` gives exactly one reason, from the contract table only."""

from __future__ import annotations

import random
import unicodedata
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
    expectations_judge,
    op,
    outcome,
    records_of,
)
from grader.checks.registry import Observation, Probe, ProbeFactory, Verdict
from grader.engine.wire import JsonDict


def _on_spec_contract(ops: list[Any], **options: Any) -> Probe:
    """A ``calls`` probe that first puts the spec's argument contract in ``TOOLS[tool]['args']`` of both tools.

    Step 2 is judged on ``validate_args`` alone: data the grader controls, not the
    module's step-1 table (a region left out of the module's REGIONS costs step 1,
    not a seed-dependent handful of step-2 checks). The change is undone when the
    probe ends; a ``validate_args`` that reads the table when called sees it.

    >>> [o["path"] for o in _on_spec_contract([]).params["operations"]]
    [['stock_lookup', 'args'], ['legacy_stock', 'args']]
    """
    setup = [op("contract", path=[tool, "args"], value=cases.spec_args_contract()) for tool in spec.TOOL_NAMES]
    return call_probe(setup + ops, **options)


def _unseen_note(args: JsonDict) -> str:
    """A call-line note naming the characters a reader cannot tell apart by eye (non-ASCII, control).

    >>> _unseen_note({"region": "n\u043erth", "limit": 2})
    "  # 'region' holds U+043E CYRILLIC SMALL LETTER O"
    """
    notes = []
    for arg, value in args.items():
        odd = sorted({c for c in value if not " " <= c <= "~"}) if isinstance(value, str) else []
        if odd:
            names = ", ".join(f"U+{ord(c):04X} {unicodedata.name(c, 'control character')}" for c in odd[:3])
            notes.append(f"{arg!r} holds {names}")
    return "  # " + "; ".join(notes) if notes else ""


def _with_note(operation: JsonDict, args: JsonDict) -> JsonDict:
    operation["label"] += _unseen_note(args)
    return operation


def _reason_probes(kind: str | tuple[Any, ...], n: int) -> ProbeFactory:
    """Probes: calls of validate_args with one defect each, every class of every kind on every run.

    ``kind`` is one kind or a tuple of kinds; each kind is sent with variants
    ``0..n-1`` (:func:`cases._pick` cycles through its classes), so the seed
    changes the values, never which classes are sent.
    """
    kinds = (kind,) if isinstance(kind, str) else kind

    def probes(rng: random.Random) -> list[Probe]:
        ops = []
        for one in kinds:
            for i in range(n):
                tool, args, reason = cases.single_defect(rng, one, variant=i, inner=True)
                ops.append(_with_note(call_op("validate_args", tool, args, expect=reason), args))
        return [_on_spec_contract(ops)]

    return probes


def _reason_check(
    check_id: str,
    kind: str | tuple[Any, ...],
    n: int,
    points: int,
    title: str,
    hint: str,
    rules: list[Any],
    message: str,
) -> None:
    add(check_id, points, title, hint, rules, _reason_probes(kind, n), expectations_judge(message))


def _valid_probes(rng: random.Random) -> list[Probe]:
    """Every region, every limit from min to max, every sku of the table (and one without rows), both tools;
    then one sku of each class of str the contract allows (:func:`cases.any_str_values`)."""
    regions, limits = list(spec.REGIONS), list(range(1, spec.MAX_ROWS + 1))
    skus = spec.SKUS + [spec.UNKNOWN_SKU]
    for values in (regions, limits, skus):
        rng.shuffle(values)
    ops = []
    for i in range(max(len(regions), len(limits), len(skus))):
        args = {"sku": skus[i % len(skus)], "region": regions[i % len(regions)], "limit": limits[i % len(limits)]}
        ops.append(call_op("validate_args", spec.TOOL_NAMES[i % 2], cases.shuffled(rng, args), expect=""))
    for name, sku in cases.any_str_values(rng):
        args = {**cases.random_valid_args(rng, inner=True), "sku": sku}
        operation = _with_note(call_op("validate_args", rng.choice(spec.TOOL_NAMES), args, expect=""), args)
        operation["expect_why"] = (
            f"The contract gives sku only 'type': str, so any str is valid ({name} "
            "included): add no pattern, prefix, length or alphabet rule the contract does "
            "not state."
        )
        ops.append(operation)
    return [_on_spec_contract(ops)]


add(
    "step2/valid_passes",
    2,
    "A valid call gives the empty string",
    'When every argument is present, listed, of the right type, allowed and in range, return "" '
    "(the bounds min and max are inclusive; the order of the arguments does not matter). Check only what "
    "the contract states: a str argument with no 'allowed' takes any str (empty, lower case, spaces, "
    "non-ASCII, long).",
    ["2.valid"],
    _valid_probes,
    expectations_judge('A valid call must give "".'),
)

_reason_check(
    "step2/unknown_tool",
    spec.UNKNOWN_TOOL,
    len(cases.UNKNOWN_TOOLS + cases.TOOL_LOOKALIKES),
    1,
    "A tool name that is not in TOOLS gives unknown_tool",
    "Check the name against the keys of TOOLS before anything else about the call.",
    ["2.unknown_tool"],
    "A name that is not a key of TOOLS must give 'unknown_tool'.",
)
_reason_check(
    "step2/missing",
    "missing",
    len(spec.ARG_NAMES),
    1,
    "A required argument that is absent gives missing:<arg>",
    "Walk the contract's arguments: a required one that is not in args is 'missing:' + its name.",
    ["2.missing"],
    "A required argument is absent: the reason is 'missing:<arg>'.",
)
_reason_check(
    "step2/extra",
    ("extra", "extra_lookalike"),
    3,
    1,
    "An argument the contract does not list gives extra:<arg>",
    "Walk the arguments you were given: one that the contract does not list is 'extra:' + its name "
    "(names are compared exactly: 'Limit' and 'limit ' are not 'limit').",
    ["2.extra"],
    "An argument that is not in the contract must give 'extra:<arg>'.",
)
_reason_check(
    "step2/type_wrong",
    ("type_wrong_sku", "type_wrong_limit", "type_none"),
    2,
    2,
    "A value of the wrong type gives type:<arg>",
    "Compare each value with the rule's 'type' (isinstance) before looking at allowed values or bounds; "
    "None and lists are wrong types too.",
    ["2.type"],
    "A value of the wrong type must give 'type:<arg>'.",
)
_reason_check(
    "step2/type_bool_limit",
    "type_bool",
    2,
    2,
    "True/False for limit gives type:limit",
    "bool is a subclass of int in Python, so isinstance(True, int) is True: refuse a bool "
    "where the contract asks for int.",
    ["2.type", "2.bool"],
    "A bool where an int is asked must give 'type:limit'.",
)
_reason_check(
    "step2/type_numeric_string",
    "type_numeric_string",
    2,
    1,
    "A numeric string for limit gives type:limit",
    '"3" is a str, not an int: do not convert it, refuse it.',
    ["2.type"],
    "A numeric string where an int is asked must give 'type:limit'.",
)
_reason_check(
    "step2/type_float",
    "type_float",
    2,
    1,
    "A float for limit gives type:limit",
    "2.0 is a float, not an int, even though it equals 2.",
    ["2.type"],
    "A float where an int is asked must give 'type:limit'.",
)
_reason_check(
    "step2/allowed_region",
    ("allowed", "allowed_lookalike"),
    8,
    2,
    "A region outside REGIONS gives allowed:region",
    "Compare the value with the rule's 'allowed' collection exactly: no lower-casing, no trimming, "
    "no Unicode normalisation, no guessing ('north ', 'ｎorth' and 'north' + a zero-width space are "
    "not 'north').",
    ["2.allowed"],
    "A region that is not in 'allowed' must give 'allowed:region'.",
)
_reason_check(
    "step2/range_low",
    "range_low",
    2,
    1,
    "A limit below min gives range:limit",
    "Compare with the rule's 'min' (inclusive): 0 and negative limits are out of range.",
    ["2.range"],
    "A limit below 'min' must give 'range:limit'.",
)
_reason_check(
    "step2/range_high",
    "range_high",
    2,
    1,
    "A limit above max gives range:limit",
    "Compare with the rule's 'max' (inclusive): MAX_ROWS is fine, MAX_ROWS + 1 is not.",
    ["2.range"],
    "A limit above 'max' must give 'range:limit'.",
)


def _no_body_probes(rng: random.Random) -> list[Probe]:
    ops = [call_op("validate_args", *cases.single_defect(rng, kind)[:2]) for kind in cases.DEFECT_KINDS]
    args = cases.random_valid_args(rng)
    ops.append(call_op("validate_args", rng.choice(spec.TOOL_NAMES), args))
    rng.shuffle(ops)
    ops[-1]["runs"] = {"stock_lookup": 0, "legacy_stock": 0}
    return [_on_spec_contract(ops, spies=TOOL_SPIES_ORIGINAL)]


def _no_body_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    probe, obs = probes[0], observations[0]
    records = records_of(probe, obs)
    start = obs["start"] if isinstance(obs.get("start"), dict) else {}
    for operation, rec in zip(probe.params["operations"], records):
        if operation["op"] != "call":
            continue  # the grader's own setup (the spec's contract) runs nothing of the module
        runs = rec.get("spy_runs", {})
        if any(runs.get(tool) != 0 for tool in spec.TOOL_NAMES):
            raise Fail(
                "validate_args ran a tool body: it must only read the contract table.",
                call=operation["label"],
                expected="0 runs of each tool",
                got=f"runs {runs}",
            )
        # A body reached around the spies still moves CALLS.
        check_calls_unchanged(
            start.get("calls"),
            rec.get("calls"),
            operation["label"],
            "validate_args ran a tool body (CALLS changed): it must only read the contract table.",
        )
    return Verdict.ok()


add(
    "step2/never_runs_body",
    2,
    "validate_args never runs a tool body",
    "Validation reads TOOLS[name]['args'] only; it never calls TOOLS[name]['fn'] or the tool functions.",
    ["2.no_body"],
    _no_body_probes,
    _no_body_judge,
)


def _changed(operation: JsonDict, change: str, why: str = "") -> JsonDict:
    """``operation`` with the grader's change of the contract on its call line (``# with ...``).

    ``why`` (judge-only: it starts with ``expect``) replaces the check's message when this call misses.
    """
    operation["label"] += f"  # with {change}"
    if why:
        operation["expect_why"] = why
    return operation


def _bound_probes(rng: random.Random, tool: str, args: JsonDict) -> list[Probe]:
    """``max`` lowered and ``min`` raised: each bound, and the values beside it, on every run."""
    new_max = rng.randint(1, spec.MAX_ROWS - 1)
    change = f"TOOLS[{tool!r}]['args']['limit']['max'] = {new_max}"
    ops = [
        op("contract", path=[tool, "args", "limit", "max"], value=new_max),
        _changed(
            call_op("validate_args", tool, {**args, "limit": new_max + 1}, expect="range:limit"),
            change,
            f"The grader lowered 'max' to {new_max}: read the bound from the contract when called, "
            "do not copy MAX_ROWS into validate_args.",
        ),
        _changed(
            call_op("validate_args", tool, {**args, "limit": new_max}, expect=""),
            change,
            f"limit == max is inside the range (bounds are inclusive): with 'max' = {new_max}, limit "
            f"{new_max} is valid. Refuse only a value above max (> not >=).",
        ),
    ]
    probes = [_on_spec_contract(ops)]
    new_min = rng.randint(2, spec.MAX_ROWS)
    change = f"TOOLS[{tool!r}]['args']['limit']['min'] = {new_min}"
    probes.append(
        _on_spec_contract(
            [
                op("contract", path=[tool, "args", "limit", "min"], value=new_min),
                _changed(
                    call_op("validate_args", tool, {**args, "limit": new_min - 1}, expect="range:limit"),
                    change,
                    f"The grader raised 'min' to {new_min}: read the bound from the contract when called, "
                    "do not write 1 into validate_args.",
                ),
                _changed(
                    call_op("validate_args", tool, {**args, "limit": new_min}, expect=""),
                    change,
                    f"limit == min is inside the range (bounds are inclusive): with 'min' = {new_min}, limit "
                    f"{new_min} is valid. Refuse only a value below min (< not <=).",
                ),
            ]
        )
    )
    return probes


def _one_sided_probe(rng: random.Random, tool: str, args: JsonDict) -> Probe:
    """Rules with one bound alone (``min`` only, ``max`` only), then with neither.

    LAB_SPEC step 2: a rule may have either bound alone, or both. Each rule is sent
    with the value just past its one bound (refused: that bound alone limits the
    value) and a value far past the bound it lacks (valid: a missing bound limits
    nothing), on every run; the seed draws the bounds and the far values.

    >>> ops = _one_sided_probe(random.Random(1), "stock_lookup", {"sku": "S", "region": "north"}).params["operations"]
    >>> [o["expect"] for o in ops if o["op"] == "call"]
    ['range:limit', '', 'range:limit', '', '', '']
    """
    path = [tool, "args", "limit"]
    low_bound, high_bound = rng.randint(2, spec.MAX_ROWS), rng.randint(1, spec.MAX_ROWS - 1)
    high, low = rng.randint(spec.MAX_ROWS + 1, 10**6), rng.randint(-99, 0)
    only_min = {"type": int, "required": True, "min": low_bound}
    only_max = {"type": int, "required": True, "max": high_bound}
    neither = {"type": int, "required": True}
    with_min = f"TOOLS[{tool!r}]['args']['limit'] = {{'type': int, 'required': True, 'min': {low_bound}}}"
    with_max = f"TOOLS[{tool!r}]['args']['limit'] = {{'type': int, 'required': True, 'max': {high_bound}}}"
    bare = f"TOOLS[{tool!r}]['args']['limit'] = {{'type': int, 'required': True}}"
    return _on_spec_contract(
        [
            op("contract", path=path, value=only_min),
            _changed(
                call_op("validate_args", tool, {**args, "limit": low_bound - 1}, expect="range:limit"),
                with_min,
                f"The rule has 'min' ({low_bound}) and no 'max': {low_bound - 1} is below min, so the reason is "
                "'range:limit'. Check 'min' whenever the rule has it, whether or not it also has 'max' "
                "(LAB_SPEC: a rule may have either bound alone).",
            ),
            _changed(
                call_op("validate_args", tool, {**args, "limit": high}, expect=""),
                with_min,
                "A rule without 'max' has no upper bound: check 'max' only when the rule has one "
                "(do not fall back on MAX_ROWS).",
            ),
            op("contract", path=path, value=only_max),
            _changed(
                call_op("validate_args", tool, {**args, "limit": high_bound + 1}, expect="range:limit"),
                with_max,
                f"The rule has 'max' ({high_bound}) and no 'min': {high_bound + 1} is above max, so the reason is "
                "'range:limit'. Check 'max' whenever the rule has it, whether or not it also has 'min' "
                "(LAB_SPEC: a rule may have either bound alone).",
            ),
            _changed(
                call_op("validate_args", tool, {**args, "limit": low}, expect=""),
                with_max,
                "A rule without 'min' has no lower bound: check 'min' only when the rule has one (do not fall back on 1).",
            ),
            op("contract", path=path, value=neither),
            _changed(
                call_op("validate_args", tool, {**args, "limit": low}, expect=""),
                bare,
                "A rule without 'min' and 'max' limits no value: check a bound only when the rule has it.",
            ),
            _changed(
                call_op("validate_args", tool, {**args, "limit": high}, expect=""),
                bare,
                "A rule without 'min' and 'max' limits no value: check a bound only when the rule has it.",
            ),
        ]
    )


def _allowed_probes(rng: random.Random, tool: str, args: JsonDict) -> list[Probe]:
    """``allowed`` grown, and shrunk to a tuple or a frozenset: compared with the rule, whatever collection."""
    region = rng.choice(["mars", "arctic", "moon"])
    grown = _on_spec_contract(
        [
            op("contract", path=[tool, "args", "region", "allowed"], value=spec.REGIONS + [region]),
            _changed(
                call_op("validate_args", tool, {**args, "region": region}, expect=""),
                f"{region!r} added to TOOLS[{tool!r}]['args']['region']['allowed']",
                "The grader added a region to 'allowed': compare with the rule's 'allowed' when called, "
                "not with REGIONS.",
            ),
        ]
    )
    dropped = rng.choice(spec.REGIONS)
    kept = [r for r in spec.REGIONS if r != dropped]
    ops = []
    for collection in (tuple, frozenset):
        change = f"TOOLS[{tool!r}]['args']['region']['allowed'] = {collection.__name__}({kept!r})"
        ops += [
            op("contract", path=[tool, "args", "region", "allowed"], value=collection(kept)),
            _changed(
                call_op("validate_args", tool, {**args, "region": dropped}, expect="allowed:region"),
                change,
                f"The grader took {dropped!r} out of 'allowed': compare with the rule's 'allowed' (any "
                "collection) when called, not with REGIONS.",
            ),
            _changed(
                call_op("validate_args", tool, {**args, "region": rng.choice(kept)}, expect=""),
                change,
                "'allowed' may be any collection (a tuple, a frozenset): test membership with `in`.",
            ),
        ]
    return [grown, _on_spec_contract(ops)]


def _float_bounds_probe(rng: random.Random, tool: str, args: JsonDict) -> Probe:
    """A float argument with ``min`` and ``max``: at, inside and beside both bounds."""
    name = rng.choice(cases.TYPED_ARG_NAMES["float"])
    low = rng.choice([0.5, 1.25, 2.0])
    high = low + rng.choice([1.0, 2.5, 4.0])
    rule = {"type": float, "required": True, "min": low, "max": high}
    change = f"TOOLS[{tool!r}]['args'][{name!r}] = {{'type': float, 'required': True, 'min': {low}, 'max': {high}}}"
    ops = [op("contract", path=[tool, "args", name], value=rule)]
    for value, reason in (
        (low, ""),
        (high, ""),
        ((low + high) / 2, ""),
        (low - 0.125, f"range:{name}"),
        (high + 0.125, f"range:{name}"),
    ):
        why = f"{value!r} is {'inside' if not reason else 'outside'} {low}..{high} (bounds inclusive): " + (
            f"the reason is 'range:{name}'." if reason else "valid."
        )
        ops.append(_changed(call_op("validate_args", tool, {**args, name: value}, expect=reason), change, why))
    return _on_spec_contract(ops)


def _contract_probes(rng: random.Random) -> list[Probe]:
    tool = rng.choice(spec.TOOL_NAMES)
    args = cases.random_valid_args(rng, inner=True)
    probes = _bound_probes(rng, tool, args) + [_one_sided_probe(rng, tool, args)]
    probes += _allowed_probes(rng, tool, args) + [_float_bounds_probe(rng, tool, args)]
    extra = rng.choice(["warehouse", "channel", "batch"])
    probes.append(
        _on_spec_contract(
            [
                op("contract", path=[tool, "args", extra], value={"type": str, "required": True}),
                _changed(
                    call_op("validate_args", tool, args, expect=f"missing:{extra}"),
                    f"TOOLS[{tool!r}]['args'][{extra!r}] = {{'type': str, 'required': True}}",
                    "The grader added a required argument to the contract: loop over the contract's names, "
                    "not over sku, region and limit written by hand.",
                ),
            ]
        )
    )
    return probes


add(
    "step2/reads_contract",
    2,
    "validate_args follows the contract table when it changes",
    "Read every rule (names, required, type, allowed, min, max) from TOOLS[name]['args'] when called, with "
    "inclusive bounds (min <= value <= max), a bound checked only when the rule has it, and 'allowed' any "
    "collection; the call line shows what the grader changed.",
    ["2.contract_only", "2.range", "2.allowed"],
    _contract_probes,
    expectations_judge("The grader changed the contract in TOOLS and validate_args did not follow it."),
)


def _optional_probe(rng: random.Random, tool: str, arg: str) -> Probe:
    """The spec's ``arg`` made optional: absent is valid, present is checked as before."""
    args = cases.random_valid_args(rng, inner=True)
    kind = {"sku": "type_wrong_sku", "region": "allowed", "limit": "range_high"}[arg]
    _, bad_args, reason = cases.single_defect(rng, kind, variant=0, inner=True)
    change = f"TOOLS[{tool!r}]['args'][{arg!r}]['required'] = False"
    absent = {k: v for k, v in args.items() if k != arg}
    return _on_spec_contract(
        [
            op("contract", path=[tool, "args", arg, "required"], value=False),
            _changed(
                call_op("validate_args", tool, absent, expect=""),
                change,
                f"With 'required': False, {arg!r} may be left out: give 'missing:' only for an absent argument "
                "whose rule says required True, and skip the other checks of an absent one.",
            ),
            _changed(
                call_op("validate_args", tool, args, expect=""),
                change,
                f"An optional {arg!r} that is present and right is valid.",
            ),
            _changed(
                call_op("validate_args", tool, {**args, arg: bad_args[arg]}, expect=reason),
                change,
                f"An optional {arg!r} that is present is checked like any other argument: here {reason!r}.",
            ),
        ]
    )


def _new_optional_probe(rng: random.Random, tool: str) -> Probe:
    """A new optional str argument: absent, present and right, present and of the wrong type."""
    name = rng.choice(cases.TYPED_ARG_NAMES["str"])
    args = cases.random_valid_args(rng, inner=True)
    change = f"TOOLS[{tool!r}]['args'][{name!r}] = {{'type': str, 'required': False}}"
    return _on_spec_contract(
        [
            op("contract", path=[tool, "args", name], value={"type": str, "required": False}),
            _changed(
                call_op("validate_args", tool, args, expect=""),
                change,
                f"The grader added an optional argument {name!r}: leaving it out is valid.",
            ),
            _changed(
                call_op("validate_args", tool, {**args, name: rng.choice(["rush", "", "eu-west"])}, expect=""),
                change,
                f"An optional {name!r} that is present and a str is valid.",
            ),
            _changed(
                call_op("validate_args", tool, {**args, name: rng.randint(1, 99)}, expect=f"type:{name}"),
                change,
                f"An optional {name!r} that is present is checked: an int where str is asked is 'type:{name}'.",
            ),
        ]
    )


def _optional_probes(rng: random.Random) -> list[Probe]:
    tool = rng.choice(spec.TOOL_NAMES)
    return [_optional_probe(rng, tool, arg) for arg in spec.ARG_NAMES] + [_new_optional_probe(rng, tool)]


add(
    "step2/optional_args",
    1,
    "An argument whose rule says required False may be left out",
    "Give 'missing:<arg>' only when the rule's 'required' is True; an optional argument that is absent is "
    "fine (check nothing more about it), one that is present is checked like any other.",
    ["2.missing", "2.contract_only"],
    _optional_probes,
    expectations_judge("An optional argument (required False) was not handled as the contract says."),
)


def _typed_why(name: str, type_name: str, kind: str, value: object, valid: bool) -> str:
    if type_name == "bool" and valid:
        return (
            f"The grader added {name!r} of type bool: {value!r} is a bool, so it is valid. Refuse a bool only "
            "where the type asked is not bool (LAB_SPEC: never where int is asked)."
        )
    article = "an" if type_name[0] in "aeiou" else "a"
    if valid:
        return (
            f"The grader added {name!r} of type {type_name}: {value!r} ({kind}) is {article} {type_name}, so the "
            "call is valid. Compare with the rule's 'type' (isinstance), whatever type it names; add no "
            "other rule."
        )
    return (
        f"The grader added {name!r} of type {type_name}: {value!r} ({kind}) is not {article} {type_name}, so the "
        f"reason is 'type:{name}'."
    )


def _typed_probes(rng: random.Random) -> list[Probe]:
    """One probe per type a contract may declare: every class of valid and of wrong values for it."""
    tool = rng.choice(spec.TOOL_NAMES)
    probes = []
    for type_name, tp in cases.DECLARED_TYPES.items():
        name = rng.choice(cases.TYPED_ARG_NAMES[type_name])
        valid, invalid = cases.typed_values(rng, type_name)
        base = cases.random_valid_args(rng, inner=True)
        change = f"TOOLS[{tool!r}]['args'][{name!r}] = {{'type': {type_name}, 'required': True}}"
        ops = [op("contract", path=[tool, "args", name], value={"type": tp, "required": True})]
        for values, reason in ((valid, ""), (invalid, f"type:{name}")):
            for kind, value in values:
                args = cases.shuffled(rng, {**base, name: value})
                ops.append(
                    _changed(
                        call_op("validate_args", tool, args, expect=reason),
                        change,
                        _typed_why(name, type_name, kind, value, not reason),
                    )
                )
        probes.append(_on_spec_contract(ops))
    return probes


add(
    "step2/declared_types",
    1,
    "Contracts with str, int, float, bool and list arguments are checked by their type",
    "Check a value against the type its rule names, whatever it is: True/False are valid where bool is "
    'asked (refuse a bool only where int is asked), 1 and 0 are not bools, "2.5" is not a float.',
    ["2.type", "2.bool", "2.contract_only"],
    _typed_probes,
    expectations_judge("A value was judged against the wrong type for an argument the grader added."),
)


def _plain_str_probes(rng: random.Random) -> list[Probe]:
    # A valid call and one of each defect kind: every return path of validate_args, on every run.
    ops = [call_op("validate_args", rng.choice(spec.TOOL_NAMES), cases.random_valid_args(rng, inner=True))]
    ops += [
        call_op("validate_args", *cases.single_defect(rng, kind, variant=0, inner=True)[:2])
        for kind in cases.DEFECT_KINDS
    ]
    return [_on_spec_contract(ops)]


def _plain_str_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    probe = probes[0]
    for operation, rec in zip(probe.params["operations"], records_of(probe, observations[0])):
        if operation["op"] == "call" and type(rec.get("value")) is not str:
            raise Fail(
                'validate_args must return a plain str ("" or one reason).',
                call=operation["label"],
                expected="a str",
                got=outcome(rec),
            )
    return Verdict.ok()


add(
    "step2/returns_plain_str",
    1,
    "validate_args returns a plain str",
    'Return "" or the reason string itself: not None, not a list of reasons, not a str subclass.',
    ["2.plain_str"],
    _plain_str_probes,
    _plain_str_judge,
)
