"""What one step may leave behind in the process that runs the next one.

A step child may run several steps of one submission in turn
(:func:`grader.engine.child.run_steps`), and a quick import's fresh probes
run in it on new imports. :class:`ProcessState` is taken before any learner
code runs; after each step (and each such probe) the step child asks
:meth:`ProcessState.unchanged` and, if anything differs, ends so that a new
step child runs what comes after. Like the step child, this imports nothing
but the standard library.

Example::

    >>> state = ProcessState()
    >>> state.restore()  # environment, import path, warning filters, tempfile's folder
    >>> state.same_interpreter()
    True
"""

from __future__ import annotations

import os
import resource
import signal
import sys
from collections.abc import Callable
from operator import is_
from typing import Any, cast

from grader.engine.wire import JsonDict


class ProcessState:
    """What a step could leave behind in its process, taken before any learner code ran.

    :meth:`unchanged` says whether the next step may run in this process:
    no other thread, no child process, and the same signal handlers, limits,
    umask, interpreter hooks, builtins and standard modules (each value's
    identity, so a patched ``json.dumps`` counts). What a step may change
    and the next step gets back is put back by :meth:`restore` (environment,
    import path, warning filters, ``tempfile``'s folder). Cheap: the process it runs in already
    copied these pages once.

    >>> state = ProcessState()
    >>> state.same_interpreter()
    True
    >>> import json; saved = json.dumps; json.dumps = repr
    >>> state.same_interpreter()
    False
    >>> json.dumps = saved; state.same_interpreter()
    True
    """

    # Modules whose functions the grader's reporting, the probes or LangGraph use.
    MODULES = (
        "builtins",
        "os",
        "os.path",
        "posixpath",
        "json",
        "json.encoder",
        "json.decoder",
        "time",
        "signal",
        "threading",
        "inspect",
        "typing",
        "functools",
        "operator",
        "itertools",
        "collections",
        "copy",
        "re",
        "importlib",
        "importlib.util",
        "types",
        "dataclasses",
        "enum",
        "contextlib",
        "warnings",
        "io",
        "abc",
        "resource",
        "tempfile",
        "shutil",
        "pathlib",
        "traceback",
        "weakref",
        "random",
        "math",
        "string",
        "base64",
        "select",
        "selectors",
        "subprocess",
        "socket",
        "gc",
        "langgraph.graph",
        "langgraph.graph.state",
        "langgraph.pregel",
        "langchain_core.runnables.config",
        "typing_extensions",
        "pydantic",
    )

    def __init__(self, *functions: Callable[..., object]) -> None:
        import tempfile
        import warnings

        self._functions = functions  # the probe function: its module's globals count too
        self._filters = list(warnings.filters)
        self._tempdir = tempfile.tempdir
        self._environ, self._path = dict(os.environ), list(sys.path)
        self._taken = self._take()
        # The namespaces' keys and values themselves, held here and compared by
        # identity (``operator.is_``), never by ``==`` (a value's ``__eq__`` is the
        # module's to write); and each dict's version tag (PEP 509), so that a
        # namespace nobody wrote to is not walked at all: walking some 3,600
        # entries cost a step child 0.7 ms a look, 19 looks a submission.
        self._spaces: list[list[Any]] = [[space, *_entries(space), dict_version(space)] for space in self._namespaces()]

    def _namespaces(self) -> list[JsonDict]:
        modules = [sys.modules.get(name) for name in self.MODULES]
        return [vars(m) for m in modules if m is not None] + [f.__globals__ for f in self._functions]

    def _same_namespaces(self) -> bool:
        spaces = self._namespaces()
        if len(spaces) != len(self._spaces):
            return False
        for space, entry in zip(spaces, self._spaces):
            held, keys, values, version = entry
            if space is held and version is not None and dict_version(space) == version:
                continue  # not written to since: the same keys and values
            if "_" not in space and space is not held:
                return False  # another dict in the module's place
            now = dict(zip(*_entries(space))) if "_" in space else space
            if len(now) != len(keys) or not all(map(is_, now, keys)) or not all(map(is_, now.values(), values)):
                return False
            if space is held:  # written back as it was (e.g. restore()): its new version stands for that
                entry[3] = dict_version(space)
        return True

    def _take(self) -> tuple[Any, ...]:
        modules = [sys.modules.get(name) for name in self.MODULES]
        umask = os.umask(0o077)
        os.umask(umask)
        # Identities only of objects something holds (a temporary's id can come back on another).
        hooks = (
            sys.gettrace(),
            sys.getprofile(),
            sys.excepthook,
            sys.displayhook,
            sys.unraisablehook,
            sys.breakpointhook,
            sys.modules,
            sys.path_importer_cache,
            *sys.meta_path,
            *sys.path_hooks,
        )
        return (
            tuple(map(id, modules)),
            sys.getrecursionlimit(),
            sys.getswitchinterval(),
            tuple(map(id, hooks)),
            umask,
            tuple(map(id, map(_getsignal, _SIGNALS))),
            tuple(resource.getrlimit(kind) for kind in _RLIMITS),
        )

    def unchanged(self) -> bool:
        """True when nothing runs beside this process's one thread and nothing listed changed."""
        try:
            if len(os.listdir("/proc/self/task")) != 1 or _has_children():
                return False
            return self.same_interpreter()
        except BaseException:
            return False

    def same_interpreter(self) -> bool:
        """True when the signal handlers, limits, umask, hooks, builtins and modules listed are as taken."""
        try:
            return self._take() == self._taken and self._same_namespaces()
        except BaseException:
            return False

    def restore(self) -> None:
        """Put back what a probe may change and the next must not see: environment, import path, filters."""
        import tempfile
        import warnings

        # typeshed declares warnings.filters a Sequence; it is the module's list, changed in place here
        cast(list[Any], warnings.filters)[:] = self._filters
        tempfile.tempdir = self._tempdir
        if dict(os.environ) != self._environ:
            os.environ.clear()
            os.environ.update(self._environ)
        sys.path[:] = self._path


_SIGNALS = tuple(sorted(signal.valid_signals()))
# The handler as installed, without signal.getsignal's conversion to an enum (a third of a look's cost).
_getsignal = getattr(__import__("_signal"), "getsignal", signal.getsignal)


def _version_reader() -> Callable[[JsonDict], int | None]:
    """How to read a dict's version tag (PEP 509), or a reader that always says ``None``.

    CPython bumps a dict's ``ma_version_tag`` at every write (3.6 to 3.13 at
    least); it is not exposed to Python, so it is read from the object's
    memory, only where a self-test shows that the field moves with writes and
    with nothing else (not a debug or free-threaded build, whose headers differ).

    >>> read = _version_reader(); d = {}; before = read(d); d["x"] = 1
    >>> before is None or read(d) != before
    True
    """

    def unknown(space: JsonDict) -> None:
        return None

    try:
        import ctypes
        import sysconfig

        if (
            sys.implementation.name != "cpython"
            or hasattr(sys, "gettotalrefcount")
            or sysconfig.get_config_var("Py_GIL_DISABLED")
        ):
            return unknown
        at = ctypes.c_uint64.from_address
        offset = 3 * ctypes.sizeof(ctypes.c_ssize_t)  # after ob_refcnt, ob_type and ma_used

        def read(space: JsonDict) -> int:
            return at(id(space) + offset).value

        probe: JsonDict = {"a": 1}
        first = read(probe)
        held = [probe, probe, probe]  # its reference count moves: the tag must not
        still = read(probe)
        probe["a"] = 2
        written = read(probe)
        probe["b"] = 3
        added = read(probe)
        del held
        if first == still and len({still, written, added}) == 3:
            return read
    except Exception:
        pass
    return unknown


dict_version = _version_reader()
# Not RLIMIT_CPU: its soft limit moves with each step (_step_cpu_budget).
_RLIMITS = tuple(
    getattr(resource, name)
    for name in (
        "RLIMIT_AS",
        "RLIMIT_FSIZE",
        "RLIMIT_NOFILE",
        "RLIMIT_CORE",
        "RLIMIT_NPROC",
        "RLIMIT_NICE",
        "RLIMIT_STACK",
        "RLIMIT_DATA",
        "RLIMIT_MEMLOCK",
    )
    if hasattr(resource, name)
)


def _entries(space: JsonDict) -> tuple[list[Any], list[Any]]:
    """The keys and values of a namespace, but ``_`` (the interactive prompt's last value: not a change).

    >>> _entries({"_": 1, "a": None})
    (['a'], [None])
    """
    if "_" in space:
        space = {k: v for k, v in space.items() if k != "_"}
    return list(space), list(space.values())


def _has_children() -> bool:
    """Whether this process has a child that is still running (ended ones are reaped)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True
