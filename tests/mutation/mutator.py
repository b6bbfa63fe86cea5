"""Every single change of a module that the operators allow, as mutant source text in memory.

The module is parsed once; each site is applied to that one tree, the tree is
unparsed, and the change is undone. A mutant's id is stable while its function
is unchanged: ``function:line-in-function:operator:ordinal``.

>>> mutants = generate(SOLUTION.read_text(encoding="utf-8"))
>>> len(mutants) > 500, mutants[0].id == generate(SOLUTION.read_text(encoding="utf-8"))[0].id
(True, True)
"""

from __future__ import annotations

import ast
import random
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from . import operators as ops
from .operators import DROP, Place, Site

SOLUTION = Path(__file__).resolve().parents[2] / "solutions" / "tools.py"


@dataclass(frozen=True)
class Mutant:
    """One single change: its id, the top-level name it changed, where, how, and the module's new text."""

    id: str
    function: str
    line: int
    operator: str
    before: str
    after: str
    source: str = field(repr=False)
    # The solution file's lines of the statement that holds the change (tests/mutation/reach.py).
    span: tuple[int, int] = field(default=(0, 0), repr=False, compare=False)


@dataclass
class _Context:
    owner: str
    owner_line: int
    statement: ast.AST
    returns: tuple[ast.expr, ...] = ()
    in_compare: bool = False
    in_keyword: bool = False


def generate(source: str) -> list[Mutant]:
    """All mutants of ``source``, in source order, each compiling and each different from the others.

    >>> [m.operator for m in generate("def f(x):\\n    return x < 1\\n")]
    ['return_none', 'cmp_boundary', 'cmp_negate', 'cmp_const_up', 'cmp_const_down']
    """
    tree = ast.parse(source)
    # Only the changed top-level statement is unparsed again; the others keep their text.
    chunks = [ast.unparse(statement) for statement in tree.body]
    seen, mutants, ordinals = {"\n".join(chunks)}, [], defaultdict(int)
    for position, (site, node, context) in _sites(tree):
        before = _site_text(site)
        with _applied(site):
            chunk = ast.unparse(tree.body[position])
            after = "(left out)" if site.new is DROP else _site_text(site)
        text = "\n".join(chunks[:position] + [chunk] + chunks[position + 1 :])
        if text in seen or not _compiles(chunk):  # the other statements compile as they are
            continue
        seen.add(text)
        line = _line(site, node)
        span = _span(site, context)
        key = (context.owner, line - context.owner_line, site.operator)
        mutants.append(
            Mutant(
                f"{key[0]}:{key[1]}:{key[2]}:{ordinals[key]}",
                context.owner,
                line,
                site.operator,
                before,
                after,
                text,
                span,
            )
        )
        ordinals[key] += 1
    return mutants


def baseline_source(source: str) -> str:
    """``source`` as the mutants are written (parsed and unparsed: no comments, one layout).

    >>> baseline_source("x  =  1  # one")
    'x = 1'
    """
    return "\n".join(ast.unparse(statement) for statement in ast.parse(source).body)


def stratified(mutants: list[Mutant], size: int, *, seed: int = 0) -> list[Mutant]:
    """A sample of ``size`` mutants: each function in proportion to its mutants (at least one), its operators in turn.

    The same ``size`` and ``seed`` give the same ids every time.

    >>> sample = stratified(generate(SOLUTION.read_text(encoding="utf-8")), 60)
    >>> len(sample), len({m.id for m in sample}), len({m.function for m in sample}) > 40
    (60, 60, True)
    """
    if size >= len(mutants):
        return list(mutants)
    rng = random.Random(seed)
    by_function: dict[str, list[Mutant]] = defaultdict(list)
    for mutant in mutants:
        by_function[mutant.function].append(mutant)
    quotas = _quotas({name: len(group) for name, group in by_function.items()}, size)
    chosen = {m.id for name, group in by_function.items() for m in _spread(group, rng)[: quotas[name]]}
    return [m for m in mutants if m.id in chosen]


def _quotas(sizes: dict[str, int], total: int) -> dict[str, int]:
    """``total`` shared in proportion to ``sizes``, at least one each while that fits (largest remainders)."""
    whole = sum(sizes.values())
    exact = {key: total * size / whole for key, size in sizes.items()}
    quota = {key: min(sizes[key], max(1, int(share))) for key, share in exact.items()}
    order = sorted(sizes, key=lambda key: (-(exact[key] - int(exact[key])), key))
    turn = 0
    while sum(quota.values()) < total:
        key = order[turn % len(order)]
        quota[key] += quota[key] < sizes[key]
        turn += 1
    while sum(quota.values()) > total:  # more functions than places: the largest shares give back
        quota[max(quota, key=lambda key: (quota[key], key))] -= 1
    return quota


def _spread(group: list[Mutant], rng: random.Random) -> list[Mutant]:
    """A function's mutants shuffled within each operator, the operators taking turns."""
    by_operator: dict[str, list[Mutant]] = defaultdict(list)
    for mutant in group:
        by_operator[mutant.operator].append(mutant)
    queues = [by_operator[name] for name in sorted(by_operator)]
    for queue in queues:
        rng.shuffle(queue)
    rng.shuffle(queues)
    return [queue[i] for i in range(max(map(len, queues))) for queue in queues if i < len(queue)]


def _sites(tree: ast.Module):
    """(position, (site, node, context)) for every site of every top-level definition, in source order."""
    for position, statement in enumerate(tree.body):
        owner = _owner(statement)
        if owner is None:
            continue
        found = [n for n in ast.walk(statement) if isinstance(n, ast.Return) and n.value is not None]
        returns = tuple(n.value for n in sorted(found, key=lambda n: (n.lineno, n.col_offset)))
        context = _Context(owner, statement.lineno, statement, returns)
        yield from ((position, site) for site in _visit(statement, None, context))


def _owner(statement: ast.stmt) -> str | None:
    if isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
        return statement.name
    targets = statement.targets if isinstance(statement, ast.Assign) else [getattr(statement, "target", None)]
    names = [t.id for t in targets if isinstance(t, ast.Name)]
    return names[0] if names and isinstance(statement, (ast.Assign, ast.AnnAssign)) else None


def _visit(node: ast.AST, place: Place | None, context: _Context):
    if place is not None and place.index == 0 and ops.is_docstring(place.holder, place.field, 0):
        return  # text for readers and doctests, not behaviour
    if isinstance(node, ast.stmt):
        context = _Context(context.owner, context.owner_line, node, context.returns)
    yield from ((site, node, context) for site in _node_sites(node, place, context))
    # Ints count as "in a comparison" when they are one of its operands (``-1`` included).
    in_compare = isinstance(node, ast.Compare) or (context.in_compare and _is_negative(node))
    inner = _Context(
        context.owner, context.owner_line, context.statement, context.returns, in_compare, isinstance(node, ast.keyword)
    )
    for name, value in ast.iter_fields(node):
        if _skipped(node, name):
            continue
        children = value if isinstance(value, list) else [value]
        for index, child in enumerate(children):
            if isinstance(child, ast.AST):
                yield from _visit(child, Place(node, name, index if isinstance(value, list) else None), inner)


def _node_sites(node: ast.AST, place: Place | None, context: _Context):
    for operator in ops.OPERATORS:
        yield from operator(node, place)
    if not isinstance(place and place.holder, ast.JoinedStr):  # an f-string's text: prose, the learner's choice
        yield from ops.constants(node, place, in_compare=context.in_compare, in_keyword=context.in_keyword)
    if isinstance(node, ast.Return) and node.value is not None:
        mine = next((i for i, value in enumerate(context.returns) if value is node.value), None)
        others = () if mine is None else context.returns[mine + 1 :] + context.returns[:mine]
        yield from ops.returns(node, place, others=others)


def _skipped(node: ast.AST, name: str) -> bool:
    # Annotations of arguments, returns and module variables are never evaluated here
    # (``from __future__ import annotations``); a TypedDict's field annotations are, and stay.
    if isinstance(node, ast.FunctionDef) and name in ("returns", "decorator_list", "args"):
        return True
    if isinstance(node, ast.AnnAssign) and name == "annotation" and node.simple and node.value is not None:
        return True
    if isinstance(node, ast.Subscript) and name == "slice" and isinstance(node.slice, ast.Tuple):
        return True  # a type expression such as Annotated[list, operator.add]
    return False


def _is_negative(node: ast.AST) -> bool:
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)


class _applied:
    """Apply ``site`` to its tree on entry; put the old value back on exit."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.saved: list[tuple[ast.AST, str, object]] = []

    def __enter__(self) -> _applied:
        place, new = self.site.place, self.site.new
        old = getattr(place.holder, place.field)
        self._set(place.field, _replaced(old, place.index, new))
        if isinstance(place.holder, ast.Dict) and place.field == "keys" and new is DROP:
            self._set("values", _replaced(place.holder.values, place.index, DROP))
        return self

    def _set(self, name: str, value: object) -> None:
        holder = self.site.place.holder
        self.saved.append((holder, name, getattr(holder, name)))
        setattr(holder, name, value)

    def __exit__(self, *exc: object) -> None:
        for holder, name, value in reversed(self.saved):
            setattr(holder, name, value)


def _replaced(old: object, index: int | None, new: object) -> object:
    if index is None:
        return new
    items = list(old)
    if new is DROP:
        del items[index]
    else:
        items[index] = new
    return items


def _compiles(text: str) -> bool:
    try:
        compile(text, "tools.py", "exec")
    except (SyntaxError, ValueError):
        return False
    return True


def _line(site: Site, node: ast.AST) -> int:
    place = site.place
    current = getattr(place.holder, place.field)
    target = current[place.index] if place.index is not None else current
    if isinstance(target, _SHARED_NODES):
        # CPython shares one instance of each operator among all trees: a lineno that other code (a
        # fix_missing_locations on another tree) set on it says nothing about this place.
        target = None
    return getattr(target, "lineno", None) or getattr(node, "lineno", None) or getattr(place.holder, "lineno", 0)


_SHARED_NODES = (ast.operator, ast.boolop, ast.cmpop, ast.unaryop, ast.expr_context)


_BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def _span(site: Site, context: _Context) -> tuple[int, int]:
    """The lines of the statement the change is in: a dropped or replaced statement itself, else the whole
    innermost statement holding the changed node (a compound one from its first line to its last).

    Taken before the change is applied (the tree is the solution's). Reaching any of these lines is the
    condition for the change to run (tests/mutation/reach.py), so wider is safe and narrower is not.
    """
    place = site.place
    if place.index is not None and place.field in _BLOCK_FIELDS:
        target = getattr(place.holder, place.field)[place.index]
        if hasattr(target, "lineno"):
            return target.lineno, target.end_lineno or target.lineno
    statement = context.statement
    return statement.lineno, statement.end_lineno or statement.lineno


def _site_text(site: Site) -> str:
    """The changed piece as source: a whole statement for ``stmt_pass``, else the node that holds the change."""
    place = site.place
    if site.new is DROP:  # the item left out, not the whole (maybe long) display
        item = getattr(place.holder, place.field)[place.index]
        if isinstance(place.holder, ast.Dict):
            value = place.holder.values[place.index]
            return f"{ast.unparse(item)}: {ast.unparse(value)}"[:120] if item is not None else "**" + ast.unparse(value)
        return ast.unparse(item)[:120]
    if place.field in ("body", "orelse", "finalbody"):
        return ast.unparse(getattr(place.holder, place.field)[place.index])[:120]
    return ast.unparse(place.holder)[:120]
