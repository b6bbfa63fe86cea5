"""Entry counters compiled into the learner's code: every route into a tool's code is a run.

Each route test builds a module with ``compile_instrumented`` (as the fork
server and the step child do), spies on ``stock_lookup`` with the ``calls``
probe, and runs a function ``sneak`` that reaches the tool's body past every
spy the grader can swap. With plain ``compile`` (the counters off) those runs
count 0; the honest routes must keep counting exactly one run.
"""

from __future__ import annotations

import sys
import textwrap
import traceback
import types

import pytest

from grader.engine import instrument
from grader.engine.instrument import (
    NotInstrumented,
    _check_every_function_counts,
    compile_instrumented,
    entry_of,
    tool_codes,
)
from grader.engine.probes import Tally, run_probe

TOOL = '''
import functools
import types

CALLS = {"stock_lookup": 0}


def stock_lookup(sku, region, limit):
    """The tool."""
    CALLS["stock_lookup"] += 1
    return {"sku": sku, "region": region, "rows": []}


TOOLS = {"stock_lookup": {"fn": stock_lookup}}
'''

# Each route: extra module text that keeps a way to the tool past the spies,
# and the body of sneak() that takes it (then winds CALLS back, as the corpus cases do).
ROUTES = {
    "saved code object, fresh function": (
        "_CODE = stock_lookup.__code__",
        "types.FunctionType(_CODE, globals())('a', 'north', 1)",
    ),
    "code.replace copy": (
        "_CODE = stock_lookup.__code__.replace(co_name='other')",
        "types.FunctionType(_CODE, globals())('a', 'north', 1)",
    ),
    "FunctionType copy saved at import": (
        "_COPY = types.FunctionType(stock_lookup.__code__, globals(), 'copy')",
        "_COPY('a', 'north', 1)",
    ),
    "closure": (
        "def _make():\n    n = 1\n    def tool(sku, region, limit):\n        CALLS['stock_lookup'] += n\n"
        "        return {}\n    return tool\nstock_lookup = _make()\nTOOLS['stock_lookup']['fn'] = stock_lookup\n"
        "_SAVED = stock_lookup",
        "_SAVED('a', 'north', 1)",
    ),
    "functools.partial": (
        "stock_lookup = functools.partial(types.FunctionType(stock_lookup.__code__, globals()))\n"
        "TOOLS['stock_lookup']['fn'] = stock_lookup\n_SAVED = stock_lookup",
        "_SAVED('a', 'north', 1)",
    ),
    "bound method": (
        "class _S:\n    def run(self, sku, region, limit):\n        CALLS['stock_lookup'] += 1\n        return {}\n"
        "stock_lookup = _S().run\nTOOLS['stock_lookup']['fn'] = stock_lookup\n_SAVED = stock_lookup",
        "_SAVED('a', 'north', 1)",
    ),
    "callable object": (
        "class _T:\n    def __call__(self, sku, region, limit):\n        CALLS['stock_lookup'] += 1\n        return {}\n"
        "stock_lookup = _T()\nTOOLS['stock_lookup']['fn'] = stock_lookup\n_SAVED = stock_lookup",
        "_SAVED('a', 'north', 1)",
    ),
    "functools.wraps: the original": (
        "def _deco(fn):\n    @functools.wraps(fn)\n    def wrapper(*a, **k):\n        return fn(*a, **k)\n"
        "    return wrapper\nstock_lookup = _deco(stock_lookup)\nTOOLS['stock_lookup']['fn'] = stock_lookup\n"
        "_SAVED = stock_lookup",
        "_SAVED.__wrapped__('a', 'north', 1)",
    ),
    "functools.wraps: the wrapper": (
        "def _deco(fn):\n    @functools.wraps(fn)\n    def wrapper(*a, **k):\n        return fn(*a, **k)\n"
        "    return wrapper\nstock_lookup = _deco(stock_lookup)\nTOOLS['stock_lookup']['fn'] = stock_lookup\n"
        "_SAVED = stock_lookup",
        "_SAVED('a', 'north', 1)",
    ),
    "lambda": (
        "stock_lookup = lambda sku, region, limit: CALLS.__setitem__('stock_lookup', CALLS['stock_lookup'] + 1)\n"
        "TOOLS['stock_lookup']['fn'] = stock_lookup\n_CODE = stock_lookup.__code__",
        "types.FunctionType(_CODE, globals())('a', 'north', 1)",
    ),
    "class whose __new__ is the body": (
        "class stock_lookup:\n    def __new__(cls, sku, region, limit):\n        CALLS['stock_lookup'] += 1\n"
        "        return {}\nTOOLS['stock_lookup']['fn'] = stock_lookup\n_NEW = stock_lookup.__dict__['__new__']",
        "_NEW.__func__(None, 'a', 'north', 1)",
    ),
}


def _module(source: str, compiler=compile_instrumented) -> types.ModuleType:
    module = types.ModuleType("agtool_instrument_test")
    module.instrument = instrument
    exec(compiler(textwrap.dedent(source), "/scratch/agtool/tools.py"), module.__dict__)
    return module


def _runs(module, *operations) -> list[int]:
    params = {"spies": {"stock_lookup": {}}, "operations": list(operations)}
    out = run_probe(module, {"kind": "calls", "params": params}, None)
    return [record["spy_runs"]["stock_lookup"] for record in out["records"]]


def _sneaky_module(route: str) -> types.ModuleType:
    keep, run = ROUTES[route]
    return _module(
        TOOL
        + "\n"
        + keep
        + "\n\n\ndef sneak():\n    before = dict(CALLS)\n    "
        + run
        + "\n    CALLS.clear()\n    CALLS.update(before)\n"
    )


@pytest.mark.parametrize("route", ROUTES)
def test_a_run_through_any_route_counts_once(route):
    module = _sneaky_module(route)
    assert _runs(module, {"op": "call", "fn": "sneak"}) == [1]
    assert module.CALLS == {"stock_lookup": 0}  # what the spies alone would have believed


def test_honest_calls_through_tools_a_saved_reference_or_recursion_count_once_each():
    module = _module(
        TOOL
        + """
def _deco(fn):
    @functools.wraps(fn)
    def wrapper(*a, **k):
        return fn(*a, **k)
    return wrapper


stock_lookup = _deco(stock_lookup)
TOOLS["stock_lookup"]["fn"] = stock_lookup
_SAVED = stock_lookup


def via_tools():
    return TOOLS["stock_lookup"]["fn"]("a", "north", 1)


def via_saved():
    return _SAVED("a", "north", 1)


def via_module_name():
    return stock_lookup("a", "north", 1)
"""
    )
    runs = _runs(
        module,
        {"op": "call", "fn": "via_tools"},
        {"op": "call", "fn": "via_saved"},
        {"op": "call", "fn": "via_module_name"},
    )
    assert runs == [1, 2, 3]


def test_a_wrapper_past_the_spies_that_calls_the_spied_module_function_is_one_run():
    module = _module(
        TOOL
        + """
def _make():
    name = "stock_lookup"
    return lambda sku, region, limit: globals()[name](sku, region, limit)


TOOLS["stock_lookup"]["fn"] = _SAVED = _make()


def sneak():
    _SAVED("a", "north", 1)
"""
    )
    assert _runs(module, {"op": "call", "fn": "sneak"}) == [1]


def test_a_code_shared_by_two_tools_counts_for_both_on_a_run_past_the_spies():
    module = _module("""
CALLS = {}


class _Tool:
    def __call__(self, sku, region, limit):
        return {}


TOOLS = {"stock_lookup": {"fn": _Tool()}, "legacy_stock": {"fn": _Tool()}}
_SAVED = TOOLS["legacy_stock"]["fn"]


def sneak():
    _SAVED("a", "north", 1)
""")
    params = {"spies": {"stock_lookup": {}, "legacy_stock": {}}, "operations": [{"op": "call", "fn": "sneak"}]}
    record = run_probe(module, {"kind": "calls", "params": params}, None)["records"][0]
    assert record["spy_runs"] == {"stock_lookup": 1, "legacy_stock": 1}


def test_counters_stop_when_the_probe_ends():
    module = _sneaky_module("saved code object, fresh function")
    _runs(module, {"op": "call", "fn": "sneak"})
    code = tool_codes(module.TOOLS["stock_lookup"]["fn"])[0]
    # The probe's watch is gone: a new one may take the code (refused while another holds it).
    assert entry_of(code) is not None
    watching = instrument.Watch([code], print)
    assert watching.intact()
    with pytest.raises(instrument.WatchRefused):
        instrument.Watch([code], repr)
    watching.stop()


def test_a_tool_code_the_module_watches_itself_fails_the_probe_closed():
    module = _module(TOOL + "\n_HELD = instrument.Watch([stock_lookup.__code__], lambda frame: None)\n")
    params = {
        "spies": {"stock_lookup": {}},
        "operations": [{"op": "call", "fn": "stock_lookup", "args": ["a", "north", 1]}],
    }
    try:
        out = run_probe(module, {"kind": "calls", "params": params}, None)
        assert "records" not in out and "already watched" in str(out), out
    finally:
        module._HELD.stop()


# Ways into the counter from what learner code holds: the entry constant, compile's namespace.
SWITCH_OFF = {
    "the entry's type patched": "type(entry).__call__ = staticmethod(tuple)",
    "the watch table emptied": "compile.__globals__.get('_WATCHING', {}).clear()",
    "the entry's namespace emptied": "getattr(entry, '__globals__', {}).clear()",
    "the code watched by the module first": ("instrument.Watch([_CODE], lambda frame: None)"),
}


@pytest.mark.parametrize("how", SWITCH_OFF)
def test_a_counter_the_module_switches_off_counts_a_run(how):
    module = _module(
        TOOL
        + f"""
_CODE = stock_lookup.__code__


def sneak():
    entry = [c for c in _CODE.co_consts if getattr(c, "__name__", "") == "_getframe"][0]
    try:
        {SWITCH_OFF[how]}
    except Exception:
        pass
    before = dict(CALLS)
    types.FunctionType(_CODE, globals())("a", "north", 1)
    CALLS.clear()
    CALLS.update(before)
"""
    )
    assert _runs(module, {"op": "call", "fn": "sneak"}) == [1]


def test_every_run_is_also_traced_at_once():
    traced = []
    tally = Tally(["stock_lookup"], traced.append)
    module = _sneaky_module("closure")
    tally.watching(module.stock_lookup.__code__)
    tally.entered(["stock_lookup"], sys._getframe())
    assert traced == ["stock_lookup"] and tally.runs == {"stock_lookup": 1}


# --------------------------------------------------------------------------- what instrumenting keeps

PROGRAM = '''
import functools


class Base:
    def who(self):
        return "base"


class Child(Base):
    """A class."""

    def who(self):
        """A method."""
        return "child of " + super().who()


def gen(n):
    for i in range(n):
        yield i * 2


async def coro(x):
    return x + 1


square = lambda x: x * x  # noqa: E731


def outer():
    k = 3

    def inner(y):
        nonlocal k
        k += y
        return k
    return inner


@functools.lru_cache(maxsize=None)
def cached(x):
    return [x for _ in range(2)]


def fails(x):
    """Raises on the line below."""
    y = x + 1
    return y / 0
'''


def _finished(coroutine):
    """The value of a coroutine that awaits nothing, run without an event loop.

    ``asyncio.run`` would depend on the thread's loop state, which other tests of the suite may leave behind.
    """
    try:
        coroutine.send(None)
    except StopIteration as stop:
        return stop.value
    raise AssertionError("the coroutine awaited something")


def _behaviour(module) -> list:
    child = module.Child
    return [
        child().who(),
        child.__doc__,
        child.who.__doc__,
        list(module.gen(3)),
        _finished(module.coro(1)),
        module.square(4),
        module.outer()(2),
        module.cached(5),
        module.fails.__doc__,
        module.fails.__code__.co_firstlineno,
        [line for _, _, line in module.fails.__code__.co_lines()][-1],
    ]


def test_instrumented_code_behaves_like_the_plain_code():
    assert _behaviour(_module(PROGRAM)) == _behaviour(_module(PROGRAM, _plain))


def test_tracebacks_show_the_same_lines():
    def lines(module) -> list:
        try:
            module.fails(1)
        except ZeroDivisionError as exc:
            return [(f.lineno, f.name) for f in traceback.extract_tb(exc.__traceback__)][1:]
        raise AssertionError("no exception")

    failing_line = PROGRAM.splitlines().index("    return y / 0") + 1
    assert lines(_module(PROGRAM)) == lines(_module(PROGRAM, _plain)) == [(failing_line, "fails")]


def test_every_function_has_an_entry_and_comprehensions_and_classes_have_none():
    code = compile_instrumented(PROGRAM, "x.py")
    names = {}
    pending = [code]
    while pending:
        current = pending.pop()
        names[current.co_name] = entry_of(current) is not None
        pending.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    assert names == {
        "<module>": False,
        "Base": False,
        "Child": False,
        "who": True,
        "gen": True,
        "coro": True,
        "<lambda>": True,
        "outer": True,
        "inner": True,
        "cached": True,
        "<listcomp>": False,
        "fails": True,
    }


def test_a_lambda_the_source_does_not_spell_out_still_gets_its_entry():
    code = compile_instrumented(b"# -*- coding: unicode_escape -*-\nf = \\x6cambda: 1\n", "x.py")
    (function,) = [c for c in code.co_consts if isinstance(c, types.CodeType)]
    assert function.co_name == "<lambda>" and entry_of(function) is not None


def test_the_step_child_compiles_with_entries(tmp_path):
    from grader.engine.child import StepContext

    path = tmp_path / "tools.py"
    path.write_bytes(b"def f():\n    return 1\n")
    ctx = StepContext(str(tmp_path), str(path), "agtool_test_entries")
    module = ctx.fresh_module()
    ctx.forget()
    assert entry_of(module.f.__code__) is not None and ctx.compiled is not None


def test_code_without_its_entries_is_refused():
    with pytest.raises(NotInstrumented):
        _check_every_function_counts(compile("def f():\n    return 1\n", "x.py", "exec"))


def test_a_source_that_compiles_also_compiles_instrumented():
    def compiles(compiler, terms: int) -> bool:
        try:
            compiler("x = " + "+".join(["1"] * terms) + "\n", "x.py")
        except RecursionError:
            return False
        return True

    # The deepest expression plain compile takes here (the test's own stack counts too).
    low, high = 10, 20_000
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if compiles(_plain, middle) else (low, middle)
    assert compiles(compile_instrumented, low)
    with pytest.raises(SyntaxError):
        compile_instrumented("def f(:\n", "x.py")


def _plain(source: str, filename: str) -> types.CodeType:
    return compile(source, filename, "exec", dont_inherit=True)


# --------------------------------------------------------------------------- run-time code

_AUDITED = r"""
import builtins, marshal, sys, types
from grader.engine import audit, instrument
from grader.engine.child import with_filename
original_compile = compile
audit.install("/nonexistent-scratch", builders=(with_filename.__code__,))
space = {}
exec("def f():\n    return 1\n", space)
print("exec counted", instrument.entry_of(space["f"].__code__) is not None)
print("eval counted", instrument.entry_of(eval("lambda: 2").__code__) is not None)
import dataclasses, collections
@dataclasses.dataclass
class Row:
    a: int = 1
print("dataclass", Row().a, collections.namedtuple("P", "x y")(1, 2).y)
import csv, json  # the import system still loads compiled modules
for name, attempt in [("original compile", lambda: original_compile("x = 1", "<s>", "exec")),
                      ("replace", lambda: space["f"].__code__.replace(co_name="g")),
                      ("marshal", lambda: marshal.loads(marshal.dumps(1)))]:
    try:
        attempt()
        print(name, "allowed")
    except audit.CodeRefused as exc:
        print(name, "refused", str(exc)[:8])
"""


def test_code_made_at_run_time_is_counted_or_refused():
    import subprocess
    import sys as _sys

    done = subprocess.run([_sys.executable, "-c", _AUDITED], capture_output=True, text=True, timeout=60)
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stderr
    assert lines[:3] == ["exec counted True", "eval counted True", "dataclass 1 2"]
    assert lines[3:6] == ["original compile refused refused:", "replace refused refused:", "marshal refused refused:"]


def test_a_tool_whose_code_carries_no_counter_fails_closed():
    from grader.engine.probes import run_probe

    space = {"CALLS": {"t": 0}}
    exec(compile("def t():\n    CALLS['t'] += 1\n", "<plain>", "exec"), space)  # the plain compile: no entries
    module = types.SimpleNamespace(TOOLS={"t": {"fn": space["t"]}}, t=space["t"], CALLS=space["CALLS"])
    obs = run_probe(module, {"kind": "calls", "params": {"spies": {"t": {}}, "operations": []}}, None)
    assert "no run counter" in obs.get("setup_error", ""), obs
