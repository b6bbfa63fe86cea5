"""The mutation operators: each looks at one AST node and proposes single changes.

An operator is a function ``(node, place) -> iterable of Site``. ``place`` is
where ``node`` itself sits in its parent (``Place(holder, field, index)``), so
an operator can replace the whole node (``not x`` -> ``x``) or change one of
its own fields (``<`` -> ``<=`` in ``Compare.ops``). Nothing here edits a
tree: :mod:`mutation.mutator` applies a site, unparses the module, restores.

>>> import ast
>>> tree = ast.parse("x < 1")
>>> cmp = tree.body[0].value
>>> sorted(s.operator for s in compare_ops(cmp, None))
['cmp_boundary', 'cmp_negate']
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Place:
    """Where a node sits: ``getattr(holder, field)``, or its ``[index]`` when the field is a list."""

    holder: ast.AST
    field: str
    index: int | None = None


@dataclass(frozen=True)
class Site:
    """One proposed change: put ``new`` at ``place`` (``new is DROP`` removes a list item)."""

    place: Place
    new: Any
    operator: str


DROP = object()  # a Site's ``new`` that removes the list item at its place

# Ordered comparisons: the boundary twin (off by one) and the negation.
_BOUNDARY = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
_NEGATION = {
    ast.Lt: ast.GtE,
    ast.LtE: ast.Gt,
    ast.Gt: ast.LtE,
    ast.GtE: ast.Lt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_COPIERS = {"dict", "list", "set", "tuple"}
_COMMUTATIVE = {"min", "max"}  # swapping their arguments changes nothing: not a mutant


def compare_ops(node: ast.AST, place: Place | None) -> Iterator[Site]:
    """``<`` -> ``<=`` (boundary) and ``<`` -> ``>=`` (negation), ``==`` <-> ``!=``, ``in`` <-> ``not in``."""
    if not isinstance(node, ast.Compare):
        return
    for index, op in enumerate(node.ops):
        if type(op) in _BOUNDARY:
            yield Site(Place(node, "ops", index), _BOUNDARY[type(op)](), "cmp_boundary")
        if type(op) in _NEGATION:
            yield Site(Place(node, "ops", index), _NEGATION[type(op)](), "cmp_negate")


def constants(
    node: ast.AST, place: Place | None, *, in_compare: bool = False, in_keyword: bool = False
) -> Iterator[Site]:
    """Ints +1 and -1, booleans flipped, strings emptied (an empty one filled)."""
    if not isinstance(node, ast.Constant):
        return
    value, here = node.value, Place(node, "value")
    if isinstance(value, bool):
        yield Site(here, not value, "kwarg_bool" if in_keyword else "bool_flip")
    elif isinstance(value, int):
        yield Site(here, value + 1, "cmp_const_up" if in_compare else "int_up")
        yield Site(here, value - 1, "cmp_const_down" if in_compare else "int_down")
    elif isinstance(value, str):
        yield Site(here, "" if value else "X", "str_empty" if value else "str_fill")


def boolean_ops(node: ast.AST, place: Place | None) -> Iterator[Site]:
    """``and`` <-> ``or``; ``not x`` -> ``x``."""
    if isinstance(node, ast.BoolOp):
        yield Site(Place(node, "op"), ast.Or() if isinstance(node.op, ast.And) else ast.And(), "boolop_swap")
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and place is not None:
        yield Site(place, node.operand, "not_drop")


def conditions(node: ast.AST, place: Place | None) -> Iterator[Site]:
    """``if c`` -> ``if not c`` (unless ``c`` is already a ``not``); ``a if c else b`` -> ``b if c else a``."""
    if isinstance(node, (ast.If, ast.While, ast.IfExp)):
        test = node.test
        if not (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)):
            yield Site(Place(node, "test"), ast.UnaryOp(ast.Not(), test), "cond_negate")
    if isinstance(node, ast.IfExp) and place is not None:
        yield Site(place, ast.IfExp(node.test, node.orelse, node.body), "ifexp_swap")


def arithmetic(node: ast.AST, place: Place | None) -> Iterator[Site]:
    """``+`` <-> ``-`` in expressions and in ``+=``/``-=``."""
    swap = {ast.Add: ast.Sub, ast.Sub: ast.Add}
    if isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in swap:
        yield Site(Place(node, "op"), swap[type(node.op)](), "arith_swap")


def except_classes(node: ast.AST, place: Place | None) -> Iterator[Site]:
    """``except X`` narrowed to ``ValueError`` and widened to ``BaseException``."""
    if not isinstance(node, ast.ExceptHandler) or node.type is None:
        return
    caught = ast.unparse(node.type)
    for name, operator in (("ValueError", "except_narrow"), ("BaseException", "except_widen")):
        if caught != name:
            yield Site(Place(node, "type"), ast.Name(name, ast.Load()), operator)


def calls(node: ast.AST, place: Place | None) -> Iterator[Site]:
    """Adjacent positional arguments swapped, keyword arguments dropped, copies and ``sorted`` dropped."""
    if not isinstance(node, ast.Call):
        return
    name = ast.unparse(node.func)
    plain = [a for a in node.args if not isinstance(a, ast.Starred)]
    if len(plain) == len(node.args) >= 2 and name not in _COMMUTATIVE:
        for i in range(len(node.args) - 1):
            swapped = list(node.args)
            swapped[i], swapped[i + 1] = swapped[i + 1], swapped[i]
            yield Site(Place(node, "args"), swapped, "args_swap")
    for i, keyword in enumerate(node.keywords):
        if keyword.arg is not None:
            yield Site(Place(node, "keywords", i), DROP, "kwarg_drop")
    if place is None:
        return
    one_arg = len(node.args) == 1 and not node.keywords
    if one_arg and (name in _COPIERS or name in ("copy.copy", "copy.deepcopy")):
        yield Site(place, node.args[0], "copy_drop")
    elif one_arg and name == "sorted":
        yield Site(place, node.args[0], "sorted_drop")
    elif not node.args and not node.keywords and isinstance(node.func, ast.Attribute) and node.func.attr == "copy":
        yield Site(place, node.func.value, "copy_drop")


def returns(node: ast.AST, place: Place | None, *, others: tuple[ast.expr, ...] = ()) -> Iterator[Site]:
    """``return x`` -> ``return None``, and -> the next different value this function returns."""
    if not isinstance(node, ast.Return) or node.value is None:
        return
    if not (isinstance(node.value, ast.Constant) and node.value.value is None):
        yield Site(Place(node, "value"), ast.Constant(None), "return_none")
    mine = ast.dump(node.value)
    later = [v for v in others if ast.dump(v) != mine]
    if later:
        yield Site(Place(node, "value"), copy.deepcopy(later[0]), "return_other")


def subscripts(node: ast.AST, place: Place | None) -> Iterator[Site]:
    """``x[-1]`` <-> ``x[0]``; ``x[a:b]`` -> ``x`` (the slice dropped)."""
    if not isinstance(node, ast.Subscript) or place is None or not isinstance(node.ctx, ast.Load):
        return
    index = ast.unparse(node.slice)
    if index in ("-1", "0"):
        flipped = ast.Constant(0) if index == "-1" else ast.UnaryOp(ast.USub(), ast.Constant(1))
        yield Site(Place(node, "slice"), flipped, "index_flip")
    elif isinstance(node.slice, ast.Slice):
        yield Site(place, node.value, "slice_drop")


def displays(node: ast.AST, place: Place | None) -> Iterator[Site]:
    """One item of a list, tuple, set or dict display (two items or more) left out."""
    if isinstance(node, (ast.List, ast.Tuple)) and not isinstance(node.ctx, ast.Load):
        return  # an unpacking target, not a value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and len(node.elts) >= 2:
        for i in range(len(node.elts)):
            yield Site(Place(node, "elts", i), DROP, "item_drop")
    elif isinstance(node, ast.Dict) and len(node.keys) >= 2:
        for i in range(len(node.keys)):
            yield Site(Place(node, "keys", i), DROP, "item_drop")


def statements(node: ast.AST, place: Place | None) -> Iterator[Site]:
    """Each statement of a body replaced by ``pass`` (returns are left to :func:`returns`)."""
    for field in ("body", "orelse", "finalbody"):
        body = getattr(node, field, None)
        if not isinstance(body, list):
            continue
        for i, statement in enumerate(body):
            if isinstance(statement, (ast.Pass, ast.Return)) or is_docstring(node, field, i):
                continue
            yield Site(Place(node, field, i), ast.Pass(), "stmt_pass")


def is_docstring(node: ast.AST, field: str, index: int) -> bool:
    """Whether ``getattr(node, field)[index]`` is the docstring of a module, class or function."""
    if field != "body" or index != 0 or not isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Module)):
        return False
    first = node.body[0]
    return isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)


# Every operator, in the order its sites are numbered; constants and returns take context words.
OPERATORS: tuple[Callable[..., Iterator[Site]], ...] = (
    compare_ops,
    boolean_ops,
    conditions,
    arithmetic,
    except_classes,
    calls,
    subscripts,
    displays,
    statements,
)
