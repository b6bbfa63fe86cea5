"""Your module for the agtool lab: the side of an agent that *calls* tools.

You fill this file in, one lab step at a time. Each notebook in ``labs/``
explains one idea, tells you which names below to write, and ends with a
Check cell that grades that step against this file on disk.

    step 1  labs/01_contract_table.ipynb   data, two tools, the TOOLS table
    step 2  labs/02_validate_args.ipynb    validate_args
    step 3  labs/03_call_boundary.ipynb    call_tool
    step 4  labs/04_validate_result.ipynb  validate_result (used by call_tool)
    step 5  labs/05_cache.ipynb            CACHE, cache_key (used by call_tool)
    step 6  labs/06_failure_path.ipynb     State, pick/fetch/reply/giveup, build_naive, run_naive
    step 7  labs/07_repair_loop.ipynb      MAX_ATTEMPTS, REPAIRS, can_repair, repair, build_graph, handle
    step 8  labs/08_report.ipynb           write_report
    step 9  labs/09_coercion.ipynb         COERCIONS, coerce, call_coerced
    step 10 labs/10_errors_as_prompts.ipynb explain, retry_with_suggestion
    step 11 labs/11_identity.ipynb         PRODUCTS, resolve_sku, handle_named

Then labs/12_capstone.ipynb measures what each layer buys; it asks for no new name.

Every name already exists so that the notebooks can import this file from the
start. The values are empty placeholders and every function raises
``NotImplementedError`` until you replace its body: the grader gives no points
for a placeholder. Keep the names and the parameters exactly as they are.
You may add helper functions of your own; start their names with ``_``.
"""
from __future__ import annotations

# You will need these along the way (json for step 5 or 8, operator and
# Annotated for step 6's reducers, LangGraph for steps 6 and 7).
import json  # noqa: F401
import operator  # noqa: F401
from pathlib import Path  # noqa: F401
from typing import Annotated, Any, TypedDict  # noqa: F401

from langgraph.graph import END, START, StateGraph  # noqa: F401

# ===========================================================================
# Step 1 (labs/01_contract_table.ipynb): data, two tools, the contract table
# ===========================================================================

# The five regions a warehouse can be in, as lowercase strings, in the order
# notebook 01 lists them.
REGIONS: list = []

# The region a wrong region is replaced by in step 7 (notebook 01 and 07 give it).
FALLBACK_REGION = ""

# The most rows a lookup may return (notebook 01 gives the number).
MAX_ROWS = 0

# Tool name -> how many times that tool's body has run. One entry per tool,
# each starting at 0.
CALLS: dict = {}

# The stock table: a list of rows {"sku", "region", "bin", "count"}.
# Notebook 01 has it as a ready-to-paste block: paste it here unchanged
# (19 rows, in that order).
STOCK: list = []


def stock_lookup(sku, region, limit):
    """Look up the bins holding ``sku`` in ``region``, returning at most ``limit`` rows.

    Step 1, labs/01_contract_table.ipynb.

    * The very first line adds 1 to ``CALLS["stock_lookup"]``, before anything
      else can go wrong, so a run that fails later is still counted.
    * Returns ``{"sku": sku, "region": region, "rows": [...]}`` where each row
      is ``{"bin": ..., "count": ...}``, taken from the matching ``STOCK`` rows
      in table order, and no more than ``limit`` of them.

    Example (once written)::

        >>> stock_lookup("SKU-1001", "north", 1)["rows"]
        [{'bin': 'N-01', 'count': 12}]
    """
    raise NotImplementedError("step 1: write stock_lookup (labs/01_contract_table.ipynb)")


def legacy_stock(sku, region, limit):
    """An older lookup with the same inputs and result shape that *ignores* ``limit``.

    Step 1, labs/01_contract_table.ipynb.

    * The first line adds 1 to ``CALLS["legacy_stock"]``.
    * Returns every matching row, however small ``limit`` is; this is the
      tool whose results step 4 learns to distrust.

    Example (once written)::

        >>> len(legacy_stock("SKU-3300", "north", 1)["rows"])
        7
    """
    raise NotImplementedError("step 1: write legacy_stock (labs/01_contract_table.ipynb)")


# The contract table: tool name -> {"fn": <the function>, "args": {...},
# "returns": {...}}, one entry per tool and exactly those three keys.
# Notebook 01 shows what "args" (type, required, allowed, min, max per
# argument) and "returns" (keys, rows: max_len and item) hold.
TOOLS: dict = {}


# ===========================================================================
# Step 2 (labs/02_validate_args.ipynb): check the arguments before the call
# ===========================================================================


def validate_args(name, args):
    """Judge a call from the contract table alone; never run a tool here.

    Step 2, labs/02_validate_args.ipynb.

    Returns ``""`` when ``args`` (a dict) is a valid call of tool ``name``,
    otherwise one reason string:

    * ``"unknown_tool"``  - ``name`` is not in ``TOOLS``
    * ``"missing:<arg>"`` - a required argument is absent
    * ``"extra:<arg>"``   - an argument the contract does not list
    * ``"type:<arg>"``    - the wrong type (``True``/``False`` never count as an int)
    * ``"allowed:<arg>"`` - a value outside the argument's ``allowed`` values
    * ``"range:<arg>"``   - below ``min`` or above ``max`` (both inclusive)

    Example (once written)::

        >>> validate_args("stock_lookup", {"sku": "SKU-1001", "region": "mars", "limit": 2})
        'allowed:region'
    """
    raise NotImplementedError("step 2: write validate_args (labs/02_validate_args.ipynb)")


# ===========================================================================
# Step 3 (labs/03_call_boundary.ipynb): the one door every call goes through
# (steps 4 and 5 come back to it)
# ===========================================================================


def call_tool(name, args):
    """Make one tool call and hand back the outcome as a value, never as an exception.

    Step 3, labs/03_call_boundary.ipynb (extended in steps 4 and 5).

    Always returns ``{"ok": bool, "value": <result or None>, "error": str}``:

    * arguments refused by ``validate_args``: ``ok=False``, ``value=None``,
      ``error="args:" + reason`` - and the tool body does not run;
    * the tool, taken from ``TOOLS[name]["fn"]`` and called as ``fn(**args)``,
      raises: ``error="raised:" + the exception's class name`` (e.g. ``raised:KeyError``);
    * step 4: a result refused by ``validate_result``: ``error="result:" + reason``;
    * success: ``ok=True``, ``value=<the result>``, ``error=""``.

    Step 5 adds the cache: look ``cache_key(name, args)`` up in ``CACHE``
    right before calling, and store only successful results.

    Example (once written)::

        >>> call_tool("nope", {})
        {'ok': False, 'value': None, 'error': 'args:unknown_tool'}
    """
    raise NotImplementedError("step 3: write call_tool (labs/03_call_boundary.ipynb)")


# ===========================================================================
# Step 4 (labs/04_validate_result.ipynb): do not trust what came back
# ===========================================================================


def validate_result(name, value):
    """Judge a tool's result from the contract's ``returns`` alone.

    Step 4, labs/04_validate_result.ipynb.

    Returns ``""`` when the result can be trusted, otherwise one reason:

    * ``"shape"``   - not a dict, a key missing or of the wrong type, or a row
      that is not a dict with the row fields of the right types
    * ``"empty"``   - ``rows`` is an empty list
    * ``"too_big"`` - more rows than ``max_len``
    * ``"range"``   - a row field below its ``min`` (a count of 0 is fine)

    Example (once written)::

        >>> validate_result("stock_lookup", {"sku": "SKU-1", "region": "north", "rows": []})
        'empty'
    """
    raise NotImplementedError("step 4: write validate_result (labs/04_validate_result.ipynb)")


# ===========================================================================
# Step 5 (labs/05_cache.ipynb): remember successes
# ===========================================================================

# cache_key(...) -> a successful result. Nothing empties it by itself.
CACHE: dict = {}


def cache_key(name, args):
    """Turn a tool name and its arguments into one string for ``CACHE``.

    Step 5, labs/05_cache.ipynb.

    The same name with the same arguments gives the same string whatever the
    order of the keys in ``args``; a different name or different arguments
    give a different string.

    Example (once written)::

        >>> cache_key("stock_lookup", {"a": 1, "b": 2}) == cache_key("stock_lookup", {"b": 2, "a": 1})
        True
    """
    raise NotImplementedError("step 5: write cache_key (labs/05_cache.ipynb)")


# ===========================================================================
# Step 6 (labs/06_failure_path.ipynb): failure is a path in the graph
# ===========================================================================


class State(TypedDict, total=False):
    """The graph's state. Step 6, labs/06_failure_path.ipynb.

    Add the fields your nodes read and write. ``errors`` and ``calls`` are
    lists that nodes append to, so they need an appending reducer
    (``Annotated[list, operator.add]``); ``attempts`` needs an adding one
    (``Annotated[int, operator.add]``). Step 7 adds ``fixes`` (a list, appended).
    """


def pick(state):
    """Node: turn ``state``'s order into a tool name and its arguments.

    Step 6. The order is a dict with ``sku``, ``region``, ``limit`` and
    optionally ``tool`` (default ``"stock_lookup"``). Pass the values through
    unchanged: this is where a real agent would ask a model to choose.
    Return a partial state update (a dict); do not change ``state``.
    """
    raise NotImplementedError("step 6: write pick (labs/06_failure_path.ipynb)")


def fetch(state):
    """Node: make exactly one ``call_tool`` with the picked tool and arguments.

    Step 6. Record the call in ``calls`` (at least ``tool`` and ``args``) and
    count one attempt; on failure append the error string to ``errors``.
    It never raises: a failure is a value the next edge reads.
    """
    raise NotImplementedError("step 6: write fetch (labs/06_failure_path.ipynb)")


def reply(state):
    """Node: write the answer from the first row.

    Step 6. The answer sentence contains the sku, the region, the bin and the count.
    """
    raise NotImplementedError("step 6: write reply (labs/06_failure_path.ipynb)")


def giveup(state):
    """Node: answer honestly that there is no answer.

    Step 6. The answer contains the last reason in ``errors`` (for example
    ``result:empty``) instead of inventing stock.
    """
    raise NotImplementedError("step 6: write giveup (labs/06_failure_path.ipynb)")


def build_naive():
    """Build and compile the graph pick -> fetch -> reply or giveup (no repair yet).

    Step 6, labs/06_failure_path.ipynb. Use ``langgraph.graph.StateGraph(State)``
    with nodes named ``pick``, ``fetch``, ``reply`` and ``giveup``.
    """
    raise NotImplementedError("step 6: write build_naive (labs/06_failure_path.ipynb)")


def run_naive(order):
    """Run one order through ``build_naive()``'s graph.

    Step 6. Returns ``{"ok", "answer", "rows", "errors", "calls"}``.

    Example (once written)::

        >>> run_naive({"sku": "SKU-9999", "region": "north", "limit": 2})["ok"]
        False
    """
    raise NotImplementedError("step 6: write run_naive (labs/06_failure_path.ipynb)")


# ===========================================================================
# Step 7 (labs/07_repair_loop.ipynb): read the reason, fix, try again
# ===========================================================================

# How many fetches one order may make (notebook 07 gives the number). Read
# it while the graph runs, so that changing it changes the limit.
MAX_ATTEMPTS = None

# Reason string (e.g. "args:allowed:region") -> how to fix the next attempt.
# Notebook 07 lists the three reasons that must be repairable.
REPAIRS: dict = {}


def can_repair(reason):
    """Say whether a failure reason has a fix in ``REPAIRS``.

    Step 7, labs/07_repair_loop.ipynb. ``result:empty`` and every
    ``raised:...`` are not repairable: asking again gives the same.

    Example (once written)::

        >>> can_repair("args:range:limit"), can_repair("result:empty")
        (True, False)
    """
    raise NotImplementedError("step 7: write can_repair (labs/07_repair_loop.ipynb)")


def repair(state):
    """Node: read the last reason in ``errors``, fix the tool or arguments, note it in ``fixes``.

    Step 7. Wrong region -> ``FALLBACK_REGION``; limit out of range -> clamp
    into ``1..MAX_ROWS``; ``result:too_big`` -> use ``stock_lookup``.
    """
    raise NotImplementedError("step 7: write repair (labs/07_repair_loop.ipynb)")


def build_graph():
    """Build and compile pick -> fetch -> reply, or repair -> fetch again, or giveup.

    Step 7. After a failed fetch, repair only if ``can_repair`` says so and
    fewer than ``MAX_ATTEMPTS`` fetches were made; otherwise give up.
    """
    raise NotImplementedError("step 7: write build_graph (labs/07_repair_loop.ipynb)")


def handle(order):
    """Run one order through ``build_graph()``'s graph.

    Step 7. Returns ``{"ok", "answer", "rows", "errors", "calls", "fixes",
    "attempts", "tool_runs"}``; ``tool_runs`` is how much the sum of
    ``CALLS`` grew during this run.

    Example (once written)::

        >>> handle({"sku": "SKU-1001", "region": "mars", "limit": 2})["attempts"]
        2
    """
    raise NotImplementedError("step 7: write handle (labs/07_repair_loop.ipynb)")


# ===========================================================================
# Step 8 (labs/08_report.ipynb): record what you measured
# ===========================================================================


def write_report(folder=None):
    """Measure this module now and write ``tool_report.json`` and ``tool_report.md``.

    Step 8, labs/08_report.ipynb. ``folder`` defaults to the folder holding
    this file. Every number comes from running your own functions at that
    moment, never typed in by hand. Returns the dict written as JSON, with
    ``tools``, ``blocked_before_call``, ``bad_result_reasons``,
    ``memo_second_call_runs``, ``repaired``, ``attempts`` and ``gave_up``;
    the Markdown file has the four ``##`` sections the notebook lists and
    states the attempt limit as a number.
    """
    raise NotImplementedError("step 8: write write_report (labs/08_report.ipynb)")


# ===========================================================================
# Part two: steps 9-11 (labs/09 to labs/11). They add names and change nothing
# that steps 1-8 define.
# ===========================================================================

# ---- Step 9: a strict coercion allowlist (labs/09_coercion.ipynb) ----

# Step 9: a table naming the three allowed rules ("strip", "lower", "int_from_str");
# its shape is your choice (a tuple of the names, a dict from rule name to a function...).
COERCIONS: tuple = ()


def coerce(name, raw_args):
    """Return ``(args, coercions)``: a new dict with the allowed rules applied, and a ledger.

    Step 9, labs/09_coercion.ipynb. Apply only the three rules of ``COERCIONS``,
    reading the contract ``TOOLS[name]["args"]``: ``strip`` (a str value of a
    ``str`` argument loses its leading/trailing ASCII whitespace), ``lower``
    (a str value of an argument with ``allowed`` is lower-cased when only its
    lower-case form, after strip, is allowed) and ``int_from_str`` (a str value
    of an ``int`` argument that is one or more ASCII digits 0-9 after strip
    becomes ``int(value)``). Never coerce bool, floats, signs, separators or
    units, non-ASCII digits, the empty string, arguments the contract does not
    list or the arguments of an unknown tool. Keep the same keys, never change
    ``raw_args``, and add one ledger entry ``{"arg", "from", "to", "rule"}`` per
    changed argument, naming every rule applied. Never run a tool body.

    Example (once written)::

        >>> coerce("stock_lookup", {"sku": "SKU-1001", "region": " North ", "limit": "2"})[0]
        {'sku': 'SKU-1001', 'region': 'north', 'limit': 2}
    """
    raise NotImplementedError("step 9: write coerce (labs/09_coercion.ipynb)")


def call_coerced(name, raw_args):
    """``coerce`` the arguments, then ``call_tool`` on the coerced ones; add ``"coercions"``.

    Step 9, labs/09_coercion.ipynb. Returns ``call_tool``'s dict plus the key
    ``"coercions"`` (the ledger). A call still invalid after coercion is refused
    by ``call_tool`` as usual (``args:...``, no tool body run).

    Example (once written)::

        >>> call_coerced("stock_lookup", {"sku": "SKU-1001", "region": "north", "limit": "３"})["error"]
        'args:type:limit'
    """
    raise NotImplementedError("step 9: write call_coerced (labs/09_coercion.ipynb)")


# ---- Step 10: errors as prompts (labs/10_errors_as_prompts.ipynb) ----


def explain(name, args):
    """Explain why ``validate_args`` refuses a call, and suggest a fix only when exactly one honest fix exists.

    Step 10, labs/10_errors_as_prompts.ipynb. Returns ``{"error", "arg",
    "value", "message", "suggestion"}``: ``error`` is ``validate_args``'
    reason, ``arg`` the argument it names (``None`` for ``unknown_tool``),
    ``value`` that argument's value (``None`` when absent); ``message`` names
    the argument, shows the value with ``repr`` and, for ``allowed``/``range``,
    says what the contract accepts. ``suggestion`` is a full corrected copy of
    ``args`` or ``None``: a region after strip and lower-case, or the one
    allowed value at edit distance 1 (none if two are); a limit of ASCII
    digits as an int; ``args`` without an extra argument; never for
    ``range``, ``missing`` or ``unknown_tool``; and only when the suggestion
    itself passes ``validate_args``. Valid arguments give
    ``{"error": "", "arg": None, "value": None, "message": "", "suggestion": None}``.
    Never runs a tool body.

    Example (once written)::

        >>> explain("stock_lookup", {"sku": "SKU-1001", "region": "nrth", "limit": 2})["suggestion"]
        {'sku': 'SKU-1001', 'region': 'north', 'limit': 2}
    """
    raise NotImplementedError("step 10: write explain (labs/10_errors_as_prompts.ipynb)")


def retry_with_suggestion(name, args):
    """Call ``call_tool``; if it refuses the arguments and ``explain`` has a suggestion, call once more with it.

    Step 10, labs/10_errors_as_prompts.ipynb. Returns the last ``call_tool``
    dict plus ``"suggested"`` (whether the second call was made) and
    ``"explanation"`` (``explain``'s dict for the first call, ``None`` when
    the first call's arguments were valid). At most one tool body run in total.

    Example (once written)::

        >>> retry_with_suggestion("stock_lookup", {"sku": "SKU-1001", "region": " North ", "limit": 1})["suggested"]
        True
    """
    raise NotImplementedError("step 10: write retry_with_suggestion (labs/10_errors_as_prompts.ipynb)")


# ---- Step 11: identity resolution (labs/11_identity.ipynb) ----

# Step 11: sku -> product name, one entry per sku of STOCK, exactly as notebook 11
# lists them. resolve_sku reads it when called (the grader swaps in tables of its own).
PRODUCTS: dict = {}


def resolve_sku(query):
    """Turn a product name (or a sku) into one sku, or say why it cannot; never guess.

    Step 11, labs/11_identity.ipynb. Read ``PRODUCTS`` when called and compare
    ``q = query.strip()`` case-insensitively (``str.casefold``). Return
    ``{"kind": "resolved", "sku": sku}`` when ``q`` equals a key, or exactly one
    name contains ``q``, or several do but exactly one name equals ``q``;
    ``{"kind": "not_found", "query": query}`` when no name contains ``q`` (a
    blank query always); else ``{"kind": "ambiguous", "query": query,
    "candidates": [...]}`` with every match sorted by sku, each ``{"sku": sku,
    "label": str}`` whose label holds the name and the sku. Never runs a tool.

    Example (once written)::

        >>> resolve_sku("  copper wire 4 MM ")
        {'kind': 'resolved', 'sku': 'SKU-4411'}
    """
    raise NotImplementedError("step 11: write resolve_sku (labs/11_identity.ipynb)")


def handle_named(order):
    """Run an order that names its ``product`` instead of its ``sku``: resolve first.

    Step 11, labs/11_identity.ipynb. Not resolved: return ``{"ok": False,
    "kind": kind, "candidates": <list, empty unless ambiguous>, "answer": str,
    "tool_runs": 0}`` without calling any tool; the answer asks back, naming
    the query and every candidate's label. Resolved: ``handle()``'s result for
    the order with ``sku`` set and ``product`` left out, plus ``"kind":
    "resolved"``. Never change the caller's order.

    Example (once written)::

        >>> handle_named({"product": "bolt", "region": "north", "limit": 2})["kind"]
        'ambiguous'
    """
    raise NotImplementedError("step 11: write handle_named (labs/11_identity.ipynb)")
