"""Step 4 checks: ``validate_result`` does not trust what came back; ``call_tool`` uses it.

``validate_result`` is judged directly, over every class of bad value on every
run (the seed only picks the values inside a class). ``call_tool``'s use of it
is judged with the grader's own ``validate_args`` and ``cache_key`` in the
module (steps 2 and 5), and by the ``error`` it gives alone: the rest of the
failure dict is step 3's.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from grader import spec
from grader.checks import cases
from grader.checks._common import (
    Fail,
    add,
    call_op,
    call_probe,
    expectations_judge,
    judge_expectations,
    judged,
    op,
    outcome,
    own_route,
    records_of,
)
from grader.checks.registry import Observation, Probe, ProbeFactory, Verdict
from grader.engine.encode import encode, show, strict_equal
from grader.engine.wire import JsonDict


def _bad_row(row: object) -> bool:
    return not (
        isinstance(row, dict) and type(row.get("bin")) is str and type(row.get("count")) is int and row["count"] >= 0
    )


def _nonzero(rng: random.Random, result: JsonDict) -> JsonDict:
    """``result`` with no count of 0: a check not about the empty bin (valid_passes) stays off that boundary."""
    for row in result["rows"]:
        if not _bad_row(row) and row["count"] == 0:
            row["count"] = rng.randint(1, 999)
    return result


def _steady(rng: random.Random, kind: str, value: Any) -> Any:
    """A bad result off the other reasons' boundaries: no count of 0, and (but for too_big) fewer than
    ``MAX_ROWS`` rows, its bad rows kept. A mistake at a boundary then fails its own check on every run,
    not this one on the runs that happen to draw the boundary.
    """
    if not (isinstance(value, dict) and isinstance(value.get("rows"), list)):
        return value
    value = _nonzero(rng, value)
    if kind != "too_big":
        bad = [row for row in value["rows"] if _bad_row(row)]
        good = [row for row in value["rows"] if not _bad_row(row)]
        value["rows"] = good[: max(0, spec.MAX_ROWS - 1 - len(bad))] + bad
    return value


def _valid_probes(rng: random.Random) -> list[Probe]:
    """For each tool: one row with count 0 (an empty bin is a valid row) and exactly max_len rows."""
    ops = []
    for tool in spec.TOOL_NAMES:
        one, full = cases.random_valid_result(rng, 1), cases.random_valid_result(rng, spec.MAX_ROWS)
        one["rows"][0]["count"] = 0
        ops += [call_op("validate_result", tool, one, expect=""), call_op("validate_result", tool, full, expect="")]
    return [call_probe(ops)]


add(
    "step4/valid_passes",
    2,
    "A trustworthy result gives the empty string",
    'A dict with sku and region strings and 1..max_len well-formed rows (count 0 included) is fine: return "".',
    ["4.valid"],
    _valid_probes,
    expectations_judge("A result that follows every rule of 'returns' must give \"\"."),
)


def _not_dict(rng: random.Random, good: JsonDict) -> list[Any]:
    """A value of every kind that is not a dict: None, a number, a str, a list, a tuple."""
    return [
        None,
        rng.randint(-9, 99),
        rng.choice(["rows", good["sku"], ""]),
        rng.choice([good["rows"], list(good.items()), []]),
        (good["sku"], good["region"], good["rows"]),
    ]


def _missing_key(rng: random.Random, good: JsonDict) -> list[Any]:
    """The result without each of its keys in turn."""
    return [{k: v for k, v in good.items() if k != key} for key in ("sku", "region", "rows")]


def _key_type(rng: random.Random, good: JsonDict) -> list[Any]:
    """Each key with a value of another type (rows as a tuple, a str, None, a dict)."""
    return [
        {**good, "sku": rng.choice([1001, None])},
        {**good, "region": rng.choice([["north"], 7])},
        {**good, "rows": tuple(good["rows"])},
        {**good, "rows": rng.choice(["N-01", ""])},
        {**good, "rows": None},
        {**good, "rows": dict(good["rows"][0])},
    ]


def _bad_rows(rng: random.Random, good: JsonDict) -> list[Any]:
    """Rows that are not a dict (None, a number, a str, a list, a tuple) or lack a field or hold a wrong type."""
    row = good["rows"][0]
    bin_, count = row["bin"], row["count"]
    broken = [
        None,
        rng.randint(0, 99),
        f"{bin_}:{count}",
        [bin_, count],
        (bin_, count),
        [],
        {"bin": bin_},
        {"count": count},
        {"bin": bin_, "count": str(count)},
        {"bin": bin_, "count": float(count)},
        {"bin": bin_, "count": rng.choice([True, False])},
        {"bin": bin_, "count": None},
        {"bin": rng.randint(1, 99), "count": count},
        {"bin": None, "count": count},
    ]
    values = [{**good, "rows": [None]}]  # the row alone: a missing "is it a dict?" guard raises here
    for bad in broken:
        rows: list[Any] = [dict(r) for r in good["rows"][: spec.MAX_ROWS - 1]]
        rows.insert(rng.randint(0, len(rows)), bad)
        values.append({**good, "rows": rows})
    return values


def _bad_probes(make: Callable[[random.Random, JsonDict], list[Any]], reason: str) -> ProbeFactory:
    """One op per class of bad value ``make(rng, good)`` gives, each with a new valid result as its base."""

    def probes(rng: random.Random) -> list[Probe]:
        values = make(rng, _nonzero(rng, cases.random_valid_result(rng)))
        ops = [
            call_op("validate_result", spec.TOOL_NAMES[i % 2], value, expect=reason) for i, value in enumerate(values)
        ]
        return [call_probe(ops)]

    return probes


def _draw_probes(kind: str, n: int) -> ProbeFactory:
    """``n`` results of ``cases.bad_result`` kind ``kind`` (variants 0..n-1)."""

    def probes(rng: random.Random) -> list[Probe]:
        ops = []
        for i in range(n):  # both tools, every run; off the boundaries of other reasons
            value, reason = cases.bad_result(rng, kind, variant=i)
            value = _steady(rng, kind, value)
            if kind == "too_big":  # the boundary (max_len + 1) and far above it, on every run
                value["rows"] = cases.random_rows(
                    rng, spec.MAX_ROWS + 1 if i == 0 else rng.randint(2 * spec.MAX_ROWS, 3 * spec.MAX_ROWS)
                )
            ops.append(call_op("validate_result", spec.TOOL_NAMES[i % 2], value, expect=reason))
        return [call_probe(ops)]

    return probes


def _bad_check(
    check_id: str, probes: ProbeFactory, points: int, title: str, hint: str, rules: list[Any], message: str
) -> None:
    judge = _shape_first_judge(message) if check_id.startswith("step4/shape") else expectations_judge(message)
    add(check_id, points, title, hint, rules, probes, judge)


# The reasons validate_result gives after the shape is known to be right (LAB_SPEC step 4's table).
_AFTER_SHAPE = (spec.EMPTY, spec.TOO_BIG, spec.RANGE)


def _shape_first_judge(message: str) -> Any:
    """:func:`expectations_judge` whose miss, when the module gave a reason that needs a well-shaped result
    (``empty``, ``too_big``, ``range``), names the order of the checks rather than the rule alone.

    >>> from grader.engine.encode import encode
    >>> p = call_probe([call_op("validate_result", "stock_lookup", {"sku": "S"}, expect="shape")])
    >>> _shape_first_judge("m")([p], [{"records": [{"value": "empty", "spy_runs": {}}]}]).message[:40]
    "It gave 'empty' for a result whose shape"
    """

    def judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
        verdict = judge_expectations(probes, observations, message)
        reason = next((r for r in _AFTER_SHAPE if verdict.got == show(r)), None)
        if verdict.passed or reason is None:
            return verdict
        return Verdict.fail(
            f"It gave {reason!r} for a result whose shape is wrong: {message} Check the shape first (a dict, "
            f"every key of returns['keys'] present and of its type, every row a well-typed dict), and only on a "
            f"well-shaped result look at whether rows is empty, too long or out of range ({reason!r} needs rows "
            "that are a list of good rows).",
            call=verdict.call,
            expected=verdict.expected,
            got=verdict.got,
        )

    return judge


_bad_check(
    "step4/shape_not_dict",
    _bad_probes(_not_dict, spec.SHAPE),
    1,
    "A result that is not a dict gives shape",
    "Check isinstance(value, dict) first: a list, a tuple, a str or None is a 'shape' failure, not a crash.",
    ["4.shape"],
    "A result that is not a dict must give 'shape'.",
)
_bad_check(
    "step4/shape_missing_key",
    _bad_probes(_missing_key, spec.SHAPE),
    1,
    "A result without sku, region or rows gives shape",
    "Every key of returns['keys'] must be present.",
    ["4.shape"],
    "A result missing one of the keys in returns['keys'] must give 'shape'.",
)
_bad_check(
    "step4/shape_key_type",
    _bad_probes(_key_type, spec.SHAPE),
    1,
    "A top-level value of the wrong type gives shape",
    "Check each key's value against its type in returns['keys'] (rows must be a list, not a tuple or dict).",
    ["4.shape"],
    "A key of the wrong type must give 'shape'.",
)
_bad_check(
    "step4/shape_bad_row",
    _bad_probes(_bad_rows, spec.SHAPE),
    2,
    "A row that is not a dict with well-typed fields gives shape",
    "Each row must be a dict (check that first: None, 3, 'x' or [] is a row too) with every field of "
    "returns['rows']['item'] of its type; like in step 2, a bool is not an int, and \"3\" or 3.0 is not "
    "an int either.",
    ["4.shape"],
    "A row that is not a dict with the item fields of the right types must give 'shape'.",
)
_bad_check(
    "step4/empty",
    _draw_probes("empty", 2),
    1,
    "An empty rows list gives empty",
    "An empty list is not an error to Python, but an answer built on it is invented: return 'empty'.",
    ["4.empty"],
    "A result whose rows list is empty must give 'empty'.",
)
_bad_check(
    "step4/too_big",
    _draw_probes("too_big", 2),
    1,
    "More rows than max_len gives too_big",
    "Compare len(rows) with returns['rows']['max_len'].",
    ["4.too_big"],
    "A result with more rows than max_len must give 'too_big'.",
)
_bad_check(
    "step4/range",
    _draw_probes("range", 2),
    1,
    "A count below its min gives range",
    "Compare each row field that has a 'min' in returns['rows']['item'] with it.",
    ["4.range"],
    "A row whose count is below its 'min' must give 'range'.",
)


def _max_len_probe(rng: random.Random, tool: str) -> Probe:
    max_len = rng.randint(1, 3)
    change = f"TOOLS[{tool!r}]['returns']['rows']['max_len'] = {max_len}"
    return call_probe(
        [
            op("contract", path=[tool, "returns", "rows", "max_len"], value=max_len),
            call_op(
                "validate_result",
                tool,
                _nonzero(rng, cases.random_valid_result(rng, max_len + 1)),
                expect=spec.TOO_BIG,
                label=f"validate_result({tool!r}, <{max_len + 1} rows>)  # with {change}",
            ),
            dict(
                call_op(
                    "validate_result",
                    tool,
                    _nonzero(rng, cases.random_valid_result(rng, max_len)),
                    expect="",
                    label=f"validate_result({tool!r}, <{max_len} rows>)  # with {change}",
                ),
                expect_why=f"len(rows) == max_len is fine: with max_len = {max_len}, {max_len} rows are not too big "
                "(refuse only len(rows) > max_len).",
            ),
        ]
    )


def _contract_probes(rng: random.Random) -> list[Probe]:
    """max_len for both tools; a min and a new key for one (valid rows never hold the boundary count 0)."""
    tool = rng.choice(spec.TOOL_NAMES)
    probes = [_max_len_probe(rng, name) for name in spec.TOOL_NAMES]
    minimum = rng.randint(5, 50)
    low = cases.random_valid_result(rng, 1)
    low["rows"][0]["count"] = minimum - 1
    probes.append(
        call_probe(
            [
                op("contract", path=[tool, "returns", "rows", "item", "count", "min"], value=minimum),
                call_op(
                    "validate_result",
                    tool,
                    low,
                    expect=spec.RANGE,
                    label=f"validate_result({tool!r}, {low!r})  # with "
                    f"TOOLS[{tool!r}]['returns']['rows']['item']['count']['min'] = {minimum}",
                ),
            ]
        )
    )
    key = rng.choice(["warehouse", "currency", "as_of"])
    probes.append(
        call_probe(
            [
                op("contract", path=[tool, "returns", "keys", key], value=str),
                call_op(
                    "validate_result",
                    tool,
                    _nonzero(rng, cases.random_valid_result(rng)),
                    expect=spec.SHAPE,
                    label=f"validate_result({tool!r}, ...)  # with TOOLS[{tool!r}]['returns']['keys'][{key!r}] = str",
                ),
            ]
        )
    )
    return probes


add(
    "step4/reads_contract",
    2,
    "validate_result follows the returns contract when it changes",
    "Read keys, max_len, item fields, types and mins from TOOLS[name]['returns'] when called; do not copy "
    "MAX_ROWS or field names into validate_result.",
    ["4.contract_only"],
    _contract_probes,
    expectations_judge("The grader changed TOOLS[name]['returns'] and validate_result did not follow it."),
)


# The kinds a tool can return from its data (STOCK), and the variants of shape_bad_row
# that are rows a STOCK entry can hold (a field of the wrong type, not a missing one).
_DATA_KINDS = ("shape_bad_row", "empty", "too_big", "range")
# One fixed class per kind here (a count as a str; a list for "not a dict"): which values
# validate_result itself gets wrong is judged by the checks above, every class on every run.
_PREFIX_VARIANT = {"shape_bad_row": 2, "shape_not_dict": 1}


def _prefix_probe(rng: random.Random, kind: str) -> Probe:
    """One call_tool whose tool returns a bad result by every route a call_tool could take.

    The grader's spy in ``TOOLS[name]['fn']`` returns it, and (for the kinds a table
    can hold) ``STOCK`` is set so that the module's own tool function returns the
    very same result: a call_tool that goes around the table (step 3's fault) still
    meets the bad result, so this step-4 check judges only the result validation.
    """
    value, reason = cases.bad_result(rng, kind, _PREFIX_VARIANT.get(kind))
    value = _steady(rng, kind, value)
    if kind == "too_big":  # far above max_len: where the boundary lies is step4/too_big's to judge
        value["rows"] = _nonzero(
            rng, {"rows": cases.random_rows(rng, rng.randint(2 * spec.MAX_ROWS, 3 * spec.MAX_ROWS))}
        )["rows"]
    data = kind in _DATA_KINDS
    # stock_lookup cuts at limit: too many rows can only come from legacy_stock's data.
    tool = "legacy_stock" if kind == "too_big" else rng.choice(spec.TOOL_NAMES)
    if not data:
        args = cases.random_valid_args(rng, inner=True)
    elif kind == "too_big":
        args = {"sku": value["sku"], "region": value["region"], "limit": rng.randint(1, spec.MAX_ROWS)}
    else:  # a limit that keeps every row, so stock_lookup returns them all too (off the bounds where it can)
        low = min(max(2, len(value["rows"])), spec.MAX_ROWS)
        args = {
            "sku": value["sku"],
            "region": value["region"],
            "limit": rng.randint(low, max(low, spec.MAX_ROWS - 1)),
        }
    operation = _refused_op(tool, args, reason)
    ops = own_route("validate_args", "cache_key", contract="spec") + [_template_op(rng, tool, args), operation]
    if data:
        stock = [{"sku": value["sku"], "region": value["region"], **row} for row in value["rows"]]
        ops.insert(-1, op("set", name="STOCK", value=stock))
        operation["label"] += f"  # with STOCK = {stock!r}: the tool returns {value!r}"
    else:
        operation["label"] += f"  # the tool returns {value!r}"
    spies = {t: {"mode": "return", "value": encode(value)} for t in spec.TOOL_NAMES}
    return call_probe(ops, spies=spies, expect_table_only=not data)


def _prefix_probes(rng: random.Random) -> list[Probe]:
    probes = [_prefix_probe(rng, kind) for kind in ("shape_bad_row", "shape_not_dict", "empty", "too_big", "range")]
    rng.shuffle(probes)
    return probes


def _refused_op(tool: str, args: JsonDict, reason: str) -> JsonDict:
    """A ``call_tool`` whose ``error`` must be ``"result:" + reason`` (judged by :func:`_judge_errors`)."""
    return {**call_op("call_tool", tool, args), "expect_error": spec.RESULT_PREFIX + reason}


def _template_op(rng: random.Random, tool: str, args: JsonDict) -> JsonDict:
    """A ``call_tool`` with a wrong region: how this module reports a failure (``args:allowed:region``)."""
    region = rng.choice(cases.BAD_REGION_FAMILIES[3][:3])
    return {
        **call_op("call_tool", tool, {**args, "region": region}),
        "template": spec.ARGS_PREFIX + spec.arg_reason(spec.ALLOWED, "region"),
    }


def _replaced(data: object, old: str, new: str) -> object:
    """The encoded ``data`` with every string equal to ``old`` replaced by ``new``.

    >>> _replaced({"ok": False, "error": "args:x", "more": ["args:x"]}, "args:x", "result:y")
    {'ok': False, 'error': 'result:y', 'more': ['result:y']}
    """
    if isinstance(data, dict):
        return {key: _replaced(value, old, new) for key, value in data.items()}
    if isinstance(data, list):
        return [_replaced(item, old, new) for item in data]
    return new if data == old else data


def _plain(data: object) -> bool:
    """Encoded ``data`` holds only plain values (no opaque object, whose equality says nothing).

    >>> _plain({"ok": False, "rows": [None]}), _plain({"$type": "AlwaysEqual", "$repr": "<x>"})
    (True, False)
    """
    if isinstance(data, dict):
        return "$type" not in data and all(_plain(value) for value in data.values())
    if isinstance(data, list):
        return all(_plain(item) for item in data)
    return True


def _judge_errors(probes: list[Probe], observations: list[Observation], message: str) -> Verdict:
    """Each call with an ``expect_error`` gave the spec's result failure, or failed the way the module reports any failure.

    The reason, and ``value`` None with ``ok`` False (a refused result never comes back:
    LAB_SPEC step 4), are this step's. The rest of a failure dict is step 3's
    (``step3/args_prefix``): when the module reports every failure in one
    wrong shape (its ``template`` call, refused for its arguments, shows it),
    a result refusal in that same shape with ``result:<reason>`` in the place
    of ``args:<reason>`` passes here, so the slip costs step 3 alone.
    """
    for probe, obs in zip(probes, observations):
        template = None
        for operation, rec in judged(probe, records_of(probe, obs)):
            if "template" in operation:
                template = (rec.get("value"), operation["template"])
            want = operation.get("expect_error")
            value = rec.get("value")
            if want is None or _refused(value, want):
                continue
            if (
                template is not None
                and "value" in rec
                and _plain(value)
                and strict_equal(value, _replaced(*template, want))
            ):
                continue
            if isinstance(value, dict) and strict_equal(value.get("error"), want):
                raise Fail(
                    "A refused result must not come back: the failure holds 'ok': False and 'value': None, "
                    "whatever the tool returned (an answer built on it would trust what validate_result refused).",
                    call=operation["label"],
                    expected=f"{{'ok': False, 'value': None, 'error': {show(want)}}}",
                    got=outcome(rec),
                )
            raise Fail(
                message, call=operation["label"], expected=f"a dict with 'error': {show(want)}", got=outcome(rec)
            )
    return Verdict.ok()


def _refused(value: object, want: str) -> bool:
    """``value`` is the spec's result failure: ``ok`` False, ``value`` None, ``error`` ``want``.

    >>> _refused({"ok": False, "value": None, "error": "result:empty"}, "result:empty")
    True
    >>> _refused({"ok": False, "value": {"rows": []}, "error": "result:empty"}, "result:empty")
    False
    """
    return (
        isinstance(value, dict)
        and "$type" not in value
        and strict_equal(value.get("error"), want)
        and value.get("ok") is False
        and "value" in value
        and value["value"] is None
    )


def _prefix_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    kept = []
    for probe, obs in zip(probes, observations):
        tool = probe.params["operations"][-1]["args"][0]
        reached = isinstance(obs, dict) and (obs.get("spy_seen") or {}).get(tool)
        # Only the grader's table spy can return a non-dict: a call_tool that goes around
        # TOOLS never meets it, and that is step 3's check (calls_through_table), not this one.
        if probe.params.get("expect_table_only") and isinstance(obs, dict) and "records" in obs and not reached:
            continue
        kept.append((probe, obs))
    return _judge_errors(
        [p for p, _ in kept],
        [o for _, o in kept],
        "call_tool must refuse a bad result with error 'result:<reason>' (the reason validate_result gives).",
    )


add(
    "step4/call_tool_result_prefix",
    2,
    "call_tool refuses a bad result with error 'result:<reason>'",
    "After a tool returns, run validate_result on the value; a reason gives {'ok': False, 'value': None, "
    "'error': 'result:' + reason}.",
    ["4.call_tool"],
    _prefix_probes,
    _prefix_judge,
)


def _legacy_probes(rng: random.Random) -> list[Probe]:
    limits = rng.sample(range(1, spec.MAX_ROWS + 1), 2)
    sku, region = spec.BIG_PAIR
    ops = [
        _refused_op("legacy_stock", cases.shuffled(rng, {"sku": sku, "region": region, "limit": n}), spec.TOO_BIG)
        for n in limits
    ]
    template = _template_op(rng, "legacy_stock", {"sku": sku, "region": region, "limit": limits[0]})
    return [call_probe(own_route("validate_args", "cache_key", contract="spec") + [template] + ops)]


add(
    "step4/legacy_too_big",
    1,
    "legacy_stock for SKU-3300 in north gives result:too_big",
    "legacy_stock ignores limit and SKU-3300 has 7 bins in north: call_tool must catch that with validate_result.",
    ["4.legacy_too_big"],
    _legacy_probes,
    lambda probes, observations: _judge_errors(
        probes,
        observations,
        "legacy_stock returns 7 rows here whatever the limit; call_tool must give error 'result:too_big'.",
    ),
)
