"""Step 10 checks: errors as prompts (``explain``, ``retry_with_suggestion``; LAB_SPEC part two).

``explain`` is judged with the grader's ``validate_args`` in the module (step 2
is not judged here) and with contracts the grader writes into ``TOOLS``: the
spec's, and one with another allowed list and other bounds, so a suggestion
must follow the table, not a list typed into ``explain``. Every class of
value (zero, one and two allowed values at edit distance 1, a swap of two
neighbouring letters (two edits), values between non-ASCII blanks (step 9's
strip keeps them), a sharp s (``str.lower`` keeps it), digit strings in and
out of range, the values ``int_from_str`` must refuse, extra arguments, the
reasons that have no fix) is sent on every run; the seed picks values inside
each class. The parent works out every expected field from the spec; the
suggestion and retry checks also see that the caller's ``args`` are the same
after the call (a suggestion is a corrected copy).

A ``coerce`` (step 9) that ``explain`` may call is the grader's too.
``retry_with_suggestion`` is judged with the grader's ``call_tool`` (steps 3-5),
``validate_args`` and ``explain`` (``spec_explain``: an ``explain`` slip costs
the explain checks alone, on every seed): which calls reached the door, with
which arguments, what came back, and how many times a tool body ran.
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from grader import spec
from grader.checks import cases
from grader.checks._common import (
    TOOL_SPIES_TABLE,
    Fail,
    add,
    call_op,
    call_probe,
    check_expect,
    double_op,
    get_field,
    judged,
    on_real_route,
    op,
    outcome,
    records_of,
)
from grader.checks.registry import Judge, Observation, Probe, Verdict, shared_rng
from grader.engine.encode import encode, show, strict_equal
from grader.engine.wire import JsonDict

# ---------------------------------------------------------------------------
# The spec's answers, worked out in the parent
# ---------------------------------------------------------------------------


def allowed_fix(value: Any, allowed: list[Any]) -> Any:
    """The allowed value a ``str`` value honestly stands for, else ``None`` (LAB_SPEC step 10).

    >>> allowed_fix(" North ", spec.REGIONS), allowed_fix("nrth", spec.REGIONS), allowed_fix("wast", spec.REGIONS)
    ('north', 'north', None)
    """
    if not isinstance(value, str):
        return None
    wanted = value.strip(spec.ASCII_WHITESPACE).lower()
    if wanted in allowed:
        return wanted
    near = sorted({option for option in allowed if spec.one_edit(wanted, option)})
    return near[0] if len(near) == 1 else None


def int_fix(value: Any, low: int, high: int) -> Any:
    """The ``int_from_str`` value when the rule applies and the int is in ``low..high``, else ``None``.

    >>> int_fix(" 3 ", 1, 5), int_fix("9", 1, 5), int_fix("\\uff13", 1, 5), int_fix(True, 1, 5)
    (3, None, None, None)
    """
    if not isinstance(value, str):
        return None
    text = value.strip(spec.ASCII_WHITESPACE)
    if not text or any(char not in string.digits for char in text):
        return None
    return int(text) if low <= int(text) <= high else None


# ---------------------------------------------------------------------------
# The cases: every class on every run
# ---------------------------------------------------------------------------


@dataclass
class Case:
    """One ``explain`` call and what the spec says it returns."""

    tool: str
    args: JsonDict
    reason: str
    suggestion: Any = None
    kind: str = ""  # the class, for the message of a miss

    @property
    def arg(self) -> str | None:
        return self.reason.partition(":")[2] or None

    @property
    def value(self) -> Any:
        return self.args.get(self.arg) if self.arg else None


@dataclass
class Contract:
    """The ``args`` contract the grader writes into both tools for one probe."""

    allowed: list[Any]
    low: int
    high: int
    limit_allowed: list[Any] | None = None  # an allowed list on the int argument too (values never str)

    def table(self) -> JsonDict:
        limit = {"type": int, "required": True, "min": self.low, "max": self.high}
        if self.limit_allowed is not None:
            limit["allowed"] = list(self.limit_allowed)
        return {
            "sku": {"type": str, "required": True},
            "region": {"type": str, "required": True, "allowed": list(self.allowed)},
            "limit": limit,
        }

    def allowed_of(self, arg: str | None) -> list[Any]:
        return list(self.limit_allowed) if arg == "limit" and self.limit_allowed is not None else list(self.allowed)


# Two allowed values at edit distance 1 from the value: a coin flip, no suggestion.
_REGION_TWO_FIXES = ["wast", "eest", "nouth", "Wast ", " NOUTH"]
_FAR = ["mars", "nowhere", "atlantis", "moon", "xyz"]
_WORDS = ["harbor", "depot", "annex", "garage", "hangar", "silo", "cellar", "loft", "attic"]
_STEMS = ["cart", "pier", "mill", "lane", "dock", "barn"]
# Allowed words with "ss", each with a spelling whose str.lower() keeps a sharp s (casefold() gives the word).
_SHARP = [("glass", "GLAß"), ("moss", "Moß"), ("truss", "TRUß"), ("press", "Preß")]
_NOT_INT = ["\uff13", "\u00b2", "\u0663", "+3", "-1", "3.0", "1,299", "3 rows", "", "  ", "two", "0x3"]


def _dress(rng: random.Random, text: str) -> str:
    """``text`` with case and ASCII whitespace that strip and lower-casing undo."""
    return rng.choice([text.upper(), text.capitalize(), f" {text} ", f"\t{text.title()}\n", text + " "])


def _padded(rng: random.Random, text: str) -> str:
    """``text`` title-cased with ASCII whitespace on both sides (strip, then lower-case, undo it)."""
    return rng.choice([" ", "\t", "  "]) + text.title() + rng.choice([" ", "\n", " \t"])


EDITS = ("delete", "insert", "substitute")  # the value is the allowed one after this edit
PLACES = ("first", "inner", "last")  # where in the word the edit is made


def _edit(rng: random.Random, word: str, how: str = "", at: str = "") -> str:
    """``word`` after one insertion, deletion or substitution (``how``) at the first, an inner or the last
    place (``at``); either left out: the seed picks it.

    >>> [_edit(random.Random(1), "north", how, "last")[:4] for how in EDITS]
    ['nort', 'nort', 'nort']
    >>> [len(_edit(random.Random(1), "north", how, "first")) for how in EDITS]
    [4, 6, 5]
    """
    how, at = how or rng.choice(EDITS), at or rng.choice(PLACES)
    end = len(word) if how == "insert" else len(word) - 1  # an insertion may also follow the last letter
    i = {"first": 0, "inner": rng.randint(1, max(1, end - 1)), "last": end}[at]
    letter = rng.choice([c for c in string.ascii_lowercase if c not in word[max(0, i - 1) : i + 1]])
    edited = {
        "delete": word[:i] + word[i + 1 :],
        "insert": word[:i] + letter + word[i:],
        "substitute": word[:i] + letter + word[i + 1 :],
    }
    return edited[how]


def _one_fix(rng: random.Random, allowed: list[Any], how: str, at: str) -> str:
    """A value with exactly one allowed value at edit distance 1 (not equal to any), made by the edit ``how``
    at the place ``at``."""
    for _ in range(200):
        target = rng.choice(allowed)
        value = _edit(rng, target, how, at)
        if allowed_fix(value, allowed) == target and value not in allowed:
            return value
    raise RuntimeError("no one-fix value found")  # cannot happen with the grader's lists


def _spec_contract() -> Contract:
    """LAB_SPEC step 1's argument contract (REGIONS, limit 1..MAX_ROWS)."""
    return Contract(list(spec.REGIONS), 1, spec.MAX_ROWS)


def _other_contract(rng: random.Random) -> tuple[Contract, JsonDict]:
    """Another allowed list and other bounds; also values for its two-fix and exact-beats-near classes.

    The list holds ``stem`` and a one-letter variant of it (so a third variant is at distance 1
    of both), and ``word`` with ``word + "s"`` (so ``word`` dressed up is exact although ``word + "s"``
    is at distance 1, and ``word`` plus another letter is one deletion from ``word`` and one
    substitution from ``word + "s"``: two fixes found by different edits).
    """
    stem = rng.choice(_STEMS)
    i = rng.randrange(len(stem))
    a, b = rng.sample([c for c in string.ascii_lowercase if c != stem[i]], 2)
    word = rng.choice(_WORDS)
    allowed = rng.sample([w for w in _WORDS if w != word], 3) + [stem, stem[:i] + a + stem[i + 1 :], word, word + "s"]
    rng.shuffle(allowed)
    low = rng.randint(2, 3)
    mixed = word + rng.choice([c for c in string.ascii_lowercase if c != "s"])
    sharp = rng.choice(_SHARP)
    allowed.insert(rng.randrange(len(allowed) + 1), sharp[0])
    return Contract(allowed, low, rng.randint(9, 14)), {
        "two": stem[:i] + b + stem[i + 1 :],
        "exact_near": word,
        "two_mixed": mixed,
        "sharp": sharp,
    }


def _swaps(word: str) -> set[str]:
    """Every text made of ``word`` by swapping two neighbouring, different letters.

    >>> sorted(_swaps("east"))
    ['aest', 'eats', 'esat']
    """
    return {word[:i] + word[i + 1] + word[i] + word[i + 2 :] for i in range(len(word) - 1) if word[i] != word[i + 1]}


def _transposed(rng: random.Random, allowed: list[Any], at: str) -> str:
    """An allowed value with two neighbouring letters swapped at its start or end (``at``): two edits from it and
    from every other allowed value (no suggestion), and the swap of no other allowed value.

    >>> value = _transposed(random.Random(1), spec.REGIONS, "first")
    >>> allowed_fix(value, spec.REGIONS) is None, sum(value in _swaps(r) for r in spec.REGIONS)
    (True, 1)
    """
    for _ in range(200):
        target: str = rng.choice(allowed)
        i = 0 if at == "first" else len(target) - 2
        if len(target) < 3 or target[i] == target[i + 1]:
            continue
        value = target[:i] + target[i + 1] + target[i] + target[i + 2 :]
        if allowed_fix(value, allowed) is None and [o for o in allowed if value in _swaps(o)] == [target]:
            return value
    raise RuntimeError("no transposed value found")  # cannot happen with the grader's lists


def _allowed_cases(
    rng: random.Random, contract: Contract, two: list[Any], exact_near: list[Any], folded: tuple[Any, ...] | None = None
) -> list[Case]:
    # Each edit at each place on every run: a fix found by substitutions alone, or by comparing letters at the
    # same positions, is missed on every seed, not on the seeds that put the edit where it shows.
    values = [
        ("exact", _padded(rng, rng.choice(contract.allowed))),
        ("exact", rng.choice(contract.allowed).upper()),
        *[("one_fix", _one_fix(rng, contract.allowed, how, at)) for how in EDITS for at in PLACES],
        ("one_fix", _padded(rng, _one_fix(rng, contract.allowed, rng.choice(EDITS), rng.choice(PLACES)))),
    ]
    values += [("far", rng.choice(_FAR)), ("far", _edit(rng, _edit(rng, rng.choice(_FAR))))]
    values += [("two_fixes", value) for value in two] + [("exact_near", _dress(rng, w)) for w in exact_near]
    # A swap of two neighbouring letters is two edits (LAB_SPEC: insertion, deletion or substitution), at the
    # start and at the end, as written and dressed up, on every run.
    values += [
        ("transposed", _transposed(rng, contract.allowed, "first")),
        ("transposed", _padded(rng, _transposed(rng, contract.allowed, "last"))),
    ]
    # v is the value after step 9's strip (ASCII whitespace only) and str.lower: other blanks stay, so these are
    # two or more edits from every allowed value; and a sharp s stays a sharp s (casefold() would make it ss).
    values += [
        ("unicode_blanks", cases.unicode_padded(rng, rng.choice(contract.allowed))),
        ("unicode_blanks", _padded(rng, cases.unicode_padded(rng, rng.choice(contract.allowed)))),
    ]
    if folded:
        values += [("sharp_s", folded[1])]
    out = []
    for kind, value in values:
        if value in contract.allowed:  # a dressed value that stayed valid is no allowed: case
            continue
        args = {**cases.random_valid_args(rng, inner=True), "region": value}
        args["limit"] = rng.randint(contract.low, contract.high)
        fix = allowed_fix(value, contract.allowed)
        out.append(
            Case(
                rng.choice(spec.TOOL_NAMES),
                args,
                "allowed:region",
                None if fix is None else {**args, "region": fix},
                kind,
            )
        )
    return out


def _int_cases(rng: random.Random, contract: Contract) -> list[Case]:
    n = rng.randint(contract.low, contract.high)
    digits = [
        str(n),
        f" {n} ",
        f"\t{n}\n",
        "0" + str(n),
        str(rng.randint(contract.high + 1, 99)),
        str(contract.low - 1),
    ]
    # int_from_str strips ASCII whitespace only: digits between other blanks are no int (no suggestion).
    values = (
        digits
        + _NOT_INT
        + [
            True,
            False,
            float(n),
            None,
            [n],
            cases.unicode_padded(rng, str(n)),
            f" {cases.unicode_padded(rng, str(n))}\t",
        ]
    )
    out = []
    for value in values:
        args = {**cases.random_valid_args(rng), "limit": value}
        args["region"] = rng.choice(contract.allowed)
        fix = int_fix(value, contract.low, contract.high)
        kind = "int_in_range" if fix is not None else ("int_out_of_range" if value in digits else "not_int")
        out.append(
            Case(rng.choice(spec.TOOL_NAMES), args, "type:limit", None if fix is None else {**args, "limit": fix}, kind)
        )
    return out


def _valid_args(rng: random.Random, contract: Contract) -> JsonDict:
    return {
        "sku": rng.choice(spec.SKUS + [spec.UNKNOWN_SKU]),
        "region": rng.choice(contract.allowed),
        "limit": rng.randint(contract.low, contract.high),
    }


def _extra_cases(rng: random.Random, contract: Contract) -> list[Case]:
    """Extra arguments: with a value, with ``None``, and a listed name written another way."""
    out = []
    first, second = rng.sample(sorted(cases.EXTRA_ARGS), 2)
    for name, value in (
        (first, cases.EXTRA_ARGS[first]),
        (second, None),
        (rng.choice(["Limit", "SKU"]), 2),
        ("region ", rng.choice(contract.allowed)),
    ):
        args = _valid_args(rng, contract)
        extra = {name: value}
        out.append(
            Case(rng.choice(spec.TOOL_NAMES), cases.shuffled(rng, {**args, **extra}), f"extra:{name}", args, "extra")
        )
    return out


def _unfixable_cases(rng: random.Random, contract: Contract) -> list[Case]:
    """range, missing, unknown_tool, and a type of a str argument: no honest fix."""
    out = []
    for limit in (contract.low - 1, contract.high + 1, rng.randint(contract.high + 2, 99)):
        out.append(
            Case(
                rng.choice(spec.TOOL_NAMES),
                {**_valid_args(rng, contract), "limit": limit},
                "range:limit",
                None,
                "range",
            )
        )
    for name in spec.ARG_NAMES:
        args = _valid_args(rng, contract)
        del args[name]
        out.append(Case(rng.choice(spec.TOOL_NAMES), args, f"missing:{name}", None, "missing"))
    for tool in (rng.choice(cases.UNKNOWN_TOOLS), rng.choice(cases.TOOL_LOOKALIKES)):
        out.append(Case(tool, _valid_args(rng, contract), "unknown_tool", None, "unknown_tool"))
    out.append(
        Case(
            rng.choice(spec.TOOL_NAMES),
            {**_valid_args(rng, contract), "sku": rng.randint(1000, 9999)},
            "type:sku",
            None,
            "type_of_str",
        )
    )
    return out


def explain_cases(rng: random.Random) -> list[tuple[Contract, list[Case]]]:
    """Every class of refused call, under the spec's contract, the grader's other one, and one with an
    allowed list on ``limit``; each case with the spec's reason and suggestion.

    >>> plans = explain_cases(random.Random(1))
    >>> [len(plans), sorted({case.kind for _, found in plans for case in found})[:4]]
    [3, ['exact', 'exact_near', 'extra', 'far']]
    """
    other, extra = _other_contract(rng)
    plans = [
        (_spec_contract(), [rng.choice(_REGION_TWO_FIXES), rng.choice(_REGION_TWO_FIXES[:3])], []),
        (other, [extra["two"], _dress(rng, extra["two"]), extra["two_mixed"]], [extra["exact_near"]]),
    ]
    out = []
    for (contract, two, exact_near), folded in zip(plans, (None, extra["sharp"])):
        out.append(
            (
                contract,
                _allowed_cases(rng, contract, two, exact_near, folded)
                + _int_cases(rng, contract)
                + _extra_cases(rng, contract)
                + _unfixable_cases(rng, contract),
            )
        )
    return out + [_int_allowed_cases(rng)]


def _int_allowed_cases(rng: random.Random) -> tuple[Contract, list[Case]]:
    """An allowed list on ``limit``: an int value outside it has no fix (the rule is for str values), and a
    digit string whose int is not allowed has none either (the suggestion must pass validation)."""
    kept = sorted(rng.sample(range(1, spec.MAX_ROWS + 1), 3))
    left_out = [n for n in range(1, spec.MAX_ROWS + 1) if n not in kept]
    contract = Contract(list(spec.REGIONS), 1, spec.MAX_ROWS, kept)
    found = []
    for value, reason in (
        (rng.choice(left_out), "allowed:limit"),
        (f" {rng.choice(left_out)} ", "type:limit"),
        (str(rng.choice(kept)), "type:limit"),
    ):
        args = {**_valid_args(rng, contract), "limit": value}
        fix = int_fix(value, 1, spec.MAX_ROWS)
        fixed = {**args, "limit": fix} if fix in kept else None
        found.append(Case(rng.choice(spec.TOOL_NAMES), args, reason, fixed, "int_with_allowed"))
    return contract, found


# ---------------------------------------------------------------------------
# Probes
# ---------------------------------------------------------------------------


def on_contract(contract: Contract, ops: list[Any], *, door: bool = False, **options: Any) -> Probe:
    """A probe with ``contract`` in both tools' ``args`` and the grader's ``validate_args`` (and ``call_tool`` and
    ``explain`` with ``door``).

    >>> [o.get("name", o["op"]) for o in on_contract(_spec_contract(), [], door=True).params["operations"]]
    ['contract', 'contract', 'validate_args', 'coerce', 'call_tool', 'explain']
    """
    setup = [op("contract", path=[tool, "args"], value=contract.table()) for tool in spec.TOOL_NAMES]
    # explain may build on step 9's coerce: the grader's, so a step-9 slip costs step 9 only.
    setup += [double_op("validate_args"), double_op("coerce", "spec_coerce")]
    if door:
        # retry_with_suggestion is judged on its own logic: the door and explain are the grader's, so an
        # explain slip costs the explain checks, on every seed, and never the retry's.
        setup += [double_op("call_tool", contract="spec"), double_op("explain", "spec_explain")]
    if door:  # on the learner's own route call_tool is watched, not replaced: its calls come back the same way
        # (explain too: the retry is judged on the explain it calls, see _own_explain_case)
        options["watch_on_real"] = ["call_tool", "explain"]
    return call_probe(setup + ops, reset=True, **options)


def _explain_op(case: Case, contract: Contract) -> JsonDict:
    operation = call_op("explain", case.tool, case.args, runs={t: 0 for t in spec.TOOL_NAMES})
    operation["args_after"] = True  # a suggestion is a corrected copy: the caller's dict stays as it was
    # Judge-only: what the spec says comes back, and what the contract of this probe accepts.
    operation["case"] = encode(
        {
            "reason": case.reason,
            "arg": case.arg,
            "value": case.value,
            "suggestion": case.suggestion,
            "kind": case.kind,
            "shown": case.arg in case.args,
            "allowed": contract.allowed_of(case.arg),
            "low": contract.low,
            "high": contract.high,
        }
    )
    return operation


def explain_probes(rng: random.Random) -> list[Probe]:
    """The explain probes every explain check judges (one draw per run: they run once).

    >>> [p.params["operations"][5]["fn"] for p in explain_probes(random.Random(2))]
    ['explain', 'explain', 'explain']
    """
    draw = shared_rng(rng, "step10/explain")
    return [
        on_contract(contract, [_explain_op(case, contract) for case in found], spies=TOOL_SPIES_TABLE)
        for contract, found in explain_cases(draw)
    ]


def _explanations(
    probes: list[Probe], observations: list[Observation]
) -> Iterator[tuple[JsonDict, JsonDict, JsonDict, JsonDict]]:
    """``(operation, record, explanation dict, case)`` for every explain call, or :class:`Fail`."""
    for probe, obs in zip(probes, observations):
        for operation, rec in judged(probe, records_of(probe, obs)):
            if operation.get("op") != "call":
                continue
            if "value" not in rec:
                raise Fail(
                    "explain must return a dict for every refused call.",
                    call=operation["label"],
                    expected="a dict",
                    got=outcome(rec),
                )
            value = rec["value"]
            for key in spec.EXPLANATION_KEYS:
                get_field(value, key, operation["label"], "explain's dict")
            yield operation, rec, value, operation["case"]


def check_args_unchanged(fn: str, operation: JsonDict, rec: JsonDict) -> None:
    """:class:`Fail` when ``fn`` changed the caller's ``args`` (the record's ``args_after``)."""
    after = rec.get("args_after")
    if isinstance(after, list) and len(after) == 2 and not strict_equal(after[1], operation["args"][1]):
        where = fn if fn == "explain" else f"{fn} (in it, or in the explain it calls)"
        raise Fail(
            f"The caller's args changed in {where}: a suggestion is a corrected copy ({{**args, arg: fixed}}, "
            "or a new dict without the extra argument), and the dict passed in stays as it was.",
            call=operation["label"],
            expected=f"args after the call = {show(operation['args'][1])}",
            got=f"args after the call = {show(after[1])}",
        )


def _judge_fields(keys: tuple[Any, ...], message: str, kinds: tuple[Any, ...] | None = None) -> Judge:
    """A judge: for every explain call (of a reason kind in ``kinds``), the fields ``keys`` equal the spec's
    (and, when a suggestion is judged, the caller's ``args`` are unchanged)."""

    def judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
        for operation, rec, value, case in _explanations(probes, observations):
            if kinds is not None and case["reason"].partition(":")[0] not in kinds:
                continue
            for key in keys:
                if not strict_equal(value[key], case[key if key != "error" else "reason"]):
                    expected = case[key if key != "error" else "reason"]
                    raise Fail(
                        message.format(kind=case["kind"], key=key),
                        call=operation["label"],
                        expected=f"{key} = {show(expected)}",
                        got=f"{key} = {show(value[key])}",
                    )
            if "suggestion" in keys:
                check_args_unchanged("explain", operation, rec)
        return Verdict.ok()

    return judge


add(
    "step10/reason",
    2,
    "explain's error, arg and value come from validate_args' reason",
    "Call validate_args(name, args) and put its reason in 'error' unchanged; 'arg' is the part after the "
    "colon (None for unknown_tool), 'value' that argument's value in args (None when it is absent).",
    ["10.reason"],
    explain_probes,
    _judge_fields(("error", "arg", "value"), "explain's {key} is not what validate_args' reason says."),
)


def _valid_probes(rng: random.Random) -> list[Probe]:
    rng = shared_rng(rng, "step10/valid")
    other, _ = _other_contract(rng)
    probes = []
    for contract in (_spec_contract(), other):
        found = [(rng.choice(spec.TOOL_NAMES), _valid_args(rng, contract)) for _ in range(3)]
        found.append((rng.choice(spec.TOOL_NAMES), {**_valid_args(rng, contract), "limit": contract.high}))
        probes.append(
            on_contract(
                contract,
                [
                    call_op("explain", tool, args, expect=spec.EMPTY_EXPLANATION, runs={t: 0 for t in spec.TOOL_NAMES})
                    for tool, args in found
                ],
                spies=TOOL_SPIES_TABLE,
            )
        )
    return probes


def _expect_judge(message: str) -> Judge:
    def judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
        for probe, obs in zip(probes, observations):
            for operation, rec in judged(probe, records_of(probe, obs)):
                if "expect" in operation and not ("value" in rec and strict_equal(rec["value"], operation["expect"])):
                    raise Fail(message, call=operation["label"], expected=show(operation["expect"]), got=outcome(rec))
        return Verdict.ok()

    return judge


add(
    "step10/valid",
    1,
    "valid arguments give the empty explanation",
    "When validate_args returns \"\", return exactly {'error': '', 'arg': None, 'value': None, 'message': '', "
    "'suggestion': None}.",
    ["10.valid"],
    _valid_probes,
    _expect_judge("Valid arguments must give the empty explanation."),
)


def _names_number(text: str, number: int) -> bool:
    """``number`` is one of the whole numbers in ``text`` (``1..5`` and ``1-5`` name 1 and 5; ``-1`` and ``15`` do not
    name 1 or 5: a minus right after a non-digit is a sign).

    >>> _names_number("accepted: 1..5", 5), _names_number("from 1-5", 5), _names_number("value -1", 1)
    (True, True, False)
    >>> _names_number("15", 5), _names_number("[2, 12]", 2)
    (False, True)
    """
    return number in {int(token) for token in re.findall(r"(?<!\d)-?\d+", text)}


def _message_miss(case: JsonDict, message: Any) -> tuple[str, str] | None:
    """What the message lacks (sentence, what was expected), or ``None`` when it says enough."""
    if not isinstance(message, str) or not message.strip():
        return "The message must be a non-empty str for a refused call.", "a sentence"
    if case["arg"] is not None and case["arg"] not in message:
        return "The message must name the argument.", repr(case["arg"])
    if case["shown"] and repr(case["value"]) not in message:
        return "The message must show the offending value with repr().", repr(case["value"])
    kind = case["reason"].partition(":")[0]
    if kind == "allowed":
        lacking = [str(option) for option in case["allowed"] if str(option) not in message]
        if lacking:
            return "For allowed:<arg> the message must list the allowed values of the contract.", ", ".join(lacking)
    if kind == "range":
        if not (_names_number(message, case["low"]) and _names_number(message, case["high"])):
            return "For range:<arg> the message must state min..max of the contract.", f"{case['low']}..{case['high']}"
    return None


def _message_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    for operation, _rec, value, case in _explanations(probes, observations):
        miss = _message_miss(case, value["message"])
        if miss:
            raise Fail(
                miss[0], call=operation["label"], expected=f"a message containing {miss[1]}", got=show(value["message"])
            )
    return Verdict.ok()


add(
    "step10/message",
    2,
    "the message names the argument, shows the value and what is accepted",
    "Build the message from the reason and the contract: the argument's name, repr(value), and for allowed/range "
    "the contract's allowed values or min..max (read TOOLS[name]['args'] when explain runs: the grader changes it).",
    ["10.message"],
    explain_probes,
    _message_judge,
)

add(
    "step10/suggest_allowed",
    3,
    "allowed: a suggestion exactly when one allowed value fits",
    "Strip a str value with step 9's strip (ASCII whitespace only, not str.strip()) and lower-case it with "
    "str.lower (not casefold); if that is allowed, suggest it; else suggest the allowed value at edit distance 1 "
    "(one insertion, deletion or substitution: a swap of two letters is two edits) only when it is the only one "
    "(two, like east and west for 'wast', is no suggestion). Read the allowed list from TOOLS when explain runs, "
    "and build the suggestion as a copy: the caller's args stay as they were.",
    ["10.allowed", "10.validates"],
    explain_probes,
    _judge_fields(("suggestion",), "Wrong suggestion for an allowed: refusal (class {kind}).", ("allowed",)),
)

add(
    "step10/suggest_int",
    2,
    "type of an int argument: the int_from_str value, if it then validates",
    "Suggest int(value) only for a str of ASCII digits 0-9 after step 9's strip (ASCII whitespace only), and only "
    "when that int passes validate_args (in min..max of the contract); never for bool, float, signs, '３', '', "
    "digits between other blanks ('\\u00a03') or anything else.",
    ["10.int", "10.validates"],
    explain_probes,
    _judge_fields(("suggestion",), "Wrong suggestion for a type: refusal (class {kind}).", ("type",)),
)

add(
    "step10/suggest_extra",
    1,
    "extra: the arguments without the extra one",
    "For extra:<arg> suggest a new dict: args without that argument (every other argument kept). Do not pop it "
    "from the caller's args: the dict passed in stays as it was.",
    ["10.extra"],
    explain_probes,
    _judge_fields(("suggestion",), "Wrong suggestion for an extra: refusal.", ("extra",)),
)

add(
    "step10/no_invented_fix",
    2,
    "no suggestion for range, missing or unknown_tool",
    "A value out of range, a missing argument or an unknown tool has no honest fix: suggestion None.",
    ["10.none"],
    explain_probes,
    _judge_fields(
        ("suggestion",),
        "This refusal has no honest fix (class {kind}): the suggestion must be None.",
        ("range", "missing", "unknown_tool"),
    ),
)


def _no_body_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    """Only the tool bodies (spies and ``CALLS``): what explain returned is the other checks' business."""
    for probe, obs in zip(probes, observations):
        start = obs.get("start") if isinstance(obs.get("start"), dict) else None
        for operation, rec in judged(probe, records_of(probe, obs)):
            if operation.get("op") != "call":
                continue
            if "value" not in rec:
                raise Fail(
                    "explain must return for every call (it is judged on running no tool body when it returns).",
                    call=operation["label"],
                    expected="a dict",
                    got=outcome(rec),
                )
            check_expect(
                {key: value for key, value in operation.items() if key != "expect"},
                rec,
                "explain must never run a tool body.",
                start,
            )
    return Verdict.ok()


add(
    "step10/explain_no_body",
    1,
    "explain never runs a tool body",
    "explain only reads validate_args and the contract; it never calls call_tool or a tool.",
    ["10.no_body"],
    lambda rng: explain_probes(rng) + _valid_probes(rng),
    _no_body_judge,
)


# ---------------------------------------------------------------------------
# retry_with_suggestion, through the grader's call_tool
# ---------------------------------------------------------------------------


def _retry_probe(case: Case) -> Probe:
    operation = call_op("retry_with_suggestion", case.tool, case.args)
    operation["args_after"] = True  # the retry sends explain's corrected copy: the caller's dict stays as it was
    operation["case"] = encode(
        {"tool": case.tool, "args": case.args, "reason": case.reason, "suggestion": case.suggestion, "kind": case.kind}
    )
    return on_contract(_spec_contract(), [operation], door=True, spies=TOOL_SPIES_TABLE)


def _retry_fixed_probes(rng: random.Random) -> list[Probe]:
    found = []
    for region in (
        _dress(rng, rng.choice(spec.REGIONS)),
        _one_fix(rng, spec.REGIONS, rng.choice(EDITS), rng.choice(PLACES)),
    ):
        args = {**cases.random_valid_args(rng, stocked=True, inner=True)}
        fixed = dict(args)
        args["region"] = region
        fixed["region"] = allowed_fix(region, spec.REGIONS)
        found.append(Case("stock_lookup", args, "allowed:region", fixed, "allowed"))
    args = cases.random_valid_args(rng, stocked=True)
    found.append(Case(rng.choice(spec.TOOL_NAMES), {**args, "limit": f" {args['limit']} "}, "type:limit", args, "int"))
    name = rng.choice(sorted(cases.EXTRA_ARGS))
    found.append(
        Case(rng.choice(spec.TOOL_NAMES), {**args, name: cases.EXTRA_ARGS[name]}, f"extra:{name}", args, "extra")
    )
    return [_retry_probe(case) for case in found]


def _retry_unfixed_probes(rng: random.Random) -> list[Probe]:
    args = cases.random_valid_args(rng, stocked=True, inner=True)
    found = [
        Case("stock_lookup", {**args, "region": rng.choice(_REGION_TWO_FIXES)}, "allowed:region", None, "two"),
        Case("stock_lookup", {**args, "limit": cases.out_of_range_limit(rng)}, "range:limit", None, "range"),
        Case(
            "stock_lookup",
            {**args, "limit": str(rng.randint(spec.MAX_ROWS + 1, 9))},
            "type:limit",
            None,
            "int_out_of_range",
        ),
        Case(rng.choice(cases.UNKNOWN_TOOLS), args, "unknown_tool", None, "unknown_tool"),
    ]
    found += [
        Case("stock_lookup", {k: v for k, v in args.items() if k != missing}, f"missing:{missing}", None, "missing")
        for missing in spec.ARG_NAMES
    ]
    return [_retry_probe(case) for case in found]


def _retry_valid_probes(rng: random.Random) -> list[Probe]:
    """Valid arguments: a call that succeeds (each tool), and one whose result is refused (``result:empty``)."""
    found = []
    for tool in spec.TOOL_NAMES:
        args = cases.random_valid_args(rng, stocked=True, inner=True)
        while tool == "legacy_stock" and (args["sku"], args["region"]) == spec.BIG_PAIR:
            args = cases.random_valid_args(rng, stocked=True, inner=True)  # result:too_big is no success
        found.append(Case(tool, args, "", None, "valid"))
    found.append(
        Case(
            rng.choice(spec.TOOL_NAMES),
            {**cases.random_valid_args(rng), "sku": spec.UNKNOWN_SKU},
            "",
            None,
            "empty_result",
        )
    )
    return [_retry_probe(case) for case in found]


def _door_calls(obs: JsonDict) -> list[Any]:
    seen = obs.get("double_seen")
    seen = seen if isinstance(seen, dict) else {}
    calls = seen.get("call_tool")
    return calls if isinstance(calls, list) else []


def _check_door(case: JsonDict, calls: list[Any], label: str) -> None:
    """The door saw the first call, and a second one exactly when there is a suggestion, with it."""
    wanted = [[case["tool"], case["args"]]]
    if case["suggestion"] is not None:
        wanted.append([case["tool"], case["suggestion"]])
    got = [entry.get("args") for entry in calls]
    if not strict_equal(got, wanted):
        raise Fail(
            "retry_with_suggestion must call call_tool with the arguments as given, then once more "
            "only with explain's suggestion when there is one.",
            call=label,
            expected=" then ".join(f"call_tool{tuple(show(a) for a in w)}" for w in wanted),
            got=" then ".join(
                f"call_tool({', '.join(show(a) for a in g)})" if isinstance(g, list) else show(g) for g in got
            )
            or "no call_tool call",
        )


def _check_result(case: JsonDict, calls: list[Any], value: Any, label: str) -> None:
    """The last door dict's fields, ``suggested``, and ``explanation``'s reason and suggestion."""
    last = calls[-1].get("returned") if calls else None
    for key in ("ok", "value", "error"):
        if isinstance(last, dict) and not strict_equal(get_field(value, key, label), last.get(key)):
            raise Fail(
                f"The result's {key!r} must be the last call_tool dict's.",
                call=label,
                expected=show(last.get(key)),
                got=show(get_field(value, key, label)),
            )
    if get_field(value, "suggested", label) is not (case["suggestion"] is not None):
        raise Fail(
            "'suggested' must be True exactly when the call was retried with a suggestion.",
            call=label,
            expected=repr(case["suggestion"] is not None),
            got=show(value["suggested"]),
        )
    explanation = get_field(value, "explanation", label)
    if not case["reason"]:
        # LAB_SPEC: None when the first call was valid -- also when its result was then refused (result:...).
        if explanation is not None:
            refused = (
                "" if last is None or last.get("ok") else f" (even though the call failed with {last.get('error')!r})"
            )
            raise Fail(
                f"When the first call's arguments were valid, 'explanation' must be None{refused}.",
                call=label,
                expected="None",
                got=show(explanation),
            )
        return
    for key, wanted in (("error", case["reason"]), ("suggestion", case["suggestion"])):
        if not strict_equal(get_field(explanation, key, label, "'explanation'"), encode(wanted)):
            raise Fail(
                f"'explanation' must be explain's dict for the first call (its {key!r}).",
                call=label,
                expected=show(encode(wanted)),
                got=show(explanation[key]),
            )


def _called_with(entry: JsonDict, names: tuple[Any, ...]) -> list[Any]:
    """The positional arguments of a watched call, keyword ones put back in ``names``' order."""
    given = list(entry.get("args") or [])
    keywords = entry.get("kwargs")
    keywords = keywords if isinstance(keywords, dict) else {}
    return given + [keywords[name] for name in names[len(given) :] if name in keywords]


def _own_explain_case(case: JsonDict, probe: Probe, obs: JsonDict) -> JsonDict:
    """``case`` with the suggestion of the module's own ``explain`` (on the learner's route, watched), when
    the retry called it with the first call's arguments and it gave the spec's reason.

    The retry is judged on its own logic: it retries with what its explain suggests. A wrong suggestion is the
    explain checks' business (on every seed); here it would make the retry's grade hang on which values the
    seed drew. Anywhere else (the spec's explain in that name, no such call, another reason) the spec's case.
    """
    if not on_real_route(probe):
        return case
    seen = obs.get("double_seen")
    seen = seen if isinstance(seen, dict) else {}
    for entry in seen.get("explain") or []:
        if not isinstance(entry, dict) or not strict_equal(
            _called_with(entry, ("name", "args")), [case["tool"], case["args"]]
        ):
            continue
        own = entry.get("returned")
        if isinstance(own, dict) and "suggestion" in own and strict_equal(own.get("error"), case["reason"]):
            return {**case, "suggestion": own["suggestion"]}
        return case
    return case


def _refused_by_args(returned: Any) -> bool:
    """A ``call_tool`` dict that refused the call before any body ran (``args:...``).

    >>> _refused_by_args({"ok": False, "value": None, "error": "args:range:limit"}), _refused_by_args(None)
    (True, False)
    """
    return isinstance(returned, dict) and str(returned.get("error", "")).startswith(spec.ARGS_PREFIX)


def _retry_judge(probes: list[Probe], observations: list[Observation]) -> Verdict:
    for probe, obs in zip(probes, observations):
        for operation, rec in judged(probe, records_of(probe, obs)):
            if operation.get("op") != "call":
                continue
            label, case, calls = operation["label"], operation["case"], _door_calls(obs)
            if "value" not in rec:
                raise Fail("retry_with_suggestion must return a dict.", call=label, expected="a dict", got=outcome(rec))
            case = _own_explain_case(case, probe, obs)
            _check_door(case, calls, label)
            _check_result(case, calls, rec["value"], label)
            check_args_unchanged("retry_with_suggestion", operation, rec)
            runs = sum(n for n in (rec.get("spy_runs") or {}).values() if type(n) is int)
            # A body runs for each call that passed validation (a suggestion the module's explain did not check
            # is refused as args:... too); the calls were checked above.
            wanted = sum(1 for entry in calls if not _refused_by_args(entry.get("returned")))
            if runs != wanted:
                raise Fail(
                    "Tool bodies ran the wrong number of times (at most once in total).",
                    call=label,
                    expected=f"{wanted} run(s)",
                    got=f"{runs} run(s)",
                )
    return Verdict.ok()


add(
    "step10/retry_fixed",
    2,
    "retry_with_suggestion retries once, with the suggestion",
    "Call call_tool; when its error starts with 'args:' and explain has a suggestion, call call_tool once more "
    "with exactly that suggestion (a copy: never change the caller's args); return that last dict plus "
    "'suggested': True and 'explanation'.",
    ["10.retry", "10.retry_runs"],
    _retry_fixed_probes,
    _retry_judge,
)

add(
    "step10/retry_unfixed",
    2,
    "no honest fix: no second call",
    "When explain's suggestion is None, return the first call_tool dict plus 'suggested': False and the "
    "explanation; never call again (no body runs for a refused call).",
    ["10.retry", "10.retry_runs"],
    _retry_unfixed_probes,
    _retry_judge,
)

add(
    "step10/retry_valid",
    1,
    "valid arguments: one call, explanation None",
    "When the first call's arguments are valid, return its dict plus 'suggested': False and 'explanation': None "
    "(one body run, no retry), even when the result was refused (result:empty): explain only for an args: error.",
    ["10.retry"],
    _retry_valid_probes,
    _retry_judge,
)
