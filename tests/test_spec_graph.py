"""LAB_SPEC steps 6-8, asserted against the reference ``solutions/tools.py``.

The graph (``State``, the nodes, ``run_naive``), the repair loop
(``handle``, ``MAX_ATTEMPTS`` read at run time, ``tool_runs``) and the
report (``write_report``), with random orders drawn from
``random.Random(seed)``. Expected rows are LAB_SPEC facts written out here;
steps 1-5 (``test_spec_calls.py``) pin the whole table.

Each test gets a fresh import of the solution, so ``CALLS`` and ``CACHE``
start clean.
"""

from __future__ import annotations

import json
import operator
import random
import shutil
import string
import sys
import typing
from pathlib import Path

import pytest
from langgraph.graph import END, START, StateGraph

from agtool_lab.load import load_module
from grader import spec

# The `sol` fixture (tests/conftest.py) imports $AGTOOL_SPEC_MODULE, else the reference solution.
SEEDS = range(5)
REGIONS = ["north", "south", "east", "west", "central"]
MAX_ROWS = 5

# LAB_SPEC rows these tests use: the central bin of each sku that has one,
# and the seven north bins of SKU-3300 (more than MAX_ROWS).
CENTRAL = {
    "SKU-1001": [{"bin": "C-01", "count": 30}],
    "SKU-2040": [{"bin": "C-02", "count": 15}],
    "SKU-3300": [{"bin": "C-03", "count": 11}],
    "SKU-4411": [{"bin": "C-04", "count": 9}],
}
NORTH_3300 = [{"bin": f"N-{n}", "count": c} for n, c in zip(range(11, 18), [2, 5, 1, 9, 4, 6, 3])]
# Orders that succeed at once: (sku, region) -> all its rows.
FOUND = {
    ("SKU-1001", "north"): [{"bin": "N-01", "count": 12}, {"bin": "N-02", "count": 4}],
    ("SKU-1001", "south"): [{"bin": "S-01", "count": 7}],
    ("SKU-2040", "east"): [{"bin": "E-01", "count": 3}],
    ("SKU-2040", "west"): [{"bin": "W-01", "count": 0}],
    ("SKU-4411", "south"): [{"bin": "S-02", "count": 22}],
    ("SKU-5000", "west"): [{"bin": "W-03", "count": 2}],
    **{(sku, "central"): rows for sku, rows in CENTRAL.items()},
}
NAIVE_KEYS = {"ok", "answer", "rows", "errors", "calls"}
HANDLE_KEYS = NAIVE_KEYS | {"fixes", "attempts", "tool_runs"}
# The spec's step-8 facts (grader.spec), held here against the solution's write_report.
EN_HEADINGS = list(spec.HEADING_SETS["English"])
KO_HEADINGS = list(spec.HEADING_SETS["Korean"])
CORRECT_REPORT = spec.REPORT_EXPECTED


def wrong_region(rng: random.Random) -> str:
    return rng.choice(["mars", "North", "nowhere", "", "".join(rng.choices(string.ascii_lowercase, k=7))])


def found_order(rng: random.Random) -> tuple[dict, list]:
    (sku, region), rows = rng.choice(sorted(FOUND.items()))
    order = {"sku": sku, "region": region, "limit": rng.randint(1, MAX_ROWS)}
    if rng.random() < 0.5:
        order["tool"] = "stock_lookup"
    return order, rows[: order["limit"]]


def answer_names_row(answer: str, sku: str, region: str, row: dict) -> bool:
    return all(str(part) in answer for part in (sku, region, row["bin"], row["count"]))


def total_runs(sol) -> int:
    return sum(sol.CALLS.values())


# ---------------------------------------------------------------------------
# Step 6: State, nodes, build_naive, run_naive
# ---------------------------------------------------------------------------


def test_step6_state_is_a_typeddict_with_the_reducers(sol):
    assert typing.is_typeddict(sol.State)
    hints = typing.get_type_hints(sol.State, include_extras=True)
    for field, base in (("errors", list), ("calls", list), ("fixes", list), ("attempts", int)):
        assert typing.get_origin(hints[field]) is typing.Annotated, field
        assert typing.get_args(hints[field])[0] is base
        assert operator.add in hints[field].__metadata__


def test_step6_state_reducers_accumulate_in_a_real_graph(sol):
    # Two nodes each write the same fields; the reducers must add, not overwrite.
    def first(state):
        return {"errors": ["a"], "calls": [{"tool": "t", "args": {}}], "attempts": 1, "fixes": ["x"]}

    def second(state):
        return {"errors": ["b"], "calls": [{"tool": "u", "args": {}}], "attempts": 2, "fixes": ["y"]}

    graph = StateGraph(sol.State)
    graph.add_node("first", first)
    graph.add_node("second", second)
    graph.add_edge(START, "first")
    graph.add_edge("first", "second")
    graph.add_edge("second", END)
    final = graph.compile().invoke({"errors": ["start"], "calls": [], "attempts": 0, "fixes": []})
    assert final["errors"] == ["start", "a", "b"]
    assert [c["tool"] for c in final["calls"]] == ["t", "u"]
    assert final["attempts"] == 3
    assert final["fixes"] == ["x", "y"]


def test_step6_naive_graph_has_the_four_named_nodes(sol):
    nodes = set(sol.build_naive().get_graph().nodes)
    assert {"pick", "fetch", "reply", "giveup"} <= nodes
    assert "repair" not in nodes


@pytest.mark.parametrize("seed", SEEDS)
def test_step6_run_naive_success_path(sol, seed):
    rng = random.Random(seed)
    for _ in range(4):
        order, rows = found_order(rng)
        before = total_runs(sol)
        got = sol.run_naive(order)
        assert set(got) == NAIVE_KEYS
        assert got["ok"] is True and got["rows"] == rows and got["errors"] == []
        assert answer_names_row(got["answer"], order["sku"], order["region"], rows[0])
        assert len(got["calls"]) == 1
        assert got["calls"][0]["tool"] == "stock_lookup"
        assert got["calls"][0]["args"] == {k: order[k] for k in ("sku", "region", "limit")}
        assert total_runs(sol) - before <= 1  # one call_tool (0 runs when cached)


@pytest.mark.parametrize("seed", SEEDS)
def test_step6_run_naive_failure_is_a_path_not_an_exception(sol, seed):
    rng = random.Random(seed)
    limit = rng.randint(1, MAX_ROWS)
    cases = [
        ({"sku": "SKU-9999", "region": rng.choice(REGIONS), "limit": limit}, "result:empty"),
        ({"sku": "SKU-1001", "region": wrong_region(rng), "limit": limit}, "args:allowed:region"),
        ({"sku": "SKU-1001", "region": "north", "limit": rng.randint(6, 99)}, "args:range:limit"),
        ({"sku": "SKU-3300", "region": "north", "limit": limit, "tool": "legacy_stock"}, "result:too_big"),
        ({"sku": "SKU-5000", "region": "central", "limit": limit}, "result:empty"),
    ]
    for order, reason in cases:
        got = sol.run_naive(order)
        assert set(got) == NAIVE_KEYS
        assert got["ok"] is False
        assert got["errors"] == [reason]
        assert reason in got["answer"]
        assert len(got["calls"]) == 1
        # pick passes the order through unchanged, even when it is wrong.
        assert got["calls"][0]["tool"] == order.get("tool", "stock_lookup")
        assert got["calls"][0]["args"] == {k: order[k] for k in ("sku", "region", "limit")}


def test_step6_a_raising_tool_ends_in_giveup(sol):
    def broken(**kwargs):
        raise LookupError("backend down")

    sol.TOOLS["stock_lookup"]["fn"] = broken
    got = sol.run_naive({"sku": "SKU-1001", "region": "north", "limit": 1})
    assert got["ok"] is False and got["errors"] == ["raised:LookupError"]
    assert "raised:LookupError" in got["answer"]


def test_step6_legacy_tool_is_used_when_the_order_names_it(sol):
    got = sol.run_naive({"sku": "SKU-1001", "region": "north", "limit": 1, "tool": "legacy_stock"})
    # legacy_stock ignores the limit: both north bins come back, and 2 <= MAX_ROWS is fine.
    assert got["ok"] is True and got["rows"] == FOUND[("SKU-1001", "north")]
    assert got["calls"][0]["tool"] == "legacy_stock"
    assert sol.CALLS == {"stock_lookup": 0, "legacy_stock": 1}


# ---------------------------------------------------------------------------
# Step 7: MAX_ATTEMPTS, REPAIRS, can_repair, repair, build_graph, handle
# ---------------------------------------------------------------------------


def test_step7_constants_and_what_can_be_repaired(sol):
    assert sol.MAX_ATTEMPTS == 3 and sol.FALLBACK_REGION == "central"
    for reason in ("args:allowed:region", "args:range:limit", "result:too_big"):
        assert sol.can_repair(reason) is True
        assert reason in sol.REPAIRS
    for reason in ("result:empty", "raised:KeyError", "raised:RuntimeError", "raised:LabError"):
        assert sol.can_repair(reason) is False


def test_step7_repair_graph_adds_the_repair_node(sol):
    assert {"pick", "fetch", "reply", "giveup", "repair"} <= set(sol.build_graph().get_graph().nodes)


def test_step7_worked_example_wrong_region(sol):
    got = sol.handle({"sku": "SKU-1001", "region": "mars", "limit": 2})
    assert set(got) == HANDLE_KEYS
    assert got["ok"] is True
    assert type(got["attempts"]) is int and type(got["tool_runs"]) is int and type(got["answer"]) is str
    assert len(got["fixes"]) == 1 and got["attempts"] == 2 and got["tool_runs"] == 1
    assert got["errors"] == ["args:allowed:region"]
    assert got["rows"] == CENTRAL["SKU-1001"]
    assert [c["args"]["region"] for c in got["calls"]] == ["mars", "central"]


def test_step7_worked_example_unknown_sku_gives_up(sol):
    got = sol.handle({"sku": "SKU-9999", "region": "north", "limit": 2})
    assert got["ok"] is False and got["fixes"] == [] and got["attempts"] == 1
    assert "result:empty" in got["answer"]
    assert got["tool_runs"] == 1


@pytest.mark.parametrize("seed", SEEDS)
def test_step7_any_wrong_region_falls_back_to_central(sol, seed):
    rng = random.Random(seed)
    sku = rng.choice(sorted(CENTRAL))
    limit = rng.randint(1, MAX_ROWS)
    got = sol.handle({"sku": sku, "region": wrong_region(rng), "limit": limit})
    assert got["ok"] is True and got["rows"] == CENTRAL[sku][:limit]
    assert answer_names_row(got["answer"], sku, "central", CENTRAL[sku][0])
    assert got["attempts"] == 2 and len(got["fixes"]) == 1


@pytest.mark.parametrize("seed", SEEDS)
def test_step7_limit_out_of_range_is_clamped(sol, seed):
    rng = random.Random(seed)
    for limit, clamped in ((rng.randint(MAX_ROWS + 1, 500), MAX_ROWS), (rng.randint(-50, 0), 1)):
        sol.CACHE.clear()
        got = sol.handle({"sku": "SKU-3300", "region": "north", "limit": limit})
        assert got["ok"] is True and got["rows"] == NORTH_3300[:clamped]
        assert got["errors"] == ["args:range:limit"]
        assert [c["args"]["limit"] for c in got["calls"]] == [limit, clamped]
        assert got["attempts"] == 2 and len(got["fixes"]) == 1 and got["tool_runs"] == 1


@pytest.mark.parametrize("seed", SEEDS)
def test_step7_too_big_switches_to_stock_lookup(sol, seed):
    rng = random.Random(seed)
    limit = rng.randint(1, MAX_ROWS)
    got = sol.handle({"sku": "SKU-3300", "region": "north", "limit": limit, "tool": "legacy_stock"})
    assert got["ok"] is True and got["rows"] == NORTH_3300[:limit]
    assert got["errors"] == ["result:too_big"]
    assert [c["tool"] for c in got["calls"]] == ["legacy_stock", "stock_lookup"]
    assert got["attempts"] == 2 and got["tool_runs"] == 2
    assert sol.CALLS == {"stock_lookup": 1, "legacy_stock": 1}


def test_step7_sku_5000_falls_back_to_empty_central_and_gives_up(sol):
    got = sol.handle({"sku": "SKU-5000", "region": "mars", "limit": 1})
    assert got["ok"] is False
    assert got["errors"] == ["args:allowed:region", "result:empty"]
    assert len(got["fixes"]) == 1 and got["attempts"] == 2
    assert "result:empty" in got["answer"]


def test_step7_a_raising_tool_is_not_retried(sol):
    runs = []

    def broken(**kwargs):
        runs.append(kwargs)
        raise ConnectionError("down")

    sol.TOOLS["stock_lookup"]["fn"] = broken
    got = sol.handle({"sku": "SKU-1001", "region": "north", "limit": 1})
    assert got["ok"] is False and got["attempts"] == 1 and got["fixes"] == []
    assert "raised:ConnectionError" in got["answer"] and len(runs) == 1


def test_step7_max_attempts_is_read_when_the_graph_runs(sol):
    order = {"sku": "SKU-1001", "region": "mars", "limit": 2}
    sol.handle(order)  # build and run once with the default limit first
    sol.MAX_ATTEMPTS = 1
    sol.CACHE.clear()
    got = sol.handle(order)
    assert got["ok"] is False and got["attempts"] == 1 and got["fixes"] == []
    assert "args:allowed:region" in got["answer"]


@pytest.mark.parametrize("max_attempts, ok, attempts", [(1, False, 1), (2, False, 2), (3, True, 3), (7, True, 3)])
def test_step7_two_repairs_in_a_row_are_bounded_by_max_attempts(sol, max_attempts, ok, attempts):
    # legacy + limit 99: range:limit -> clamp, then result:too_big -> stock_lookup.
    sol.MAX_ATTEMPTS = max_attempts
    got = sol.handle({"sku": "SKU-3300", "region": "north", "limit": 99, "tool": "legacy_stock"})
    assert got["ok"] is ok and got["attempts"] == attempts
    assert len(got["fixes"]) == attempts - 1
    assert got["errors"] == ["args:range:limit", "result:too_big"][:attempts]
    if ok:
        assert got["rows"] == NORTH_3300[:MAX_ROWS]


@pytest.mark.parametrize("seed", SEEDS)
def test_step7_tool_runs_is_the_calls_delta_and_the_cache_shows_zero(sol, seed):
    rng = random.Random(seed)
    orders = [found_order(rng)[0] for _ in range(3)]
    orders += [
        {"sku": rng.choice(sorted(CENTRAL)), "region": wrong_region(rng), "limit": 2},
        {"sku": "SKU-9999", "region": rng.choice(REGIONS), "limit": 1},
    ]
    for order in orders:
        before = total_runs(sol)
        first = sol.handle(order)
        assert first["tool_runs"] == total_runs(sol) - before
        again = sol.handle(order)
        # Successes are cached, failures are not: an empty result runs again.
        assert again["tool_runs"] == (0 if first["ok"] else first["tool_runs"])
        assert (again["ok"], again["attempts"], again["rows"]) == (first["ok"], first["attempts"], first["rows"])


# ---------------------------------------------------------------------------
# Step 8: write_report
# ---------------------------------------------------------------------------


def section(markdown: str, heading: str) -> str:
    """The text under ``heading`` up to the next ``##`` heading."""
    after = markdown.split(heading, 1)[1]
    return after.split("\n## ", 1)[0]


def read_outputs(folder: Path) -> tuple[dict, str]:
    return (
        json.loads((folder / "tool_report.json").read_text(encoding="utf-8")),
        (folder / "tool_report.md").read_text(encoding="utf-8"),
    )


def test_step8_report_of_a_correct_module(sol, tmp_path):
    report = sol.write_report(tmp_path)
    assert report == CORRECT_REPORT
    written, markdown = read_outputs(tmp_path)
    assert written == report
    headings = [line.strip() for line in markdown.splitlines() if line.startswith("## ")]
    assert headings in (EN_HEADINGS, KO_HEADINGS)
    assert "3" in section(markdown, headings[3])


def test_step8_default_folder_is_the_module_folder(tmp_path, spec_module_path):
    copy = tmp_path / "tools.py"
    shutil.copy(spec_module_path, copy)
    module = load_module(copy)
    try:
        report = module.write_report()
    finally:
        sys.modules.pop(module.__name__, None)
    assert read_outputs(tmp_path)[0] == report == CORRECT_REPORT


@pytest.mark.parametrize("seed", SEEDS)
def test_step8_attempt_limit_in_the_report_follows_the_module(sol, tmp_path, seed):
    limit = random.Random(seed).randint(2, 9)
    sol.MAX_ATTEMPTS = limit
    report = sol.write_report(tmp_path)
    assert (report["repaired"], report["attempts"]) == (True, 2)
    _, markdown = read_outputs(tmp_path)
    assert str(limit) in section(markdown, EN_HEADINGS[3])


def test_step8_one_attempt_means_not_repaired(sol, tmp_path):
    sol.MAX_ATTEMPTS = 1
    report = sol.write_report(tmp_path)
    assert report == {**CORRECT_REPORT, "repaired": False, "attempts": 1}
    written, markdown = read_outputs(tmp_path)
    assert written == report
    last = section(markdown, EN_HEADINGS[3])
    assert "1" in last and "3" not in last


def test_step8_bad_result_reasons_are_measured(sol, tmp_path):
    real = sol.validate_result

    def blind_to_range(name, value):
        reason = real(name, value)
        return "" if reason == "range" else reason

    sol.validate_result = blind_to_range
    report = sol.write_report(tmp_path)
    assert report["bad_result_reasons"] == ["", "empty", "shape", "too_big"]


def test_step8_blocked_before_call_is_measured(sol, tmp_path):
    sol.validate_args = lambda name, args: ""
    report = sol.write_report(tmp_path)
    assert report["blocked_before_call"] > 0
    assert read_outputs(tmp_path)[0]["blocked_before_call"] == report["blocked_before_call"]


def test_step8_memo_runs_are_measured(sol, tmp_path):
    fresh = iter(range(10**6))
    sol.cache_key = lambda name, args: f"{name}:{next(fresh)}"  # never the same key twice
    assert sol.write_report(tmp_path)["memo_second_call_runs"] == 1


def test_step8_tools_follow_the_table(sol, tmp_path):
    sol.TOOLS["zz_extra"] = dict(sol.TOOLS["stock_lookup"])
    assert sol.write_report(tmp_path)["tools"] == ["legacy_stock", "stock_lookup", "zz_extra"]


def test_step8_gave_up_is_measured(sol, tmp_path):
    # A module that pretends every lookup found something can no longer give up.
    sol.TOOLS["stock_lookup"]["fn"] = lambda sku, region, limit: {
        "sku": sku,
        "region": region,
        "rows": [{"bin": "FAKE", "count": 1}],
    }
    assert sol.write_report(tmp_path)["gave_up"] is False
