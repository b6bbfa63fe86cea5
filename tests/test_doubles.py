"""The grader's doubles (``grader.engine.doubles``) and the ``double`` operation of a ``calls`` probe.

Each double must behave as LAB_SPEC says (tables of cases written from the
spec, then the reference solution over the random cases of every kind, as a
second opinion), record its calls, undo itself, and offer learner code nothing
but a function to call.
"""

from __future__ import annotations

import random
import types
from pathlib import Path

import pytest
from defects.harness import Context

from grader import spec
from grader.checks import cases
from grader.checks._common import TOOL_SPIES_ORIGINAL, call_op, call_probe, double_op
from grader.engine import doubles
from grader.engine.doubles import DOUBLES, make_double
from grader.engine.encode import encode
from grader.engine.probes import run_probe

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "solutions" / "tools.py"


@pytest.fixture
def solution(tmp_path):
    target = tmp_path / "agtool" / "tools.py"
    target.parent.mkdir()
    target.write_text(SOLUTION.read_text(encoding="utf-8"), encoding="utf-8")
    ctx = Context(tmp_path, target)
    return ctx.fresh_module(), ctx


def _double(kind, module, **params):
    return make_double(kind, module, encode(params), [])


GOOD = {"sku": "SKU-1001", "region": "north", "limit": 2}

# LAB_SPEC step 2, one defect per call.
ARGS_TABLE = [
    ("stock_lookup", GOOD, ""),
    ("legacy_stock", {"limit": 5, "region": "central", "sku": "SKU-9999"}, ""),
    ("stock_lookups", GOOD, "unknown_tool"),
    ("stock_lookup", {"sku": "SKU-1001", "region": "north"}, "missing:limit"),
    ("stock_lookup", {**GOOD, "color": None}, "extra:color"),
    ("stock_lookup", {**GOOD, "limit": True}, "type:limit"),
    ("stock_lookup", {**GOOD, "limit": False}, "type:limit"),
    ("stock_lookup", {**GOOD, "limit": "2"}, "type:limit"),
    ("stock_lookup", {**GOOD, "limit": 2.0}, "type:limit"),
    ("stock_lookup", {**GOOD, "sku": 1001}, "type:sku"),
    ("stock_lookup", {**GOOD, "region": "North"}, "allowed:region"),
    ("stock_lookup", {**GOOD, "region": " north"}, "allowed:region"),
    ("stock_lookup", {**GOOD, "limit": 0}, "range:limit"),
    ("stock_lookup", {**GOOD, "limit": 1}, ""),
    ("stock_lookup", {**GOOD, "limit": spec.MAX_ROWS}, ""),
    ("stock_lookup", {**GOOD, "limit": spec.MAX_ROWS + 1}, "range:limit"),
]


@pytest.mark.parametrize(
    "tool, args, reason", ARGS_TABLE, ids=[f"{r or 'valid'}-{i}" for i, (_, _, r) in enumerate(ARGS_TABLE)]
)
def test_validate_args_double_follows_the_spec_table(solution, tool, args, reason):
    module, _ = solution
    assert _double("validate_args", module)(tool, args) == reason


def test_validate_args_double_reads_the_contract_when_called_and_refuses_on_request(solution):
    module, _ = solution
    check = _double("validate_args", module, refuse=[["stock_lookup", GOOD, "range:limit"]])
    assert check("stock_lookup", GOOD) == "range:limit"
    assert check("legacy_stock", GOOD) == ""  # only that exact call
    assert check("stock_lookup", {**GOOD, "limit": 3}) == ""
    module.TOOLS["stock_lookup"]["args"]["limit"]["max"] = 2
    assert check("stock_lookup", {**GOOD, "limit": 3}) == "range:limit"
    module.TOOLS["stock_lookup"]["args"]["flag"] = {"type": bool, "required": False}
    assert check("stock_lookup", {**GOOD, "flag": True}) == ""
    assert check("stock_lookup", {**GOOD, "flag": 1}) == "type:flag"


def _row(count=1):
    return {"bin": "N-01", "count": count}


RESULT_TABLE = [
    ({"sku": "S", "region": "north", "rows": [_row(0)]}, ""),
    ({"sku": "S", "region": "north", "rows": [_row()] * spec.MAX_ROWS, "extra": 1}, ""),
    (None, "shape"),
    (3, "shape"),
    ("x", "shape"),
    ([], "shape"),
    ({"sku": "S", "region": "north"}, "shape"),
    ({"sku": "S", "region": "north", "rows": (_row(),)}, "shape"),
    ({"sku": 1, "region": "north", "rows": [_row()]}, "shape"),
    ({"sku": "S", "region": "north", "rows": [None]}, "shape"),
    ({"sku": "S", "region": "north", "rows": [3]}, "shape"),
    ({"sku": "S", "region": "north", "rows": ["x"]}, "shape"),
    ({"sku": "S", "region": "north", "rows": [[]]}, "shape"),
    ({"sku": "S", "region": "north", "rows": [{"bin": "N-01"}]}, "shape"),
    ({"sku": "S", "region": "north", "rows": [{"bin": "N-01", "count": True}]}, "shape"),
    ({"sku": "S", "region": "north", "rows": [{"bin": "N-01", "count": 1.0}]}, "shape"),
    ({"sku": "S", "region": "north", "rows": [{"bin": 7, "count": 1}]}, "shape"),
    ({"sku": "S", "region": "north", "rows": []}, "empty"),
    ({"sku": "S", "region": "north", "rows": [_row()] * (spec.MAX_ROWS + 1)}, "too_big"),
    ({"sku": "S", "region": "north", "rows": [_row(), _row(-1)]}, "range"),
]


@pytest.mark.parametrize(
    "value, reason", RESULT_TABLE, ids=[f"{r or 'valid'}-{i}" for i, (_, r) in enumerate(RESULT_TABLE)]
)
def test_validate_result_double_follows_the_spec_table(solution, value, reason):
    module, _ = solution
    assert _double("validate_result", module)(random.choice(spec.TOOL_NAMES), value) == reason


@pytest.mark.parametrize("seed", range(4))
def test_doubles_agree_with_the_reference_over_every_case_kind(solution, seed):
    module, _ = solution
    rng = random.Random(seed)
    check_args, check_result = _double("validate_args", module), _double("validate_result", module)
    for kind in cases.DEFECT_KINDS:
        for variant in range(6):
            tool, args, reason = cases.single_defect(rng, kind, variant)
            assert check_args(tool, args) == module.validate_args(tool, args) == reason
    for kind in cases.BAD_RESULT_KINDS:
        for variant in range(6):
            value, reason = cases.bad_result(rng, kind, variant)
            assert check_result("stock_lookup", value) == module.validate_result("stock_lookup", value) == reason


def test_cache_key_double_keeps_types_apart_and_ignores_order():
    key = _double("cache_key", None)
    assert key("stock_lookup", {"a": 1, "b": "x"}) == key("stock_lookup", {"b": "x", "a": 1})
    distinct = [key("stock_lookup", {"limit": v}) for v in (2, "2", 2.0, True, 1, None, "None", [2], (2,))]
    assert len(set(distinct)) == len(distinct)
    assert key("stock_lookup", GOOD) != key("legacy_stock", GOOD)
    assert all(type(k) is str for k in distinct)


def test_call_tool_double_is_the_spec_door(solution):
    module, _ = solution
    door = _double("call_tool", module)
    before = dict(module.CALLS)
    assert door("stock_lookup", {**GOOD, "region": "mars"}) == {
        "ok": False,
        "value": None,
        "error": "args:allowed:region",
    }
    assert door("legacy_stock", {"sku": "SKU-3300", "region": "north", "limit": 1})["error"] == "result:too_big"
    assert door("stock_lookup", {"sku": "SKU-9999", "region": "north", "limit": 1})["error"] == "result:empty"
    first = door("stock_lookup", GOOD)
    assert first == {"ok": True, "value": spec.lookup_result("SKU-1001", "north", 2), "error": ""}
    assert door("stock_lookup", dict(reversed(GOOD.items()))) == first  # from CACHE: no body run
    assert module.CALLS["stock_lookup"] - before["stock_lookup"] == 2
    assert module.CALLS["legacy_stock"] - before["legacy_stock"] == 1
    module.TOOLS["stock_lookup"]["fn"] = lambda **kw: {}["boom"]
    assert door("stock_lookup", {**GOOD, "limit": 1})["error"] == "raised:KeyError"

    def interrupt(**kw):
        raise KeyboardInterrupt

    module.TOOLS["stock_lookup"]["fn"] = interrupt
    with pytest.raises(KeyboardInterrupt):
        door("stock_lookup", {**GOOD, "limit": 3})


def test_call_tool_double_follows_its_script_then_the_door(solution):
    module, _ = solution
    door = _double("call_tool", module, script=[{"error": "args:range:limit"}, None, {"value": {"x": (1,)}}])
    assert door("stock_lookup", GOOD) == {"ok": False, "value": None, "error": "args:range:limit"}
    assert door("stock_lookup", GOOD)["ok"] is True
    assert door("stock_lookup", GOOD) == {"ok": True, "value": {"x": (1,)}, "error": ""}
    assert door("stock_lookup", {**GOOD, "limit": 0})["error"] == "args:range:limit"  # script over: the door


def test_step7_doubles_follow_the_spec():
    can = _double("can_repair", None)
    assert all(can(reason) for reason in spec.REPAIRABLE)
    assert not any(can(r) for r in ("result:empty", "raised:KeyError", "args:missing:sku", "", "result:shape"))
    fix = _double("repair", None)
    state = {"order": {**GOOD, "tool": "legacy_stock"}, "tool": "legacy_stock", "args": dict(GOOD), "errors": []}
    for reason, tool, args in [
        ("args:allowed:region", "legacy_stock", {**GOOD, "region": "central"}),
        ("args:range:limit", "legacy_stock", {**GOOD, "limit": 2}),
        ("result:too_big", "stock_lookup", GOOD),
    ]:
        update = fix({**state, "errors": ["raised:X", reason]})
        assert (update["tool"], update["args"]) == (tool, args) and update["fixes"][0].startswith(reason)
    clamp = fix({**state, "args": {**GOOD, "limit": 99}, "errors": ["args:range:limit"]})
    assert clamp["args"]["limit"] == spec.MAX_ROWS
    named = fix({"order": GOOD, "which": "legacy_stock", "call_args": dict(GOOD), "errors": ["result:too_big"]})
    assert named["which"] == "stock_lookup" and named["call_args"] == GOOD
    assert state["args"] == GOOD  # the state given is never changed


def test_handle_and_run_naive_doubles_give_their_results_in_order_fresh_each_time():
    handle = _double("handle", None, results=[{"ok": True, "rows": [1]}, {"ok": False}])
    first = handle({})
    first["rows"].append(2)  # the caller's change stays with the caller
    assert handle({}) == {"ok": False} and handle({}) == {"ok": False}
    again = _double("run_naive", None, results=[{"ok": True, "rows": [1]}])
    assert again({}) == {"ok": True, "rows": [1]} == again({})


def test_when_answers_exact_calls_for_every_kind():
    can = _double("can_repair", None, when=[[["args:missing:sku"], True]])
    assert can("args:missing:sku") is True and can("args:missing:region") is False


# --------------------------------------------------------------------------- the operation


def test_the_op_installs_records_and_undoes_itself(solution):
    module, ctx = solution
    real_validate, real_code = module.validate_args, module.validate_args.__code__
    ops = [
        double_op("validate_args", refuse=[["stock_lookup", GOOD, "range:limit"]]),
        call_op("call_tool", "stock_lookup", GOOD),
        call_op("call_tool", "stock_lookup", {**GOOD, "limit": 3}),
    ]
    obs = run_probe(module, call_probe(ops, spies=TOOL_SPIES_ORIGINAL).to_json(), ctx)
    refused = obs["records"][1]
    assert refused["value"]["error"] == "args:range:limit" and refused["spy_runs"]["stock_lookup"] == 0
    assert obs["records"][2]["value"]["ok"] is True
    assert obs["double_seen"]["validate_args"] == [
        {"args": ["stock_lookup", GOOD], "returned": "range:limit"},
        {"args": ["stock_lookup", {**GOOD, "limit": 3}], "returned": ""},
    ]
    assert module.validate_args is real_validate and real_validate.__code__ is real_code
    assert module.validate_args("stock_lookup", GOOD) == ""


def test_the_op_undoes_itself_when_learner_code_raises_and_for_a_missing_name(solution):
    module, ctx = solution
    real = module.call_tool
    ops = [double_op("call_tool"), double_op("no_such_name", "cache_key"), call_op("handle", None)]
    obs = run_probe(module, call_probe(ops).to_json(), ctx)
    assert "raised" in obs["records"][2]
    assert module.call_tool is real and not hasattr(module, "no_such_name")
    assert "double_seen" not in run_probe(module, call_probe([call_op("cache_key", "t", {})]).to_json(), ctx)


def test_a_reference_saved_at_import_reaches_the_double(solution):
    module, ctx = solution
    saved = module.validate_args
    module.call_tool.__globals__["_saved_check"] = saved
    ops = [
        double_op("validate_args", refuse=[["stock_lookup", GOOD, "extra:x"]]),
        {"op": "call", "fn": "_saved_check", "args": encode(["stock_lookup", GOOD])},
    ]
    obs = run_probe(module, call_probe(ops).to_json(), ctx)
    assert obs["records"][1]["value"] == "extra:x"
    assert saved("stock_lookup", GOOD) == ""


def test_an_unknown_kind_is_a_setup_error(solution):
    module, ctx = solution
    obs = run_probe(module, call_probe([double_op("validate_args", "no_such_kind")]).to_json(), ctx)
    assert "no_such_kind" in obs["setup_error"]


def test_the_double_offers_nothing_but_a_call():
    seen: list = []
    double = make_double("validate_result", types.SimpleNamespace(TOOLS={}), {}, seen)
    assert double.__dict__ == {} and not hasattr(double, "__wrapped__")
    assert double.__defaults__ is None and double.__kwdefaults__ is None
    # What learner code does with a recorded argument afterwards does not change the record.
    double_args = {"sku": "S"}
    make_double("cache_key", None, {}, seen)("t", double_args)
    double_args["sku"] = "changed"
    assert seen[-1]["args"] == ["t", {"sku": "S"}]


def test_extension_modules_are_merged_and_a_kind_twice_is_an_error(monkeypatch):
    fake = types.SimpleNamespace(DOUBLES={"validate_args": doubles.cache_key_double})
    monkeypatch.setattr(doubles.pkgutil, "iter_modules", lambda path: [types.SimpleNamespace(name="doubles_fake")])
    real_import = doubles.importlib.import_module
    monkeypatch.setattr(
        doubles.importlib, "import_module", lambda name: fake if name.endswith("doubles_fake") else real_import(name)
    )
    with pytest.raises(RuntimeError, match="defined twice"):
        doubles._merge_extensions()
    fake.DOUBLES = {"grader_test_kind": doubles.cache_key_double}
    try:
        doubles._merge_extensions()
        assert DOUBLES["grader_test_kind"] is doubles.cache_key_double
    finally:
        DOUBLES.pop("grader_test_kind", None)


def test_the_spec_contract_keeps_a_step1_slip_of_the_table_out_and_takes_the_graders_changes(solution):
    module, _ = solution
    module.TOOLS["stock_lookup"]["args"]["limit"]["max"] = 4  # a step-1 slip in the module's table
    module.TOOLS["stock_lookup"]["args"]["region"]["allowed"] = ["north"]
    own, spec_view = _double("validate_args", module), _double("validate_args", module, contract="spec")
    args = {**GOOD, "region": "central", "limit": 5}
    assert own("stock_lookup", args) == "allowed:region" and spec_view("stock_lookup", args) == ""
    changed = _double("validate_args", module, contract="spec", changes=[["stock_lookup", "args", "limit", "max", 2]])
    assert changed("stock_lookup", {**GOOD, "limit": 3}) == "range:limit" and changed("legacy_stock", args) == ""
    door = _double("call_tool", module, contract="spec")
    assert door("stock_lookup", args)["ok"] is True  # the module's own tool function ran
    assert door("no_such_tool", GOOD)["error"] == "args:unknown_tool"
