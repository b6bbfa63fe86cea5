"""Which notebook sentence each rule (and so each check) enforces: data for ``docs/checks.md``.

Every sentence of a lab notebook that tells the learner what their code must do
is listed here with the LAB_SPEC rule it states (``grader.spec.RULES``); the
checks covering that rule are the ones that enforce it. A sentence is quoted
as the notebook shows it (whitespace aside): ``tests/test_checks_meta.py``
fails when a quoted sentence no longer occurs in the notebook the generator
builds (``labs/_build_notebooks.py``), so the list cannot drift from the text.
Sentences that only advise (hints, "one way is ...") are not listed.

>>> all(rule for _nb, _sentence, rule in NOTEBOOK_SENTENCES)
True
"""

from __future__ import annotations

# (notebook file, sentence as written, rule id)
NOTEBOOK_SENTENCES: tuple[tuple[str, str, str], ...] = (
    ("01_contract_table.ipynb", "| `REGIONS` | `@REGIONS@` (this order) |", "1.names"),
    ("01_contract_table.ipynb", "| `STOCK` | the 19 rows below, in this order |", "1.stock"),
    ("01_contract_table.ipynb", "a `count` of `0` is a real, empty bin, not a missing result.", "1.zero"),
    ("01_contract_table.ipynb", "with the matching rows in table order, **at most `limit`**", "1.lookup"),
    ("01_contract_table.ipynb", "the same shape with **all** matching rows; `limit` is ignored", "1.legacy"),
    (
        "01_contract_table.ipynb",
        "The counter goes on the first line so that a body that fails later is still counted",
        "1.calls_first",
    ),
    ("01_contract_table.ipynb", "One entry per tool, each with exactly three keys:", "1.tools"),
    (
        "01_contract_table.ipynb",
        '| `fn` | the function object itself (`stock_lookup`, not the string `"stock_lookup"`) |',
        "1.tools",
    ),
    ("01_contract_table.ipynb", "| `min`, `max` | inclusive bounds | | | `1`, `MAX_ROWS` |", "1.args"),
    ("02_validate_args.ipynb", "| `unknown_tool` | `name` is not a key of `TOOLS` |", "2.unknown_tool"),
    (
        "02_validate_args.ipynb",
        "| `missing:<arg>` | a required argument is absent, e.g. `missing:limit` |",
        "2.missing",
    ),
    (
        "02_validate_args.ipynb",
        "| `extra:<arg>` | an argument the contract does not list, e.g. `extra:color` |",
        "2.extra",
    ),
    ("02_validate_args.ipynb", "| `type:<arg>` | wrong type; `True`/`False` never count as `int` |", "2.bool"),
    (
        "02_validate_args.ipynb",
        "| `allowed:<arg>` | value not in the rule's `allowed`, e.g. `allowed:region` |",
        "2.allowed",
    ),
    ("02_validate_args.ipynb", "| `range:<arg>` | below `min` or above `max` (bounds are inclusive) |", "2.range"),
    ("02_validate_args.ipynb", "`validate_args` must never run a", "2.no_body"),
    ("02_validate_args.ipynb", "Read only `TOOLS`; call no tool.", "2.contract_only"),
    ("03_call_boundary.ipynb", "### What `call_tool` returns (always these three keys)", "3.shape"),
    (
        "03_call_boundary.ipynb",
        '| `validate_args` gave a reason | `False` | `None` | `"args:" + reason`, e.g. `args:range:limit` | **no** |',
        "3.blocked",
    ),
    (
        "03_call_boundary.ipynb",
        '| the tool raised | `False` | `None` | `"raised:" + type(exc).__name__`, e.g. `raised:KeyError` | yes |',
        "3.raised",
    ),
    ("03_call_boundary.ipynb", '| success | `True` | the tool\'s result | `""` | yes |', "3.success"),
    (
        "03_call_boundary.ipynb",
        'Take the function from `TOOLS[name]["fn"]` at call time and call it as `fn(**args)`',
        "3.through_table",
    ),
    (
        "03_call_boundary.ipynb",
        "Catch `Exception` (not `BaseException`: `KeyboardInterrupt` must still stop you).",
        "3.base_exception",
    ),
    ("03_call_boundary.ipynb", "Nothing escapes: no exception leaves `call_tool`.", "3.no_exception"),
    ("04_validate_result.ipynb", "| `empty` | `rows` is an empty list |", "4.empty"),
    ("04_validate_result.ipynb", "| `too_big` | `len(rows) > max_len` |", "4.too_big"),
    (
        "04_validate_result.ipynb",
        "| `range` | a row field below its `min` (a `count` of `0` is fine, `-1` is not) |",
        "4.range",
    ),
    (
        "04_validate_result.ipynb",
        'Write `validate_result(name, value) -> str`, reading only `TOOLS[name]["returns"]`.',
        "4.contract_only",
    ),
    (
        "04_validate_result.ipynb",
        "In `call_tool`, run it on every successful return; on a reason, return the `result:` failure.",
        "4.call_tool",
    ),
    ("04_validate_result.ipynb", "through `call_tool` it gives `result:too_big`", "4.legacy_too_big"),
    (
        "05_cache.ipynb",
        "same for the same arguments in any key order; different for another tool or other values",
        "5.key_distinct",
    ),
    (
        "05_cache.ipynb",
        "| 2 | key in `CACHE` -> return `ok=True` with the stored value, **no body run** |",
        "5.second_call",
    ),
    (
        "05_cache.ipynb",
        "look the key up after validation and right before calling; store only successes, after result validation.",
        "5.after_validation",
    ),
    ("05_cache.ipynb", "Nothing empties `CACHE` by itself", "5.lives_long"),
    (
        "06_failure_path.ipynb",
        "| `errors` | list of reason strings | appending: `Annotated[list, operator.add]` |",
        "6.state",
    ),
    (
        "06_failure_path.ipynb",
        "| `pick` | order -> tool name and args, values unchanged; it never writes into the order |",
        "6.pick",
    ),
    (
        "06_failure_path.ipynb",
        "| `pick` | order -> tool name and args, values unchanged; it never writes into the order |",
        "6.no_mutation",
    ),
    ("06_failure_path.ipynb", "| `fetch` | exactly one `call_tool`; never raises |", "6.fetch"),
    ("06_failure_path.ipynb", "answer from the **first row**: contains sku, region, bin and count", "6.reply"),
    (
        "06_failure_path.ipynb",
        "with the region of the call that produced the rows (after step 7's repair, the "
        "repaired one, never the order's)",
        "6.reply_used_args",
    ),
    ("06_failure_path.ipynb", "| `giveup` | answer containing the **last reason** in `errors` |", "6.giveup"),
    (
        "06_failure_path.ipynb",
        "| `build_naive()` | the compiled graph: `START -> pick -> fetch -> reply or giveup -> END` |",
        "6.nodes",
    ),
    (
        "06_failure_path.ipynb",
        "| `calls` | one dict per `call_tool`: `tool` (the name called) and `args` (exactly what was passed) |",
        "6.run_naive",
    ),
    (
        "06_failure_path.ipynb",
        "| `calls` | one dict per `call_tool`: `tool` (the name called) and `args` (exactly what was passed) |",
        "6.calls_history",
    ),
    (
        "07_repair_loop.ipynb",
        "| `MAX_ATTEMPTS` | `@MAX_ATTEMPTS@`: fetches allowed per order; read while the graph runs |",
        "7.runtime",
    ),
    ("07_repair_loop.ipynb", "| `args:allowed:region` | region becomes `FALLBACK_REGION` | yes |", "7.fixes"),
    ("07_repair_loop.ipynb", "| `result:empty` | asking again gives the same | **no** |", "7.not_repairable"),
    (
        "07_repair_loop.ipynb",
        "| `can_repair(last reason)` and fewer than `MAX_ATTEMPTS` fetches so far | `repair`, then `fetch` again |",
        "7.limit",
    ),
    (
        "07_repair_loop.ipynb",
        "| `repair` node | reads the last reason in `errors`, applies the fix, appends a description to `fixes` |",
        "7.repair_node",
    ),
    ("07_repair_loop.ipynb", "| `tool_runs` | `sum(CALLS.values())` after the run minus before it |", "7.tool_runs"),
    (
        "07_repair_loop.ipynb",
        '| `{"sku": "SKU-1001", "region": "mars", "limit": 2}` | ok, one fix, `attempts == 2`, `tool_runs == 1` |',
        "7.examples",
    ),
    ("08_report.ipynb", "### `tool_report.md`: exactly four `##` sections, all from one set", "8.headings"),
    (
        "08_report.ipynb",
        "The last section states the attempt limit as a number: the value of `MAX_ATTEMPTS` when "
        "the report is written.",
        "8.attempt_limit",
    ),
    (
        "08_report.ipynb",
        "`folder` defaults to the folder holding your module file (`Path(__file__).parent`).",
        "8.default_folder",
    ),
    (
        "08_report.ipynb",
        "measures the seven values by running your own functions, writes both files into `folder`, "
        "and returns the dict.",
        "8.values",
    ),
)


def normalised(text: str) -> str:
    """``text`` with every run of whitespace as one space (notebook lines wrap anywhere).

    >>> normalised("a  b\\n  c")
    'a b c'
    """
    return " ".join(text.split())
