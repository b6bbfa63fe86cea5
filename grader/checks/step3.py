"""Step 3 checks: ``call_tool`` is the one door; failure comes back as a value.

Each probe first puts the grader's own ``validate_args``, ``validate_result``
and ``cache_key`` in the module (:data:`~grader.checks._common.DOOR_PARTS`),
over the spec's contract table: those are steps 2, 4 and 5 (and the table
step 1's), so a mistake there cannot cost step 3. A bad result reaches
``call_tool`` through the grader's spy in ``TOOLS[name]["fn"]``.
"""

from __future__ import annotations

import random
from typing import Any

from grader import spec
from grader.checks import cases
from grader.checks._common import (
    DOOR_PARTS,
    TOOL_SPIES_ORIGINAL,
    TOOL_SPIES_TABLE,
    Fail,
    add,
    call_op,
    call_probe,
    check_expect,
    every_route,
    expectations_judge,
    judge_expectations,
    judged,
    outcome,
    own_route,
    records_of,
)
from grader.checks.registry import Observation, Probe, Verdict
from grader.engine.encode import encode, show, strict_equal
from grader.engine.wire import JsonDict


def door_probe(ops: list[Any], **kwargs: Any) -> Probe:
    """A probe of ``call_tool`` alone: the grader's doubles of the other steps' functions go first.

    >>> [operation.get("name") for operation in door_probe([]).params["operations"]]
    ['validate_args', 'validate_result', 'cache_key']
    """
    return call_probe(own_route(*DOOR_PARTS, contract="spec") + ops, **kwargs)


def failure(error: str) -> JsonDict:
    return {"ok": False, "value": None, "error": error}


def success(value: object) -> JsonDict:
    return {"ok": True, "value": value, "error": ""}


def safe_pair(rng: random.Random, tool: str) -> JsonDict:
    """Valid arguments whose real result passes result validation for ``tool``.

    The limit stays strictly between its bounds: a check of the door (a success, the cache) then
    meets a bound mistake of validate_args on no seed rather than on some.
    """
    pairs = [p for p in spec.stocked_pairs() if tool == "stock_lookup" or len(spec.rows_for(*p)) <= spec.MAX_ROWS]
    sku, region = rng.choice(pairs)
    return {"sku": sku, "region": region, "limit": rng.randint(2, spec.MAX_ROWS - 1)}


def _success_probes(rng: random.Random) -> list[Probe]:
    """Three successes, each made again: the second answer comes from CACHE and is a success of the same shape.

    The whole dict of a cached success is this step's (``step5/second_call_cached`` judges its runs, ``ok``
    and ``value`` only).
    """
    ops = []
    for tool in (rng.choice(spec.TOOL_NAMES), "stock_lookup", "legacy_stock"):
        args = cases.shuffled(rng, safe_pair(rng, tool))
        limit = args["limit"] if tool == "stock_lookup" else None
        want = success(spec.lookup_result(args["sku"], args["region"], limit))
        ops.append(call_op("call_tool", tool, args, expect=want))
        again = call_op("call_tool", tool, args, expect=want)
        again["label"] += "  # the same call again: its answer comes from CACHE"
        ops.append(again)
    return [door_probe(ops, spies=TOOL_SPIES_TABLE)]


add(
    "step3/success_result",
    2,
    "A successful call gives {'ok': True, 'value': <result>, 'error': ''}",
    "Return a dict with exactly the keys ok, value and error: ok True, value the tool's result "
    "unchanged, error the empty string.",
    ["3.shape", "3.success"],
    _success_probes,
    expectations_judge("A successful call must come back as {'ok': True, 'value': <the result>, 'error': ''}."),
)


_PREFIX_KINDS = ("unknown_tool", "missing", "extra", "type_wrong", "type_bool", "allowed", "range_low", "range_high")


def _defect_ops(rng: random.Random, *, runs: bool) -> list[JsonDict]:
    ops = []
    for kind in _PREFIX_KINDS:
        tool, args, reason = cases.single_defect(rng, kind)
        # One probe kind, two checks: the reason (args_prefix) and the spy counts (blocked_before_call).
        judged = (
            {"runs": {"stock_lookup": 0, "legacy_stock": 0}} if runs else {"expect": failure(spec.ARGS_PREFIX + reason)}
        )
        ops.append(call_op("call_tool", tool, args, **judged))
    rng.shuffle(ops)
    return ops


def _prefix_judge(message: str) -> Any:
    """:func:`expectations_judge` whose miss names a missing ``args:`` prefix when that is all that differs.

    >>> p = door_probe([call_op("call_tool", "x", {}, expect=failure("args:unknown_tool"))])
    >>> obs = {"records": [{}, {}, {}, {"value": failure("unknown_tool"), "spy_runs": {}}]}
    >>> from grader.checks._common import safe_judge
    >>> safe_judge(_prefix_judge("m"))([p], [obs]).message[:51]
    "The error is the reason without its prefix: 'args:'"
    """

    def judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
        for probe, obs in zip(probes, observations):
            for operation, rec in judged(probe, records_of(probe, obs)):
                want, got = operation.get("expect"), rec.get("value")
                if not (isinstance(want, dict) and isinstance(got, dict) and isinstance(want.get("error"), str)):
                    continue
                error = want["error"]
                if error.startswith(spec.ARGS_PREFIX) and strict_equal(
                    got, {**want, "error": error[len(spec.ARGS_PREFIX) :]}
                ):
                    raise Fail(
                        f"The error is the reason without its prefix: 'args:' + reason ({error!r}), so that a "
                        "reader (and the repair loop of step 7) can tell a refused call from a failed result "
                        "('result:...') or a tool that raised ('raised:...').",
                        call=operation.get("label", ""),
                        expected=show(want),
                        got=outcome(rec),
                    )
        return judge_expectations(probes, observations, message)

    return judge


add(
    "step3/args_prefix",
    2,
    "A refused call gives ok False, value None, error 'args:<reason>'",
    "Run validate_args first; when it gives a reason, return {'ok': False, 'value': None, 'error': 'args:' + reason}.",
    ["3.shape", "3.args_prefix"],
    lambda rng: [door_probe(_defect_ops(rng, runs=False))],
    _prefix_judge("A call with bad arguments must give {'ok': False, 'value': None, 'error': 'args:<reason>'}."),
)

add(
    "step3/blocked_before_call",
    2,
    "A refused call never runs the tool body",
    "Return the args failure before touching TOOLS[name]['fn']: a wrong call never reaches the tool.",
    ["3.blocked"],
    lambda rng: [door_probe(_defect_ops(rng, runs=True), spies=TOOL_SPIES_ORIGINAL)],
    expectations_judge("A tool body ran although the arguments were refused."),
)


def _spy_value(rng: random.Random, args: JsonDict) -> JsonDict:
    rows = cases.random_rows(rng, rng.randint(1, spec.MAX_ROWS), prefix="SPY")
    return {"sku": args["sku"], "region": args["region"], "rows": rows}


def _through_table_probes(rng: random.Random) -> list[Probe]:
    probes = []
    for tool in spec.TOOL_NAMES:
        args = cases.shuffled(rng, cases.random_valid_args(rng, inner=True))
        value = _spy_value(rng, args)
        spies = {t: {"mode": "return", "value": encode(value)} for t in spec.TOOL_NAMES}
        operation = call_op("call_tool", tool, args, expect=success(value), runs={tool: 1})
        operation["label"] = f"{operation['label']}  # with TOOLS[{tool!r}]['fn'] replaced by a spy"
        probes.append(door_probe([operation], spies=spies))
    return probes


def _through_table_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    verdict = expectations_judge(
        "call_tool must call the function found in TOOLS[name]['fn'] (the grader's spy) and return what it returned."
    )(probes, observations)
    if not verdict.passed:
        return verdict
    for probe, obs in zip(probes, observations):
        operation = probe.params["operations"][-1]
        tool, args = operation["args"][0], operation["args"][1]
        seen = obs.get("spy_seen", {}).get(tool, [])
        want = {"positional": [], "kwargs": args}
        if len(seen) != 1 or not strict_equal(seen[0], want):
            got = seen[0] if seen else "no call"
            raise Fail(
                "The tool function should be called as fn(**args): every argument by name.",
                call=operation["label"],
                expected=f"fn(**{show(args)})",
                got=show(got),
            )
    return Verdict.ok()


add(
    "step3/calls_through_table",
    2,
    "call_tool calls TOOLS[name]['fn'] as fn(**args)",
    "Take the function from TOOLS[name]['fn'] at call time (not the module function by its name) and "
    "call it with the arguments by keyword: fn(**args).",
    ["3.through_table"],
    _through_table_probes,
    _through_table_judge,
)


def _raised_probes(rng: random.Random) -> list[Probe]:
    """One call per kind of ``Exception`` a tool may raise (:func:`cases.tool_exceptions`), each its own sku.

    Every kind is sent on every run (built-in ones, ``TypeError`` and ``Exception`` itself
    included, and learner-style classes of ``Exception`` and of a built-in one); the seed
    draws the names of the learner-style classes and the arguments. The spy raises the
    kind tied to the call's sku, so the first kind a ``call_tool`` lets out or names
    wrongly is the failing call, whatever else it does.

    >>> ops = _raised_probes(random.Random(0))[0].params["operations"][3:]
    >>> "TypeError" in {o["expect"]["error"].split(":")[1] for o in ops}
    True
    """
    tool = rng.choice(spec.TOOL_NAMES)
    by_sku: JsonDict = {}
    ops = []
    for i, (name, exc, what) in enumerate(cases.tool_exceptions(rng)):
        sku = f"SKU-{9100 + i}"
        by_sku[sku] = exc
        args = cases.shuffled(rng, {**cases.random_valid_args(rng, inner=True), "sku": sku})
        operation = call_op("call_tool", tool, args, expect=failure(spec.RAISED_PREFIX + name))
        operation["label"] = f"{operation['label']}  # the tool raises {name} ({what})"
        operation["expect_why"] = (
            f"The tool raised {name} ({what}): call_tool must catch every Exception, {name} included, and give "
            f"{{'ok': False, 'value': None, 'error': 'raised:{name}'}} (the class's own name, type(exc).__name__)."
        )
        ops.append(operation)
    spies = {t: {"mode": "raise", "exc": "RuntimeError", "exc_by_sku": by_sku} for t in spec.TOOL_NAMES}
    return [door_probe(ops, spies=spies)]


add(
    "step3/raised_as_value",
    1,
    "A tool that raises gives error 'raised:<ExceptionType>'",
    "Wrap the tool call in try/except Exception (every subclass: TypeError, KeyError, your own classes) and "
    "return {'ok': False, 'value': None, 'error': 'raised:' + type(exc).__name__}; never let the exception out.",
    ["3.raised", "3.no_exception"],
    _raised_probes,
    expectations_judge("A tool that raises must give {'ok': False, 'value': None, 'error': 'raised:<TypeName>'}."),
)


def _unknown_probes(rng: random.Random) -> list[Probe]:
    ops = []
    for _ in range(2):
        tool, args, _reason = cases.single_defect(rng, "unknown_tool")
        ops.append(
            call_op(
                "call_tool",
                tool,
                args,
                expect=failure(spec.ARGS_PREFIX + spec.UNKNOWN_TOOL),
                runs={"stock_lookup": 0, "legacy_stock": 0},
            )
        )
    return [door_probe(ops, spies=TOOL_SPIES_ORIGINAL)]


add(
    "step3/unknown_tool",
    1,
    "An unknown tool name gives error 'args:unknown_tool', no exception",
    "Validate before you look the name up in TOOLS: an unknown name is a value, not a KeyError.",
    ["3.args_prefix", "3.no_exception"],
    _unknown_probes,
    _prefix_judge("An unknown tool must give {'ok': False, 'value': None, 'error': 'args:unknown_tool'}."),
)


def _interrupt_probes(rng: random.Random) -> list[Probe]:
    probes = []
    for exc in ("KeyboardInterrupt", "SystemExit"):
        tool = rng.choice(spec.TOOL_NAMES)
        operation = call_op("call_tool", tool, cases.random_valid_args(rng, inner=True), runs={tool: 1})
        operation["label"] += f"  # the tool raises {exc}"
        # On every route (the module's own functions too): this check judges the except clause only.
        probes.append(
            door_probe([operation], spies=every_route({t: {"mode": "raise", "exc": exc} for t in spec.TOOL_NAMES}))
        )
    return probes


def _interrupt_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    for probe, obs in zip(probes, observations):
        operation, rec = judged(probe, records_of(probe, obs))[0]
        exc = probe.params["spies"][operation["args"][0]]["exc"]
        if rec.get("passed_through") != exc:
            raise Fail(
                f"{exc} must pass through call_tool: catch Exception, not BaseException (or a bare except), "
                "so that a learner can still stop a run.",
                call=operation["label"],
                expected=f"the {exc} raised out of call_tool",
                got=outcome(rec),
            )
        check_expect(operation, rec, "The tool body must run once for valid arguments.")
    return Verdict.ok()


add(
    "step3/interrupt_passes_through",
    1,
    "KeyboardInterrupt and SystemExit raised in a tool pass through call_tool",
    "Write except Exception (never except BaseException or a bare except:): an interrupt or exit must still "
    "stop the run.",
    ["3.base_exception"],
    _interrupt_probes,
    _interrupt_judge,
)
