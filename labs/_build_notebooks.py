"""Build the lab notebooks 01-11 from the text in this file (the capstone, 12, is written by hand).

This script is the source of the notebooks: edit the text here, run

    .venv/bin/python labs/_build_notebooks.py

and commit both this file and the regenerated ``.ipynb`` files. The notebooks
are written without outputs and with fixed cell ids, so a rebuild of
unchanged text gives byte-identical files; ``tests/test_notebooks.py`` fails
when the committed notebooks and this script drift apart.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from textwrap import dedent

import nbformat

from grader import spec

LABS = Path(__file__).resolve().parent


def stock_block() -> str:
    """The STOCK assignment of the spec's table as ready-to-paste Python, one row per line.

    >>> stock_block().splitlines()[1]
    '    {"sku": "SKU-1001", "region": "north", "bin": "N-01", "count": 12},'
    """
    lines = ["STOCK = ["]
    lines += [f"    {json.dumps(row)}," for row in spec.STOCK]
    lines.append("]")
    return "\n".join(lines)


def stock_table() -> str:
    """The spec's stock table in Markdown.

    >>> stock_table().splitlines()[2]
    '| SKU-1001 | north | N-01 | 12 |'
    """
    rows = "\n".join(f"| {r['sku']} | {r['region']} | {r['bin']} | {r['count']} |" for r in spec.STOCK)
    return "| sku | region | bin | count |\n|---|---|---|---|\n" + rows


# How write_report measures each key of the report (step 8); the values come from the spec.
REPORT_HOW = {
    "tools": "sorted names in `TOOLS`",
    "blocked_before_call": "tool body runs during calls with wrong arguments",
    "bad_result_reasons": "sorted reasons `validate_result` gives four bad results you make, one of each kind",
    "memo_second_call_runs": "body runs during the second of two identical successful calls",
    "repaired": "`handle` of an order with a wrong region ended ok after a fix",
    "attempts": "that `handle`'s attempts",
    "gave_up": "`not ok` of `handle` on an order with an empty result",
}


def report_table() -> str:
    """The step-8 table: each report key, how to measure it, and a correct module's value.

    >>> report_table().splitlines()[2]
    '| `tools` | sorted names in `TOOLS` | `["legacy_stock", "stock_lookup"]` |'
    """
    rows = [f"| `{key}` | {REPORT_HOW[key]} | `{json.dumps(value)}` |" for key, value in spec.REPORT_EXPECTED.items()]
    return "\n".join(["| key | how to measure it | correct module |", "|---|---|---|", *rows])


def headings_table() -> str:
    """The two heading sets of ``tool_report.md``, side by side.

    >>> headings_table().splitlines()[2]
    '| `## 도구 계약을 어디에 적었나` | `## Where the tool contract is written` |'
    """
    pairs = zip(spec.HEADING_SETS["Korean"], spec.HEADING_SETS["English"])
    return "\n".join(["| original (Korean) | English |", "|---|---|", *(f"| `{ko}` | `{en}` |" for ko, en in pairs)])


# --------------------------------------------------------------------------
# Text shared by every notebook
# --------------------------------------------------------------------------

SETUP_CODE = "from agtool_lab.widget import working_on\nprint(working_on())"


def setup_md(step: int) -> str:
    return dedent("""\
        ## Where your code goes

        You write your code in **`agtool/tools.py`** (open it beside this notebook in
        JupyterLab). The cell below says which file this notebook grades and plays with;
        to point the lab at another file, set the environment variable `AGTOOL_MODULE`
        before starting JupyterLab. You never need to restart the kernel: the Check cell
        grades the file on disk in a fresh process, and the playground re-imports it
        when it changes. Remember to **save the file** before you check.
        """)


def check_md(step: int) -> str:
    return dedent(f"""\
        ## Check

        Run the cell below after saving `agtool/tools.py`. It grades step {step} only, in
        a separate process, with random values (a new sku, region or limit each run; the
        seed is shown so a failure can be replayed). Each row is one check: a failing row
        shows the call the grader made, what it expected, what your code gave, and a
        hint. **Try new random values** grades again with a new seed: a solution that
        passes once by luck will not pass every time.
        """)


def check_code(step: int) -> str:
    return f"from agtool_lab.widget import check\ncheck({step})"


def playground_md(text: str) -> str:
    return "## Playground\n\n" + dedent(text)


# --------------------------------------------------------------------------
# The eleven step notebooks
# --------------------------------------------------------------------------

NB01 = {
    "file": "01_contract_table.ipynb",
    "title": "Step 1 · The contract table",
    "goal": "Put the stock data, two lookup tools and one table that describes both tools into `agtool/tools.py`.",
    "minutes": 20,
    "why": """\
        An agent that calls tools fails most often at the call itself, not in the model's
        prose: measured over a whole tool loop, picking the right tool succeeded 99% of the
        time but getting its **arguments** right only 91% of the time, the weakest of the
        four stages (interpreting the result: 96%, stopping at the right time: 98%).

        Every defence in this lab reads one place: a **contract table** that says, for each
        tool, which function runs, which arguments it takes (type, required, allowed values,
        bounds) and what a result must look like. Written once as data, it lets one
        validator serve every tool; written as `if` statements per tool, it drifts the
        first time a tool is added. Listing the allowed values is not bureaucracy either:
        in one measured product, turning three free-text parameters into fixed lists of
        allowed values removed 40% of all argument failures in one change.

        You also write two tools. `stock_lookup` respects `limit`; `legacy_stock` is an old
        API that ignores it. Step 4 uses that second tool to show why a result must be
        checked too.
        """,
    "notes": """\
        ### Module-level names

        | name | value |
        |---|---|
        | `REGIONS` | `@REGIONS@` (this order) |
        | `FALLBACK_REGION` | `@FALLBACK_REGION@` (used in step 7) |
        | `MAX_ROWS` | `@MAX_ROWS@` |
        | `CALLS` | `@CALLS@`: tool name -> how often its body ran |
        | `STOCK` | the 19 rows below, in this order |

        ### The stock table

        @STOCK_TABLE@

        Facts worth knowing (the grader relies on them): `SKU-3300` has **7 bins** in `north`
        (more than `MAX_ROWS`); `SKU-5000` has no `central` stock; `SKU-9999` has no rows at
        all; a `count` of `0` is a real, empty bin, not a missing result.

        Ready to paste into `agtool/tools.py` (it replaces `STOCK: list = []`):

        ```python
        @STOCK_BLOCK@
        ```

        ### The two tools

        Both are called as `tool(sku, region, limit)` and return the same shape:

        | tool | first line | returns |
        |---|---|---|
        | `stock_lookup` | `CALLS["stock_lookup"] += 1` | `{"sku": sku, "region": region, "rows": [...]}` with the matching rows in table order, **at most `limit`** |
        | `legacy_stock` | `CALLS["legacy_stock"] += 1` | the same shape with **all** matching rows; `limit` is ignored |

        A row of `rows` holds only `{"bin": ..., "count": ...}` (no sku or region). The
        counter goes on the first line so that a body that fails later is still counted: the
        grader uses it to see whether a body ran.

        ### The contract table `TOOLS`

        One entry per tool, each with exactly three keys:

        | key | holds |
        |---|---|
        | `fn` | the function object itself (`stock_lookup`, not the string `"stock_lookup"`) |
        | `args` | argument name -> rule (below) |
        | `returns` | what a good result looks like (below) |

        An argument rule is a dict:

        | rule key | meaning | `sku` | `region` | `limit` |
        |---|---|---|---|---|
        | `type` | a Python type object | `str` | `str` | `int` |
        | `required` | must be present | `True` | `True` | `True` |
        | `allowed` | the only values accepted | | `REGIONS` | |
        | `min`, `max` | inclusive bounds | | | `1`, `MAX_ROWS` |

        The result rule, the same for both tools:

        | key | holds |
        |---|---|
        | `keys` | top-level key -> type: `{"sku": str, "region": str, "rows": list}` |
        | `rows` | `{"max_len": MAX_ROWS, "item": ...}` where `item` maps each row field to a rule: `"bin"` -> `{"type": str}`, `"count"` -> `{"type": int, "min": 0}` |
        """,
    "task": """\
        In `agtool/tools.py`:

        1. Set `REGIONS`, `FALLBACK_REGION`, `MAX_ROWS` and `CALLS` as in the first table.
        2. Paste the `STOCK` block.
        3. Write `stock_lookup(sku, region, limit)` and `legacy_stock(sku, region, limit)`;
           each adds 1 to its own `CALLS` entry on its first line.
        4. Fill `TOOLS` with one entry per tool: `fn`, `args`, `returns`.
        """,
    "hints": """\
        - Both tools filter `STOCK` the same way; a small helper such as
          `_matching_rows(sku, region)` that returns `[{"bin": ..., "count": ...}, ...]` keeps
          them to three lines each. `rows[:limit]` takes at most `limit` items.
        - Write the argument rules once and give the same dict to both entries.
        - Use the names, not copies of their values: `"allowed": REGIONS`, `"max": MAX_ROWS`.
        - `"type": int` is the type object; `"type": "int"` (a string) will not work with
          `isinstance` in step 2.
        - Only the three keys `fn`, `args`, `returns` in each entry: a description or name
          key would make the grader reject the table.
        """,
    "playground": """\
        Pick a sku to see its bins per region (drawn from *your* `STOCK`), then move `limit`
        and compare what your two tools return and how `CALLS` grows. Below the chart is your
        `TOOLS` table read back from the module.
        """,
    "playground_code": "from agtool_lab.playground import contract_playground\ncontract_playground()",
}

NB02 = {
    "file": "02_validate_args.ipynb",
    "title": "Step 2 · Check the arguments before the call",
    "goal": 'Write `validate_args(name, args)`, which reads only the contract table and names the one thing wrong with a call, or returns `""`.',
    "minutes": 25,
    "why": """\
        The arguments are where a tool loop breaks most (91% correct, against 99% for picking
        the tool). Where do the other 9% go? In one classified set of failures: identity
        (the wrong customer or product) 48%, a missing argument 19%, a **format** error such as
        `4411` for `SKU-4411` 14%, an **invented** value 11%, a wrong unit or scale 8%.
        Identity needs data the model does not have, but format, type, allowed values and
        bounds are all things a contract can check before anything runs. In the same
        product, adding checks in front of the tools took argument accuracy from 0.91 to
        0.98 and format failures from 1.3% of calls to 0.1%.

        A refusal at this point is also the cheapest failure there is: no time budget spent,
        no database touched, and a precise reason that the next attempt can act on (step 7).

        One Python trap deserves its own row: `bool` is a subclass of `int`, so
        `isinstance(True, int)` is `True`. A model that writes `true` where a count belongs
        must still be refused. Likewise a numeric string such as `"3"` is not an `int`:
        quietly converting it teaches the caller that the contract is only a suggestion.
        """,
    "notes": """\
        ### Reasons (exact spelling)

        | return | when |
        |---|---|
        | `""` | the call is valid |
        | `unknown_tool` | `name` is not a key of `TOOLS` |
        | `missing:<arg>` | a required argument is absent, e.g. `missing:limit` |
        | `extra:<arg>` | an argument the contract does not list, e.g. `extra:color` |
        | `type:<arg>` | wrong type; `True`/`False` never count as `int` |
        | `allowed:<arg>` | value not in the rule's `allowed`, e.g. `allowed:region` |
        | `range:<arg>` | below `min` or above `max` (bounds are inclusive) |

        ### Examples for `stock_lookup`

        | `args` | reason |
        |---|---|
        | `{"sku": "SKU-1001", "region": "north", "limit": 2}` | `""` |
        | `{"sku": "SKU-1001", "region": "north"}` | `missing:limit` |
        | `{"sku": "SKU-1001", "region": "north", "limit": 2, "color": "red"}` | `extra:color` |
        | `{"sku": "SKU-1001", "region": "north", "limit": True}` | `type:limit` |
        | `{"sku": "SKU-1001", "region": "north", "limit": "3"}` | `type:limit` |
        | `{"sku": "SKU-1001", "region": "north", "limit": 3.0}` | `type:limit` |
        | `{"sku": 1001, "region": "north", "limit": 2}` | `type:sku` |
        | `{"sku": "SKU-1001", "region": "mars", "limit": 2}` | `allowed:region` |
        | `{"sku": "SKU-1001", "region": "North", "limit": 2}` | `allowed:region` (case matters) |
        | `{"sku": "SKU-1001", "region": "north", "limit": 0}` | `range:limit` (so is `6`) |

        The grader sends only calls with exactly one defect, so which check comes first is
        your choice. It also watches the tool counters: `validate_args` must never run a
        tool body.
        """,
    "task": """\
        In `agtool/tools.py`, write `validate_args(name, args) -> str`:

        1. `unknown_tool` when `name` is not in `TOOLS`.
        2. For the tool's `args` rules: `extra:`, `missing:`, `type:`, `allowed:`, `range:`.
        3. `""` when nothing is wrong. Read only `TOOLS`; call no tool.
        """,
    "hints": """\
        - Loop over `args` for `extra:` and over the contract for `missing:` and the rest.
        - Check the type before comparing: `"3" < 1` raises `TypeError` in Python 3.
        - For the bool trap: `isinstance(value, bool) and expected is not bool` means wrong type.
        - Not every rule has `allowed`, `min` or `max`: use `"min" in rule` or `rule.get("min")`.
        - Nothing here is specific to `stock_lookup`: a third tool added to `TOOLS` must be
          validated without touching this function.
        """,
    "playground": """\
        Build a call from the controls and watch the reason your `validate_args` returns.
        Try `limit as` **bool True** and **numeric string**, a region of `North` or `mars`,
        leaving out an argument, or the extra `color`.
        """,
    "playground_code": "from agtool_lab.playground import args_playground\nargs_playground()",
}

NB03 = {
    "file": "03_call_boundary.ipynb",
    "title": "Step 3 · One door for every call",
    "goal": "Write `call_tool(name, args)`, the only way a tool is run: it validates first and turns every failure into a value.",
    "minutes": 20,
    "why": """\
        If a model invents one argument name and the tool is called directly, Python raises
        `TypeError` in the middle of the graph: the run stops, and the state that recorded
        what was tried is gone with it. Worse, a tool that gets a bad value may not raise at
        all: handed the amount `"1,299.00"`, a lenient parser that stops at the comma bills
        1.299 instead of 1299, and nothing looks wrong. So every call goes through one door:

        - **before** the door, `validate_args` refuses a bad call, and the tool body never
          runs: such a refusal costs microseconds and touches nothing;
        - **at** the door, an exception from the tool becomes a value with a reason;
        - **after** it (step 4), the result is checked too.

        "The body never ran" is the claim the grader tests hardest. It replaces
        `TOOLS[name]["fn"]` with a counting spy and sends wrong calls: catching the exception
        *after* calling a tool with bad arguments does not pass, because the spy has already
        counted the call.

        One door also gives you one place to count refusals per tool. As a rule of thumb from
        practice, a tool refused on fewer than 1 call in 100 is well described; above 5 in
        100 the contract or the tool's description needs work, not the model.
        """,
    "notes": """\
        ### What `call_tool` returns (always these three keys)

        | case | `ok` | `value` | `error` | body runs? |
        |---|---|---|---|---|
        | `validate_args` gave a reason | `False` | `None` | `"args:" + reason`, e.g. `args:range:limit` | **no** |
        | the tool raised | `False` | `None` | `"raised:" + type(exc).__name__`, e.g. `raised:KeyError` | yes |
        | success | `True` | the tool's result | `""` | yes |

        Step 4 adds a fourth case (`result:...`) and step 5 a cache in front of the call.

        ### Rules

        - Take the function from `TOOLS[name]["fn"]` at call time and call it as `fn(**args)`;
          the grader swaps that entry for a spy and expects the spy to run.
        - Catch `Exception` (not `BaseException`: `KeyboardInterrupt` must still stop you).
        - Nothing escapes: no exception leaves `call_tool`.
        """,
    "task": """\
        In `agtool/tools.py`, write `call_tool(name, args) -> dict`:

        1. Validate with `validate_args`; on a reason return the `args:` failure without calling.
        2. Call `TOOLS[name]["fn"](**args)` inside `try`/`except Exception`.
        3. Return `{"ok": True, "value": result, "error": ""}` on success.
        """,
    "hints": """\
        - A tiny helper `_failure(error)` returning `{"ok": False, "value": None, "error": error}`
          keeps every failure return identical (step 4 adds one more).
        - `type(exc).__name__` gives `"KeyError"` for a `KeyError`; do not use `str(exc)`.
        - Do not import `stock_lookup` by name inside `call_tool`: the table is the door.
        """,
    "playground": """\
        Call `call_tool` with good and bad arguments and watch `CALLS` before and after:
        a refused call must leave it unchanged. Tick the box to swap the tool for one that
        raises `KeyError` (the grader does the same with its spy). **Fresh import** starts
        with zeroed counters.
        """,
    "playground_code": "from agtool_lab.playground import call_playground\ncall_playground()",
}

NB04 = {
    "file": "04_validate_result.ipynb",
    "title": "Step 4 · Do not trust what comes back",
    "goal": "Write `validate_result(name, value)` from the contract's `returns`, and make `call_tool` refuse a result that fails it.",
    "minutes": 20,
    "why": """\
        The worst tool failure raises nothing. A lookup returns an empty list, Python is
        happy, and the agent writes "SKU-9999 is in stock in three places" on top of it. Or
        an old API ignores your `limit` and hands back seven rows where the contract
        promises at most five. Reading results is its own stage of the tool loop (96%
        correct in the measurements of step 1), and the part you can check without a model
        is the part the contract describes: the shape, the size, the bounds.

        The same contract table that guards the arguments guards the result: `returns` says
        which keys, which types, how many rows, and which values are too small. Because the
        check reads the table, a new tool is guarded the day it is added.

        Some wrong results pass every check (the right shape for the wrong product). The
        answer sentence of step 6 names the sku, region and bin it used, so a person can see
        what it acted on.
        """,
    "notes": """\
        ### Reasons (exact spelling)

        | return | when |
        |---|---|
        | `""` | the result can be trusted |
        | `shape` | not a dict; a key of `keys` missing or of the wrong type; or a row that is not a dict with the `item` fields of the right types |
        | `empty` | `rows` is an empty list |
        | `too_big` | `len(rows) > max_len` |
        | `range` | a row field below its `min` (a `count` of `0` is fine, `-1` is not) |

        Types follow the rule of step 2: `True` is not an acceptable `count`.

        ### In `call_tool`

        | case | `ok` | `value` | `error` |
        |---|---|---|---|
        | the tool returned, `validate_result` gave a reason | `False` | `None` | `"result:" + reason`, e.g. `result:too_big` |

        `legacy_stock("SKU-3300", "north", any_limit)` returns 7 rows, so through `call_tool`
        it gives `result:too_big`; `SKU-9999` gives `result:empty`.
        """,
    "task": """\
        In `agtool/tools.py`:

        1. Write `validate_result(name, value) -> str`, reading only `TOOLS[name]["returns"]`.
        2. In `call_tool`, run it on every successful return; on a reason, return the
           `result:` failure.
        """,
    "hints": """\
        - Check the shape first (including every row), then emptiness, then size, then
          bounds: a `range` check on a row that is not a dict would crash.
        - Compare types the way step 2 does (a `bool` is not an `int`), so the bool trap is
          handled the same way here; one small helper used by both functions is one way.
        - `legacy_stock` is the reason `too_big` exists: through `call_tool` it must not
          look like success.
        """,
    "playground": """\
        Pick a sample result (or edit it: any Python literal) and see what your
        `validate_result` says. The button fills in a real `legacy_stock` result.
        """,
    "playground_code": "from agtool_lab.playground import result_playground\nresult_playground()",
}

NB05 = {
    "file": "05_cache.ipynb",
    "title": "Step 5 · Do not ask the same thing twice",
    "goal": "Add `CACHE` and `cache_key(name, args)` so that `call_tool` runs a tool body once per distinct successful call.",
    "minutes": 15,
    "why": """\
        Agents repeat themselves: the same lookup for each sentence of an answer, the same
        order handled twice, a retry after a repair. Each repeat costs a round trip. A cache
        in front of the door removes them, with two rules that matter more than the cache:

        - **Only successes are stored.** A failure is exactly what a retry is for. Telling
          the caller exactly what to change turns retries into successes (in one
          measurement, first retries succeeded 94% of the time when the error carried the
          correction, 58% without it); a cached failure would answer every retry with the
          same failure.
        - **The key is taken after validation.** Only a call that passed the contract
          deserves a key, and the same arguments in another order are the same call.
        """,
    "notes": """\
        ### Names

        | name | what |
        |---|---|
        | `CACHE` | a module-level dict: `cache_key(...)` -> successful result |
        | `cache_key(name, args)` | one string per (tool, arguments): same for the same arguments in any key order; different for another tool or other values |

        ### Where it goes in `call_tool`

        | order | step |
        |---|---|
        | 1 | `validate_args`; a reason -> `args:` failure |
        | 2 | key in `CACHE` -> return `ok=True` with the stored value, **no body run** |
        | 3 | call the tool (`raised:` on exception) |
        | 4 | `validate_result` (`result:` on a reason) |
        | 5 | store the value under the key, return success |

        Nothing empties `CACHE` by itself: it lives as long as the module, so a repeated
        order in step 7 may run no tool body at all. The grader starts each step from a
        fresh import.
        """,
    "task": """\
        In `agtool/tools.py`:

        1. `CACHE = {}` (already there) and `cache_key(name, args) -> str`.
        2. In `call_tool`: look the key up after validation and right before calling; store
           only successes, after result validation.
        """,
    "hints": """\
        - `json.dumps(args, sort_keys=True, ensure_ascii=False)` gives the same text for the
          same dict in any order; put the tool name in front of it.
        - A failed call (refused result, exception) must run the body again next time: do
          not store it.
        """,
    "playground": """\
        Press **call_tool** several times with the same arguments, then tick "reverse order":
        the body should run once. A refused call never reaches the body either, and a
        failing result is not remembered, so `SKU-9999` reaches the body on every press.
        """,
    "playground_code": "from agtool_lab.playground import cache_playground\ncache_playground()",
}

NB06 = {
    "file": "06_failure_path.ipynb",
    "title": "Step 6 · Failure is a path, not an exception",
    "goal": "Build a LangGraph graph `pick -> fetch -> reply | giveup` where a failed call is recorded in the state and leads to an honest answer.",
    "minutes": 30,
    "why": """\
        Up to now `call_tool` turns every failure into a value. This step puts it in an agent
        graph, where that choice pays off: a failed fetch appends its reason to the state and
        the graph takes another edge. Nothing is thrown away. The state still says what was
        asked, what was called, and why it failed; an exception would have left only a
        traceback.

        `giveup` is a real answer, not a crash: "could not answer: result:empty" is more use
        to a person than an invented number of bins, and the reason it names is exactly what
        step 7 needs to try again. `pick` is where a real agent would ask a model for the
        tool and arguments; here it copies them from the order, and since arguments are the
        weakest stage of the loop (about 1 call in 11 gets them wrong), everything after
        `pick` assumes they may be wrong.
        """,
    "notes": """\
        ### An order

        `{"sku": "SKU-1001", "region": "north", "limit": 2}`, optionally with `"tool"`
        (default `"stock_lookup"`).

        ### `State` (a `TypedDict`)

        | field | type | reducer |
        |---|---|---|
        | `errors` | list of reason strings | appending: `Annotated[list, operator.add]` |
        | `calls` | list of `{"tool": ..., "args": ...}` dicts, one per `call_tool` | appending |
        | `attempts` | int, one per fetch | adding: `Annotated[int, operator.add]` |
        | anything else you need (`order`, `tool`, `args`, `ok`, `rows`, `answer`) | your choice | none (last write wins) |

        With a reducer, a node returns only the **new** items (`{"errors": [reason]}`); LangGraph
        adds them to what is there.

        ### Nodes (these names)

        | node | does | returns (a partial update) |
        |---|---|---|
        | `pick` | order -> tool name and args, values unchanged; it never writes into the order | e.g. `{"tool": ..., "args": ...}` |
        | `fetch` | exactly one `call_tool`; never raises | the call, one attempt, the rows or the error |
        | `reply` | answer from the **first row**: contains sku, region, bin and count, with the region of the call that produced the rows (after step 7's repair, the repaired one, never the order's) | `{"answer": ...}` |
        | `giveup` | answer containing the **last reason** in `errors` | `{"answer": ...}` |

        ### Functions

        | function | returns |
        |---|---|
        | `build_naive()` | the compiled graph: `START -> pick -> fetch -> reply or giveup -> END` |
        | `run_naive(order)` | `{"ok", "answer", "rows", "errors", "calls"}` (below) |

        | key of `run_naive`'s result | holds |
        |---|---|
        | `ok` | `True` when the fetch succeeded, else `False` |
        | `answer` | the sentence from `reply` or `giveup` |
        | `rows` | the rows of the tool's result (unchanged); empty when it gave up |
        | `errors` | the reasons, one per failed fetch (`[]` on success) |
        | `calls` | one dict per `call_tool`: `tool` (the name called) and `args` (exactly what was passed) |

        ### LangGraph in five lines

        ```python
        graph = StateGraph(State)
        graph.add_node("pick", pick)                  # and the others
        graph.add_edge(START, "pick")
        graph.add_conditional_edges("fetch", choose, ["reply", "giveup"])  # choose(state) -> node name
        app = graph.compile(); final = app.invoke({"order": order})
        ```
        """,
    "task": """\
        In `agtool/tools.py`:

        1. `State` with `errors` and `calls` (appending) and `attempts` (adding), plus your fields.
        2. Nodes `pick`, `fetch`, `reply`, `giveup`.
        3. `build_naive()` and `run_naive(order)`.
        """,
    "hints": """\
        - Nodes return a new dict and never change the `state` they receive, nor the order in
          it: the order passed to `run_naive` is the same after the run (read it with
          `order.get("tool", "stock_lookup")`, not `order.setdefault(...)`).
        - In `fetch`, store a copy of the arguments in `calls` (`dict(args)`), so a later
          change cannot rewrite history.
        - The routing function after `fetch` looks at whether the call succeeded and returns
          `"reply"` or `"giveup"`.
        - `run_naive` picks the five keys out of the final state; `rows` may be empty on giveup.
        """,
    "playground": """\
        Choose an order (or type one) and run it through your `run_naive`: the drawing shows
        the nodes it visited, with the reason under each failed fetch; the nodes it never
        reached are grey.
        """,
    "playground_code": "from agtool_lab.playground import path_playground\npath_playground(6)",
}

NB07 = {
    "file": "07_repair_loop.ipynb",
    "title": "Step 7 · Read the reason, fix, try again",
    "goal": "Add a `repair` node that reads the last reason, fixes the next attempt, and loops back to `fetch` at most `MAX_ATTEMPTS` times.",
    "minutes": 30,
    "why": """\
        A precise reason is worth more than a retry. In one measured product, when the error
        came back with the correction itself (`sku` should be `SKU-4411`, not `4411`), a
        model's first retry succeeded 94% of the time; with the bare error, 58%, and it often
        "fixed" the call into a different wrong one. Here the reason is in the state
        (step 6), so the fix can be chosen by reading it, not by guessing.

        Three rules keep a repair loop honest:

        - **Only some reasons are repairable.** A wrong region has a documented fallback; a
          limit out of range can be clamped; a tool that returns too much can be swapped for
          the one that honours `limit`. An empty result stays empty however often you ask,
          and a tool that raised needs a person, not a loop.
        - **The loop is bounded.** `MAX_ATTEMPTS` fetches, then an honest give-up; an
          unbounded retry loop is a bill with no ceiling.
        - **Every fix is written down** in `fixes`, so the answer can be traced to the call
          that really ran, not the one first asked for.
        """,
    "notes": """\
        ### Names

        | name | value / job |
        |---|---|
        | `MAX_ATTEMPTS` | `@MAX_ATTEMPTS@`: fetches allowed per order; read while the graph runs |
        | `FALLBACK_REGION` | `@FALLBACK_REGION@` |
        | `REPAIRS` | reason -> fix (your format: functions, tuples, ...) |
        | `can_repair(reason)` | `True` when `REPAIRS` has a fix for it |
        | `repair` node | reads the last reason in `errors`, applies the fix, appends a description to `fixes` |
        | `build_graph()` | compiled graph with the repair loop |
        | `handle(order)` | `{"ok", "answer", "rows", "errors", "calls", "fixes", "attempts", "tool_runs"}` |

        ### Repairs

        | reason | fix | repairable |
        |---|---|---|
        | `args:allowed:region` | region becomes `FALLBACK_REGION` | yes |
        | `args:range:limit` | clamp into `1..MAX_ROWS` | yes |
        | `result:too_big` | switch the tool to `stock_lookup` | yes |
        | `result:empty` | asking again gives the same | **no** |
        | `raised:...` | any exception | **no** |
        | others | your choice | |

        ### After a failed fetch

        | condition | next node |
        |---|---|
        | `can_repair(last reason)` and fewer than `MAX_ATTEMPTS` fetches so far | `repair`, then `fetch` again |
        | otherwise | `giveup` |

        `fixes` is a list with an appending reducer (add it to `State`).

        | key of `handle`'s result | holds |
        |---|---|
        | `ok`, `answer`, `rows`, `errors`, `calls` | as in `run_naive` (step 6), over all fetches of the run |
        | `fixes` | one description per repair made, e.g. `"region 'mars' -> 'central'"` (`[]` if none) |
        | `attempts` | how many fetches ran |
        | `tool_runs` | `sum(CALLS.values())` after the run minus before it |

        ### Expected

        | order | result |
        |---|---|
        | `{"sku": "SKU-1001", "region": "mars", "limit": 2}` | ok, one fix, `attempts == 2`, `tool_runs == 1` |
        | `{"sku": "SKU-9999", "region": "north", "limit": 2}` | not ok, no fix, the answer names `result:empty` |
        """,
    "task": """\
        In `agtool/tools.py`:

        1. `MAX_ATTEMPTS = 3`, `REPAIRS`, `can_repair(reason)`.
        2. The `repair` node, and `fixes` in `State`.
        3. `build_graph()` with the loop, and `handle(order)`.
        """,
    "hints": """\
        - Read `MAX_ATTEMPTS` inside the routing function (the module global), not as a
          default argument: the grader changes it between runs and expects the limit to follow.
        - LangGraph has a bound of its own: `recursion_limit`, the node steps one `invoke`
          may take (set in its `config`; the default depends on the LangGraph version). Each
          extra attempt costs two steps (`repair`, `fetch`), so if you raise `MAX_ATTEMPTS`
          past what `recursion_limit` allows, the run stops with `GraphRecursionError`
          instead of an honest give-up: raise both together.
        - `repair` returns **new** arguments (`{**args, "region": FALLBACK_REGION}`): changing
          the dict in place would rewrite `calls[0]`, the record of what the first call used.
        - `attempts` counts fetches, so after the first failed fetch it is `1`.
        - A repair may make a call that still fails (`SKU-5000` has no `central` stock):
          the loop then gives up with the new reason.
        - Because of the cache, running the same order twice can give `tool_runs == 0`.
        """,
    "playground": """\
        Run orders through your `handle` and watch the path: a wrong region should go
        `fetch -> repair -> fetch -> reply`; `SKU-9999` straight to `giveup`. Lower
        `MAX_ATTEMPTS` to 1 and the wrong region gives up too.
        """,
    "playground_code": "from agtool_lab.playground import path_playground\npath_playground(7)",
}

NB08 = {
    "file": "08_report.ipynb",
    "title": "Step 8 · Write down what you measured",
    "goal": "Write `write_report(folder=None)`, which runs your module, measures seven facts and writes them to `tool_report.json` and `tool_report.md`.",
    "minutes": 20,
    "why": """\
        A claim about a tool boundary is worth only what was measured. "Bad arguments never
        reach the tool" is a number (body runs after bad calls: 0), and so is "repeats are
        free" (body runs on the second identical call: 0). The grader does not read your
        explanations: it runs `write_report` in a scratch folder, compares every number with
        its own measurement of your module, and changes your module (a smaller
        `MAX_ATTEMPTS`, for instance) to tell measured numbers from typed ones.

        Measured numbers are also what make a change arguable. The product whose figures
        this lab quotes could say that its checks in front of the tools cut identity
        failures reaching execution from 4.3% of calls to 0, and format failures from 1.3%
        to 0.1%, only because both were counted before and after.
        """,
    "notes": """\
        ### `tool_report.json` (and the returned dict)

        @REPORT_TABLE@

        ### `tool_report.md`: exactly four `##` sections, all from one set

        @HEADINGS_TABLE@

        The last section states the attempt limit as a number: the value of `MAX_ATTEMPTS`
        when the report is written.

        `folder` defaults to the folder holding your module file (`Path(__file__).parent`).
        """,
    "task": """\
        In `agtool/tools.py`, write `write_report(folder=None) -> dict` that measures the seven
        values by running your own functions, writes both files into `folder`, and returns
        the dict. Then write the real files next to your module: add a code cell of your own
        (this notebook has none for it) and run

        ```python
        from agtool_lab.load import load_module
        load_module().write_report()
        ```
        """,
    "hints": """\
        - Count body runs as the difference of `sum(CALLS.values())` before and after.
        - For `memo_second_call_runs`, remove the key from `CACHE` first so the first call is
          a real one; otherwise an earlier call may already have filled it.
        - Write both files with `encoding="utf-8"`: the Korean heading set needs it, and
          `json.dumps(report, indent=2)` keeps the JSON readable.
        - Put `MAX_ATTEMPTS` into the text with an f-string at the time of writing.
        """,
    "playground": """\
        The button runs your `write_report` in a scratch folder (not next to your module)
        with a fresh import, then shows both files: each JSON value beside what a correct
        module gives, and the Markdown rendered. Change `MAX_ATTEMPTS` to see whether your
        report follows it.
        """,
    "playground_code": "from agtool_lab.playground import report_playground\nreport_playground()",
}

NB09 = {
    "file": "09_coercion.ipynb",
    "title": "Step 9 · Coerce strictly, and write it down",
    "goal": "Write `COERCIONS`, `coerce(name, raw_args)` and `call_coerced(name, raw_args)`: three exact repairs of a model's formatting, each one recorded, and nothing else.",
    "minutes": 25,
    "why": """\
        A model that writes `" 3 "` for a limit or `"North"` for a region meant something
        clear, and refusing it outright wastes a turn. The chapters' answer is neither to
        refuse nor to be lenient, but a short, **strict allowlist** of conversions so
        deterministic that they are not judgment calls, applied before validation and
        **recorded** every time. Format slips are 14% of the failed argument calls in the
        chapter's classified set (`4411` for `SKU-4411`); an allowlist takes care of the
        ones with a single honest reading.

        The line is the whole point. `" 3 "` has one honest reading. `"1,299"` has several
        (1299? 1.299? a locale bug?), `"+3"` and `"3 rows"` are guesses, and `"３"` (a
        full-width digit) is a character from another script: Python's `int("３")` quietly
        returns `3`, which is exactly why "whatever `int()` accepts" is not a rule. The
        chapter's warning: a harness that guesses teaches the model to keep sending the
        wrong format, because it keeps working, and a coercion that hides a defect
        manufactures more of it.

        And never a default: filling in a missing `limit` means the call that ran is not the
        call the model made, and nothing in the transcript says so. That is why every
        change goes into a ledger (`coercions`), and why a key is never added or removed.
        """,
    "notes": """\
        ### The three rules (and no other)

        | rule | applies to | change |
        |---|---|---|
        | `strip` | a `str` value of an argument whose contract `type` is `str` | leading/trailing ASCII whitespace removed (only when there is some) |
        | `lower` | a `str` value of an argument with `allowed`, when the value is not in `allowed` but its lower-case form (after `strip`) is | lower-cased |
        | `int_from_str` | a `str` value of an argument whose contract `type` is `int` | the value after `strip` is one or more ASCII digits `0-9` → `int(value)` |

        `COERCIONS` is a module-level table that names each of these rules as a string
        (`"strip"`, `"lower"`, `"int_from_str"`); its shape is your choice (a dict rule name ->
        description, or rule name -> function, both work).

        ### Never coerced: left as they are, for `validate_args` to refuse

        | value | why not |
        |---|---|
        | `True`, `False` | a bool is never a number here, whatever Python says |
        | `3.0` | a float is not an int; rounding is a guess |
        | `"+3"`, `"-1"` | a sign: not "one or more ASCII digits" |
        | `"1,299"`, `"3 rows"` | separators and units have several readings |
        | `"３"`, `"²"`, `"٣"` | non-ASCII digits (Python's `int()` and `str.isdigit()` accept them) |
        | `""` | empty: nothing to read |
        | any value of an argument the contract does not list, or of an unknown tool | no rule to apply |

        ### `coerce(name, raw_args) -> (args, coercions)`

        - `args` is a **new** dict with exactly the keys of `raw_args` (nothing added, no
          defaults; nothing removed). `raw_args` itself is never changed.
        - `coercions` has one entry per argument whose value changed, each a dict with at
          least `arg`, `from` (the raw value), `to` (the new value) and `rule`: every rule
          applied, named, e.g. `"strip+lower"` or `["strip", "lower"]`. An argument that
          needed no change has no entry.
        - It never runs a tool body.

        | `raw_args` (for `stock_lookup`) | `args` | `coercions` |
        |---|---|---|
        | `{"sku": "SKU-1001", "region": " North ", "limit": " 3 "}` | `{"sku": "SKU-1001", "region": "north", "limit": 3}` | `[{"arg": "region", "from": " North ", "to": "north", "rule": "strip+lower"}, {"arg": "limit", "from": " 3 ", "to": 3, "rule": "int_from_str"}]` |
        | `{"sku": "SKU-1001", "region": "north", "limit": "３"}` | unchanged | `[]` |
        | `{"sku": "SKU-1001", "region": "north", "limit": True}` | unchanged | `[]` |
        | `{"sku": "SKU-1001", "region": "mars"}` | unchanged (`limit` is not added) | `[]` |

        ### `call_coerced(name, raw_args) -> dict`

        `coerce`, then `call_tool` on the coerced args; return `call_tool`'s dict plus the key
        `"coercions"`. A call still invalid after coercion is refused by `call_tool` as
        usual (`args:...`, no body run). Do not change `call_tool` or `validate_args`: the
        coercion layer sits in front of them.
        """,
    "task": """\
        In `agtool/tools.py` (the step 9 section at the end):

        1. Fill `COERCIONS` with the three rule names.
        2. Write `coerce(name, raw_args)`: read the tool's rules from `TOOLS`, apply only the
           three rules, return the new dict and the ledger.
        3. Write `call_coerced(name, raw_args)`.
        """,
    "hints": """\
        - `str.strip()` with no argument removes more than ASCII whitespace; the ASCII set is
          `" \\t\\n\\r\\x0b\\x0c"`, so `value.strip(" \\t\\n\\r\\x0b\\x0c")` is exact.
        - `"３".isdigit()` is `True`. Test the characters yourself:
          `text != "" and all(ch in "0123456789" for ch in text)`.
        - Check `isinstance(value, str)` first: a bool, an int or a float is never touched.
        - Build each entry's rule list as you go (`strip`, then maybe `lower` or
          `int_from_str`) and write an entry only when the final value differs from the raw one.
        - An unknown tool: return `dict(raw_args), []`.
        """,
    "playground": """\
        Type a limit and a region the way a model might write them. The first line shows what
        Python's `int()` makes of the limit (try `３`, `²`, `+3`); below it, what your
        `coerce` returns and whether `validate_args` then accepts the call. A `３` that
        becomes `3` is the failure this step prevents.
        """,
    "playground_code": "from agtool_lab.playground import coercion_playground\ncoercion_playground()",
}

NB10 = {
    "file": "10_errors_as_prompts.ipynb",
    "title": "Step 10 · Errors written as prompts",
    "goal": "Write `explain(name, args)`, which turns a refusal into a message and, only when exactly one honest fix exists, a suggestion, and `retry_with_suggestion(name, args)`.",
    "minutes": 30,
    "why": """\
        A refused call becomes part of the model's next prompt. `args:allowed:region` tells a
        program what went wrong, but the model has to guess what to send instead, and the
        chapter observed what it does then: it retries with the same arguments, or
        "corrects" to a different wrong value. Writing the error as a prompt (which
        argument, the value it got, what is accepted) and adding the correction when it is
        unambiguous took the **first retry's success from 0.58 to 0.94** in the chapter's
        measurement.

        The word that matters is *unambiguous*. For `"wast"`, both `east` and `west` are one
        typing slip away: a suggestion would be a coin flip presented as a fact, and the
        model would take it. So a suggestion is given only when **exactly one honest fix**
        exists, and never for a value out of range (`limit=9` is a question for whoever
        chose it) or a missing argument (a fix would invent the value).
        """,
    "notes": """\
        ### `explain(name, args) -> dict`

        | key | refused call | valid call |
        |---|---|---|
        | `error` | `validate_args(name, args)`, unchanged | `""` |
        | `arg` | the argument the reason names (`None` for `unknown_tool`) | `None` |
        | `value` | the offending value (`None` when absent, e.g. `missing:`) | `None` |
        | `message` | a sentence that names the argument, shows the value with `repr`, and for `allowed:`/`range:` says what is accepted (the allowed values, or `min`..`max`) | `""` |
        | `suggestion` | a complete corrected copy of `args`, or `None` (table below) | `None` |

        It never runs a tool body. Example: for `{"sku": "SKU-1001", "region": "mars", "limit": 2}`
        a message such as `region must be one of ['north', 'south', 'east', 'west', 'central']; got 'mars'`.

        ### When there is a suggestion

        | reason | suggestion |
        |---|---|
        | `allowed:<arg>` | with `v` = the value after `strip` and lower-casing (a `str` only): the allowed value equal to `v`; else the **unique** allowed value at edit distance 1 from `v` (one insertion, deletion or substitution); none when two or more are at distance 1, or none is |
        | `type:<arg>` (an int argument) | the `int_from_str` value of step 9 when that rule applies; none for `bool`, floats, anything else |
        | `range:<arg>` | none |
        | `extra:<arg>` | `args` without that argument |
        | `missing:<arg>`, `unknown_tool`, any other | none |

        A suggestion must itself pass `validate_args`: `"9"` for `limit` becomes `9`, which is
        out of range, so it is **no** suggestion.

        | `args` (for `stock_lookup`, `sku` and `limit` fine) | suggestion's `region` |
        |---|---|
        | `region=" North "` | `"north"` |
        | `region="nrth"` | `"north"` (only `north` is one edit away) |
        | `region="wast"` | none: `east` and `west` are both one edit away |
        | `region="mars"` | none |

        ### `retry_with_suggestion(name, args) -> dict`

        Call `call_tool(name, args)`. When it fails with an `args:` error and `explain` has a
        suggestion, call `call_tool` once more with the suggestion. Return the last
        `call_tool` dict plus `"suggested"` (whether the second call was made) and
        `"explanation"` (the `explain` dict of the first call, or `None` when the first call's
        arguments were valid, even if that call then failed with a `result:` or `raised:`
        reason). A tool body runs **at most once** in total.
        """,
    "task": """\
        In `agtool/tools.py` (the step 10 section):

        1. Write `explain(name, args)`: call `validate_args`, split the reason at the first
           `:`, build the message, then the suggestion by the table; keep a suggestion only
           if `validate_args` accepts it.
        2. Write `retry_with_suggestion(name, args)`.
        """,
    "hints": """\
        - Edit distance 1 without a library: same length and exactly one position differs, or
          lengths differ by one and deleting one character of the longer gives the shorter.
        - Collect **all** allowed values at distance 1, then suggest only when the list has
          exactly one item.
        - Reuse step 9 for the `type:` case: `coerce` the one argument and see whether it
          became an `int`.
        - Copy before you change: `{**args, arg: fixed}` leaves the caller's dict alone.
        - In `retry_with_suggestion`, `explain` runs no tool, so the only body runs are the
          two `call_tool` calls, and the first one ran no body when it failed with `args:`.
        """,
    "playground": """\
        Type a misspelt region. The first line shows what a "closest match" helper
        (`difflib.get_close_matches`) would pick, and how many regions are one edit away; below
        it, your `explain`. For `wast` a correct `explain` has no suggestion; for `nrth` it
        suggests `north`.
        """,
    "playground_code": "from agtool_lab.playground import suggestion_playground\nsuggestion_playground()",
}

NB11 = {
    "file": "11_identity.ipynb",
    "title": "Step 11 · Resolve the product, or ask",
    "goal": "Write `PRODUCTS`, `resolve_sku(query)`, which turns what a person calls a product into one sku or says why it cannot, and `handle_named(order)`.",
    "minutes": 30,
    "why": """\
        Nearly half of the failed argument calls in the chapter's classified set, **48%**,
        were identity mistakes: there were two Henderson accounts and the model picked one.
        No schema can catch that, because the model does not have the data to choose; your
        code does. So resolution moves out of the model and into code that may answer in
        three ways: *resolved*, *not found*, or *ambiguous*, with the candidates labelled so
        that a person can choose at a glance.

        An ambiguous answer is a question, not a failure. In the chapter's product, adding
        resolution took the identity failures that reached a tool from 4.3% of calls to none,
        at the cost of asking the user back on 3.1% of calls. Here, "bolt" matches both steel
        bolts: a lookup that takes the first match answers for `SKU-1001` or `SKU-2040`
        depending on the order of a table, and nobody can tell from the answer.
        """,
    "notes": """\
        ### `PRODUCTS`: sku -> name, exactly

        | sku | name |
        |---|---|
        | SKU-1001 | Steel bolt M6 |
        | SKU-2040 | Steel bolt M8 |
        | SKU-3300 | Copper wire 2 mm |
        | SKU-4411 | Copper wire 4 mm |
        | SKU-5000 | Rubber gasket |

        ### `resolve_sku(query) -> dict`

        Read `PRODUCTS` when called (the grader swaps in tables of its own, in any order).
        Compare `q = query.strip()` case-insensitively with `str.casefold`:

        | return | when |
        |---|---|
        | `{"kind": "resolved", "sku": sku}` | `q` equals a sku (a key); or exactly one name contains `q`; or several do but exactly one name **equals** `q` |
        | `{"kind": "not_found", "query": query}` | no name contains `q`; a blank query is always `not_found` |
        | `{"kind": "ambiguous", "query": query, "candidates": [...]}` | otherwise: every matching product, **sorted by sku**, each `{"sku": sku, "label": str}` with a label that contains the product's name and its sku |

        `query` in the answer is the caller's text as given. `resolve_sku` never picks one of
        several, never runs a tool body and never changes `PRODUCTS`.

        | query | result |
        |---|---|
        | `"Steel bolt M8"` | resolved, `SKU-2040` |
        | `"  copper WIRE 4 mm "` | resolved, `SKU-4411` |
        | `"sku-5000"` | resolved, `SKU-5000` |
        | `"gasket"` | resolved, `SKU-5000` |
        | `"bolt"` | ambiguous: `SKU-1001` (`Steel bolt M6 (SKU-1001)`), `SKU-2040` (`Steel bolt M8 (SKU-2040)`) |
        | `"widget"`, `"   "` | not_found |

        ### `handle_named(order)`

        The order has `product` (a query) instead of `sku`, plus `region`, `limit` and
        maybe `tool`. Resolve first.

        - Not resolved: return `{"ok": False, "kind": kind, "candidates": <list, empty unless
          ambiguous>, "answer": str, "tool_runs": 0}` without calling any tool. The answer
          asks the question: it names the query and, when ambiguous, every candidate's label.
        - Resolved: return `handle()`'s result for the order with `sku` set and `product`
          left out, plus `"kind": "resolved"`.

        The caller's order is never changed.
        """,
    "task": """\
        In `agtool/tools.py` (the step 11 section):

        1. Set `PRODUCTS` as in the table.
        2. Write `resolve_sku(query)`.
        3. Write `handle_named(order)` on top of your `handle` from step 7.
        """,
    "hints": """\
        - Collect the matches first (`[sku for sku, name in PRODUCTS.items() if q in name.casefold()]`),
          then decide: none, one, or several (and then look for the one exact name).
        - Check `q == ""` before anything else: the empty string is contained in every name.
        - `sorted(matches)` sorts skus; build the labels after sorting, e.g. `f"{name} ({sku})"`.
        - `{k: v for k, v in order.items() if k != "product"}` is a new dict: add `sku` to it,
          not to the caller's order.
        """,
    "playground": """\
        Type a product the way a person would name it. The first line shows the shortcut (the
        first product whose name contains the text) and how many products match; below it,
        your `resolve_sku` and `handle_named` for that product in `north`. For `bolt` a
        correct module asks which bolt and runs no tool.
        """,
    "playground_code": "from agtool_lab.playground import identity_playground\nidentity_playground()",
}

NOTEBOOKS = [NB01, NB02, NB03, NB04, NB05, NB06, NB07, NB08, NB09, NB10, NB11]
CAPSTONE = "12_capstone.ipynb"


# --------------------------------------------------------------------------
# Assembly
# --------------------------------------------------------------------------


def _navigation(step: int) -> str:
    prev_link = (
        f"[← {NOTEBOOKS[step - 2]['file']}]({NOTEBOOKS[step - 2]['file']})" if step > 1 else "[← README](README.md)"
    )
    next_link = (
        f"[{NOTEBOOKS[step]['file']} →]({NOTEBOOKS[step]['file']})"
        if step < len(NOTEBOOKS)
        else f"[{CAPSTONE} →]({CAPSTONE})"
    )
    return f"{prev_link} · step {step} of {len(NOTEBOOKS)} · {next_link}"


def _facts() -> dict[str, str]:
    """The text of each ``@NAME@`` placeholder of the notes: the spec's facts, written as Python/JSON literals."""
    return {
        "STOCK_TABLE": stock_table(),
        "STOCK_BLOCK": stock_block(),
        "REPORT_TABLE": report_table(),
        "HEADINGS_TABLE": headings_table(),
        "REGIONS": json.dumps(spec.REGIONS),
        "FALLBACK_REGION": json.dumps(spec.FALLBACK_REGION),
        "MAX_ROWS": str(spec.MAX_ROWS),
        "MAX_ATTEMPTS": str(spec.MAX_ATTEMPTS),
        "CALLS": json.dumps(spec.CALLS_START),
    }


def _fill(text: str) -> str:
    # Inserted after dedent: the multi-line blocks would break its common indent.
    for name, value in _facts().items():
        text = text.replace(f"@{name}@", value)
    return text


def build(step: int) -> nbformat.NotebookNode:
    """The notebook of one step, without outputs and with stable cell ids."""
    page = NOTEBOOKS[step - 1]
    header = dedent(f"""\
        # {page["title"]}

        **Goal:** {page["goal"]}

        *About {page["minutes"]} minutes.* {_navigation(step)}
        """)
    task = (
        "## Your task\n\n"
        + dedent(page["task"])
        + (
            "\n<details>\n<summary><b>Hints</b> (click to open)</summary>\n\n"
            + dedent(page["hints"])
            + "\n</details>\n"
        )
    )
    closing = (
        f"When every row is green, go on to **[{NOTEBOOKS[step]['file']}]({NOTEBOOKS[step]['file']})**."
        if step < len(NOTEBOOKS)
        else f"When every row is green, your module does everything the lab asks. To grade all {len(NOTEBOOKS)} "
        "steps at once, open a terminal in JupyterLab (File, New, Terminal) and run "
        "`agtool-grade check agtool/tools.py`. "
        f"Then measure what each layer buys in the capstone: **[{CAPSTONE}]({CAPSTONE})**."
    )
    cells = [
        ("markdown", header),
        ("markdown", "## Why it matters\n\n" + dedent(page["why"])),
        ("markdown", "## Notes\n\n" + _fill(dedent(page["notes"]))),
        ("markdown", task),
        ("markdown", setup_md(step)),
        ("code", SETUP_CODE),
        ("markdown", playground_md(page["playground"])),
        ("code", page["playground_code"]),
        ("markdown", check_md(step)),
        ("code", check_code(step)),
        ("markdown", closing),
    ]
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    for i, (kind, source) in enumerate(cells):
        source = source.rstrip("\n")
        cell = nbformat.v4.new_code_cell(source) if kind == "code" else nbformat.v4.new_markdown_cell(source)
        cell.id = f"step{step}-{i:02d}"  # fixed ids: a rebuild of unchanged text is byte-identical
        nb.cells.append(cell)
    return nb


def render(step: int) -> str:
    """The notebook file's text, exactly as written to disk."""
    return nbformat.writes(build(step)) + "\n"


def main(argv: list[str]) -> int:
    for step, page in enumerate(NOTEBOOKS, start=1):
        nb = build(step)
        nbformat.validate(nb)
        (LABS / page["file"]).write_text(render(step), encoding="utf-8")
        print(f"wrote labs/{page['file']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
