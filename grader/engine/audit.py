"""Run-time code in a step child is counted or refused.

The grader knows a tool ran because every function of the submission is
compiled with an entry counter (:mod:`grader.engine.instrument`). Code the
submission makes while it runs could run a tool's body without one: tools
defined through ``exec(compile(...))``, or a copy of a tool's code object
with the counter swapped for a do-nothing object. :func:`install`, called
in the step child before the learner's import, closes both:

* ``compile``, ``exec`` and ``eval`` in ``builtins`` become the
  instrumenting :func:`~grader.engine.instrument.runtime_compile` and its
  kin: what any code compiles at run time (the submission, or dataclasses,
  namedtuple and typing on its behalf) counts like the module's own code;
* an audit hook (:func:`sys.addaudithook`, which nothing can remove)
  refuses the three ways around them, with a :class:`CodeRefused` that
  says what was refused, why, and what to write instead:

  - ``compile``: a compile not called by the grader's instrumenting compile
    (a saved original ``compile``/``exec``/``eval``);
  - ``code.__new__``: a code object built by hand (``types.CodeType(...)``,
    ``code.replace(...)``), but for the grader's own and ``types.coroutine``
    (which changes a flag only);
  - ``marshal.loads``: code loaded from bytes, but for the import system
    reading a compiled module of the interpreter's, the libraries' or the
    grader's own folders.

Unless ``$AGTOOL_CODE_WALLS=0`` (only for the tests that show why it is on), the
same hook holds the walls learner code could otherwise climb:

  - ``import`` of the grader's packages (:mod:`grader.engine.import_wall`,
    whose finder comes first on ``sys.meta_path``, says why) and ``open`` of
    any file under their folders: no spelling of an import, and no loader
    made by hand, brings a copy of the grader's code into the step;
  - ``sys.settrace``, ``sys.setprofile`` (and so ``threading.settrace``, which
    calls it in each new thread) and ``sys.monitoring`` callbacks: a tracer
    could jump past the entry counter (``frame.f_lineno``), hide a run or
    fake one; learner code sets none, so nothing can steer a count;
  - ``sys.addaudithook``: no hook of the submission's sees the grader's events
    (the counting hook of :func:`grader.engine.instrument.install_counter` is
    added just before this one);
  - ``gc.get_objects``, ``gc.get_referrers``, ``gc.get_referents``: the
    grader's objects (its hooks, the probe's tally) are not found by a walk.

Every function code a submission can reach is then either counted (compiled
by the grader) or a library's, so ``types.FunctionType(code, ...)`` and
``fn.__code__ = code`` need no rule of their own: over a tool's code they
run its counter. A tool whose code carries no counter at all fails closed
(:func:`grader.engine.instrument.uncounted_tool_message`).

Example (what the step child does; the hook stays for the life of the process)::

    >>> install(scratch="/tmp/agtool-step-x")  # doctest: +SKIP
"""

from __future__ import annotations

import _frozen_importlib_external as _external
import builtins
import errno
import os
import sys
import types
from typing import TYPE_CHECKING, Any

from grader.engine import import_wall, instrument

if TYPE_CHECKING:
    from collections.abc import Callable

_getframe = sys._getframe
_realpath = os.path.realpath
_sep = os.sep


class CodeRefused(RuntimeError):
    """Code a submission made at run time that the grader cannot count runs of.

    >>> str(CodeRefused(_WHY["code.__new__"])).startswith("refused: a code object")
    True
    """


_INSTEAD = (
    "The grader counts how often each tool really runs through a counter it compiles into every function of tools.py; "
)
_WHY = {
    "compile": (
        "refused: code compiled at run time around the grader's compile() (a saved copy of the "
        "built-in compile, exec or eval). " + _INSTEAD + "code compiled around it carries none. "
        "Call compile(), exec() and eval() by their names, or write the function with def or lambda "
        "in tools.py."
    ),
    "code.__new__": (
        "refused: a code object built at run time (types.CodeType(...) or code.replace(...)). "
        + _INSTEAD
        + "a rebuilt code object could run a tool without it. Write the function "
        "with def or lambda in tools.py; to copy or wrap a function use a closure, "
        "functools.wraps or functools.partial."
    ),
    "marshal": (
        "refused: code loaded with marshal at run time (only the import system loads compiled "
        "modules, from the interpreter's and the libraries' own folders). "
        + _INSTEAD
        + "code loaded from bytes carries none. Import the module, or write the function with def "
        "in tools.py."
    ),
}

_TRACER_REFUSED = (
    "refused: a trace or profile function (sys.settrace, sys.setprofile, threading.settrace, "
    "sys.monitoring callbacks) in tools.py. " + _INSTEAD + "a tracer can jump past it (frame.f_lineno) "
    "or fake it. Remove the tracer; to time or log a call, wrap the function instead."
)

_installed: list[str] = []  # the scratch folder, once installed (one hook per process)
_code_walls = [True]  # set by the fork server from $AGTOOL_CODE_WALLS (set_code_walls)


def set_code_walls(enabled: bool) -> None:
    """(In the fork server.) Whether step children hold the import wall and refuse trace and audit hooks.

    >>> set_code_walls(True); code_walls()
    True
    """
    _code_walls[0] = bool(enabled)


def code_walls() -> bool:
    """Whether :func:`install` adds the walls of ``$AGTOOL_CODE_WALLS`` (on unless the fork server said off)."""
    return _code_walls[0]


def install(scratch: str, builders: tuple[types.CodeType, ...] = ()) -> None:
    """Instrument ``compile``/``exec``/``eval`` in ``builtins`` and add the refusing audit hook (once a process).

    ``scratch`` is the step's folder: compiled modules under it (the
    submission may write files there) are never trusted. ``builders``: the
    codes of the grader's own functions that may build code objects (they
    keep every entry), e.g. ``grader.engine.child.with_filename``'s.
    With :func:`code_walls`, the import wall is put first on ``sys.meta_path``
    and the hook refuses what the module docstring lists.
    """
    if _installed:
        return
    _installed.append(scratch)
    for name, function in instrument.RUNTIME_BUILTINS.items():
        setattr(builtins, name, function)
    instrument.install_counter()  # before the hook below, which refuses any hook added after it
    walls = code_walls()
    if walls:
        import_wall.install()
    trusted = _trusted_roots(scratch)
    allowed_compile = frozenset({instrument._compile_with_entries.__code__, instrument.runtime_compile.__code__})
    allowed_new = frozenset({instrument._bind_entries.__code__, types.coroutine.__code__, *builders})
    loaders = (_external.SourceFileLoader, _external.SourcelessFileLoader)
    get_codes = frozenset({_external.SourceLoader.get_code.__code__, _external.SourcelessFileLoader.get_code.__code__})
    sys.addaudithook(
        _make_hook(
            allowed_compile,
            allowed_new,
            _external._compile_bytecode.__code__,  # type: ignore[attr-defined]  # private: typeshed lists it not
            get_codes,
            loaders,
            trusted,
            _realpath(scratch) + _sep,
            _grader_roots() if walls else (),
        )
    )


def _grader_roots() -> tuple[str, ...]:
    """The folders of :data:`grader.engine.import_wall.FORBIDDEN` (real paths, ending in a separator).

    >>> any(root.endswith(os.sep + "grader" + os.sep) for root in _grader_roots())
    True
    """
    grader_folder = os.path.dirname(os.path.dirname(os.path.abspath(instrument.__file__)))
    folders = [grader_folder, os.path.join(os.path.dirname(grader_folder), "solutions")]
    for name in import_wall.FORBIDDEN:
        module = sys.modules.get(name)
        for folder in getattr(module, "__path__", None) or ():
            folders.append(folder)
    return tuple(dict.fromkeys(_realpath(folder).rstrip(_sep) + _sep for folder in folders))


def _trusted_roots(scratch: str) -> tuple[str, ...]:
    """The folders compiled modules may be loaded from: the import path and the grader's checkout, not scratch."""
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(instrument.__file__))))
    roots = []
    for folder in [*sys.path, sys.prefix, sys.base_prefix, here]:
        if isinstance(folder, str) and folder and os.path.isabs(folder):
            real = _realpath(folder)
            if not (real + _sep).startswith(_realpath(scratch) + _sep):
                roots.append(real.rstrip(_sep) + _sep)
    return tuple(dict.fromkeys(roots))


_EVENTS = frozenset({"compile", "code.__new__", "marshal.loads", "marshal.load", "object.__setattr__"})
# Refused only with the code walls (see set_code_walls).
_TRACERS = frozenset(
    {
        "sys.settrace",
        "sys.setprofile",
        "sys._settraceallthreads",
        "sys._setprofileallthreads",
        "sys.monitoring.register_callback",
    }
)
_WALL_EVENTS = (
    frozenset(
        {"import", "open", "os.link", "sys.addaudithook", "gc.get_objects", "gc.get_referrers", "gc.get_referents"}
    )
    | _TRACERS
)
_OWN_ATTRIBUTES = frozenset({"__code__", "__defaults__", "__kwdefaults__"})


def _make_hook(
    allowed_compile: frozenset[types.CodeType],
    allowed_new: frozenset[types.CodeType],
    compile_bytecode: types.CodeType,
    get_codes: frozenset[types.CodeType],
    loaders: tuple[type, ...],
    trusted: tuple[str, ...],
    scratch: str,
    grader_roots: tuple[str, ...] = (),
) -> Callable[[str, tuple[Any, ...]], None]:
    """The audit hook; what it decides with is held in its defaults (immutable), which it refuses to have changed.

    ``grader_roots``: the grader's folders, whose files no learner code may
    open (empty: the code walls are off, and so are the refusals of ``_WALL_EVENTS``).
    """
    events = _EVENTS | _WALL_EVENTS if grader_roots else _EVENTS

    def hook(
        event: str,
        args: tuple[Any, ...],
        _events: frozenset[str] = events,
        _roots: tuple[str, ...] = grader_roots,
        _forbidden: frozenset[str] = frozenset(import_wall.FORBIDDEN),
        _import_refused: str = import_wall.refused_message("{}"),
        _fspath: Callable[[Any], Any] = os.fspath,
        _fsdecode: Callable[[Any], str] = os.fsdecode,
        _permission: type[PermissionError] = PermissionError,
        _import_error: type[ImportError] = ImportError,
        _eacces: int = errno.EACCES,
        _tracers: frozenset[str] = _TRACERS,
        _tracer_refused: str = _TRACER_REFUSED,
        _allowed_compile: frozenset[types.CodeType] = allowed_compile,
        _allowed_new: frozenset[types.CodeType] = allowed_new,
        _compile_bytecode: types.CodeType = compile_bytecode,
        _get_codes: frozenset[types.CodeType] = get_codes,
        _loaders: tuple[type, ...] = loaders,
        _trusted: tuple[str, ...] = trusted,
        _scratch: str = scratch,
        _why: tuple[tuple[str, str], ...] = tuple(_WHY.items()),
        _getframe: Callable[[int], types.FrameType] = _getframe,
        _refused: type[CodeRefused] = CodeRefused,
        _own: frozenset[str] = _OWN_ATTRIBUTES,
        _type: Callable[[object], type] = type,
        _str: type[str] = str,
        _realpath: Callable[[str], str] = _realpath,
        _dict: type[dict[str, str]] = dict,
    ) -> None:
        if event not in _events:
            return
        if event == "open" or event == "os.link":
            path = args[0]
            if _type(path) is int or path is None:
                return  # an fd already open: nothing of the grader's is (the step child closed every other)
            real = _realpath(_fsdecode(_fspath(path)))
            if any((real + "/").startswith(root) for root in _roots):
                raise _permission(_eacces, "refused: the grader's own files are not the submission's to read", path)
            return
        if event == "import":
            name = args[0]
            if _type(name) is _str and name.partition(".")[0] in _forbidden:
                raise _import_error(_import_refused.replace("'{}'", repr(name)), name=name)
            return
        if event in _tracers:
            raise _refused(_tracer_refused)
        if event == "sys.addaudithook":
            raise _refused("refused: an audit hook of the submission's would see the grader's own events")
        if event[:3] == "gc.":
            raise _refused(
                "refused: walking the garbage collector's objects reaches the grader's own; "
                "keep references to your own objects instead"
            )
        if event == "object.__setattr__":
            if args[0] is hook and args[1] in _own:  # what the hook decides with is not the submission's to change
                raise _refused("refused: the grader's audit hook is not the submission's to change")
            return
        why = _dict(_why)
        caller = _getframe(1)
        if event == "compile":
            if caller.f_code not in _allowed_compile:
                raise _refused(why["compile"])
        elif event == "code.__new__":
            if caller.f_code not in _allowed_new:
                raise _refused(why["code.__new__"])
        elif not _import_system_reads(
            caller, _compile_bytecode, _get_codes, _loaders, _trusted, _scratch, _type, _str, _realpath
        ):
            raise _refused(why["marshal"])

    return hook


def _import_system_reads(
    caller: types.FrameType,
    compile_bytecode: types.CodeType,
    get_codes: frozenset[types.CodeType],
    loaders: tuple[type, ...],
    trusted: tuple[str, ...],
    scratch: str,
    _type: Callable[[object], type],
    _str: type[str],
    _realpath: Callable[[str], str],
) -> bool:
    """The frame that called ``marshal.loads`` is the import system reading a compiled module from a trusted folder."""
    if caller.f_code is not compile_bytecode:
        return False
    reader = caller.f_back
    if reader is None or reader.f_code not in get_codes:
        return False
    loader = reader.f_locals.get("self")
    if _type(loader) not in loaders:  # a subclass could read its bytes from anywhere
        return False
    path: Any = caller.f_locals.get("bytecode_path")  # the loader's local: exactly a str, checked below
    if _type(path) is not _str:
        return False
    real = _realpath(path)
    return not real.startswith(scratch) and any(real.startswith(root) for root in trusted)
