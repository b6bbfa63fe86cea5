"""Small AST helpers for the rewrites: top-level functions, names bound and read, safe places to insert.

Every helper is conservative: when it cannot tell, it says "not safe" and the
rewrite that asked does not apply (``None``).

>>> tree = parse("def f(x):\\n    return g(x)\\n\\ndef g(y):\\n    return y\\n")
>>> sorted(top_functions(tree)), called_names(tree.body[0])
(['f', 'g'], {'g'})
"""

from __future__ import annotations

import ast
import copy
import pickle
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator

# Names a transform may not rely on being free to take.
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
# Calls that only read (used where an expression's evaluation order changes).
PURE_CALLS = frozenset(
    {
        "len",
        "bool",
        "sorted",
        "list",
        "dict",
        "str",
        "repr",
        "int",
        "tuple",
        "type",
        "isinstance",
        "min",
        "max",
        "sum",
        "abs",
        "set",
        "frozenset",
    }
)
PURE_METHODS = frozenset(
    {
        "get",
        "items",
        "keys",
        "values",
        "copy",
        "strip",
        "lower",
        "casefold",
        "join",
        "format",
        "startswith",
        "endswith",
        "partition",
    }
)


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


_PRISTINE: dict[str, dict[bytes, str]] = {}  # source -> {a top-level statement pickled: its text}


def parse(source: str) -> ast.Module:
    """The module's tree, knowing every word of its text (:func:`fresh` avoids them all) and the text of each
    of its top-level statements as parsed (:func:`unparse` writes only the statements a transform changed)."""
    tree = ast.parse(source)
    tree._words = set(_IDENTIFIER.findall(source))
    if source not in _PRISTINE:
        _PRISTINE[source] = {
            pickle.dumps(node): _statement_text(node, first=i == 0) for i, node in enumerate(tree.body)
        }
    tree._pristine = _PRISTINE[source]
    return tree


def unparse(tree: ast.AST) -> str:
    """The module's text as ``ast.unparse`` writes it, with a final newline.

    A top-level statement equal to one of the parsed module's (the same pickle: the same
    nodes at the same places) keeps the text it had; only the others are written again.

    >>> unparse(parse("x  =  1\\ndef f():\\n  return x"))
    'x = 1\\n\\ndef f():\\n    return x\\n'
    """
    pristine = getattr(tree, "_pristine", None)
    if pristine is None or not isinstance(tree, ast.Module):
        return _Unparser().visit(tree) + "\n"
    parts = []
    for index, node in enumerate(tree.body):
        text = pristine.get(pickle.dumps(node)) if index else None
        if text is None:
            text = _statement_text(node, first=index == 0)
        if index:  # as ast.unparse joins them: a blank line before a def or a class
            parts.append("\n\n" if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else "\n")
        parts.append(text)
    return "".join(parts) + "\n"


def _statement_text(node: ast.stmt, *, first: bool) -> str:
    # The first statement alone as a module: a docstring is written as ast.unparse writes a module's.
    return _Unparser().visit(ast.Module([node], []) if first else node)


class _Unparser(getattr(ast, "_Unparser", object)):
    """``ast.unparse`` without type comments (the modules are parsed without them), so that new nodes need
    no line numbers and the tree is not walked once more to give them some."""

    def get_type_comment(self, node):
        return None

    if not hasattr(ast, "_Unparser"):  # another Python: the public function, with locations filled in

        def visit(self, tree):
            return ast.unparse(ast.fix_missing_locations(tree))


def stmt(text: str) -> list[ast.stmt]:
    """Statements parsed from text (for the small bits a transform inserts)."""
    return ast.parse(text).body


def expr(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def top_functions(tree: ast.Module) -> dict[str, tuple[int, ast.FunctionDef]]:
    """Each top-level ``def`` by name: its index in the module body and the node (the last one wins)."""
    return {node.name: (index, node) for index, node in enumerate(tree.body) if isinstance(node, ast.FunctionDef)}


def module_bindings(tree: ast.Module) -> Counter:
    """How many statements bind each module-level name (a def, a class, an assignment, an import, ``global``).

    Kept on the tree the first time it is asked (a transform asks before it changes the tree).
    """
    cached = getattr(tree, "_module_bindings", None)
    if cached is not None:
        return cached
    counts: Counter = Counter()
    for node in tree.body:
        counts.update(_bound_by_statement(node))
    words = getattr(tree, "_words", None)
    for node in ast.walk(tree) if words is None or "global" in words else ():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            declared = {name for sub in ast.walk(node) if isinstance(sub, ast.Global) for name in sub.names}
            stored = {
                sub.id
                for sub in ast.walk(node)
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del))
            }
            counts.update(declared & stored)
    tree._module_bindings = counts
    return counts


def _bound_by_statement(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(alias.asname or alias.name).split(".")[0] for alias in node.names]
    names = []
    for sub in ast.walk(node):
        if isinstance(sub, SCOPES[:3]):
            continue
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
            names.append(sub.id)
    return names


def plain_function(tree: ast.Module, name: str) -> tuple[int, ast.FunctionDef] | None:
    """``(index, node)`` of a top-level ``def name`` without decorators that nothing else at module level binds."""
    found = top_functions(tree).get(name)
    if found is None or found[1].decorator_list or module_bindings(tree)[name] != 1:
        return None
    return found


def stored_names(node: ast.AST) -> set[str]:
    """Every name bound anywhere inside ``node``, nested scopes included (parameters, targets, imports, ...)."""
    names: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
            names.add(sub.id)
        elif isinstance(sub, ast.arg):
            names.add(sub.arg)
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and sub is not node:
            names.add(sub.name)
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in sub.names)
        elif isinstance(sub, (ast.Global, ast.Nonlocal)):
            names.update(sub.names)
        elif isinstance(sub, ast.ExceptHandler) and sub.name:
            names.add(sub.name)
        elif isinstance(sub, (ast.MatchAs, ast.MatchStar)) and sub.name:
            names.add(sub.name)
        elif isinstance(sub, ast.MatchMapping) and sub.rest:
            names.add(sub.rest)
    return names


COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def function_locals(fn: ast.FunctionDef) -> set[str]:
    """The names local to ``fn`` itself: its parameters and what its own scope binds (not what its
    comprehensions, lambdas or nested functions bind inside themselves; a nested def's name is local).

    >>> sorted(function_locals(parse("def f(a):\\n    b = [k for k in a]\\n    def g(c): pass").body[0]))
    ['a', 'b', 'g']
    """
    names = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
    stack = list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            stack.extend(node.decorator_list)
            continue
        if isinstance(node, (ast.Lambda, *COMPREHENSIONS)):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
        stack.extend(ast.iter_child_nodes(node))
    return names


def loaded_names(node: ast.AST) -> set[str]:
    """Every name read anywhere inside ``node``."""
    return {sub.id for sub in ast.walk(node) if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load)}


def all_names(tree: ast.AST) -> set[str]:
    """Every identifier of the module (read, bound or an attribute's name): a new name must avoid them all."""
    names = loaded_names(tree) | stored_names(tree)
    names.update(sub.attr for sub in ast.walk(tree) if isinstance(sub, ast.Attribute))
    return names


def fresh(tree: ast.AST, wanted: str, taken: set[str] | None = None) -> str:
    """``wanted``, or ``wanted_2``, ``wanted_3``...: the first one the module does not use.

    >>> fresh(parse("_ROUTES = 1"), "_ROUTES")
    '_ROUTES_2'

    A tree from :func:`parse` knows the words of its text and remembers each name given out.
    """
    words = getattr(tree, "_words", None)
    used = (all_names(tree) if words is None else words) | (taken or set())
    name, n = wanted, 2
    while name in used:
        name, n = f"{wanted}_{n}", n + 1
    if words is not None:
        words.add(name)
    return name


def called_names(node: ast.AST) -> set[str]:
    """Names called as ``name(...)`` inside ``node``."""
    return {sub.func.id for sub in ast.walk(node) if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name)}


def own_statements(fn: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``fn``'s body, not descending into nested functions, lambdas or classes."""
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, SCOPES):
            stack.extend(ast.iter_child_nodes(node))


def callers(tree: ast.Module) -> Iterator[ast.FunctionDef]:
    """The module's function bodies: top-level ``def``s and the methods of top-level classes."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            yield node
        elif isinstance(node, ast.ClassDef):
            yield from (item for item in node.body if isinstance(item, ast.FunctionDef))


class NameReplacer(ast.NodeTransformer):
    """Replace reads of the given names by a new expression (``calls_only``: only where the name is called)."""

    def __init__(self, make: dict[str, Callable[[ast.Name], ast.expr]], calls_only: bool = False):
        self.make, self.calls_only, self.count = make, calls_only, 0

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if self.calls_only and isinstance(node.func, ast.Name) and node.func.id in self.make:
            self.count += 1
            new_func = self.make[node.func.id](node.func)
            node.args = [self.visit(a) for a in node.args]
            node.keywords = [self.visit(k) for k in node.keywords]
            node.func = ast.copy_location(new_func, node.func)
            return node
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if not self.calls_only and isinstance(node.ctx, ast.Load) and node.id in self.make:
            self.count += 1
            return ast.copy_location(self.make[node.id](node), node)
        return node


def replace_in_functions(
    tree: ast.Module, make: dict[str, Callable[[ast.Name], ast.expr]], *, calls_only: bool, skip: Iterable[str] = ()
) -> int:
    """Apply a :class:`NameReplacer` to every function body that does not bind one of the names itself.

    ``skip``: functions left alone by name (the target's own ``def``, for example). Returns the count.
    """
    count, skipped = 0, set(skip)
    for fn in list(callers(tree)):
        if fn.name in skipped or stored_names(fn) & set(make):
            continue
        replacer = NameReplacer(make, calls_only)
        fn.body = [replacer.visit(s) for s in fn.body]
        count += replacer.count
    return count


def first_code_index(tree: ast.Module) -> int:
    """Where an import may go: after the docstring and ``from __future__`` imports."""
    index = 0
    body = tree.body
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        index = 1
    while index < len(body) and isinstance(body[index], ast.ImportFrom) and body[index].module == "__future__":
        index += 1
    return index


def add_import(tree: ast.Module, module: str, alias: str) -> str:
    """Insert ``import module as alias`` (a fresh alias) near the top; return the alias used."""
    name = fresh(tree, alias)
    tree.body.insert(first_code_index(tree), ast.Import(names=[ast.alias(name=module, asname=name)]))
    return name


def signature_call(fn: ast.FunctionDef, callee: ast.expr) -> ast.Call | None:
    """``callee(...)`` forwarding every parameter of ``fn`` as it came (``None`` for positional-only)."""
    a = fn.args
    if a.posonlyargs:
        return None
    args: list[ast.expr] = [ast.Name(p.arg, ast.Load()) for p in a.args]
    if a.vararg:
        args.append(ast.Starred(ast.Name(a.vararg.arg, ast.Load()), ast.Load()))
    keywords = [ast.keyword(p.arg, ast.Name(p.arg, ast.Load())) for p in a.kwonlyargs]
    if a.kwarg:
        keywords.append(ast.keyword(None, ast.Name(a.kwarg.arg, ast.Load())))
    return ast.Call(callee, args, keywords)


def simple_params(fn: ast.FunctionDef) -> list[str] | None:
    """The parameter names when ``fn`` takes plain positional parameters only (no defaults, no ``*``)."""
    a = fn.args
    if a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg or a.defaults:
        return None
    return [p.arg for p in a.args]


def import_time_refs(tree: ast.Module, node: ast.stmt) -> set[str]:
    """Names a module-level statement may read while the module is imported, through the functions it calls.

    A ``def`` reads its decorators and defaults; a ``class`` its bases and its own body;
    anything else everything outside lambdas and nested defs. A name of a module
    function or class read that way brings in what that function's body reads
    (it may be called then), transitively.
    """
    bodies = {}
    for item in tree.body:
        if isinstance(item, (ast.FunctionDef, ast.ClassDef)):
            bodies.setdefault(item.name, []).append(item)
    direct = _eager_reads(node)
    seen, todo = set(), list(direct)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for body in bodies.get(name, []):
            todo.extend(loaded_names(body) - seen)
    return seen


def _eager_reads(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.FunctionDef):
        parts: list[ast.AST] = [*node.decorator_list, *node.args.defaults, *node.args.kw_defaults]
        return set().union(*(loaded_names(p) for p in parts if p is not None)) if parts else set()
    if isinstance(node, ast.ClassDef):
        reads = set().union(*(loaded_names(p) for p in [*node.bases, *node.decorator_list]), set())
        for item in node.body:
            reads |= _eager_reads(item)
        return reads
    reads = set()
    stack = [node]
    while stack:
        sub = stack.pop()
        if isinstance(sub, ast.Lambda):
            continue
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
            reads.add(sub.id)
        stack.extend(ast.iter_child_nodes(sub))
    return reads


def safe_span(tree: ast.Module, lo: int, hi: int, names: set[str], *, ignore: set[int] = frozenset()) -> bool:
    """No module-level statement in ``tree.body[lo:hi]`` (but those in ``ignore``) reads ``names`` at import."""
    for index in range(max(lo, 0), min(hi, len(tree.body))):
        if index in ignore:
            continue
        if import_time_refs(tree, tree.body[index]) & names:
            return False
    return True


def is_pure(node: ast.AST) -> bool:
    """An expression whose evaluation changes nothing: reads, arithmetic, literals, a few reading calls.

    >>> is_pure(expr("len(x) + y['a']")), is_pure(expr("f(x)")), is_pure(expr("d.get('k', 0)"))
    (True, False, True)
    """
    for sub in ast.walk(node):
        if isinstance(sub, (ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr, ast.Lambda)):
            return False
        if isinstance(sub, ast.Call):
            func = sub.func
            if isinstance(func, ast.Name) and func.id in PURE_CALLS:
                continue
            if isinstance(func, ast.Attribute) and func.attr in PURE_METHODS:
                continue
            return False
    return True


def same(a: ast.AST, b: ast.AST) -> bool:
    return ast.dump(a) == ast.dump(b)


def clone(node):
    return copy.deepcopy(node)


def const_str(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def sub_key(node: ast.AST) -> tuple[ast.expr, str] | None:
    """``(value, key)`` of ``value["key"]`` with a constant string key."""
    if isinstance(node, ast.Subscript):
        key = const_str(node.slice)
        if key is not None:
            return node.value, key
    return None


def name_id(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def body_lists(node: ast.AST) -> Iterator[list[ast.stmt]]:
    """Every statement list inside ``node`` (bodies, ``else``, ``finally``, handlers, cases), nested scopes excluded."""
    for sub in [node, *own_statements(node)]:
        if isinstance(sub, SCOPES) and sub is not node:
            continue
        for field in ("body", "orelse", "finalbody"):
            block = getattr(sub, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block
