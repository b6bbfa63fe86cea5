"""The child side: type-strict encoding, probes that restore what they change, judges that never raise."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from defects.harness import Context, grade_in_process

from grader.checks.registry import CHECKS, Verdict, check_rng, checks_for
from grader.engine.encode import ExplodingArgument, decode, encode, show, strict_equal
from grader.engine.probes import run_probe
from grader.engine.report_files import resolve_report_files

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "solutions" / "tools.py"

checks_for()


# --------------------------------------------------------------------------- encode


class AlwaysEqual:
    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


class Region(str):
    pass


@pytest.mark.parametrize(
    "value, plain",
    [
        (AlwaysEqual(), "north"),
        (Region("north"), "north"),
        (True, 1),
        (False, 0),
        (1.0, 1),
        ((1,), [1]),
        ({1: "a"}, {"1": "a"}),
        ({"$type": "str", "$repr": "'x'"}, "x"),
    ],
    ids=[
        "always-equal",
        "str-subclass",
        "true-for-1",
        "false-for-0",
        "float-for-int",
        "tuple-for-list",
        "int-key",
        "dict-shaped-like-a-tag",
    ],
)
def test_look_alikes_never_equal_the_plain_value(value, plain):
    assert not strict_equal(encode(value), encode(plain))
    assert strict_equal(encode(plain), encode(plain))


def test_bool_and_int_survive_a_json_round_trip():
    import json

    data = json.loads(json.dumps(encode([True, 1, False, 0])))
    assert [type(x) for x in data] == [bool, int, bool, int]
    assert not strict_equal(data[0], 1) and strict_equal(data[1], 1)


def test_tuples_sets_and_types_are_tagged_and_decode_back():
    value = (1, frozenset({"a", "b"}), {"k": int}, [None])
    encoded = encode(value)
    assert encoded["$tuple"][1] == {"$set": ["a", "b"], "$kind": "frozenset"}
    assert encoded["$tuple"][2] == {"k": {"$class": "builtins.int"}}
    assert decode(encoded) == value


def test_self_reference_and_size_are_bounded():
    loop: list = []
    loop.append(loop)
    assert encode(loop) == [{"$cut": "contains itself"}]
    big = encode(list(range(10_000)))
    assert len(big) == 201 and big[-1] == {"$more": 9_800}
    long = encode("x" * 100_000)
    assert long["$type"] == "str" and long["$len"] == 100_000


def test_a_failing_repr_is_recorded_not_raised():
    class Boom:
        def __repr__(self):
            raise ValueError("no")

    assert encode(Boom())["$repr"] == "<repr raised ValueError>"


def test_exploding_argument_travels_as_a_tag_and_explodes_in_the_child():
    encoded = encode([ExplodingArgument()])
    assert encoded == [{"$case": "exploding"}]
    arg = decode(encoded)[0]
    for action in (lambda: arg == "x", lambda: hash(arg), lambda: str(arg), lambda: arg < 1):
        with pytest.raises(RuntimeError):
            action()


def test_show_writes_python_like_text():
    assert show(encode({"a": (1, "b"), "c": Region("x")})) == "{'a': (1, 'b'), 'c': 'x' (a Region, not a plain value)}"


# --------------------------------------------------------------------------- run_probe


@pytest.fixture
def solution(tmp_path):
    target = tmp_path / "agtool" / "tools.py"
    target.parent.mkdir()
    target.write_text(SOLUTION.read_text(encoding="utf-8"), encoding="utf-8")
    ctx = Context(tmp_path, target)
    return ctx.fresh_module(), ctx


def _calls(operations, **params):
    return {"kind": "calls", "params": {"operations": operations, **params}}


def test_learner_exceptions_are_data_and_base_exceptions_escape(solution):
    module, ctx = solution
    obs = run_probe(module, _calls([{"op": "call", "fn": "can_repair", "args": [[1]]}]), ctx)
    assert obs["records"][0]["raised"] == "TypeError"
    module.handle = lambda order: (_ for _ in ()).throw(SystemExit(3))
    with pytest.raises(SystemExit):
        run_probe(module, _calls([{"op": "call", "fn": "handle", "args": [{}]}]), ctx)


_LOOKUP = {
    "op": "call",
    "fn": "call_tool",
    "args": ["stock_lookup", {"sku": "SKU-1001", "region": "north", "limit": 2}],
}


@pytest.mark.parametrize("exc", ["KeyboardInterrupt", "SystemExit"])
def test_a_spy_interrupt_that_passes_through_call_tool_is_a_record(solution, exc):
    module, ctx = solution
    obs = run_probe(module, _calls([_LOOKUP], spies={"stock_lookup": {"mode": "raise", "exc": exc}}), ctx)
    assert obs["records"][0]["passed_through"] == exc and obs["records"][0]["spy_runs"]["stock_lookup"] == 1
    real = module.call_tool

    def catches_all(name, args):  # the BaseException mistake: the interrupt comes back as a value
        try:
            return module.TOOLS[name]["fn"](**args)
        except BaseException as caught:
            return {"ok": False, "value": None, "error": "raised:" + type(caught).__name__}

    module.call_tool = catches_all
    obs = run_probe(module, _calls([_LOOKUP], spies={"stock_lookup": {"mode": "raise", "exc": exc}}), ctx)
    assert obs["records"][0]["value"]["error"] == "raised:" + exc
    module.call_tool = real


def test_an_interrupt_the_spy_did_not_raise_still_escapes(solution):
    module, ctx = solution

    def replaces_it(name, args):  # catches the spy's interrupt and raises one of its own
        try:
            return module.TOOLS[name]["fn"](**args)
        except KeyboardInterrupt:
            raise KeyboardInterrupt("not the grader's") from None

    module.call_tool = replaces_it
    with pytest.raises(KeyboardInterrupt):
        run_probe(module, _calls([_LOOKUP], spies={"stock_lookup": {"mode": "raise", "exc": "KeyboardInterrupt"}}), ctx)
    assert module.TOOLS["stock_lookup"]["fn"] is module.stock_lookup  # restored all the same


def test_args_after_records_what_the_call_left_in_its_arguments(solution):
    module, ctx = solution
    order = {"sku": "SKU-1001", "region": "north", "limit": 2}
    step = {"op": "call", "fn": "pick", "args": [{"order": order}], "args_after": True}
    assert run_probe(module, _calls([step]), ctx)["records"][0]["args_after"] == [{"order": order}]
    module.pick = lambda state: state["order"].setdefault("tool", "stock_lookup")
    record = run_probe(module, _calls([step]), ctx)["records"][0]
    assert record["args_after"] == [{"order": {**order, "tool": "stock_lookup"}}]
    assert "args_after" not in run_probe(module, _calls([dict(step, args_after=False)]), ctx)["records"][0]


def test_every_route_spies_act_in_the_module_function_too(solution):
    module, ctx = solution
    lookup = module.stock_lookup
    module.call_tool = lambda name, args: vars(module)[name](**args)  # around TOOLS
    value = {"sku": "SKU-1001", "region": "north", "rows": [{"bin": "Z-1", "count": 7}]}
    plain = {"stock_lookup": {"mode": "return", "value": value}}
    everywhere = {"stock_lookup": {"mode": "return", "value": value, "every_route": True}}
    assert run_probe(module, _calls([_LOOKUP], spies=plain), ctx)["records"][0]["value"]["rows"] != value["rows"]
    obs = run_probe(module, _calls([_LOOKUP], spies=everywhere), ctx)
    assert obs["records"][0]["value"] == value and obs["records"][0]["spy_runs"]["stock_lookup"] == 1
    assert obs["spy_seen"]["stock_lookup"] == [{"positional": [], "kwargs": _LOOKUP["args"][1]}]
    raising = {"stock_lookup": {"mode": "raise", "exc": "LookupError", "every_route": True}}
    assert run_probe(module, _calls([_LOOKUP], spies=raising), ctx)["records"][0]["raised"] == "LookupError"
    saved = lookup  # a reference saved at import: the function object itself acts too
    module.call_tool = lambda name, args: saved(**args)
    assert run_probe(module, _calls([_LOOKUP], spies=everywhere), ctx)["records"][0]["value"] == value
    assert module.stock_lookup is lookup and lookup(**_LOOKUP["args"][1])["rows"][0]["bin"] == "N-01"


def test_spies_contract_changes_and_sets_are_undone(solution):
    module, ctx = solution
    original = module.TOOLS["stock_lookup"]["fn"]
    args = {"sku": "SKU-1001", "region": "north", "limit": 2}
    probe = _calls(
        [
            {"op": "set", "name": "MAX_ATTEMPTS", "value": 1},
            {"op": "contract", "path": ["stock_lookup", "args", "limit", "max"], "value": 1},
            {
                "op": "contract",
                "path": ["stock_lookup", "args", "note"],
                "value": {"type": {"$class": "builtins.str"}, "required": False},
            },
            {"op": "add_tool", "name": "extra", "like": "stock_lookup"},
            {"op": "call", "fn": "call_tool", "args": ["stock_lookup", args]},
        ],
        spies={"stock_lookup": {"mode": "raise", "exc": {"custom": "Down"}}},
    )
    obs = run_probe(module, probe, ctx)
    assert obs["records"][-1]["value"]["error"] == "args:range:limit"
    assert module.MAX_ATTEMPTS == 3
    assert module.TOOLS["stock_lookup"]["fn"] is original
    assert module.TOOLS["stock_lookup"]["args"]["limit"]["max"] == 5
    assert "note" not in module.TOOLS["stock_lookup"]["args"] and "extra" not in module.TOOLS


def test_spy_modes_count_runs_and_report_how_they_were_called(solution):
    module, ctx = solution
    args = {"limit": 2, "sku": "SKU-1001", "region": "north"}
    step = {"op": "call", "fn": "call_tool", "args": ["stock_lookup", args]}
    obs = run_probe(module, _calls([step, step], spies={"stock_lookup": {"mode": "table"}}), ctx)
    assert [r["spy_runs"]["stock_lookup"] for r in obs["records"]] == [1, 1]  # the second one is cached
    assert obs["records"][0]["value"]["value"]["rows"] == [{"bin": "N-01", "count": 12}, {"bin": "N-02", "count": 4}]
    assert obs["spy_seen"]["stock_lookup"] == [{"positional": [], "kwargs": args}]
    assert module.CACHE  # the probe's own success stays until the next probe clears it
    obs = run_probe(module, _calls([step], spies={"stock_lookup": {"mode": "raise", "exc": "KeyError"}}), ctx)
    assert obs["records"][0]["value"]["error"] == "raised:KeyError"  # CACHE was cleared first


def test_missing_tools_entry_is_a_setup_error(solution):
    module, ctx = solution
    module.TOOLS = {}
    obs = run_probe(module, _calls([], spies={"stock_lookup": {"mode": "original"}}), ctx)
    assert "setup_error" in obs


def test_report_probe_reads_both_files_from_a_scratch_folder(solution):
    module, ctx = solution
    obs = run_probe(module, _calls([{"op": "report", "folder": "scratch"}]), ctx)
    assert "files" not in obs["records"][0]  # the step child only says where: the fork server reads
    files = resolve_report_files(obs, ctx.scratch)["records"][0]["files"]
    assert files["json_exists"] and files["md_exists"]
    assert files["json"] == obs["records"][0]["value"]
    assert "## How failure was handled as a path" in files["md"]


def test_a_check_observes_the_same_alone_or_after_the_others(solution):
    """Probes reset what they depend on: an observation does not depend on what ran before."""
    module, ctx = solution
    for check_id in ("step5/second_call_cached", "step7/tool_runs_measured", "step8/json_values"):
        probes = CHECKS[check_id].probes(check_rng(11, check_id))
        fresh = [resolve_report_files(run_probe(ctx.fresh_module(), p.to_json(), ctx), ctx.scratch) for p in probes]
        for other in checks_for([CHECKS[check_id].step]):
            for p in other.probes(check_rng(11, other.id)):
                run_probe(module, p.to_json(), ctx)
        after = [resolve_report_files(run_probe(module, p.to_json(), ctx), ctx.scratch) for p in probes]
        assert _without_calls(after) == _without_calls(fresh), check_id


def _without_calls(observations):
    # CALLS totals keep growing with the module (by design); everything else must match.
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("calls", "start")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(observations)


# --------------------------------------------------------------------------- learner code working against the probes

_REFUSED = {
    "op": "call",
    "fn": "call_tool",
    "args": ["stock_lookup", {"sku": "SKU-1001", "region": "mars", "limit": 2}],
}
_BOTH_ORIGINAL = {"stock_lookup": {"mode": "original"}, "legacy_stock": {"mode": "original"}}


def test_spy_counts_survive_learner_code_that_winds_back_every_counter_it_finds(solution):
    module, ctx = solution
    real = module.call_tool

    def call_tool(name, args):  # runs the tool first, then erases the evidence
        fn = module.TOOLS[name]["fn"]
        before = dict(module.CALLS)
        try:
            fn(**args)
        except Exception:
            pass
        for attr in ("runs", "count", "calls", "n"):
            if type(getattr(fn, attr, None)) is int:
                setattr(fn, attr, getattr(fn, attr) - 1)
        if isinstance(getattr(fn, "seen", None), list) and fn.seen:
            fn.seen.pop()
        module.CALLS.clear()
        module.CALLS.update(before)
        return real(name, args)

    module.call_tool = call_tool
    record = run_probe(module, _calls([_REFUSED], spies=_BOTH_ORIGINAL), ctx)["records"][0]
    assert record["value"]["error"] == "args:allowed:region"
    assert record["spy_runs"] == {"stock_lookup": 1, "legacy_stock": 0}


def test_a_body_run_around_tools_is_counted_and_the_module_function_restored(solution):
    module, ctx = solution
    real, lookup = module.call_tool, module.stock_lookup

    def call_tool(name, args):  # globals()[name](**args) before validating
        try:
            vars(module)[name](**args)
        except Exception:
            pass
        return real(name, args)

    module.call_tool = call_tool
    obs = run_probe(module, _calls([_REFUSED], spies=_BOTH_ORIGINAL), ctx)
    record = obs["records"][0]
    assert record["spy_runs"] == {"stock_lookup": 1, "legacy_stock": 0}
    assert record["calls"]["stock_lookup"] == obs["start"]["calls"]["stock_lookup"] + 1
    assert module.stock_lookup is lookup


def test_a_tools_entry_wrapping_the_module_function_counts_one_run(solution):
    module, ctx = solution
    module.TOOLS["stock_lookup"]["fn"] = lambda **kw: module.stock_lookup(**kw)
    step = {
        "op": "call",
        "fn": "call_tool",
        "args": ["stock_lookup", {"sku": "SKU-1001", "region": "north", "limit": 2}],
    }
    record = run_probe(module, _calls([step], spies=_BOTH_ORIGINAL), ctx)["records"][0]
    assert record["value"]["ok"] is True
    assert record["spy_runs"] == {"stock_lookup": 1, "legacy_stock": 0}


def test_a_run_parked_in_another_thread_does_not_hide_a_run_in_this_one(solution):
    import threading

    module, ctx = solution
    real = module.call_tool
    entered, release = threading.Event(), threading.Event()

    class Parked:  # legacy_stock's body compares it with every row: the first comparison waits
        def __eq__(self, other):
            entered.set()
            release.wait(5)
            return False

        __hash__ = object.__hash__

    def call_tool(name, args):
        parked = threading.Thread(target=lambda: vars(module)["legacy_stock"](sku=Parked(), region="north", limit=1))
        parked.start()
        entered.wait(5)
        try:
            vars(module)[name](**args)
        except Exception:
            pass
        release.set()
        parked.join()
        return real(name, args)

    module.call_tool = call_tool
    record = run_probe(module, _calls([_REFUSED], spies=_BOTH_ORIGINAL), ctx)["records"][0]
    assert record["spy_runs"] == {"stock_lookup": 1, "legacy_stock": 1}


@pytest.mark.parametrize("check_id", ["step3/blocked_before_call", "step3/unknown_tool", "step2/never_runs_body"])
def test_refused_call_checks_also_watch_calls(check_id):
    """A body no spy saw (a function saved at import) still moves CALLS, and that fails the check."""
    check = CHECKS[check_id]
    probes = check.probes(check_rng(3, check_id))
    steps = probes[0].params["operations"]
    zero = {"stock_lookup": 0, "legacy_stock": 0}

    def observation(moved_from: int) -> dict:
        records = []
        for i, st in enumerate(steps):
            value = (
                {"ok": False, "value": None, "error": "args:unknown_tool"}
                if st.get("args", [""])[0] not in zero
                else ""
            )
            records.append(
                {
                    "value": value,
                    "spy_runs": dict(zero),
                    "calls": {"stock_lookup": int(i >= moved_from), "legacy_stock": 0},
                }
            )
        return {"start": {"spy_runs": dict(zero), "calls": dict(zero)}, "records": records}

    assert check.judge(probes, [observation(len(steps))]).passed
    verdict = check.judge(probes, [observation(len(steps) - 1)])
    assert not verdict.passed and "CALLS" in verdict.message + verdict.got


def test_report_files_are_read_where_patches_of_learner_code_do_not_reach(solution, monkeypatch):
    """The step child names the folder; the fork server, another process, reads it."""
    import builtins
    import io
    import json
    import os
    import sys
    import types

    module, ctx = solution
    forged = {"forged": True}
    real_open = builtins.open

    def forging_open(file, *args, **kwargs):
        if str(file).endswith("tool_report.json") and "w" not in (args[0] if args else kwargs.get("mode", "r")):
            return io.StringIO(json.dumps(forged))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(json, "loads", lambda *a, **k: forged)
    monkeypatch.setattr(json, "load", lambda *a, **k: forged)
    monkeypatch.setattr(json.decoder.JSONDecoder, "decode", lambda self, *a, **k: forged)
    monkeypatch.setitem(sys.modules, "json", types.SimpleNamespace(loads=json.loads, load=json.load))
    monkeypatch.setattr(builtins, "open", forging_open)
    monkeypatch.setattr(os.path, "isfile", lambda path: False)
    obs = run_probe(module, _calls([{"op": "report", "folder": "scratch"}]), ctx)
    monkeypatch.undo()  # the fork server's process: none of the step child's patches are there
    record = resolve_report_files(obs, ctx.scratch)["records"][0]
    files = record["files"]
    assert files["json_exists"] and files["md_exists"]
    assert files["json"] == record["value"] and "forged" not in files["json"]


def test_report_places_outside_scratch_or_through_links_are_refused(tmp_path):
    scratch = tmp_path / "scratch"
    (scratch / "real").mkdir(parents=True)
    (scratch / "real" / "tool_report.json").write_text('{"a": 1}')
    (scratch / "real" / "tool_report.md").symlink_to("/etc/hostname")
    (scratch / "linked").symlink_to(scratch / "real")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "tool_report.json").write_text('{"a": 1}')
    obs = {
        "records": [
            {"files_at": str(scratch / "real")},
            {"files_at": str(scratch / "linked")},
            {"files_at": str(outside)},
            {"cwd_files_at": str(scratch / "real" / "..")},
        ]
    }
    real, linked, away, dotted = resolve_report_files(obs, str(scratch))["records"]
    assert real["files"]["json"] == {"a": 1} and "symbolic link" in real["files"]["md_error"]
    assert "json" not in real["files"] or real["files"]["md_exists"]
    for refused in (linked["files"], away["files"]):
        assert refused["refused"] and not refused["json_exists"]
    assert dotted["cwd_files"]["json_exists"] is False and "refused" not in dotted["cwd_files"]


def test_a_step_child_cannot_make_the_server_read_more_than_a_few_places(tmp_path):
    from grader.engine.report_files import MAX_PLACES

    obs = {"records": [{"files_at": str(tmp_path)} for _ in range(MAX_PLACES + 3)]}
    files = [r["files"] for r in resolve_report_files(obs, str(tmp_path))["records"]]
    assert sum("refused" in f for f in files) == 3


def test_files_a_step_child_claims_to_have_read_are_dropped(tmp_path):
    forged = {"json_exists": True, "md_exists": True, "json": {"attempts": 2}, "md": "# Report"}
    obs = {
        "records": [
            {"files": dict(forged)},
            {"files": dict(forged), "cwd_files": dict(forged), "files_at": str(tmp_path)},
        ]
    }
    first, second = resolve_report_files(obs, str(tmp_path))["records"]
    assert "files" not in first and second["files"] == {"json_exists": False, "md_exists": False}
    assert "cwd_files" not in second


def test_a_report_folder_someone_else_made_is_never_used(tmp_path, monkeypatch):
    import itertools
    import os

    from grader.engine import probes

    monkeypatch.setattr(probes, "_folder_numbers", itertools.count(1))
    planted = tmp_path / f"grader_report_{os.getpid()}_1"
    planted.mkdir()
    (planted / "tool_report.json").write_text("{}")
    folder = probes._new_folder(str(tmp_path))
    assert folder == str(tmp_path / f"grader_report_{os.getpid()}_2") and os.listdir(folder) == []


def test_set_order_does_not_depend_on_the_shared_json_module(monkeypatch):
    import json

    items = {f"k{i:02d}" for i in range(12)}
    monkeypatch.setattr(json, "dumps", lambda *a, **k: "same for everything")
    assert encode(items)["$set"] == sorted(items)


# --------------------------------------------------------------------------- judges


GARBAGE = [
    {},
    {"raised": "NotImplementedError", "message": "step 9"},
    {"setup_error": "no TOOLS"},
    {"records": "nope"},
    {"nodes": "pick", "edges": None},
    {"final": {"errors": {"$type": "Weird", "$repr": "w"}}},
    {"not_dict": True, "value": None},
]


def _garbage_records(probes):
    odd = {
        "value": {"$type": "AlwaysEqual", "$repr": "<x>"},
        "spy_runs": {"stock_lookup": "1"},
        "calls": None,
        "files": {"json_exists": True, "md_exists": True, "json": [1], "md": 7},
    }
    return [
        {"start": {"calls": "x", "spy_runs": {}}, "records": [dict(odd) for _ in p.params.get("operations", [])]}
        for p in probes
    ]


@pytest.mark.parametrize("check_id", sorted(CHECKS))
def test_judges_fail_cleanly_on_odd_observations(check_id):
    check = CHECKS[check_id]
    probes = check.probes(check_rng(1, check_id))
    for obs in GARBAGE:
        verdict = check.judge(probes, [obs] * len(probes))
        assert isinstance(verdict, Verdict) and not verdict.passed, (check_id, obs)
        assert verdict.message
    verdict = check.judge(probes, _garbage_records(probes))
    assert isinstance(verdict, Verdict) and not verdict.passed


def test_in_process_harness_agrees_with_the_spec_on_the_solution():
    verdicts = grade_in_process(SOLUTION, steps=[1, 2, 3], seed=random.Random(0).randint(0, 999))
    assert all(v.passed for v in verdicts.values()), {k: v.message for k, v in verdicts.items() if not v.passed}


# --------------------------------------------------------------------------- body-run trace


def _saved_reference_module():
    import types

    from grader.engine.instrument import compile_instrumented

    module = types.ModuleType("saved_refs")
    # Compiled as the step child compiles a submission: every function carries the run counter the probe watches.
    exec(
        compile_instrumented(
            "CALLS = {'t': 0}\n"
            "def t(x):\n    CALLS['t'] += 1\n    return x\n"
            "TOOLS = {'t': {'fn': t}}\n"
            "_SAVED = TOOLS['t']['fn']\n"
            "def sneaky(x):\n    before = dict(CALLS)\n    _SAVED(x)\n    CALLS.update(before)\n    return 'blocked'\n",
            "<saved_refs>",
        ),
        module.__dict__,
    )
    return module


def test_a_tool_run_through_a_reference_saved_at_import_is_counted_and_traced():
    module, traced = _saved_reference_module(), []
    ctx = type("Ctx", (), {"trace_run": staticmethod(traced.append)})()
    original_code = module.t.__code__
    obs = run_probe(
        module,
        {
            "kind": "calls",
            "params": {
                "spies": {"t": {"mode": "original"}},
                "operations": [{"op": "call", "fn": "sneaky", "args": [1]}],
            },
        },
        ctx,
    )
    assert obs["records"][0]["spy_runs"] == {"t": 1}  # neither the TOOLS spy nor the module name saw it
    assert traced == ["t"]  # and the run went to the trace the moment it began
    assert module.t.__code__ is original_code and module.t(2) == 2  # the function is restored after the probe


def test_the_fork_server_refuses_an_observation_that_hides_a_traced_run():
    from grader.engine.protocol import TRACE_MISMATCH
    from grader.engine.step_lines import StepLines

    child = StepLines()  # only the message bookkeeping, no process
    child.nonce, child.n_probes, child.messages, child.channel_errors = "n", 2, [], []
    child._last_type, child._next_index, child._runs = "imported", 0, {}
    obs = {"start": {"spy_runs": {"t": 0}}, "records": [{"spy_runs": {"t": 0}}]}
    for line in (
        {"type": "run", "tool": "t", "nonce": "n"},
        {"type": "obs", "index": 0, "obs": dict(obs), "nonce": "n"},
        {"type": "obs", "index": 1, "obs": dict(obs), "nonce": "n"},
    ):
        child.accept(json.dumps(line).encode())
    assert child.messages[0]["obs"]["probe_error"] == TRACE_MISMATCH  # the run was wound back
    assert child.messages[1]["obs"] == obs  # the next probe ran nothing: untouched
