"""Step 6 checks: failure is a path in a LangGraph graph (``State``, ``build_naive``, ``run_naive``)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from grader import spec
from grader.checks import cases
from grader.checks._common import (
    TOOL_SPIES_ORIGINAL,
    TOOL_SPIES_TABLE,
    Fail,
    add,
    call_op,
    call_probe,
    double_op,
    every_route,
    get_field,
    mentions_number,
    outcome,
    records_of,
    value_of,
)
from grader.checks.registry import Observation, Probe, ProbeFactory, Verdict, shared_rng
from grader.engine.encode import decode, encode, show, strict_equal
from grader.engine.wire import JsonDict

NAIVE_NODES = ("pick", "fetch", "reply", "giveup")
RESULT_KEYS = ("ok", "answer", "rows", "errors", "calls")


# --------------------------------------------------------------------------- reducers (shared with step 7)


def reducer_probes(rng: random.Random, fields: tuple[Any, ...]) -> list[Probe]:
    """A two-node graph over ``State`` adding to each field of ``fields``."""
    word: Callable[[], str] = lambda: (
        f"{rng.choice(['args', 'result', 'raised'])}:{rng.choice(['x', 'y', 'z'])}{rng.randint(0, 99)}"
    )
    initial: JsonDict = {}
    first: JsonDict = {}
    second: JsonDict = {}
    for field in fields:
        if field == "attempts":
            initial[field], first[field], second[field] = rng.randint(0, 2), rng.randint(1, 3), rng.randint(1, 3)
        elif field == "calls":
            initial[field] = [{"tool": "stock_lookup", "args": {"limit": rng.randint(1, 5)}}]
            first[field] = [{"tool": "legacy_stock", "args": {"limit": rng.randint(1, 5)}}]
            second[field] = [{"tool": "stock_lookup", "args": {"limit": rng.randint(6, 9)}}]
        else:
            initial[field], first[field], second[field] = [word()], [word()], [word(), word()]
    params = {"fields": list(fields), "initial": encode(initial), "updates": [encode(first), encode(second)]}
    label = f"StateGraph(State) with two nodes returning {first!r} then {second!r}, invoked with {initial!r}"
    return [Probe("state_reducers", params, label)]


def judge_reducers(probes: list[Probe], observations: list[Observation]) -> Verdict:
    probe, obs = probes[0], observations[0]
    if not isinstance(obs, dict) or "final" not in obs:
        got = (
            outcome(obs)
            if isinstance(obs, dict) and ("raised" in obs or "missing" in obs)
            else f"final state {show(obs.get('final_not_dict')) if isinstance(obs, dict) else '?'}"
        )
        raise Fail(
            f"A small graph over your State did not end with the fields {probe.params['fields']} "
            "(are they declared in State?).",
            call=probe.label,
            expected="a final state dict",
            got=got,
        )
    initial = decode(probe.params["initial"])
    first, second = (decode(u) for u in probe.params["updates"])
    for field in probe.params["fields"]:
        want = initial[field] + first[field] + second[field]
        got = obs["final"].get(field)
        if not strict_equal(got, encode(want)):
            kind = "add the numbers" if field == "attempts" else "append the lists"
            raise Fail(
                f"The reducer of {field!r} should {kind} (e.g. Annotated[..., operator.add]).",
                call=probe.label,
                expected=f"{field} == {want!r}",
                got=f"{field} == {show(got)}",
            )
    return Verdict.ok()


add(
    "step6/state_reducers",
    2,
    "State: errors and calls append, attempts adds",
    "Declare State as a TypedDict whose errors and calls are Annotated[list, operator.add] and attempts "
    "Annotated[int, operator.add]; without a reducer, each node's update replaces the value.",
    ["6.state"],
    lambda rng: reducer_probes(rng, ("errors", "calls", "attempts")),
    judge_reducers,
)


# --------------------------------------------------------------------------- graph shape


def judge_nodes(probes: list[Probe], observations: list[Observation], nodes: tuple[Any, ...]) -> Verdict:
    """The drawn graph has every node of ``nodes``.

    Edges are not required here: a graph routed with ``Command(goto=...)`` is as valid
    as one with conditional edges, and the paths themselves are checked by running orders.
    """
    probe, obs = probes[0], observations[0]
    if not isinstance(obs, dict) or not isinstance(obs.get("nodes"), list):
        raise Fail(
            "Building and drawing the graph failed.",
            call=probe.label,
            expected="a compiled graph",
            got=outcome(obs if isinstance(obs, dict) else {}),
        )
    missing = [n for n in nodes if n not in obs["nodes"]]
    if missing:
        raise Fail(
            f"The graph has no node named {missing[0]!r}.",
            call=probe.label,
            expected=f"nodes including {list(nodes)}",
            got=show(obs["nodes"]),
        )
    return Verdict.ok()


add(
    "step6/naive_graph_nodes",
    1,
    "build_naive() compiles a graph with the nodes pick, fetch, reply, giveup",
    "Add the nodes under exactly these names, an edge pick -> fetch, and a conditional edge from fetch to "
    "reply or giveup; return graph.compile().",
    ["6.nodes"],
    lambda rng: [Probe("graph_nodes", {"builder": "build_naive"}, "build_naive().get_graph()")],
    lambda p, o: judge_nodes(p, o, NAIVE_NODES),
)


# --------------------------------------------------------------------------- run_naive


def result_of(rec: JsonDict, operation: JsonDict, keys: tuple[Any, ...], fn: str) -> JsonDict:
    """The (encoded) result dict of run_naive/handle, with its keys checked."""
    value: JsonDict = value_of(
        rec, operation, f"{fn} must not raise: a failure is a path of the graph, not an exception."
    )
    for key in keys:
        get_field(value, key, operation["label"], f"The dict returned by {fn}")
    return value


# What a list longer than this run's calls most often means: the state of an earlier run came along.
CARRIED_OVER = (
    " It holds more entries than this run made: entries of an earlier run? Each run starts from a new state: a "
    "checkpointer kept across runs under one thread_id (or a module-level list) carries the last run's errors and "
    "calls into the next; compile without one, or give each run its own thread_id."
)


def carried_over(got: object, made: int) -> str:
    """:data:`CARRIED_OVER` when ``got`` is a list longer than the ``made`` entries of this run, else ``""``.

    >>> carried_over(["a", "b"], 1) == CARRIED_OVER, carried_over(["a"], 1)
    (True, '')
    """
    return CARRIED_OVER if isinstance(got, list) and len(got) > made else ""


def expect_field(value: JsonDict, key: str, want: object, operation: JsonDict, message: str) -> None:
    if not strict_equal(value.get(key), encode(want)):
        more = carried_over(value.get(key), len(want)) if isinstance(want, list) and want else ""
        raise Fail(
            message + more,
            call=operation["label"],
            expected=f"{key} == {want!r}",
            got=f"{key} == {show(value.get(key))}",
        )


def check_answer_mentions(value: JsonDict, parts: list[Any], operation: JsonDict, message: str) -> None:
    answer = value.get("answer")
    if type(answer) is not str:
        raise Fail("The answer must be a str.", call=operation["label"], expected="a str", got=show(answer))
    for part in parts:
        if str(part) not in answer:
            raise Fail(
                message, call=operation["label"], expected=f"an answer containing {str(part)!r}", got=repr(answer)
            )


def check_calls_entries(value: JsonDict, tools: list[Any], args: list[Any] | None, operation: JsonDict) -> None:
    calls = value.get("calls")
    if not isinstance(calls, list) or len(calls) != len(tools):
        raise Fail(
            f"calls must hold one entry per call_tool made ({len(tools)} here)." + carried_over(calls, len(tools)),
            call=operation["label"],
            expected=f"{len(tools)} entries",
            got=show(calls),
        )
    for i, (entry, tool) in enumerate(zip(calls, tools)):
        if not isinstance(entry, dict) or not strict_equal(entry.get("tool"), tool) or "args" not in entry:
            raise Fail(
                "Each calls entry is a dict with at least 'tool' (the name called) and 'args'.",
                call=operation["label"],
                expected=f"calls[{i}]['tool'] == {tool!r} and an 'args' key",
                got=show(entry),
            )
        if args is not None and not strict_equal(entry["args"], encode(args[i])):
            raise Fail(
                "calls[i]['args'] must be the arguments passed to call_tool.",
                call=operation["label"],
                expected=show(encode(args[i])),
                got=show(entry["args"]),
            )


def _order_args(order: JsonDict) -> JsonDict:
    return {k: order[k] for k in spec.ARG_NAMES}


# --------------------------------------------------------------------------- the grader's door
#
# Steps 6 and 7 judge the graph, not the door it calls: each run puts the grader's own
# call_tool (LAB_SPEC steps 3-5 over the spec's contract, calling the module's spied tools)
# in the module's name ``call_tool``, so a mistake of steps 2-5 never reaches a graph check.
# A module whose fetch does the door's work itself is judged on that work.

DOOR = "call_tool"


def door_op(**params: object) -> JsonDict:
    """The double op that makes ``call_tool`` the grader's door for the rest of a probe (``script``: see doubles).

    >>> door_op()["double"], door_op(script=[{"error": "x"}])["params"]
    ('call_tool_spec', {'script': [{'error': 'x'}]})
    """
    return double_op(DOOR, "call_tool_spec", **params)


def door_calls(obs: JsonDict) -> list[Any]:
    """The calls the grader's door received in a probe, each ``{"args": [tool, args], "returned": result}``.

    Empty when the module never called ``call_tool`` by that name (it does the door's work itself).

    >>> door_calls({"double_seen": {"call_tool": [{"args": ["t", {}], "returned": {"ok": True}}]}})
    [{'args': ['t', {}], 'returned': {'ok': True}}]
    >>> door_calls({})
    []
    """
    seen = obs.get("double_seen") if isinstance(obs, dict) else None
    calls = seen.get(DOOR) if isinstance(seen, dict) else None
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def door_lines(obs: JsonDict) -> str:
    """Every call_tool call of the probe as text, for the call line of a failure."""
    lines = []
    for call in door_calls(obs):
        args = call.get("args") if isinstance(call.get("args"), list) else []
        what = f"raised {call['raised']}" if "raised" in call else show(call.get("returned"))
        lines.append(f"call_tool({', '.join(show(a) for a in args)}) -> {what}")
    return ("  # call_tool calls: " + "; ".join(lines)) if lines else "  # call_tool was not called by its name"


def door_failure(call: JsonDict) -> str | None:
    """The error a door call returned when it failed, else None."""
    returned = call.get("returned")
    if isinstance(returned, dict) and returned.get("ok") is False and type(returned.get("error")) is str:
        error: str = returned["error"]
        return error
    return None


# --------------------------------------------------------------------------- the shared run_naive scenario
#
# Every run_naive check below judges its own aspect of the same six runs. They are
# drawn from one stream shared by the whole grading (``shared_rng(rng, NAIVE_SCENARIO)``)
# and sent as ``reset`` probes (the step's module, CACHE cleared, spies undone after), so
# the checks ask for identical probes and the engine builds and invokes the naive graph
# once per run, whichever checks look at it.

NAIVE_SCENARIO = "step6/naive_runs"
TOOL_CHOICES = (None, "stock_lookup", "legacy_stock")  # None: the order names no tool
NAIVE_RUNS = ("found", "refused_limit", "refused_region", "refused_type", "empty", "raised")
# Runs with the grader's own pick or fetch (grader.engine.doubles_graph; a module with the lab's
# own State layout): reply and giveup meet what only step 7's repairs would otherwise show.
GRADER_NODE_RUNS = ("found_repicked", "two_reasons")


def _used(tool: str | None) -> str:
    return tool or "stock_lookup"


def _naive_op(order: JsonDict, tool: str | None, n: int, reason: str = "") -> JsonDict:
    """The run_naive call of a shared run; the order is read back after it (``step6/order_unchanged``).

    ``reason``: the error the spec's door gives this order (judge-only), for a module that does the
    door's work itself; otherwise the judges take what the grader's door returned.
    """
    operation = dict(call_op("run_naive", order, runs=_runs_of(tool, n)), args_after=True)
    if reason:
        operation["expect_reason"] = reason
    return operation


def _runs_of(tool: str | None, n: int) -> JsonDict:
    """Expected tool-body runs of one run_naive call: ``n`` of the tool it uses, none of the other."""
    return {name: (n if name == _used(tool) else 0) for name in spec.TOOL_NAMES}


def naive_runs(rng: random.Random) -> dict[str, Probe]:
    """The run_naive runs of step 6, by name; identical for every check of one grading.

    ``found``: the tool returns two or more rows. ``empty``: the table has no row for
    the sku and region. ``refused_*``: arguments with one defect each, of the three
    kinds a pick that "fixes" the order would change: a limit out of range (below 1 or
    above MAX_ROWS), a region that differs from an allowed one only
    by case or spaces (both repairable in step 7, so a naive graph that retries shows),
    a bool limit. The three tool choices (none, ``stock_lookup``, ``legacy_stock``) are
    dealt to found, empty and refused_region, so every grading sees each of them.
    ``raised``: the tool raises (a graph that retries after an exception shows), for an
    untidy sku (:func:`untidy_sku`: a pick that tidies the order shows). Then the
    :data:`GRADER_NODE_RUNS`: ``found_repicked`` (the grader's pick calls with another
    region than the order's) and ``two_reasons`` (the grader's fetch records a reason ahead
    of the call's). Every run has
    the grader's door in ``call_tool`` (:func:`door_op`), so steps 2-5 never reach these
    checks and the reason a run must carry is the one the door returned.

    >>> from grader.checks.registry import check_rng
    >>> a, b = naive_runs(check_rng(4, "step6/naive_ok")), naive_runs(check_rng(4, "step6/naive_empty"))
    >>> a == b, tuple(a) == NAIVE_RUNS + GRADER_NODE_RUNS
    (True, True)
    """
    srng = shared_rng(rng, NAIVE_SCENARIO)
    found_tool, empty_tool, region_tool = srng.sample(TOOL_CHOICES, len(TOOL_CHOICES))
    return {
        "found": _found_run(srng, found_tool),
        "refused_limit": _refused_run(srng, srng.choice(["range_low", "range_high"]), srng.choice(TOOL_CHOICES)),
        # Variants 0 and 1: the families a pick that tidies the order would change (case, spaces).
        "refused_region": _refused_run(srng, "allowed", region_tool, variant=srng.randrange(2)),
        "refused_type": _refused_run(srng, "type_bool", srng.choice(TOOL_CHOICES)),
        "empty": _empty_run(srng, empty_tool),
        "raised": _raised_run(srng, srng.choice(TOOL_CHOICES)),  # drawn last: the runs above stay as they were
        "found_repicked": _repicked_run(srng),
        "two_reasons": _two_reasons_run(srng),
    }


def _repicked_run(rng: random.Random) -> Probe:
    """A found run whose call (the grader's pick) uses another region than the order's: reply names the call's."""
    args = cases.random_valid_args(rng, stocked=True, inner=True)
    used = dict(args, region=rng.choice([r for r in spec.REGIONS if r != args["region"]]))
    rows = cases.random_rows(rng, rng.randint(1, spec.MAX_ROWS), prefix=rng.choice(["Q", "Z", "X"]))
    value = {"sku": used["sku"], "region": used["region"], "rows": rows}
    order = cases.order(args["sku"], args["region"], args["limit"])
    operation = _naive_op(order, None, 1)
    operation["label"] += f"  # pick (the grader's) calls with {used!r}; the tool returns {value!r}"
    return call_probe(
        [door_op(), double_op("pick", args=used), operation],
        spies=every_route({t: {"mode": "return", "value": encode(value)} for t in spec.TOOL_NAMES}),
        reset=True,
    )


def _two_reasons_run(rng: random.Random) -> Probe:
    """A refused run whose errors (the grader's fetch) hold an earlier reason first: giveup names the last."""
    _tool, args, reason = cases.single_defect(rng, rng.choice(["range_low", "range_high"]))
    earlier = rng.choice([spec.NOT_REPAIRABLE, spec.RAISED_PREFIX + rng.choice(cases.EXCEPTION_TYPES)])
    order = cases.order(args["sku"], args["region"], args["limit"])
    operation = _naive_op(order, None, 0, spec.ARGS_PREFIX + reason)
    operation["label"] += f"  # fetch (the grader's) records {earlier!r} before this call's reason"
    operation["expect_errors_before"] = [earlier]
    return call_probe(
        [door_op(), double_op("fetch", errors_before=[earlier]), operation], spies=TOOL_SPIES_ORIGINAL, reset=True
    )


def _found_run(rng: random.Random, tool: str | None) -> Probe:
    args = cases.random_valid_args(rng, stocked=True, inner=True)
    # At least two rows, so an answer built from another row than the first shows.
    rows = cases.random_rows(rng, rng.randint(2, spec.MAX_ROWS), prefix=rng.choice(["Q", "Z", "X"]))
    for row in rows:
        row["count"] = rng.randint(10, 999)
    value = {"sku": args["sku"], "region": args["region"], "rows": rows}
    order = cases.order(args["sku"], args["region"], args["limit"], tool)
    operation = _naive_op(order, tool, 1)
    operation["label"] += f"  # the tool returns {value!r}"
    # On every route: a call_tool that goes around TOOLS (step 3's fault) meets the same result.
    return call_probe(
        [door_op(), operation],
        spies=every_route({t: {"mode": "return", "value": encode(value)} for t in spec.TOOL_NAMES}),
        reset=True,
    )


def _refused_run(rng: random.Random, kind: str, tool: str | None, variant: int | None = None) -> Probe:
    _tool, args, reason = cases.single_defect(rng, kind, variant)
    order = cases.order(args["sku"], args["region"], args["limit"], tool)
    return call_probe(
        [door_op(), _naive_op(order, tool, 0, spec.ARGS_PREFIX + reason)], spies=TOOL_SPIES_ORIGINAL, reset=True
    )


def _empty_run(rng: random.Random, tool: str | None) -> Probe:
    if rng.random() < 0.5:
        sku, region = spec.UNKNOWN_SKU, rng.choice(spec.REGIONS)
    else:  # a known sku in a region where it has no row
        sku, region = rng.choice([(s, r) for s in spec.SKUS for r in spec.REGIONS if not spec.rows_for(s, r)])
    order = cases.order(sku, region, rng.randint(2, spec.MAX_ROWS - 1), tool)
    return call_probe(
        [door_op(), _naive_op(order, tool, 1, spec.RESULT_PREFIX + spec.EMPTY)],
        spies=every_route(TOOL_SPIES_TABLE),
        reset=True,
    )


def untidy_sku(rng: random.Random) -> str:
    """A sku a model might write: spaces around it (Unicode ones too) and mixed case.

    Every usual tidying (strip, lower, upper, Unicode normalisation) changes it, so a pick
    that tidies the order shows on every run.

    >>> s = untidy_sku(random.Random(1))
    >>> s != s.strip() and s.strip() != s.strip().lower() and s.strip() != s.strip().upper()
    True
    """
    digits = rng.choice(spec.SKUS).rpartition("-")[2]
    return f"{rng.choice([' ', chr(9)])}Sku-{digits}{rng.choice([chr(0xA0), ' ', chr(0x3000)])}"


def _raised_run(rng: random.Random, tool: str | None) -> Probe:
    args = cases.random_valid_args(rng, inner=True)
    # An untidy sku: the tool raises whatever it is given, so pick's pass-through is all it shows.
    order = cases.order(untidy_sku(rng), args["region"], args["limit"], tool)
    exc = rng.choice(cases.EXCEPTION_TYPES)
    operation = _naive_op(order, tool, 1, spec.RAISED_PREFIX + exc)
    operation["label"] += f"  # the tool raises {exc}"
    return call_probe(
        [door_op(), operation],
        spies=every_route({t: {"mode": "raise", "exc": exc} for t in spec.TOOL_NAMES}),
        reset=True,
    )


def naive_probes(*names: str) -> ProbeFactory:
    """A check's probe factory: the shared runs ``names``, in that order."""
    return lambda rng: [naive_runs(rng)[name] for name in names]


def the_run(probe: Probe, obs: JsonDict) -> tuple[JsonDict, JsonDict, JsonDict]:
    """The run_naive operation (the probe's last), its record, and the tool runs made during that call alone."""
    records = records_of(probe, obs)
    before = records[-2] if len(records) > 1 else obs.get("start")
    before_runs = before.get("spy_runs") if isinstance(before, dict) else None
    before_runs = before_runs if isinstance(before_runs, dict) else {}
    after_runs = records[-1].get("spy_runs") or {}
    runs = {
        tool: n - before_runs.get(tool, 0)
        for tool, n in after_runs.items()
        if type(n) is int and type(before_runs.get(tool, 0)) is int
    }
    return probe.params["operations"][-1], records[-1], runs


# --------------------------------------------------------------------------- run_naive checks


def called_tool(operation: JsonDict, obs: JsonDict) -> str:
    """The tool of the first call_tool call (the one pick chose), else the order's (default stock_lookup).

    The run checks other than ``step6/naive_default_tool`` judge the run against the call
    pick really made: which tool a run's order names is drawn per seed, so a pick that
    ignores it must cost that check alone, on every seed.

    >>> called_tool({"args": [{"tool": "legacy_stock"}]}, {"double_seen": {"call_tool": [{"args": ["stock_lookup", {}]}]}})
    'stock_lookup'
    >>> called_tool({"args": [{"sku": "SKU-1001"}]}, {})
    'stock_lookup'
    """
    calls = door_calls(obs)
    args = calls[0].get("args") if calls else None
    if isinstance(args, list) and len(args) == 2 and args[0] in spec.TOOL_NAMES:
        tool: str = args[0]
        return tool
    return _used(operation["args"][0].get("tool"))


def called_args(operation: JsonDict, obs: JsonDict) -> JsonDict:
    """The arguments of the first call_tool call (the call that produced the rows), else the order's."""
    calls = door_calls(obs)
    args = calls[0].get("args") if calls else None
    if isinstance(args, list) and len(args) == 2 and isinstance(args[1], dict):
        return args[1]
    return _order_args(operation["args"][0])


def _ok_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    for probe, obs in zip(probes, observations):
        operation, rec, _runs = the_run(probe, obs)
        value = result_of(rec, operation, RESULT_KEYS, "run_naive")
        order, called = operation["args"][0], called_args(operation, obs)
        tool = called_tool(operation, obs)
        rows = probe.params["spies"][tool]["value"]["rows"]
        first = rows[0]
        expect_field(value, "ok", True, operation, "A successful call must end with ok True.")
        if called.get("region") != order["region"]:  # the grader's pick: the call is not the order
            check_answer_mentions(
                value,
                [called["region"]],
                operation,
                "The answer names the region of the call that produced the rows "
                "(state['args']), never the order's: an answer names what it acted on.",
            )
        message = "The answer must name the sku, the region, and the bin and count of the first row."
        check_answer_mentions(
            value, [called["sku"], called["region"], first["bin"], first["count"]], operation, message
        )
        # As a whole number: a count of 41 must not pass because the bin is Q-41 or the sku SKU-4411.
        if not mentions_number(value["answer"], first["count"]):
            raise Fail(
                message,
                call=operation["label"],
                expected=f"an answer containing the number {first['count']}",
                got=repr(value["answer"]),
            )
        if not strict_equal(value.get("rows"), rows):
            raise Fail(
                "rows must be the rows of the tool's result.",
                call=operation["label"],
                expected=show(rows),
                got=show(value.get("rows")),
            )
        expect_field(value, "errors", [], operation, "A successful run has no errors.")
        check_calls_entries(value, [tool], [called], operation)
    return Verdict.ok()


add(
    "step6/naive_ok",
    3,
    "run_naive on a good order: ok, answer from the first row, rows, no errors, one call",
    "reply builds the sentence from rows[0] (sku, region, bin, count) and the arguments of the call "
    "(state['args'], not the order); run_naive returns ok, answer, rows, errors and calls from the final state.",
    ["6.reply", "6.reply_used_args", "6.run_naive", "6.fetch"],
    naive_probes("found", "found_repicked"),
    _ok_judge,
)


def check_pick_passed_through(operation: JsonDict, obs: JsonDict) -> None:
    """The first call_tool call carries the order's sku, region and limit unchanged.

    Judged where the module called the grader's door by name; a failure of a later aspect
    of the same run then names ``step6/naive_default_tool`` as its cause. The tool is not
    compared: both tools share one argument contract, so pick's choice of tool never
    changes a refusal (that choice is ``step6/naive_default_tool``'s alone, on every seed).
    """
    calls = door_calls(obs)
    if not calls:
        return
    order = decode(operation["args"])[0]
    got = calls[0].get("args")
    want = [got[0] if isinstance(got, list) and got else _used(order.get("tool")), _order_args(order)]
    if not strict_equal(got, encode(want)):
        raise Fail(
            "This follows from `step6/naive_default_tool`: fix that first (pick must pass the order's tool, "
            "default stock_lookup, and its sku, region and limit through unchanged).",
            call=operation["label"] + door_lines(obs),
            expected=f"call_tool{tuple(want)!r}",
            got=f"call_tool({', '.join(show(a) for a in calls[0].get('args') or [])})",
        )


def expected_reason(operation: JsonDict, obs: JsonDict) -> str:
    """The reason run_naive must carry: what the grader's door returned, else the spec's reason for the order."""
    calls = door_calls(obs)
    reason = door_failure(calls[-1]) if calls else None
    return reason if reason is not None else operation["expect_reason"]


def _failure_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    """run_naive gives up with the door's reason, after as many tool runs as the operation's ``runs`` say."""
    for probe, obs in zip(probes, observations):
        run_operation, rec_run, runs = the_run(probe, obs)
        check_pick_passed_through(run_operation, obs)
        reason = expected_reason(run_operation, obs)
        value = result_of(rec_run, run_operation, RESULT_KEYS, "run_naive")
        call = dict(run_operation, label=run_operation["label"] + door_lines(obs))
        expect_field(value, "ok", False, call, "A refused call must end with ok False.")
        before = run_operation.get("expect_errors_before") or []
        if not (before and strict_equal(value.get("errors"), before + [reason])):  # the grader's fetch, if it ran
            expect_field(value, "errors", [reason], call, "fetch must append call_tool's error to errors.")
        check_answer_mentions(
            value, [reason], call, "giveup's answer must contain the last reason in errors (errors[-1])."
        )
        check_calls_entries(value, [called_tool(run_operation, obs)], None, call)
        body_runs, made = sum(run_operation["runs"].values()), sum(runs.values())
        if made != body_runs:
            what = (
                "No tool body may run for refused arguments."
                if body_runs == 0
                else "run_naive makes exactly one call: the tool body runs once."
            )
            raise Fail(what, call=call["label"], expected=f"{body_runs} tool run(s)", got=f"{made} run(s)")
    return Verdict.ok()


add(
    "step6/naive_failure_path",
    2,
    "run_naive on bad arguments: ok False, the reason in errors and answer",
    "fetch appends result['error'] to errors and raises nothing; route to giveup, whose answer quotes "
    "errors[-1] (the last reason, also when errors holds more than one).",
    ["6.fetch", "6.giveup", "6.run_naive"],
    naive_probes("refused_limit", "refused_region", "refused_type", "raised", "two_reasons"),
    _failure_judge,
)


add(
    "step6/naive_empty",
    2,
    "run_naive on an empty result gives up with result:empty",
    "An empty result is a failure from call_tool; it must reach giveup with the reason in errors and answer, "
    "not reply with invented stock.",
    ["6.fetch", "6.giveup"],
    naive_probes("empty"),
    _failure_judge,
)


def _bound(seen: JsonDict) -> object:
    """The arguments a spied tool was called with, by name: ``fn(sku, region, limit)`` counts as keywords."""
    positional = seen.get("positional")
    kwargs = seen.get("kwargs")
    if not isinstance(positional, list) or not isinstance(kwargs, dict) or len(positional) > len(spec.ARG_NAMES):
        return kwargs
    return {**dict(zip(spec.ARG_NAMES, positional)), **kwargs}


def _default_tool_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    for probe, obs in zip(probes, observations):
        operation, rec, runs = the_run(probe, obs)
        value = result_of(rec, operation, RESULT_KEYS, "run_naive")
        order = operation["args"][0]
        used, want = _used(order.get("tool")), _order_args(order)
        calls = door_calls(obs)
        if calls:  # the call pick chose, as call_tool received it
            got = calls[0].get("args")
            if not strict_equal(got, encode([used, want])):
                raise Fail(
                    "pick chooses order['tool'] (stock_lookup when the order names none) and passes the "
                    "order's sku, region and limit through unchanged.",
                    call=operation["label"] + door_lines(obs),
                    expected=f"call_tool({used!r}, {want!r})",
                    got=f"call_tool({', '.join(show(a) for a in got or [])})",
                )
        check_calls_entries(value, [used], None, operation)
        if not strict_equal(value["calls"][0]["args"], encode(want)):
            raise Fail(
                "calls[0]['args'] must be the arguments passed to call_tool, and pick must pass the "
                "order's sku, region and limit through unchanged.",
                call=operation["label"],
                expected=f"calls[0]['args'] == {want!r}",
                got=show(value["calls"][0]["args"]),
            )
        if calls or not any(operation["runs"].values()):
            continue  # the door (or, refused, the calls entry) shows pick's choice
        for tool, n in operation["runs"].items():
            if runs.get(tool) != n:
                raise Fail(
                    "pick chooses order['tool'], and stock_lookup when the order names none.",
                    call=operation["label"],
                    expected=f"{tool} called {n} time(s)",
                    got=f"runs {show(runs)}",
                )
        seen = (obs.get("spy_seen") or {}).get(used) or [{}]
        if not strict_equal(_bound(seen[-1]), want):
            raise Fail(
                "pick must pass the order's sku, region and limit through unchanged.",
                call=operation["label"],
                expected=f"the tool called with {want!r}",
                got=show(seen[-1]),
            )
    return Verdict.ok()


add(
    "step6/naive_default_tool",
    2,
    "pick uses the order's tool (default stock_lookup) and its values unchanged",
    "pick returns the tool name (order.get('tool', 'stock_lookup')) and the args sku/region/limit exactly "
    "as the order gives them.",
    ["6.pick"],
    naive_probes(*NAIVE_RUNS),
    _default_tool_judge,
)


def _no_retry_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    for probe, obs in zip(probes, observations):
        operation, rec, runs = the_run(probe, obs)
        value = result_of(rec, operation, RESULT_KEYS, "run_naive")
        expect_field(value, "ok", False, operation, "The naive graph makes one call and gives up on failure.")
        for key in ("errors", "calls"):
            if not isinstance(value.get(key), list) or len(value[key]) != 1:
                raise Fail(
                    f"The naive graph makes exactly one call: {key} holds one entry."
                    # one call_tool made here: more entries came from somewhere else than a retry
                    + (carried_over(value.get(key), 1) if len(door_calls(obs)) <= 1 else ""),
                    call=operation["label"],
                    expected=f"len({key}) == 1",
                    got=f"{key} == {show(value.get(key))}",
                )
        if len(door_calls(obs)) > 1:
            raise Fail(
                "The naive graph must not retry: it makes exactly one call_tool.",
                call=operation["label"] + door_lines(obs),
                expected="1 call_tool call",
                got=f"{len(door_calls(obs))} calls",
            )
        # Totals, not per tool: which tool ran is pick's choice (``step6/naive_default_tool``).
        want, made = sum(operation["runs"].values()), sum(runs.values())
        if made != want:
            raise Fail(
                "The naive graph must not retry.",
                call=operation["label"],
                expected=f"{want} tool run(s)",
                got=f"runs {show(runs)}",
            )
    return Verdict.ok()


add(
    "step6/naive_no_retry",
    1,
    "The naive graph calls once and never retries",
    "build_naive has no repair: after a failed fetch it goes straight to giveup.",
    ["6.nodes", "6.fetch"],
    naive_probes("refused_limit", "refused_region", "empty", "raised"),
    _no_retry_judge,
)


def _order_unchanged_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    for probe, obs in zip(probes, observations):
        operation, rec, _runs = the_run(probe, obs)
        if "args_after" not in rec:
            raise Fail(
                "The grader could not read the order back after run_naive.",
                call=operation["label"],
                expected="the order read back",
                got=outcome(rec),
            )
        order, after = operation["args"][0], rec["args_after"][0]
        if not strict_equal(after, order):
            raise Fail(
                "run_naive changed the order it was given: nodes never write into the order (pick reads "
                "order.get('tool', ...) and builds a new args dict).",
                call=operation["label"],
                expected=f"the order still {show(order)}",
                got=f"the order became {show(after)}",
            )
    return Verdict.ok()


add(
    "step6/order_unchanged",
    1,
    "run_naive leaves the caller's order as it was",
    "pick and the other nodes read the order and return new values (order.get('tool', 'stock_lookup'), a new "
    "args dict); none writes into the order (no setdefault, no order[...] = ...).",
    ["6.no_mutation"],
    naive_probes(*NAIVE_RUNS),
    _order_unchanged_judge,
)
