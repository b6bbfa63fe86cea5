"""The hostile corpus: every case, what it does, and what grading it must give.

A case is a submission that tries to fool, crash, stall or outlive the grader.
Each entry says how to build it (``base`` + ``payload.py`` from
``cases/<name>/``, see ``build.py``), the per-step outcome the grader must
give it, how many step timeouts it may cost (which sets its wall-time bound)
and any extra proof to collect after the run (``checks``).

Outcomes per step: ``full`` (every point), ``zero`` (no point), ``lost``
(fewer than every point: the case's damage reached this step), ``any`` (the
step is not what the case is about), ``mostly_fail`` (at most a third of the
step's points). ``refused`` cases are not graded at all: the CLI exits 2.

Example::

    >>> CASES_BY_NAME["os_exit_in_function"].expect.outcome(4)
    'lost'
"""

from __future__ import annotations

from dataclasses import dataclass

STEPS = tuple(range(1, 12))
# LAB_SPEC part two. A case whose damage spreads past its own step (``any`` on the later steps) may
# reach these too; every other case leaves them at full marks (their checks use grader doubles).
PART_TWO = (9, 10, 11)

# Per-step wall-clock limit the corpus is graded with (the default is 10 s;
# a shorter one keeps the corpus fast and changes nothing else).
STEP_TIMEOUT = 4.0
# Wall time of a case that costs no timeout (includes a warm-process restart
# on a loaded 2-core machine), and the extra allowed per timeout it may cost.
FAST_SECONDS = 12.0
PER_TIMEOUT_SECONDS = STEP_TIMEOUT + 4.0


@dataclass(frozen=True)
class Expect:
    """The per-step outcome: ``others`` for every step not listed in a named group."""

    others: str = "full"
    lost: tuple[int, ...] = ()
    zero: tuple[int, ...] = ()
    any: tuple[int, ...] = ()
    refused: bool = False  # not gradable: grade() raises SubmissionNotFound, the CLI exits 2

    def outcome(self, step: int) -> str:
        for name in ("lost", "zero", "any"):
            if step in getattr(self, name):
                return name
        return self.others

    def describe(self) -> str:
        if self.refused:
            return "refused (exit 2)"
        parts = [
            f"step {', '.join(map(str, getattr(self, n)))} {n}" for n in ("lost", "zero", "any") if getattr(self, n)
        ]
        return "; ".join(parts + [f"{'others' if parts else 'all steps'} {self.others}"])


ALL_ZERO = Expect(others="zero")
ALL_FULL = Expect(others="full")


@dataclass(frozen=True)
class Case:
    """One hostile submission and its expected grading (see the module docstring).

    ``base``: ``solution`` (solutions/tools.py), ``stub`` (bases/stub.py),
    ``file`` (cases/<name>/tools.py as it is) or ``generated`` (built by a
    function in build.py). ``at``: where ``payload.py`` goes -- ``import``
    (appended to the module) or a function name (first lines of its body).
    ``outside_only``: the payload fires only when the grader calls that
    function directly, not when the module calls it itself. ``replace``:
    exact (old, new) text edits of the base, each must match once.
    ``include``: helper snippets from snippets/. ``via``: ``api`` (grade())
    or ``cli`` (``python -m grader check``).
    """

    name: str
    threat: str
    base: str
    expect: Expect
    at: str = ""
    outside_only: bool = False
    replace: tuple[tuple[str, str], ...] = ()
    include: tuple[str, ...] = ()
    timeouts: int = 0
    checks: tuple[str, ...] = ()
    via: str = "api"
    payload: str = ""  # take payload.py from cases/<payload>/ instead of cases/<name>/
    # What the grader needs for the case's expectation to hold: "cgroups" (a
    # group per step, grader.engine.cgroups) or "confined_fs" (the step's own
    # read-only mount namespace, or a sandbox). Elsewhere the case is not
    # graded and its test says why (the fallback has tests of its own).
    needs: str = ""

    @property
    def folder_name(self) -> str:
        return self.payload or self.name

    @property
    def bound_seconds(self) -> float:
        return FAST_SECONDS + self.timeouts * PER_TIMEOUT_SECONDS


# Text edits that hand the public name to the payload while the module keeps
# using its real implementation internally (so only one step is at stake).
_KEEP_REAL_VALIDATE_ARGS = (
    ("def validate_args(name: str, args: dict) -> str:", "def _real_validate_args(name: str, args: dict) -> str:"),
    (
        "    reason = validate_args(name, args)\n    if reason:\n",
        "    reason = _real_validate_args(name, args)\n    if reason:\n",
    ),
)
_KEEP_REAL_VALIDATE_RESULT = (
    ("def validate_result(name: str, value: Any) -> str:", "def _real_validate_result(name: str, value: Any) -> str:"),
    ("    reason = validate_result(name, value)\n", "    reason = _real_validate_result(name, value)\n"),
)

# call_tool runs the tool in TOOLS before it validates (the mistake step 3 is about).
_RUN_BEFORE_VALIDATING = (
    (
        "    reason = validate_args(name, args)\n    if reason:\n",
        '    try:\n        TOOLS[name]["fn"](**args)\n    except Exception:\n        pass\n'
        "    reason = validate_args(name, args)\n    if reason:\n",
    ),
)
# The tool functions as they are at import, saved where no spy of the grader reaches.
_SAVE_TOOL_FUNCTIONS = (
    (
        "def call_tool(name: str, args: dict) -> dict:\n",
        '_SAVED_FNS = {n: e["fn"] for n, e in TOOLS.items()}\n\n\ndef call_tool(name: str, args: dict) -> dict:\n',
    ),
)
# Their code objects, saved at import.
_SAVE_TOOL_CODES = (
    (
        "def call_tool(name: str, args: dict) -> dict:\n",
        '_SAVED_CODES = {n: e["fn"].__code__ for n, e in TOOLS.items()}\n\n\n'
        "def call_tool(name: str, args: dict) -> dict:\n",
    ),
)


def _tools_made_by(code: str) -> tuple[tuple[str, str], ...]:
    """An edit that rebinds both tool names with ``code`` just before ``TOOLS`` is built from them."""
    return (("TOOLS = {\n", code.strip("\n") + "\n\n\nTOOLS = {\n"),)


# The tools in shapes that spies alone miss, each still the solution's tool.
_CLOSURE_TOOLS = _tools_made_by("""
def _make_tools():
    match = _matching_rows  # a free variable: both tools are closures

    def stock_lookup(sku: str, region: str, limit: int) -> dict:
        CALLS["stock_lookup"] += 1
        return {"sku": sku, "region": region, "rows": match(sku, region)[:limit]}

    def legacy_stock(sku: str, region: str, limit: int) -> dict:
        CALLS["legacy_stock"] += 1
        return {"sku": sku, "region": region, "rows": match(sku, region)}

    return stock_lookup, legacy_stock


stock_lookup, legacy_stock = _make_tools()
""")
_METHOD_TOOLS = _tools_made_by("""
class _Stock:
    def lookup(self, sku: str, region: str, limit: int) -> dict:
        CALLS["stock_lookup"] += 1
        return {"sku": sku, "region": region, "rows": _matching_rows(sku, region)[:limit]}

    def legacy(self, sku: str, region: str, limit: int) -> dict:
        CALLS["legacy_stock"] += 1
        return {"sku": sku, "region": region, "rows": _matching_rows(sku, region)}


stock_lookup, legacy_stock = _Stock().lookup, _Stock().legacy
""")
_WRAPPED_TOOLS = _tools_made_by("""
import functools as _functools


def _logged(fn):
    @_functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    return wrapper


stock_lookup, legacy_stock = _logged(stock_lookup), _logged(legacy_stock)
""")
_CALLABLE_OBJECT_TOOLS = _tools_made_by("""
class _Tool:
    def __init__(self, name: str, limited: bool) -> None:
        self.name, self.limited = name, limited

    def __call__(self, sku: str, region: str, limit: int) -> dict:
        CALLS[self.name] += 1
        rows = _matching_rows(sku, region)
        return {"sku": sku, "region": region, "rows": rows[:limit] if self.limited else rows}


stock_lookup, legacy_stock = _Tool("stock_lookup", True), _Tool("legacy_stock", False)
""")
_PARTIAL_OF_COPY_TOOLS = _tools_made_by("""
import functools as _functools
import types as _types


def _copy(fn):
    return _types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


stock_lookup, legacy_stock = _functools.partial(_copy(stock_lookup)), _functools.partial(_copy(legacy_stock))
""")

# The solution's two tools as source text, compiled at run time.
_TOOL_SOURCE = """
_TOOL_SOURCE = '''
def stock_lookup(sku: str, region: str, limit: int) -> dict:
    CALLS["stock_lookup"] += 1
    return {"sku": sku, "region": region, "rows": _matching_rows(sku, region)[:limit]}


def legacy_stock(sku: str, region: str, limit: int) -> dict:
    CALLS["legacy_stock"] += 1
    return {"sku": sku, "region": region, "rows": _matching_rows(sku, region)}
'''
"""
_EXEC_COMPILED_TOOLS = _tools_made_by(
    _TOOL_SOURCE
    + """
exec(compile(_TOOL_SOURCE, "<tools>", "exec"), globals())
"""
)
_ORIGINAL_COMPILE_TOOLS = _tools_made_by(
    _TOOL_SOURCE
    + """
import gc as _gc

# The built-in compile, wherever a module of the grader or of the standard library keeps it, found
# through gc: a dict holding the real built-in function, not the step child's instrumenting one.
_original_compile = next((v for d in _gc.get_objects() if type(d) is dict for v in list(d.values())
                          if type(v) is type(len) and getattr(v, "__name__", "") == "compile"), None)
assert _original_compile is not None and _original_compile is not compile, "no built-in compile kept anywhere"
exec(_original_compile(_TOOL_SOURCE, "<tools>", "exec"), globals())
"""
)
_EVAL_LAMBDA_TOOLS = _tools_made_by("""
stock_lookup = eval('lambda sku, region, limit: (CALLS.__setitem__("stock_lookup", CALLS["stock_lookup"] + 1), '
                    '{"sku": sku, "region": region, "rows": _matching_rows(sku, region)[:limit]})[1]')
legacy_stock = eval('lambda sku, region, limit: (CALLS.__setitem__("legacy_stock", CALLS["legacy_stock"] + 1), '
                    '{"sku": sku, "region": region, "rows": _matching_rows(sku, region)})[1]')
""")

# write_report's two writes in the solution, and an edit that makes it write neither
# (it keeps what it measured in the payload's _FORGED instead).
_REPORT_JSON_WRITE = (
    '    (folder / "tool_report.json").write_text(\n'
    '        json.dumps(report, ensure_ascii=False, indent=2) + "\\n", encoding="utf-8"\n    )\n'
)
_REPORT_MD_WRITE = '    (folder / "tool_report.md").write_text(_markdown(report), encoding="utf-8")\n'
_REPORT_WRITES_NOTHING = (_REPORT_JSON_WRITE + _REPORT_MD_WRITE, "    _FORGED.clear()\n    _FORGED.update(report)\n")

CASES: list[Case] = [
    # --- controls: what the bases score on their own -------------------------
    Case("solution_control", "the reference solution, unchanged", "solution", ALL_FULL),
    Case("stub_control", "every name, placeholder values, bodies raise NotImplementedError", "stub", ALL_ZERO),
    # --- forged results ------------------------------------------------------
    Case(
        "print_fake_results",
        "prints fake PASS lines, scores and protocol messages on stdout/stderr",
        "stub",
        ALL_ZERO,
        at="import",
        checks=("output_has:HOSTILE-FAKE",),
    ),
    Case(
        "fd_forgery", "writes forged result messages and a half line to every fd 0..255", "stub", ALL_ZERO, at="import"
    ),
    Case(
        "oracle_reads_expectations",
        "returns the expected answers it finds in the grader's stack frames",
        "stub",
        ALL_ZERO,
        at="import",
    ),
    Case(
        "close_every_fd",
        "closes every file descriptor at import (the result pipe included)",
        "solution",
        ALL_ZERO,
        at="import",
    ),
    Case(
        "result_pipe_flood",
        "floods the result pipe with 160 MB of forged lines from write_report",
        "solution",
        Expect(lost=(8,)),
        at="write_report",
    ),
    Case(
        "patched_builtins",
        "patches isinstance/len/repr/str/print/__import__ and json to lie",
        "stub",
        ALL_ZERO,
        at="import",
    ),
    Case(
        "solution_patched_json",
        "correct, but breaks the shared json module and sys.modules['json']",
        "solution",
        ALL_FULL,
        at="import",
    ),
    Case(
        "report_reader_patched",
        "an empty tool_report.json, and json.loads patched to read it as full",
        "solution",
        Expect(lost=(8,)),
        at="import",
        replace=(
            (
                '        json.dumps(report, ensure_ascii=False, indent=2) + "\\n", encoding="utf-8"\n',
                '        "{}\\n", encoding="utf-8"\n',
            ),
            (
                "    report = _measure()\n",
                "    report = _measure()\n    _LAST_REPORT.clear()\n    _LAST_REPORT.update(report)\n",
            ),
        ),
    ),
    Case(
        "json_shadow",
        "correct, with json.py, typing.py, grader/, langgraph/... beside tools.py",
        "solution",
        ALL_FULL,
        checks=("nothing_shadowed",),
    ),
    # --- leaving the interpreter ---------------------------------------------
    Case(
        "exec_at_import",
        "exec()s another program that prints a fake success, at import",
        "solution",
        ALL_ZERO,
        at="import",
    ),
    Case("sys_exit_import", "sys.exit(0) at import", "solution", ALL_ZERO, at="import"),
    Case("os_exit_import", "os._exit(0) at import", "solution", ALL_ZERO, at="import"),
    Case("sys_exit_in_function", "sys.exit(0) inside write_report", "solution", Expect(lost=(8,)), at="write_report"),
    # Step 8 watches the module's own validate_result during write_report: the watch's frame is
    # the grader's, so the payload fires there too and step 8 may lose as well.
    Case(
        "os_exit_in_function",
        "os._exit(0) when the grader calls validate_result",
        "solution",
        Expect(lost=(4,), any=(8,)),
        at="validate_result",
        outside_only=True,
    ),
    Case(
        "keyboard_interrupt_in_function",
        "KeyboardInterrupt when the grader calls validate_args",
        "solution",
        Expect(lost=(2,)),
        at="validate_args",
        outside_only=True,
    ),
    Case(
        "base_exception_in_function",
        "a BaseException subclass from build_naive",
        "solution",
        Expect(lost=(6,)),
        at="build_naive",
    ),
    # --- text no UTF-8 writer accepts (one learner must not stop a whole batch) ---
    Case(
        "surrogate_in_exception",
        "a lone surrogate in an exception message, through the CLI's JSON",
        "solution",
        Expect(lost=(2,)),
        at="validate_args",
        outside_only=True,
        via="cli",
    ),
    Case(
        "surrogate_in_return",
        "a lone surrogate as a returned reason",
        "solution",
        Expect(lost=(2,)),
        at="validate_args",
        outside_only=True,
    ),
    Case(
        "surrogate_in_output",
        "invalid UTF-8 and an unencodable str on stdout/stderr at import",
        "solution",
        ALL_FULL,
        at="import",
        via="cli",
    ),
    Case(
        "surrogate_in_import_error",
        "a lone surrogate in the import error every check shows",
        "solution",
        ALL_ZERO,
        at="import",
        via="cli",
    ),
    # --- learner text that must not be live in an output -------------------
    # Graded like any case here; tests/test_batch_hostile.py renders each one's
    # report to every output (text, Markdown, HTML, summary, CSV) and checks it.
    Case(
        "markdown_in_exception",
        "an exception message with a javascript: link, an image beacon, an onerror image and backticks",
        "solution",
        Expect(lost=(2,)),
        at="validate_args",
        outside_only=True,
        via="cli",
    ),
    Case(
        "markdown_in_return",
        "a returned reason that is a javascript: link and an image beacon",
        "solution",
        Expect(lost=(2,)),
        at="validate_args",
        outside_only=True,
    ),
    Case(
        "markdown_in_output",
        "output at import that closes the report's fence and <details>, then live HTML",
        "solution",
        ALL_FULL,
        at="import",
        checks=("output_has:HOSTILE-MD",),
    ),
    Case(
        "html_in_import_error",
        "an import error that is HTML (sets the page title, runs a handler)",
        "solution",
        ALL_ZERO,
        at="import",
        via="cli",
        checks=("error_has:<title>pwned</title>",),
    ),
    Case(
        "terminal_escapes_in_exception",
        "an exception message that clears the screen and draws a green PASS",
        "solution",
        Expect(lost=(2,)),
        at="validate_args",
        outside_only=True,
        via="cli",
    ),
    Case(
        "terminal_escapes_in_output",
        "output with cursor moves, line erases, a bidi override and a C1 CSI",
        "solution",
        ALL_FULL,
        at="import",
        checks=("output_has:HOSTILE-ESC",),
    ),
    Case(
        "terminal_escapes_in_import_error",
        "an import error that erases its own line and prints a fake total",
        "solution",
        ALL_ZERO,
        at="import",
        checks=("error_has:\x1b[2K",),
    ),
    Case(
        "bidi_in_return",
        "a returned reason with a right-to-left override (FAIL read as PASS)",
        "solution",
        Expect(lost=(2,)),
        at="validate_args",
        outside_only=True,
    ),
    Case(
        "shell_in_exception",
        "an exception message with $(...), backquotes and ; touch",
        "solution",
        Expect(lost=(2,)),
        at="validate_args",
        outside_only=True,
        via="cli",
    ),
    Case(
        "formula_in_import_error",
        "an import error that is a spreadsheet formula (=HYPERLINK)",
        "solution",
        ALL_ZERO,
        at="import",
        checks=("error_has:=HYPERLINK",),
    ),
    Case(
        "formula_in_return",
        "a returned reason -1-1 (a formula in grades.csv and the summary)",
        "solution",
        Expect(lost=(2,)),
        at="validate_args",
        outside_only=True,
    ),
    Case(
        "formula_at_sign_in_exception",
        "an exception message that is an @ formula",
        "solution",
        Expect(lost=(2,)),
        at="validate_args",
        outside_only=True,
    ),
    # --- never finishing -----------------------------------------------------
    Case("busy_loop_import", "while True: pass at import", "solution", ALL_ZERO, at="import", timeouts=1),
    Case(
        "sleep_import",
        "time.sleep(10**6) at import",
        "solution",
        ALL_ZERO,
        at="import",
        timeouts=1,
        via="cli",
        checks=("error_has:time limit",),
    ),
    Case(
        "busy_loop_in_function",
        "while True: pass in run_naive",
        "solution",
        Expect(lost=(6,)),
        at="run_naive",
        timeouts=1,
    ),
    Case(
        "sleep_in_function",
        "time.sleep(10**6) when the grader calls can_repair",
        "solution",
        Expect(lost=(7,)),
        at="can_repair",
        outside_only=True,
        timeouts=1,
    ),
    Case(
        "self_stop",
        "SIGSTOP to itself when the grader calls cache_key",
        "solution",
        Expect(lost=(5,)),
        at="cache_key",
        outside_only=True,
        timeouts=1,
    ),
    Case(
        "sigterm_ignored",
        "ignores/blocks every catchable signal in write_report, then hangs",
        "solution",
        Expect(lost=(8,)),
        at="write_report",
        timeouts=1,
    ),
    # --- resource abuse ------------------------------------------------------
    Case(
        "memory_bomb_import", "fills memory at import (touched pages, up to 3 GiB)", "solution", ALL_ZERO, at="import"
    ),
    Case(
        "memory_bomb_in_function",
        "fills memory when the grader calls build_graph",
        "solution",
        Expect(lost=(7,)),
        at="build_graph",
        outside_only=True,
    ),
    # Steps 8 and 11 watch the module's own handle: the payload fires under the watch's frame too.
    Case(
        "recursion_bomb",
        "C-stack recursion (segfault) when the grader calls handle",
        "solution",
        Expect(lost=(7,), any=(8, 11)),
        at="handle",
        outside_only=True,
    ),
    Case(
        "fork_bomb",
        "a bounded fork tree (<= 62 processes) of marked sleepers from write_report",
        "solution",
        ALL_FULL,
        at="write_report",
        include=("spawn",),
    ),
    Case(
        "setsid_escape_import",
        "a setsid() double-forked grandchild ignoring SIGTERM, at import",
        "solution",
        ALL_FULL,
        at="import",
        include=("spawn",),
        checks=("ticker_quiet",),
    ),
    Case(
        "setsid_escape_timeout",
        "write_report leaves a setsid() grandchild, then hangs",
        "solution",
        Expect(lost=(8,)),
        at="write_report",
        include=("spawn",),
        timeouts=1,
        checks=("ticker_quiet",),
    ),
    Case(
        "forked_writer",
        "a forked copy keeps the pipes and writes junk results forever",
        "solution",
        ALL_FULL,
        at="import",
        checks=("ticker_quiet",),
    ),
    Case("reads_stdin", "reads standard input to the end at import", "solution", ALL_FULL, at="import"),
    Case("stray_thread", "a non-daemon thread that never ends (and prints)", "solution", ALL_FULL, at="import"),
    Case("atexit_hang", "exit handlers that hang or print forged results", "solution", ALL_FULL, at="import"),
    Case(
        "huge_output",
        "2 GiB to stdout and stderr from write_report",
        "solution",
        Expect(any=(8,)),
        at="write_report",
        include=("spawn",),
        timeouts=1,
        checks=("output_capped",),
    ),
    Case(
        "disk_fill",
        "a 1 GiB file written from write_report",
        "solution",
        ALL_FULL,
        at="write_report",
        include=("spawn",),
        checks=("fill_bounded",),
    ),
    Case(
        "kill_warm_parent",
        "SIGKILL to the grader's warm worker from write_report",
        "solution",
        Expect(any=(8,)),
        at="write_report",
        checks=("grader_still_works",),
    ),
    # --- limits of a step as a whole -----------------------------------------
    Case(
        "memory_tree_in_function",
        "build_graph: four setsid() children touch 600 MiB each and hold it",
        "solution",
        Expect(lost=(7,)),
        at="build_graph",
        outside_only=True,
        include=("spawn",),
        checks=("memory_bounded", "grader_still_works"),
        needs="cgroups",
    ),
    Case(
        "pids_bomb_setsid",
        "write_report: up to 600 forks, each setsid() and a marked sleeper",
        "solution",
        Expect(lost=(8,)),
        at="write_report",
        include=("spawn",),
        checks=("pids_bounded",),
        needs="cgroups",
    ),
    Case(
        "disk_spread_in_function",
        "cache_key: six 15 MiB files in /tmp, /var/tmp, /dev/shm, $HOME, cwd and above",
        "solution",
        Expect(lost=(5,)),
        at="cache_key",
        outside_only=True,
        include=("spawn",),
        checks=("no_disk_leftovers",),
        needs="confined_fs",
    ),
    Case(
        "priority_raise_import",
        "at import: nice -5, setpriority -10, loosen its cgroup's limits, leave it",
        "solution",
        ALL_FULL,
        at="import",
        checks=("output_has:HOSTILE-PRIO-HELD", "output_lacks:HOSTILE-RAISED"),
    ),
    Case(
        "cpu_storm_import",
        "at import: eight setsid() children spin for 60 s, then a 3 s sleep",
        "solution",
        Expect(others="any"),
        at="import",
        include=("spawn",),
        needs="cgroups",
    ),
    # --- values that only look right -----------------------------------------
    Case(
        "eq_always_true_str",
        "validate_args returns a str subclass equal to everything",
        "solution",
        Expect(lost=(2,)),
        at="import",
        replace=_KEEP_REAL_VALIDATE_ARGS,
    ),
    Case(
        "str_subclass_right_text",
        "validate_args returns the right text as a str subclass",
        "solution",
        Expect(lost=(2,)),
        at="import",
        replace=_KEEP_REAL_VALIDATE_ARGS,
    ),
    Case(
        "eq_always_true_object",
        "validate_result returns an object equal to everything",
        "solution",
        Expect(lost=(4,)),
        at="import",
        replace=_KEEP_REAL_VALIDATE_RESULT,
    ),
    Case(
        "spy_counter_reset",
        "call_tool runs the tool before validating, then winds back every counter",
        "solution",
        Expect(lost=(3,), any=(4, 5, 6, 7, 8, *PART_TWO)),
        at="call_tool",
    ),
    Case(
        "encoder_rewrites_counts",
        "runs the tool before validating; patches json.JSONEncoder to report 0 runs",
        "solution",
        Expect(lost=(3,), any=(4, 5, 6, 7, 8, *PART_TWO)),
        at="import",
        replace=(
            (
                "    reason = validate_args(name, args)\n    if reason:\n",
                '    try:\n        TOOLS[name]["fn"](**args)\n    except Exception:\n        pass\n'
                "    reason = validate_args(name, args)\n    if reason:\n",
            ),
        ),
    ),
    Case(
        "bypass_spy",
        "call_tool runs the module's tool function before validating, around TOOLS",
        "solution",
        Expect(lost=(3,), any=(4, 5, 6, 7, 8, *PART_TWO)),
        at="call_tool",
    ),
    Case(
        "bool_calls_counters", "CALLS counters start as False instead of 0", "solution", Expect(lost=(1,)), at="import"
    ),
    Case(
        "bool_tool_runs",
        "handle reports tool_runs 1 as True",
        "solution",
        Expect(lost=(7,)),
        replace=(
            (
                '    result["tool_runs"] = sum(CALLS.values()) - before\n',
                "    runs = sum(CALLS.values()) - before\n"
                '    result["tool_runs"] = bool(runs) if runs in (0, 1) else runs\n',
            ),
        ),
    ),
    Case(
        "bool_row_count",
        "the STOCK row with count 1 holds True",
        "solution",
        Expect(lost=(1,), any=(2, 3, 4, 5, 6, 7, 8, *PART_TWO)),
        replace=(('"bin": "N-13", "count": 1}', '"bin": "N-13", "count": True}'),),
    ),
    # Step 5 only "lost": its key is one constant str, which is a str and ignores the order (true of a
    # constant), and its door caches nothing, so no failure is cached: 5 of 13 points, honestly earned.
    Case(
        "hardcoded_examples",
        "answers the spec's worked examples from memory, computes nothing",
        "file",
        Expect(others="mostly_fail", any=(1,), lost=(5, 8)),
    ),
    # --- not a module --------------------------------------------------------
    Case(
        "syntax_error",
        "an unclosed parenthesis on line 9",
        "file",
        ALL_ZERO,
        via="cli",
        checks=("error_has:SyntaxError", "error_has:line 9"),
    ),
    Case(
        "non_utf8_source",
        "Latin-1 bytes and no coding declaration",
        "generated",
        ALL_ZERO,
        checks=("error_has:SyntaxError", "error_has:line 1"),
    ),
    Case("empty_file", "an empty tools.py", "file", ALL_ZERO),
    Case("notebook_as_tools", "a notebook's JSON saved as tools.py", "generated", ALL_ZERO),
    Case(
        "directory_without_module",
        "a folder holding no tools.py",
        "generated",
        Expect(refused=True),
        via="cli",
        checks=("message_has:tools.py",),
    ),
    Case(
        "symlink_outside",
        "tools.py is a symbolic link to a file outside the submission",
        "generated",
        Expect(refused=True),
        via="cli",
        checks=("message_has:symbolic link",),
    ),
    # --- secrets -------------------------------------------------------------
    Case(
        "env_secret",
        "looks for the grader's secrets in its environment and /proc",
        "solution",
        ALL_FULL,
        at="import",
        via="cli",
        checks=("no_secret",),
    ),
    # --- borrowed grades -------------------------------------------------------
    Case(
        "solution_imported",
        "no work: imports solutions.tools from the grader's path and takes its names",
        "stub",
        ALL_ZERO,
        at="import",
    ),
    Case(
        "grader_imported",
        "no work: imports the grader's own spec-faithful stand-ins (grader.engine.doubles) "
        "and hands them out as its functions",
        "stub",
        ALL_ZERO,
        at="import",
    ),
    # --- the import wall: every spelling of an import of the grader refused ------------
    Case(
        "grader_via_import_module",
        "no work: the grader's stand-ins through importlib.import_module (around the module's own __import__)",
        "stub",
        ALL_ZERO,
        at="import",
    ),
    Case(
        "grader_via_builtins_import",
        "no work: the grader's stand-ins through builtins.__import__ (the interpreter's own)",
        "stub",
        ALL_ZERO,
        at="import",
    ),
    Case(
        "grader_via_saved_import",
        "no work: the grader's stand-ins through a saved __import__ after dropping the finders put before the "
        "interpreter's",
        "stub",
        ALL_ZERO,
        at="import",
    ),
    Case(
        "grader_loaded_from_file",
        "no work: a fresh copy of the grader's stand-ins from their file (spec_from_file_location, exec_module)",
        "stub",
        ALL_ZERO,
        at="import",
    ),
    Case(
        "grader_via_sys_modules",
        "no work: the grader's stand-ins found in sys.modules or by a walk from the fork server's __main__",
        "stub",
        ALL_ZERO,
        at="import",
    ),
    Case(
        "standin_recognised",
        "call_tool validates first only when the grader's stand-in sits in "
        "validate_args (its code is from another file); on its own route the tool body runs first",
        "solution",
        Expect(lost=(3,), any=(4, 5, 6, 7, 8, *PART_TWO)),
        at="call_tool",
    ),
    Case(
        "solution_by_grader_path",
        "no work: finds the checkout through a grader module's __file__ and "
        "executes solutions/tools.py by path (only the sandbox hides it)",
        "stub",
        ALL_ZERO,
        at="import",
    ),
    Case(
        "solution_via_proc_cwd",
        "no work: looks for solutions/tools.py through /proc (cwd, exe, cmdline "
        "of itself and its parents; only the sandbox hides it)",
        "stub",
        ALL_ZERO,
        at="import",
    ),
    Case(
        "report_probe_patched",
        "write_report writes no file; the grader's report reader is replaced through sys.modules / a fresh import",
        "solution",
        Expect(lost=(8,)),
        at="import",
        replace=(
            (
                '    (folder / "tool_report.json").write_text(\n'
                '        json.dumps(report, ensure_ascii=False, indent=2) + "\\n", encoding="utf-8"\n    )\n'
                '    (folder / "tool_report.md").write_text(_markdown(report), encoding="utf-8")\n',
                "    _FORGED.clear()\n    _FORGED.update(report)\n",
            ),
        ),
    ),
    Case(
        "report_op_replaced_via_frames",
        "write_report writes no file; the grader's report operation, found "
        "through the importing frames, is replaced by one that claims full files",
        "solution",
        Expect(lost=(8,)),
        at="import",
        replace=(_REPORT_WRITES_NOTHING,),
    ),
    Case(
        "report_forged_by_profiler",
        "write_report writes no file; a profile hook adds forged files to the record the report operation returns",
        "solution",
        Expect(lost=(8,), any=(1, 2, 3, 4, 5, 6, 7, *PART_TWO)),
        at="import",
        replace=(_REPORT_WRITES_NOTHING,),
    ),
    Case(
        "report_json_is_fifo",
        "tool_report.json is a FIFO nobody writes (a blocking read would hang)",
        "solution",
        Expect(lost=(8,)),
        at="import",
        replace=((_REPORT_JSON_WRITE, "    _fifo_json(folder)\n"),),
    ),
    Case(
        "report_files_link_outside",
        "tool_report.json links to a right report outside the folder, tool_report.md to the grader's environment",
        "solution",
        Expect(lost=(8,)),
        at="import",
        via="cli",
        checks=("grader_still_works",),
        replace=(
            (
                _REPORT_JSON_WRITE + _REPORT_MD_WRITE,
                '    _linked_report(folder, json.dumps(report, ensure_ascii=False, indent=2) + "\\n")\n',
            ),
        ),
    ),
    Case(
        "probes_module_patched",
        "runs the tool before validating; replaces the grader's Tally.run and "
        "make_spy through sys.modules / a fresh import",
        "solution",
        Expect(lost=(3,), any=(4, 5, 6, 7, 8, *PART_TWO)),
        at="import",
        replace=_RUN_BEFORE_VALIDATING,
    ),
    Case(
        "saved_refs_rewind",
        "call_tool runs the tool through function objects saved at import, before validating, then winds CALLS back",
        "solution",
        Expect(lost=(3,), any=(4, 5, 6, 7, 8, *PART_TWO)),
        at="call_tool",
        replace=_SAVE_TOOL_FUNCTIONS,
    ),
    Case(
        "frame_tally_rewind",
        "runs the tool before validating, then winds back the grader's Tally found on the stack, and CALLS",
        "solution",
        Expect(lost=(3,), any=(4, 5, 6, 7, 8, *PART_TWO)),
        at="call_tool",
    ),
    # Routes around the spies that only the entry counters compiled into the code see.
    Case(
        "saved_code_rebuilt",
        "call_tool builds a fresh function from a tool's code object saved at import, "
        "runs it before validating, then winds CALLS back",
        "solution",
        Expect(lost=(3,), any=(4, 5, 6, 7, 8, *PART_TWO)),
        at="call_tool",
        replace=_SAVE_TOOL_CODES,
    ),
    Case(
        "entry_switched_off",
        "call_tool switches off the entry counter it finds in a tool's saved code object, "
        "runs the tool through it before validating, then winds CALLS back",
        "solution",
        Expect(lost=(3,), any=(4, 5, 6, 7, 8, *PART_TWO)),
        at="call_tool",
        replace=_SAVE_TOOL_CODES,
    ),
    Case(
        "closure_tool",
        "the tools are closures; call_tool runs one through a reference saved at import, "
        "before validating, then winds CALLS back",
        "solution",
        Expect(lost=(3,), any=(4, 5, 6, 7, 8, *PART_TWO)),
        at="call_tool",
        replace=_CLOSURE_TOOLS + _SAVE_TOOL_FUNCTIONS,
    ),
    Case(
        "bound_method_tool",
        "the tools are bound methods; call_tool runs one through a reference saved at "
        "import, before validating, then winds CALLS back",
        "solution",
        Expect(lost=(3,), any=(4, 5, 6, 7, 8, *PART_TWO)),
        at="call_tool",
        replace=_METHOD_TOOLS + _SAVE_TOOL_FUNCTIONS,
    ),
    Case(
        "wraps_original_called",
        "the tools are functools.wraps-decorated; call_tool runs the undecorated "
        "original (__wrapped__) before validating, then winds CALLS back",
        "solution",
        Expect(lost=(3,), any=(4, 5, 6, 7, 8, *PART_TWO)),
        at="call_tool",
        replace=_WRAPPED_TOOLS + _SAVE_TOOL_FUNCTIONS,
    ),
    Case(
        "callable_object_tool",
        "the tools are objects whose __call__ is the body; call_tool runs one through "
        "a reference saved at import, before validating, then winds CALLS back",
        "solution",
        Expect(lost=(3,), any=(4, 5, 6, 7, 8, *PART_TWO)),
        at="call_tool",
        replace=_CALLABLE_OBJECT_TOOLS + _SAVE_TOOL_FUNCTIONS,
    ),
    Case(
        "partial_of_copy",
        "the tools are functools.partial over types.FunctionType copies; call_tool runs one "
        "through a reference saved at import, before validating, then winds CALLS back",
        "solution",
        Expect(lost=(3,), any=(4, 5, 6, 7, 8, *PART_TWO)),
        at="call_tool",
        replace=_PARTIAL_OF_COPY_TOOLS + _SAVE_TOOL_FUNCTIONS,
    ),
    # Code made at run time is counted (compiled with entries) or refused (built by hand,
    # compiled around the grader's compile). Uncounted, each would get full marks.
    Case(
        "exec_compiled_tools",
        "the tools are defined through exec(compile(...)); call_tool runs one through its "
        "code saved at import, before validating, then winds CALLS back",
        "solution",
        Expect(lost=(3,), any=(4, 5, 6, 7, 8, *PART_TWO)),
        at="call_tool",
        replace=_EXEC_COMPILED_TOOLS + _SAVE_TOOL_CODES,
    ),
    Case(
        "eval_lambda_tools",
        "the tools are lambdas made by eval() of a string; call_tool runs one through its "
        "code saved at import, before validating, then winds CALLS back",
        "solution",
        Expect(lost=(3,), any=(4, 5, 6, 7, 8, *PART_TWO)),
        at="call_tool",
        replace=_EVAL_LAMBDA_TOOLS + _SAVE_TOOL_CODES,
    ),
    Case(
        "code_counter_replaced",
        "call_tool copies a tool's code with code.replace, its entry counter swapped for "
        "a do-nothing object, runs the copy before validating, then winds CALLS back",
        "solution",
        Expect(lost=(3,), any=(4, 5, 6, 7, 8, *PART_TWO)),
        at="call_tool",
        replace=_SAVE_TOOL_CODES,
    ),
    Case(
        "codetype_rebuilt_tool",
        "call_tool rebuilds a tool's code with types.CodeType, its entry counter left "
        "out, runs it before validating, then winds CALLS back",
        "solution",
        Expect(lost=(3,), any=(4, 5, 6, 7, 8, *PART_TWO)),
        at="call_tool",
        replace=_SAVE_TOOL_CODES,
    ),
    Case(
        "compile_globals_table_emptied",
        "call_tool empties the table of watched counters found through compile.__globals__, runs the tool "
        "before validating through its saved code, refills the table and winds CALLS back",
        "solution",
        Expect(lost=(3,), any=(4, 5, 6, 7, 8, *PART_TWO)),
        at="call_tool",
        replace=_SAVE_TOOL_CODES,
    ),
    Case(
        "tool_code_watched_first",
        "at import, watches every tool's code itself (the counter's own Watch, through compile.__globals__) "
        "with a callback that does nothing, so the grader's watch cannot take them",
        "solution",
        Expect(lost=(3,), any=(1, 2, 4, 5, 6, 7, 8, *PART_TWO)),
        at="import",
    ),
    Case(
        "tracer_skips_counter",
        "call_tool runs a tool through its saved code before validating, under sys.settrace: at the tool's "
        "first line event the tracer sets frame.f_lineno past the statement that counts",
        "solution",
        Expect(lost=(3,), any=(4, 5, 6, 7, 8, *PART_TWO)),
        at="call_tool",
        replace=_SAVE_TOOL_CODES,
    ),
    Case(
        "original_compile_via_gc",
        "the tools are compiled with the original built-in compile found through gc; "
        "call_tool runs one through its code saved at import, before validating, then winds CALLS back",
        "solution",
        ALL_ZERO,
        at="call_tool",
        replace=_ORIGINAL_COMPILE_TOOLS + _SAVE_TOOL_CODES,
    ),
]

# --- slow compile ---------------------------------------------------------------
# The reference solution followed by 25,000 identical code objects on as many lines
# (under 512 KiB; 9 to 10 s of compile here). The step child compiles it under the
# step's limits: the import's time bound ends it, an import failure on every step.
# Before, the fork server compiled it outside every limit and then gave full marks.
SLOW_COMPILE = [
    Case(
        "compile_slow_lambdas",
        "25,000 lambdas in a list at import: 244 KiB that take seconds to compile",
        "generated",
        ALL_ZERO,
        timeouts=1,
    ),
    Case(
        "compile_slow_same_defs",
        "25,000 definitions of one function, each on its own line",
        "generated",
        ALL_ZERO,
        timeouts=1,
    ),
    Case("compile_slow_methods", "a class with 25,000 identical methods", "generated", ALL_ZERO, timeouts=1),
    Case(
        "compile_slow_generators", "25,000 generator expressions in a list at import", "generated", ALL_ZERO, timeouts=1
    ),
]
CASES += SLOW_COMPILE

# --- least privilege -----------------------------------------------------------
# Graded inside bubblewrap only (SANDBOX_ONLY): an allow-listed file system, a
# /tmp nobody but the grader writes, learner code as the grading account.
# tests/hostile/planted.py plants the class's data they look for (as root);
# tests/test_least_privilege.py grades them with each fix turned off.
_NO_LEAK, _NO_WRITE = ("output_lacks:HOSTILE-LEAK",), ("output_lacks:HOSTILE-WROTE",)
LEAST_PRIVILEGE = [
    Case(
        "solution_from_classmate_home",
        "no work: executes a classmate's /home/*/agtool/tools.py",
        "stub",
        ALL_ZERO,
        at="import",
    ),
    Case(
        "solution_found_by_walking",
        "no work: walks the file system for any solutions/tools.py and executes it",
        "stub",
        ALL_ZERO,
        at="import",
        include=("walk",),
    ),
    Case(
        "reads_service_database",
        "prints the tables of every SQLite database it can find",
        "solution",
        ALL_FULL,
        at="import",
        include=("walk",),
        checks=_NO_LEAK,
    ),
    Case(
        "reads_batch_outputs",
        "prints a batch's results, feedback and classmates' modules it can find",
        "solution",
        ALL_FULL,
        at="import",
        include=("walk",),
        checks=_NO_LEAK,
    ),
    Case(
        "lists_root",
        "reads /root's files, /etc/shadow and the accounts",
        "solution",
        ALL_FULL,
        at="import",
        checks=_NO_LEAK,
    ),
    Case(
        "tmp_mark_seen_later",
        "leaves marks in /tmp, /var/tmp, /dev/shm and beside its scratch folder; a later step finds them",
        "solution",
        ALL_FULL,
        at="import",
        checks=("output_lacks:HOSTILE-SEEN",),
    ),
    Case(
        "tmp_fill_next_learner",
        "fills /tmp, /var/tmp, /dev/shm and the scratch folders' parent; the next "
        "learner on the worker must still be graded right",
        "stub",
        Expect(others="any"),
        at="import",
        checks=("next_learner_graded",),
    ),
    Case(
        "runs_as_root",
        "says whether learner code runs as root",
        "solution",
        ALL_FULL,
        at="import",
        checks=("output_lacks:HOSTILE-ROOT",),
    ),
    Case(
        "signals_grader",
        "may it signal the processes of another account (the fork server, bubblewrap)?",
        "solution",
        ALL_FULL,
        at="import",
        checks=("output_lacks:HOSTILE-SIGNAL",),
    ),
    Case(
        "writes_beside_scratch",
        "writes beside its scratch folder (the other steps' folders) and into /tmp",
        "solution",
        ALL_FULL,
        at="import",
        checks=_NO_WRITE,
    ),
    Case(
        "writes_service_database",
        "inserts a 133/133 attempt into every SQLite database it can find",
        "solution",
        ALL_FULL,
        at="import",
        include=("walk",),
        checks=_NO_WRITE,
    ),
    Case(
        "grader_detection",
        "prints what could tell a graded run from the learner's Check (module name, path "
        "shape, environment, files, account)",
        "solution",
        ALL_FULL,
        at="import",
        checks=("output_has:HOSTILE-SEES",),
    ),
]
CASES += LEAST_PRIVILEGE

CASES_BY_NAME: dict[str, Case] = {c.name: c for c in CASES}
assert len(CASES_BY_NAME) == len(CASES), "case names must be unique"

# Honest submissions for the mixed batch: graded alone and among hostile ones,
# they must get the same grades. (old, new) edits of the solution, like the
# mistakes real learners make.
HONEST: dict[str, tuple[tuple[str, str], ...]] = {
    "honest_solution": (),
    "honest_accepts_bool": (("    if isinstance(value, bool) and expected is not bool:\n        return False\n", ""),),
    "honest_caches_failures": (
        (
            '        return _failure("raised:" + type(exc).__name__)\n',
            '        CACHE[key] = None\n        return _failure("raised:" + type(exc).__name__)\n',
        ),
    ),
}
# Hostile cases mixed into that batch (a sample of every kind of damage).
BATCH_HOSTILE = (
    "os_exit_in_function",
    "busy_loop_import",
    "fork_bomb",
    "memory_bomb_in_function",
    "kill_warm_parent",
    "fd_forgery",
    "setsid_escape_timeout",
    "surrogate_in_exception",
    "surrogate_in_return",
    "surrogate_in_import_error",
)

# Cases graded a second time with the child inside bubblewrap (own PID
# namespace, read-only file system, no network), where it is usable.
SANDBOX_CASES = (
    "solution_control",
    "fd_forgery",
    "close_every_fd",
    "os_exit_in_function",
    "busy_loop_import",
    "sigterm_ignored",
    "self_stop",
    "memory_bomb_import",
    "recursion_bomb",
    "fork_bomb",
    "setsid_escape_timeout",
    "stray_thread",
    "huge_output",
    "disk_fill",
    "kill_warm_parent",
    "json_shadow",
    "result_pipe_flood",
    "solution_imported",
    "solution_by_grader_path",
    "solution_via_proc_cwd",
    "report_probe_patched",
    "saved_refs_rewind",
    "frame_tally_rewind",
    "saved_code_rebuilt",
    "closure_tool",
    "memory_tree_in_function",
    "pids_bomb_setsid",
    "disk_spread_in_function",
    "priority_raise_import",
    "exec_compiled_tools",
    "code_counter_replaced",
    "original_compile_via_gc",
    "compile_slow_lambdas",
    "grader_via_import_module",
    "grader_loaded_from_file",
    "grader_via_sys_modules",
    "compile_globals_table_emptied",
    "tracer_skips_counter",
    *(c.name for c in LEAST_PRIVILEGE),
)
# Cases whose expected outcome holds only inside bubblewrap: without a
# sandbox, learner code can read every file its user can (SECURITY.md, "Not
# defended"), the reference solution of a checkout included. Graded only there.
SANDBOX_ONLY = ("solution_by_grader_path", "solution_via_proc_cwd", *(c.name for c in LEAST_PRIVILEGE))

# Cases of a layer with a switch (an internal setting of grader.settings), graded again with that
# layer off: there the attack must get through, or the case would not show that the layer is what
# stops it. Each maps to (the setting turned off, what the attack then shows): ``imports`` (the
# module imports: nothing refused it), or ``full:N`` (step N gets every point). The fork server's
# escape self-test (grader/engine/selftest.py) tries only the layers its settings promise, so a fork
# server with one switched off starts, and grades these cases without that layer.
LAYER_OFF: dict[str, tuple[str, str]] = {
    "grader_via_import_module": ("code_walls", "imports"),
    "grader_via_builtins_import": ("code_walls", "imports"),
    "grader_via_saved_import": ("code_walls", "imports"),
    "grader_loaded_from_file": ("code_walls", "imports"),
    "grader_via_sys_modules": ("code_walls", "imports"),
    "tracer_skips_counter": ("code_walls", "full:3"),
}

# Payloads that work wherever they are spliced: the fuzz test puts them into
# random functions of the solution (combinations the corpus never listed).
MUTANT_PAYLOADS = (
    "os_exit_in_function",
    "sys_exit_in_function",
    "keyboard_interrupt_in_function",
    "base_exception_in_function",
    "busy_loop_in_function",
    "sleep_in_function",
    "self_stop",
    "sigterm_ignored",
    "memory_bomb_in_function",
    "recursion_bomb",
    "fork_bomb",
    "setsid_escape_timeout",
    "huge_output",
    "disk_fill",
    "result_pipe_flood",
)
