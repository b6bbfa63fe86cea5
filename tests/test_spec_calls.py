"""LAB_SPEC steps 1-5, asserted against the reference ``solutions/tools.py``.

Every rule of the data, the two tools, ``TOOLS``, ``validate_args``,
``call_tool``, ``validate_result`` and the cache is checked here, with
random values drawn from ``random.Random(seed)`` over several seeds. The
expected values come from the spec (the table below is LAB_SPEC's table),
never from the solution itself.

Each test gets a fresh import of the solution, so ``CALLS`` and ``CACHE``
start clean.
"""

from __future__ import annotations

import random
import string

import pytest

# The `sol` fixture (tests/conftest.py) imports $AGTOOL_SPEC_MODULE, else the reference solution.
SEEDS = range(6)
TOOL_NAMES = ("stock_lookup", "legacy_stock")

# LAB_SPEC step 1, row for row: sku, region, bin, count.
SPEC_TABLE = """
SKU-1001 north N-01 12
SKU-1001 north N-02 4
SKU-1001 south S-01 7
SKU-1001 central C-01 30
SKU-2040 east E-01 3
SKU-2040 west W-01 0
SKU-2040 central C-02 15
SKU-3300 north N-11 2
SKU-3300 north N-12 5
SKU-3300 north N-13 1
SKU-3300 north N-14 9
SKU-3300 north N-15 4
SKU-3300 north N-16 6
SKU-3300 north N-17 3
SKU-3300 central C-03 11
SKU-4411 south S-02 22
SKU-4411 west W-02 5
SKU-4411 central C-04 9
SKU-5000 west W-03 2
"""
SPEC_STOCK = [
    {"sku": sku, "region": region, "bin": bin_, "count": int(count)}
    for sku, region, bin_, count in (line.split() for line in SPEC_TABLE.strip().splitlines())
]
SPEC_REGIONS = ["north", "south", "east", "west", "central"]
SPEC_MAX_ROWS = 5
SKUS = sorted({row["sku"] for row in SPEC_STOCK})


class Spy:
    """Stands in for ``TOOLS[name]["fn"]``: counts runs, records kwargs, returns or raises."""

    def __init__(self, result=None, raises: BaseException | None = None):
        self.result, self.raises, self.calls = result, raises, []

    def __call__(self, **kwargs):
        self.calls.append(kwargs)
        if self.raises is not None:
            raise self.raises
        return self.result


def spec_rows(sku: str, region: str) -> list[dict]:
    return [{"bin": r["bin"], "count": r["count"]} for r in SPEC_STOCK if r["sku"] == sku and r["region"] == region]


def random_word(rng: random.Random, n: int = 6) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(n))


def random_sku(rng: random.Random) -> str:
    """A sku from the table, or one with no rows at all."""
    return rng.choice(SKUS + ["SKU-9999", f"SKU-{rng.randint(6000, 8999)}"])


def random_valid_args(rng: random.Random) -> dict:
    args = {
        "sku": random_sku(rng),
        "region": rng.choice(SPEC_REGIONS),
        "limit": rng.randint(1, SPEC_MAX_ROWS),
    }
    return shuffled(rng, args)


def shuffled(rng: random.Random, args: dict) -> dict:
    """The same dict with its keys in a random order."""
    items = list(args.items())
    rng.shuffle(items)
    return dict(items)


def random_good_result(rng: random.Random) -> dict:
    n = rng.randint(1, SPEC_MAX_ROWS)
    rows = [{"bin": f"X-{i:02d}", "count": rng.randint(0, 50)} for i in range(n)]
    return {"sku": random_sku(rng), "region": rng.choice(SPEC_REGIONS), "rows": rows}


def one_defect_cases(rng: random.Random) -> list[tuple[str, dict, str]]:
    """(tool, args, expected reason) with exactly one defect each, values drawn from rng."""
    tool = rng.choice(TOOL_NAMES)
    base = {"sku": rng.choice(SKUS), "region": rng.choice(SPEC_REGIONS), "limit": rng.randint(1, SPEC_MAX_ROWS)}

    def with_(**changes):
        return shuffled(rng, {**base, **changes})

    def without(arg):
        return shuffled(rng, {k: v for k, v in base.items() if k != arg})

    bad_region = rng.choice(["mars", "North", " north", "", "centre", random_word(rng)])
    cases = [
        (f"tool_{random_word(rng)}", dict(base), "unknown_tool"),
        (tool, with_(**{random_word(rng): rng.randint(0, 9)}), None),  # extra, filled below
        (tool, with_(limit=rng.choice([True, False])), "type:limit"),
        (tool, with_(limit=str(rng.randint(1, SPEC_MAX_ROWS))), "type:limit"),
        (tool, with_(limit=float(rng.randint(1, SPEC_MAX_ROWS))), "type:limit"),
        (tool, with_(limit=None), "type:limit"),
        (tool, with_(sku=rng.randint(1000, 9999)), "type:sku"),
        (tool, with_(sku=[base["sku"]]), "type:sku"),
        (tool, with_(region=rng.randint(0, 4)), "type:region"),
        (tool, with_(region=bad_region), "allowed:region"),
        (tool, with_(limit=rng.randint(-50, 0)), "range:limit"),
        (tool, with_(limit=rng.randint(SPEC_MAX_ROWS + 1, 500)), "range:limit"),
    ]
    extra_tool, extra_args, _ = cases[1]
    extra_name = next(k for k in extra_args if k not in base)
    cases[1] = (extra_tool, extra_args, f"extra:{extra_name}")
    cases += [(tool, without(arg), f"missing:{arg}") for arg in base]
    return cases


# ---------------------------------------------------------------------------
# Step 1: data, tools and the contract table
# ---------------------------------------------------------------------------


def test_step1_constants_are_exactly_the_spec(sol):
    assert sol.REGIONS == SPEC_REGIONS
    assert sol.FALLBACK_REGION == "central"
    assert sol.MAX_ROWS == SPEC_MAX_ROWS
    assert sol.CALLS == {"stock_lookup": 0, "legacy_stock": 0}


def test_step1_stock_is_the_spec_table_row_for_row(sol):
    assert sol.STOCK == SPEC_STOCK  # same rows, same order, exactly the four fields each


def test_step1_table_facts_the_grader_relies_on():
    # Guards the copy of the table in this file, which every other test trusts.
    assert len(SPEC_STOCK) == 19
    assert len(spec_rows("SKU-3300", "north")) == 7 > SPEC_MAX_ROWS
    assert spec_rows("SKU-5000", "central") == []
    assert not any(r["sku"] == "SKU-9999" for r in SPEC_STOCK)
    assert {"bin": "W-01", "count": 0} in spec_rows("SKU-2040", "west")


@pytest.mark.parametrize("seed", SEEDS)
def test_step1_stock_lookup_returns_matching_rows_in_order_at_most_limit(sol, seed):
    rng = random.Random(seed)
    for _ in range(25):
        sku, region = random_sku(rng), rng.choice(SPEC_REGIONS)
        limit = rng.randint(1, 8)
        before = dict(sol.CALLS)
        got = sol.stock_lookup(sku, region, limit)
        assert got == {"sku": sku, "region": region, "rows": spec_rows(sku, region)[:limit]}
        assert sol.CALLS == {**before, "stock_lookup": before["stock_lookup"] + 1}


def test_step1_stock_lookup_caps_the_seven_north_bins(sol):
    for limit in range(1, SPEC_MAX_ROWS + 1):
        assert len(sol.stock_lookup("SKU-3300", "north", limit)["rows"]) == limit


@pytest.mark.parametrize("seed", SEEDS)
def test_step1_legacy_stock_ignores_limit(sol, seed):
    rng = random.Random(seed)
    for _ in range(25):
        sku, region = random_sku(rng), rng.choice(SPEC_REGIONS)
        limit = rng.choice([rng.randint(-5, 0), rng.randint(1, 3), rng.randint(6, 100)])
        before = dict(sol.CALLS)
        got = sol.legacy_stock(sku, region, limit)
        assert got == {"sku": sku, "region": region, "rows": spec_rows(sku, region)}
        assert sol.CALLS == {**before, "legacy_stock": before["legacy_stock"] + 1}


class Poison:
    """An argument that breaks any comparison or hashing the tool attempts."""

    def __eq__(self, other):
        raise RuntimeError("compared a poisoned argument")

    __ne__ = __eq__

    def __hash__(self):
        raise RuntimeError("hashed a poisoned argument")

    def __index__(self):
        raise RuntimeError("used a poisoned argument as an index")


@pytest.mark.parametrize("tool", TOOL_NAMES)
@pytest.mark.parametrize("poisoned", ["sku", "region"])
def test_step1_tool_counts_on_its_first_line_even_when_it_then_fails(sol, tool, poisoned):
    args = {"sku": "SKU-1001", "region": "north", "limit": 2, poisoned: Poison()}
    with pytest.raises((RuntimeError, TypeError)):  # Poison's own error, or a comparison it cannot make
        getattr(sol, tool)(**args)
    assert sol.CALLS[tool] == 1
    assert sum(sol.CALLS.values()) == 1


def test_step1_stock_lookup_counts_before_a_bad_limit_fails(sol):
    with pytest.raises((RuntimeError, TypeError)):  # Poison's own error, or a comparison it cannot make
        sol.stock_lookup("SKU-1001", "north", Poison())
    assert sol.CALLS == {"stock_lookup": 1, "legacy_stock": 0}


def test_step1_tools_table_structure(sol):
    assert set(sol.TOOLS) == set(TOOL_NAMES)
    expected_args = {
        "sku": {"type": str, "required": True},
        "region": {"type": str, "required": True, "allowed": SPEC_REGIONS},
        "limit": {"type": int, "required": True, "min": 1, "max": SPEC_MAX_ROWS},
    }
    expected_returns = {
        "keys": {"sku": str, "region": str, "rows": list},
        "rows": {"max_len": SPEC_MAX_ROWS, "item": {"bin": {"type": str}, "count": {"type": int, "min": 0}}},
    }
    for name in TOOL_NAMES:
        entry = sol.TOOLS[name]
        assert set(entry) == {"fn", "args", "returns"}
        assert entry["fn"] is getattr(sol, name)
        args = {arg: dict(rule) for arg, rule in entry["args"].items()}
        # `allowed` may be any collection; compare its members.
        args["region"]["allowed"] = sorted(args["region"]["allowed"])
        assert args == {**expected_args, "region": {**expected_args["region"], "allowed": sorted(SPEC_REGIONS)}}
        assert entry["returns"] == expected_returns


# ---------------------------------------------------------------------------
# Step 2: validate_args
# ---------------------------------------------------------------------------


@pytest.fixture
def spies(sol):
    """Replace both tool bodies in TOOLS with spies; returns {name: spy}."""
    installed = {}
    for name in TOOL_NAMES:
        installed[name] = Spy(result={"sku": "SKU-1001", "region": "north", "rows": [{"bin": "Q", "count": 1}]})
        sol.TOOLS[name]["fn"] = installed[name]
    return installed


@pytest.mark.parametrize("seed", SEEDS)
def test_step2_valid_calls_give_empty_string(sol, spies, seed):
    rng = random.Random(seed)
    for _ in range(30):
        assert sol.validate_args(rng.choice(TOOL_NAMES), random_valid_args(rng)) == ""
    for limit in (1, SPEC_MAX_ROWS):  # both bounds are inclusive
        assert sol.validate_args("stock_lookup", {"sku": "SKU-1001", "region": "west", "limit": limit}) == ""


@pytest.mark.parametrize("seed", SEEDS)
def test_step2_each_single_defect_gives_its_reason(sol, spies, seed):
    rng = random.Random(seed)
    for tool, args, reason in one_defect_cases(rng):
        assert sol.validate_args(tool, args) == reason, (tool, args)


def test_step2_bool_is_never_an_int(sol):
    for value in (True, False):
        args = {"sku": "SKU-1001", "region": "north", "limit": value}
        assert sol.validate_args("stock_lookup", args) == "type:limit"
        assert sol.validate_args("legacy_stock", args) == "type:limit"


@pytest.mark.parametrize("seed", SEEDS)
def test_step2_reasons_are_plain_str(sol, seed):
    rng = random.Random(seed)
    for tool, args, _ in one_defect_cases(rng) + [("stock_lookup", random_valid_args(rng), "")]:
        assert type(sol.validate_args(tool, args)) is str


@pytest.mark.parametrize("seed", SEEDS)
def test_step2_reads_only_the_contract_table(sol, spies, seed):
    # Change the contract in TOOLS (new objects, so nothing else is touched) and
    # see the verdicts follow it.
    rng = random.Random(seed)
    tool = rng.choice(TOOL_NAMES)
    args = sol.TOOLS[tool]["args"] = {name: dict(rule) for name, rule in sol.TOOLS[tool]["args"].items()}
    new_max = rng.randint(1, SPEC_MAX_ROWS - 1)
    args["limit"]["max"] = new_max
    new_region = random_word(rng)
    args["region"]["allowed"] = [*SPEC_REGIONS, new_region]
    base = {"sku": "SKU-1001", "region": "north"}
    assert sol.validate_args(tool, {**base, "limit": new_max}) == ""
    assert sol.validate_args(tool, {**base, "limit": new_max + 1}) == "range:limit"
    assert sol.validate_args(tool, {**base, "region": new_region, "limit": 1}) == ""
    args["color"] = {"type": str, "required": False}
    assert sol.validate_args(tool, {**base, "limit": 1, "color": "red"}) == ""
    sol.TOOLS["brand_new"] = {"fn": spies[tool], "args": {"q": {"type": int, "required": True}}, "returns": {}}
    assert sol.validate_args("brand_new", {"q": 3}) == ""
    assert sol.validate_args("brand_new", {"q": "3"}) == "type:q"


@pytest.mark.parametrize("seed", SEEDS)
def test_step2_validate_args_never_runs_a_tool_body(sol, spies, seed):
    rng = random.Random(seed)
    cases = one_defect_cases(rng) + [(rng.choice(TOOL_NAMES), random_valid_args(rng), "") for _ in range(10)]
    for tool, args, _ in cases:
        sol.validate_args(tool, args)
    assert all(spy.calls == [] for spy in spies.values())
    assert sol.CALLS == {"stock_lookup": 0, "legacy_stock": 0}


# ---------------------------------------------------------------------------
# Step 3: call_tool
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_step3_success_returns_the_spy_value_exactly(sol, spies, seed):
    rng = random.Random(seed)
    for _ in range(10):
        tool, args = rng.choice(TOOL_NAMES), random_valid_args(rng)
        sol.CACHE.clear()
        value = random_good_result(rng)
        spies[tool].result = value
        before = len(spies[tool].calls)
        assert sol.call_tool(tool, args) == {"ok": True, "value": value, "error": ""}
        # The spy in TOOLS is what ran, once, with the arguments as keywords.
        assert spies[tool].calls[before:] == [args]
    assert sol.CALLS == {"stock_lookup": 0, "legacy_stock": 0}


@pytest.mark.parametrize("seed", SEEDS)
def test_step3_refused_arguments_never_reach_the_tool(sol, spies, seed):
    rng = random.Random(seed)
    for tool, args, reason in one_defect_cases(rng):
        assert sol.call_tool(tool, args) == {"ok": False, "value": None, "error": "args:" + reason}
    assert all(spy.calls == [] for spy in spies.values())


class LabError(Exception):
    """A learner-invisible exception type: only its name should travel."""


class UnprintableError(Exception):
    def __str__(self):
        raise RuntimeError("cannot print me")


@pytest.mark.parametrize("seed", SEEDS)
def test_step3_a_raising_tool_becomes_raised_and_its_class_name(sol, spies, seed):
    rng = random.Random(seed)
    raisers = [
        KeyError("x"),
        ValueError(),
        ZeroDivisionError(),
        TypeError("t"),
        RuntimeError(),
        LabError(),
        UnprintableError(),
        AttributeError(),
        IndexError(),
    ]
    rng.shuffle(raisers)
    for exc in raisers:
        tool = rng.choice(TOOL_NAMES)
        spies[tool].raises = exc
        got = sol.call_tool(tool, random_valid_args(rng))
        assert got == {"ok": False, "value": None, "error": "raised:" + type(exc).__name__}
        spies[tool].raises = None
    assert sum(len(s.calls) for s in spies.values()) == len(raisers)


@pytest.mark.parametrize("arg", ["sku", "region", "limit"])
def test_step3_an_exploding_argument_is_refused_as_a_value(sol, spies, arg):
    args = {"sku": "SKU-1001", "region": "north", "limit": 2, arg: Poison()}
    assert sol.call_tool("stock_lookup", args) == {"ok": False, "value": None, "error": f"args:type:{arg}"}
    assert spies["stock_lookup"].calls == []


def test_step3_real_tools_through_the_door(sol):
    ok = sol.call_tool("stock_lookup", {"sku": "SKU-2040", "region": "west", "limit": 3})
    # A count of 0 is an empty bin, which is valid stock, not an empty result.
    assert ok == {
        "ok": True,
        "value": {"sku": "SKU-2040", "region": "west", "rows": [{"bin": "W-01", "count": 0}]},
        "error": "",
    }
    assert sol.call_tool("stock_lookup", {"sku": "SKU-1001", "region": "mars", "limit": 2}) == {
        "ok": False,
        "value": None,
        "error": "args:allowed:region",
    }
    assert sol.call_tool("nope", {}) == {"ok": False, "value": None, "error": "args:unknown_tool"}


# ---------------------------------------------------------------------------
# Step 4: validate_result (and call_tool's use of it)
# ---------------------------------------------------------------------------


def bad_results(rng: random.Random) -> list[tuple[object, str]]:
    """(result, reason) pairs, each with exactly one defect."""
    good = random_good_result(rng)
    row = good["rows"][0]
    dropped = rng.choice(["sku", "region", "rows"])

    def with_rows(rows):
        return {**good, "rows": rows}

    shape = [
        None,
        [],
        "rows",
        rng.randint(0, 9),
        [good],
        {k: v for k, v in good.items() if k != dropped},
        {**good, "sku": rng.randint(1000, 9999)},
        {**good, "region": None},
        {**good, "rows": {"bin": "A", "count": 1}},
        with_rows([row, "not a row"]),
        with_rows([{"bin": row["bin"]}]),
        with_rows([{"count": row["count"]}]),
        with_rows([{"bin": rng.randint(0, 9), "count": 1}]),
        with_rows([{"bin": "A", "count": str(rng.randint(0, 9))}]),
        with_rows([{"bin": "A", "count": float(rng.randint(0, 9))}]),
        with_rows([{"bin": "A", "count": rng.choice([True, False])}]),  # bool is not an int here either
    ]
    too_big = [{"bin": f"B-{i}", "count": 1} for i in range(rng.randint(SPEC_MAX_ROWS + 1, 12))]
    negative = [dict(r) for r in good["rows"]]
    negative[rng.randrange(len(negative))]["count"] = rng.randint(-20, -1)
    return [(value, "shape") for value in shape] + [
        (with_rows([]), "empty"),
        (with_rows(too_big), "too_big"),
        (with_rows(negative), "range"),
    ]


@pytest.mark.parametrize("seed", SEEDS)
def test_step4_good_results_pass(sol, seed):
    rng = random.Random(seed)
    for _ in range(20):
        assert sol.validate_result(rng.choice(TOOL_NAMES), random_good_result(rng)) == ""
    exactly_max = {"sku": "S", "region": "north", "rows": [{"bin": "B", "count": 0}] * SPEC_MAX_ROWS}
    assert sol.validate_result("stock_lookup", exactly_max) == ""


@pytest.mark.parametrize("seed", SEEDS)
def test_step4_each_bad_result_gives_its_reason(sol, seed):
    rng = random.Random(seed)
    for value, reason in bad_results(rng):
        assert sol.validate_result(rng.choice(TOOL_NAMES), value) == reason, value


@pytest.mark.parametrize("seed", SEEDS)
def test_step4_reads_only_the_contract_returns(sol, seed):
    rng = random.Random(seed)
    tool = rng.choice(TOOL_NAMES)
    returns = sol.TOOLS[tool]["returns"] = {
        "keys": dict(sol.TOOLS[tool]["returns"]["keys"]),
        "rows": {"max_len": rng.randint(1, 3), "item": {"bin": {"type": str}, "count": {"type": int, "min": 5}}},
    }
    max_len = returns["rows"]["max_len"]
    rows = [{"bin": f"B-{i}", "count": 5} for i in range(max_len)]
    result = {"sku": "SKU-1001", "region": "north", "rows": rows}
    assert sol.validate_result(tool, result) == ""
    assert sol.validate_result(tool, {**result, "rows": rows + [{"bin": "B-x", "count": 9}]}) == "too_big"
    assert sol.validate_result(tool, {**result, "rows": [{"bin": "B-0", "count": 4}]}) == "range"
    returns["keys"]["note"] = str
    assert sol.validate_result(tool, result) == "shape"
    assert sol.validate_result(tool, {**result, "note": "fresh"}) == ""


@pytest.mark.parametrize("seed", SEEDS)
def test_step4_call_tool_refuses_bad_results(sol, spies, seed):
    rng = random.Random(seed)
    for value, reason in bad_results(rng):
        tool = rng.choice(TOOL_NAMES)
        spies[tool].result = value
        assert sol.call_tool(tool, random_valid_args(rng)) == {"ok": False, "value": None, "error": "result:" + reason}


@pytest.mark.parametrize("seed", SEEDS)
def test_step4_legacy_stock_on_the_seven_bins_is_too_big(sol, seed):
    rng = random.Random(seed)
    limit = rng.randint(1, SPEC_MAX_ROWS)
    got = sol.call_tool("legacy_stock", {"sku": "SKU-3300", "region": "north", "limit": limit})
    assert got == {"ok": False, "value": None, "error": "result:too_big"}
    assert sol.CALLS["legacy_stock"] == 1  # the body ran; its result was refused afterwards


def test_step4_unknown_sku_is_empty(sol):
    got = sol.call_tool("stock_lookup", {"sku": "SKU-9999", "region": "north", "limit": 2})
    assert got == {"ok": False, "value": None, "error": "result:empty"}


# ---------------------------------------------------------------------------
# Step 5: CACHE and cache_key
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_step5_cache_key_ignores_argument_order(sol, seed):
    rng = random.Random(seed)
    for _ in range(20):
        name, args = rng.choice(TOOL_NAMES), random_valid_args(rng)
        key = sol.cache_key(name, args)
        assert isinstance(key, str)
        assert sol.cache_key(name, shuffled(rng, args)) == key


@pytest.mark.parametrize("seed", SEEDS)
def test_step5_cache_key_tells_different_calls_apart(sol, seed):
    rng = random.Random(seed)
    args = random_valid_args(rng)
    choices = {"sku": SKUS + ["SKU-9999"], "region": SPEC_REGIONS, "limit": range(1, SPEC_MAX_ROWS + 1)}
    variants = [("stock_lookup", args), ("legacy_stock", args)]
    variants += [
        ("stock_lookup", {**args, arg: other})
        for arg, values in choices.items()
        for other in values
        if other != args[arg]
    ]
    variants += [
        ("stock_lookup", {**args, "limit": str(args["limit"])}),
        ("stock_lookup", {**args, "limit": float(args["limit"])}),
        ("stock_lookup", {**args, "sku": True}),
        ("stock_lookup", {k: v for k, v in args.items() if k != "limit"}),
        ("stock_lookup", {**args, random_word(rng): 1}),
    ]
    keys = [sol.cache_key(name, a) for name, a in variants]
    assert len(set(keys)) == len(keys)


def test_step5_cache_starts_empty_and_is_a_dict(sol):
    assert sol.CACHE == {} and isinstance(sol.CACHE, dict)


@pytest.mark.parametrize("seed", SEEDS)
def test_step5_a_repeated_success_runs_the_body_zero_more_times(sol, spies, seed):
    rng = random.Random(seed)
    tool, args = rng.choice(TOOL_NAMES), random_valid_args(rng)
    spies[tool].result = value = random_good_result(rng)
    first = sol.call_tool(tool, args)
    assert len(spies[tool].calls) == 1 and first["ok"]
    for _ in range(rng.randint(2, 5)):
        assert sol.call_tool(tool, shuffled(rng, args)) == {"ok": True, "value": value, "error": ""}
    assert len(spies[tool].calls) == 1
    assert len(sol.CACHE) == 1  # stays there: nothing clears the cache by itself
    other = rng.choice([t for t in TOOL_NAMES if t != tool])
    spies[other].result = value
    sol.call_tool(other, args)  # same arguments, other tool: a different entry
    assert len(spies[other].calls) == 1


@pytest.mark.parametrize("seed", SEEDS)
def test_step5_a_failing_call_runs_the_body_every_time(sol, spies, seed):
    rng = random.Random(seed)
    failures = [Spy(raises=LabError()), Spy(result={"sku": "S", "region": "north", "rows": []}), Spy(result=None)]
    for spy in failures:
        tool, args = rng.choice(TOOL_NAMES), random_valid_args(rng)
        sol.TOOLS[tool]["fn"] = spy
        repeats = rng.randint(2, 5)
        for _ in range(repeats):
            assert sol.call_tool(tool, args)["ok"] is False
        assert len(spy.calls) == repeats
    assert sol.CACHE == {}


def test_step5_real_tool_counts_follow_the_cache(sol):
    args = {"sku": "SKU-4411", "region": "west", "limit": 1}
    for _ in range(3):
        assert sol.call_tool("stock_lookup", args)["ok"]
    assert sol.CALLS["stock_lookup"] == 1
    empty = {"sku": "SKU-9999", "region": "west", "limit": 1}
    for _ in range(3):
        sol.call_tool("stock_lookup", empty)
    assert sol.CALLS["stock_lookup"] == 4
