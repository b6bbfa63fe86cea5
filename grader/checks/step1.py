"""Step 1 checks: the data, the two tools and the contract table."""

from __future__ import annotations

import random
from typing import Any

from grader import spec
from grader.checks import cases
from grader.checks._common import (
    Fail,
    add,
    call_op,
    call_probe,
    calls_delta,
    counts_of,
    expectations_judge,
    get_field,
    judge_expectations,
    op,
    outcome,
    records_of,
)
from grader.checks.registry import Observation, Probe, Verdict
from grader.engine.encode import ExplodingArgument, encode, show, strict_equal
from grader.engine.wire import JsonDict

# --------------------------------------------------------------------------- names


def _names_probes(rng: random.Random) -> list[Probe]:
    # A fresh import: CALLS must be all zeros before any tool ran.
    ops = [
        dict(op("attr", name=n), expect=encode(v), label=n)
        for n, v in [("REGIONS", spec.REGIONS), ("MAX_ROWS", spec.MAX_ROWS)]
    ]
    # CALLS is judged by its counts (below): a Counter holding the zeros is as right as a dict.
    ops.append(dict(op("attr", name="CALLS"), label="CALLS"))
    return [call_probe(ops, fresh=True)]


def _names_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    verdict = judge_expectations(
        probes, observations, "This module-level name does not have the value the spec gives (right after import)."
    )
    if not verdict.passed:
        return verdict
    rec = records_of(probes[0], observations[0])[-1]
    if counts_of(rec.get("value")) != spec.CALLS_START:
        raise Fail(
            "CALLS maps each tool name to 0 right after import (a dict of int counts).",
            call="CALLS",
            expected=show(encode(spec.CALLS_START)),
            got=outcome(rec),
        )
    return Verdict.ok()


add(
    "step1/names",
    2,
    "REGIONS, MAX_ROWS and CALLS have the spec's values",
    "Copy the three names from the step 1 notes exactly: REGIONS is a list in the given order, "
    "MAX_ROWS an int, CALLS a dict with a zero for each tool name.",
    ["1.names"],
    _names_probes,
    _names_judge,
)


# --------------------------------------------------------------------------- STOCK


def _stock_probes(rng: random.Random) -> list[Probe]:
    operation = op("attr", name="STOCK")
    operation.update(label="STOCK", expect=encode(spec.STOCK))
    return [call_probe([operation], fresh=True)]


def _stock_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    rec = records_of(probes[0], observations[0])[0]
    got = rec.get("value")
    want = probes[0].params["operations"][0]["expect"]
    if strict_equal(got, want):
        return Verdict.ok()
    if not isinstance(got, list):
        raise Fail(
            "STOCK should be a list of row dicts.", call="STOCK", expected="a list of 19 dicts", got=outcome(rec)
        )
    if len(got) != len(want):
        raise Fail(
            f"STOCK should hold {len(want)} rows; it holds {len(got)}.",
            call="len(STOCK)",
            expected=str(len(want)),
            got=str(len(got)),
        )
    for i, (row, expected) in enumerate(zip(got, want)):
        if not strict_equal(row, expected):
            raise Fail(
                f"Row {i} of STOCK differs from the table (same order, keys sku/region/bin/count, count an int).",
                call=f"STOCK[{i}]",
                expected=show(expected),
                got=show(row),
            )
    return Verdict.ok()


add(
    "step1/stock_table",
    2,
    "STOCK holds exactly the 19 rows of the table, in order",
    "Compare STOCK row by row with the step 1 table: 19 dicts with keys sku, region, bin, count; "
    "count is an int (0 included).",
    ["1.stock"],
    _stock_probes,
    _stock_judge,
)


# --------------------------------------------------------------------------- stock_lookup


def _every_pair() -> list[tuple[str, str]]:
    """Every (sku, region) of the table's skus and one sku without rows, each region: the tools' whole domain."""
    return [(sku, region) for sku in spec.SKUS + [spec.UNKNOWN_SKU] for region in spec.REGIONS]


def _lookup_probes(rng: random.Random) -> list[Probe]:
    # Every pair on every run with a limit that shows all its rows (the seed picks how far above),
    # then the cuts: the pair with more rows than MAX_ROWS at every limit, a two-row pair at 1.
    # A row left out, added, changed or cut wrongly then shows on every seed.
    picks = [
        (s, r, rng.randint(max(len(spec.rows_for(s, r)), 1), spec.MAX_ROWS))
        for s, r in _every_pair()
        if len(spec.rows_for(s, r)) <= spec.MAX_ROWS
    ]
    picks += [(*spec.BIG_PAIR, limit) for limit in range(1, spec.MAX_ROWS + 1)] + [("SKU-1001", "north", 1)]
    rng.shuffle(picks)
    ops = [call_op("stock_lookup", s, r, n, expect=spec.lookup_result(s, r, n)) for s, r, n in picks]
    return [call_probe(ops)]


add(
    "step1/lookup_rows",
    3,
    "stock_lookup returns the matching rows in table order, at most limit",
    "Return a dict with the sku and region you were given and 'rows': the {'bin', 'count'} of every "
    "matching STOCK row, in table order, cut to the first `limit`.",
    ["1.lookup"],
    _lookup_probes,
    expectations_judge("stock_lookup did not return the rows of the table for this sku and region."),
)


def _legacy_probes(rng: random.Random) -> list[Probe]:
    picks = [(s, r, rng.randint(1, spec.MAX_ROWS)) for s, r in _every_pair()]
    picks += [(*spec.BIG_PAIR, 1), ("SKU-1001", "north", 1)]
    rng.shuffle(picks)
    ops = [call_op("legacy_stock", s, r, n, expect=spec.lookup_result(s, r)) for s, r, n in picks]
    return [call_probe(ops)]


add(
    "step1/legacy_ignores_limit",
    2,
    "legacy_stock returns every matching row, whatever the limit",
    "legacy_stock has the same shape as stock_lookup but returns all matching rows: it never cuts to `limit`.",
    ["1.legacy"],
    _legacy_probes,
    expectations_judge("legacy_stock should return all matching rows whatever `limit` says."),
)


def _zero_probes(rng: random.Random) -> list[Probe]:
    limit = rng.randint(1, spec.MAX_ROWS)
    ops = [
        call_op("stock_lookup", "SKU-2040", "west", limit, expect=spec.lookup_result("SKU-2040", "west", limit)),
        call_op("legacy_stock", "SKU-2040", "west", limit, expect=spec.lookup_result("SKU-2040", "west")),
    ]
    return [call_probe(ops)]


add(
    "step1/zero_count_is_stock",
    1,
    "A bin with count 0 is still a row",
    "An empty bin (count 0) is a real row of the table: do not filter rows by their count.",
    ["1.zero"],
    _zero_probes,
    expectations_judge("The row with count 0 (SKU-2040 in west) must be returned like any other row."),
)


# --------------------------------------------------------------------------- CALLS


def _own_counter_probes(rng: random.Random) -> list[Probe]:
    order = rng.choice(
        [["stock_lookup", "legacy_stock", "stock_lookup"], ["legacy_stock", "stock_lookup", "legacy_stock"]]
    )
    ops = []
    for tool in order:
        args = cases.random_valid_args(rng)
        ops.append(call_op(tool, args["sku"], args["region"], args["limit"]))
    return [call_probe(ops)]


def _judge_counter_ops(probes: list[Probe], observations: list[Observation], what: str) -> Verdict:
    probe = probes[0]
    records = records_of(probe, observations[0])
    before = observations[0]["start"]["calls"]
    for operation, rec in zip(probe.params["operations"], records):
        after = rec.get("calls")
        delta = calls_delta(before, after)
        want = {name: int(name == operation["fn"]) for name in spec.TOOL_NAMES}
        if delta is None:
            raise Fail(
                "CALLS must hold an int count per tool name (tool name -> times its body ran).",
                call=operation["label"],
                expected="CALLS maps each tool name to an int",
                got=f"CALLS went from {show(before)} to {show(after)}",
            )
        if any(delta.get(k) != v for k, v in want.items()):
            raise Fail(
                f"CALLS did not go up by exactly one for {operation['fn']} (and stay put for the other tool) {what}.",
                call=operation["label"],
                expected=f"CALLS change {want}",
                got=f"CALLS went from {show(before)} to {show(after)}; the call {outcome(rec)}",
            )
        before = after
    return Verdict.ok()


add(
    "step1/calls_count_own_tool",
    2,
    "Each tool adds 1 to its own entry of CALLS",
    "Each tool body increments CALLS under its own name, by one, on every run.",
    ["1.calls_own"],
    _own_counter_probes,
    lambda p, o: _judge_counter_ops(p, o, "during this call"),
)


def _first_line_probes(rng: random.Random) -> list[Probe]:
    # Each tool with the exploding value in each place it looks at first (sku, then region).
    ops = []
    for tool in rng.sample(spec.TOOL_NAMES, 2):
        for place in (0, 1):
            args = [rng.choice(["SKU-1001", "SKU-3300"]), rng.choice(["north", "central"]), rng.randint(1, 5)]
            args[place] = ExplodingArgument()
            ops.append(call_op(tool, *args))
    return [call_probe(ops)]


add(
    "step1/calls_first_line",
    2,
    "CALLS is counted on the first line, even when the tool then fails",
    "Put the CALLS increment on the very first line of each tool, before it looks at its arguments: "
    "a run that fails half-way still ran.",
    ["1.calls_first"],
    _first_line_probes,
    lambda p, o: _judge_counter_ops(p, o, "although the call then failed on an argument that breaks when compared"),
)


# --------------------------------------------------------------------------- TOOLS


def _tools_probes(rng: random.Random) -> list[Probe]:
    return [Probe("tools_table", {}, "TOOLS")]


def _tool_entries(obs: JsonDict) -> JsonDict:
    if not isinstance(obs, dict) or "raised" in obs:
        raise Fail("Reading TOOLS failed.", call="TOOLS", got=show(obs))
    if obs.get("not_dict"):
        raise Fail(
            "TOOLS should be a dict: tool name -> entry.", call="TOOLS", expected="a dict", got=show(obs.get("value"))
        )
    names = obs.get("names")
    if (
        not isinstance(names, list)
        or sorted(map(str, names)) != sorted(spec.TOOL_NAMES)
        or not all(type(n) is str for n in names)
    ):
        raise Fail(
            "TOOLS should have exactly one entry per tool.",
            call="list(TOOLS)",
            expected=show(sorted(spec.TOOL_NAMES)),
            got=show(names),
        )
    entries: JsonDict = obs.get("entries", {})
    for name in spec.TOOL_NAMES:
        if entries.get(name, {}).get("not_dict"):
            raise Fail(
                f"TOOLS[{name!r}] should be a dict.", call=f"TOOLS[{name!r}]", got=show(entries[name].get("value"))
            )
    return entries


def _tools_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    entries = _tool_entries(observations[0])
    for name in spec.TOOL_NAMES:
        entry = entries[name]
        keys = entry.get("keys")
        if not isinstance(keys, list) or sorted(map(str, keys)) != ["args", "fn", "returns"]:
            raise Fail(
                "Each TOOLS entry holds exactly three things: fn, args, returns.",
                call=f"list(TOOLS[{name!r}])",
                expected="['args', 'fn', 'returns']",
                got=show(keys),
            )
        if entry.get("fn_is_module_function") is not True:
            raise Fail(
                f"TOOLS[{name!r}]['fn'] should be the function object {name} of your module "
                "(not a name, not a copy, not a lambda).",
                call=f"TOOLS[{name!r}]['fn'] is {name}",
                expected="True",
                got="False",
            )
    return Verdict.ok()


add(
    "step1/tools_entries",
    2,
    "TOOLS has one entry per tool: exactly fn, args, returns",
    "TOOLS maps each tool name to a dict with the keys fn (the function itself), args and returns.",
    ["1.tools"],
    _tools_probes,
    _tools_judge,
)


def _cls(name: str) -> JsonDict:
    return {"$class": f"builtins.{name}"}


def _as_elements(value: object) -> list[Any] | None:
    """Elements of an encoded list/tuple/set/frozenset, else None."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict) and ("$tuple" in value or "$set" in value):
        return value.get("$tuple", value.get("$set"))
    return None


def _rule(args: JsonDict, tool: str, arg: str) -> JsonDict:
    rule = get_field(args, arg, f"TOOLS[{tool!r}]['args']", f"The args contract of {tool}")
    if not isinstance(rule, dict) or any(str(k).startswith("$") for k in rule):
        raise Fail(f"The rule of {arg!r} should be a dict.", call=f"TOOLS[{tool!r}]['args'][{arg!r}]", got=show(rule))
    return rule


def _expect_field(rule: JsonDict, key: str, want: object, call: str, what: str) -> None:
    if key not in rule or not strict_equal(rule[key], want):
        raise Fail(
            what, call=f"{call}[{key!r}]", expected=show(want), got=show(rule[key]) if key in rule else "no such key"
        )


def _args_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    entries = _tool_entries(observations[0])
    for tool in spec.TOOL_NAMES:
        args = entries[tool].get("args")
        base = f"TOOLS[{tool!r}]['args']"
        if not isinstance(args, dict) or sorted(args) != sorted(spec.ARG_NAMES):
            raise Fail(
                "The args contract names exactly sku, region and limit.",
                call=base,
                expected="keys limit, region, sku",
                got=show(args),
            )
        for arg, tp in (("sku", "str"), ("region", "str"), ("limit", "int")):
            rule = _rule(args, tool, arg)
            call = f"{base}[{arg!r}]"
            _expect_field(rule, "type", _cls(tp), call, f"{arg} should have the type object {tp}.")
            _expect_field(rule, "required", True, call, f"{arg} is required (the bool True).")
            for extra in {"sku": ("allowed", "min", "max"), "region": ("min", "max"), "limit": ("allowed",)}[arg]:
                if extra in rule:
                    raise Fail(f"{arg} has no {extra!r} in the spec.", call=call, got=show(rule))
        region = args["region"]
        elements = _as_elements(region.get("allowed"))
        if (
            elements is None
            or sorted(map(show, elements)) != sorted(map(show, spec.REGIONS))
            or not all(type(e) is str for e in elements)
        ):
            raise Fail(
                "region's 'allowed' should be a collection of exactly the REGIONS.",
                call=f"{base}['region']['allowed']",
                expected=show(spec.REGIONS),
                got=show(region.get("allowed")),
            )
        limit = args["limit"]
        _expect_field(limit, "min", 1, f"{base}['limit']", "limit has 'min' 1 (an int).")
        _expect_field(limit, "max", spec.MAX_ROWS, f"{base}['limit']", "limit has 'max' MAX_ROWS (5).")
    return Verdict.ok()


add(
    "step1/args_contract",
    3,
    "The args contract: types, required, allowed regions, limit 1..MAX_ROWS",
    "Each argument rule is a dict with 'type' (a type object such as str), 'required' (a bool), and "
    "where needed 'allowed' (REGIONS) or 'min'/'max'.",
    ["1.args"],
    _tools_probes,
    _args_judge,
)


def _returns_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    entries = _tool_entries(observations[0])
    for tool in spec.TOOL_NAMES:
        returns = entries[tool].get("returns")
        base = f"TOOLS[{tool!r}]['returns']"
        keys = get_field(returns, "keys", base, "The returns contract")
        want_keys = {"sku": _cls("str"), "region": _cls("str"), "rows": _cls("list")}
        if not strict_equal(keys, want_keys):
            raise Fail(
                "'keys' maps each top-level key of the result to its type.",
                call=f"{base}['keys']",
                expected="{'sku': str, 'region': str, 'rows': list}",
                got=show(keys),
            )
        rows = get_field(returns, "rows", base, "The returns contract")
        _expect_field(rows, "max_len", spec.MAX_ROWS, f"{base}['rows']", "rows has 'max_len' MAX_ROWS.")
        item = get_field(rows, "item", f"{base}['rows']", "The rows rule")
        want_item = {"bin": {"type": _cls("str")}, "count": {"type": _cls("int"), "min": 0}}
        if not strict_equal(item, want_item):
            raise Fail(
                "'item' maps each row field to a rule: bin a str, count an int with min 0.",
                call=f"{base}['rows']['item']",
                expected="{'bin': {'type': str}, 'count': {'type': int, 'min': 0}}",
                got=show(item),
            )
    return Verdict.ok()


add(
    "step1/returns_contract",
    2,
    "The returns contract: key types, max_len and row fields",
    "returns = {'keys': {...types of sku, region, rows}, 'rows': {'max_len': MAX_ROWS, 'item': {field: "
    "{'type': ..., 'min': ...}}}} as written in the step 1 notes.",
    ["1.returns"],
    _tools_probes,
    _returns_judge,
)
