"""Type-strict encoding of values for the trip between the step child and the grading process.

Learner code runs in the step child; the grading process only ever sees
JSON. The encoding keeps apart everything Python's ``==`` would blur, so a
judge comparing an observation with an expected value cannot be fooled:

* exact ``str``/``int``/``bool``/``None``/finite ``float`` travel as JSON natives
  (JSON keeps ``true`` and ``1`` apart);
* exact ``list`` stays a list; ``tuple``, ``set``/``frozenset``, dicts with a
  non-``str`` key (or a key starting with ``$``) become tagged records;
* type objects become ``{"$class": "builtins.int"}``;
* anything else (a ``str`` subclass, an object whose ``__eq__`` is always true,
  a numpy integer...) becomes ``{"$type": <qualname>, "$repr": <capped repr>}``,
  which never equals a plain expected value.

Depth, length and the total number of nodes are bounded, and a container that
contains itself is cut, so encoding never hangs. :func:`decode` turns the
tagged forms the *grader* writes (case values such as the exploding argument)
back into Python objects in the step child.

Example::

    >>> encode((1, True, "a"))
    {'$tuple': [1, True, 'a']}
    >>> class Sneaky(str): pass
    >>> encode(Sneaky("x"))["$type"]
    'Sneaky'
    >>> strict_equal(encode(1), encode(True))
    False
"""

from __future__ import annotations

import builtins
import importlib.util
import math
from types import ModuleType
from typing import Any

from grader.engine.wire import JsonDict

MAX_STR = 4000  # longer strings arrive tagged (and so never equal a plain value)
MAX_ITEMS = 200  # list/dict items kept; the rest is summarised
MAX_DEPTH = 24
MAX_NODES = 20000  # total values encoded in one call
MAX_REPR = 300

TAGS = ("$tuple", "$dict", "$set", "$class", "$type", "$float", "$cut", "$more", "$case")

_SAFE_CLASSES = {
    "builtins.int": int,
    "builtins.str": str,
    "builtins.float": float,
    "builtins.bool": bool,
    "builtins.list": list,
    "builtins.dict": dict,
    "builtins.tuple": tuple,
    "builtins.set": set,
    "builtins.frozenset": frozenset,
    "builtins.NoneType": type(None),
}


def private_module_copy(name: str) -> ModuleType:
    """A new copy of the standard-library module ``name``, executed now and registered nowhere.

    The step child runs learner code in its own process, and that code
    may patch shared modules (``json.loads = ...``, ``sys.modules["json"] =
    ...``, ``builtins.isinstance = ...``). Objects built from this copy while
    the grader is imported (before any learner code) look up neither the
    shared module's attributes nor the shared ``builtins`` later: the copy has
    its own globals and its own snapshot of the builtins. (Code with frame or
    ``gc`` access can still reach anything in the process; see SECURITY.md.)

    >>> private_module_copy("json.decoder").JSONDecoder().decode('{"a": [1, true]}')
    {'a': [1, True]}
    """
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.loader is not None  # a standard-library module, found before any learner code
    private = importlib.util.module_from_spec(spec)
    private.__dict__["__builtins__"] = dict(builtins.__dict__)
    spec.loader.exec_module(private)
    return private


# The canonical order of set items: a private encoder, so that a submission
# patching ``json.dumps`` cannot change how the step child orders what it sends.
_canonical_json = private_module_copy("json.encoder").JSONEncoder(sort_keys=True).encode


class _Budget:
    def __init__(self) -> None:
        self.nodes = 0


def _safe_repr(value: Any) -> str:
    # repr runs learner code (a custom __repr__); it may raise, so guard it.
    try:
        text = repr(value)
    except Exception as exc:
        text = f"<repr raised {type(exc).__name__}>"
    if not isinstance(text, str):
        text = "<repr returned a non-str>"
    return text if len(text) <= MAX_REPR else text[:MAX_REPR] + "..."


def _qualname(tp: type) -> str:
    # The bare qualname: the module of a learner class is a generated name.
    name = getattr(tp, "__qualname__", None) or getattr(tp, "__name__", "?")
    return name if isinstance(name, str) else "?"


def _opaque(value: Any) -> JsonDict:
    return {"$type": _qualname(type(value)), "$repr": _safe_repr(value)}


def encode(value: Any) -> Any:
    """Encode ``value`` into type-strict JSON data (see the module docstring).

    >>> encode({"rows": [{"bin": "N-01", "count": 12}]})
    {'rows': [{'bin': 'N-01', 'count': 12}]}
    >>> encode({1: "a"})
    {'$dict': [[1, 'a']]}
    """
    return _encode(value, 0, set(), _Budget())


def _encode(value: Any, depth: int, active: set[int], budget: _Budget) -> Any:
    budget.nodes += 1
    if budget.nodes > MAX_NODES or depth > MAX_DEPTH:
        return {"$cut": "too large or too deep"}
    tp = type(value)
    if value is None or tp is bool or tp is int:
        return value
    if tp is float:
        return value if math.isfinite(value) else {"$float": repr(value)}
    if tp is str:
        if len(value) <= MAX_STR:
            return value
        return {"$type": "str", "$repr": value[:MAX_REPR] + "...", "$len": len(value)}
    if tp is type or isinstance(value, type):
        return {"$class": f"{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', '?')}"}
    if tp is ExplodingArgument:  # a grader case value on its way to the step child
        return {"$case": "exploding"}
    if tp in (list, tuple, dict, set, frozenset):
        if id(value) in active:
            return {"$cut": "contains itself"}
        active.add(id(value))
        try:
            return _encode_container(value, tp, depth, active, budget)
        finally:
            active.discard(id(value))
    return _opaque(value)


def _encode_items(items: list[Any], depth: int, active: set[int], budget: _Budget) -> list[Any]:
    out = [_encode(item, depth + 1, active, budget) for item in items[:MAX_ITEMS]]
    if len(items) > MAX_ITEMS:
        out.append({"$more": len(items) - MAX_ITEMS})
    return out


def _encode_container(value: Any, tp: type, depth: int, active: set[int], budget: _Budget) -> Any:
    if tp is list:
        return _encode_items(list(value), depth, active, budget)
    if tp is tuple:
        return {"$tuple": _encode_items(list(value), depth, active, budget)}
    if tp in (set, frozenset):
        items = _encode_items(list(value), depth, active, budget)
        # A canonical order so two equal sets encode the same way.
        items.sort(key=_canonical_json)
        return {"$set": items, "$kind": tp.__name__}
    pairs = list(value.items())
    if all(type(k) is str and not k.startswith("$") for k, _ in pairs) and len(pairs) <= MAX_ITEMS:
        return {k: _encode(v, depth + 1, active, budget) for k, v in pairs}
    encoded: list[Any] = [
        [_encode(k, depth + 1, active, budget), _encode(v, depth + 1, active, budget)] for k, v in pairs[:MAX_ITEMS]
    ]
    if len(pairs) > MAX_ITEMS:
        encoded.append({"$more": len(pairs) - MAX_ITEMS})
    return {"$dict": encoded}


# ---------------------------------------------------------------------------
# Child side: decoding the grader's own case values
# ---------------------------------------------------------------------------


class ExplodingArgument:
    """A case value that fails as soon as a tool looks at it.

    Every comparison, hash, string conversion and ordering raises, so a tool
    body that touches it fails; the grader uses it to see that ``CALLS`` was
    counted on the first line, before anything could fail.
    """

    def _explode(self, *args: Any) -> Any:
        raise RuntimeError("the grader's exploding argument was used")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _explode
    __hash__ = __str__ = __format__ = __bool__ = __len__ = __iter__ = _explode

    def __repr__(self) -> str:  # the one safe view, for labels and encodings
        return "<exploding argument>"


def decode(data: Any) -> Any:
    """Turn the grader's JSON case values back into Python objects (step child side).

    >>> decode({"$tuple": [1, {"$class": "builtins.int"}]})
    (1, <class 'int'>)
    >>> type(decode({"$case": "exploding"})).__name__
    'ExplodingArgument'
    """
    if isinstance(data, list):
        return [decode(item) for item in data]
    if not isinstance(data, dict):
        return data
    if "$tuple" in data:
        return tuple(decode(item) for item in data["$tuple"])
    if "$set" in data:
        kind = frozenset if data.get("$kind") == "frozenset" else set
        return kind(decode(item) for item in data["$set"])
    if "$dict" in data:
        return {decode(k): decode(v) for k, v in data["$dict"]}
    if "$class" in data:
        return _SAFE_CLASSES[data["$class"]]
    if "$case" in data:
        if data["$case"] == "exploding":
            return ExplodingArgument()
        raise ValueError(f"unknown case value {data['$case']!r}")
    return {k: decode(v) for k, v in data.items()}


# ---------------------------------------------------------------------------
# Parent side: strict comparison and display
# ---------------------------------------------------------------------------


def strict_equal(a: Any, b: Any) -> bool:
    """Equality of two encoded trees that also demands identical JSON types.

    >>> strict_equal([1, "a"], [1, "a"]), strict_equal([1], [1.0]), strict_equal({"a": 0}, {"a": False})
    (True, False, False)
    """
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b))
    same: bool = a == b
    return same


def show(data: Any, limit: int = 400) -> str:
    """Readable Python-like text of an encoded value, for feedback lines.

    >>> show({"$tuple": ["north", "south"]})
    "('north', 'south')"
    >>> show({"$type": "MyStr", "$repr": "'north'"})
    "'north' (a MyStr, not a plain value)"
    """
    text = _show(data)
    return text if len(text) <= limit else text[:limit] + "..."


def _show(data: Any) -> str:
    if isinstance(data, list):
        return "[" + ", ".join(_show(item) for item in data) + "]"
    if not isinstance(data, dict):
        return repr(data)
    if "$tuple" in data:
        items = [_show(item) for item in data["$tuple"]]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if "$set" in data:
        inner = ", ".join(_show(item) for item in data["$set"])
        return f"{data.get('$kind', 'set')}({{{inner}}})"
    if "$dict" in data:
        return (
            "{"
            + ", ".join(
                f"{_show(pair[0])}: {_show(pair[1])}" if isinstance(pair, list) and len(pair) == 2 else _show(pair)
                for pair in data["$dict"]
            )
            + "}"
        )
    if "$class" in data:
        name = str(data["$class"])
        return name[len("builtins.") :] if name.startswith("builtins.") else name
    if "$type" in data:
        return f"{data.get('$repr', '?')} (a {data['$type']}, not a plain value)"
    if "$float" in data:
        return f"float({data['$float']!r})"
    if "$cut" in data:
        return f"<{data['$cut']}>"
    if "$more" in data:
        return f"... {data['$more']} more"
    return "{" + ", ".join(f"{k!r}: {_show(v)}" for k, v in data.items()) + "}"
