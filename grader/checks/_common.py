"""Helpers shared by the step modules: building ``calls`` probes and judging them.

A check's probes carry, next to what the child must do, what the parent
expects (``expect`` keys the child ignores). Judges read the observations
through :class:`Fail`-raising helpers so that whatever came back -- a missing
key, a wrong type, a learner value of any shape -- ends in a clear failed
:class:`~grader.checks.registry.Verdict`, never in an exception.

Example::

    >>> p = call_probe([call_op("validate_args", "stock_lookup", {"limit": 1}, expect="missing:sku")])
    >>> obs = {"records": [{"value": "missing:sku", "spy_runs": {}, "calls": None}]}
    >>> judge_expectations([p], [obs], "wrong reason").passed
    True
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable, Iterable
from typing import Any

from grader import spec
from grader.checks.registry import Check, Judge, Observation, Probe, ProbeFactory, Verdict, register
from grader.engine.encode import encode, show, strict_equal
from grader.engine.wire import JsonDict

TOOL_SPIES_ORIGINAL = {"stock_lookup": {"mode": "original"}, "legacy_stock": {"mode": "original"}}
TOOL_SPIES_TABLE = {"stock_lookup": {"mode": "table"}, "legacy_stock": {"mode": "table", "ignore_limit": True}}


def every_route(spies: JsonDict) -> JsonDict:
    """``spies`` acting on every route a ``call_tool`` could call a tool by, not only ``TOOLS[name]['fn']``.

    The module's own tool functions (and the function objects themselves) then
    return or raise what the spy does: a check of a later step feeds its values
    to a ``call_tool`` that goes around the table too, so that fault costs step 3
    (``calls_through_table``) and nothing else.

    >>> every_route({"stock_lookup": {"mode": "raise", "exc": "KeyError"}})
    {'stock_lookup': {'mode': 'raise', 'exc': 'KeyError', 'every_route': True}}
    """
    return {name: {**spec, "every_route": True} for name, spec in spies.items()}


class Fail(Exception):
    """Raised inside a judge to fail the check with these fields."""

    def __init__(self, message: str, *, call: str = "", expected: Any = "", got: Any = "") -> None:
        super().__init__(message)
        self.message, self.call, self.expected, self.got = message, call, expected, got


# A judge as a check module writes it: it returns a verdict, or anything else (None) for a pass.
RawJudge = Callable[[list[Probe], list[Observation]], object]


def safe_judge(fn: RawJudge) -> Judge:
    """Turn :class:`Fail` into a failed verdict, and an unreadable observation into one too."""

    @functools.wraps(fn)
    def judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
        try:
            result = fn(probes, observations)
        except Fail as exc:
            return Verdict.fail(exc.message, call=exc.call, expected=exc.expected, got=exc.got)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            return Verdict.fail(
                f"The grader could not read what your code returned "
                f"({type(exc).__name__}: {exc}); look at the call and its return value."
            )
        return result if isinstance(result, Verdict) else Verdict.ok()

    return judge


def add(
    check_id: str,
    points: int,
    title: str,
    hint: str,
    rules: Iterable[str],
    probes: ProbeFactory,
    judge: RawJudge,
) -> Check:
    """Register one check; the step comes from the id and the judge is made safe.

    ``rules`` name the LAB_SPEC rules the check covers, as ``"<step>: <rule>"``.
    """
    step_no = int(check_id.split("/")[0][len("step") :])
    return register(
        Check(
            id=check_id,
            step=step_no,
            points=points,
            title=title,
            hint=hint,
            probes=probes,
            judge=safe_judge(judge),
            rules=tuple(rules),
        )
    )


# ---------------------------------------------------------------------------
# Building probes
# ---------------------------------------------------------------------------


def call_text(fn: str, *args: Any) -> str:
    """The learner-facing call as Python text.

    >>> call_text("validate_args", "stock_lookup", {"limit": True})
    "validate_args('stock_lookup', {'limit': True})"
    """
    return f"{fn}({', '.join(repr(a) for a in args)})"


def call_op(fn: str, *args: Any, expect: Any = ..., runs: JsonDict | None = None, label: str = "") -> JsonDict:
    """One ``call`` operation; ``expect`` (a plain value) and ``runs`` are for the judge only."""
    out: JsonDict = {"op": "call", "fn": fn, "args": encode(list(args)), "label": label or call_text(fn, *args)}
    if expect is not ...:
        out["expect"] = encode(expect)
    if runs is not None:
        out["runs"] = runs
    return out


def op(operation: str, **fields: Any) -> JsonDict:
    """A non-call operation (``set``, ``contract``, ``cache``, ``attr``, ``keys``, ``report``...)."""
    out = {"op": operation}
    for key, value in fields.items():
        out[key] = encode(value) if key == "value" else value
    return out


def double_op(name: str, kind: str = "", **params: Any) -> JsonDict:
    """A ``double`` operation: the grader's spec-faithful ``kind`` (default: ``name``) in the module name ``name``.

    For the rest of the probe a call of ``name`` runs the double (:mod:`grader.engine.doubles`), so a
    check judges its own step's function, not the step that ``name`` belongs to. ``params`` go to the
    kind as they are, values encoded (``refuse``, ``script``, ``results``, ``when``...).

    >>> double_op("validate_args", refuse=[["stock_lookup", {"limit": (1,)}, "type:limit"]])["params"]
    {'refuse': [['stock_lookup', {'limit': {'$tuple': [1]}}, 'type:limit']]}
    >>> double_op("validate_args")
    {'op': 'double', 'name': 'validate_args', 'double': 'validate_args', 'params': {}}
    """
    return {
        "op": "double",
        "name": name,
        "double": kind or name,
        "params": {key: encode(value) for key, value in params.items()},
    }


# The other steps' functions ``call_tool`` calls by name: a check of one of steps 3-5 puts the grader's
# doubles in the names that are not its own step's (``own_route``).
DOOR_PARTS = ("validate_args", "validate_result", "cache_key")


def own_route(*names: str, **params: Any) -> list[Any]:
    """``double`` operations for ``names``: the functions of other steps that a check must not judge.

    ``params`` go to every double (``contract="spec"``: the spec's contract table, not the module's).

    >>> [operation["name"] for operation in own_route("validate_args", "cache_key")]
    ['validate_args', 'cache_key']
    >>> own_route("cache_key", contract="spec")[0]["params"]
    {'contract': 'spec'}
    """
    return [double_op(name, **params) for name in names]


def real_route(probe: Probe) -> Probe | None:
    """``probe`` as the learner wired it: no ``double`` operations, and tools whose results echo their call.

    ``None`` when ``probe`` puts no double in (it already runs on the learner's route). The
    grading runs this form first; the form with the doubles runs only to attribute a failure
    (:func:`grader.grading.grade`). A ``return`` spy then names the sku and region of the call
    the learner's own code made (``echo``), so its world is one the spec's tools could make.

    >>> p = call_probe(own_route("cache_key") + [call_op("cache_key", "t", {})],
    ...                spies={"stock_lookup": {"mode": "return", "value": {"rows": []}}})
    >>> real = real_route(p)
    >>> [o["op"] for o in real.params["operations"]], real.params["spies"]["stock_lookup"]["echo"]
    (['call'], True)
    >>> door = real_route(call_probe([double_op("call_tool"), call_op("run_naive", {})]))
    >>> [(o["op"], o.get("name", o.get("fn"))) for o in door.params["operations"]]
    [('watch', 'call_tool'), ('call', 'run_naive')]
    >>> real_route(call_probe([call_op("cache_key", "t", {})])) is None
    True
    >>> w = real_route(call_probe(own_route("handle") + [call_op("f")], watch_on_real=["handle"]))
    >>> [o["op"] for o in w.params["operations"]], "watch_on_real" in w.params
    (['watch', 'call'], False)
    """
    operations = probe.params.get("operations") if probe.kind == "calls" else None
    if not isinstance(operations, list) or not any(o.get("op") == "double" for o in operations):
        return None
    spies = {
        name: (dict(spy, echo=True) if spy.get("mode") == "return" else spy)
        for name, spy in (probe.params.get(REAL_SPIES_KEY) or probe.params.get("spies") or {}).items()
    }
    # call_tool is always watched where it was doubled: the judges read the calls the door got (which
    # tool, which arguments, what came back) from the module's own door as they did from the double's.
    watched = list(probe.params.get(WATCH_KEY) or []) + [WATCHED_ALWAYS]
    real_ops = list(probe.params.get(REAL_EXTRA_KEY) or [])
    for operation in operations:
        if operation.get("op") != "double":
            real_ops.append(operation)
        elif operation["name"] in watched and {"op": "watch", "name": operation["name"]} not in real_ops:
            real_ops.append({"op": "watch", "name": operation["name"]})
    params = {
        key: value for key, value in probe.params.items() if key not in (WATCH_KEY, REAL_EXTRA_KEY, REAL_SPIES_KEY)
    }
    params.update(operations=real_ops, spies=spies)
    params[ROUTE_KEY] = REAL
    return Probe(probe.kind, params, probe.label)


ROUTE_KEY, REAL = "route", "real"
WATCHED_ALWAYS = "call_tool"
# A probe's params may name doubled functions to watch instead on the real route (their calls then
# come back under ``double_seen`` as a double's would, ``grader.engine.probes`` ``watch``), and
# operations to run first on the real route only and the tools' spies there (a change of the module's
# data that makes a measured number move there).
WATCH_KEY, REAL_EXTRA_KEY, REAL_SPIES_KEY = "watch_on_real", "real_extra", "real_spies"


def on_real_route(probe: Probe) -> bool:
    """``probe`` is the real-route form of a probe that had doubles (:func:`real_route`)."""
    return probe.params.get(ROUTE_KEY) == REAL


def doubled_steps(probes: list[Probe]) -> set[int]:
    """The steps whose rules the doubles of ``probes`` stand in for (:data:`grader.spec.FUNCTION_STEPS`).

    A double over the spec's contract table (``contract="spec"``, or a ``*_spec`` kind) stands in
    for step 1's table too.

    >>> sorted(doubled_steps([call_probe(own_route("validate_args", "cache_key"))]))
    [2, 5]
    >>> sorted(doubled_steps([call_probe(own_route("validate_args", contract="spec"))]))
    [1, 2]
    """
    steps = {step for name in doubled_names(probes) for step in spec.FUNCTION_STEPS.get(name, ())}
    for probe in probes:
        for operation in probe.params.get("operations") or []:
            if (
                isinstance(operation, dict)
                and operation.get("op") == "double"
                and (
                    operation.get("params", {}).get("contract") == "spec"
                    or str(operation.get("double", "")).endswith("_spec")
                )
            ):
                steps.add(1)
    return steps


def doubled_names(probes: list[Probe]) -> list[str]:
    """The module names the ``double`` operations of ``probes`` replace, in order, once each.

    >>> doubled_names([call_probe(own_route("validate_args", "cache_key"))])
    ['validate_args', 'cache_key']
    """
    names: list[str] = []
    for probe in probes:
        for operation in probe.params.get("operations") or []:
            if isinstance(operation, dict) and operation.get("op") == "double" and operation["name"] not in names:
                names.append(operation["name"])
    return names


def judged(probe: Probe, records: list[Any]) -> list[Any]:
    """``(operation, record)`` pairs of a probe without its ``double`` operations (which return nothing).

    >>> p = call_probe(own_route("cache_key") + [call_op("cache_key", "t", {})])
    >>> [operation["op"] for operation, _ in judged(p, [{}, {"value": "k"}])]
    ['call']
    """
    return [
        (operation, rec)
        for operation, rec in zip(probe.params["operations"], records)
        if operation.get("op") != "double"
    ]


def call_probe(
    ops: list[Any],
    *,
    spies: JsonDict | None = None,
    fresh: bool = False,
    reset: bool = False,
    clear_cache: bool = True,
    **extra: Any,
) -> Probe:
    """A ``calls`` probe of ``ops`` (sent under the wire key ``operations``); its label is the first labelled operation.

    ``fresh``: it starts from the module as just imported (a fork of the step
    child). ``reset``: it runs on the step's shared module, which the spec lets
    the grader reset between cases (``CACHE`` cleared; the probe's spies and
    ``set`` names undone), and its checks judge counts as differences; an
    identical one asked by several checks then runs once (see
    :func:`grader.grading._draw_plan`), like a fresh one, at a fraction of a
    fork's cost.

    >>> call_probe([], reset=True).params["reset"], call_probe([]).params["fresh"]
    (True, False)
    """
    params = {"operations": ops, "spies": spies or {}, "fresh": fresh, "clear_cache": clear_cache}
    if reset:
        params["reset"] = True
    params.update(extra)
    label = next((s["label"] for s in ops if s.get("label")), "")
    return Probe("calls", params, label)


# ---------------------------------------------------------------------------
# Reading observations
# ---------------------------------------------------------------------------


def records_of(probe: Probe, obs: Any) -> list[Any]:
    """The records of a ``calls`` observation, or :class:`Fail` with the reason there are none."""
    if not isinstance(obs, dict):
        raise Fail("The grader received no usable observation for this probe.", call=probe.label)
    if "setup_error" in obs:
        raise Fail(f"The grader could not set up this probe: {obs['setup_error']}.", call=probe.label)
    if "raised" in obs:
        raise Fail(f"Your code raised {obs['raised']}: {obs.get('message', '')}{crash_where(obs)}", call=probe.label)
    records = obs.get("records")
    if not isinstance(records, list) or len(records) != len(probe.params.get("operations", [])):
        raise Fail("The probe did not run to the end.", call=probe.label)
    return records


def crash_where(record: JsonDict) -> str:
    """Where in the learner's file a call raised, when the step child saw it: `` (line 12, in f)`` or ``""``.

    >>> crash_where({"raised": "ValueError", "line": 12, "function": "_int_fix"}), crash_where({})
    (' (line 12, in _int_fix)', '')
    """
    line, function = record.get("line"), record.get("function")
    if not isinstance(line, int) or isinstance(line, bool):
        return ""
    return f" (line {line}, in {function})" if isinstance(function, str) and function else f" (line {line})"


def outcome(record: JsonDict) -> str:
    """What a call did, in words: ``returned ...`` / ``raised ...`` / ``name missing``."""
    if "missing" in record:
        return f"the module has no name {record['missing']!r}"
    if "passed_through" in record:
        return f"let {record['passed_through']} through"
    if "raised" in record:
        msg = record.get("message") or ""
        return f"raised {record['raised']}" + (f": {msg}" if msg else "") + crash_where(record)
    if "value" in record:
        return show(record["value"])
    return "nothing was recorded"


def value_of(rec: JsonDict, operation: JsonDict, message: str) -> Any:
    """The returned (encoded) value of a call record, or :class:`Fail` when it raised."""
    if "value" not in rec:
        raise Fail(message, call=operation.get("label", ""), expected="a return value", got=outcome(rec))
    return rec["value"]


def check_expect(operation: JsonDict, rec: JsonDict, message: str, start: JsonDict | None = None) -> None:
    """Compare one record with its operation's ``expect`` (strict types), and its spy ``runs``.

    When ``runs`` says no tool body may have run yet, ``CALLS`` must also be
    where it was at the probe's ``start``: the spies see the functions the
    grader can swap, ``CALLS`` sees a body reached any other way (LAB_SPEC:
    CALLS stays the same after wrong arguments).
    """
    if "expect" in operation:
        if "value" not in rec or not strict_equal(rec["value"], operation["expect"]):
            raise Fail(message, call=operation.get("label", ""), expected=show(operation["expect"]), got=outcome(rec))
    if "runs" in operation:
        runs = rec.get("spy_runs", {})
        for tool, n in operation["runs"].items():
            if runs.get(tool) != n:
                raise Fail(
                    f"The body of {tool} ran {runs.get(tool)} time(s) by the end of this call; "
                    f"it should have run {n} time(s).",
                    call=operation.get("label", ""),
                    expected=f"{n} run(s) of {tool}",
                    got=f"{runs.get(tool)} run(s)",
                )
        if start is not None and not any(operation["runs"].values()):
            check_calls_unchanged(start.get("calls"), rec.get("calls"), operation.get("label", ""))


def check_calls_unchanged(
    before: Any,
    after: Any,
    call: str,
    message: str = "CALLS changed although no tool body may run here: a tool body "
    "ran, even if not through TOOLS[name]['fn'].",
) -> None:
    """:class:`Fail` when ``CALLS`` moved between two records (skipped when it is not a dict of ints).

    >>> check_calls_unchanged({"stock_lookup": 2}, {"stock_lookup": 2}, "x")
    >>> try:
    ...     check_calls_unchanged({"stock_lookup": 2, "legacy_stock": 0}, {"stock_lookup": 3, "legacy_stock": 0}, "x")
    ... except Fail as exc:
    ...     print(exc.got)
    CALLS changed by stock_lookup: +1
    """
    delta = calls_delta(before, after)
    moved = {tool: n for tool, n in sorted((delta or {}).items(), key=lambda kv: str(kv[0])) if n}
    if moved:
        raise Fail(
            message,
            call=call,
            expected="CALLS unchanged",
            got="CALLS changed by " + ", ".join(f"{tool}: {n:+d}" for tool, n in moved.items()),
        )


def judge_expectations(
    probes: list[Probe], observations: list[Observation], message: str, *, whole_probe: bool = False
) -> Verdict:
    """Every operation's ``expect``/``runs`` holds, else a failed verdict naming the first miss.

    ``whole_probe``: the failed verdict's call line shows every call of the probe up to the miss
    (a count or a cache can be changed by an earlier call, and the learner must see that call too).
    """
    try:
        for probe, obs in zip(probes, observations):
            records = records_of(probe, obs)
            start = obs.get("start") if isinstance(obs.get("start"), dict) else None
            labels: list[Any] = []
            for operation, rec in judged(probe, records):
                labels.append(operation.get("label", ""))
                try:
                    # An operation may carry its own sentence (judge-only ``expect_why``): the cause it points at.
                    check_expect(operation, rec, operation.get("expect_why") or message, start)
                except Fail as exc:
                    if whole_probe:
                        exc.call = "; then ".join(label for label in labels if label)
                    raise
    except Fail as exc:
        return Verdict.fail(exc.message, call=exc.call, expected=exc.expected, got=exc.got)
    return Verdict.ok()


def expectations_judge(message: str, *, whole_probe: bool = False) -> Judge:
    """A judge that runs :func:`judge_expectations` with ``message`` for any miss."""
    return lambda probes, observations: judge_expectations(probes, observations, message, whole_probe=whole_probe)


# The repr of a mapping the encoding keeps opaque (a dict subclass): ``Counter({...})``,
# ``defaultdict(<class 'int'>, {...})``, ``OrderedDict([(k, v), ...])``.
_MAPPING_REPR = re.compile(r"^[A-Za-z_][\w.]*\((?:.*?, )?(\{.*\}|\[.*\])\)$", re.S)


def counts_of(value: Any) -> JsonDict | None:
    """The counts an encoded ``CALLS`` holds (name -> int), whatever dict type holds them; else ``None``.

    The spec asks for counts, not for a container type: a ``collections.Counter``
    or a ``defaultdict(int)`` with the right numbers is as right as a dict. The
    encoding keeps a dict subclass opaque (its repr), so its items are read back
    from that repr here, in the parent, by a literal parse (no code runs).

    >>> counts_of({"stock_lookup": 2, "legacy_stock": 0})
    {'stock_lookup': 2, 'legacy_stock': 0}
    >>> counts_of({"$type": "Counter", "$repr": "Counter({'stock_lookup': 5, 'legacy_stock': 0})"})
    {'stock_lookup': 5, 'legacy_stock': 0}
    >>> counts_of({"$type": "defaultdict", "$repr": "defaultdict(<class 'int'>, {'stock_lookup': 1})"})
    {'stock_lookup': 1}
    >>> counts_of({"stock_lookup": True}) is None, counts_of([1]) is None
    (True, True)
    """
    if isinstance(value, dict) and "$type" in value:
        match = _MAPPING_REPR.match(str(value.get("$repr", "")))
        try:
            parsed = ast.literal_eval(match.group(1)) if match else None
            value = dict(parsed) if parsed is not None else None
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
    if not isinstance(value, dict) or any(k.startswith("$") for k in value if isinstance(k, str)):
        return None
    if not all(type(k) is str and type(n) is int for k, n in value.items()):
        return None
    return value


def calls_delta(before: Any, after: Any) -> JsonDict | None:
    """``CALLS`` after minus before, when both hold int counts (:func:`counts_of`); else ``None``.

    >>> calls_delta({"stock_lookup": 1}, {"$type": "Counter", "$repr": "Counter({'stock_lookup': 2})"})
    {'stock_lookup': 1}
    """
    before, after = counts_of(before), counts_of(after)
    if before is None or after is None:
        return None
    return {key: after.get(key, 0) - before.get(key, 0) for key in set(before) | set(after)}


def mentions_number(text: str, number: int) -> bool:
    """``number`` appears in ``text`` as a whole number (not inside another one).

    >>> mentions_number("limit is 3.", 3), mentions_number("SKU-1300", 3)
    (True, False)
    """
    return re.search(rf"(?<![\d\-.]){number}(?!\d)", text) is not None


def get_field(value: Any, key: str, call: str, what: str = "the result") -> Any:
    """``value[key]`` of an encoded plain dict, or :class:`Fail`."""
    if not isinstance(value, dict) or any(k.startswith("$") for k in value):
        raise Fail(f"{what} should be a plain dict.", call=call, expected="a dict", got=show(value))
    if key not in value:
        raise Fail(f"{what} has no key {key!r}.", call=call, expected=f"a key {key!r}", got=show(value))
    return value[key]
