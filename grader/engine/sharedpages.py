"""Keep step children from copying the fork server's memory where a library would for no need.

A step child shares the fork server's pages until it writes to one; then the
kernel copies that page (a page fault, some microseconds on a virtual
machine). Reading an object in Python writes its reference count, so code
that merely *walks* many objects copies every page they sit on. Measured in
a step child (page faults of one ``handle()`` of the solution, its first
LangGraph run): 2,379, of which 840 came from ``inspect`` copying
``sys.modules`` (1,500-odd modules) each time it works out the signature of a
built-in function from its text signature, which LangGraph asks for the
``operator.add`` reducer of every ``State`` it compiles.

:func:`memoize_builtin_signatures` makes that answer computed once, in the
fork server, before it forks: ``inspect._signature_fromstr`` keeps its
results by what they depend on (the text signature, the owner's module
name, whether and to what the function is bound). ``Signature`` objects are
immutable, so handing out the same one is safe; a module that tampered with
the cache could only change what LangGraph sees in its own step.

Example::

    >>> import inspect, operator
    >>> memoize_builtin_signatures()
    True
    >>> str(inspect.signature(operator.add))
    '(a, b, /)'
    >>> inspect.signature(operator.add) is inspect.signature(operator.add)
    True
"""

from __future__ import annotations

import inspect
import operator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    # inspect._signature_fromstr(cls, obj, s, skip_bound_arg=True): private, so typeshed does not list it.
    _FromStr = Callable[[type[inspect.Signature], object, str, bool], inspect.Signature]

# Built-ins a ``State`` reducer is commonly made of: their signatures are worked out in the fork server.
COMMON_REDUCERS = (operator.add, operator.iadd, operator.concat, operator.or_)
MAX_REMEMBERED = 512


def memoize_builtin_signatures() -> bool:
    """Make ``inspect.signature`` of built-ins compute each answer once (idempotent); True when in place."""
    original: _FromStr | None = getattr(inspect, "_signature_fromstr", None)
    if original is None:  # another Python: leave it alone
        return False
    if getattr(original, "_agtool_memo", False):
        return True
    remembered: dict[tuple[Any, ...], inspect.Signature] = {}

    def _signature_fromstr(
        cls: type[inspect.Signature], obj: object, s: str, skip_bound_arg: bool = True
    ) -> inspect.Signature:
        bound_to = getattr(obj, "__self__", None)
        try:
            key = (
                cls,
                s,
                skip_bound_arg,
                getattr(obj, "__module__", None),
                bound_to is not None,
                inspect.ismodule(bound_to),
            )
            hit = remembered.get(key)
        except TypeError:  # something unhashable in the key: compute as Python would
            return original(cls, obj, s, skip_bound_arg)
        if hit is None:
            hit = original(cls, obj, s, skip_bound_arg)
            if len(remembered) < MAX_REMEMBERED:
                remembered[key] = hit
        return hit

    _signature_fromstr._agtool_memo = True  # type: ignore[attr-defined]  # a mark on the function: memoized once
    inspect._signature_fromstr = _signature_fromstr  # type: ignore[attr-defined]  # private: typeshed lists it not
    for fn in COMMON_REDUCERS:
        try:
            inspect.signature(fn)
        except (TypeError, ValueError):
            pass
    return True
