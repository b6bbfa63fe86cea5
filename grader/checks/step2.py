"""Step 2 checks: ``validate_args`` gives exactly one reason, from the contract table only."""
from __future__ import annotations

import random

from grader.checks import cases
from grader import spec
from grader.checks._common import (TOOL_SPIES_ORIGINAL, Fail, add, call_probe, check_calls_unchanged,
                                   expectations_judge, op, outcome, records_of, call_op)
from grader.checks.registry import Probe, Verdict


def _reason_probes(kind: "str | tuple", n: int):
    """Probes: ``n`` calls of validate_args with one defect each, of ``kind`` (or of each kind in turn)."""
    kinds = (kind,) if isinstance(kind, str) else kind

    def probes(rng: random.Random) -> list[Probe]:
        ops = []
        for i in range(n):
            tool, args, reason = cases.single_defect(rng, kinds[i % len(kinds)], variant=i if len(kinds) == 1 else None)
            ops.append(call_op("validate_args", tool, args, expect=reason))
        return [call_probe(ops)]

    return probes


def _reason_check(check_id: str, kind: str, n: int, points: int, title: str, hint: str, rules: list,
                  message: str) -> None:
    add(check_id, points, title, hint, rules, _reason_probes(kind, n), expectations_judge(message))


def _valid_probes(rng: random.Random) -> list[Probe]:
    ops = []
    for limit in (1, spec.MAX_ROWS, rng.randint(1, spec.MAX_ROWS), rng.randint(1, spec.MAX_ROWS)):
        args = cases.random_valid_args(rng)
        args["limit"] = limit
        ops.append(call_op("validate_args", rng.choice(spec.TOOL_NAMES), cases.shuffled(rng, args), expect=""))
    return [call_probe(ops)]


add("step2/valid_passes", 2, "A valid call gives the empty string",
    "When every argument is present, listed, of the right type, allowed and in range, return \"\" "
    "(the bounds min and max are inclusive; the order of the arguments does not matter).",
    ["2.valid"], _valid_probes, expectations_judge("A valid call must give \"\"."))

_reason_check("step2/unknown_tool", spec.UNKNOWN_TOOL, 2, 1, "A tool name that is not in TOOLS gives unknown_tool",
              "Check the name against the keys of TOOLS before anything else about the call.",
              ["2.unknown_tool"], "A name that is not a key of TOOLS must give 'unknown_tool'.")
_reason_check("step2/missing", "missing", 3, 2, "A required argument that is absent gives missing:<arg>",
              "Walk the contract's arguments: a required one that is not in args is 'missing:' + its name.",
              ["2.missing"], "A required argument is absent: the reason is 'missing:<arg>'.")
_reason_check("step2/extra", "extra", 2, 2, "An argument the contract does not list gives extra:<arg>",
              "Walk the arguments you were given: one that the contract does not list is 'extra:' + its name.",
              ["2.extra"], "An argument that is not in the contract must give 'extra:<arg>'.")
_reason_check("step2/type_wrong", ("type_wrong_sku", "type_wrong_limit", "type_none"), 3, 2, "A value of the wrong type gives type:<arg>",
              "Compare each value with the rule's 'type' (isinstance) before looking at allowed values or bounds; "
              "None and lists are wrong types too.",
              ["2.type"], "A value of the wrong type must give 'type:<arg>'.")
_reason_check("step2/type_bool_limit", "type_bool", 2, 2, "True/False for limit gives type:limit",
              "bool is a subclass of int in Python, so isinstance(True, int) is True: refuse a bool "
              "where the contract asks for int.",
              ["2.type", "2.bool"], "A bool where an int is asked must give 'type:limit'.")
_reason_check("step2/type_numeric_string", "type_numeric_string", 2, 1, "A numeric string for limit gives type:limit",
              "\"3\" is a str, not an int: do not convert it, refuse it.",
              ["2.type"], "A numeric string where an int is asked must give 'type:limit'.")
_reason_check("step2/type_float", "type_float", 2, 1, "A float for limit gives type:limit",
              "2.0 is a float, not an int, even though it equals 2.",
              ["2.type"], "A float where an int is asked must give 'type:limit'.")
_reason_check("step2/allowed_region", "allowed", 4, 2, "A region outside REGIONS gives allowed:region",
              "Compare the value with the rule's 'allowed' collection exactly: no lower-casing, no trimming, "
              "no guessing.",
              ["2.allowed"], "A region that is not in 'allowed' must give 'allowed:region'.")
_reason_check("step2/range_low", "range_low", 2, 1, "A limit below min gives range:limit",
              "Compare with the rule's 'min' (inclusive): 0 and negative limits are out of range.",
              ["2.range"], "A limit below 'min' must give 'range:limit'.")
_reason_check("step2/range_high", "range_high", 2, 1, "A limit above max gives range:limit",
              "Compare with the rule's 'max' (inclusive): MAX_ROWS is fine, MAX_ROWS + 1 is not.",
              ["2.range"], "A limit above 'max' must give 'range:limit'.")


def _no_body_probes(rng: random.Random) -> list[Probe]:
    ops = [call_op("validate_args", *cases.single_defect(rng, kind)[:2]) for kind in cases.DEFECT_KINDS]
    args = cases.random_valid_args(rng)
    ops.append(call_op("validate_args", rng.choice(spec.TOOL_NAMES), args))
    rng.shuffle(ops)
    ops[-1]["runs"] = {"stock_lookup": 0, "legacy_stock": 0}
    return [call_probe(ops, spies=TOOL_SPIES_ORIGINAL)]


def _no_body_judge(probes: list, observations: list) -> Verdict:
    probe, obs = probes[0], observations[0]
    records = records_of(probe, obs)
    start = obs["start"] if isinstance(obs.get("start"), dict) else {}
    for operation, rec in zip(probe.params["operations"], records):
        runs = rec.get("spy_runs", {})
        if any(runs.get(tool) != 0 for tool in spec.TOOL_NAMES):
            raise Fail("validate_args ran a tool body: it must only read the contract table.",
                       call=operation["label"], expected="0 runs of each tool", got=f"runs {runs}")
        # A body reached around the spies still moves CALLS.
        check_calls_unchanged(start.get("calls"), rec.get("calls"), operation["label"],
                              "validate_args ran a tool body (CALLS changed): it must only read the contract table.")
    return Verdict.ok()


add("step2/never_runs_body", 2, "validate_args never runs a tool body",
    "Validation reads TOOLS[name]['args'] only; it never calls TOOLS[name]['fn'] or the tool functions.",
    ["2.no_body"], _no_body_probes, _no_body_judge)


def _changed(operation: dict, change: str, why: str = "") -> dict:
    """``operation`` with the grader's change of the contract on its call line (``# with ...``).

    ``why`` (judge-only: it starts with ``expect``) replaces the check's message when this call misses.
    """
    operation["label"] += f"  # with {change}"
    if why:
        operation["expect_why"] = why
    return operation


def _contract_probes(rng: random.Random) -> list[Probe]:
    tool = rng.choice(spec.TOOL_NAMES)
    args = cases.random_valid_args(rng)
    probes = []
    new_max = rng.randint(1, spec.MAX_ROWS - 1)
    change = f"TOOLS[{tool!r}]['args']['limit']['max'] = {new_max}"
    probes.append(call_probe([
        op("contract", path=[tool, "args", "limit", "max"], value=new_max),
        _changed(call_op("validate_args", tool, {**args, "limit": new_max + 1}, expect="range:limit"), change,
                 f"The grader lowered 'max' to {new_max}: read the bound from the contract when called, "
                 "do not copy MAX_ROWS into validate_args."),
        _changed(call_op("validate_args", tool, {**args, "limit": new_max}, expect=""), change,
                 f"limit == max is inside the range (bounds are inclusive): with 'max' = {new_max}, limit "
                 f"{new_max} is valid. Refuse only a value above max (> not >=)."),
    ]))
    new_min = rng.randint(2, spec.MAX_ROWS)
    probes.append(call_probe([
        op("contract", path=[tool, "args", "limit", "min"], value=new_min),
        _changed(call_op("validate_args", tool, {**args, "limit": new_min - 1}, expect="range:limit"),
                 f"TOOLS[{tool!r}]['args']['limit']['min'] = {new_min}",
                 f"The grader raised 'min' to {new_min}: read the bound from the contract when called, "
                 "do not write 1 into validate_args."),
    ]))
    region = rng.choice(["mars", "arctic", "moon"])
    probes.append(call_probe([
        op("contract", path=[tool, "args", "region", "allowed"], value=spec.REGIONS + [region]),
        _changed(call_op("validate_args", tool, {**args, "region": region}, expect=""),
                 f"{region!r} added to TOOLS[{tool!r}]['args']['region']['allowed']",
                 "The grader added a region to 'allowed': compare with the rule's 'allowed' when called, "
                 "not with REGIONS."),
    ]))
    extra = rng.choice(["warehouse", "channel", "batch"])
    probes.append(call_probe([
        op("contract", path=[tool, "args", extra], value={"type": str, "required": True}),
        _changed(call_op("validate_args", tool, args, expect=f"missing:{extra}"),
                 f"TOOLS[{tool!r}]['args'][{extra!r}] = {{'type': str, 'required': True}}",
                 "The grader added a required argument to the contract: loop over the contract's names, "
                 "not over sku, region and limit written by hand."),
    ]))
    return probes


add("step2/reads_contract", 2, "validate_args follows the contract table when it changes",
    "Read every rule (names, required, type, allowed, min, max) from TOOLS[name]['args'] when called, with "
    "inclusive bounds (min <= value <= max); the call line shows what the grader changed.",
    ["2.contract_only"], _contract_probes,
    expectations_judge("The grader changed the contract in TOOLS and validate_args did not follow it."))


def _plain_str_probes(rng: random.Random) -> list[Probe]:
    tool, args, _ = cases.single_defect(rng, rng.choice(cases.DEFECT_KINDS))
    return [call_probe([call_op("validate_args", rng.choice(spec.TOOL_NAMES), cases.random_valid_args(rng)),
                        call_op("validate_args", tool, args)])]


def _plain_str_judge(probes: list, observations: list) -> Verdict:
    probe = probes[0]
    for operation, rec in zip(probe.params["operations"], records_of(probe, observations[0])):
        if type(rec.get("value")) is not str:
            raise Fail("validate_args must return a plain str (\"\" or one reason).", call=operation["label"],
                       expected="a str", got=outcome(rec))
    return Verdict.ok()


add("step2/returns_plain_str", 1, "validate_args returns a plain str",
    "Return \"\" or the reason string itself: not None, not a list of reasons, not a str subclass.",
    ["2.plain_str"], _plain_str_probes, _plain_str_judge)
