"""Step 7 checks: read the reason, fix, try again (``can_repair``, ``repair``, ``handle``).

The ``handle`` checks judge a handful of shared runs (:func:`handle_runs`): each run is
a ``reset`` probe (the step's module with ``CACHE`` cleared, the run's spies and set names
undone after it) drawn from one stream shared by the whole grading, so every check that
looks at a run asks for the identical probe and the engine builds and invokes the graph
once for all of them. Each check judges only its own aspect of a run (see the aspect
functions below): the repair checks look at the call made right after the failure they
own, the give-up checks at where the run stopped, and so on.

Step 7 is judged on its own route: in every run the grader's doubles stand in for the
door of steps 3-5 (``call_tool``) and for step 6's nodes ``pick``, ``fetch``, ``reply``
and ``giveup`` (:mod:`grader.engine.doubles_graph`; a module with the lab's own State
layout), so a mistake there costs its own step only. For any other layout the nodes stay
the learner's, and the answer checks below judge them here.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from grader import spec
from grader.checks import cases
from grader.checks._common import (
    TOOL_SPIES_ORIGINAL,
    TOOL_SPIES_TABLE,
    Fail,
    add,
    call_op,
    call_probe,
    check_expect,
    counts_of,
    double_op,
    every_route,
    expectations_judge,
    op,
    outcome,
    records_of,
)
from grader.checks.registry import Judge, Observation, Probe, ProbeFactory, Verdict, shared_rng
from grader.checks.step6 import (
    check_answer_mentions,
    door_calls,
    door_failure,
    door_lines,
    door_op,
    expect_field,
    judge_nodes,
    judge_reducers,
    reducer_probes,
    result_of,
)
from grader.engine.encode import decode, encode, show, strict_equal
from grader.engine.wire import JsonDict

HANDLE_KEYS = ("ok", "answer", "rows", "errors", "calls", "fixes", "attempts", "tool_runs")
# Short names for the spec's step-7 reasons, which the judges below name often.
REGION_REASON, LIMIT_REASON, TOO_BIG_REASON = spec.REPAIRABLE
EMPTY_REASON = spec.NOT_REPAIRABLE


def _constants_probes(rng: random.Random) -> list[Probe]:
    ops = [
        dict(op("attr", name=n), expect=encode(v), label=n)
        for n, v in (("MAX_ATTEMPTS", spec.MAX_ATTEMPTS), ("FALLBACK_REGION", spec.FALLBACK_REGION))
    ]
    return [call_probe(ops, fresh=True)]


add(
    "step7/constants",
    1,
    "MAX_ATTEMPTS is 3 and FALLBACK_REGION is 'central'",
    "Two module-level names with exactly these values (an int and a str).",
    ["7.constants"],
    _constants_probes,
    expectations_judge("This module-level name does not have the value the spec gives."),
)


# Reasons outside the spec's list, by class. Whether one is repairable is the learner's choice
# (LAB_SPEC step 7); that can_repair answers it with a bool, and that handle then ends without
# an exception (``step7/giveup_raised``), is not. Every grading sends each class; the seed picks
# the reasons inside it.
OTHER_REASONS = {
    "args": [
        "args:missing:limit",
        "args:missing:sku",
        "args:type:limit",
        "args:type:sku",
        "args:extra:color",
        "args:unknown_tool",
        "args:allowed:sku",
        "args:range:sku",
    ],
    "result": ["result:shape", "result:range", "result:invalid"],
    # Malformed texts: a known reason in another case or with spaces (a can_repair that tidies
    # the text says True; its repair must cope), no colon at all, parts missing or added.
    "malformed": [
        "ARGS:ALLOWED:REGION",
        " args:allowed:region",
        "args:allowed:region\n",
        "Args:range:limit",
        "result:TOO_BIG",
    ],
    "no_colon": ["", "args", "raised", "error", "too_big"],
    "parts": ["args:", "allowed:region", "result:too_big:x", "args:range:limit:low", ":"],
}
# The classes a handle run is made for (the others go to can_repair only: there is no fix to reach).
HANDLE_REASON_CLASSES = ("args", "result", "malformed")


def _can_repair_probes(rng: random.Random) -> list[Probe]:
    reasons: list[tuple[str, bool | None]] = [(r, True) for r in spec.REPAIRABLE]
    reasons += [
        (EMPTY_REASON, False),
        (spec.RAISED_PREFIX + rng.choice(cases.EXCEPTION_TYPES), False),
        (spec.RAISED_PREFIX + rng.choice(cases.CUSTOM_EXCEPTION_NAMES), False),
    ]
    # Every reason of every class: a can_repair that fails on one reason of a class must fail on every seed.
    reasons += [(r, None) for family in OTHER_REASONS.values() for r in family]
    rng.shuffle(reasons)
    return [
        call_probe(
            [
                call_op("can_repair", r, expect=want)
                if want is not None
                else dict(call_op("can_repair", r), expect_any_bool=True)
                for r, want in reasons
            ]
        )
    ]


def _can_repair_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    """The spec's reasons get the spec's answer; any other reason gets a bool (which one is the learner's choice)."""
    probe, obs = probes[0], observations[0]
    for operation, rec in zip(probe.params["operations"], records_of(probe, obs)):
        if not operation.get("expect_any_bool"):
            check_expect(operation, rec, "can_repair gave the wrong answer (a bool) for this reason.")
        elif type(rec.get("value")) is not bool:
            raise Fail(
                "can_repair answers every reason with a bool, also one the spec does not list (whether "
                "that one is repairable is your choice; raising or returning another type is not).",
                call=operation["label"],
                expected="True or False",
                got=outcome(rec),
            )
    return Verdict.ok()


add(
    "step7/can_repair_table",
    2,
    "can_repair: True for the three repairable reasons, False for empty and raised",
    "Repairable: args:allowed:region, args:range:limit, result:too_big. Asking again after result:empty or "
    "raised:... gives the same failure, so those are not. Any other str gets a bool too. Return a bool.",
    ["7.repairable", "7.not_repairable"],
    _can_repair_probes,
    _can_repair_judge,
)


# --------------------------------------------------------------------------- the shared handle runs

HANDLE_SCENARIO = "step7/handle_runs"
HANDLE_RUNS = ("spec_repair", "spec_empty", "too_big_then_cached", "two_repairs", "fallback_empty")
# Runs with the grader's can_repair and repair (LAB_SPEC step 7), for the checks of the loop (the
# attempt limit, giving up): a wrong fix (on which side of the range a drawn limit is, which region
# a drawn bad region tidies into) never decides them, on any seed.
LOOP_RUNS = ("loop",)
# Limits out of range, one on each side, with every other value right: the limit fix alone, no
# region fix before it (whose outcome would depend on the class of the drawn region).
ONE_FIX_RUNS = ("limit_only",)
# Runs of the loop's own dimensions, with the grader's can_repair and repair, where every result is too
# big: the same repairable reason on every fetch (the loop goes on until MAX_ATTEMPTS), then a graph
# built before MAX_ATTEMPTS changes and run after (the limit is read when the graph runs).
REPEAT_RUNS = ("repeat_and_late",)
REPAIR_DOUBLES = [double_op("can_repair"), double_op("repair")]


def _handle_op(order: JsonDict, note: str = "") -> JsonDict:
    """A handle call; the order is read back after it (``step7/order_unchanged``)."""
    operation = dict(call_op("handle", order), args_after=True)
    if note:
        operation["label"] += "  # " + note
    return operation


# Step 6's nodes, as the spec says they behave (grader.engine.doubles_graph): a module with the
# lab's own State layout is judged here on its repair loop, not again on step 6's nodes (step 6
# judges what reply and giveup say about a call that is not the order's, or after two reasons).
STEP6_NODES = [double_op("pick"), double_op("fetch"), double_op("reply"), double_op("giveup")]


def graph_doubles(**door: object) -> list[Any]:
    """The double ops of a step-7 run: the grader's door in ``call_tool``, step 6's four nodes."""
    return [door_op(**door)] + STEP6_NODES


def _run(ops: list[Any], spies: JsonDict | None = None, doubles: list[Any] | None = None) -> Probe:
    """A shared run: the grader's doubles (:func:`graph_doubles`, then ``doubles``), then ``ops``."""
    return call_probe(
        graph_doubles() + (doubles or []) + ops, spies=spies if spies is not None else TOOL_SPIES_ORIGINAL, reset=True
    )


def _bad_limits(rng: random.Random) -> tuple[int, int]:
    """Two limits out of range, one below 1 and one above MAX_ROWS, in random order."""
    low, high = rng.choice([0, -1, rng.randint(-20, -2)]), rng.randint(spec.MAX_ROWS + 1, 99)
    return (low, high) if rng.random() < 0.5 else (high, low)


def handle_runs(rng: random.Random) -> dict[str, Probe]:
    """The shared ``handle`` runs of step 7, by name; identical for every check of one grading.

    ``spec_repair`` / ``spec_empty``: the spec's two worked examples.
    ``too_big_then_cached``: legacy_stock for the only pair with more than MAX_ROWS rows
    (too big, switched to stock_lookup: ok at the second fetch), then the order of the
    call that run left in ``CACHE`` (ok at once, no tool body runs). ``two_repairs``: a
    wrong region and a limit below 1 (ok at the third fetch, the most MAX_ATTEMPTS
    allows). ``fallback_empty``: a wrong region for SKU-5000, which has no stock in the
    fallback region either.
    Every run has the grader's doubles (:func:`graph_doubles`): its door in ``call_tool``
    and step 6's nodes; ``two_repairs``, whose sku is drawn, meets the spec's
    table on every route (a slip in the module's STOCK costs step 1, on every seed).
    Then ``loop`` (:data:`LOOP_RUNS`), with the grader's ``can_repair`` and ``repair``: the
    orders of ``two_repairs`` and ``fallback_empty`` with a region no tidying makes allowed
    (:data:`~grader.checks.cases.UNTIDYABLE_REGIONS`), then, with ``MAX_ATTEMPTS`` set
    to 2, legacy_stock for the big pair with a limit out of range (clamped, then too big:
    gives up); and ``limit_only`` (:data:`ONE_FIX_RUNS`): a stocked order with a limit below
    1, then one above MAX_ROWS (in drawn order), each otherwise right.
    ``repeat_and_late`` (:data:`REPEAT_RUNS`): tools that return more than MAX_ROWS rows for
    any call, so ``result:too_big`` comes back after every fix: a stocked order (gives up
    after MAX_ATTEMPTS fetches), then, with the graph built by ``build_graph()`` while
    ``MAX_ATTEMPTS`` is the spec's 3 and run after it became 2, another (gives up after 2).

    >>> from grader.checks.registry import check_rng
    >>> a, b = handle_runs(check_rng(4, "step7/repair_limit")), handle_runs(check_rng(4, "step7/handle_shape"))
    >>> a == b, tuple(a) == HANDLE_RUNS + LOOP_RUNS + ONE_FIX_RUNS + REPEAT_RUNS
    (True, True)
    """
    srng = shared_rng(rng, HANDLE_SCENARIO)
    # Above 1, so a switch that also touches the limit shows in rows; below MAX_ROWS, so no run but
    # limit_only meets a bound (a bound mistake of validate_args then costs the same runs on every seed).
    limit = min(srng.randint(2, spec.MAX_ROWS), spec.MAX_ROWS - 1)
    cached = cases.order(*spec.BIG_PAIR, limit, srng.choice([None, "stock_lookup"]))
    two_limit, other_limit = _bad_limits(srng)
    two = cases.repairable_region_order(srng)
    fallback = cases.order(
        spec.NO_FALLBACK_SKU,
        srng.choice(cases.BAD_REGIONS),
        min(max(srng.randint(1, spec.MAX_ROWS), 2), spec.MAX_ROWS - 1),
    )
    # The runs of two repairs (and the loop's, built on them) always take the limit below 1, the big order the
    # one above MAX_ROWS: which side a run's clamp lands on is the same on every seed, so a bound mistake of
    # validate_args (max taken as exclusive) meets the repaired limit in the same runs on every seed.
    # limit_only sends both sides.
    two_order = dict(two, limit=min(two_limit, other_limit))
    big = cases.order(*spec.BIG_PAIR, max(two_limit, other_limit), "legacy_stock")
    alone = cases.random_valid_args(srng, stocked=True)  # drawn last: the runs above stay as they were
    # The loop's wrong regions are of the "something else entirely" family: no pick, however it tidies
    # a region (case, spaces), can make them allowed, so every seed's loop needs the region repair and
    # the attempt limit is judged the same way on all of them (drawn after the rest: nothing above moves).
    loop_two = dict(two_order, region=srng.choice(cases.UNTIDYABLE_REGIONS))
    loop_fallback = dict(fallback, region=srng.choice(cases.UNTIDYABLE_REGIONS))
    loop_note = "the grader's can_repair and repair"
    return {
        "spec_repair": _run([_handle_op(spec.REPAIR_EXAMPLE)]),
        "spec_empty": _run([_handle_op(spec.EMPTY_EXAMPLE)]),
        "too_big_then_cached": _run(
            [
                _handle_op(cases.order(*spec.BIG_PAIR, limit, "legacy_stock")),
                _handle_op(cached, note="the run above left this stock_lookup call in CACHE"),
            ]
        ),
        # The spec's table on every route: the sku is drawn, so a slip in the module's STOCK must not
        # decide on which seeds this run ends well (the table is step 1's to judge).
        "two_repairs": _run([_handle_op(two_order)], every_route(TOOL_SPIES_TABLE)),
        "fallback_empty": _run([_handle_op(fallback)]),
        "loop": _run(
            [
                _handle_op(loop_two, note=loop_note),
                _handle_op(loop_fallback, note=loop_note),
                op("set", name="MAX_ATTEMPTS", value=2),
                _handle_op(big, note=f"with MAX_ATTEMPTS = 2; {loop_note}"),
            ],
            every_route(TOOL_SPIES_TABLE),
            REPAIR_DOUBLES,
        ),
        "limit_only": _run(
            [_handle_op(cases.order(alone["sku"], alone["region"], limit_)) for limit_ in (two_limit, other_limit)],
            every_route(TOOL_SPIES_TABLE),
        ),
        "repeat_and_late": _repeat_and_late_run(srng),  # drawn last: the runs above stay as they were
    }


def _repeat_and_late_run(srng: random.Random) -> Probe:
    """Every call too big (the same reason after each fix); then a graph built before MAX_ATTEMPTS changes.

    The orders ask legacy_stock, whose fix switches to stock_lookup; the judges read ``attempts`` alone (a
    door that keeps a refused result in CACHE answers the third call from there: step 5's fault, not the
    loop's, and it still fetches three times).
    """
    rows = cases.random_rows(srng, srng.randint(spec.MAX_ROWS + 1, 2 * spec.MAX_ROWS), prefix="BIG")
    first, second = (cases.random_valid_args(srng, stocked=True, inner=True) for _ in range(2))
    spies = every_route(
        {
            tool: {"mode": "return", "value": {"sku": first["sku"], "region": first["region"], "rows": rows}}
            for tool in spec.TOOL_NAMES
        }
    )
    too_big = f"every tool returns {len(rows)} rows (result:too_big after each fix); the grader's can_repair and repair"
    return _run(
        [
            _handle_op(cases.order(first["sku"], first["region"], first["limit"], "legacy_stock"), note=too_big),
            op("set", name="MAX_ATTEMPTS", value=spec.MAX_ATTEMPTS),
            op("prebuild", name="build_graph"),
            op("set", name="MAX_ATTEMPTS", value=2),
            _handle_op(
                cases.order(second["sku"], second["region"], second["limit"], "legacy_stock"),
                note=f"build_graph() compiled its graph while MAX_ATTEMPTS was {spec.MAX_ATTEMPTS}; "
                f"MAX_ATTEMPTS = 2 was set after that, before handle ran it; {too_big}",
            ),
        ],
        spies,
        REPAIR_DOUBLES,
    )


# --------------------------------------------------------------------------- judging a run


@dataclass
class HandleRun:
    """One ``handle`` call of a probe as the judge sees it."""

    operation: JsonDict  # the operation sent (its label is the learner-facing call)
    rec: JsonDict  # what the child recorded for it
    before: JsonDict  # the record (or the probe's start snapshot) just before it
    earlier: list[Any] = field(default_factory=list)  # the probe's earlier handle runs
    door: list[Any] = field(default_factory=list)  # every call the grader's door received in the probe
    # A graph the grader asked the builder for ahead of this run (``prebuild``) whose build raised or
    # found no builder: this run did not run the graph it was meant to, so it cannot pass.
    unbuilt: tuple[JsonDict, JsonDict] | None = None
    _value: JsonDict | None = field(default=None, init=False, repr=False)

    @property
    def value(self) -> JsonDict:
        """handle's (encoded) result with its eight keys, or :class:`Fail`."""
        if self._value is None:
            self._value = result_of(self.rec, self.operation, HANDLE_KEYS, "handle")
        return self._value

    @property
    def order(self) -> JsonDict:
        order: JsonDict = decode(self.operation["args"][0])
        return order

    @property
    def shown(self) -> JsonDict:
        """The operation with every call_tool call of the probe on its call line (what a failure shows)."""
        return dict(
            self.operation, label=self.operation["label"] + door_lines({"double_seen": {"call_tool": self.door}})
        )

    def fail(self, message: str, expected: str, got: str) -> NoReturn:
        raise Fail(message, call=self.shown["label"], expected=expected, got=got)

    def door_success(self) -> JsonDict | None:
        """The result the grader's door returned for this run's successful call, when the door was called.

        A success ends a run, so the probe's successful door results belong to its
        successful runs one by one, in order.
        """
        done = sum(
            1 for run in self.earlier if isinstance(run.rec.get("value"), dict) and run.rec["value"].get("ok") is True
        )
        wins = [
            c["returned"] for c in self.door if isinstance(c.get("returned"), dict) and c["returned"].get("ok") is True
        ]
        return wins[done] if done < len(wins) else None


def handle_runs_of(probe: Probe, obs: JsonDict) -> list[HandleRun]:
    """The probe's ``handle`` ops, in order, with their records."""
    records = records_of(probe, obs)
    runs: list[HandleRun] = []
    unbuilt: tuple[JsonDict, JsonDict] | None = None
    for i, (operation, rec) in enumerate(zip(probe.params["operations"], records)):
        if operation.get("op") == "prebuild" and ("raised" in rec or "missing" in rec):
            unbuilt = (operation, rec)
        if operation.get("op") == "call" and operation.get("fn") == "handle":
            before = records[i - 1] if i else obs.get("start") or {}
            runs.append(HandleRun(operation, rec, before, list(runs), door_calls(obs), unbuilt))
            unbuilt = None
    return runs


def built_first(run: HandleRun) -> None:
    """The graph the grader built ahead of ``run`` was built: a builder that raised (or is missing) fails here.

    >>> built_first(HandleRun({"label": "handle(...)"}, {}, {}))
    """
    if run.unbuilt is None:
        return
    operation, rec = run.unbuilt
    name = operation.get("name", "build_graph")
    if "missing" in rec:
        raise Fail(
            f"{name} is missing: the grader builds the graph with {name}() before this run.",
            call=f"{name}()",
            expected="a compiled graph",
            got=f"no function {name}",
        )
    raise Fail(
        f"{name}() must build the graph whenever it is called: the grader called it before this run, and it raised.",
        call=f"{name}()  (called by the grader before {run.operation['label'].split('  # ')[0]})",
        expected="a compiled graph",
        got=outcome(rec),
    )


Aspect = Callable[[HandleRun], None]


def judge_runs(wants: list[Any]) -> Judge:
    """A judge: ``wants[i][j]`` lists the aspects the j-th handle run of probe i must show (None: not judged)."""

    def judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
        for probe, obs, per_run in zip(probes, observations, wants):
            for run, aspects in zip(handle_runs_of(probe, obs), per_run):
                if aspects:
                    built_first(run)
                for aspect in aspects or ():
                    aspect(run)
        return Verdict.ok()

    return judge


def on_runs(**wants: list[Any]) -> tuple[ProbeFactory, Judge]:
    """``(probes, judge)`` of a check that judges the shared runs named by the keywords.

    >>> probes, judge = on_runs(spec_empty=[[shape]])
    >>> from grader.checks.registry import check_rng
    >>> [p.label for p in probes(check_rng(1, "x"))]
    ["handle({'sku': 'SKU-9999', 'region': 'north', 'limit': 2})"]
    """
    names = tuple(wants)
    return (lambda rng: [handle_runs(rng)[name] for name in names]), judge_runs([wants[n] for n in names])


# giveup is step 6's node: when step 6's own give-up check fails too, that is the cause.
GIVEUP_NAMES_REASON = (
    "The answer must name the last reason in errors (giveup's answer; if `step6/naive_failure_path` "
    "fails too, this follows from it: fix that first)."
)

_MESSAGES = {
    "ok": "handle did not end as it should for this order.",
    "attempts": "attempts counts the fetches made (one per call_tool).",
    "errors": "errors holds each failed call's reason, in order.",
    "rows": "rows must be the rows of the successful retry.",
}


def ends(why: str = "", **want: object) -> Aspect:
    """The run ends with these values: ok, attempts, errors, rows (exact), n_fixes, answer_has, tool_runs.

    ``why`` (one sentence on what this order must do) goes before the message of a miss.
    """

    def say(message: str) -> str:
        return f"{why} {message}" if why else message

    def aspect(run: HandleRun) -> None:
        value, operation = run.value, run.shown
        for key in ("ok", "attempts", "errors", "rows"):
            if key in want:
                expect_field(value, key, want[key], operation, say(_MESSAGES[key]))
        if "n_fixes" in want:
            fixes = value.get("fixes")
            if not isinstance(fixes, list) or len(fixes) != want["n_fixes"]:
                run.fail(
                    say("repair appends one description to fixes per repair made."),
                    f"{want['n_fixes']} fix(es)",
                    f"fixes == {show(fixes)}",
                )
        if "answer_has" in want:
            check_answer_mentions(value, [want["answer_has"]], operation, GIVEUP_NAMES_REASON)
        if "tool_runs" in want and not (type(value["tool_runs"]) is int and value["tool_runs"] == want["tool_runs"]):
            run.fail(
                say("tool_runs counts the tool bodies that ran during this handle."),
                f"tool_runs == {want['tool_runs']}",
                f"tool_runs == {show(value['tool_runs'])}",
            )

    return aspect


def _region_fix(tool: object, args: JsonDict) -> tuple[Any, ...]:
    return tool, {**args, "region": spec.FALLBACK_REGION}


def _limit_fix(tool: object, args: JsonDict) -> tuple[Any, ...]:
    limit = args.get("limit")
    return tool, {**args, "limit": cases.clamp(limit) if type(limit) is int else limit}


def _tool_fix(tool: object, args: JsonDict) -> tuple[Any, ...]:
    return "stock_lookup", args


# reason -> (what the next call must look like, the learner-facing rule)
_FIXES = {
    REGION_REASON: (
        _region_fix,
        "After args:allowed:region, repair sets region to FALLBACK_REGION and changes "
        "nothing else; the next fetch uses it.",
    ),
    LIMIT_REASON: (
        _limit_fix,
        "After args:range:limit, repair clamps limit into 1..MAX_ROWS (the nearest allowed "
        "value) and changes nothing else; the next fetch uses it.",
    ),
    TOO_BIG_REASON: (
        _tool_fix,
        "After result:too_big, repair switches the tool to stock_lookup (which honours "
        "limit) and keeps the arguments; the next fetch uses it.",
    ),
}


def fixed_after(reason: str, if_reached: bool = False) -> Aspect:
    """The call right after the first ``reason`` in errors is the previous call with the spec's fix applied.

    A failed fetch appends its reason to ``errors`` and a success ends the run, so
    ``errors[i]`` is the reason of ``calls[i]``. ``if_reached``: judged only when the run
    met ``reason`` (a run where an earlier, wrong fix kept it from getting there is that
    fix's check's to judge, whichever class of value the seed drew).
    """
    fix, rule = _FIXES[reason]

    def aspect(run: HandleRun) -> None:
        errors, calls = run.value["errors"], run.value["calls"]
        if if_reached and not (isinstance(errors, list) and reason in errors):
            return
        if not isinstance(errors, list) or reason not in errors:
            run.fail(
                f"This order should fail with {reason} on the way.",
                f"{reason!r} in errors",
                f"errors == {show(errors)}",
            )
        i = errors.index(reason)
        if not isinstance(calls, list) or len(calls) < i + 2:
            run.fail(
                f"{reason} is repairable and fewer than MAX_ATTEMPTS fetches were made: repair and fetch again.",
                f"a call after calls[{i}]",
                f"calls == {show(calls)}",
            )
        before, after = calls[i], calls[i + 1]
        if not isinstance(before, dict) or not isinstance(before.get("args"), dict) or not isinstance(after, dict):
            run.fail(
                "Each calls entry is a dict with tool and args.",
                "{'tool': ..., 'args': ...}",
                f"calls == {show(calls)}",
            )
        tool, args = fix(before.get("tool"), before["args"])
        if not (strict_equal(after.get("tool"), tool) and strict_equal(after.get("args"), args)):
            expected = f"calls[{i + 1}] with tool {show(tool)} and args {show(args)}"
            got = f"tool {show(after.get('tool'))} and args {show(after.get('args'))}"
            other = _fix_of_another_reason(errors[:i], reason, before, after)
            if other:
                run.fail(
                    f"repair reads the last reason in errors (errors[-1]): after {reason} the next call has "
                    f"the fix of the earlier {other} instead.",
                    expected,
                    got,
                )
            run.fail(rule, expected, got)

    return aspect


def _fix_of_another_reason(earlier: list[str], reason: str, before: JsonDict, after: JsonDict) -> str | None:
    """An earlier reason whose fix, applied to ``before``, gives ``after`` (a repair that read the wrong reason)."""
    for other in dict.fromkeys(earlier):
        if other == reason or other not in _FIXES:
            continue
        tool, args = _FIXES[other][0](before.get("tool"), before["args"])
        if strict_equal(after.get("tool"), tool) and strict_equal(after.get("args"), args):
            return other
    return None


def stops_after(reason: str) -> Aspect:
    """The run gives up right after the first ``reason`` (no fetch after it) and the answer names it."""

    def aspect(run: HandleRun) -> None:
        value = run.value
        expect_field(value, "ok", False, run.shown, f"{reason} is not repairable: the run must give up.")
        errors = value["errors"]
        if (
            not isinstance(errors, list)
            or reason not in errors
            or errors.index(reason) != len(errors) - 1
            or not strict_equal(value["attempts"], len(errors))
        ):
            run.fail(
                f"{reason} is not repairable: asking again gives the same, so go to giveup right after it.",
                f"errors ending with the first {reason!r}, and no fetch after it",
                f"errors == {show(errors)}, attempts == {show(value['attempts'])}",
            )
        check_answer_mentions(value, [reason], run.shown, GIVEUP_NAMES_REASON)

    return aspect


def rows_of_success(run: HandleRun) -> None:
    """On success, rows are the rows of the result call_tool returned for the call that succeeded.

    Compared with what the tool returned in this run (through the grader's door), not
    with the spec's table: rows a tool shapes its own way are step 1's business.
    A module that never calls ``call_tool`` by name is compared with the table.
    """
    if run.value["ok"] is not True:
        return
    success = run.door_success()
    if success is None:
        rows_of_last_call(run)
        return
    want = success.get("value", {}).get("rows") if isinstance(success.get("value"), dict) else None
    if not strict_equal(run.value["rows"], want):
        run.fail(
            "rows must be the rows of the result call_tool returned for the call that succeeded "
            "(result['value']['rows']).",
            f"rows == {show(want)}",
            f"rows == {show(run.value['rows'])}",
        )


def rows_of_last_call(run: HandleRun) -> None:
    """On success, rows are the table's rows for the last call's arguments (stock_lookup honours limit)."""
    calls = run.value["calls"]
    last = calls[-1] if isinstance(calls, list) and calls else None
    args = last.get("args") if isinstance(last, dict) else None
    if (
        not isinstance(args, dict)
        or type(args.get("sku")) is not str
        or type(args.get("region")) is not str
        or type(args.get("limit")) is not int
    ):
        run.fail(
            "calls[-1] must hold the arguments of the successful call.", "{'tool': ..., 'args': {...}}", show(last)
        )
    want = spec.rows_for(args["sku"], args["region"], args["limit"])
    expect_field(run.value, "rows", want, run.operation, "rows must be the rows of the successful retry.")


def _spy_total(rec: JsonDict) -> int:
    return sum(n for n in rec.get("spy_runs", {}).values() if type(n) is int)


def _calls_total(calls: object) -> int | None:
    """``sum(CALLS.values())`` as the spec defines tool_runs, or None when CALLS holds other than counts.

    A bool counter is summed like the spec's ``sum`` does (False + 1 == 1): whether
    CALLS starts from ints is step 1's business, not tool_runs'.
    """
    counts = counts_of(calls)  # any dict type holding the counts (a Counter too)
    if counts is not None:
        return sum(counts.values())
    if (
        not isinstance(calls, dict)
        or any(str(k).startswith("$") for k in calls)
        or any(type(n) not in (int, bool) for n in calls.values())
    ):
        return None
    return sum(calls.values())


def _spied_runs(run: HandleRun) -> int:
    return _spy_total(run.rec) - _spy_total(run.before)


def tool_runs_measured(run: HandleRun) -> None:
    """tool_runs equals how far CALLS moved during this call (the spec's definition).

    The grader's spies are the truth only where CALLS cannot be read as counts: a
    tool that counts itself wrongly (step 1's fault) moves CALLS by as much as
    ``handle`` must report, so tool_runs is judged against CALLS, not against
    the bodies that ran.
    """
    spied = _spied_runs(run)
    before, after = _calls_total(run.before.get("calls")), _calls_total(run.rec.get("calls"))
    measured = after - before if before is not None and after is not None else None
    want = spied if measured is None else measured
    value = run.value["tool_runs"]
    if type(value) is not int or value != want:
        moved = "CALLS could not be read as counts" if measured is None else f"CALLS moved by {measured}"
        run.fail(
            "tool_runs must be the sum of CALLS after the run minus before it (the tool bodies that "
            "really ran; a cached repeat runs none).",
            f"tool_runs == {want} ({moved})",
            f"tool_runs == {show(value)}",
        )


def cached_repeat(run: HandleRun) -> None:
    """When the run before ended with exactly this order's stock_lookup call, no tool body runs now."""
    if not run.earlier:
        return
    previous = run.earlier[-1].value
    calls = previous["calls"]
    last = calls[-1] if isinstance(calls, list) and calls else None
    order = run.order
    same = (
        isinstance(last, dict)
        and strict_equal(last.get("tool"), "stock_lookup")
        and strict_equal(last.get("args"), encode({k: order[k] for k in spec.ARG_NAMES}))
    )
    if previous["ok"] is True and same and _spied_runs(run):
        run.fail(
            "The run before succeeded with this very call, so CACHE holds it: nothing may clear the cache "
            "between runs, and no tool body runs.",
            "0 tool runs",
            f"{_spied_runs(run)} tool run(s)",
        )


def tool_ran(times: int) -> Aspect:
    """The tool bodies really ran ``times`` times during the run (the grader's own count, not tool_runs)."""

    def aspect(run: HandleRun) -> None:
        if _spied_runs(run) != times:
            run.fail(
                "The reason must come from really calling the tool through call_tool (TOOLS[name]['fn']).",
                f"{times} tool body run(s)",
                f"{_spied_runs(run)} run(s)",
            )

    return aspect


def _require_a_repair(run: HandleRun) -> None:
    """These runs must repair (a second call): a check about what repairs leave behind needs one to judge.

    Without it a module that repairs nothing (or answers from memory) would pass
    such checks vacuously.
    """
    calls = run.value["calls"]
    if not (isinstance(calls, list) and len(calls) >= 2):
        run.fail(
            "handle made no second call here, so no repair happened and there is nothing to judge: "
            "fix `step7/repair_region` first (this check looks at what a repair leaves behind).",
            "at least two calls (the first, then the repaired one)",
            show(calls),
        )


def _used_region(run: HandleRun) -> object:
    """The region of the call that produced the rows: the grader's door's last call, else ``calls[-1]``."""
    last = run.door[-1].get("args") if run.door else None
    if not (isinstance(last, list) and len(last) == 2 and isinstance(last[1], dict)):
        calls = run.value["calls"]
        entry = calls[-1] if isinstance(calls, list) and calls else None
        last = [None, entry.get("args")] if isinstance(entry, dict) and isinstance(entry.get("args"), dict) else None
    return last[1].get("region") if last else None


def answer_names_used_region(run: HandleRun) -> None:
    """After a region repair, the answer names the region the tool acted on, not the order's.

    The region of the call that produced the rows, whatever the repair chose (whether that is
    FALLBACK_REGION is ``step7/repair_region``'s to judge, so a wrong fix costs that check
    alone). Judged only where the order's own region does not already contain that region's
    name (``'central\\n'`` would hide an answer built from the order).
    """
    _require_a_repair(run)
    value = run.value
    if value["ok"] is not True:
        return  # ending ok is the repair checks' business; the answer is judged on the way that worked
    used, region = _used_region(run), run.order.get("region")
    if type(used) is not str or not used or (isinstance(region, str) and used in region):
        return
    answer = value["answer"]
    if type(answer) is not str or used not in answer:
        run.fail(
            "The answer names what the tool acted on: after a region repair that is the repaired region "
            f"({used!r}), never the order's ({region!r}). Build it from the arguments of the call that "
            "produced the rows, not from the order.",
            f"an answer containing {used!r}",
            repr(answer),
        )


def order_unchanged(run: HandleRun) -> None:
    """No repair writes its fix into the caller's order: the values the caller gave are still there.

    Step 7's own part of the rule is the repair: a value of the order that
    changed to what a repaired call used was written back by the repair loop.
    Other writes (``pick``'s ``order.setdefault("tool", ...)``, a key added or
    reshaped before any repair) happen in step 6's graph too and cost step 6
    (``step6/order_unchanged``), so one mistake costs one step.
    """
    if "args_after" not in run.rec:
        run.fail("The grader could not read the order back after handle.", "the order read back", outcome(run.rec))
    order, after = run.operation["args"][0], run.rec["args_after"][0]
    calls = run.value.get("calls") if isinstance(run.value, dict) else None
    repaired = [c["args"] for c in (calls or [])[1:] if isinstance(c, dict) and isinstance(c.get("args"), dict)]
    if not isinstance(order, dict) or not isinstance(after, dict):
        return  # not an order the grader can compare field by field: step 6 judges the shapes
    written = [
        key
        for key, value in order.items()
        if key in after
        and not strict_equal(after[key], value)
        and any(key in args and strict_equal(after[key], args[key]) for args in repaired)
    ]
    if written:
        run.fail(
            f"handle's repair wrote its fix into the order it was given ({', '.join(map(repr, written))}): "
            "repair returns the new tool and args in its update and never changes state['order'].",
            f"the order still {show(order)}",
            f"the order became {show(after)}",
        )


def first_call_keeps_its_args(run: HandleRun) -> None:
    """calls[0]['args'] are the arguments the first call really used: the order's, before any repair."""
    _require_a_repair(run)
    calls = run.value["calls"]
    want = encode({k: run.order[k] for k in spec.ARG_NAMES})
    first = calls[0] if isinstance(calls, list) and calls else None
    if not isinstance(first, dict) or not strict_equal(first.get("args"), want):
        got = show(first.get("args")) if isinstance(first, dict) else show(calls)
        run.fail(
            "calls[0]['args'] must stay the arguments the first call used (the order's): a repair that "
            "changes the args dict in place rewrites the history. Copy before you change "
            "(dict(args), {**args, ...}), in fetch and in repair.",
            f"calls[0]['args'] == {show(want)}",
            got,
        )


_TYPES = {
    "ok": (bool,),
    "answer": (str,),
    "errors": (list,),
    "calls": (list,),
    "fixes": (list,),
    "attempts": (int,),
    "tool_runs": (int,),
}


def shape(run: HandleRun) -> None:
    """The eight keys with the spec's types; rows a list on success; calls entries with tool and args."""
    value, operation = run.value, run.operation
    for key, types in _TYPES.items():
        if type(value[key]) not in types:
            raise Fail(
                f"handle()['{key}'] must be a {types[0].__name__}.",
                call=operation["label"],
                expected=types[0].__name__,
                got=show(value[key]),
            )
    if value["ok"] and type(value["rows"]) is not list:
        raise Fail(
            "handle()['rows'] must be a list on success.",
            call=operation["label"],
            expected="a list",
            got=show(value["rows"]),
        )
    for entry in value["calls"]:
        if not isinstance(entry, dict) or "tool" not in entry or "args" not in entry:
            raise Fail(
                "Each calls entry is a dict with at least tool and args.",
                call=operation["label"],
                expected="{'tool': ..., 'args': ...}",
                got=show(entry),
            )


# --------------------------------------------------------------------------- handle checks


add(
    "step7/repair_region",
    2,
    "A wrong region is repaired to FALLBACK_REGION: ok after one fix, 2 attempts",
    "After args:allowed:region, repair sets the region to FALLBACK_REGION, appends a description to fixes, "
    "and the graph goes back to fetch.",
    ["7.fixes", "7.repair_node", "7.examples", "7.tool_runs"],
    *on_runs(
        spec_repair=[
            [ends(ok=True, n_fixes=1, attempts=2, tool_runs=1, errors=[REGION_REASON]), fixed_after(REGION_REASON)]
        ],
        two_repairs=[[fixed_after(REGION_REASON)]],
        fallback_empty=[[fixed_after(REGION_REASON)]],
    ),
)

add(
    "step7/repair_limit",
    2,
    "A limit out of range is clamped into 1..MAX_ROWS and retried",
    "After args:range:limit, repair moves the limit to the nearest allowed value (1 or MAX_ROWS) and the graph "
    "fetches again.",
    ["7.fixes", "7.repair_node"],
    *on_runs(
        limit_only=[[fixed_after(LIMIT_REASON)], [fixed_after(LIMIT_REASON)]],
        # After a region repair: a repair that reads another reason than the last shows here.
        two_repairs=[[fixed_after(LIMIT_REASON, if_reached=True)]],
    ),
)

add(
    "step7/repair_too_big",
    2,
    "result:too_big switches the tool to stock_lookup",
    "legacy_stock ignores limit; after result:too_big repair changes the tool to stock_lookup, which honours it.",
    ["7.fixes", "7.repair_node"],
    *on_runs(
        too_big_then_cached=[
            [fixed_after(TOO_BIG_REASON), ends(ok=True, n_fixes=1, attempts=2, errors=[TOO_BIG_REASON]), tool_ran(2)],
            None,
        ]
    ),
)

add(
    "step7/giveup_empty",
    2,
    "An empty result is not repaired: give up right after it, naming result:empty",
    "result:empty is not repairable: asking again gives the same nothing, so go to giveup.",
    ["7.not_repairable", "7.examples", "6.giveup"],
    *on_runs(
        spec_empty=[
            [ends(ok=False, n_fixes=0, attempts=1, errors=[EMPTY_REASON], answer_has=EMPTY_REASON), tool_ran(1)]
        ],
        loop=[None, [stops_after(EMPTY_REASON), tool_ran(1)]],
    ),
)

add(
    "step7/giveup_after_fallback_empty",
    1,
    "A repair that leads to an empty result gives up with the last reason",
    "SKU-5000 has no central stock: the region fix works, the retry is empty, and the answer names the "
    "last reason in errors.",
    ["7.repair_node", "7.not_repairable", "6.giveup"],
    *on_runs(
        loop=[
            None,
            [
                ends(ok=False, n_fixes=1, attempts=2, errors=[REGION_REASON, EMPTY_REASON], answer_has=EMPTY_REASON),
                tool_ran(1),
            ],
        ]
    ),
)


def _raised_probes(rng: random.Random) -> list[Probe]:
    exc = rng.choice(cases.EXCEPTION_TYPES)
    args = cases.random_valid_args(rng, stocked=True, inner=True)
    order = cases.order(args["sku"], args["region"], args["limit"])
    return [
        _run(
            [_handle_op(order, note=f"the tool raises {exc}")],
            every_route({"stock_lookup": {"mode": "raise", "exc": exc}}),
        )
    ] + _other_reason_runs(rng, exc)


def _other_reason_runs(rng: random.Random, exc: str) -> list[Probe]:
    """One handle run per class of :data:`OTHER_REASONS`: call_tool answers that reason on every call.

    The grader's door gives the reason (its script); a module that does the door's work
    itself meets a failure of the same class on its own (a limit written as text, or a
    result without rows). That world is built only from reasons the spec makes
    unrepairable: whatever the module repairs of a reason that is its own choice (a limit
    written as text made an int), every tool then raises ``exc`` (or returns no rows), so
    call_tool still fails every time and the run gives up on every seed.
    """
    probes = []
    for family in HANDLE_REASON_CLASSES:
        reason = rng.choice(OTHER_REASONS[family])
        args = cases.random_valid_args(rng, stocked=True, inner=True)
        spies = every_route({t: {"mode": "raise", "exc": exc} for t in spec.TOOL_NAMES})
        if family == "result":
            order, natural = cases.order(args["sku"], args["region"], args["limit"]), spec.RESULT_PREFIX + spec.SHAPE
            spies = every_route(
                {
                    t: {"mode": "return", "value": {"sku": args["sku"], "region": args["region"]}}
                    for t in spec.TOOL_NAMES
                }
            )
        else:
            order, natural = (
                cases.order(args["sku"], args["region"], str(args["limit"])),
                f"{spec.ARGS_PREFIX + spec.arg_reason(spec.TYPE, 'limit')}, and {spec.RAISED_PREFIX + exc} after any fix",
            )
        operation = _handle_op(
            order,
            note=f"call_tool answers {{'ok': False, 'value': None, 'error': "
            f"{reason!r}}} every time (without the grader's door: {natural})",
        )
        script = [{"error": reason}] * (spec.MAX_ATTEMPTS + 2)
        # can_repair answers as the learner's does, False where it raises (can_repair_table judges that on
        # every reason): which reason of a class the seed draws never decides this check.
        guarded = double_op("can_repair", "can_repair_answer")
        probes.append(call_probe(graph_doubles(script=script) + [guarded, operation], spies=spies, reset=True))
    return probes


def ends_without_raising(run: HandleRun) -> None:
    """After a reason the spec does not list, handle returns (no exception) and gives up naming it.

    Judged in full where the grader's door gave the reason; a module that does the
    door's work itself must at least return.
    """
    if "value" not in run.rec:
        run.fail(
            "handle raised after a reason the spec does not list: when can_repair says True, repair must "
            "cope with that reason (no fix in REPAIRS: say False in can_repair, and the graph gives up).",
            "handle returns a dict (ok False, the reason in the answer)",
            outcome(run.rec),
        )
    value = run.value
    failures = [r for r in (door_failure(c) for c in run.door) if r is not None]
    if not failures:
        return
    reason = failures[-1]
    expect_field(value, "ok", False, run.shown, "call_tool failed on every call here: the run must give up.")
    attempts = value["attempts"]
    if type(attempts) is not int or not 1 <= attempts <= spec.MAX_ATTEMPTS:
        run.fail(
            "After a failure, repair only while fewer than MAX_ATTEMPTS fetches were made; then give up.",
            f"1 <= attempts <= {spec.MAX_ATTEMPTS}",
            f"attempts == {show(attempts)}",
        )
    check_answer_mentions(value, [reason], run.shown, GIVEUP_NAMES_REASON)


def _raised_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    exc_reason = spec.RAISED_PREFIX + probes[0].params["spies"]["stock_lookup"]["exc"]
    raised = [[ends(ok=False, n_fixes=0, attempts=1, errors=[exc_reason], answer_has=exc_reason)]]
    return judge_runs([raised] + [[[ends_without_raising]]] * (len(probes) - 1))(probes, observations)


add(
    "step7/giveup_raised",
    1,
    "A tool that raises is not retried; no reason makes handle raise",
    "raised:... is not repairable; the graph gives up after one attempt and the answer names the reason. A reason "
    "the spec does not list (args:missing:limit, result:shape, a malformed text) is yours to repair or not, but "
    "handle must end without an exception: say False in can_repair when REPAIRS has no fix for it.",
    ["7.not_repairable"],
    _raised_probes,
    _raised_judge,
)

add(
    "step7/max_attempts_runtime",
    2,
    "The attempt limit is MAX_ATTEMPTS, read when the graph runs",
    "Decide 'repair or give up' in the routing function with the module's MAX_ATTEMPTS looked up at that "
    "moment (fewer than MAX_ATTEMPTS fetches made -> repair).",
    ["7.limit", "7.runtime"],
    *on_runs(
        loop=[
            [ends("Two repairs fit in MAX_ATTEMPTS = 3 fetches: the third fetch succeeds.", ok=True, attempts=3)],
            None,
            [
                ends(
                    "With MAX_ATTEMPTS set to 2 while the module runs, the graph gives up after the second fetch.",
                    ok=False,
                    attempts=2,
                )
            ],
        ],
        repeat_and_late=[
            [
                ends(
                    "result:too_big came back after its fix: the same reason again is no reason to stop. Repair "
                    "while can_repair says so and fewer than MAX_ATTEMPTS fetches were made, whatever came before "
                    "(3 fetches here, then give up).",
                    attempts=spec.MAX_ATTEMPTS,
                )
            ],
            [
                ends(
                    "This graph was compiled while MAX_ATTEMPTS was 3 and ran after it became 2: read MAX_ATTEMPTS "
                    "when the graph runs (in the routing function), not when build_graph() builds it (a value "
                    "saved in a closure, a default argument or the graph's config keeps the old limit).",
                    attempts=2,
                )
            ],
        ],
    ),
)

add(
    "step7/handle_shape",
    1,
    "handle returns ok, answer, rows, errors, calls, fixes, attempts, tool_runs",
    "Return a dict with these eight keys: ok a bool, answer a str, rows (on success the rows of the call that "
    "succeeded, as call_tool returned them), errors/calls/fixes lists, attempts and tool_runs ints.",
    ["7.handle"],
    *on_runs(
        spec_repair=[[shape, rows_of_success]],
        spec_empty=[[shape]],
        too_big_then_cached=[[shape, rows_of_success], [shape, rows_of_success]],
        two_repairs=[[shape, rows_of_success]],
        fallback_empty=[[shape]],
    ),
)

add(
    "step7/tool_runs_measured",
    2,
    "tool_runs is the CALLS difference of the run (0 for a cached repeat)",
    "Read sum(CALLS.values()) before and after invoking the graph and report the difference.",
    ["7.tool_runs", "5.lives_long"],
    *on_runs(
        spec_repair=[[tool_runs_measured]],
        too_big_then_cached=[[tool_runs_measured], [tool_runs_measured, cached_repeat]],
        two_repairs=[[tool_runs_measured]],
        fallback_empty=[[tool_runs_measured]],
    ),
)

add(
    "step7/answer_names_used_args",
    1,
    "After a repair, the answer names the repaired region, not the order's",
    "reply builds the sentence from the arguments of the call that produced the rows (state['args'] after "
    "repair), so a person can see at a glance what the tool acted on.",
    ["6.reply_used_args"],
    *on_runs(spec_repair=[[answer_names_used_region]], two_repairs=[[answer_names_used_region]]),
)

add(
    "step7/calls_keep_history",
    1,
    "A repair never rewrites an earlier calls entry",
    "calls[i]['args'] records the arguments as they were passed to that call; repair returns new args "
    "({**args, 'region': FALLBACK_REGION}) instead of changing the dict the earlier call used.",
    ["6.calls_history", "7.no_mutation"],
    *on_runs(
        spec_repair=[[first_call_keeps_its_args]],
        two_repairs=[[first_call_keeps_its_args]],
        fallback_empty=[[first_call_keeps_its_args]],
    ),
)

add(
    "step7/order_unchanged",
    1,
    "handle leaves the caller's order as it was, repairs included",
    "repair and the other nodes return new values in their updates ({**args, 'region': FALLBACK_REGION}, a new "
    "tool name); none writes into state['order'] or the order the caller passed.",
    ["6.no_mutation"],
    *on_runs(
        spec_repair=[[order_unchanged]],
        spec_empty=[[order_unchanged]],
        too_big_then_cached=[[order_unchanged], [order_unchanged]],
        two_repairs=[[order_unchanged]],
        limit_only=[[order_unchanged], [order_unchanged]],
        fallback_empty=[[order_unchanged]],
    ),
)

add(
    "step7/graph_has_repair",
    1,
    "build_graph() compiles a graph with a repair node besides the naive ones",
    "Add a node named repair and an edge from repair back to fetch.",
    ["7.graph"],
    lambda rng: [Probe("graph_nodes", {"builder": "build_graph"}, "build_graph().get_graph()")],
    lambda p, o: judge_nodes(p, o, ("pick", "fetch", "repair", "reply", "giveup")),
)


def one_fix_per_repair(run: HandleRun) -> None:
    """fixes holds one description per repair: as many as the fetches after the first."""
    calls, fixes = run.value["calls"], run.value["fixes"]
    if not isinstance(calls, list) or len(calls) < 2:
        return  # no repair here: the repair checks say why
    if not isinstance(fixes, list) or len(fixes) != len(calls) - 1:
        run.fail(
            "fixes holds one description per repair: repair returns only its own new description "
            "({'fixes': [description]}) and the reducer appends it (returning state['fixes'] + [...] "
            "doubles the list).",
            f"{len(calls) - 1} fix(es), one per repair",
            f"fixes == {show(fixes)}",
        )


_TWO_REPAIRS_FIXES = on_runs(two_repairs=[[one_fix_per_repair]])


def _fixes_probes(rng: random.Random) -> list[Probe]:
    return reducer_probes(rng, ("fixes",)) + _TWO_REPAIRS_FIXES[0](rng)


def _fixes_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    verdict = judge_reducers(probes[:1], observations[:1])
    return verdict if not verdict.passed else _TWO_REPAIRS_FIXES[1](probes[1:], observations[1:])


add(
    "step7/fixes_reducer",
    1,
    "State.fixes appends: one description per repair",
    "Declare fixes as Annotated[list, operator.add] so each repair adds its description; repair returns only "
    "its new description ({'fixes': [description]}), never the whole list again.",
    ["7.repair_node"],
    _fixes_probes,
    _fixes_judge,
)
