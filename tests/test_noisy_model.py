"""The noisy-model lab's engine: the seeded simulated model and the three routes.

Everything is computed here from the solution module and the simulator, never
written down: which route serves silent wrong answers, which answers more.
A planted defect (a validator that accepts everything) shows that the
"no silent wrong answer" test can fail.
"""

from __future__ import annotations

import ast
import doctest
from collections import Counter
from pathlib import Path

import matplotlib
import pytest

from agtool_lab.load import load_module
from agtool_lab.noisy import layers as noisy_layers
from agtool_lab.noisy import model as noisy_model
from agtool_lab.noisy import routes as noisy_routes
from agtool_lab.noisy.model import CHAPTER_MIX, MISTAKES, LabData, ModelCall, NoisyModel, draw_orders, right_rows
from agtool_lab.noisy.routes import ROUTE_LABELS, chapter_comparison, check_ready, run_routes, sweep, tally

matplotlib.use("Agg")

REPO = Path(__file__).resolve().parent.parent
SOLUTION = REPO / "solutions" / "tools.py"
STARTER = REPO / "starter" / "tools.py"

A, B, C = (ROUTE_LABELS[route] for route in ("direct", "naive", "repair"))


@pytest.fixture
def solution():
    return load_module(SOLUTION)


@pytest.fixture(scope="module")
def many_calls():
    """20,000 calls from a model that always errs: enough to measure the mix."""
    tools = load_module(SOLUTION)
    orders = draw_orders(tools, 20_000, seed=5)
    return tools, orders, NoisyModel(tools, error_rate=1.0, seed=5).calls_for(orders)


# --------------------------------------------------------------------------
# The simulator
# --------------------------------------------------------------------------


def test_same_seed_same_orders_and_calls(solution):
    orders = draw_orders(solution, 500, seed=3)
    assert orders == draw_orders(solution, 500, seed=3)
    first = NoisyModel(solution, error_rate=0.3, seed=3).calls_for(orders)
    again = NoisyModel(load_module(SOLUTION), error_rate=0.3, seed=3).calls_for(orders)
    assert first == again
    assert draw_orders(solution, 500, seed=4) != orders
    assert NoisyModel(solution, error_rate=0.3, seed=4).calls_for(orders) != first


def test_orders_come_from_stock_and_each_has_a_right_answer(solution):
    pairs = {(row["sku"], row["region"]) for row in solution.STOCK}
    for order in draw_orders(solution, 1_000, seed=1):
        assert (order["sku"], order["region"]) in pairs
        assert 1 <= order["limit"] <= solution.MAX_ROWS
        assert order.get("tool", "stock_lookup") == "stock_lookup"
        assert right_rows(solution, order)


def test_right_rows_are_read_from_the_module_stock(solution):
    order = {"sku": "SKU-3300", "region": "north", "limit": 3}
    expected = [
        {"bin": r["bin"], "count": r["count"]}
        for r in solution.STOCK
        if r["sku"] == "SKU-3300" and r["region"] == "north"
    ][:3]
    assert right_rows(solution, order) == expected
    # Change the table and the truth follows it: nothing is hard-coded.
    changed = LabData(
        regions=tuple(solution.REGIONS),
        max_rows=5,
        stock=({"sku": "SKU-3300", "region": "north", "bin": "X-9", "count": 99},),
    )
    assert right_rows(changed, order) == [{"bin": "X-9", "count": 99}]


@pytest.mark.parametrize("rate", [0.0, 0.09, 0.3])
def test_error_rate_matches_the_configured_rate(solution, rate):
    orders = draw_orders(solution, 20_000, seed=2)
    calls = NoisyModel(solution, error_rate=rate, seed=2).calls_for(orders)
    wrong = sum(not call.faithful for call in calls) / len(calls)
    assert wrong == pytest.approx(rate, abs=0.01)


def test_error_mix_matches_the_chapter_shares(many_calls):
    _, _, calls = many_calls
    counts = Counter(call.category for call in calls)
    for category, share in CHAPTER_MIX.items():
        assert counts[category] / len(calls) == pytest.approx(share, abs=0.015), category


def test_a_custom_mix_is_followed(solution):
    orders = draw_orders(solution, 10_000, seed=8)
    mix = {"format": 3, "wrong_unit": 1}  # shares are normalised
    calls = NoisyModel(solution, error_rate=1.0, mix=mix, seed=8).calls_for(orders)
    counts = Counter(call.category for call in calls)
    assert set(counts) == {"format", "wrong_unit"}
    assert counts["format"] / len(calls) == pytest.approx(0.75, abs=0.015)


def test_every_mistake_happens_and_changes_the_call(many_calls):
    tools, orders, calls = many_calls
    seen = Counter(call.mistake for call in calls)
    assert set(seen) == {name for mistakes in MISTAKES.values() for name in mistakes}
    for order, call in zip(orders, calls):
        faithful = {"sku": order["sku"], "region": order["region"], "limit": order["limit"]}
        # repr, not ==: True == 1 in Python, but `limit=True` is a mistake the contract refuses.
        assert repr((call.tool, call.args)) != repr((order.get("tool", "stock_lookup"), faithful))


# What the contract (the solution's call_tool) answers to each category: the
# mapping documented in agtool_lab/noisy/model.py.
EXPECTED_REASONS = {
    "identity": {"args:allowed:region"},
    "missing_optional": {"args:missing:limit"},
    "format": {"args:type:limit"},
    "invented_value": {"result:empty", "args:extra:warehouse", "args:extra:unit"},
    "wrong_unit": {"args:range:limit", "result:too_big"},
}


def test_each_category_is_refused_with_the_documented_reason(many_calls):
    tools, _, calls = many_calls
    reasons: dict[str, set] = {}
    for call in calls[:3_000]:
        tools.CACHE.clear()
        result = tools.call_tool(call.tool, call.args)
        assert not result["ok"], call
        reasons.setdefault(call.category, set()).add(result["error"])
    assert reasons == EXPECTED_REASONS


def test_a_higher_error_rate_only_adds_mistakes(solution):
    orders = draw_orders(solution, 2_000, seed=6)
    low = NoisyModel(solution, error_rate=0.05, seed=6).calls_for(orders)
    high = NoisyModel(solution, error_rate=0.30, seed=6).calls_for(orders)
    for low_call, high_call in zip(low, high):
        if not low_call.faithful:
            assert high_call == low_call


@pytest.mark.parametrize(
    "kwargs", [{"error_rate": 1.5}, {"error_rate": -0.1}, {"mix": {"typo": 1.0}}, {"mix": {"format": 0}}]
)
def test_bad_settings_are_refused(solution, kwargs):
    with pytest.raises(ValueError):
        NoisyModel(solution, **kwargs)


def test_the_legacy_tool_is_only_chosen_for_a_region_larger_than_max_rows(many_calls):
    tools, orders, calls = many_calls
    data = LabData.from_module(tools)
    legacy = [(o, c) for o, c in zip(orders, calls) if c.tool == "legacy_stock"]
    assert legacy
    assert all(data.bins(o["sku"], o["region"]) > data.max_rows for o, _ in legacy)


def test_the_simulator_does_not_import_the_solution():
    for module in (noisy_model, noisy_routes, noisy_layers):
        tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert not any(name.split(".")[0] == "solutions" for name in imported), module.__name__


# --------------------------------------------------------------------------
# The routes
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def solution_tally():
    tools = load_module(SOLUTION)
    orders = draw_orders(tools, 250, seed=11)
    calls = NoisyModel(tools, error_rate=0.3, seed=11).calls_for(orders)
    outcomes = run_routes(tools, orders, calls)
    return outcomes, tally(outcomes)


def test_only_the_direct_route_serves_silent_wrong_answers(solution_tally):
    _, table = solution_tally
    assert table.loc[A, "wrong (silent)"] > 0
    assert table.loc[B, "wrong (silent)"] == 0
    assert table.loc[C, "wrong (silent)"] == 0


def test_handle_answers_more_orders_than_run_naive(solution_tally):
    _, table = solution_tally
    answered = table["right"] + table["changed (disclosed)"]
    assert answered[C] > answered[B]
    assert table.loc[C, "right"] > table.loc[B, "right"]
    assert table.loc[C, "repairs that succeeded"] > 0 == table.loc[B, "repairs that succeeded"]


def test_counts_add_up_and_validation_saves_tool_runs(solution_tally):
    outcomes, table = solution_tally
    outcome_columns = ["right", "changed (disclosed)", "wrong (silent)", "refused (honest)", "crashed"]
    assert (table[outcome_columns].sum(axis=1) == table["orders"]).all()
    assert (table["orders"] == 250).all() and table.loc[[A, B, C], "crashed"].sum() == 0
    assert table.loc[B, "tool body runs"] < table.loc[A, "tool body runs"]
    assert outcomes["model_in_pick"].all()  # the model's arguments reached fetch
    faithful = outcomes[outcomes["category"] == "none"]
    assert (faithful["outcome"] == "right").all()


def test_the_model_sits_in_pick_and_pick_is_restored(solution):
    order = {"sku": "SKU-1001", "region": "north", "limit": 4}
    call = ModelCall("stock_lookup", {**order, "limit": 99}, "wrong_unit", "limit_scaled_up")
    original_pick, original_fn = solution.pick, solution.TOOLS["stock_lookup"]["fn"]
    outcomes = run_routes(solution, [order], [call], routes=["repair"])
    assert outcomes.loc[0, "outcome"] == "right"  # clamped to 5; SKU-1001 has only 2 bins in north
    assert outcomes.loc[0, "attempts"] == 2 and outcomes.loc[0, "first_retry_ok"]
    assert solution.pick is original_pick and solution.TOOLS["stock_lookup"]["fn"] is original_fn


def test_a_validator_that_accepts_everything_is_caught(solution):
    """The planted defect: with validate_args accepting every call, (b) serves silent wrong answers."""
    orders = draw_orders(solution, 200, seed=12)
    calls = NoisyModel(solution, error_rate=0.5, mix={"format": 1, "wrong_unit": 1}, seed=12).calls_for(orders)
    assert tally(run_routes(solution, orders, calls, routes=["naive"])).loc[B, "wrong (silent)"] == 0
    solution.validate_args = lambda name, args: ""
    # `limit=True` slices like 1 and a ten-times limit returns every bin: both pass the result check.
    assert tally(run_routes(solution, orders, calls, routes=["naive"])).loc[B, "wrong (silent)"] > 0


def test_a_route_that_raises_or_returns_no_dict_is_counted_as_crashed(solution):
    def broken(order):
        raise KeyError("limit")

    solution.handle = broken
    solution.run_naive = lambda order: None
    order = {"sku": "SKU-1001", "region": "north", "limit": 1}
    outcomes = run_routes(solution, [order], [ModelCall("stock_lookup", dict(order))], routes=["naive", "repair"])
    assert list(outcomes["outcome"]) == ["crashed", "crashed"]
    assert list(outcomes["error"]) == ["crashed:returned NoneType", "crashed:KeyError"]


def test_chapter_comparison_measures_identity_failures_reaching_a_tool(solution):
    orders = draw_orders(solution, 200, seed=13)
    calls = NoisyModel(solution, error_rate=0.4, seed=13).calls_for(orders)
    outcomes = run_routes(solution, orders, calls)
    comparison = chapter_comparison(outcomes)
    identity = comparison.loc["identity failures reaching execution"]
    expected_a = sum(call.category == "identity" for call in calls) / len(calls)
    assert identity[A] == pytest.approx(expected_a, abs=0.005)
    assert identity[B] == 0 and identity[C] == 0
    assert comparison.loc["first-retry success", B] == "n/a"
    assert 0 < comparison.loc["first-retry success", C] <= 1
    text = noisy_routes.reading(tally(outcomes), comparison, error_rate=0.4)
    assert "0 silent wrong answers" in text and "4.3%" in text


def test_sweep_starts_right_and_only_the_direct_route_grows_silent_wrong(solution):
    curves = sweep(solution, n=150, seed=14, rates=[0.0, 0.1, 0.3])
    by = curves.set_index(["route", "error_rate"])
    for route in ("direct", "naive", "repair"):
        assert by.loc[(route, 0.0), "right_rate"] == 1.0
    direct = by.loc["direct", "silent_wrong_rate"]
    assert direct[0.0] == 0 < direct[0.1] < direct[0.3]
    assert (by.loc["naive", "silent_wrong_rate"] == 0).all()
    assert (by.loc["repair", "silent_wrong_rate"] == 0).all()
    assert (by.loc["repair", "answered_rate"] >= by.loc["naive", "answered_rate"]).all()

    fig = noisy_routes.plot_sweep(curves)
    assert [len(ax.get_lines()) for ax in fig.axes] == [4, 4]  # three routes + the 9% marker


def test_the_sweep_agrees_with_a_full_run_at_the_same_rate(solution):
    # The sweep reuses outcomes of (order, call) pairs it has judged at a lower rate;
    # the rates it reports must still be those of a full run.
    orders = draw_orders(solution, 100, seed=15)
    calls = NoisyModel(solution, error_rate=0.2, seed=15).calls_for(orders)
    full = run_routes(solution, orders, calls)
    curves = sweep(solution, n=100, seed=15, rates=[0.0, 0.2]).set_index(["route", "error_rate"])
    for route, group in full.groupby("route"):
        assert curves.loc[(route, 0.2), "right_rate"] == (group["outcome"] == "right").mean()
        assert curves.loc[(route, 0.2), "silent_wrong_rate"] == (group["outcome"] == "wrong").mean()


# --------------------------------------------------------------------------
# Readiness and the docstring examples
# --------------------------------------------------------------------------


def test_check_ready_explains_the_starter_and_accepts_the_solution(solution):
    assert check_ready(solution) == ""
    message = check_ready(load_module(STARTER))
    assert message.startswith("Step 1") and "Traceback" not in message


def test_check_ready_names_the_unwritten_step(solution):
    def not_yet(order):
        raise NotImplementedError("step 7: write handle (labs/07_repair_loop.ipynb)")

    solution.handle = not_yet
    assert "step 7" in check_ready(solution)
    del solution.run_naive
    assert check_ready(solution).startswith("Step 6")


@pytest.mark.parametrize("module", [noisy_model, noisy_routes], ids=lambda m: m.__name__)
def test_docstring_examples(module, monkeypatch):
    monkeypatch.chdir(REPO)  # the examples load "solutions/tools.py" relative to the repo
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


# --------------------------------------------------------------------------
# Part two of the capstone: the layers of steps 9-11 (agtool_lab.noisy.layers)
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def layer_runs():
    tools = load_module(SOLUTION)
    return tools, noisy_layers.run_layers(tools, 300, error_rate=0.5, seed=5)


def _outcomes(runs, mistake: str, route: str) -> set:
    return set(runs[(runs["mistake"] == mistake) & (runs["route"] == route)]["outcome"])


def test_every_named_mistake_is_made_and_a_higher_rate_only_adds_mistakes():
    tools = load_module(SOLUTION)
    data, products = LabData.from_module(tools), dict(tools.PRODUCTS)
    orders = noisy_layers.draw_named_orders(data, products, 300, seed=2)
    low = [noisy_layers.model_writes(o, products, data, error_rate=0.1, seed=2, index=i) for i, o in enumerate(orders)]
    high = [noisy_layers.model_writes(o, products, data, error_rate=0.6, seed=2, index=i) for i, o in enumerate(orders)]
    assert {m for _, m in high} - {None} == set(noisy_layers.NAMED_MISTAKES)
    assert all(lo == hi for lo, hi in zip(low, high) if lo[1] is not None)
    assert all(
        call["product"] != order["sku"]
        or call != {"product": order["sku"], "region": order["region"], "limit": order["limit"]}
        for order, (call, mistake) in zip(orders, high)
        if mistake
    )


def test_each_layer_turns_its_mistakes_into_right_answers_or_questions(layer_runs):
    _tools, runs = layer_runs
    assert _outcomes(runs, "product name", "checked") == {"refused"}
    assert _outcomes(runs, "product name", "resolved") == {"right"}
    assert _outcomes(runs, "two products match", "retried") == {"asked"}
    assert _outcomes(runs, "limit ' 3 '", "resolved") == {"refused"}
    assert _outcomes(runs, "limit ' 3 '", "coerced") == {"right"}
    assert _outcomes(runs, "limit '３'", "retried") == {"refused"}  # never coerced, never suggested
    assert _outcomes(runs, "limit out of range", "retried") == {"refused"}
    assert "right" in _outcomes(runs, "region typo", "retried") - _outcomes(runs, "region typo", "coerced")
    asked = runs[runs["outcome"] == "asked"]
    assert len(asked) and asked["tool_runs"].sum() == 0


def test_the_full_stack_serves_no_silent_wrong_answer(layer_runs):
    _tools, runs = layer_runs
    table = noisy_layers.layer_table(runs)
    assert table.loc[noisy_layers.LAYER_LABELS["retried"], "wrong (silent)"] == 0
    assert table["crashed"].sum() == 0
    assert table.loc[noisy_layers.LAYER_LABELS["direct"], "wrong (silent)"] > 0
    right = table["right"].tolist()
    assert right[1:] == sorted(right[1:]), "each added layer must answer at least as many orders right"


def test_a_resolver_that_guesses_shows_up_as_silent_wrong_answers(solution):
    def first_match(query):
        q = query.strip().casefold()
        hits = sorted(sku for sku, name in solution.PRODUCTS.items() if q and q in name.casefold())
        return {"kind": "resolved", "sku": hits[-1]} if hits else {"kind": "not_found", "query": query}

    solution.resolve_sku = first_match
    runs = noisy_layers.run_layers(solution, 300, error_rate=0.5, seed=5)
    assert "wrong" in _outcomes(runs, "two products match", "resolved")


def test_a_lenient_coerce_shows_up_in_the_table(solution):
    honest = solution.coerce

    def lenient(name, raw_args):  # int() on anything: "３" becomes 3
        args, ledger = honest(name, raw_args)
        if isinstance(args.get("limit"), str):
            args = {**args, "limit": int(args["limit"])}
        return args, ledger

    solution.coerce = lenient
    runs = noisy_layers.run_layers(solution, 300, error_rate=0.5, seed=5)
    assert _outcomes(runs, "limit '３'", "retried") != {"refused"}


def test_explain_beats_a_bare_reason_and_only_because_of_its_suggestions(solution):
    table = noisy_layers.retry_table(solution, 300, error_rate=0.5, seed=5)
    bare, helped = table["first-retry success"]
    assert table["first retries"].iloc[0] > 0 and helped > bare
    solution.explain = lambda name, args: {"suggestion": None}
    bare2, helped2 = noisy_layers.retry_table(solution, 300, error_rate=0.5, seed=5)["first-retry success"]
    assert bare2 == helped2 == bare


def test_check_layers_ready_names_the_missing_step(solution):
    assert noisy_layers.check_layers_ready(solution) == ""
    del solution.explain
    assert noisy_layers.check_layers_ready(solution).startswith("Step 10")
    assert "Not written yet" in noisy_layers.check_layers_ready(load_module(REPO / "starter" / "tools.py"))


def test_layers_docstring_examples(monkeypatch):
    monkeypatch.chdir(REPO)
    result = doctest.testmod(noisy_layers, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
