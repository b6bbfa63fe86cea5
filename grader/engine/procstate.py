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
from operator import is_
from typing import Callable


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
    MODULES = ("builtins", "os", "os.path", "posixpath", "json", "json.encoder", "json.decoder", "time",
               "signal", "threading", "inspect", "typing", "functools", "operator", "itertools",
               "collections", "copy", "re", "importlib", "importlib.util", "types", "dataclasses", "enum",
               "contextlib", "warnings", "io", "abc", "resource", "tempfile", "shutil", "pathlib",
               "traceback", "weakref", "random", "math", "string", "base64", "select", "selectors",
               "subprocess", "socket", "gc", "langgraph.graph", "langgraph.graph.state",
               "langgraph.pregel", "langchain_core.runnables.config", "typing_extensions", "pydantic")

    def __init__(self, *functions: Callable):
        import tempfile
        import warnings

        self._functions = functions  # the probe function: its module's globals count too
        self._filters = list(warnings.filters)
        self._tempdir = tempfile.tempdir
        self._environ, self._path = dict(os.environ), list(sys.path)
        self._taken = self._take()
        # The namespaces' keys and values themselves, held here: compared by
        # identity in C (``operator.is_``), never by ``==`` (a value's ``__eq__``
        # is the module's to write). An id() per value cost 0.3 ms a look.
        self._spaces = [(space, *_entries(space)) for space in self._namespaces()]

    def _namespaces(self) -> "list[dict]":
        modules = [sys.modules.get(name) for name in self.MODULES]
        return [vars(m) for m in modules if m is not None] + [f.__globals__ for f in self._functions]

    def _same_namespaces(self) -> bool:
        spaces = self._namespaces()
        if len(spaces) != len(self._spaces):
            return False
        for space, (held, keys, values) in zip(spaces, self._spaces):
            if "_" in space:
                space = dict(zip(*_entries(space)))
            elif space is not held:
                return False
            if len(space) != len(keys) or not all(map(is_, space, keys)) or not all(map(is_, space.values(), values)):
                return False
        return True

    def _take(self) -> tuple:
        modules = [sys.modules.get(name) for name in self.MODULES]
        umask = os.umask(0o077)
        os.umask(umask)
        # Identities only of objects something holds (a temporary's id can come back on another).
        hooks = (sys.gettrace(), sys.getprofile(), sys.excepthook, sys.displayhook, sys.unraisablehook,
                 sys.breakpointhook, sys.modules, sys.path_importer_cache, *sys.meta_path, *sys.path_hooks)
        return (
            tuple(map(id, modules)), sys.getrecursionlimit(), sys.getswitchinterval(),
            tuple(map(id, hooks)), umask,
            tuple(map(id, (signal.getsignal(s) for s in _SIGNALS))),
            tuple(resource.getrlimit(kind) for kind in _RLIMITS),
        )

    def unchanged(self) -> bool:
        """True when nothing runs beside this process's one thread and nothing listed changed."""
        try:
            if len(os.listdir("/proc/self/task")) != 1 or _has_children():
                return False
            return self.same_interpreter()
        except BaseException:  # noqa: BLE001 - a module that broke what we look at: a new process
            return False

    def same_interpreter(self) -> bool:
        """True when the signal handlers, limits, umask, hooks, builtins and modules listed are as taken."""
        try:
            return self._take() == self._taken and self._same_namespaces()
        except BaseException:  # noqa: BLE001 - a module that broke what we look at
            return False

    def restore(self) -> None:
        """Put back what a probe may change and the next must not see: environment, import path, filters."""
        import tempfile
        import warnings

        warnings.filters[:] = self._filters
        tempfile.tempdir = self._tempdir
        if dict(os.environ) != self._environ:
            os.environ.clear()
            os.environ.update(self._environ)
        sys.path[:] = self._path


_SIGNALS = tuple(sorted(signal.valid_signals()))
# Not RLIMIT_CPU: its soft limit moves with each step (_step_cpu_budget).
_RLIMITS = tuple(getattr(resource, name) for name in (
    "RLIMIT_AS", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_CORE", "RLIMIT_NPROC", "RLIMIT_NICE",
    "RLIMIT_STACK", "RLIMIT_DATA", "RLIMIT_MEMLOCK") if hasattr(resource, name))


def _entries(space: dict) -> "tuple[list, list]":
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
