"""Step 8 checks: ``write_report`` measures the module and writes two files.

Step 8 is judged on ``write_report``'s own logic. Before the report the grader
puts its doubles in every name the report measures through: ``call_tool``
(the door of :mod:`grader.engine.doubles_report`), ``validate_result`` and
``handle``, which LAB_SPEC step 8 names, and ``validate_args`` and
``cache_key``, which a report may call too. A mistake of steps 2-7 then
cannot reach a step-8 verdict, and the true value
of every number is read off the calls the doubles recorded: which wrong calls
ran a tool body, what ``validate_result`` answered, whether the second
identical call ran the body, what ``handle`` returned for which order.

Four reports, each a ``fresh`` probe drawn from a stream shared by the checks
that judge it (identical for all of them, so the engine runs it once):

* ``step8/as_is`` -- the module untouched and spec-faithful doubles,
  ``write_report(folder=...)``: the files, the returned dict, the headings, the
  limit, every value, and what the spec asks of the measurement itself.
* ``step8/changed`` -- ``write_report()`` into its default folder, with another
  ``MAX_ATTEMPTS``, one more tool, a result contract that keeps big results, a
  door whose validation comes too late (a wrong value in a call with all its
  arguments runs the body, then is refused), tools that already ran, and a
  ``handle`` that finds rows at once for both orders the report needs.
* ``step8/no_cache`` -- another ``MAX_ATTEMPTS``, a result contract without the
  count's minimum, a door that caches nothing (the second identical call runs
  the body), tools that already ran, and a ``handle`` that repairs and still
  gives up.
* ``step8/limit_one`` -- ``MAX_ATTEMPTS = 1``, where no repair fits, and the
  module's own ``handle`` run twice on an order with a wrong region before the
  report: on the learner's route the report's ``handle`` of such an order must
  end as those runs did (ok, fixes, attempts), so a report that measures under
  a limit of its own (one it sets, pins or raises while measuring) fails
  although its numbers match what its own calls returned. (Two runs: a
  ``handle`` that ends differently each time is step 7's to judge, not this.)

Across the four, every number of the report takes more than one value on
every seed; the seed only picks values inside a class (the limit, the number
of fixes), so a number written by hand fails on every seed.
"""

from __future__ import annotations

import random
from typing import Any

from grader import spec
from grader.checks._common import (
    REAL_EXTRA_KEY,
    REAL_SPIES_KEY,
    TOOL_SPIES_ORIGINAL,
    WATCH_KEY,
    Fail,
    add,
    call_op,
    call_probe,
    double_op,
    mentions_number,
    on_real_route,
    op,
    records_of,
    value_of,
)
from grader.checks.cases import UNTIDYABLE_REGIONS
from grader.checks.registry import Observation, Probe, Verdict, shared_rng
from grader.engine.encode import encode, show, strict_equal
from grader.engine.wire import JsonDict

JSON_FILE, MD_FILE = spec.REPORT_FILES
FAILURE_HEADINGS = {h[-1] for h in spec.HEADING_SETS.values()}
EXTRA_TOOL = "grader_extra_tool"
AS_IS, CHANGED, NO_CACHE, LIMIT_ONE = "step8/as_is", "step8/changed", "step8/no_cache", "step8/limit_one"
DOOR, RESULTS, HANDLE = "call_tool", "validate_result", "handle"
# The names write_report measures through, each with the grader's double of that kind for the report.
SPEC_DOUBLES = ("validate_args", "validate_result", "cache_key")
# The reasons of a wrong value: only such a call, naming exactly the contract's arguments, reaches a tool
# body when validation comes too late (with an argument missing or extra, or an unknown tool, Python's own
# call fails first: doubles_report.leaks).
VALUE_REASONS = (spec.TYPE, spec.ALLOWED, spec.RANGE)
SHOWN_CALLS = 10  # recorded calls shown on a failed row


def _report_op(folder: str = "scratch") -> JsonDict:
    label = "write_report()" if folder == "default" else "write_report(folder=<a new scratch folder>)"
    return op("report", folder=folder, label=label)


def _report_record(probe: Probe, obs: JsonDict) -> tuple[JsonDict, JsonDict]:
    """The (operation, record) of the probe's write_report call, which must have returned."""
    for operation, rec in zip(probe.params["operations"], records_of(probe, obs)):
        if operation.get("op") == "report":
            value_of(
                rec,
                operation,
                "write_report raised, so the grader could read no report: fix that "
                "exception first (its type and message are shown as 'got'); the files, "
                "their folder and their values are judged once it runs.",
            )
            return operation, rec
    raise Fail("The grader's probe has no write_report operation.")  # a grader bug; never for learners


def _files(
    operation: JsonDict, rec: JsonDict, *, json_needed: bool = True, md_needed: bool = False, anywhere: bool = False
) -> JsonDict:
    """The report files the record read; ``anywhere``: those in the working folder if the default had none.

    ``step8/default_folder`` alone judges where ``write_report()`` writes; the
    checks of what the files say judge them wherever they were written.
    """
    files: JsonDict = rec.get("files", {})
    elsewhere = rec.get("cwd_files")
    if anywhere and not (files.get("json_exists") or files.get("md_exists")) and isinstance(elsewhere, dict):
        files = elsewhere
    where = "next to the module file" if operation.get("folder") == "default" else "in the folder passed as folder="
    for name, key in ((JSON_FILE, "json_exists"), (MD_FILE, "md_exists")):
        if not files.get(key):
            raise Fail(
                f"{name} was not written {where}.",
                call=operation["label"],
                expected=f"a file {name}",
                got="no such file",
            )
    if json_needed and "json" not in files:
        raise Fail(
            f"{JSON_FILE} is not valid JSON.",
            call=operation["label"],
            expected="a JSON object",
            got=files.get("json_error", "unreadable"),
        )
    if md_needed and type(files.get("md")) is not str:
        raise Fail(
            f"{MD_FILE} could not be read as UTF-8 text.",
            call=operation["label"],
            got=files.get("md_error", "unreadable"),
        )
    return files


# --------------------------------------------------------------------------- the three reports


def _handle_result(ok: bool, errors: list[Any], answer: str) -> JsonDict:
    """What a ``handle`` returns after ``errors`` (one per failed attempt; then a success when ``ok``)."""
    fixes = [f"{reason}: the grader's fix" for reason in (errors if ok else errors[:-1])]
    calls = [{"tool": "stock_lookup", "error": reason} for reason in errors] + (
        [{"tool": "stock_lookup", "error": ""}] if ok else []
    )
    rows = [{"bin": "C-01", "count": 30}] if ok else []
    return {
        "ok": ok,
        "answer": answer,
        "rows": rows,
        "errors": list(errors),
        "calls": calls,
        "fixes": fixes,
        "attempts": len(calls),
        "tool_runs": len(calls),
    }


# What the report's handle gives an order of neither kind: never equal to a result of either kind.
_OTHER = _handle_result(False, [spec.ARGS_PREFIX + "missing:sku"], "the grader's handle: neither order kind")


def handle_results(name: str, rng: random.Random) -> JsonDict:
    """The results of the grader's ``handle`` in report ``name``, by kind of order (doubles_report.order_kind).

    >>> r = handle_results(CHANGED, random.Random(1))
    >>> r["repaired"]["ok"], r["repaired"]["fixes"], r["empty"]["ok"]
    (True, [], True)
    """
    if name == AS_IS:  # the spec's numbers: repaired after one fix (2 attempts), the empty order gives up
        return {
            "repaired": _handle_result(True, [spec.REPAIR_REGION], "SKU in central: bin C-01 holds 30."),
            "empty": _handle_result(False, [spec.NOT_REPAIRABLE], "Could not answer: result:empty"),
            "other": _OTHER,
        }
    if name == LIMIT_ONE:  # no repair fits in one attempt: the repaired order gives up at once too
        return {
            "repaired": _handle_result(False, [spec.REPAIR_REGION], "Could not answer: args:allowed:region"),
            "empty": _handle_result(False, [spec.NOT_REPAIRABLE], "Could not answer: result:empty"),
            "other": _OTHER,
        }
    if name == CHANGED:  # rows at once: not repaired (no fix), one attempt, the empty order did not give up
        return {
            "repaired": _handle_result(True, [], "found at once: bin C-01 holds 30."),
            "empty": _handle_result(True, [], "found rows for this order too: bin C-01 holds 30."),
            "other": _OTHER,
        }
    fixes = rng.randint(1, 3)  # fixed and still gave up: not repaired, after 2..4 attempts
    errors = [spec.REPAIR_REGION] + [spec.REPAIR_TOOL] * (fixes - 1) + [spec.NOT_REPAIRABLE]
    return {
        "repaired": _handle_result(False, errors, "Could not answer: result:empty"),
        "empty": _handle_result(False, [spec.NOT_REPAIRABLE], "Could not answer: result:empty (at once)"),
        "other": _OTHER,
    }


def _report_probe(
    name: str,
    rng: random.Random,
    folder: str,
    door: JsonDict,
    changes: list[Any],
    real_extra: list[Any] | None = None,
    real_spies: JsonDict | None = None,
) -> Probe:
    """A fresh probe: ``changes`` (operations, note), the doubles, ``write_report``, then ``TOOLS``' keys.

    On the learner's own route (what decides) the doubles give way to watches of the module's
    own ``call_tool``, ``validate_result`` and ``handle``: the true numbers are what those
    functions did during the report (the tools' own bodies run, so ``CALLS`` moves with
    them). ``real_extra`` runs first there only, with the tools' spies ``real_spies`` if given.
    """
    ops: list[Any] = []
    notes = []
    for operations, note in changes:
        ops += operations
        notes.append(note)
    ops.append(op("attr", name="MAX_ATTEMPTS"))  # the limit at the time of writing
    ops += [double_op(fn) for fn in SPEC_DOUBLES]
    ops += [double_op(DOOR, "report_door", **door), double_op(HANDLE, "report_handle", **handle_results(name, rng))]
    report = _report_op(folder)
    notes.append(DOOR_NOTES[(door.get("leak", False), door.get("store", True))])
    report["label"] += "  # with " + ", ".join(notes)
    ops += [report, op("keys", name="TOOLS")]
    extra: JsonDict = {REAL_EXTRA_KEY: real_extra} if real_extra else {}
    if real_spies:
        extra[REAL_SPIES_KEY] = real_spies
    watch: JsonDict = {WATCH_KEY: [DOOR, RESULTS, HANDLE]}
    return call_probe(ops, spies=TOOL_SPIES_ORIGINAL, fresh=True, expect_report=name, **watch, **extra)


DOOR_NOTES = {
    (False, True): "the grader's call_tool, validate_result, handle... in the module (spec-faithful)",
    (True, True): "a call_tool whose validation comes too late (a wrong value runs the tool body, then is refused)",
    (False, False): "a call_tool that caches nothing (a second identical call runs the body again)",
}


def as_is_probe(rng: random.Random) -> Probe:
    """The untouched module's report into a new folder, with spec-faithful doubles (shared by 5 checks).

    >>> [o.get("double") for o in as_is_probe(random.Random(1)).params["operations"] if o["op"] == "double"]
    ['validate_args', 'validate_result', 'cache_key', 'report_door', 'report_handle']
    """
    return _report_probe(AS_IS, shared_rng(rng, AS_IS), "scratch", {}, [])


def _limit_change(rng: random.Random) -> tuple[list[Any], str]:
    limit = rng.randint(4, 9)  # never 2 or 3, the spec's attempts and limit
    return [op("set", name="MAX_ATTEMPTS", value=limit)], f"MAX_ATTEMPTS = {limit}"


def _limit_one() -> tuple[list[Any], str]:
    """``MAX_ATTEMPTS = 1``: the one limit where a wrong region cannot be repaired, on every seed."""
    return [op("set", name="MAX_ATTEMPTS", value=1)], "MAX_ATTEMPTS = 1"


# The judge-side mark of the module's own handle run outside the report (it never travels: grader.engine.wire).
OUTSIDE = "outside_report"
OUTSIDE_WORDS = "Outside write_report"


def _repair_order(rng: random.Random) -> JsonDict:
    """An order whose only fault is a wrong region, for a sku with stock in the fallback region.

    >>> spec.order_kind(_repair_order(random.Random(3)))
    'repaired'
    """
    skus = sorted({sku for sku, region in spec.stocked_pairs() if region == spec.FALLBACK_REGION})
    wrong = [region for region in UNTIDYABLE_REGIONS if region]  # no tidying makes them allowed
    return {"sku": rng.choice(skus), "region": rng.choice(wrong), "limit": rng.randint(1, spec.MAX_ROWS)}


def _outside_runs(rng: random.Random) -> tuple[list[Any], str]:
    """The module's own ``handle`` of a wrong-region order, twice, before the report and outside it."""
    order = _repair_order(rng)
    operation = dict(call_op(HANDLE, order), **{OUTSIDE: True})
    return [operation, dict(operation)], f"handle({show(order)}) run twice before the report, with the same limit"


def _used_before(rng: random.Random) -> tuple[list[Any], str]:
    """Tool runs before the report: a count must be a difference, not CALLS itself (nor a sum with it)."""
    runs = rng.randint(1, 3)
    calls = [
        call_op(tool, sku, region, 1)
        for tool, (sku, region) in (
            (rng.choice(spec.TOOL_NAMES), rng.choice(spec.stocked_pairs())) for _ in range(runs)
        )
    ]
    return calls, f"the tools already ran {runs} time(s) (CALLS is not 0)"


def changed_probe(rng: random.Random) -> Probe:
    """The changed module's report into its default folder (shared by 2 checks).

    >>> p = changed_probe(random.Random(4))
    >>> p.params["operations"][0]["name"], 4 <= p.params["operations"][0]["value"] <= 9, p.params["fresh"]
    ('MAX_ATTEMPTS', True, True)
    """
    shared = shared_rng(rng, CHANGED)
    extra = ([op("add_tool", name=EXTRA_TOOL, like="stock_lookup")], f"one more tool {EXTRA_TOOL!r} in TOOLS")
    # A result contract that no longer refuses big results: 'too_big' must leave the reasons.
    big = (
        [op("contract", path=[tool, "returns", "rows", "max_len"], value=1000) for tool in spec.TOOL_NAMES],
        "returns['rows']['max_len'] = 1000 for both tools",
    )
    return _report_probe(
        CHANGED,
        shared,
        "default",
        {"leak": True},
        [_limit_change(shared), _used_before(shared), extra, big],
        real_extra=RELAXED_ARGS,
        real_spies=_rows_everywhere(shared),
    )


# On the real route the changed report's contract refuses no value and every call finds rows: a wrong
# value (outside allowed, out of range) reaches the tool body, the order with a wrong region is found at
# once (no fix), the empty order is not given up: blocked_before_call, repaired, attempts and gave_up all
# move from a correct module's as-is values, and the truth is what the module's own functions did.
RELAXED_ARGS = [
    op("contract", path=[tool, "args", arg, rule], delete=True)
    for tool in spec.TOOL_NAMES
    for arg, rule in (("region", "allowed"), ("limit", "min"), ("limit", "max"))
]
# On the real route the no-cache report's contract refuses every result with rows (max_len 0): nothing
# is cached, so the second identical call runs the body, and the repaired order gives up after
# MAX_ATTEMPTS fetches.
NO_ROWS_ALLOWED = [op("contract", path=[tool, "returns", "rows", "max_len"], value=0) for tool in spec.TOOL_NAMES]


def _rows_everywhere(rng: random.Random) -> JsonDict:
    """Spies that run the tools' own bodies (``CALLS`` moves) and give rows where the table has none.

    As if the stock held a row for every sku in every region: no order finds nothing.

    >>> spies = _rows_everywhere(random.Random(1))
    >>> spies["stock_lookup"]["mode"], len(spies["legacy_stock"]["fill_rows"])
    ('original', 1)
    """
    rows = [{"bin": f"R-{rng.randint(10, 99)}", "count": rng.randint(1, 99)}]
    return {tool: {"mode": "original", "fill_rows": rows} for tool in spec.TOOL_NAMES}


def no_cache_probe(rng: random.Random) -> Probe:
    """A report with a door that caches nothing and a handle that repairs and gives up (one check).

    >>> door = next(o for o in no_cache_probe(random.Random(2)).params["operations"] if o.get("name") == "call_tool")
    >>> door["params"]
    {'store': False}
    """
    shared = shared_rng(rng, NO_CACHE)
    # A result contract without the count's minimum: 'range' must leave the reasons.
    no_min = (
        [
            op("contract", path=[tool, "returns", "rows", "item", "count", "min"], delete=True)
            for tool in spec.TOOL_NAMES
        ],
        "no minimum for a row's count in both tools",
    )
    return _report_probe(
        NO_CACHE,
        shared,
        "scratch",
        {"store": False},
        [_limit_change(shared), _used_before(shared), no_min],
        real_extra=NO_ROWS_ALLOWED,
    )


def limit_one_probe(rng: random.Random) -> Probe:
    """The module with ``MAX_ATTEMPTS = 1``, its own ``handle`` run twice before the report (one check).

    >>> p = limit_one_probe(random.Random(2))
    >>> [o.get("value") for o in p.params["operations"] if o.get("name") == "MAX_ATTEMPTS"], p.params["fresh"]
    ([1, None], True)
    """
    shared = shared_rng(rng, LIMIT_ONE)
    limit, (runs, note) = _limit_one(), _outside_runs(shared)
    # The outside runs only on the learner's route: with the doubles (the run that attributes a failure),
    # the module's own handle must not run, or a handle that never ends would keep step 8's failure here.
    return _report_probe(LIMIT_ONE, shared, "scratch", {}, [limit, ([], note)], real_extra=limit[0] + runs)


# --------------------------------------------------------------------------- what the doubles saw


def _double_params(probe: Probe, name: str) -> JsonDict:
    """The params of the double in ``name`` (``{}`` on the real route, where the module's own function ran)."""
    ops = probe.params["operations"]
    return next((o.get("params", {}) for o in ops if o.get("op") == "double" and o["name"] == name), {})


def _seen(obs: JsonDict, name: str) -> list[Any]:
    seen = obs.get("double_seen", {}).get(name, []) if isinstance(obs.get("double_seen"), dict) else []
    return [entry for entry in seen if isinstance(entry, dict)] if isinstance(seen, list) else []


def _outcome(entry: JsonDict) -> str:
    return show(entry["returned"], 160) if "returned" in entry else f"raised {entry.get('raised')}"


def _call_line(name: str, entry: JsonDict, note: str = "") -> str:
    args = entry.get("args")
    args = args if isinstance(args, list) else []
    return f"{name}({', '.join(show(a, 160) for a in args)}) -> {_outcome(entry)}{note}"


ORDER_NOTES = {  # the kinds of grader.engine.doubles_report.order_kind
    "repaired": "an order a correct module ends ok after one fix of its region",
    "empty": "an order a correct module gives up on with an empty result",
    "other": "neither an order a correct module ends ok after one fix of its region nor one it gives up on with an "
    "empty result",
}


def _door_calls(probe: Probe, obs: JsonDict) -> list[JsonDict]:
    """Each ``call_tool`` call of the report: its key, whether its arguments were wrong and the body runs it made.

    Read off what the grader's door returned (see :mod:`grader.engine.doubles_report`).
    """
    params = _double_params(probe, DOOR)
    leak, store = params.get("leak") is True, params.get("store") is not False
    real = on_real_route(probe)
    out: list[Any] = []
    for entry in _seen(obs, DOOR):
        value = entry.get("returned")
        error = value.get("error") if isinstance(value, dict) else None
        ok = isinstance(value, dict) and value.get("ok") is True
        key = entry.get("args")
        if real:  # wrong by the spec's contract: the module's may have been changed to let it through
            wrong = _spec_wrong(key)
            value_wrong = wrong and _names_all_args(key) and key[0] in spec.TOOL_NAMES
        else:
            wrong = isinstance(error, str) and error.startswith(spec.ARGS_PREFIX)
            reason = error[len(spec.ARGS_PREFIX) :] if wrong and isinstance(error, str) else ""
            value_wrong = ":" in reason and reason.split(":", 1)[0] in VALUE_REASONS and _names_all_args(key)
        if type(entry.get("runs")) is int:  # the module's own call_tool, watched: the runs it made
            runs = entry["runs"]
        elif wrong:
            runs = int(leak and value_wrong)
        else:  # a success from the door's cache ran nothing; anything else past validation ran the body
            hit = store and ok and any(c["ok"] and strict_equal(c["key"], key) for c in out if not c["wrong"])
            runs = 0 if hit else 1
        note = f"  (wrong arguments; the body ran {runs} time(s))" if wrong else f"  (the body ran {runs} time(s))"
        out.append(
            {
                "key": key,
                "wrong": wrong,
                "value_wrong": value_wrong,
                "ok": ok,
                "error": error,
                "runs": runs,
                "line": _call_line(DOOR, entry, note),
            }
        )
    return out


def _spec_wrong(key: Any) -> bool:
    """The recorded ``[name, args]`` is a call the spec's contract refuses (:func:`grader.spec.args_reason_of`).

    >>> _spec_wrong(["stock_lookup", {"sku": "S", "region": "north", "limit": 2}])
    False
    >>> [_spec_wrong(["stock_lookup", {"sku": "S", "region": r, "limit": n}]) for r, n in (("mars", 2), ("north", True))]
    [True, True]
    >>> _spec_wrong(["lookup", {}]), _spec_wrong(["stock_lookup", {"sku": "S", "region": "north"}]), _spec_wrong("x")
    (True, True, True)
    """
    return not (isinstance(key, list) and len(key) == 2) or spec.args_reason_of(key[0], key[1]) != ""


def _names_all_args(key: Any) -> bool:
    """The recorded ``[name, args]`` names exactly the contract's arguments (LAB_SPEC step 1: all required).

    >>> _names_all_args(["stock_lookup", {"sku": "S", "region": "r", "limit": 1}]), _names_all_args(["t", {"sku": "S"}])
    (True, False)
    """
    args = key[1] if isinstance(key, list) and len(key) == 2 else None
    return isinstance(args, dict) and sorted(args) == sorted(spec.ARG_NAMES)


def _second_identical(calls: list[Any]) -> tuple[JsonDict, JsonDict] | None:
    """The last call with valid arguments that repeats an earlier one, and that earlier one."""
    for i in range(len(calls) - 1, -1, -1):
        if calls[i]["wrong"]:
            continue
        first = next((c for c in calls[:i] if not c["wrong"] and strict_equal(c["key"], calls[i]["key"])), None)
        if first is not None:
            return first, calls[i]
    return None


def _handle_kinds(probe: Probe, obs: JsonDict) -> list[tuple[str, Any, str]]:
    """``(kind, result, line)`` for each ``handle`` call of the report, the kind known by what it got."""
    params = _double_params(probe, HANDLE)
    out = []
    for entry in _seen(obs, HANDLE):
        value = entry.get("returned")
        if on_real_route(probe):  # the module's own handle: the kind is the order's
            kind = spec.order_kind(entry["args"][0] if isinstance(entry.get("args"), list) and entry["args"] else None)
        else:
            kind = next((k for k in ("repaired", "empty") if strict_equal(value, params.get(k))), "other")
        order = show(entry["args"][0], 160) if isinstance(entry.get("args"), list) and entry["args"] else "?"
        got = (
            ", ".join(f"{k}={show(value[k], 80)}" for k in ("ok", "fixes", "attempts") if k in value)
            if isinstance(value, dict)
            else _outcome(entry)
        )
        out.append((kind, value, f"handle({order}) -> {got}  ({ORDER_NOTES[kind]})"))
    return out


# --------------------------------------------------------------------------- the true values, and the measurement


def _lines_of(calls: list[Any]) -> list[Any]:
    return [c["line"] for c in calls]


def _door_truth(probe: Probe, obs: JsonDict, values: JsonDict, problems: list[Any], lines: JsonDict) -> None:
    """blocked_before_call and memo_second_call_runs as the grader's door ran them, and what blocks reading them."""
    calls = _door_calls(probe, obs)
    lines["blocked_before_call"] = lines["memo_second_call_runs"] = _lines_of(calls)
    wrong = [c for c in calls if c["wrong"]]
    values["blocked_before_call"] = sum(c["runs"] for c in wrong)
    if not wrong:
        problems.append(
            (
                "blocked_before_call",
                "write_report made no call_tool call with wrong arguments, so "
                "blocked_before_call measures nothing: it counts the tool body runs after such calls.",
            )
        )
    elif not any(c["value_wrong"] for c in wrong):
        problems.append(
            (
                "blocked_before_call",
                "None of write_report's wrong calls has all three arguments and a "
                "wrong value (a wrong type, a value outside allowed, a number out of range): with an "
                "argument missing or extra, or an unknown tool, Python's own call fails even without "
                "validation, so the count could never show a body that ran. Add such a call.",
            )
        )
    pair = _second_identical(calls)
    if pair is None:
        problems.append(
            (
                "memo_second_call_runs",
                "write_report made no second identical call_tool call with valid "
                "arguments, so memo_second_call_runs measures nothing: it counts the body runs of that "
                "second call.",
            )
        )
        return
    first, second = pair
    values["memo_second_call_runs"] = second["runs"]
    changed_world = on_real_route(probe) and probe.params.get("expect_report") != AS_IS
    if not first["ok"] and not changed_world:  # in a changed world the first call may fail: the runs still count
        problems.append(
            (
                "memo_second_call_runs",
                f"The first of write_report's two identical calls did not succeed "
                f"({first['error']}): only a success is cached, so the second call measures nothing. "
                "Use arguments that find rows.",
            )
        )


def _reasons_truth(obs: JsonDict, values: JsonDict, problems: list[Any], lines: JsonDict, one_of_each: bool) -> None:
    seen = _seen(obs, RESULTS)
    lines["bad_result_reasons"] = [_call_line(RESULTS, entry) for entry in seen]
    reasons = sorted((e["returned"] for e in seen if "returned" in e), key=str)
    values["bad_result_reasons"] = reasons
    if not seen:
        problems.append(
            (
                "bad_result_reasons",
                "write_report did not call validate_result: bad_result_reasons are "
                "the reasons validate_result gives four bad results.",
            )
        )
    elif one_of_each and reasons != sorted(spec.RESULT_REASONS):
        problems.append(
            (
                "bad_result_reasons",
                f"The spec's validate_result gave write_report's bad results "
                f"{show(reasons)}: make four bad results, one of each kind "
                f"({', '.join(sorted(spec.RESULT_REASONS))}).",
            )
        )


def _handle_truth(probe: Probe, obs: JsonDict, values: JsonDict, problems: list[Any], lines: JsonDict) -> None:
    kinds = _handle_kinds(probe, obs)
    lines["repaired"] = lines["attempts"] = lines["gave_up"] = [line for _, _, line in kinds]
    repaired = next((result for kind, result, _ in kinds if kind == "repaired"), None)
    empty = next((result for kind, result, _ in kinds if kind == "empty"), None)
    if repaired is None:
        problems.append(
            (
                "repaired",
                "write_report gave handle no order that a correct module ends ok after one "
                f"fix of its region (its only fault a wrong region, for a sku with stock in "
                f"{spec.FALLBACK_REGION!r}, e.g. {spec.REPAIR_EXAMPLE}): repaired and attempts are "
                "measured on such an order.",
            )
        )
    elif not isinstance(repaired, dict) or not all(k in repaired for k in ("ok", "fixes", "attempts")):
        problems.append(
            (
                "repaired",
                f"handle returned {show(repaired, 160)} for the order with a wrong region: "
                "repaired and attempts are read off its ok, fixes and attempts.",
            )
        )
    else:
        values["repaired"] = bool(repaired["ok"] is True and repaired["fixes"])
        values["attempts"] = repaired["attempts"]
        _same_as_outside(probe, obs, repaired, problems, lines)
    if empty is None:
        problems.append(
            (
                "gave_up",
                "write_report gave handle no order that a correct module gives up on with an "
                f"empty result (e.g. {spec.EMPTY_EXAMPLE}): gave_up is measured on such an order.",
            )
        )
    else:
        values["gave_up"] = (empty.get("ok") if isinstance(empty, dict) else None) is not True


def _ending(result: JsonDict) -> tuple[str, str, str]:
    """How a ``handle`` run ended, as the report reads it, shown: ok, the number of fixes, attempts.

    >>> _ending({"ok": False, "fixes": [], "attempts": 1})
    ('False', '0', '1')
    """
    fixes = result.get("fixes")
    count = str(len(fixes)) if isinstance(fixes, list) else show(fixes, 80)
    return show(result.get("ok"), 80), count, show(result.get("attempts"), 80)


def _same_as_outside(probe: Probe, obs: JsonDict, inside: JsonDict, problems: list[Any], lines: JsonDict) -> None:
    """On the learner's route: the report's handle of a wrong-region order ended as the run outside it did.

    Both ran with the same ``MAX_ATTEMPTS`` and contract, so a difference is the report measuring under
    conditions of its own (a limit it set or pinned), not the module as it is.
    """
    ops = probe.params["operations"]
    at = [i for i, o in enumerate(ops) if o.get(OUTSIDE)]
    if not at or not on_real_route(probe):
        return
    records = records_of(probe, obs)
    outside = [records[i].get("value") for i in at]
    if not all(isinstance(v, dict) and all(k in v for k in ("ok", "fixes", "attempts")) for v in outside):
        return  # the module's handle itself is judged by step 7
    endings = {_ending(v) for v in outside}
    if len(endings) != 1 or _ending(inside) in endings:
        return  # the same order ended two ways outside: step 7 judges such a handle, not the report
    ok, fixes, attempts = _ending(outside[0])
    inside_ok, _, inside_attempts = _ending(inside)
    lines["attempts"] = lines["repaired"] = [
        f"{ops[at[0]]['label']} -> ok={ok}, {fixes} fix(es), attempts={attempts}  (before the report)"
    ] + list(lines["attempts"])
    problems.append(
        (
            "attempts",
            f"{OUTSIDE_WORDS}, with the same MAX_ATTEMPTS ({_limit_when_written(probe, obs)}), your handle "
            f"of an order with a wrong region ended ok={ok} after {attempts} attempt(s); inside "
            f"write_report it ended ok={inside_ok} after {inside_attempts}. Measure "
            "the module as it is when the report is written: never set or pin MAX_ATTEMPTS while measuring.",
        )
    )


def _truth(probe: Probe, obs: JsonDict, *, one_of_each: bool) -> tuple[JsonDict, list[Any], JsonDict]:
    """``(values, problems, lines)``: the true report of this probe, what the spec's measurement lacks, the calls.

    ``one_of_each``: the bad results must give one reason of each kind (true in the untouched module only).
    """
    ops, records = probe.params["operations"], records_of(probe, obs)
    values: JsonDict = {}
    problems: list[Any] = []
    lines: JsonDict = {"tools": []}
    tools_rec = records[next(i for i, o in enumerate(ops) if o.get("op") == "keys")]
    if tools_rec.get("not_dict") or not isinstance(tools_rec.get("value"), list):
        raise Fail("The grader could not read the keys of TOOLS after the report.", call="sorted(TOOLS)")
    values["tools"] = sorted(tools_rec["value"], key=str)
    _door_truth(probe, obs, values, problems, lines)
    _reasons_truth(obs, values, problems, lines, one_of_each)
    _handle_truth(probe, obs, values, problems, lines)
    # A function the grader could not watch (a nested function's code cannot be swapped): the numbers
    # measured through it are not judged on the real route, rather than judged against nothing.
    unwatched = {rec.get("unwatched") for o, rec in zip(ops, records) if o.get("op") == "watch"}
    skipped = {key for name in unwatched for key in MEASURED_THROUGH.get(name, ())}
    for key in skipped:
        values.pop(key, None)
    return values, [(key, text) for key, text in problems if key not in skipped], lines


MEASURED_THROUGH = {
    DOOR: ("blocked_before_call", "memo_second_call_runs"),
    RESULTS: ("bad_result_reasons",),
    HANDLE: ("repaired", "attempts", "gave_up"),
}


def _why(probe: Probe, key: str) -> str:
    """What the grader's doubles (or, on the real route, the module's own functions) did for ``key``, in one sentence."""
    if on_real_route(probe):
        return (
            f"The call line shows what your own call_tool, validate_result and handle did during write_report; "
            f"{key} must be measured from those calls (LAB_SPEC step 8)."
        )
    door = _double_params(probe, DOOR)
    if key == "blocked_before_call":
        return (
            "In this report the grader's call_tool validates too late: a wrong value in a call with all its "
            "arguments runs the tool body, then the call is refused. Count the body runs during write_report's "
            "wrong calls (e.g. the change of CALLS)."
            if door.get("leak") is True
            else "The grader's call_tool refused every wrong call before its body: none ran."
        )
    if key == "memo_second_call_runs":
        return (
            "The grader's call_tool cached a success, so the second identical call ran no body."
            if door.get("store") is not False
            else "In this report the grader's call_tool caches nothing: the second identical call ran the body "
            "again. Count the runs during that second call only."
        )
    if key == "bad_result_reasons":
        return "The grader's validate_result (over TOOLS as it is now) gave write_report's bad results these reasons."
    if key == "tools":
        return "sorted(TOOLS), as TOOLS is when the report is written."
    return (
        "The grader's handle returned the results the call line shows: repaired is ok with at least one fix, "
        "attempts that run's attempts, gave_up is not ok of the empty order's run."
    )


def _call_with(operation: JsonDict, lines: list[Any]) -> str:
    shown = lines[:SHOWN_CALLS]
    more = [f"... and {len(lines) - SHOWN_CALLS} more"] if len(lines) > SHOWN_CALLS else []
    return "\n".join([operation["label"]] + [f"    {line}" for line in shown + more])


def _values_judge(
    probes: list[Probe], observations: list[Observation], *, one_of_each: bool = True, anywhere: bool = False
) -> Verdict:
    """Each number in the written JSON equals its true value, read off the doubles' records of the report."""
    for probe, obs in zip(probes, observations):
        operation, rec = _report_record(probe, obs)
        report = _files(operation, rec, anywhere=anywhere)["json"]
        if not isinstance(report, dict) or any(k.startswith("$") for k in report):
            raise Fail(f"{JSON_FILE} must hold a JSON object.", call=operation["label"], got=show(report))
        values, problems, lines = _truth(probe, obs, one_of_each=one_of_each)
        if problems:
            key, message = problems[0]
            # The outside run's difference appears only when a limit changes: json_values cannot have shown it.
            own = one_of_each or message.startswith(OUTSIDE_WORDS)
            follows = "" if own else "This follows from `step8/json_values`: fix that first. "
            raise Fail(
                follows + message,
                call=_call_with(operation, lines[key]),
                expected=f"a measured {key}",
                got=f"{key}: {show(report.get(key))}",
            )
        for key in spec.REPORT_KEYS:
            if key not in values and key in report:  # not measurable on this route (see _truth)
                continue
            if key not in report:
                raise Fail(
                    f"{JSON_FILE} has no key {key!r}.",
                    call=operation["label"],
                    expected=f"a key {key!r}",
                    got=show(sorted(report)),
                )
            if not strict_equal(report[key], encode(values[key])):
                raise Fail(
                    f"{key!r} in {JSON_FILE} is not what the module does now. {_why(probe, key)}",
                    call=_call_with(operation, lines[key]),
                    expected=f"{key}: {show(encode(values[key]))}",
                    got=f"{key}: {show(report[key])}",
                )
    return Verdict.ok()


# --------------------------------------------------------------------------- files and the returned dict


def _files_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    for probe, obs in zip(probes, observations):
        _files(*_report_record(probe, obs), md_needed=True)
    return Verdict.ok()


add(
    "step8/writes_both_files",
    2,
    f"write_report(folder) writes {JSON_FILE} and {MD_FILE} there",
    f"Write both files into the folder you are given (Path(folder) / '{JSON_FILE}'); the JSON must load "
    "with json.load and the Markdown be UTF-8.",
    ["8.files"],
    lambda rng: [as_is_probe(rng)],
    _files_judge,
)

add(
    "step8/default_folder",
    1,
    "write_report() without a folder writes next to the module file",
    "If write_report() raised, fix that first (the message shows the exception). Default folder: the folder "
    "that holds tools.py (think of __file__), not the current working folder.",
    ["8.default_folder"],
    lambda rng: [changed_probe(rng)],
    _files_judge,
)


def _returns_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    operation, rec = _report_record(probes[0], observations[0])
    files = _files(operation, rec)
    value = rec["value"]
    if not isinstance(value, dict) or not strict_equal(value, files["json"]):
        raise Fail(
            f"write_report must return the same dict it wrote to {JSON_FILE}.",
            call=operation["label"],
            expected=show(files["json"]),
            got=show(value),
        )
    return Verdict.ok()


add(
    "step8/returns_json_dict",
    2,
    "write_report returns the dict it wrote as JSON",
    "Build the dict once, write it with json.dump and return that same dict.",
    ["8.returns"],
    lambda rng: [as_is_probe(rng)],
    _returns_judge,
)


# --------------------------------------------------------------------------- values


add(
    "step8/json_values",
    3,
    f"Every value of {JSON_FILE} is measured as the spec says, and matches",
    "Obtain each number by running the module in write_report: sorted(TOOLS); tool body runs (CALLS) during "
    "call_tool calls with wrong arguments, one of them a wrong value; the sorted reasons validate_result gives four "
    "bad results, one of each kind; the body runs of a second identical call_tool call that succeeds; handle on an "
    "order with a wrong region (repaired, attempts) and on one the table has no rows for (gave_up).",
    ["8.values"],
    lambda rng: [as_is_probe(rng)],
    _values_judge,
)


# --------------------------------------------------------------------------- Markdown


def headings_of(md: str) -> list[str]:
    """The ``## `` heading lines of ``md``.

    >>> headings_of("# T\\n## A \\ntext\\n## B")
    ['## A', '## B']
    """
    return [line.rstrip() for line in md.splitlines() if line.startswith("## ")]


def failure_section(md: str) -> str | None:
    """The text under the 'failure path' heading, up to the next ## heading.

    >>> failure_section("## How failure was handled as a path\\nAt most 3.\\n## Other\\nx")
    'At most 3.'
    """
    lines, inside, out = md.splitlines(), False, []
    for line in lines:
        if line.startswith("## "):
            inside = line.rstrip() in FAILURE_HEADINGS
            continue
        if inside:
            out.append(line)
    return "\n".join(out) if any(line.rstrip() in FAILURE_HEADINGS for line in lines) else None


def _md(probe: Probe, obs: JsonDict, *, anywhere: bool = False) -> tuple[JsonDict, str]:
    operation, rec = _report_record(probe, obs)
    return operation, _files(operation, rec, json_needed=False, md_needed=True, anywhere=anywhere)["md"]


def _headings_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    operation, md = _md(probes[0], observations[0])
    found = headings_of(md)
    for _name, wanted in spec.HEADING_SETS.items():
        if sorted(found) == sorted(wanted):
            return Verdict.ok()
    raise Fail(
        f"{MD_FILE} needs exactly four ## sections, all four headings from one set (Korean or English, "
        "as in the step 8 notes).",
        call=operation["label"],
        expected="\n".join(spec.HEADING_SETS["English"]),
        got="\n".join(found) or "no ## headings",
    )


add(
    "step8/md_headings",
    2,
    f"{MD_FILE} has the four ## sections of one heading set",
    "Copy the four headings exactly (one set: all Korean or all English) as lines starting with '## '.",
    ["8.headings"],
    lambda rng: [as_is_probe(rng)],
    _headings_judge,
)


def _limit_in_md(operation: JsonDict, md: str, limit: int) -> None:
    section = failure_section(md)
    if section is None:
        raise Fail(
            f"{MD_FILE} has no failure-path section ({spec.HEADING_SETS['English'][-1]}).",
            call=operation["label"],
            expected="that heading",
            got="\n".join(headings_of(md)),
        )
    if not mentions_number(section, limit):
        raise Fail(
            "The failure-path section must state the attempt limit, the value of MAX_ATTEMPTS when the "
            "report is written.",
            call=operation["label"],
            expected=f"the number {limit} in that section",
            got=section.strip()[:400],
        )


def _limit_when_written(probe: Probe, obs: JsonDict) -> int:
    """``MAX_ATTEMPTS`` as the module held it when the report was written (the spec's 3 if not an int)."""
    ops, records = probe.params["operations"], records_of(probe, obs)
    rec = records[next(i for i, o in enumerate(ops) if o.get("op") == "attr" and o.get("name") == "MAX_ATTEMPTS")]
    value = rec.get("value")
    return value if type(value) is int else spec.MAX_ATTEMPTS


def _attempt_limit_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    operation, md = _md(probes[0], observations[0])
    _limit_in_md(operation, md, _limit_when_written(probes[0], observations[0]))
    return Verdict.ok()


add(
    "step8/md_attempt_limit",
    1,
    "The failure section states the attempt limit (MAX_ATTEMPTS)",
    "Write MAX_ATTEMPTS into the last section with an f-string, e.g. 'The attempt limit is {MAX_ATTEMPTS}.'",
    ["8.attempt_limit"],
    lambda rng: [as_is_probe(rng)],
    _attempt_limit_judge,
)


def _follows_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    _values_judge(probes, observations, one_of_each=False, anywhere=True)
    for probe, obs in zip(probes, observations):
        operation, md = _md(probe, obs, anywhere=True)
        _limit_in_md(operation, md, _limit_when_written(probe, obs))
    return Verdict.ok()


add(
    "step8/follows_module",
    3,
    "The report follows the module when it changes (no hand-written numbers)",
    "The grader writes three more reports of a changed module: another MAX_ATTEMPTS (1 among them, where no repair "
    "fits, beside the module's own handle run outside the report), one more tool, result contracts "
    "that keep big results or negative counts, a call_tool that validates too late or caches nothing, a handle that "
    "finds rows at once or repairs and still gives up. Every number in both files must come from running the "
    "module at that moment.",
    ["8.values", "8.attempt_limit"],
    lambda rng: [changed_probe(rng), no_cache_probe(rng), limit_one_probe(rng)],
    _follows_judge,
)
