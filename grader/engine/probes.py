"""The step child's probes: run one probe against the learner's module and report what happened.

Nothing here judges. A probe is JSON (``{"kind", "params"}``) made in the
grading process by a check; :func:`run_probe` executes it against the module object of
the step and returns a small JSON-able observation. Learner values are
encoded type-strictly (``grader.engine.encode``); learner ``Exception``\\ s become
data (``{"raised": "KeyError", "message": ...}``); other ``BaseException``\\ s
escape on purpose (the engine records them).

Probes share one module object per step, so each probe first resets what it
depends on (``CACHE`` cleared, spies and perturbed names restored in
``finally``): an observation is the same whether the probe runs alone
(``--only``) or after others.

Probe kinds (``PROBES``):

``calls``
    A sequence of operations (``operations``) with optional spies in
    ``TOOLS[name]["fn"]`` (and, counting only, in the module's own function of
    that name): ``call`` a module function, ``set`` a module name,
    ``contract`` (change or delete a value inside ``TOOLS``), ``add_tool``,
    ``cache`` (read ``CACHE`` keys), ``attr`` (read a module name), ``keys``
    (the keys of a module dict), ``report`` (run ``write_report`` and read the
    two files back), ``double`` (put a grader double in a module name; its
    calls come back under ``double_seen``: :mod:`grader.engine.doubles`),
    ``prebuild`` (build a graph now and hand it to the builder's next caller).
    After every operation the spy run counts and ``CALLS``
    are recorded. A ``call`` with ``args_after`` also records its arguments
    as they are after the call (``args_after``: did the call write into them?).
    A spy may raise ``KeyboardInterrupt`` or ``SystemExit``; when that very
    exception comes back out of an operation, the record says
    ``{"passed_through": "KeyboardInterrupt"}`` (any other interrupt escapes as
    before). A spy spec with ``every_route`` also acts in the module's own
    function of that name and in the function objects themselves, so the
    result or raise reaches a ``call_tool`` whichever route it calls by. The counts are kept where learner code does not look
    (:class:`Tally`). A ``report`` only says where the files are
    (``files_at``): the fork server reads them once the step is over
    (:mod:`grader.engine.report_files`), out of learner code's reach.
``tools_table``
    The structure of ``TOOLS`` (with type objects encoded as ``$class``).
``state_reducers``
    A two-node ``StateGraph`` over the learner's ``State``: which values the
    reducers produce.
``graph_nodes``
    The node names and edges of a compiled graph from ``build_naive``/``build_graph``.

Example (in-process, as the tests do)::

    >>> import types
    >>> m = types.SimpleNamespace(MAX_ROWS=5)
    >>> run_probe(m, {"kind": "calls", "params": {"operations": [{"op": "attr", "name": "MAX_ROWS"}]}}, None)["records"][0]["value"]
    5
"""

from __future__ import annotations

import _thread
import builtins
import functools
import itertools
import os
import sys
import types
from collections.abc import Callable
from typing import Any

from grader import spec as lab_spec
from grader.engine.doubles import DOUBLES, make_double
from grader.engine.doubles import install as install_double
from grader.engine.encode import decode, encode
from grader.engine.instrument import entry_of, tool_codes, uncounted_tool_message, watch
from grader.engine.report_files import REPORT_FILES
from grader.engine.wire import JsonDict, LearnerFn

MAX_MESSAGE = 300
MAX_SEEN = 12  # spy calls remembered per spy
MAX_WATCHED = 60  # calls remembered per watched learner function (``watch``)
# A sentinel for getattr on the learner's module; Any, so what such a read returns keeps the type of a
# learner object (Any) once the sentinel is ruled out.
_MISSING: Any = object()

# What the report probe uses to move and make folders, taken when the grader
# is imported (before any learner code runs): C functions whose behaviour
# does not go through module attributes a submission can patch.
_lstat, _unlink, _mkdir, _rename = os.lstat, os.unlink, os.mkdir, os.rename
_getcwd, _getpid, _SEP = os.getcwd, os.getpid, os.sep
_thread_id = _thread.get_ident
_getframe = sys._getframe
_folder_numbers = itertools.count(1)  # report folders are never reused within a process


def _message(exc: BaseException) -> str:
    # str(exc) may run learner code (a custom __str__); guard and cap it.
    try:
        text = str(exc)
    except Exception:
        text = "<str() of the exception failed>"
    return text[:MAX_MESSAGE] if isinstance(text, str) else "<non-str message>"


def _raised(exc: BaseException, module: Any = None) -> JsonDict:
    record = {"raised": type(exc).__name__, "message": _message(exc)}
    record.update(_crash_line(exc, module))
    return record


def _crash_line(exc: BaseException, module: Any) -> JsonDict:
    r"""``{"line": N, "function": name}`` of the deepest frame of ``exc`` in the learner's file, or ``{}``.

    The learner reads where their code crashed (a row names its line). Only
    real traceback and code objects are read, so nothing of the learner's runs here.

    >>> try:
    ...     exec(compile("def f():\n    return int('x')\nf()", "/s/tools.py", "exec"), {})
    ... except ValueError as exc:
    ...     _crash_line(exc, type("M", (), {"__file__": "/s/tools.py"}))
    {'line': 2, 'function': 'f'}
    """
    path = getattr(module, "__file__", None) if module is not None else None
    found: JsonDict = {}
    if not isinstance(path, str):
        return found
    try:
        tb = BaseException.__dict__["__traceback__"].__get__(exc)  # not a subclass's property
        while isinstance(tb, types.TracebackType):
            code = tb.tb_frame.f_code
            if code.co_filename == path:
                found = {"line": int(tb.tb_lineno), "function": str(code.co_name)[:100]}
            tb = tb.tb_next
    except Exception:
        return {}
    return found


class SetupError(Exception):
    """The grader could not prepare a probe (e.g. ``TOOLS`` has no entry to spy on)."""


def run_probe(module: Any, probe: JsonDict, ctx: Any) -> JsonDict:
    """Run one probe (``Probe.to_json()``) and return its JSON observation.

    >>> run_probe(None, {"kind": "no_such_kind"}, None)
    {'grader_error': "unknown probe kind 'no_such_kind'"}
    """
    kind: Any = probe.get("kind")  # JSON: a kind the engine does not know is an observation, not a crash
    fn = PROBES.get(kind)
    if fn is None:
        return {"grader_error": f"unknown probe kind {kind!r}"}
    try:
        return fn(module, probe.get("params") or {}, ctx)
    except SetupError as exc:
        return {"setup_error": str(exc)}
    except Exception as exc:
        return _raised(exc, module)


# ---------------------------------------------------------------------------
# Spies
# ---------------------------------------------------------------------------


# The BaseExceptions a spy may raise: call_tool must let them through (LAB_SPEC step 3).
INTERRUPTS = ("KeyboardInterrupt", "SystemExit")


def _exception_class(spec: Any) -> type:
    """The class a ``raise`` spy raises: a builtin ``Exception``, a custom one, or an interrupt.

    >>> _exception_class("KeyboardInterrupt"), _exception_class({"custom": "Boom"}).__mro__[1]
    (<class 'KeyboardInterrupt'>, <class 'Exception'>)
    >>> _exception_class({"custom": "Offline", "base": "ConnectionError"}).__mro__[1]
    <class 'ConnectionError'>
    """
    if isinstance(spec, dict) and "custom" in spec:
        # A learner-style exception class: of Exception, or of a builtin one (``base``).
        base = _exception_class(spec["base"]) if "base" in spec else Exception
        if not issubclass(base, Exception):
            raise SetupError(f"a custom exception's base must be an Exception: {spec!r}")
        return type(str(spec["custom"]), (base,), {})
    cls = getattr(builtins, str(spec), None)
    if isinstance(cls, type) and (issubclass(cls, Exception) or str(spec) in INTERRUPTS):
        return cls
    raise SetupError(f"unknown exception type {spec!r}")


class Tally:
    """How often each spied tool's body was entered during one probe, and how it was called.

    The counts live here, not on the spy functions: learner code that winds
    back counters it can find (``fn.runs -= 1``, ``fn.seen.pop()``,
    ``CALLS.update(before)``) finds nothing to wind back. Only the spies'
    closures and the probe's session hold this object. That keeps out a
    submission that looks at the function in ``TOOLS``; code walking frames,
    closures or ``gc`` can reach anything in the process (SECURITY.md), which
    is why ``CALLS`` is judged as well.

    Nested entries count once: a ``TOOLS`` entry wrapping the module function
    (both spied) runs one tool body, not two. Nesting is per thread, so a
    learner thread parked inside one spied run cannot hide another run.

    A watched tool code (:mod:`grader.engine.instrument`) entered outside a
    spied run is a run too (:meth:`entered`), whichever function object runs
    it; a frame of such a code on the stack is a run in progress.

    >>> tally = Tally(["stock_lookup"])
    >>> tally.run("stock_lookup", lambda: tally.run("stock_lookup", lambda: 7))
    7
    >>> tally.runs
    {'stock_lookup': 1}
    """

    def __init__(self, names: list[str], trace: Callable[[str], None] | None = None) -> None:
        self.runs = {name: 0 for name in names}
        self.seen: dict[str, list[Any]] = {name: [] for name in names}
        self._depth: dict[int, int] = {}  # thread id -> spied runs in progress
        # The interrupts the spies raised (by identity): only these become data
        # when they come back out of an operation; any other escapes as before.
        self._interrupts: list[BaseException] = []
        # Each counted run is also written to the fork server at once (the
        # step child's trace_run): winding ``runs`` back is then caught there.
        self._trace = trace
        self._codes: list[Any] = []  # the watched tool code objects (kept alive: their ids stay theirs)
        self._code_ids: set[int] = set()
        # Called after every counted run (the probe's check of its watches): a counter learner
        # code switched off is found at the next run the probe counts, not only at the snapshot.
        self.check: Callable[[], None] | None = None
        self._checking = False

    def note_call(self, name: str, args: tuple[Any, ...], kwargs: JsonDict) -> None:
        seen = self.seen[name]
        if len(seen) < MAX_SEEN:
            seen.append({"positional": encode(list(args)), "kwargs": encode(kwargs)})

    def interrupt(self, exc: BaseException) -> BaseException:
        """Remember ``exc`` (a spy's KeyboardInterrupt/SystemExit) as the grader's own; return it."""
        self._interrupts.append(exc)
        return exc

    def is_own_interrupt(self, exc: BaseException) -> bool:
        """``exc`` is an interrupt a spy of this probe raised (the very object, not one like it)."""
        return any(exc is own for own in self._interrupts)

    def run(self, name: str, body: Callable[[], Any]) -> Any:
        """Count one run of ``name`` unless another spied run is in progress, then run ``body``."""
        thread = _thread_id()
        depth = self._depth.get(thread, 0)
        if depth == 0 and not self._in_watched_code(_getframe(1)):
            self.count(name)
        self._depth[thread] = depth + 1
        try:
            return body()
        finally:
            self._depth[thread] = depth

    def watching(self, code: Any) -> None:
        """``code`` is a tool's code: a frame running it is a run in progress."""
        if id(code) not in self._code_ids:
            self._codes.append(code)
            self._code_ids.add(id(code))

    def entered(self, names: list[str], frame: Any) -> None:
        """``frame`` entered a watched code of the tools ``names``: a run of each, unless one is in progress.

        >>> tally = Tally(["t"])
        >>> tally.entered(["t"], _getframe())    # a run
        >>> tally.run("t", lambda: tally.entered(["t"], _getframe()))   # one run, not two
        >>> tally.runs
        {'t': 2}
        """
        if self._depth.get(_thread_id(), 0) or self._in_watched_code(frame.f_back):
            return
        self.watching(frame.f_code)  # a copy of the code (``code.replace``) is a run in progress too
        for name in names:
            self.count(name)

    def count(self, name: str) -> None:
        """One run of ``name``: in ``runs``, and on its way to the fork server at once."""
        self.runs[name] += 1
        if self._trace is not None:
            self._trace(name)
        if self.check is not None and not self._checking:
            self._checking = True
            try:
                self.check()
            finally:
                self._checking = False

    def _in_watched_code(self, frame: Any) -> bool:
        ids = self._code_ids
        while ids and frame is not None:
            if id(frame.f_code) in ids:
                return True
            frame = frame.f_back
        return False


def _trampoline(*args: Any, _agtool_run: Any = None, **kwargs: Any) -> Any:
    return _agtool_run(args, kwargs)


# The code an instrumented learner function runs instead of its own (see
# _Session.instrument): no free variables, so it fits any top-level function.
_TRAMPOLINE = _trampoline.__code__
_FunctionType = types.FunctionType  # type(_trampoline)
_TRAMPOLINES: dict[tuple[str, ...], Any] = {(): _TRAMPOLINE}


def trampoline_for(freevars: tuple[str, ...]) -> Any:
    """A trampoline's code with exactly ``freevars`` (a closure's code can only be swapped for one like it).

    >>> def outer():
    ...     a, b = 1, 2
    ...     def inner(x):
    ...         return a + b + x
    ...     return inner
    >>> inner = outer()
    >>> code = trampoline_for(inner.__code__.co_freevars)
    >>> code.co_freevars == inner.__code__.co_freevars
    True
    >>> inner.__code__, inner.__kwdefaults__ = code, {"_agtool_run": lambda args, kwargs: ("ran", args)}
    >>> inner(5)
    ('ran', (5,))
    """
    code = _TRAMPOLINES.get(freevars)
    if code is None:
        names = ", ".join(freevars)
        source = (
            f"def _factory():\n    {names} = {', '.join('None' for _ in freevars)},\n"
            f"    def _trampoline(*args, _agtool_run=None, **kwargs):\n        ({names},)\n"
            f"        return _agtool_run(args, kwargs)\n    return _trampoline\n"
        )
        space: JsonDict = {}
        exec(compile(source, "<agtool-trampoline>", "exec"), space)
        code = _TRAMPOLINES[freevars] = space["_factory"]().__code__
        if code.co_freevars != freevars:  # the compiler ordered them otherwise: no swap possible
            code = _TRAMPOLINES[freevars] = None
    return code


def make_act(spec: JsonDict, original: LearnerFn, tally: Tally) -> Callable[[tuple[Any, ...], JsonDict], Any]:
    """What a spy does with its arguments, as ``spec`` says (see :func:`make_spy`)."""
    mode = spec.get("mode", "original")
    if mode not in ("original", "return", "raise", "table"):
        raise SetupError(f"unknown spy mode {mode!r}")
    exc_class = _exception_class(spec.get("exc")) if mode == "raise" else None
    # ``exc_by_sku``: the class raised for a call of that sku (one probe meets many exception types,
    # each tied to its call, however often a call_tool calls the tool).
    by_sku = {sku: _exception_class(exc) for sku, exc in (spec.get("exc_by_sku") or {}).items()}
    echo = spec.get("echo") is True

    fill = spec.get("fill_rows")

    def act(args: tuple[Any, ...], kwargs: JsonDict) -> Any:
        if mode == "original":
            value = original(*args, **kwargs)
            if fill is not None and isinstance(value, dict) and value.get("rows") == []:
                value["rows"] = decode(fill)  # as if the table held rows here too
            return value
        if mode == "return":
            value = decode(spec.get("value"))
            return _echoed(value, args, kwargs) if echo else value
        if mode == "raise":
            assert exc_class is not None  # set above for mode "raise"
            sku = kwargs.get("sku", args[0] if args else None)
            cls = by_sku.get(sku, exc_class) if isinstance(sku, str) else exc_class
            exc = cls("raised by the grader's spy")
            raise exc if isinstance(exc, Exception) else tally.interrupt(exc)
        bound = dict(zip(lab_spec.ARG_NAMES, args))
        bound.update(kwargs)
        limit = None if spec.get("ignore_limit") else bound["limit"]
        return lab_spec.lookup_result(bound["sku"], bound["region"], limit)

    return act


def _same(value: Any) -> Any:
    return value


def as_pair(value: Any) -> Any:
    """``value`` as a plain tuple when it is a pair by meaning: a tuple or list subclass that unpacks as two
    and indexes ``[0]``/``[1]`` as the same two (a ``NamedTuple``); anything else as it is.

    A plain tuple or list is left alone (the encoding keeps it, and a judge reads either).

    >>> from typing import NamedTuple
    >>> class Pair(NamedTuple):
    ...     args: dict
    ...     coercions: list
    >>> as_pair(Pair({"limit": 2}, [])), as_pair([1, 2]), as_pair((1, 2, 3))
    (({'limit': 2}, []), [1, 2], (1, 2, 3))
    """
    if type(value) in (tuple, list) or not isinstance(value, (tuple, list)):
        return value
    try:
        first, second = value
        if value[0] is first and value[1] is second:
            return (first, second)
    except Exception:  # a learner's sequence that does not unpack or index as two: judged as it is
        pass
    return value


def _echoed(value: Any, args: tuple[Any, ...], kwargs: JsonDict) -> Any:
    """``value`` with the ``sku`` and ``region`` of the call it answers (the spec's tools echo both).

    A spy's ``echo`` keeps the world one the spec allows: whichever arguments the learner's
    own route passed, the result names them (its rows stay the grader's).

    >>> _echoed({"sku": "A", "region": "north", "rows": []}, ("B",), {"region": "east", "limit": 1})
    {'sku': 'B', 'region': 'east', 'rows': []}
    >>> _echoed([1], (), {})
    [1]
    """
    if not isinstance(value, dict):
        return value
    bound = dict(zip(lab_spec.ARG_NAMES, args))
    bound.update(kwargs)
    for key in ("sku", "region"):
        if key in value and key in bound:
            value[key] = bound[key]
    return value


def make_spy(name: str, spec: JsonDict, original: LearnerFn, tally: Tally) -> LearnerFn:
    """The function put in ``TOOLS[name]["fn"]``: counts a run in ``tally``, then acts as ``spec`` says.

    Modes: ``original`` (call the learner's function; with ``fill_rows``, those rows in a result
    that had none), ``return`` (a fresh copy
    of ``value``; with ``echo``, naming the sku and region it was called with), ``raise`` (an exception of type ``exc``: an ``Exception``,
    or ``KeyboardInterrupt``/``SystemExit``; with ``exc_by_sku``, the type mapped to the call's sku), ``table`` (a faithful tool over
    the spec's table, honouring ``limit`` unless ``ignore_limit``). A plain
    function with no attributes of its own.
    """
    act = make_act(spec, original, tally)

    def spy(*args: Any, **kwargs: Any) -> Any:
        tally.note_call(name, args, kwargs)
        return tally.run(name, lambda: act(args, kwargs))

    spy.__name__ = spy.__qualname__ = name
    return spy


def make_module_spy(
    name: str, original: LearnerFn, tally: Tally, act: Callable[[tuple[Any, ...], JsonDict], Any] | None = None
) -> LearnerFn:
    """The function put in the module's own name ``name``: counts a run, then calls the learner's function.

    It catches a ``call_tool`` that goes around ``TOOLS`` (``globals()[name](**args)``);
    it runs the real body, whatever the ``TOOLS`` spy's mode, unless ``act`` is
    given (the spy spec's ``every_route``): then it notes the call and acts as
    the ``TOOLS`` spy does.
    """

    def module_spy(*args: Any, **kwargs: Any) -> Any:
        if act is not None:
            tally.note_call(name, args, kwargs)
            return tally.run(name, lambda: act(args, kwargs))
        return tally.run(name, lambda: original(*args, **kwargs))

    module_spy.__name__ = module_spy.__qualname__ = name
    return module_spy


# ---------------------------------------------------------------------------
# The "calls" probe
# ---------------------------------------------------------------------------


class _Session:
    """One probe's changes to the module, undone in reverse order by :meth:`restore`."""

    def __init__(self, module: Any, params: JsonDict, ctx: Any) -> None:
        self.module = module
        self.ctx = ctx
        self.undo: list[Callable[[], None]] = []
        self.tally = Tally(list((params.get("spies") or {}).keys()), getattr(ctx, "trace_run", None))
        self._instrumented: set[int] = set()
        self._swapped: dict[int, Any] = {}  # id of a function instrumented -> its own code
        self._watched: dict[int, list[str]] = {}  # id of a watched code -> the tools it runs
        self._watches: list[Any] = []  # (instrument.Watch, the tools it runs), for check_counters
        self.double_seen: dict[str, list[Any]] = {}  # doubled or watched name -> its calls (op_double, op_watch)
        self._watch_depth = 0  # watched calls in progress: only the outermost is recorded
        self.tally.check = self.check_counters

    # -- setup --------------------------------------------------------------
    def tools(self) -> JsonDict:
        tools = getattr(self.module, "TOOLS", _MISSING)
        if tools is _MISSING:
            raise SetupError("the module has no TOOLS")
        if not isinstance(tools, dict):
            raise SetupError(f"TOOLS is a {type(tools).__name__}, not a dict")
        return tools

    def install_spy(self, name: str, spec: JsonDict) -> None:
        tools = self.tools()
        entry = tools.get(name)
        if not isinstance(entry, dict) or "fn" not in entry:
            raise SetupError(f"TOOLS[{name!r}] is not a dict with an 'fn' entry the grader can swap for its spy")
        original = entry["fn"]
        entry["fn"] = make_spy(name, spec, original, self.tally)
        self.undo.append(lambda: entry.__setitem__("fn", original))
        # ``every_route``: the other routes below act as the spy does (a result or a
        # raise reaches call_tool however it calls the tool); else they run the body.
        act = None
        if spec.get("every_route") and spec.get("mode", "original") != "original":
            act = make_act(spec, original, self.tally)
        # The module's own function too, for code that calls it around TOOLS.
        module, own = self.module, getattr(self.module, name, None)
        if callable(own):
            setattr(module, name, make_module_spy(name, own, self.tally, act))
            self.undo.append(lambda: setattr(module, name, own))
        # The code behind both, whichever function object runs it (closures,
        # partials, methods, copies, a code object saved at import).
        self.watch(name, (original, own))
        # And the function objects themselves, for references saved at import
        # (``_REAL = TOOLS[name]["fn"]``): neither swap above reaches those.
        for fn in (original, own):
            self.instrument(name, fn, act)

    def watch(self, name: str, fns: tuple[Any, ...]) -> None:
        """Count each entry into the code objects behind ``fns`` as a run of ``name`` (undone in restore)."""
        tally = self.tally
        codes = [code for fn in fns for code in tool_codes(fn, self._swapped)]
        if not any(entry_of(code) is not None for code in codes):
            # No counter to watch: its runs could not be seen, so no check may take it for one that never ran.
            raise SetupError(uncounted_tool_message(name))
        for fn in fns:
            for code in tool_codes(fn, self._swapped):
                names = self._watched.get(id(code))
                if names is None:
                    names = self._watched[id(code)] = []
                    tally.watching(code)

                    def on_entry(frame: types.FrameType, names: list[str] = names) -> None:
                        tally.entered(names, frame)

                    watching = watch([code], on_entry)
                    self.undo.append(watching.stop)
                    self._watches.append((watching, names))
                if name not in names:
                    names.append(name)

    def check_counters(self) -> None:
        """A watched code whose counter learner code switched off counts one run of its tools, once.

        Its runs can no longer be seen, so no check may take it for a tool that never ran.
        """
        for pair in list(self._watches):
            watching, names = pair
            if not watching.intact():
                self._watches.remove(pair)
                for name in names:
                    self.tally.count(name)

    def instrument(self, name: str, fn: Any, act: Callable[[tuple[Any, ...], JsonDict], Any] | None = None) -> None:
        """Make calls of the function object ``fn`` itself count as runs of ``name`` (undone in restore).

        With ``act`` (``every_route``) such a call is noted and acts as the spy does
        instead of running the body.
        """
        if type(fn) is not _FunctionType or id(fn) in self._instrumented or fn.__closure__:
            return  # a nested function's code cannot be swapped (its closure must match): its entry counter counts
        self._instrumented.add(id(fn))
        self._swapped[id(fn)] = fn.__code__
        tally = self.tally

        def make_run(body: LearnerFn) -> Callable[[tuple[Any, ...], JsonDict], Any]:
            def run(args: tuple[Any, ...], kwargs: JsonDict) -> Any:
                if act is not None:
                    tally.note_call(name, args, kwargs)
                    return tally.run(name, lambda: act(args, kwargs))
                return tally.run(name, lambda: body(*args, **kwargs))

            return run

        self._reroute(fn, _TRAMPOLINE, make_run)

    def _reroute(
        self, fn: Any, trampoline: Any, make_run: Callable[[LearnerFn], Callable[[tuple[Any, ...], JsonDict], Any]]
    ) -> None:
        """Make every call of the function object ``fn`` go to ``make_run(body)`` (undone in restore).

        ``body`` is ``fn`` as it was (its code, defaults and closure, in a new function object);
        ``trampoline`` is a code with ``fn``'s free variables that hands the call to the run.
        """
        code, defaults, kwdefaults = fn.__code__, fn.__defaults__, fn.__kwdefaults__
        body = _FunctionType(code, fn.__globals__, fn.__name__, defaults, fn.__closure__)
        body.__kwdefaults__ = kwdefaults
        fn.__code__, fn.__defaults__, fn.__kwdefaults__ = trampoline, None, {"_agtool_run": make_run(body)}

        def undo() -> None:
            fn.__code__, fn.__defaults__, fn.__kwdefaults__ = code, defaults, kwdefaults

        self.undo.append(undo)

    def clear_cache(self) -> None:
        cache = getattr(self.module, "CACHE", None)
        if isinstance(cache, dict):
            cache.clear()

    def restore(self) -> None:
        while self.undo:
            self.undo.pop()()

    # -- snapshots ----------------------------------------------------------
    def snapshot(self) -> JsonDict:
        self.check_counters()
        out = {"spy_runs": dict(self.tally.runs)}
        out["calls"] = encode(getattr(self.module, "CALLS", None))
        return out

    # -- operations ---------------------------------------------------------
    def run(self, operation: JsonDict) -> JsonDict:
        op = operation.get("op", "call")
        handler = getattr(self, f"op_{op}", None)
        if handler is None:
            raise SetupError(f"unknown operation {op!r}")
        try:
            record: JsonDict = handler(operation)
        except SetupError:
            raise
        except Exception as exc:
            record = _raised(exc, self.module)
        except BaseException as exc:
            # A spy's own interrupt that came back out is an observation (call_tool let
            # it through, as it must); any other interrupt or exit escapes as before.
            if not self.tally.is_own_interrupt(exc):
                raise
            record = {"passed_through": type(exc).__name__}
        record.update(self.snapshot())
        return record

    def op_call(self, operation: JsonDict) -> JsonDict:
        fn = getattr(self.module, operation["fn"], _MISSING)
        if fn is _MISSING:
            return {"missing": operation["fn"]}
        args = decode(operation.get("args", []))
        kwargs = decode(operation.get("kwargs", {}))
        shape = as_pair if operation.get("pair") else _same
        if not operation.get("args_after"):
            return {"value": encode(shape(fn(*args, **kwargs)))}
        # The arguments as the call left them: did it write into what it was given?
        try:
            out = {"value": encode(shape(fn(*args, **kwargs)))}
        except Exception as exc:
            out = _raised(exc, self.module)
        out["args_after"] = encode(args)
        return out

    def op_attr(self, operation: JsonDict) -> JsonDict:
        value = getattr(self.module, operation["name"], _MISSING)
        return {"missing": operation["name"]} if value is _MISSING else {"value": encode(value)}

    def op_keys(self, operation: JsonDict) -> JsonDict:
        value = getattr(self.module, operation["name"], _MISSING)
        if not isinstance(value, dict):
            return {"value": encode(None if value is _MISSING else value), "not_dict": True}
        return {"value": encode(list(value.keys()))}

    def op_cache(self, operation: JsonDict) -> JsonDict:
        cache = getattr(self.module, "CACHE", _MISSING)
        if not isinstance(cache, dict):
            return {"not_dict": True, "value": encode(None if cache is _MISSING else cache)}
        return {"value": encode(list(cache.keys()))}

    def op_set(self, operation: JsonDict) -> JsonDict:
        name, module = operation["name"], self.module
        old = getattr(module, name, _MISSING)
        setattr(module, name, decode(operation["value"]))
        self.undo.append(lambda: delattr(module, name) if old is _MISSING else setattr(module, name, old))
        return {}

    def op_prebuild(self, operation: JsonDict) -> JsonDict:
        """Call the module's graph builder ``name`` now; its next call returns that graph (undone in restore).

        A graph compiled *before* a later ``set`` (of ``MAX_ATTEMPTS``) then runs *after* it,
        once: a limit read when the graph runs follows the change, one read when the graph
        was built does not. Later calls build anew (a graph with a checkpointer is never run twice).
        """
        name, module = operation["name"], self.module
        builder = getattr(module, name, _MISSING)
        if not callable(builder):
            return {"missing": name}
        built = builder()
        unused = [True]

        def prebuilt(*args: Any, **kwargs: Any) -> Any:
            if unused[0] and not args and not kwargs:
                unused[0] = False
                return built
            return builder(*args, **kwargs)

        prebuilt.__name__ = prebuilt.__qualname__ = name
        setattr(module, name, prebuilt)
        self.undo.append(lambda: setattr(module, name, builder))
        return {}

    def op_double(self, operation: JsonDict) -> JsonDict:
        """Put the grader's double of kind ``double`` in the module name ``name`` (undone in restore).

        Its calls are recorded under the probe's ``double_seen[name]`` (:mod:`grader.engine.doubles`).
        """
        name, kind = operation["name"], operation.get("double", operation["name"])
        if kind not in DOUBLES:
            raise SetupError(f"unknown double kind {kind!r}")
        seen = self.double_seen.setdefault(name, [])
        fn = make_double(kind, self.module, operation.get("params") or {}, seen)
        self.undo.append(install_double(self.module, name, fn))
        return {}

    def op_watch(self, operation: JsonDict) -> JsonDict:
        """Record every call of the learner's function ``name`` without replacing it (undone in restore).

        The function object itself is watched (its code swapped for a recording trampoline), so
        a call through a saved reference, a table, a closure's variable or ``self`` is seen as
        well as one through the module name. Each call is recorded under the probe's
        ``double_seen[name]`` as a double's is (arguments as they were at the call, what it
        returned or raised) plus ``runs``: the tool-body runs made during that call. A call made
        inside another watched call (``validate_result`` inside ``call_tool``) is that call's work,
        not one of its own.
        """
        name = operation["name"]
        fn = getattr(self.module, name, _MISSING)
        # What the name's calls put before the caller's arguments: a bound method's object, a partial's
        # arguments. The function behind them is watched; those leading arguments are not recorded.
        target: Any = fn  # the learner's object, unwrapped below
        bound: tuple[Any, ...] = ()
        for _ in range(8):
            if type(target) is functools.partial and not target.keywords:
                target, bound = target.func, tuple(target.args) + bound
            elif hasattr(target, "__func__") and hasattr(target, "__self__"):
                target, bound = target.__func__, (target.__self__,) + bound
            else:
                break
        trampoline = trampoline_for(target.__code__.co_freevars) if type(target) is _FunctionType else None
        if trampoline is None or id(target) in self._instrumented:
            return {"unwatched": name}
        self._instrumented.add(id(target))
        seen = self.double_seen.setdefault(name, [])
        tally = self.tally
        session = self

        def make_run(body: LearnerFn) -> Callable[[tuple[Any, ...], JsonDict], Any]:
            return lambda args, kwargs: run(body, args, kwargs)

        def run(body: LearnerFn, args: tuple[Any, ...], kwargs: JsonDict) -> Any:
            if session._watch_depth:  # inside another watched call: that call is what was made
                return body(*args, **kwargs)
            lead = len(bound) if len(args) >= len(bound) and all(a is b for a, b in zip(args, bound)) else 0
            entry: JsonDict = {"args": encode(list(args[lead:]))}
            if kwargs:
                entry["kwargs"] = encode(kwargs)
            if len(seen) < MAX_WATCHED:
                seen.append(entry)
            before = sum(tally.runs.values())
            session._watch_depth += 1
            try:
                value = body(*args, **kwargs)
            except BaseException as exc:
                entry["raised"] = type(exc).__name__
                raise
            else:
                entry["returned"] = encode(value)
            finally:
                session._watch_depth -= 1
                entry["runs"] = sum(tally.runs.values()) - before
            return value

        self._reroute(target, trampoline, make_run)
        return {}

    def op_contract(self, operation: JsonDict) -> JsonDict:
        """Change (or with ``delete`` remove) ``TOOLS[path[0]][path[1]]...``."""
        path = operation["path"]
        target: Any = self.tools()
        for key in path[:-1]:
            if not isinstance(target, dict) or key not in target:
                raise SetupError(f"TOOLS has no {'/'.join(map(str, path[:-1]))} for the grader to change")
            target = target[key]
        if not isinstance(target, dict):
            raise SetupError(f"TOOLS/{'/'.join(map(str, path[:-1]))} is not a dict")
        last, parent = path[-1], target
        old = parent.get(last, _MISSING)
        if operation.get("delete"):
            parent.pop(last, None)
        else:
            parent[last] = decode(operation["value"])
        self.undo.append(lambda: parent.pop(last, None) if old is _MISSING else parent.__setitem__(last, old))
        return {}

    def op_add_tool(self, operation: JsonDict) -> JsonDict:
        """Add a copy of an existing entry under a new name (to see ``tools`` follow)."""
        tools = self.tools()
        source = tools.get(operation["like"])
        if not isinstance(source, dict):
            raise SetupError(f"TOOLS[{operation['like']!r}] is not a dict the grader can copy")
        name = operation["name"]
        tools[name] = dict(source)
        self.undo.append(lambda: tools.pop(name, None))
        return {}

    def op_clear_cache(self, operation: JsonDict) -> JsonDict:
        self.clear_cache()
        return {}

    def op_report(self, operation: JsonDict) -> JsonDict:
        """Run ``write_report`` into a new scratch folder (or its default) and read both files."""
        fn = getattr(self.module, "write_report", _MISSING)
        if fn is _MISSING:
            return {"missing": "write_report"}
        if operation.get("folder") == "default":
            folder, cwd, scratch = _parent_folder(self.ctx.module_path), _getcwd(), self.ctx.scratch
            # The working folder is looked at only inside the step's scratch folder (where
            # the step child starts): the grader removes nothing anywhere else.
            watch_cwd = cwd != folder and (cwd == scratch or cwd.startswith(scratch + _SEP))
            for name in REPORT_FILES:
                _remove_if_present(folder + _SEP + name)
                if watch_cwd:
                    _remove_if_present(cwd + _SEP + name)
            value = fn()
            # The files move to a folder of their own at once: what a later probe
            # of the step writes to the same place cannot replace them.
            out = {"value": encode(value), "files_at": _keep(folder, scratch)}
            if watch_cwd:
                # Files written to the working folder instead: the check of the default
                # folder fails, the checks of what the files say can still read them.
                out["cwd_files_at"] = _keep(cwd, scratch)
            return out
        folder = _new_folder(self.ctx.scratch)
        value = fn(folder=folder)
        return {"value": encode(value), "files_at": folder}


def _parent_folder(path: str) -> str:
    if not path.startswith(_SEP):
        path = _getcwd() + _SEP + path
    return path.rpartition(_SEP)[0] or _SEP


def _remove_if_present(path: str) -> None:
    try:
        _lstat(path)
    except OSError:
        return
    _unlink(path)


def _new_folder(scratch: str) -> str:
    """A folder this call created (so it is empty), under ``scratch``."""
    while True:
        folder = f"{scratch}{_SEP}grader_report_{_getpid()}_{next(_folder_numbers)}"
        try:
            _mkdir(folder)
        except FileExistsError:  # left by learner code: never read what someone else wrote
            continue
        return folder


def _keep(folder: str, scratch: str) -> str:
    """Move the report files ``folder`` holds into a new folder under ``scratch``; return that folder.

    A file that cannot move (gone, or on another file system) is simply not
    there for the fork server, which reads the new folder.
    """
    kept = _new_folder(scratch)
    for name in REPORT_FILES:
        try:
            _rename(folder + _SEP + name, kept + _SEP + name)
        except OSError:
            pass
    return kept


def probe_calls(module: Any, params: JsonDict, ctx: Any) -> JsonDict:
    """Run ``params["operations"]`` with ``params["spies"]`` installed; see the module docstring."""
    if params.get("fresh"):
        module = ctx.fresh_module()
    session = _Session(module, params, ctx)
    try:
        if params.get("clear_cache", True):
            session.clear_cache()
        for name, spec in (params.get("spies") or {}).items():
            session.install_spy(name, spec)
        start = session.snapshot()
        records = [session.run(operation) for operation in params.get("operations", [])]
        out = {"start": start, "records": records, "spy_seen": session.tally.seen}
        if session.double_seen:
            out["double_seen"] = session.double_seen
        return out
    finally:
        session.restore()


# ---------------------------------------------------------------------------
# Structure probes
# ---------------------------------------------------------------------------


def probe_tools_table(module: Any, params: JsonDict, ctx: Any) -> JsonDict:
    """The shape of ``TOOLS``: entry keys, whether ``fn`` is the module's function, args, returns."""
    tools = getattr(module, "TOOLS", _MISSING)
    if not isinstance(tools, dict):
        return {"not_dict": True, "value": encode(None if tools is _MISSING else tools)}
    entries = {}
    for name in list(tools)[:10]:
        entry = tools[name]
        if not isinstance(name, str):
            continue
        if not isinstance(entry, dict):
            entries[name] = {"not_dict": True, "value": encode(entry)}
            continue
        own = getattr(module, name, _MISSING)
        entries[name] = {
            "keys": encode(list(entry.keys())),
            "fn_is_module_function": own is not _MISSING and entry.get("fn") is own,
            "args": encode(entry.get("args")),
            "returns": encode(entry.get("returns")),
        }
    return {"names": encode(list(tools.keys())), "entries": entries}


def probe_state_reducers(module: Any, params: JsonDict, ctx: Any) -> JsonDict:
    """Invoke a two-node graph over ``State``; report the listed fields of the final state."""
    from langgraph.graph import END, START, StateGraph

    state = getattr(module, "State", _MISSING)
    if state is _MISSING:
        return {"missing": "State"}
    graph = StateGraph(state)
    names = ["grader_first_node", "grader_second_node"]
    for name, update in zip(names, params["updates"]):
        graph.add_node(name, lambda _state, update=update: decode(update))
    graph.add_edge(START, names[0])
    graph.add_edge(names[0], names[1])
    graph.add_edge(names[1], END)
    final = graph.compile().invoke(decode(params["initial"]))
    if not isinstance(final, dict):
        return {"final_not_dict": encode(final)}
    return {"final": {field: encode(final.get(field, None)) for field in params["fields"]}}


def probe_graph_nodes(module: Any, params: JsonDict, ctx: Any) -> JsonDict:
    """Node names and edges of ``<builder>().get_graph()``."""
    builder = getattr(module, params["builder"], _MISSING)
    if builder is _MISSING:
        return {"missing": params["builder"]}
    drawable = builder().get_graph()
    nodes = sorted(str(n) for n in drawable.nodes)
    edges = sorted([str(e.source), str(e.target)] for e in drawable.edges)
    return {"nodes": nodes, "edges": edges}


PROBES: dict[str, Callable[[Any, JsonDict, Any], JsonDict]] = {
    "calls": probe_calls,
    "tools_table": probe_tools_table,
    "state_reducers": probe_state_reducers,
    "graph_nodes": probe_graph_nodes,
}
