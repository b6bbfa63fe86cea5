"""Step 5 checks: ``cache_key`` and a cache that holds successes only.

``cache_key`` is judged directly. The cache inside ``call_tool`` is judged with
the grader's own ``validate_args`` and ``validate_result`` in the module (steps
2 and 4, over the spec's contract table: the module's table is step 1's), by
the tool body's runs and by what came back; the exact failure
dict is step 3's. A failing check's call line shows every call of its probe
(an earlier call can fill the cache).
"""

from __future__ import annotations

import random
from typing import Any

from grader import spec
from grader.checks import cases
from grader.checks._common import (
    TOOL_SPIES_TABLE,
    Fail,
    add,
    call_op,
    call_probe,
    double_op,
    every_route,
    expectations_judge,
    judged,
    op,
    outcome,
    own_route,
    records_of,
    value_of,
)
from grader.checks.registry import Observation, Probe, Verdict
from grader.checks.step3 import safe_pair, success
from grader.engine.encode import encode, show, strict_equal
from grader.engine.wire import JsonDict


def _keys_of(probe: Probe, obs: JsonDict) -> list[tuple[JsonDict, JsonDict]]:
    pairs = list(zip(probe.params["operations"], records_of(probe, obs)))
    for operation, rec in pairs:
        key = value_of(rec, operation, "cache_key raised instead of returning a key.")
        if type(key) is not str:
            raise Fail(
                "cache_key must return a plain str.", call=operation["label"], expected="a str", got=outcome(rec)
            )
    return pairs


def _str_probes(rng: random.Random) -> list[Probe]:
    ops = [call_op("cache_key", rng.choice(spec.TOOL_NAMES), cases.random_valid_args(rng)) for _ in range(3)]
    return [call_probe(ops)]


def _str_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    _keys_of(probes[0], observations[0])
    return Verdict.ok()


add(
    "step5/key_is_str",
    1,
    "cache_key returns a str",
    "Build one string from the tool name and the arguments (json.dumps with sort_keys is one way).",
    ["5.key_str"],
    _str_probes,
    _str_judge,
)


def _order_probes(rng: random.Random) -> list[Probe]:
    ops = []
    for _ in range(3):
        tool, args = rng.choice(spec.TOOL_NAMES), cases.random_valid_args(rng)
        if rng.random() < 0.4:
            args["note"] = rng.choice(["a", "b"])
        ops += [call_op("cache_key", tool, args), call_op("cache_key", tool, cases.shuffled(rng, args))]
    return [call_probe(ops)]


def _order_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    pairs = _keys_of(probes[0], observations[0])
    for (st1, rec1), (st2, rec2) in zip(pairs[::2], pairs[1::2]):
        if rec1["value"] != rec2["value"]:
            raise Fail(
                "The same arguments in another order must give the same key.",
                call=f"{st1['label']} == {st2['label']}",
                expected="True",
                got=f"{show(rec1['value'])} != {show(rec2['value'])}",
            )
    return Verdict.ok()


add(
    "step5/key_order_independent",
    2,
    "cache_key ignores the order of the arguments",
    "Two dicts with the same items in another order are the same call: sort the items before you build the key.",
    ["5.key_order"],
    _order_probes,
    _order_judge,
)


# The other steps' functions the cache part of call_tool calls (steps 2 and 4): the grader's own here.
_CACHE_ROUTE = ("validate_args", "validate_result")


def cache_probe(ops: list[Any], **kwargs: Any) -> Probe:
    """A probe of the cache inside ``call_tool``, with the grader's ``validate_args`` and ``validate_result``.

    >>> [operation.get("name") for operation in cache_probe([]).params["operations"]]
    ['validate_args', 'validate_result']
    """
    return call_probe(own_route(*_CACHE_ROUTE, contract="spec") + ops, **kwargs)


def _distinct_probes(rng: random.Random) -> list[Probe]:
    tool, base = rng.choice(spec.TOOL_NAMES), cases.random_valid_args(rng)
    base["limit"] = rng.randint(2, spec.MAX_ROWS)  # 1 and True come below
    other_tool = [t for t in spec.TOOL_NAMES if t != tool][0]
    variants = [(tool, base), (other_tool, base)]
    sku = rng.choice([s for s in spec.SKUS + [spec.UNKNOWN_SKU] if s != base["sku"]])
    region = rng.choice([r for r in spec.REGIONS if r != base["region"]])
    limit = rng.choice([n for n in range(2, spec.MAX_ROWS + 1) if n != base["limit"]])
    variants += [
        (tool, {**base, "sku": sku}),
        (tool, {**base, "region": region}),
        (tool, {**base, "limit": limit}),
        (tool, {**base, "sku": base["region"], "region": base["sku"]}),
    ]
    # Values of equal text and other types: a key built with str() gives 2 and "2" one key.
    variants += [
        (tool, {**base, "limit": str(base["limit"])}),
        (tool, {**base, "limit": float(base["limit"])}),
        (tool, {**base, "limit": 1}),
        (tool, {**base, "limit": True}),
    ]
    return [call_probe([call_op("cache_key", t, a) for t, a in variants])]


def _distinct_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    pairs = _keys_of(probes[0], observations[0])
    seen: dict[str, str] = {}
    for operation, rec in pairs:
        key = rec["value"]
        if key in seen:
            raise Fail(
                "Different calls must get different keys (the tool name, every argument value and its type "
                "count: 2 and '2' are different arguments).",
                call=f"{seen[key]} vs {operation['label']}",
                expected="two different keys",
                got=f"both {key!r}",
            )
        seen[key] = operation["label"]
    return Verdict.ok()


add(
    "step5/key_distinguishes",
    2,
    "cache_key differs for another tool or other argument values",
    "Put the tool name and every argument name with its value into the key, so no two different calls share one; "
    "keep the type (json.dumps or repr do, str() does not: str(2) == str('2')).",
    ["5.key_distinct"],
    _distinct_probes,
    _distinct_judge,
)


def _second_call_probes(rng: random.Random) -> list[Probe]:
    tool = rng.choice(spec.TOOL_NAMES)
    args = safe_pair(rng, tool)
    limit = args["limit"] if tool == "stock_lookup" else None
    _, bad_args, _ = cases.single_defect(rng, rng.choice(["allowed", "range_high", "type_bool"]))
    ops = [
        dict(call_op("call_tool", tool, args), role="first"),
        call_op("call_tool", tool, bad_args),
        call_op(
            "call_tool", "stock_lookup" if tool == "legacy_stock" else "legacy_stock", safe_pair(rng, "legacy_stock")
        ),
        dict(call_op("call_tool", tool, args), role="again"),
        dict(call_op("call_tool", tool, cases.shuffled(rng, args)), role="again"),
    ]
    return [
        cache_probe(
            ops,
            spies=TOOL_SPIES_TABLE,
            tool=tool,
            result=encode(spec.lookup_result(args["sku"], args["region"], limit)),
        )
    ]


def _same_success(got: object, want: JsonDict) -> bool:
    """``got`` has ``want``'s ``ok`` and ``value``: the fields this step owns in a cached success.

    The rest of the dict (``error``'s text, the keys around it) is step 3's
    (``step3/success_result``): a cached call that answers ``'error': None`` like
    every success of the module is a step-3 slip, not a caching one.

    >>> _same_success({"ok": True, "value": 1, "error": None}, {"ok": True, "value": 1, "error": ""})
    True
    >>> _same_success({"ok": True, "value": 2, "error": ""}, {"ok": True, "value": 1, "error": ""})
    False
    """
    return (
        isinstance(got, dict)
        and "$type" not in got
        and strict_equal(got.get("ok"), want["ok"])
        and "value" in got
        and strict_equal(got["value"], want["value"])
    )


def _second_call_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    """The first call succeeded; each repeat ran the body 0 more times and gave the spec's success for the result.

    Counted as differences from the call before, so a body run by another call in between (a refused
    one included: that is step 3's ``blocked_before_call``) is not this check's.
    """
    probe, obs = probes[0], observations[0]
    tool, labels = probe.params["tool"], []
    want = success(probe.params["result"])
    before = (obs.get("start") or {}).get("spy_runs", {}).get(tool)
    for operation, rec in judged(probe, records_of(probe, obs)):
        labels.append(operation["label"])
        runs = rec.get("spy_runs", {}).get(tool)
        ran, before = (runs - before if isinstance(runs, int) and isinstance(before, int) else None), runs
        role, got = operation.get("role"), rec.get("value")
        if role == "first":
            if not (isinstance(got, dict) and got.get("ok") is True):
                raise Fail(
                    "This follows from step3/success_result: a valid call must succeed before it can be "
                    "cached; fix that first.",
                    call=operation["label"],
                    expected="a dict with 'ok': True",
                    got=outcome(rec),
                )
        elif role == "again" and (ran != 0 or not _same_success(got, want)):
            raise Fail(
                "The same successful call, made again, must come from CACHE without running the tool, "
                "with 'ok' True and the cached result as 'value'.",
                call="; then ".join(labels),
                expected=f"0 more runs of {tool}, and 'ok': True, 'value': {show(want['value'])}",
                got=f"{ran} more run(s); {outcome(rec)}",
            )
    return Verdict.ok()


add(
    "step5/second_call_cached",
    2,
    "A repeated successful call runs the tool body 0 more times",
    "Store each success under cache_key(name, args) and look it up before calling; the cache lives as long as "
    "the module (other calls in between do not clear it).",
    ["5.second_call", "5.lives_long"],
    _second_call_probes,
    _second_call_judge,
)


def _failure_probes(rng: random.Random) -> list[Probe]:
    tool = rng.choice(spec.TOOL_NAMES)
    args = cases.random_valid_args(rng, inner=True)
    exc = rng.choice(cases.EXCEPTION_TYPES)
    raising = [call_op("call_tool", tool, args, runs={tool: n}) for n in (1, 2, 3)]
    raising[0]["label"] += f"  # the tool raises {exc}"
    empty, _ = cases.bad_result(rng, rng.choice(["empty", "too_big", "range"]))
    returning = [call_op("call_tool", tool, args, runs={tool: n}) for n in (1, 2)]
    returning[0]["label"] += f"  # the tool returns {empty!r}"
    # On every route: a call_tool that goes around TOOLS (step 3's fault) meets the same failures.
    return [
        cache_probe(raising, spies=every_route({tool: {"mode": "raise", "exc": exc}})),
        cache_probe(returning, spies=every_route({tool: {"mode": "return", "value": encode(empty)}})),
    ]


def _failure_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    """The body ran on every call: nothing else is this step's (a raise let out is step 3's, its words too)."""
    for probe, obs in zip(probes, observations):
        labels = []
        for operation, rec in judged(probe, records_of(probe, obs)):
            labels.append(operation["label"])
            tool, want = next(iter(operation["runs"].items()))
            runs = rec.get("spy_runs", {}).get(tool)
            if runs != want:
                raise Fail(
                    "A failing call must run the tool body every time: failures are never cached.",
                    call="; then ".join(labels),
                    expected=f"{want} run(s) of {tool}",
                    got=f"{runs} run(s); this call {outcome(rec)}",
                )
    return Verdict.ok()


add(
    "step5/failure_not_cached",
    2,
    "A failing call runs the tool body every time",
    "Store into CACHE only after the result passed validate_result; a raise or a bad result is never stored.",
    ["5.failure_every_time", "5.success_only"],
    _failure_probes,
    _failure_judge,
)


def _validation_first_probes(rng: random.Random) -> list[Probe]:
    tool = rng.choice(spec.TOOL_NAMES)
    args = safe_pair(rng, tool)
    args["limit"] = rng.randint(2, spec.MAX_ROWS)
    ops = [
        call_op("call_tool", tool, args, runs={tool: 1}),
        op("contract", path=[tool, "args", "limit", "max"], value=args["limit"] - 1),
        # The grader's validate_args follows the same change (for a call_tool that calls it).
        double_op("validate_args", contract="spec", changes=[[tool, "args", "limit", "max", args["limit"] - 1]]),
        call_op(
            "call_tool",
            tool,
            args,
            label=f"call_tool({tool!r}, {args!r}) again, after TOOLS[{tool!r}]['args']['limit']['max'] "
            f"= {args['limit'] - 1}",
        ),
    ]
    return [cache_probe(ops, spies=TOOL_SPIES_TABLE)]


def _validation_first_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    """The second call did not give the cached success back (how it refuses, and body runs, are step 3's)."""
    probe = probes[0]
    verdict = _judge_runs(probe, observations[0])
    if not verdict.passed:
        return verdict
    (first_op, first), _, (again_op, again) = judged(probe, records_of(probe, observations[0]))
    cached, got = first.get("value"), again.get("value")
    rows = cached.get("value") if isinstance(cached, dict) else None
    if rows is not None and isinstance(got, dict) and strict_equal(got.get("value"), rows):
        raise Fail(
            "The arguments are now out of range, so call_tool must refuse them even though the same "
            "call succeeded before: validate first, then look in CACHE.",
            call=f"{first_op['label']}; then {again_op['label']}",
            expected=f"a refusal (error {spec.ARGS_PREFIX + spec.arg_reason(spec.RANGE, 'limit')!r})",
            got=outcome(again),
        )
    return Verdict.ok()


def _judge_runs(probe: Probe, obs: JsonDict) -> Verdict:
    """The first call ran the tool body once (a success the cache can hold)."""
    return expectations_judge("A valid call must run the tool body once.", whole_probe=True)([probe], [obs])


add(
    "step5/validation_before_cache",
    2,
    "The cache is looked up only after the arguments pass validation",
    "Order inside call_tool: validate_args, then the cache lookup, then the call; a cached success must not "
    "let arguments through that the contract now refuses.",
    ["5.after_validation"],
    _validation_first_probes,
    _validation_first_judge,
)


def _holds_probes(rng: random.Random) -> list[Probe]:
    tool = rng.choice(spec.TOOL_NAMES)
    other = "legacy_stock" if tool == "stock_lookup" else "stock_lookup"
    args = safe_pair(rng, tool)
    empty, _ = cases.bad_result(rng, "empty")
    _, bad_args, _ = cases.single_defect(rng, rng.choice(["allowed", "range_low", "missing"]))
    ops = [
        call_op("call_tool", tool, args),
        call_op("call_tool", other, cases.random_valid_args(rng, inner=True)),
        call_op("call_tool", tool, bad_args),
        op("cache", label="list(CACHE)"),
        call_op("cache_key", tool, args),
    ]
    spies = every_route({tool: TOOL_SPIES_TABLE[tool], other: {"mode": "return", "value": encode(empty)}})
    return [cache_probe(ops, spies=spies)]


def _holds_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    probe = probes[0]
    pairs = judged(probe, records_of(probe, observations[0]))
    (_, cache_rec), (key_op, key_rec) = pairs[3], pairs[4]
    key = value_of(key_rec, key_op, "cache_key raised.")
    calls = "; ".join(operation["label"] for operation, _ in pairs[:3])
    if cache_rec.get("not_dict"):
        raise Fail(
            "CACHE must be a module-level dict.", call="CACHE", expected="a dict", got=show(cache_rec.get("value"))
        )
    keys = cache_rec.get("value")
    if not isinstance(keys, list) or keys != [key]:
        raise Fail(
            "After one success and two failures CACHE must hold exactly the success, under its cache_key.",
            call=calls,
            expected=f"list(CACHE) == [{key!r}]",
            got=f"list(CACHE) == {show(keys)}",
        )
    return Verdict.ok()


add(
    "step5/cache_holds_success_only",
    2,
    "CACHE holds exactly the successes, under cache_key",
    "CACHE is a dict at module level; call_tool stores CACHE[cache_key(name, args)] = value after a success, "
    "and nothing after a failure.",
    ["5.success_only"],
    _holds_probes,
    _holds_judge,
)
