"""Mutants that behave as the solution does for everything the spec asks, each with a one-line reason.

tests/test_mutation.py keeps this list honest: every id must still be generated
and must still get full marks. Keep it small: a mutant the spec can tell
apart belongs in the grader's checks, not here. A mutant that only survives
because no check looks (a number of the report written by hand, a file written
in the locale's encoding) is a survivor, not an equivalent.

>>> all(isinstance(reason, str) and reason for reason in EQUIVALENT.values())
True
"""
from __future__ import annotations

_ESCAPES = "JSON with or without ASCII escapes is one text per value: same keys, same parsed report"
_POP = "the pop only makes the first call real; the second call runs the body as often either way"
_PROSE = "tool_report.md's text outside its four headings and the limit is the learner's choice (spec, step 8)"
_LAYOUT = "layout of tool_report.json only: it parses to the same report"
_GIVEUP_ROWS = "the spec asks of giveup only an answer naming the last reason; its rows are the learner's choice"
_REPAIR_ORDER = "still a wrong-region order that one fix repairs: which one is the learner's choice (spec, step 8)"
_EMPTY_ORDER = "still an order a correct handle gives up on with result:empty: which one is the learner's choice"
_MEMO_ARGS = "still two identical successful calls: which arguments is the learner's choice (spec, step 8)"

EQUIVALENT: "dict[str, str]" = {
    "cache_key:6:str_empty:0": "without ':' the keys stay one per (name, args): JSON after a name starts with '{'",
    "cache_key:6:kwarg_drop:1": _ESCAPES,
    "cache_key:6:kwarg_bool:1": _ESCAPES,
    "giveup:2:item_drop:1": _GIVEUP_ROWS,
    "giveup:2:str_empty:1": _GIVEUP_ROWS,
    "State:0:kwarg_bool:0": "TypedDict totality is a type-checker hint; LangGraph does not enforce it",
    "_measure:9:stmt_pass:0": _POP,
    "_measure:9:args_swap:0": _POP,
    "_measure:9:str_empty:0": _POP,
    "_measure:9:args_swap:1": _POP,
    # Step 8's own choices of arguments and orders (LAB_SPEC step 8 fixes only their kind).
    "_measure:8:int_up:0": _MEMO_ARGS,
    "_measure:8:stmt_pass:0": _MEMO_ARGS + "; args is then the last wrong call's, valid for stock_lookup",
    "_measure:15:str_empty:4": _REPAIR_ORDER,
    "_measure:15:int_up:0": _REPAIR_ORDER,
    "_measure:15:int_down:0": _REPAIR_ORDER,
    "_measure:16:str_empty:3": _EMPTY_ORDER,
    "_measure:16:str_empty:4": _EMPTY_ORDER,
    "_measure:16:int_up:0": _EMPTY_ORDER,
    "_measure:16:int_down:0": _EMPTY_ORDER,
    "write_report:9:kwarg_drop:1": _ESCAPES,
    "write_report:9:kwarg_bool:0": _ESCAPES,
    "write_report:9:kwarg_drop:2": _LAYOUT,
    "write_report:9:int_up:0": _LAYOUT,
    "write_report:9:int_down:0": _LAYOUT,
    "write_report:9:str_empty:0": _LAYOUT,
    # The title, the blank lines, the prose lines and their ", " separators of tool_report.md.
    **{f"_markdown:{line}:item_drop:0": _PROSE for line in (2, 3, 5, 6, 8, 9, 11, 13, 18)},
    **{f"_markdown:{line}:str_fill:0": _PROSE for line in (3, 6, 9, 13, 18)},
    "_markdown:2:str_empty:0": _PROSE,
    "_markdown:5:str_empty:0": _PROSE,
    "_markdown:11:str_empty:0": _PROSE,
}


# Step 8's own test data, whose values LAB_SPEC step 8 leaves to the learner ("four bad results you make, one
# of each kind"; "calls with wrong arguments"). These mutants keep every call wrong and the four results one
# of each kind, so the report measures the same (measured: each got full marks on seeds 11 and 22). Not merged
# into EQUIVALENT: at 87 ids they would break the list's 1/25 cap, and whether the mutation gate mutates data
# the spec leaves to the learner at all is the gate's decision.
_WRONG = "every call in the list stays a call with wrong arguments: which ones is the learner's choice (step 8)"
_BAD = "the four bad results stay one of each kind: which values is the learner's choice (step 8)"
LEARNER_DATA: "dict[str, str]" = {
    **{f"_WRONG_ARGS:{line}:str_empty:{n}": _WRONG
       for line, last in ((1, 4), (2, 7), (3, 5), (4, 5), (5, 5), (6, 5)) for n in range(last + 1)},
    **{f"_WRONG_ARGS:{line}:item_drop:{n}": _WRONG for line in range(1, 7) for n in (0, 3, 4, 5)
       if (line, n) != (1, 5)},
    **{f"_WRONG_ARGS:{line}:{op}:0": _WRONG for line in (2, 4, 5, 6) for op in ("int_up", "int_down")},
    "_WRONG_ARGS:3:bool_flip:0": _WRONG,
    **{f"_BAD_RESULTS:1:item_drop:{n}": _BAD for n in (1, 2, 3)},
    **{f"_BAD_RESULTS:1:str_empty:{n}": _BAD for n in (0, 1, 2)},
    **{f"_BAD_RESULTS:{line}:str_empty:{n}": _BAD for line, ns in ((2, (3, 4)), (3, (3, 4, 7)), (4, (3, 4, 7)))
       for n in ns},
    **{key: _BAD for key in ("_BAD_RESULTS:3:int_down:0", "_BAD_RESULTS:3:int_up:0", "_BAD_RESULTS:3:int_up:1",
                             "_BAD_RESULTS:4:int_up:0")},
}
