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
