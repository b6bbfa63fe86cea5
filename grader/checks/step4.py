"""Step 4 checks: ``validate_result`` does not trust what came back; ``call_tool`` uses it."""
from __future__ import annotations

import random

from grader.checks import cases
from grader import spec
from grader.checks._common import add, call_probe, expectations_judge, judge_expectations, op, call_op
from grader.checks.step3 import failure
from grader.engine.encode import encode
from grader.checks.registry import Probe, Verdict


def _valid_probes(rng: random.Random) -> list[Probe]:
    results = [cases.random_valid_result(rng, 1), cases.random_valid_result(rng, spec.MAX_ROWS),
               cases.random_valid_result(rng)]
    results[0]["rows"][0]["count"] = 0  # an empty bin is still a valid row
    ops = [call_op("validate_result", rng.choice(spec.TOOL_NAMES), r, expect="") for r in results]
    return [call_probe(ops)]


add("step4/valid_passes", 2, "A trustworthy result gives the empty string",
    "A dict with sku and region strings and 1..max_len well-formed rows (count 0 included) is fine: return \"\".",
    ["4.valid"], _valid_probes, expectations_judge("A result that follows every rule of 'returns' must give \"\"."))


def _bad_probes(kinds: tuple, n: int):
    def probes(rng: random.Random) -> list[Probe]:
        ops = []
        for i in range(n):
            value, reason = cases.bad_result(rng, kinds[i % len(kinds)], variant=i)
            ops.append(call_op("validate_result", rng.choice(spec.TOOL_NAMES), value, expect=reason))
        return [call_probe(ops)]

    return probes


def _bad_check(check_id: str, kinds: tuple, n: int, points: int, title: str, hint: str, rules: list,
               message: str) -> None:
    add(check_id, points, title, hint, rules, _bad_probes(kinds, n), expectations_judge(message))


_bad_check("step4/shape_not_dict", ("shape_not_dict",), 3, 1, "A result that is not a dict gives shape",
           "Check isinstance(value, dict) first: a list, a tuple, a str or None is a 'shape' failure, not a crash.",
           ["4.shape"], "A result that is not a dict must give 'shape'.")
_bad_check("step4/shape_missing_key", ("shape_missing_key",), 2, 1, "A result without sku, region or rows gives shape",
           "Every key of returns['keys'] must be present.",
           ["4.shape"], "A result missing one of the keys in returns['keys'] must give 'shape'.")
_bad_check("step4/shape_key_type", ("shape_key_type",), 3, 1, "A top-level value of the wrong type gives shape",
           "Check each key's value against its type in returns['keys'] (rows must be a list, not a tuple or dict).",
           ["4.shape"], "A key of the wrong type must give 'shape'.")
_bad_check("step4/shape_bad_row", ("shape_bad_row",), 6, 2, "A row that is not a dict with well-typed fields gives shape",
           "Each row must be a dict with every field of returns['rows']['item'] of its type; like in step 2, "
           "a bool is not an int, and \"3\" or 3.0 is not an int either.",
           ["4.shape"], "A row that is not a dict with the item fields of the right types must give 'shape'.")
_bad_check("step4/empty", ("empty",), 2, 1, "An empty rows list gives empty",
           "An empty list is not an error to Python, but an answer built on it is invented: return 'empty'.",
           ["4.empty"], "A result whose rows list is empty must give 'empty'.")
_bad_check("step4/too_big", ("too_big",), 2, 1, "More rows than max_len gives too_big",
           "Compare len(rows) with returns['rows']['max_len'].",
           ["4.too_big"], "A result with more rows than max_len must give 'too_big'.")
_bad_check("step4/range", ("range",), 2, 1, "A count below its min gives range",
           "Compare each row field that has a 'min' in returns['rows']['item'] with it.",
           ["4.range"], "A row whose count is below its 'min' must give 'range'.")


def _contract_probes(rng: random.Random) -> list[Probe]:
    tool = rng.choice(spec.TOOL_NAMES)
    probes = []
    max_len = rng.randint(1, 3)
    change = f"TOOLS[{tool!r}]['returns']['rows']['max_len'] = {max_len}"
    probes.append(call_probe([
        op("contract", path=[tool, "returns", "rows", "max_len"], value=max_len),
        call_op("validate_result", tool, cases.random_valid_result(rng, max_len + 1), expect=spec.TOO_BIG,
                label=f"validate_result({tool!r}, <{max_len + 1} rows>)  # with {change}"),
        dict(call_op("validate_result", tool, cases.random_valid_result(rng, max_len), expect="",
                     label=f"validate_result({tool!r}, <{max_len} rows>)  # with {change}"),
             expect_why=f"len(rows) == max_len is fine: with max_len = {max_len}, {max_len} rows are not too big "
                        "(refuse only len(rows) > max_len)."),
    ]))
    minimum = rng.randint(5, 50)
    low = cases.random_valid_result(rng, 1)
    low["rows"][0]["count"] = minimum - 1
    probes.append(call_probe([
        op("contract", path=[tool, "returns", "rows", "item", "count", "min"], value=minimum),
        call_op("validate_result", tool, low, expect=spec.RANGE,
                label=f"validate_result({tool!r}, {low!r})  # with "
                      f"TOOLS[{tool!r}]['returns']['rows']['item']['count']['min'] = {minimum}"),
    ]))
    key = rng.choice(["warehouse", "currency", "as_of"])
    probes.append(call_probe([
        op("contract", path=[tool, "returns", "keys", key], value=str),
        call_op("validate_result", tool, cases.random_valid_result(rng), expect=spec.SHAPE,
                label=f"validate_result({tool!r}, ...)  # with TOOLS[{tool!r}]['returns']['keys'][{key!r}] = str"),
    ]))
    return probes


add("step4/reads_contract", 2, "validate_result follows the returns contract when it changes",
    "Read keys, max_len, item fields, types and mins from TOOLS[name]['returns'] when called; do not copy "
    "MAX_ROWS or field names into validate_result.",
    ["4.contract_only"], _contract_probes,
    expectations_judge("The grader changed TOOLS[name]['returns'] and validate_result did not follow it."))


# The kinds a tool can return from its data (STOCK), and the variants of shape_bad_row
# that are rows a STOCK entry can hold (a field of the wrong type, not a missing one).
_DATA_KINDS = {"shape_bad_row": (2, 3, 4, 5), "empty": (None,), "too_big": (None,), "range": (None,)}


def _prefix_probe(rng: random.Random, kind: str) -> Probe:
    """One call_tool whose tool returns a bad result by every route a call_tool could take.

    The grader's spy in ``TOOLS[name]['fn']`` returns it, and (for the kinds a table
    can hold) ``STOCK`` is set so that the module's own tool function returns the
    very same result: a call_tool that goes around the table (step 3's fault) still
    meets the bad result, so this step-4 check judges only the result validation.
    """
    variant = rng.choice(_DATA_KINDS.get(kind, (None,)))
    value, reason = cases.bad_result(rng, kind, variant)
    data = kind in _DATA_KINDS
    # stock_lookup cuts at limit: too many rows can only come from legacy_stock's data.
    tool = "legacy_stock" if kind == "too_big" else rng.choice(spec.TOOL_NAMES)
    if not data:
        args = cases.random_valid_args(rng)
    elif kind == "too_big":
        args = {"sku": value["sku"], "region": value["region"], "limit": rng.randint(1, spec.MAX_ROWS)}
    else:  # a limit that keeps every row, so stock_lookup returns them all too
        args = {"sku": value["sku"], "region": value["region"],
                "limit": rng.randint(max(1, len(value["rows"])), spec.MAX_ROWS)}
    operation = call_op("call_tool", tool, args, expect=failure(spec.RESULT_PREFIX + reason))
    ops = [operation]
    if data:
        stock = [{"sku": value["sku"], "region": value["region"], **row} for row in value["rows"]]
        ops.insert(0, op("set", name="STOCK", value=stock))
        operation["label"] += f"  # with STOCK = {stock!r}: the tool returns {value!r}"
    else:
        operation["label"] += f"  # the tool returns {value!r}"
    spies = {t: {"mode": "return", "value": encode(value)} for t in spec.TOOL_NAMES}
    return call_probe(ops, spies=spies, expect_table_only=not data)


def _prefix_probes(rng: random.Random) -> list[Probe]:
    probes = [_prefix_probe(rng, kind) for kind in ("shape_bad_row", "shape_not_dict", "empty", "too_big", "range")]
    rng.shuffle(probes)
    return probes


def _prefix_judge(probes: list, observations: list) -> Verdict:
    judged = []
    for probe, obs in zip(probes, observations):
        tool = probe.params["operations"][-1]["args"][0]
        reached = isinstance(obs, dict) and (obs.get("spy_seen") or {}).get(tool)
        # Only the grader's table spy can return a non-dict: a call_tool that goes around
        # TOOLS never meets it, and that is step 3's check (calls_through_table), not this one.
        if probe.params.get("expect_table_only") and isinstance(obs, dict) and "records" in obs and not reached:
            continue
        judged.append((probe, obs))
    return judge_expectations([p for p, _ in judged], [o for _, o in judged],
                              "call_tool must refuse a bad result as {'ok': False, 'value': None, "
                              "'error': 'result:<reason>'}.")


add("step4/call_tool_result_prefix", 2, "call_tool refuses a bad result with error 'result:<reason>'",
    "After a tool returns, run validate_result on the value; a reason gives {'ok': False, 'value': None, "
    "'error': 'result:' + reason}.",
    ["4.call_tool"], _prefix_probes, _prefix_judge)


def _legacy_probes(rng: random.Random) -> list[Probe]:
    limits = rng.sample(range(1, spec.MAX_ROWS + 1), 2)
    sku, region = spec.BIG_PAIR
    ops = [call_op("call_tool", "legacy_stock", cases.shuffled(rng, {"sku": sku, "region": region, "limit": n}),
                   expect=failure(spec.RESULT_PREFIX + spec.TOO_BIG)) for n in limits]
    return [call_probe(ops)]


add("step4/legacy_too_big", 1, "legacy_stock for SKU-3300 in north gives result:too_big",
    "legacy_stock ignores limit and SKU-3300 has 7 bins in north: call_tool must catch that with validate_result.",
    ["4.legacy_too_big"], _legacy_probes,
    expectations_judge("legacy_stock returns 7 rows here whatever the limit; call_tool must give 'result:too_big'."))
