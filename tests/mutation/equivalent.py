"""Mutants that behave as the solution does for everything the spec asks, each with a one-line reason.

Two lists, both kept honest by tests/test_mutation.py (every id must still be
generated and must still get full marks):

* :data:`CODE_EQUIVALENT`: code written another way with the same behaviour
  for every input the spec allows (``return None`` where only truth is read,
  an edge LangGraph does not need). Keep it small (at most 1/25 of the
  mutants): a mutant the spec can tell apart belongs in the grader's checks.
* :data:`LEARNER_CHOICE`: changes of data and prose that LAB_SPEC leaves to
  the learner (step 8's wrong calls, bad results, orders and report prose;
  giveup's rows): any value of the kind the spec names is right. Only the
  names in :data:`CHOICE_NAMES` may appear there.

A mutant that survives only because no check looks is a survivor, not an
equivalent: it stays in the gate's debt list until a check kills it.
:data:`EQUIVALENT` is both lists, as the gate reads them.

>>> all(isinstance(reason, str) and reason for reason in EQUIVALENT.values())
True
>>> {key.split(":")[0] for key in LEARNER_CHOICE} <= CHOICE_NAMES
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

_FIRST: dict[str, str] = {
    "cache_key:6:str_empty:0": "without ':' the keys stay one per (name, args): JSON after a name starts with '{'",
    "cache_key:6:kwarg_drop:1": _ESCAPES,
    "cache_key:6:kwarg_bool:1": _ESCAPES,
    "giveup:2:item_drop:1": _GIVEUP_ROWS,
    "giveup:2:str_empty:1": _GIVEUP_ROWS,
    "State:0:kwarg_bool:0": "TypedDict totality is a type-checker hint; LangGraph does not enforce it",
    "_measure:9:stmt_pass:0": _POP,
    "_measure:9:args_swap:0": _POP,
    "_measure:9:str_empty:0": _POP,
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
# of each kind, so the report measures the same (measured: each got full marks on seeds 11 and 22).
_WRONG = "every call in the list stays a call with wrong arguments: which ones is the learner's choice (step 8)"
_BAD = "the four bad results stay one of each kind: which values is the learner's choice (step 8)"
LEARNER_DATA: dict[str, str] = {
    **{
        f"_WRONG_ARGS:{line}:str_empty:{n}": _WRONG
        for line, last in ((1, 4), (2, 7), (3, 5), (4, 5), (5, 5), (6, 5))
        for n in range(last + 1)
    },
    **{
        f"_WRONG_ARGS:{line}:item_drop:{n}": _WRONG for line in range(1, 7) for n in (0, 3, 4, 5) if (line, n) != (1, 5)
    },
    **{f"_WRONG_ARGS:{line}:{op}:0": _WRONG for line in (2, 4, 5, 6) for op in ("int_up", "int_down")},
    "_WRONG_ARGS:3:bool_flip:0": _WRONG,
    **{f"_BAD_RESULTS:1:item_drop:{n}": _BAD for n in (1, 2, 3)},
    **{f"_BAD_RESULTS:1:str_empty:{n}": _BAD for n in (0, 1, 2)},
    **{
        f"_BAD_RESULTS:{line}:str_empty:{n}": _BAD
        for line, ns in ((2, (3, 4)), (3, (3, 4, 7)), (4, (3, 4, 7)))
        for n in ns
    },
    **{
        key: _BAD
        for key in (
            "_BAD_RESULTS:3:int_down:0",
            "_BAD_RESULTS:3:int_up:0",
            "_BAD_RESULTS:3:int_up:1",
            "_BAD_RESULTS:4:int_up:0",
        )
    },
}

_TRUTH = "the result is only tested for truth (`not ...`, `all(...)`): None and False read the same"
_REDUCER_START = (
    "LangGraph starts a reducer channel at its type's empty value (BinaryOperatorAggregate), "
    "so a key left out of the input starts the same"
)
_END = "a LangGraph node with no outgoing edge ends the run, as an edge to END does (the drawn graph differs only)"
_ADD_NODE = "LangGraph's add_node takes (action, name) too: a callable first argument is named by its __name__"
_COPY = (
    "the copy guards against a callee that writes into its args; the solution's callees return new dicts "
    "(spec: nodes never mutate), so nothing reaches the state either way"
)
_CALL_ENTRY = "a calls entry needs at least tool and args (spec, step 6): an 'error' key is the learner's choice"
_ENCODING = (
    "the spec names no encoding; the step child runs under C.UTF-8, where open() writes UTF-8 either way "
    "(notebook 08's encoding='utf-8' is worded as advice)"
)
_SYMMETRIC = "edit distance is symmetric: comparing (b, a) instead of (a, b) gives the same answer"
_QUESTION = "the question still names the query and every candidate's label, all the spec asks (step 11)"

_MORE_CODE: dict[str, str] = {
    "_has_type:4:return_none:0": _TRUTH,
    "_row_has_shape:2:return_none:0": _TRUTH,
    **{f"_initial_state:1:{op}:{n}": _REDUCER_START for op in ("item_drop", "str_empty") for n in (1, 2, 3, 4)},
    "_new_graph:6:stmt_pass:0": _END,
    "_new_graph:7:stmt_pass:0": _END,
    "_new_graph:3:args_swap:0": _ADD_NODE,
    "build_graph:3:args_swap:0": _ADD_NODE,
    "fetch:2:copy_drop:0": _COPY,
    "repair:3:copy_drop:0": _COPY,
    "fetch:7:item_drop:3": _CALL_ENTRY,
    "fetch:7:str_empty:3": _CALL_ENTRY,
    "write_report:9:kwarg_drop:0": _ENCODING,
    "write_report:11:kwarg_drop:0": _ENCODING,
    "_question:3:str_empty:0": _QUESTION,
    "_one_edit_apart:7:args_swap:0": _SYMMETRIC,
    "_one_edit_apart:9:cmp_boundary:0": "equal lengths are handled before this line: > and >= pick the same branch",
    "_allowed_fix:8:args_swap:1": _SYMMETRIC,
}

_WORDING = (
    "explain's message must name the argument, show the value and what is accepted (spec, step 10): "
    "the rest of its wording is the learner's choice"
)
_WORDS: dict[str, str] = {
    key: _WORDING
    for key in (
        "_accepted:3:str_empty:0",
        "_accepted:3:str_empty:1",
        "_message:4:return_other:0",
        "_message:4:str_empty:0",
    )
}

# The names whose values or prose LAB_SPEC leaves to the learner (step 8's fixtures, orders and prose;
# giveup's rows; the wording of step 10's messages).
CHOICE_NAMES = frozenset({"_WRONG_ARGS", "_BAD_RESULTS", "_measure", "_markdown", "giveup", "_accepted", "_message"})
_CHOICE_REASONS = (_PROSE, _GIVEUP_ROWS, _REPAIR_ORDER, _EMPTY_ORDER, _MEMO_ARGS)
_choice_first = {
    key: why
    for key, why in _FIRST.items()
    if key.split(":")[0] in CHOICE_NAMES and any(why.startswith(r) for r in _CHOICE_REASONS)
}

LEARNER_CHOICE: dict[str, str] = {**_choice_first, **LEARNER_DATA, **_WORDS}
CODE_EQUIVALENT: dict[str, str] = {**{k: v for k, v in _FIRST.items() if k not in _choice_first}, **_MORE_CODE}
EQUIVALENT: dict[str, str] = {**CODE_EQUIVALENT, **LEARNER_CHOICE}
