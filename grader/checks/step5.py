"""Step 5 checks: ``cache_key`` and a cache that holds successes only."""
from __future__ import annotations

import random

from grader.checks import cases
from grader import spec
from grader.checks._common import (TOOL_SPIES_TABLE, Fail, add, call_probe, every_route, expectations_judge, op,
                                   outcome, records_of, call_op, value_of)
from grader.checks.step3 import safe_pair, success
from grader.engine.encode import encode, show
from grader.checks.registry import Probe, Verdict


def _keys_of(probe: Probe, obs: dict) -> list[tuple[dict, dict]]:
    pairs = list(zip(probe.params["operations"], records_of(probe, obs)))
    for operation, rec in pairs:
        key = value_of(rec, operation, "cache_key raised instead of returning a key.")
        if type(key) is not str:
            raise Fail("cache_key must return a plain str.", call=operation["label"], expected="a str",
                       got=outcome(rec))
    return pairs


def _str_probes(rng: random.Random) -> list[Probe]:
    ops = [call_op("cache_key", rng.choice(spec.TOOL_NAMES), cases.random_valid_args(rng)) for _ in range(3)]
    return [call_probe(ops)]


def _str_judge(probes: list, observations: list) -> Verdict:
    _keys_of(probes[0], observations[0])
    return Verdict.ok()


add("step5/key_is_str", 1, "cache_key returns a str",
    "Build one string from the tool name and the arguments (json.dumps with sort_keys is one way).",
    ["5.key_str"], _str_probes, _str_judge)


def _order_probes(rng: random.Random) -> list[Probe]:
    ops = []
    for _ in range(3):
        tool, args = rng.choice(spec.TOOL_NAMES), cases.random_valid_args(rng)
        if rng.random() < 0.4:
            args["note"] = rng.choice(["a", "b"])
        ops += [call_op("cache_key", tool, args), call_op("cache_key", tool, cases.shuffled(rng, args))]
    return [call_probe(ops)]


def _order_judge(probes: list, observations: list) -> Verdict:
    pairs = _keys_of(probes[0], observations[0])
    for (st1, rec1), (st2, rec2) in zip(pairs[::2], pairs[1::2]):
        if rec1["value"] != rec2["value"]:
            raise Fail("The same arguments in another order must give the same key.",
                       call=f"{st1['label']} == {st2['label']}", expected="True",
                       got=f"{show(rec1['value'])} != {show(rec2['value'])}")
    return Verdict.ok()


add("step5/key_order_independent", 2, "cache_key ignores the order of the arguments",
    "Two dicts with the same items in another order are the same call: sort the items before you build the key.",
    ["5.key_order"], _order_probes, _order_judge)


def _distinct_probes(rng: random.Random) -> list[Probe]:
    tool, base = rng.choice(spec.TOOL_NAMES), cases.random_valid_args(rng)
    other_tool = [t for t in spec.TOOL_NAMES if t != tool][0]
    variants = [(tool, base), (other_tool, base)]
    sku = rng.choice([s for s in spec.SKUS + [spec.UNKNOWN_SKU] if s != base["sku"]])
    region = rng.choice([r for r in spec.REGIONS if r != base["region"]])
    limit = rng.choice([n for n in range(1, spec.MAX_ROWS + 1) if n != base["limit"]])
    variants += [(tool, {**base, "sku": sku}), (tool, {**base, "region": region}), (tool, {**base, "limit": limit}),
                 (tool, {**base, "sku": base["region"], "region": base["sku"]})]
    return [call_probe([call_op("cache_key", t, a) for t, a in variants])]


def _distinct_judge(probes: list, observations: list) -> Verdict:
    pairs = _keys_of(probes[0], observations[0])
    seen: dict[str, str] = {}
    for operation, rec in pairs:
        key = rec["value"]
        if key in seen:
            raise Fail("Different calls must get different keys (the tool name and every argument value count).",
                       call=f"{seen[key]} vs {operation['label']}", expected="two different keys", got=f"both {key!r}")
        seen[key] = operation["label"]
    return Verdict.ok()


add("step5/key_distinguishes", 2, "cache_key differs for another tool or other argument values",
    "Put the tool name and every argument name with its value into the key, so no two different calls share one.",
    ["5.key_distinct"], _distinct_probes, _distinct_judge)


def _second_call_probes(rng: random.Random) -> list[Probe]:
    tool = rng.choice(spec.TOOL_NAMES)
    args = safe_pair(rng, tool)
    limit = args["limit"] if tool == "stock_lookup" else None
    result = success(spec.lookup_result(args["sku"], args["region"], limit))
    _, bad_args, _ = cases.single_defect(rng, rng.choice(["allowed", "range_high", "type_bool"]))
    ops = [call_op("call_tool", tool, args, expect=result, runs={tool: 1}),
           call_op("call_tool", tool, bad_args),
           call_op("call_tool", "stock_lookup" if tool == "legacy_stock" else "legacy_stock",
                   safe_pair(rng, "legacy_stock")),
           call_op("call_tool", tool, args, expect=result, runs={tool: 1}),
           call_op("call_tool", tool, cases.shuffled(rng, args), expect=result, runs={tool: 1})]
    return [call_probe(ops, spies=TOOL_SPIES_TABLE)]


add("step5/second_call_cached", 2, "A repeated successful call runs the tool body 0 more times",
    "Store each success under cache_key(name, args) and look it up before calling; the cache lives as long as "
    "the module (other calls in between do not clear it).",
    ["5.second_call", "5.lives_long"], _second_call_probes,
    expectations_judge("The same successful call, made again, must come from CACHE without running the tool."))


def _failure_probes(rng: random.Random) -> list[Probe]:
    tool = rng.choice(spec.TOOL_NAMES)
    args = cases.random_valid_args(rng)
    exc = rng.choice(cases.EXCEPTION_TYPES)
    raising = [call_op("call_tool", tool, args, runs={tool: n}) for n in (1, 2, 3)]
    raising[0]["label"] += f"  # the tool raises {exc}"
    empty, _ = cases.bad_result(rng, rng.choice(["empty", "too_big", "range"]))
    returning = [call_op("call_tool", tool, args, runs={tool: n}) for n in (1, 2)]
    returning[0]["label"] += f"  # the tool returns {empty!r}"
    # On every route: a call_tool that goes around TOOLS (step 3's fault) meets the same failures.
    return [call_probe(raising, spies=every_route({tool: {"mode": "raise", "exc": exc}})),
            call_probe(returning, spies=every_route({tool: {"mode": "return", "value": encode(empty)}}))]


def _failure_judge(probes: list, observations: list) -> Verdict:
    verdict = expectations_judge("A failing call must run the tool body every time: failures are never cached.")(
        probes, observations)
    if not verdict.passed:
        return verdict
    for probe, obs in zip(probes, observations):
        for operation, rec in zip(probe.params["operations"], records_of(probe, obs)):
            value = value_of(rec, operation, "call_tool must not raise.")
            if not isinstance(value, dict) or value.get("ok") is not False:
                raise Fail("This call fails every time, so call_tool must report ok False every time.",
                           call=operation["label"], expected="ok False", got=outcome(rec))
    return Verdict.ok()


add("step5/failure_not_cached", 2, "A failing call runs the tool body every time",
    "Store into CACHE only after the result passed validate_result; a raise or a bad result is never stored.",
    ["5.failure_every_time", "5.success_only"], _failure_probes, _failure_judge)


def _validation_first_probes(rng: random.Random) -> list[Probe]:
    tool = rng.choice(spec.TOOL_NAMES)
    args = safe_pair(rng, tool)
    args["limit"] = rng.randint(2, spec.MAX_ROWS)
    refused = {"ok": False, "value": None, "error": spec.ARGS_PREFIX + spec.arg_reason(spec.RANGE, "limit")}
    ops = [call_op("call_tool", tool, args, runs={tool: 1}),
           op("contract", path=[tool, "args", "limit", "max"], value=args["limit"] - 1),
           call_op("call_tool", tool, args, expect=refused,
                   runs={tool: 1},
                   label=f"call_tool({tool!r}, {args!r}) again, after TOOLS[{tool!r}]['args']['limit']['max'] "
                         f"= {args['limit'] - 1}")]
    return [call_probe(ops, spies=TOOL_SPIES_TABLE)]


add("step5/validation_before_cache", 2, "The cache is looked up only after the arguments pass validation",
    "Order inside call_tool: validate_args, then the cache lookup, then the call; a cached success must not "
    "let arguments through that the contract now refuses.",
    ["5.after_validation"], _validation_first_probes,
    expectations_judge("The arguments are now out of range, so call_tool must refuse them even though the same "
                       "call succeeded before."))


def _holds_probes(rng: random.Random) -> list[Probe]:
    tool = rng.choice(spec.TOOL_NAMES)
    other = "legacy_stock" if tool == "stock_lookup" else "stock_lookup"
    args = safe_pair(rng, tool)
    empty, _ = cases.bad_result(rng, "empty")
    _, bad_args, _ = cases.single_defect(rng, rng.choice(["allowed", "range_low", "missing"]))
    ops = [call_op("call_tool", tool, args), call_op("call_tool", other, cases.random_valid_args(rng)),
           call_op("call_tool", tool, bad_args), op("cache", label="list(CACHE)"), call_op("cache_key", tool, args)]
    spies = every_route({tool: TOOL_SPIES_TABLE[tool], other: {"mode": "return", "value": encode(empty)}})
    return [call_probe(ops, spies=spies)]


def _holds_judge(probes: list, observations: list) -> Verdict:
    probe = probes[0]
    records = records_of(probe, observations[0])
    cache_rec, key_rec = records[3], records[4]
    key = value_of(key_rec, probe.params["operations"][4], "cache_key raised.")
    calls = "; ".join(operation["label"] for operation in probe.params["operations"][:3])
    if cache_rec.get("not_dict"):
        raise Fail("CACHE must be a module-level dict.", call="CACHE", expected="a dict",
                   got=show(cache_rec.get("value")))
    keys = cache_rec.get("value")
    if not isinstance(keys, list) or keys != [key]:
        raise Fail("After one success and two failures CACHE must hold exactly the success, under its cache_key.",
                   call=calls, expected=f"list(CACHE) == [{key!r}]", got=f"list(CACHE) == {show(keys)}")
    return Verdict.ok()


add("step5/cache_holds_success_only", 2, "CACHE holds exactly the successes, under cache_key",
    "CACHE is a dict at module level; call_tool stores CACHE[cache_key(name, args)] = value after a success, "
    "and nothing after a failure.",
    ["5.success_only"], _holds_probes, _holds_judge)
