"""Entry counters compiled into the learner's code: a run of a tool's code counts, whichever function object runs it.

The spies of :mod:`grader.engine.probes` sit where the grader can swap a
function (``TOOLS[name]["fn"]``, the module's own name, a plain function's
``__code__``). Code can run a tool past all three: a fresh function built
from a code object saved at import (``types.FunctionType(code, globals())``),
a closure, a ``functools.partial``, a bound method, a callable object, a
copy. Every route runs the tool's *code object*, so the submission is
compiled (:func:`compile_instrumented`) with one statement at the top of
every function body (after its docstring; lambdas too) that calls an
:class:`Entry`. The entry is not a name of the module: it is put into the
code's own constants after compilation, where no assignment of the
submission reaches it. A probe watches the entries of the code objects
behind a tool (:func:`tool_codes`, :func:`watch`); entering a watched code
then calls the probe back with the frame that entered it.

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


# The watched entries and what each calls: kept here, not on the entries, so
# that an entry found in a code's constants has no state to switch off.
_WATCHING: dict[Entry, Callable[[types.FrameType], None]] = {}


class Entry:
    """The counter at the top of one instrumented code object: calls back when watched (:func:`watch`).

    >>> entry = Entry()
    >>> entry.enter() is None   # not watched: nothing happens
    True
    """

    __slots__ = ()

    def enter(self) -> None:
        on_entry = _WATCHING.get(self)
        if on_entry is not None:
            on_entry(_getframe(1))


# The counters as the grader made them, to tell when learner code changed them
# (a patched Entry.enter, its code, or the table it reads): see Watch.intact.
_ENTRY_CLASS = tuple(Entry.__dict__.items())
_ENTER = Entry.__dict__["enter"]
_ENTER_CODE = _ENTER.__code__
_ENTER_GLOBALS = _ENTER.__globals__


def compile_instrumented(source: bytes | str, filename: str) -> CodeType:
    """The module code of ``source`` with an :class:`Entry` at the top of every function body.

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
                node.body = _located(ast.BoolOp(op=ast.Or(), values=[_entry_call(), node.body]), node.body)
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
    # ``<mark>.enter()``: an attribute of a constant (calling a constant would warn).
    return ast.Call(
        func=ast.Attribute(value=ast.Constant(value=_MARK), attr="enter", ctx=ast.Load()), args=[], keywords=[]
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
    """``code`` with each placeholder constant replaced by a new :class:`Entry` (one per code object)."""
    consts = tuple(
        _bind_entries(c) if type(c) is CodeType else Entry() if type(c) is str and c == _MARK else c
        for c in code.co_consts
    )
    return code.replace(co_consts=consts)


class NotInstrumented(Exception):
    """A function of the submission came out of compilation without its :class:`Entry`."""


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


def entry_of(code: CodeType) -> Entry | None:
    """The :class:`Entry` compiled into ``code``, if it has one.

    >>> entry_of(compile("def f(): pass", "<doc>", "exec")) is None
    True
    """
    for const in code.co_consts:
        if type(const) is Entry:
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


class Watch:
    """Entries watched for one probe: :meth:`stop` ends it, :meth:`intact` says whether they still count."""

    def __init__(self, entries: list[Entry], on_entry: Callable[[types.FrameType], None]) -> None:
        self.entries, self.on_entry = entries, on_entry
        for entry in entries:
            _WATCHING[entry] = on_entry

    def stop(self) -> None:
        for entry in self.entries:
            if _WATCHING.get(entry) is self.on_entry:
                del _WATCHING[entry]

    def intact(self) -> bool:
        """Whether learner code left these counters as they were made (a changed one counts no more runs)."""
        return (
            tuple(Entry.__dict__.items()) == _ENTRY_CLASS
            and _ENTER.__code__ is _ENTER_CODE
            and _ENTER.__globals__ is _ENTER_GLOBALS
            and _ENTER_GLOBALS.get("_WATCHING") is _WATCHING
            and _ENTER_GLOBALS.get("_getframe") is _getframe_at_import
            and all(_WATCHING.get(entry) is self.on_entry for entry in self.entries)
        )


_getframe_at_import = _getframe


def watch(codes: Iterable[CodeType], on_entry: Callable[[types.FrameType], None]) -> Watch:
    """Call ``on_entry(frame)`` whenever one of ``codes`` is entered, until the :class:`Watch` returned stops.

    Codes with no :class:`Entry` (not compiled by :func:`compile_instrumented`) are skipped.
    """
    return Watch([entry for entry in map(entry_of, codes) if entry is not None], on_entry)


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
    """``compile`` as the step child's builtins have it: what it compiles gets an :class:`Entry` per function.

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
    """Why a tool whose code carries no :class:`Entry` is not graded (a probe fails closed with this).

    >>> uncounted_tool_message("stock_lookup").startswith("TOOLS['stock_lookup'] runs code")
    True
    """
    return (
        f"TOOLS[{name!r}] runs code that carries no run counter (it was not compiled from tools.py "
        "by the grader), so the grader cannot tell whether the tool ran; define each tool with def "
        "(or lambda) in tools.py"
    )
