"""Step 7 checks: read the reason, fix, try again (``can_repair``, ``repair``, ``handle``)."""
from __future__ import annotations

import random

from grader import cases
from grader.checks._common import (TOOL_SPIES_ORIGINAL, Fail, add, call_probe, calls_delta, expectations_judge,
                                   op, records_of, step)
from grader.checks.step6 import (check_answer_mentions, expect_field, judge_nodes, judge_reducers,
                                 reducer_probes, result_of)
from grader.encode import encode, show
from grader.registry import Probe, Verdict

HANDLE_KEYS = ("ok", "answer", "rows", "errors", "calls", "fixes", "attempts", "tool_runs")
SPEC_REPAIR_ORDER = {"sku": "SKU-1001", "region": "mars", "limit": 2}
SPEC_EMPTY_ORDER = {"sku": "SKU-9999", "region": "north", "limit": 2}


def _constants_probes(rng: random.Random) -> list[Probe]:
    steps = [dict(op("attr", name=n), expect=encode(v), label=n)
             for n, v in (("MAX_ATTEMPTS", cases.MAX_ATTEMPTS), ("FALLBACK_REGION", cases.FALLBACK_REGION))]
    return [call_probe(steps, fresh=True)]


add("step7/constants", 1, "MAX_ATTEMPTS is 3 and FALLBACK_REGION is 'central'",
    "Two module-level names with exactly these values (an int and a str).",
    ["7.constants"], _constants_probes,
    expectations_judge("This module-level name does not have the value the spec gives."))


def _can_repair_probes(rng: random.Random) -> list[Probe]:
    reasons = [(r, True) for r in cases.REPAIRABLE]
    reasons += [("result:empty", False), ("raised:" + rng.choice(cases.EXCEPTION_TYPES), False),
                ("raised:" + rng.choice(cases.CUSTOM_EXCEPTION_NAMES), False)]
    rng.shuffle(reasons)
    return [call_probe([step("can_repair", r, expect=want) for r, want in reasons])]


add("step7/can_repair_table", 2, "can_repair: True for the three repairable reasons, False for empty and raised",
    "Repairable: args:allowed:region, args:range:limit, result:too_big. Asking again after result:empty or "
    "raised:... gives the same failure, so those are not. Return a bool.",
    ["7.repairable", "7.not_repairable"], _can_repair_probes,
    expectations_judge("can_repair gave the wrong answer (a bool) for this reason."))


# --------------------------------------------------------------------------- handle runs


def _handle_probe(order: dict, spies: "dict | None" = None, *, sets: "dict | None" = None,
                  note: str = "", **expect: object) -> Probe:
    steps = [op("set", name=k, value=v) for k, v in (sets or {}).items()]
    st = step("handle", order)
    notes = [f"with {k} = {v!r}" for k, v in (sets or {}).items()] + ([note] if note else [])
    if notes:
        st["label"] += "  # " + ", ".join(notes)
    steps.append(st)
    return call_probe(steps, spies=spies if spies is not None else TOOL_SPIES_ORIGINAL, expect_handle=expect)


def _spy_total(rec: dict) -> int:
    return sum(n for n in rec.get("spy_runs", {}).values() if type(n) is int)


def judge_handle(probes: list, observations: list) -> Verdict:
    """Judge every ``handle`` record against its probe's ``expect_handle`` (plain values)."""
    for probe, obs in zip(probes, observations):
        records = records_of(probe, obs)
        st, rec = probe.params["steps"][-1], records[-1]
        start = records[-2] if len(records) > 1 else obs["start"]
        value = result_of(rec, st, HANDLE_KEYS, "handle")
        want = probe.params["expect_handle"]
        for key in ("ok", "attempts", "errors", "rows"):
            if key in want:
                expect_field(value, key, want[key], st, _MESSAGES[key])
        if "n_fixes" in want:
            fixes = value.get("fixes")
            if not isinstance(fixes, list) or len(fixes) != want["n_fixes"]:
                raise Fail("repair appends one description to fixes per repair made.", call=st["label"],
                           expected=f"{want['n_fixes']} fix(es)", got=f"fixes == {show(fixes)}")
        if "answer_has" in want:
            check_answer_mentions(value, [want["answer_has"]], st, "The answer must name the last reason.")
        if "last_tool" in want:
            calls = value.get("calls")
            last = calls[-1] if isinstance(calls, list) and calls else None
            if not isinstance(last, dict) or last.get("tool") != want["last_tool"]:
                raise Fail("After result:too_big the retry must use stock_lookup.", call=st["label"],
                           expected=f"calls[-1]['tool'] == {want['last_tool']!r}", got=show(last))
        if "tool_runs" in want and not (type(value.get("tool_runs")) is int and value["tool_runs"] == want["tool_runs"]):
            raise Fail("tool_runs counts the tool bodies that ran during this handle.", call=st["label"],
                       expected=f"tool_runs == {want['tool_runs']}", got=f"tool_runs == {show(value.get('tool_runs'))}")
        if want.get("tool_runs_spied"):
            runs = _spy_total(rec) - _spy_total(start)
            if value.get("tool_runs") != runs or type(value.get("tool_runs")) is not int:
                raise Fail("tool_runs must be how many tool bodies ran during this handle (CALLS after minus "
                           "before).", call=st["label"], expected=f"tool_runs == {runs}",
                           got=f"tool_runs == {show(value.get('tool_runs'))}")
    return Verdict.ok()


_MESSAGES = {
    "ok": "handle did not end as it should for this order.",
    "attempts": "attempts counts the fetches made (one per call_tool).",
    "errors": "errors holds each failed call's reason, in order.",
    "rows": "rows must be the rows of the successful retry.",
}


def _region_probes(rng: random.Random) -> list[Probe]:
    probes = [_handle_probe(SPEC_REPAIR_ORDER, ok=True, n_fixes=1, attempts=2, tool_runs=1, tool_runs_spied=True,
                            errors=["args:allowed:region"],
                            rows=cases.rows_for("SKU-1001", cases.FALLBACK_REGION, 2))]
    order = cases.repairable_region_order(rng)
    probes.append(_handle_probe(order, ok=True, n_fixes=1, attempts=2, tool_runs_spied=True,
                                errors=["args:allowed:region"],
                                rows=cases.rows_for(order["sku"], cases.FALLBACK_REGION, order["limit"])))
    return probes


add("step7/repair_region", 3, "A wrong region is repaired to FALLBACK_REGION: ok after one fix, 2 attempts",
    "After args:allowed:region, repair sets the region to FALLBACK_REGION, appends a description to fixes, "
    "and the graph goes back to fetch.",
    ["7.fixes", "7.repair_node", "7.examples", "7.tool_runs"], _region_probes, judge_handle)


def _limit_probes(rng: random.Random) -> list[Probe]:
    probes = []
    # A high limit goes to SKU-3300 in north (7 rows), so the clamped value shows in the rows.
    for limit in (rng.choice([0, -1, rng.randint(-20, -2)]), rng.randint(cases.MAX_ROWS + 1, 99)):
        sku, region = rng.choice(cases.stocked_pairs()) if limit < 1 else ("SKU-3300", "north")
        want = cases.rows_for(sku, region, cases.clamp(limit))
        probes.append(_handle_probe(cases.order(sku, region, limit), ok=True, n_fixes=1, attempts=2,
                                    errors=["args:range:limit"], rows=want, tool_runs_spied=True))
    return probes


add("step7/repair_limit", 2, "A limit out of range is clamped into 1..MAX_ROWS and retried",
    "After args:range:limit, repair moves the limit to the nearest allowed value (1 or MAX_ROWS) and the graph "
    "fetches again.",
    ["7.fixes", "7.repair_node"], _limit_probes, judge_handle)


def _too_big_probes(rng: random.Random) -> list[Probe]:
    limit = rng.randint(2, cases.MAX_ROWS)  # above 1, so a fix that also touches the limit shows
    order = cases.order("SKU-3300", "north", limit, "legacy_stock")
    return [_handle_probe(order, ok=True, n_fixes=1, attempts=2, errors=["result:too_big"], last_tool="stock_lookup",
                          rows=cases.rows_for("SKU-3300", "north", limit), tool_runs_spied=True)]


add("step7/repair_too_big", 2, "result:too_big switches the tool to stock_lookup",
    "legacy_stock ignores limit; after result:too_big repair changes the tool to stock_lookup, which honours it.",
    ["7.fixes", "7.repair_node"], _too_big_probes, judge_handle)


def _empty_probes(rng: random.Random) -> list[Probe]:
    order = cases.order(cases.UNKNOWN_SKU, rng.choice(cases.REGIONS), rng.randint(1, cases.MAX_ROWS))
    return [_handle_probe(SPEC_EMPTY_ORDER, ok=False, n_fixes=0, attempts=1, errors=["result:empty"],
                          answer_has="result:empty", tool_runs_spied=True),
            _handle_probe(order, ok=False, n_fixes=0, attempts=1, errors=["result:empty"], answer_has="result:empty")]


add("step7/giveup_empty", 2, "An empty result is not repaired: give up after one attempt, naming result:empty",
    "result:empty is not repairable: asking again gives the same nothing, so go to giveup.",
    ["7.not_repairable", "7.examples", "6.giveup"], _empty_probes, judge_handle)


def _fallback_empty_probes(rng: random.Random) -> list[Probe]:
    order = cases.order("SKU-5000", rng.choice(cases.BAD_REGIONS), rng.randint(1, cases.MAX_ROWS))
    return [_handle_probe(order, ok=False, n_fixes=1, attempts=2, errors=["args:allowed:region", "result:empty"],
                          answer_has="result:empty")]


add("step7/giveup_after_fallback_empty", 2, "A repair that leads to an empty result gives up with the last reason",
    "SKU-5000 has no central stock: the region fix works, the retry is empty, and the answer names the "
    "last reason in errors.",
    ["7.repair_node", "7.not_repairable", "6.giveup"], _fallback_empty_probes, judge_handle)


def _raised_probes(rng: random.Random) -> list[Probe]:
    exc = rng.choice(cases.EXCEPTION_TYPES)
    args = cases.random_valid_args(rng, stocked=True)
    return [_handle_probe(cases.order(args["sku"], args["region"], args["limit"]),
                          {"stock_lookup": {"mode": "raise", "exc": exc}}, note=f"the tool raises {exc}",
                          ok=False, n_fixes=0, attempts=1, errors=[f"raised:{exc}"], answer_has=f"raised:{exc}")]


add("step7/giveup_raised", 1, "A tool that raises is not retried",
    "raised:... is not repairable; the graph gives up after one attempt and the answer names the reason.",
    ["7.not_repairable"], _raised_probes, judge_handle)


def _runtime_probes(rng: random.Random) -> list[Probe]:
    single = cases.repairable_region_order(rng)
    double = dict(single, limit=rng.choice([0, rng.randint(cases.MAX_ROWS + 1, 99)]))
    rows = cases.rows_for(double["sku"], cases.FALLBACK_REGION, cases.clamp(double["limit"]))
    return [
        _handle_probe(single, sets={"MAX_ATTEMPTS": 1}, ok=False, n_fixes=0, attempts=1),
        _handle_probe(double, sets={"MAX_ATTEMPTS": 2}, ok=False, n_fixes=1, attempts=2),
        _handle_probe(double, ok=True, n_fixes=2, attempts=3, rows=rows),
    ]


add("step7/max_attempts_runtime", 2, "The attempt limit is MAX_ATTEMPTS, read when the graph runs",
    "Decide 'repair or give up' in the routing function with the module's MAX_ATTEMPTS looked up at that "
    "moment (fewer than MAX_ATTEMPTS fetches made -> repair).",
    ["7.limit", "7.runtime"], _runtime_probes, judge_handle)


def _shape_probes(rng: random.Random) -> list[Probe]:
    args = cases.random_valid_args(rng, stocked=True)
    return [_handle_probe(cases.order(args["sku"], args["region"], args["limit"])),
            _handle_probe(cases.order(cases.UNKNOWN_SKU, args["region"], args["limit"]))]


_TYPES = {"ok": (bool,), "answer": (str,), "errors": (list,), "calls": (list,), "fixes": (list,),
          "attempts": (int,), "tool_runs": (int,)}


def _shape_judge(probes: list, observations: list) -> Verdict:
    for probe, obs in zip(probes, observations):
        st, rec = probe.params["steps"][-1], records_of(probe, obs)[-1]
        value = result_of(rec, st, HANDLE_KEYS, "handle")
        for key, types in _TYPES.items():
            if type(value[key]) not in types:
                raise Fail(f"handle()['{key}'] must be a {types[0].__name__}.", call=st["label"],
                           expected=types[0].__name__, got=show(value[key]))
        if value["ok"] and type(value["rows"]) is not list:
            raise Fail("handle()['rows'] must be a list on success.", call=st["label"], expected="a list",
                       got=show(value["rows"]))
        for entry in value["calls"]:
            if not isinstance(entry, dict) or "tool" not in entry or "args" not in entry:
                raise Fail("Each calls entry is a dict with at least tool and args.", call=st["label"],
                           expected="{'tool': ..., 'args': ...}", got=show(entry))
    return Verdict.ok()


add("step7/handle_shape", 2, "handle returns ok, answer, rows, errors, calls, fixes, attempts, tool_runs",
    "Return a dict with these eight keys: ok a bool, answer a str, errors/calls/fixes lists, attempts and "
    "tool_runs ints.",
    ["7.handle"], _shape_probes, _shape_judge)


def _tool_runs_probes(rng: random.Random) -> list[Probe]:
    args = cases.random_valid_args(rng, stocked=True)
    order = cases.order(args["sku"], args["region"], args["limit"])
    steps = [step("handle", order), step("handle", order, label=f"handle({order!r})  # the same order again"),
             step("handle", cases.repairable_region_order(rng))]
    return [call_probe(steps, spies=TOOL_SPIES_ORIGINAL)]


def _tool_runs_judge(probes: list, observations: list) -> Verdict:
    probe, obs = probes[0], observations[0]
    records = records_of(probe, obs)
    before_calls, before_spy = obs["start"]["calls"], _spy_total(obs["start"])
    for st, rec in zip(probe.params["steps"], records):
        value = result_of(rec, st, HANDLE_KEYS, "handle")
        delta = calls_delta(before_calls, rec.get("calls"))
        spied = _spy_total(rec) - before_spy
        measured = sum(delta.values()) if delta is not None else None
        if value["tool_runs"] != spied or type(value["tool_runs"]) is not int or measured != spied:
            raise Fail("tool_runs must be the sum of CALLS after the run minus before it (the tool bodies "
                       "that really ran; a cached repeat runs none).", call=st["label"],
                       expected=f"tool_runs == {spied}",
                       got=f"tool_runs == {show(value['tool_runs'])}, CALLS changed by {measured}")
        before_calls, before_spy = rec.get("calls"), _spy_total(rec)
    return Verdict.ok()


add("step7/tool_runs_measured", 2, "tool_runs is the CALLS difference of the run (0 for a cached repeat)",
    "Read sum(CALLS.values()) before and after invoking the graph and report the difference.",
    ["7.tool_runs", "5.lives_long"], _tool_runs_probes, _tool_runs_judge)

add("step7/graph_has_repair", 1, "build_graph() compiles a graph with a repair node besides the naive ones",
    "Add a node named repair and an edge from repair back to fetch.",
    ["7.graph"], lambda rng: [Probe("graph_nodes", {"builder": "build_graph"}, "build_graph().get_graph()")],
    lambda p, o: judge_nodes(p, o, ("pick", "fetch", "repair", "reply", "giveup")))

add("step7/fixes_reducer", 1, "State.fixes appends",
    "Declare fixes as Annotated[list, operator.add] so each repair adds its description.",
    ["7.repair_node"], lambda rng: reducer_probes(rng, ("fixes",)), judge_reducers)
