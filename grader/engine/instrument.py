"""Entry counters compiled into the learner's code: a run of a tool's code counts, whichever function object runs it.

The spies of :mod:`grader.engine.probes` sit where the grader can swap a
function (``TOOLS[name]["fn"]``, the module's own name, a plain function's
``__code__``). Code can run a tool past all three: a fresh function built
from a code object saved at import (``types.FunctionType(code, globals())``),
a closure, a ``functools.partial``, a bound method, a callable object, a
copy. Every route runs the tool's *code object*, so the submission is
compiled (:func:`compile_instrumented`) with one statement at the top of
every function body (after its docstring; lambdas too) that calls the
:data:`ENTRY`. The entry is not a name of the module: it is put into the
code's own constants after compilation, where no assignment of the
submission reaches it. A probe watches the code objects behind a tool
(:func:`tool_codes`, :func:`watch`); entering a watched code then calls the
probe back with the frame that entered it.

Nothing learner code can reach steers the count: the entry is the built-in
``sys._getframe`` (immutable, stateless), whose call raises an audit event
with the entering frame; the table of watched codes and their callbacks
lives only in the audit hook that counts (:func:`install_counter`), which no
attribute of any object leads to (``compile.__globals__`` is this module's
namespace, which holds no table); a :class:`Watch` talks to it by audit
events, may not take over a code another watch holds, and is checked
(:meth:`Watch.intact`) at every run the probe counts and at every snapshot.

What is kept: line numbers and tracebacks (the statement added shares the
line of the first statement of the body), docstrings, generators, coroutines,
lambdas, ``super()``. Code compiled while the submission runs gets its
entries too: in a step child ``compile``, ``exec`` and ``eval`` are
:func:`runtime_compile`, :func:`runtime_exec` and :func:`runtime_eval`, and
:mod:`grader.engine.audit` refuses the routes around them (a saved original
``compile``, a code object rebuilt by hand, ``marshal``).

Example::

    >>> import types
    >>> code = compile_instrumented(b"def f(x):\\n    '''Add one.'''\\n    return x + 1\\n", "<doc>")
    >>> space = {}
    >>> exec(code, space)
    >>> f = space["f"]
    >>> f.__doc__
    'Add one.'
    >>> entered = []
    >>> watching = watch(tool_codes(f), lambda frame: entered.append(frame.f_code.co_name))
    >>> types.FunctionType(f.__code__, space)(1)   # a fresh function over the same code
    2
    >>> entered, watching.intact()
    (['f'], True)
    >>> watching.stop()
    >>> f(1), entered
    (2, ['f'])
"""

from __future__ import annotations

import ast
import functools
import secrets
import sys
import types
from collections.abc import Callable, Iterable
from copy import deepcopy as _deepcopy
from types import CodeType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing import TypeVar

    _Node = TypeVar("_Node", bound=ast.AST)

# Taken when the grader is imported, before any learner code runs.
_compile = compile
_getframe = sys._getframe
_FunctionType = types.FunctionType
_MethodType = types.MethodType
_partial_func = functools.partial.__dict__["func"].__get__
_method_func = types.MethodType.__dict__["__func__"].__get__
_static_func = staticmethod.__dict__["__func__"].__get__
_class_func = classmethod.__dict__["__func__"].__get__
_mro_of = type.__dict__["__mro__"].__get__
_dict_of = type.__dict__["__dict__"].__get__
_function_dict = _FunctionType.__dict__["__dict__"].__get__
_dict_get = dict.get
_LruWrapper = functools._lru_cache_wrapper
_lru_dict = _LruWrapper.__dict__["__dict__"].__get__

# The placeholder the added statement loads before compilation: unguessable,
# so no string constant of a submission is taken for it.
_MARK = f"agtool-entry-{secrets.token_hex(16)}"
MAX_LINKS = 32  # objects followed from one tool (partials, methods, __wrapped__, __call__)


# The entry compiled into every function: the built-in ``sys._getframe``, called as
# ``<entry>.__call__()`` at the top of the body. Calling it raises the audit event
# ``sys._getframe`` with the frame that entered, which the counting hook
# (install_counter) hands to the Watch of that frame's code. A built-in function and
# its type are immutable and hold no state: nothing learner code reaches through the
# constant can switch it off, and the table of watched codes lives in the hook alone.
ENTRY = _getframe


def compile_instrumented(source: bytes | str, filename: str) -> CodeType:
    """The module code of ``source`` with an :data:`ENTRY` at the top of every function body.

    Raises what ``compile`` raises (``SyntaxError``, a warning turned into an
    error, ...), from the same source lines, and :class:`NotInstrumented` if
    a function still came out without its entry (fail closed).

    >>> code = compile_instrumented("g = lambda: 7\\n", "<doc>")
    >>> space = {}
    >>> exec(code, space)
    >>> space["g"](), len(tool_codes(space["g"]))
    (7, 1)
    """
    # Lambdas hide in expressions, which takes a walk of every node; without
    # the word in the source, the statements are enough (and if a lambda was
    # spelled another way, e.g. in a unicode_escape source, the check says so).
    every_node = "lambda" in source if isinstance(source, str) else b"lambda" in source
    code = _compile_with_entries(source, filename, every_node)
    try:
        _check_every_function_counts(code)
    except NotInstrumented:
        if every_node:
            raise
        code = _compile_with_entries(source, filename, True)
        _check_every_function_counts(code)
    return code


def _compile_with_entries(
    source: Any,
    filename: Any,
    every_node: bool,
    mode: str = "exec",
    flags: int = 0,
    optimize: int = -1,
    feature_version: int = -1,
) -> CodeType:
    # Compiling a tree converts it with the interpreter's recursion limit, where
    # compiling source allows three times as much (COMPILER_STACK_FRAME_SCALE):
    # the same limit here, so a source that compiles also compiles instrumented.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(limit * 3)
    tree: Any  # the caller's tree (copied) or the one compile made from source: compile checks its kind
    try:
        if isinstance(source, ast.AST):  # a tree of the caller's: entries go into a copy, never into theirs
            tree = _deepcopy(source)
        else:
            tree = _compile(
                source, filename, mode, flags | ast.PyCF_ONLY_AST, dont_inherit=True, _feature_version=feature_version
            )
        for node in ast.walk(tree) if every_node else _statements(tree):  # iterative: no recursion here
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                _add_entry_statement(node)
            elif isinstance(node, ast.Lambda):
                # ``(<entry>() and None) or body``: the entry's result (a frame) is never the lambda's.
                entered = ast.BoolOp(op=ast.And(), values=[_entry_call(), ast.Constant(value=None)])
                node.body = _located(ast.BoolOp(op=ast.Or(), values=[entered, node.body]), node.body)
        code = _compile(tree, filename, mode, flags & ~ast.PyCF_ONLY_AST, dont_inherit=True, optimize=optimize)
    finally:
        sys.setrecursionlimit(limit)
    return _bind_entries(code)


_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")  # where statements hold statements


def _statements(tree: ast.AST) -> Iterable[ast.AST]:
    """Every statement of ``tree`` (and except handlers, match cases), without recursion."""
    pending = [tree]
    while pending:
        node = pending.pop()
        yield node
        for field in _BLOCKS:
            block = getattr(node, field, None)
            if type(block) is list:
                pending.extend(block)


def _entry_call() -> ast.Call:
    # ``<mark>.__call__()``: an attribute of a constant (calling a constant would warn).
    return ast.Call(
        func=ast.Attribute(value=ast.Constant(value=_MARK), attr="__call__", ctx=ast.Load()), args=[], keywords=[]
    )


def _located(new: _Node, where: ast.AST) -> _Node:
    """``new`` and every node in it placed at ``where`` (so line numbers stay the learner's)."""
    for node in ast.walk(new):
        for field in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
            setattr(node, field, getattr(where, field, None))
    return new


def _add_entry_statement(function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    body = function.body
    first = body[0]
    has_docstring = (
        isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
    )
    at = 1 if has_docstring else 0
    where = body[at] if at < len(body) else first
    body.insert(at, _located(ast.Expr(value=_entry_call()), where))


def _bind_entries(code: CodeType) -> CodeType:
    """``code`` with each placeholder constant replaced by :data:`ENTRY` (in every code object inside it)."""
    consts = tuple(
        _bind_entries(c) if type(c) is CodeType else ENTRY if type(c) is str and c == _MARK else c
        for c in code.co_consts
    )
    return code.replace(co_consts=consts)


class NotInstrumented(Exception):
    """A function of the submission came out of compilation without its :data:`ENTRY`."""


_CO_OPTIMIZED = 0x1
_COMPREHENSIONS = ("<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>")


def _check_every_function_counts(code: CodeType) -> None:
    """Fail closed: raise :class:`NotInstrumented` unless every function code in ``code`` has an entry.

    Checked on the code objects themselves, not on the tree that made them:
    a step child that compiles again after learner code ran (a later step of
    the same process) must not lose its counters to a patched ``ast``.
    """
    pending = [code]
    while pending:
        current = pending.pop()
        if current.co_flags & _CO_OPTIMIZED and current.co_name not in _COMPREHENSIONS and entry_of(current) is None:
            raise NotInstrumented(f"{current.co_name} (line {current.co_firstlineno}) has no entry counter")
        pending.extend(c for c in current.co_consts if type(c) is CodeType)


def entry_of(code: CodeType) -> Any:
    """The entry (:data:`ENTRY`) compiled into ``code``, if it has one (else ``None``).

    >>> entry_of(compile("def f(): pass", "<doc>", "exec")) is None
    True
    >>> entry_of(compile_instrumented("def f(): pass", "<doc>").co_consts[0]) is ENTRY
    True
    """
    for const in code.co_consts:
        if const is ENTRY:
            return const
    return None


def tool_codes(fn: Any, swapped: dict[int, CodeType] | None = None) -> list[CodeType]:
    """The code objects that run when ``fn`` is called: through partials, methods, ``__wrapped__``, ``__call__``.

    Reads every link with the type's own descriptors, so an attribute the
    submission overrides (a property, ``__getattr__``) runs no learner code
    here. ``swapped``: the code a function had before a spy swapped it (by ``id``).

    >>> import functools
    >>> def f(a, b): return a + b
    >>> [c.co_name for c in tool_codes(functools.partial(f, 1))]
    ['f']
    """
    found: list[CodeType] = []
    pending: list[Any] = [fn]
    seen: set[int] = set()
    while pending and len(seen) < MAX_LINKS:
        obj = pending.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if type(obj) is _FunctionType:
            found.append((swapped or {}).get(id(obj), obj.__code__))
        pending.extend(_links(obj))
    return found


def _links(obj: Any) -> list[Any]:
    """The objects a call of ``obj`` goes on to (read without running learner code)."""
    kind = type(obj)
    if kind is _FunctionType or kind is _LruWrapper:  # functools.wraps and lru_cache keep the function they wrap
        wrapped = _dict_get((_function_dict if kind is _FunctionType else _lru_dict)(obj), "__wrapped__")
        return [] if wrapped is None else [wrapped]
    if kind is _MethodType:
        return [_method_func(obj)]
    if issubclass(kind, functools.partial):
        return [_partial_func(obj)]
    if issubclass(kind, staticmethod):
        return [_static_func(obj)]
    if issubclass(kind, classmethod):
        return [_class_func(obj)]
    # A class runs its __new__ and __init__; any other object its type's __call__.
    names = ("__new__", "__init__") if issubclass(kind, type) else ("__call__",)
    owner = obj if issubclass(kind, type) else kind
    return [found for name in names if (found := _class_attribute(owner, name)) is not None]


def _class_attribute(cls: type, name: str) -> Any:
    for klass in _mro_of(cls):
        if klass is object or klass is type:
            return None
        space = _dict_of(klass)
        if name in space:
            return space[name]
    return None


class WatchRefused(RuntimeError):
    """A code already watched by another :class:`Watch` (one that learner code made, say): not counted twice."""


_COUNTER = [False]  # whether this process has the counting hook (install_counter)
_audit = sys.audit
_CALLS = frozenset({"CALL", "CALL_METHOD", "CALL_FUNCTION"})  # the call of ``<entry>.enter()`` (3.10-3.13)


def install_counter() -> None:
    """Add the audit hook that counts entries of watched codes (once a process; it cannot be removed).

    The step child adds it before its own refusing hook (which refuses any hook
    added after it); elsewhere the first :class:`Watch` adds it.
    """
    if _COUNTER[0]:
        return
    _COUNTER[0] = True
    sys.addaudithook(_make_counter())


def _make_counter() -> Callable[[str, tuple[Any, ...]], None]:
    """The counting hook. Its table (watched code -> the offset of its entry's call, its callback) is its own."""
    watching: dict[CodeType, tuple[int, Callable[[types.FrameType], None]]] = {}
    # (file, first line) -> watched codes: a copy of a watched code (code.replace, refused in a
    # step child but for the grader's own copies) runs the same body and counts as it.
    places: dict[tuple[str, int], list[CodeType]] = {}

    def counter(event: str, args: tuple[Any, ...]) -> None:
        if event == "sys._getframe":
            if watching:
                frame = args[0]
                code = frame.f_code
                found = watching.get(code)
                if found is None:
                    for other in places.get((code.co_filename, code.co_firstlineno), ()):
                        if other.co_code == code.co_code:
                            found = watching.get(other)
                            break
                # Only the entry statement's own call counts: a sys._getframe() elsewhere in the body is no run.
                if found is not None and frame.f_lasti == found[0]:
                    found[1](frame)
        elif event == "agtool.watch":
            code, offset, on_entry = args
            held = watching.get(code)
            if held is not None and held[1] is not on_entry:
                raise WatchRefused(f"{code.co_name} is already watched by another callback")
            watching[code] = (offset, on_entry)
            same = places.setdefault((code.co_filename, code.co_firstlineno), [])
            if code not in same:
                same.append(code)
        elif event == "agtool.unwatch":
            code, on_entry = args
            held = watching.get(code)
            if held is not None and held[1] is on_entry:
                del watching[code]
                place = (code.co_filename, code.co_firstlineno)
                same = [other for other in places.get(place, ()) if other is not code]
                if same:
                    places[place] = same
                else:
                    places.pop(place, None)
        elif event == "agtool.watched":
            codes, on_entry, answer = args
            held_by = [watching.get(code, (0, None))[1] for code in codes]
            answer.append(all(held is on_entry for held in held_by))

    return counter


def entry_call_offset(code: CodeType) -> int | None:
    """The bytecode offset of the call of ``code``'s :data:`ENTRY` (its frame's ``f_lasti`` then), or None.

    >>> code = compile_instrumented("def f():\\n    return 1\\n", "<doc>").co_consts[0]
    >>> isinstance(entry_call_offset(code), int), entry_call_offset(compile("1", "<doc>", "eval"))
    (True, None)
    """
    import dis  # only where a code is watched (a probe), never at the fork server's start

    after_entry = False
    for instruction in dis.get_instructions(code):
        if instruction.opname == "LOAD_CONST" and instruction.argval is ENTRY:
            after_entry = True
        elif after_entry and instruction.opname in _CALLS:
            return instruction.offset
    return None


class Watch:
    """Codes watched for one probe: :meth:`stop` ends it, :meth:`intact` says whether they still count.

    Raises :class:`WatchRefused` when a code is watched already by another callback.
    """

    def __init__(self, codes: list[CodeType], on_entry: Callable[[types.FrameType], None]) -> None:
        install_counter()
        self.codes, self.on_entry = codes, on_entry
        for code in codes:
            _audit("agtool.watch", code, entry_call_offset(code), on_entry)

    def stop(self) -> None:
        for code in self.codes:
            _audit("agtool.unwatch", code, self.on_entry)

    def intact(self) -> bool:
        """Whether these counters still count (each code still watched by this callback)."""
        answer: list[bool] = []
        _audit("agtool.watched", tuple(self.codes), self.on_entry, answer)
        return answer == [True]


def watch(codes: Iterable[CodeType], on_entry: Callable[[types.FrameType], None]) -> Watch:
    """Call ``on_entry(frame)`` whenever one of ``codes`` is entered, until the :class:`Watch` returned stops.

    Codes with no :data:`ENTRY` (not compiled by :func:`compile_instrumented`) are skipped.
    """
    return Watch([code for code in codes if entry_call_offset(code) is not None], on_entry)


# --------------------------------------------------------------------------- code compiled at run time

_ONLY_AST = ast.PyCF_ONLY_AST
# The __future__ features a compile inherits from the code that calls it (as the built-in does).
_FUTURE_FLAGS = functools.reduce(
    lambda a, b: a | b,
    (getattr(__import__("__future__"), name).compiler_flag for name in __import__("__future__").all_feature_names),
)


def runtime_compile(
    source: Any,
    filename: Any,
    mode: str,
    flags: int = 0,
    dont_inherit: bool = False,
    optimize: int = -1,
    *,
    _feature_version: int = -1,
) -> Any:
    """``compile`` as the step child's builtins have it: what it compiles gets an :data:`ENTRY` per function.

    Behaves as the built-in (same arguments, results, errors and inherited
    ``__future__`` features); ``ast.PyCF_ONLY_AST`` returns the tree untouched.
    Code that tools.py (or a library it calls: dataclasses, namedtuple,
    typing) compiles at run time therefore counts as the module's own does.

    >>> code = runtime_compile("def f():\\n    return 2\\n", "<doc>", "exec")
    >>> entry_of(code.co_consts[0]) is not None
    True
    >>> runtime_compile("x + 1", "<doc>", "eval", ast.PyCF_ONLY_AST).__class__.__name__
    'Expression'
    """
    if not dont_inherit:
        flags |= _getframe(1).f_code.co_flags & _FUTURE_FLAGS
    if flags & _ONLY_AST:
        return _compile(source, filename, mode, flags, True, optimize, _feature_version=_feature_version)
    every_node = True  # any source (str, bytes, a buffer, a tree): every node is looked at
    code = _compile_with_entries(source, filename, every_node, mode, flags, optimize, _feature_version)
    _check_every_function_counts(code)
    return code


def runtime_exec(source: Any, globals: Any = None, locals: Any = None, *, closure: Any = None) -> None:
    """``exec`` as the step child's builtins have it: a string is compiled by :func:`runtime_compile`.

    >>> space = {}
    >>> runtime_exec("def f():\\n    return 3\\n", space)
    >>> space["f"](), entry_of(space["f"].__code__) is not None
    (3, True)
    """
    caller = _getframe(1)
    globals, locals = _namespaces(caller, globals, locals)
    if not isinstance(source, CodeType):
        source = runtime_compile(_as_source(source), "<string>", "exec", caller.f_code.co_flags & _FUTURE_FLAGS, True)
    if closure is None:
        return _exec(source, globals, locals)
    return _exec(source, globals, locals, closure=closure)  # type: ignore[call-arg]  # Python 3.11+; mypy checks 3.10


def runtime_eval(source: Any, globals: Any = None, locals: Any = None) -> Any:
    """``eval`` as the step child's builtins have it: a string is compiled by :func:`runtime_compile`.

    >>> f = runtime_eval("lambda: 4")
    >>> f(), entry_of(f.__code__) is not None
    (4, True)
    """
    caller = _getframe(1)
    globals, locals = _namespaces(caller, globals, locals)
    if not isinstance(source, CodeType):
        text = _as_source(source)
        text = text.lstrip(" \t") if isinstance(text, str) else bytes(text).lstrip(b" \t")  # as eval() does
        source = runtime_compile(text, "<string>", "eval", caller.f_code.co_flags & _FUTURE_FLAGS, True)
    return _eval(source, globals, locals)


def _as_source(source: Any) -> Any:
    if isinstance(source, (str, bytes, ast.AST)):
        return source
    if isinstance(source, (bytearray, memoryview)):
        return bytes(source)
    raise TypeError("exec() arg 1 must be a string, bytes or code object")


def _namespaces(caller: Any, globals: Any, locals: Any) -> tuple[Any, Any]:
    """The namespaces the built-in would use: the caller's when none are given, its builtins in new globals."""
    if globals is None:
        return caller.f_globals, (caller.f_locals if locals is None else locals)
    if type(globals) is dict and "__builtins__" not in globals:
        # The built-in adds the builtins of the frame that called it: the caller's (a
        # submission's guarded import), not this module's.
        globals["__builtins__"] = caller.f_builtins
    return globals, (globals if locals is None else locals)


_exec, _eval = exec, eval
RUNTIME_BUILTINS = {"compile": runtime_compile, "exec": runtime_exec, "eval": runtime_eval}
for _name, _function in RUNTIME_BUILTINS.items():
    _function.__name__ = _function.__qualname__ = _name
del _name, _function


def uncounted_tool_message(name: str) -> str:
    """Why a tool whose code carries no :data:`ENTRY` is not graded (a probe fails closed with this).

    >>> uncounted_tool_message("stock_lookup").startswith("TOOLS['stock_lookup'] runs code")
    True
    """
    return (
        f"TOOLS[{name!r}] runs code that carries no run counter (it was not compiled from tools.py "
        "by the grader), so the grader cannot tell whether the tool ran; define each tool with def "
        "(or lambda) in tools.py"
    )
