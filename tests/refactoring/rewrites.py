"""Behaviour-preserving rewrites of correct modules: the transforms, their variants, and the generator.

A **transform** is a function ``(source, variant) -> source | None``: it parses
the module, changes it the way its kind says, and returns the new text, or
``None`` when the variant does not apply to this module (the function or the
pattern it needs is not there, or the change could not be shown to keep the
behaviour: then it does nothing rather than guess). A **variant** names what
it applies to, mostly a function (``call_tool``) or a pair (``fetch.call_tool``:
``fetch`` holding ``call_tool``). :data:`KINDS` lists the kinds with the
function that proposes variants for a module; :func:`generate` applies every
variant of every kind to every base (:mod:`tests.refactoring.bases`) and keeps
each distinct text once.

A rewrite's id is ``base:kind:variant`` (stable while the base and the
transform are unchanged).

>>> source = "def g(x):\\n    return x\\n\\n\\ndef f(y):\\n    return g(y)\\n"
>>> print(table(source, "g"))
def g(x):
    return x
_ROUTES = {'g': g}
<BLANKLINE>
def f(y):
    return _ROUTES['g'](y)
<BLANKLINE>
"""

from __future__ import annotations

import ast
import functools
import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from .astkit import (
    add_import,
    body_lists,
    called_names,
    callers,
    clone,
    const_str,
    expr,
    first_code_index,
    fresh,
    function_locals,
    is_pure,
    loaded_names,
    own_statements,
    parse,
    plain_function,
    replace_in_functions,
    safe_span,
    same,
    signature_call,
    simple_params,
    stmt,
    stored_names,
    sub_key,
    top_functions,
    unparse,
)
from .bases import Base, bases

TOOL_NAMES = ("stock_lookup", "legacy_stock")
NODE_NAMES = ("pick", "fetch", "reply", "giveup", "repair")
# The functions LAB_SPEC names (steps 1-11), in step order.
SPEC_NAMES = (
    *TOOL_NAMES,
    "validate_args",
    "validate_result",
    "cache_key",
    "call_tool",
    *NODE_NAMES[:4],
    "build_naive",
    "run_naive",
    "can_repair",
    "repair",
    "build_graph",
    "handle",
    "write_report",
    "coerce",
    "call_coerced",
    "explain",
    "retry_with_suggestion",
    "resolve_sku",
    "handle_named",
)
# The spec functions other functions call by name: the ones a grader may swap for a double.
CALLEES = (
    "validate_args",
    "validate_result",
    "cache_key",
    "call_tool",
    "fetch",
    "can_repair",
    "build_naive",
    "build_graph",
    "handle",
    "coerce",
    "explain",
    "resolve_sku",
)
# Which functions each kind's variants name (a variant for a function the module lacks is not proposed).
# One variant per step boundary or so: the gate grades every rewrite on three seeds.
TABLE_TARGETS = (
    "validate_args",
    "validate_result",
    "cache_key",
    "call_tool",
    "fetch",
    "can_repair",
    "handle",
    "explain",
    "resolve_sku",
)
LAMBDA_TARGETS = ("validate_args", "call_tool")
# Functions that call another step's function; closure and partial make them hold it.
HOLDERS = (
    "call_tool",
    "fetch",
    "run_naive",
    "handle",
    "write_report",
    "call_coerced",
    "explain",
    "retry_with_suggestion",
    "handle_named",
)
PARTIAL_HOLDERS = ("call_tool", "fetch", "retry_with_suggestion", "handle_named")
PARTIAL_CALLS = ("validate_args", "call_tool")
REBIND = {
    "wrap": ("validate_args", "call_tool", "handle", "resolve_sku"),
    "wrap_end": ("stock_lookup", "validate_result", "explain"),
    "alias": ("can_repair",),
}
# The kinds that rewrite inside one function: a few variants a base are enough.
ORDER_DICTS = ("call_tool", "handle")
EXTRACT = ("call_tool", "handle", "explain", "resolve_sku")
INLINE_PER_BASE = 2
RAISING = ("validate_args", "validate_result", "explain", "resolve_sku")
RAISING_HELPER = ("validate_args",)
LOOPS_PER_BASE = 2  # of each direction


@dataclass(frozen=True)
class Rewrite:
    """One rewrite of one base: ``id`` is ``base:kind:variant``; ``steps`` the steps it is graded on (``None``: all)."""

    id: str
    base: str
    kind: str
    variant: str
    steps: tuple[int, ...] | None
    source: str = field(repr=False)


# ---------------------------------------------------------------------------------------------------------------
# 1. function objects held in a table, internal callers going through it
# ---------------------------------------------------------------------------------------------------------------


def table(source: str, target: str) -> str | None:
    """``_ROUTES = {"name": name, ...}`` after the function(s); callers call ``_ROUTES["name"](...)``.

    ``target``: one function, or ``all`` (every callee of :data:`CALLEES` the module has, one table).
    """
    return _routed(source, target, "_ROUTES", lambda name, fn: ast.Name(name, ast.Load()))


def lambda_dispatch(source: str, target: str) -> str | None:
    """``_DISPATCH = {"name": lambda a, b: name(a, b)}``: a dict of lambdas that call the function by its name."""

    def make(name: str, fn: ast.FunctionDef) -> ast.expr:
        params = simple_params(fn)
        if params is None:
            return expr(f"lambda *args, **kwargs: {name}(*args, **kwargs)")
        return expr(f"lambda {', '.join(params)}: {name}({', '.join(params)})")

    return _routed(source, target, "_DISPATCH", make)


def _routed(source: str, target: str, wanted: str, value: Callable[[str, ast.FunctionDef], ast.expr]) -> str | None:
    tree = parse(source)
    names = [n for n in CALLEES if plain_function(tree, n)] if target == "all" else [target]
    found = [plain_function(tree, n) for n in names]
    if not names or any(f is None for f in found):
        return None
    table_name = fresh(tree, wanted)

    def route(name: str) -> Callable[[ast.Name], ast.expr]:
        return lambda node: ast.Subscript(ast.Name(table_name, ast.Load()), ast.Constant(name), ast.Load())

    if not replace_in_functions(tree, {n: route(n) for n in names}, calls_only=True):
        return None
    first, last = min(i for i, _ in found), max(i for i, _ in found)
    if not safe_span(tree, first, last + 1, {table_name}):
        return None
    entries = ast.Dict([ast.Constant(n) for n in names], [value(n, fn) for n, (_, fn) in zip(names, found)])
    tree.body.insert(last + 1, ast.Assign([ast.Name(table_name, ast.Store())], entries))
    return unparse(tree)


def _routed_variants(tree: ast.Module) -> list[str]:
    called = set()
    for fn in callers(tree):
        called |= called_names(fn) - {fn.name}
    present = [n for n in CALLEES if n in called and plain_function(tree, n)]
    return [n for n in present if n in TABLE_TARGETS] + (["all"] if len(present) > 1 else [])


# ---------------------------------------------------------------------------------------------------------------
# 3. closures holding another step's function; 4. functools.partial
# ---------------------------------------------------------------------------------------------------------------


def closure(source: str, variant: str) -> str | None:
    """``def _make_F(G): def F(...): ... G(...) ...; return F`` then ``F = _make_F(G)``.

    ``variant`` ``F.G`` (one saved function) or ``F.*`` (every earlier module function ``F`` reads).
    """
    tree = parse(source)
    held = _held(tree, variant)
    if held is None:
        return None
    index, fn, names = held
    factory = fresh(tree, f"_make_{fn.name}")
    maker = ast.FunctionDef(factory, _arguments(names), [fn, ast.Return(ast.Name(fn.name, ast.Load()))], [], None)
    bind = ast.Assign(
        [ast.Name(fn.name, ast.Store())],
        ast.Call(ast.Name(factory, ast.Load()), [ast.Name(n, ast.Load()) for n in names], []),
    )
    tree.body[index : index + 1] = [maker, bind]
    return unparse(tree)


def _held(tree: ast.Module, variant: str) -> tuple[int, ast.FunctionDef, list[str]] | None:
    """``(index, def, names)``: the function of ``F.G`` / ``F.*`` and the earlier functions it would hold."""
    owner, _, wanted = variant.partition(".")
    found = plain_function(tree, owner)
    if found is None:
        return None
    index, fn = found
    local = stored_names(fn)
    reads = loaded_names(fn)
    if wanted == "*":
        names = [
            name
            for name, (i, _) in top_functions(tree).items()
            if i < index and name in reads and name not in local and plain_function(tree, name)
        ]
    else:
        other = plain_function(tree, wanted)
        names = [wanted] if other and other[0] < index and wanted in reads and wanted not in local else []
    return (index, fn, names) if names else None


def _arguments(names: list[str]) -> ast.arguments:
    return ast.arguments([], [ast.arg(n) for n in names], None, [], [], None, [])


def _holder_pairs(tree: ast.Module) -> list[str]:
    """``F.G`` for each holder ``F`` (:data:`HOLDERS`) and the first earlier callee ``G`` it reads (:data:`CALLEES`)."""
    out = []
    functions = top_functions(tree)
    for owner in HOLDERS:
        if owner not in functions or not plain_function(tree, owner):
            continue
        index, fn = functions[owner]
        reads = loaded_names(fn) - stored_names(fn)
        out += [
            f"{owner}.{g}"
            for g in CALLEES
            if g in reads and g in functions and functions[g][0] < index and plain_function(tree, g)
        ][:1]
    return out


def _holder_variants(tree: ast.Module) -> list[str]:
    pairs = _holder_pairs(tree)
    owners = {p.split(".")[0] for p in pairs}
    return pairs + [f"{owner}.*" for owner in ("call_tool", "fetch", "handle") if owner in owners]


def partial(source: str, variant: str) -> str | None:
    """``functools.partial`` three ways.

    - ``def:F.G``: ``def _F_impl(G, ...)`` and ``F = partial(_F_impl, G)`` (``G`` saved in the partial);
    - ``call:G``: every ``G(a, b)`` inside functions becomes ``partial(G, a)(b)`` (``G`` looked up by name);
    - ``tool:T``: ``def _T_impl(sku, region, limit)`` and ``T = partial(_T_impl)`` before ``TOOLS``.
    """
    how, _, what = variant.partition(":")
    tree = parse(source)
    if how == "call":
        return _partial_calls(tree, what)
    if how == "tool":
        found = plain_function(tree, what)
        if what not in TOOL_NAMES or found is None or _reads_dunder_name(tree):
            return None
        index, fn = found
        names: list[str] = []
    else:
        held = _held(tree, what)
        if held is None or "*" in what:
            return None
        index, fn, names = held
        if fn.args.posonlyargs or (fn.name in NODE_NAMES + TOOL_NAMES and _reads_dunder_name(tree)):
            return None
    alias = add_import(tree, "functools", "_functools")
    index += 1  # the import went in above
    impl = fresh(tree, f"_{fn.name}_impl")
    public = fn.name
    fn.name = impl
    fn.args.args[0:0] = [ast.arg(n) for n in names]
    bind = ast.Assign(
        [ast.Name(public, ast.Store())],
        ast.Call(expr(f"{alias}.partial"), [ast.Name(impl, ast.Load()), *[ast.Name(n, ast.Load()) for n in names]], []),
    )
    tree.body[index + 1 : index + 1] = [bind]
    # Calls of F inside F itself (none in the bases) would now reach the partial: the same function.
    return unparse(tree)


def _partial_calls(tree: ast.Module, target: str) -> str | None:
    if not plain_function(tree, target):
        return None
    alias = fresh(tree, "_functools")
    count = 0
    for fn in list(callers(tree)):
        if target in stored_names(fn) or fn.name == target:
            continue
        for node in own_statements(fn):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == target
                and node.args
                and not any(isinstance(a, ast.Starred) for a in node.args)
            ):
                first = node.args.pop(0)
                node.func = ast.Call(
                    ast.Attribute(ast.Name(alias, ast.Load()), "partial", ast.Load()),
                    [ast.Name(target, ast.Load()), first],
                    [],
                )
                count += 1
    if not count:
        return None
    tree.body.insert(first_code_index(tree), ast.Import(names=[ast.alias("functools", alias)]))
    return unparse(tree)


def _partial_variants(tree: ast.Module) -> list[str]:
    holders, owners = [], set()
    for pair in _holder_pairs(tree):  # one saved function per holder
        owner = pair.split(".")[0]
        if owner in PARTIAL_HOLDERS and owner not in owners:
            owners.add(owner)
            holders.append(f"def:{pair}")
    called = set().union(*(called_names(fn) - {fn.name} for fn in callers(tree)))
    calls = [f"call:{g}" for g in PARTIAL_CALLS if g in called and plain_function(tree, g)]
    tools = [f"tool:{t}" for t in TOOL_NAMES if plain_function(tree, t)]
    return holders + calls + tools


def _reads_dunder_name(tree: ast.Module) -> bool:
    """Whether the module reads ``x.__name__`` of something other than ``type(...)`` (a function's name, then)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "__name__":
            value = node.value
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "type":
                continue
            if isinstance(value, ast.Attribute) and value.attr == "__class__":
                continue
            return True
    return False


# ---------------------------------------------------------------------------------------------------------------
# 5-6. bound methods of one object
# ---------------------------------------------------------------------------------------------------------------

GROUPS = {
    "door": ("validate_args", "validate_result", "cache_key", "call_tool"),
    "nodes": NODE_NAMES,
    "graphs": ("build_naive", "run_naive", "build_graph", "handle"),
    "report": ("write_report", "_measure", "_markdown", "_total_runs", "_count_runs", "_runs"),
    "part_two": ("coerce", "call_coerced", "explain", "retry_with_suggestion", "resolve_sku", "handle_named"),
}


def bound_methods(source: str, group: str) -> str | None:
    """The group's functions become methods of ``class _Impl`` calling each other through ``self.``;
    one instance, and ``name = _impl.name`` for each right after the class."""
    return _bound(source, group, late=False)


def bound_late(source: str, group: str) -> str | None:
    """As :func:`bound_methods`, but the instance is made and its methods bound to the names at the module's end."""
    return _bound(source, group, late=True)


def _bound(source: str, group: str, *, late: bool) -> str | None:
    tree = parse(source)
    members = [(n, plain_function(tree, n)) for n in GROUPS[group]]
    members = [(n, found) for n, found in members if found]
    names = {n for n, _ in members}
    if len(members) < 2 or not any(loaded_names(fn) & (names - {n}) for n, (_, fn) in members):
        return None
    indices = sorted(i for _, (i, _) in members)
    first, last = indices[0], indices[-1]
    if not safe_span(tree, first, last + 1, names, ignore=set(indices)):
        return None
    if late and not safe_span(tree, last + 1, len(tree.body), names):
        return None
    cls, inst = fresh(tree, "_Impl"), fresh(tree, "_impl")
    methods = []
    for _name, (_, fn) in sorted(members, key=lambda m: m[1][0]):
        local = stored_names(fn)
        make = {
            other: (lambda node, other=other: ast.Attribute(ast.Name("self", ast.Load()), other, ast.Load()))
            for other in names
            if other not in local
        }
        if "self" in local:
            return None
        fn.body = [_replaced(s, make) for s in fn.body]
        fn.args.args.insert(0, ast.arg("self"))
        methods.append(fn)
    doc = ast.Expr(ast.Constant(f"The functions {', '.join(sorted(names))}, as methods of one object."))
    klass = ast.ClassDef(cls, [], [], [doc, *methods], [])
    make_one = ast.Assign([ast.Name(inst, ast.Store())], ast.Call(ast.Name(cls, ast.Load()), [], []))
    binds = [
        ast.Assign([ast.Name(n, ast.Store())], ast.Attribute(ast.Name(inst, ast.Load()), n, ast.Load()))
        for n, _ in sorted(members, key=lambda m: m[1][0])
    ]
    body = [s for i, s in enumerate(tree.body) if i not in set(indices[:-1])]
    at = body.index(tree.body[last])
    body[at : at + 1] = [klass] if late else [klass, make_one, *binds]
    if late:
        body += [make_one, *binds]
    tree.body = body
    return unparse(tree)


def _replaced(node: ast.stmt, make: dict) -> ast.stmt:
    from .astkit import NameReplacer

    return NameReplacer(make).visit(node)


def _group_variants(tree: ast.Module) -> list[str]:
    out = []
    for group, names in GROUPS.items():
        present = [n for n in names if plain_function(tree, n)]
        if len(present) >= 2:
            out.append(group)
    return out


# ---------------------------------------------------------------------------------------------------------------
# 7. names rebound after import
# ---------------------------------------------------------------------------------------------------------------


def rebind(source: str, variant: str) -> str | None:
    """A function's name bound again.

    - ``wrap:X``: ``_real_X = X`` and a new ``def X(...)`` returning ``_real_X(...)``, right after the first;
    - ``wrap_end:X``: the same two statements at the very end of the module;
    - ``alias:X``: defined as ``_X_impl``, then ``X = _X_impl``.
    """
    how, _, name = variant.partition(":")
    tree = parse(source)
    found = plain_function(tree, name)
    if found is None:
        return None
    index, fn = found
    if how == "alias":
        if name in NODE_NAMES + TOOL_NAMES and _reads_dunder_name(tree):
            return None  # the graph or TOOLS is built from the functions' __name__
        impl = fresh(tree, f"_{name}_impl")
        fn.name = impl
        tree.body.insert(index + 1, ast.Assign([ast.Name(name, ast.Store())], ast.Name(impl, ast.Load())))
        return unparse(tree)
    real = fresh(tree, f"_real_{name}")
    call = signature_call(fn, ast.Name(real, ast.Load()))
    if call is None or not all(is_pure(d) for d in fn.args.defaults + [d for d in fn.args.kw_defaults if d]):
        return None
    wrapper = ast.FunctionDef(name, clone(fn.args), [ast.Return(call)], [], None)
    save = ast.Assign([ast.Name(real, ast.Store())], ast.Name(name, ast.Load()))
    if how == "wrap":
        tree.body[index + 1 : index + 1] = [save, wrapper]
    elif how == "wrap_end":
        # Module code after the def that holds the function itself (TOOLS' "fn") would keep the first one.
        if any(
            name in loaded_names(s)
            for s in tree.body[index + 1 :]
            if not isinstance(s, (ast.FunctionDef, ast.ClassDef))
        ):
            return None
        tree.body += [save, wrapper]
    else:
        return None
    return unparse(tree)


def _rebind_variants(tree: ast.Module) -> list[str]:
    called = set().union(*(called_names(fn) - {fn.name} for fn in callers(tree)))
    return [
        f"{how}:{n}"
        for how, names in REBIND.items()
        for n in names
        if plain_function(tree, n) and (n in called or how != "wrap")
    ]


# ---------------------------------------------------------------------------------------------------------------
# 8. extra keys in State, set and read by the module's own nodes; 9. fields read from the tool's echoed result
# ---------------------------------------------------------------------------------------------------------------


def state_key(source: str, variant: str) -> str | None:
    """An extra ``State`` key written by one of the module's nodes and read by another.

    - ``picked_sku``: ``pick`` stores the order's sku; ``reply`` names that sku (repairs never change it);
    - ``note``: ``pick`` stores a note; ``fetch`` copies ``state["note"]`` into each ``calls`` entry;
    - ``served_by``: ``fetch`` stores the tool it passed to ``call_tool``; ``reply`` adds "(via <tool>)" to the
      answer.
    """
    tree = parse(source)
    pick, fetch, reply = (plain_function(tree, n) for n in ("pick", "fetch", "reply"))
    if not (pick and fetch and reply):
        return None
    key = fresh(tree, variant)
    if not _add_state_field(tree, key, "str"):
        return None
    if variant == "picked_sku":
        if not _hoist_pick_update(pick[1], key, lambda update: expr(f"{update}['args']['sku']")):
            return None
        state = _first_param(reply[1])
        if not _replace_arg_reads(reply[1], {"sku": lambda: expr(f"{state}[{key!r}]")}):
            return None
    elif variant == "note":
        if not _add_to_update_dicts(pick[1], key, lambda: ast.Constant("picked from the order")):
            return None
        state = _first_param(fetch[1])
        if not _add_to_dicts(fetch[1], {"tool", "args"}, key, lambda: expr(f"{state}[{key!r}]")):
            return None
    elif variant == "served_by":
        tool = _called_tool(fetch[1])
        if tool is None or not _add_to_dicts(fetch[1], {"calls"}, key, lambda: clone(tool)):
            return None
        if not _extend_answer(reply[1], key):
            return None
    else:
        return None
    return unparse(tree)


def result_echo(source: str, variant: str) -> str | None:
    """``fetch`` keeps the sku and region the tool's result echoes; ``reply`` names those instead of the args'.

    ``region``: only the region is read from the result; ``sku_region``: both.
    """
    tree = parse(source)
    fetch, reply = plain_function(tree, "fetch"), plain_function(tree, "reply")
    if not (fetch and reply):
        return None
    key = fresh(tree, "served")
    if not _add_state_field(tree, key, "dict") or not _keep_echo(fetch[1], key):
        return None
    state = _first_param(reply[1])
    fields = ("region",) if variant == "region" else ("sku", "region")
    make = {f: (lambda f=f: expr(f"{state}[{key!r}][{f!r}]")) for f in fields}
    if _replace_arg_reads(reply[1], make) < len(fields):
        return None
    return unparse(tree)


def _called_tool(fn: ast.FunctionDef) -> ast.expr | None:
    """The tool name ``fn`` passes to its one ``call_tool(...)`` (however the door is reached), when it is a
    local name or a read of the state (then it can be read again where the update is built)."""
    found = []
    for node in own_statements(fn):
        if isinstance(node, ast.Call) and node.args and _names_call_tool(node.func):
            found.append(node.args[0])
    if len(found) != 1 or not (isinstance(found[0], ast.Name) or sub_key(found[0])):
        return None
    return found[0]


def _names_call_tool(func: ast.expr) -> bool:
    """``call_tool``, ``<object>.call_tool`` or ``<table>["call_tool"]``."""
    if isinstance(func, ast.Name):
        return func.id == "call_tool"
    if isinstance(func, ast.Attribute):
        return func.attr == "call_tool"
    got = sub_key(func)
    return bool(got) and got[1] == "call_tool"


def _first_param(fn: ast.FunctionDef) -> str:
    return (fn.args.posonlyargs + fn.args.args)[0].arg


def _add_state_field(tree: ast.Module, key: str, annotation: str) -> bool:
    for node in tree.body:
        if (
            isinstance(node, ast.ClassDef)
            and node.name == "State"
            and any("TypedDict" in ast.unparse(b) for b in node.bases)
        ):
            node.body.append(ast.AnnAssign(ast.Name(key, ast.Store()), ast.Name(annotation, ast.Load()), None, 1))
            return True
    return False


def _update_dict(value: ast.expr) -> ast.Dict | None:
    """The update a node returns: a dict literal, or ``Command(update={...})``'s."""
    if isinstance(value, ast.Dict) and None not in value.keys:
        return value
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "Command":
        for kw in value.keywords:
            if kw.arg == "update" and isinstance(kw.value, ast.Dict) and None not in kw.value.keys:
                return kw.value
    return None


def _returns(fn: ast.FunctionDef) -> list[ast.Return]:
    return [n for n in own_statements(fn) if isinstance(n, ast.Return) and n.value is not None]


def _add_to_update_dicts(fn: ast.FunctionDef, key: str, value: Callable[[], ast.expr]) -> int:
    found = [_update_dict(r.value) for r in _returns(fn)]
    if not found or None in found:
        return 0
    for d in found:
        d.keys.append(ast.Constant(key))
        d.values.append(value())
    return len(found)


def _hoist_pick_update(fn: ast.FunctionDef, key: str, value: Callable[[str], ast.expr]) -> int:
    """``update = {...}; update[key] = value(update); return update`` (or ``Command(update=update, ...)``)."""
    count = 0
    name = fresh(fn, "update")
    for block in body_lists(fn):
        for position in reversed(range(len(block))):
            node = block[position]
            if not isinstance(node, ast.Return) or node.value is None:
                continue
            d = _update_dict(node.value)
            if d is None:
                return 0
            hoisted = ast.Assign([ast.Name(name, ast.Store())], clone(d))
            store = ast.Assign([ast.Subscript(ast.Name(name, ast.Load()), ast.Constant(key), ast.Store())], value(name))
            if node.value is d:
                node.value = ast.Name(name, ast.Load())
            else:
                for kw in node.value.keywords:
                    if kw.value is d:
                        kw.value = ast.Name(name, ast.Load())
            block[position:position] = [hoisted, store]
            count += 1
    return count


def _add_to_dicts(fn: ast.FunctionDef, needed: set[str], key: str, value: Callable[[], ast.expr]) -> int:
    count = 0
    for node in own_statements(fn):
        if isinstance(node, ast.Dict) and None not in node.keys and needed <= {const_str(k) for k in node.keys}:
            node.keys.append(ast.Constant(key))
            node.values.append(value())
            count += 1
    return count


def _extend_answer(fn: ast.FunctionDef, key: str) -> int:
    state = _first_param(fn)
    count = 0
    for ret in _returns(fn):
        d = _update_dict(ret.value)
        if d is None:
            return 0
        for i, k in enumerate(d.keys):
            if const_str(k) == "answer":
                d.values[i] = ast.BinOp(d.values[i], ast.Add(), expr(f"' (via ' + {state}[{key!r}] + ')'"))
                count += 1
    return count


def _arg_aliases(fn: ast.FunctionDef, state: str) -> set[str]:
    """Local names bound to ``state["args"]`` itself (``args = state["args"]``, ``a, b = x, state["args"]``)."""
    aliases, stores = set(), {}
    for node in own_statements(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stores[node.id] = stores.get(node.id, 0) + 1
    for node in own_statements(fn):
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        pairs = [(target, value)]
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
            pairs = list(zip(target.elts, value.elts))
        for t, v in pairs:
            if isinstance(t, ast.Name) and _is_state_args(v, state):
                aliases.add(t.id)
    return {a for a in aliases if stores.get(a) == 1}


def _is_state_args(node: ast.AST, state: str) -> bool:
    got = sub_key(node)
    return bool(got) and got[1] == "args" and isinstance(got[0], ast.Name) and got[0].id == state


def _replace_arg_reads(fn: ast.FunctionDef, make: dict[str, Callable[[], ast.expr]]) -> int:
    """Replace ``state["args"]["sku"]`` (or ``args["sku"]`` of an alias) by ``make["sku"]()``; the count."""
    state = _first_param(fn)
    aliases = _arg_aliases(fn, state)

    class Swap(ast.NodeTransformer):
        count = 0

        def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
            got = sub_key(node)
            if (
                got
                and got[1] in make
                and isinstance(node.ctx, ast.Load)
                and (_is_state_args(got[0], state) or (isinstance(got[0], ast.Name) and got[0].id in aliases))
            ):
                Swap.count += 1
                return make[got[1]]()
            return self.generic_visit(node)

    swap = Swap()
    fn.body = [swap.visit(s) for s in fn.body]
    return Swap.count


def _keep_echo(fn: ast.FunctionDef, key: str) -> int:
    """Next to each ``<u>["rows"] = <r>["value"]["rows"]`` (or ``"rows": <r>["value"]["rows"]`` in a dict),
    keep ``{"sku": <r>["value"]["sku"], "region": <r>["value"]["region"]}`` under ``key``."""

    def echo_of(value: ast.AST) -> ast.expr | None:
        outer = sub_key(value)
        inner = sub_key(outer[0]) if outer and outer[1] == "rows" else None
        if not inner or inner[1] != "value":
            return None
        result = ast.unparse(outer[0])
        return expr(f"{{'sku': {result}['sku'], 'region': {result}['region']}}")

    count = 0
    for block in body_lists(fn):
        for position in reversed(range(len(block))):
            node = block[position]
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, echo = sub_key(node.targets[0]), echo_of(node.value)
                if target and target[1] == "rows" and echo is not None:
                    store = ast.Subscript(clone(target[0]), ast.Constant(key), ast.Store())
                    block.insert(position + 1, ast.Assign([store], echo))
                    count += 1
    for node in own_statements(fn):
        if isinstance(node, ast.Dict) and None not in node.keys:
            for k, v in list(zip(node.keys, node.values)):
                echo = echo_of(v) if const_str(k) == "rows" else None
                if echo is not None:
                    node.keys.append(ast.Constant(key))
                    node.values.append(echo)
                    count += 1
    return count


# ---------------------------------------------------------------------------------------------------------------
# 10. step 8 counting tool-body runs with its own bookkeeping
# ---------------------------------------------------------------------------------------------------------------

_COUNTERS = {
    # variant: (definitions, tick statement, read expression)
    "dict": ('_RUNS = {"n": 0}  # tool-body runs, counted by the tools themselves', '_RUNS["n"] += 1', '_RUNS["n"]'),
    "object": (
        'class _RunCounter:\n    """Tool-body runs, counted by the tools themselves."""\n\n'
        "    def __init__(self):\n        self.n = 0\n\n    def tick(self):\n        self.n += 1\n\n\n"
        "_RUN_COUNTER = _RunCounter()",
        "_RUN_COUNTER.tick()",
        "_RUN_COUNTER.n",
    ),
    "closure": (
        "def _make_run_counter():\n    runs = 0\n\n    def tick():\n        nonlocal runs\n"
        "        runs += 1\n\n    def read():\n        return runs\n    return tick, read\n\n\n"
        "_tick_run, _read_runs = _make_run_counter()",
        "_tick_run()",
        "_read_runs()",
    ),
}


def counter(source: str, variant: str) -> str | None:
    """Each tool also counts its run in a counter of the module's own (a dict, an object or a closure), on its
    second line; step 8's report reads that counter where it read the sum of ``CALLS``. ``CALLS`` is still
    counted on each tool's first line, and ``handle``'s ``tool_runs`` still reads ``CALLS``."""
    definitions, tick, read = _COUNTERS[variant]
    tree = parse(source)
    names = {"_RUNS", "_RunCounter", "_RUN_COUNTER", "_make_run_counter", "_tick_run", "_read_runs"}
    if names & (loaded_names(tree) | stored_names(tree)):
        return None
    tools = [plain_function(tree, t) for t in TOOL_NAMES]
    if not all(tools):
        return None
    for _, fn in tools:
        body = fn.body
        start = 1 if body and isinstance(body[0], ast.Expr) and const_str(body[0].value) is not None else 0
        if len(body) <= start or "CALLS" not in loaded_names(body[start]):
            return None  # CALLS is not counted on the first line here: nothing to add a second line to
        body.insert(start + 1, stmt(tick)[0])
    report_only = _report_functions(tree)
    count = 0
    for fn in callers(tree):
        if fn.name in report_only:
            count += _replace_calls_sum(fn, expr(read))
    if not count:
        return None
    at = next(
        (
            i
            for i, s in enumerate(tree.body)
            if isinstance(s, (ast.Assign, ast.AnnAssign)) and "CALLS" in stored_names(s)
        ),
        None,
    )
    if at is None:
        return None
    tree.body[at + 1 : at + 1] = stmt(definitions)
    return unparse(tree)


def _report_functions(tree: ast.Module) -> set[str]:
    """``write_report`` and the module functions only it reaches (not ``handle`` or any other spec function)."""
    functions = top_functions(tree)

    def reach(start: set[str]) -> set[str]:
        seen, todo = set(), list(start)
        while todo:
            name = todo.pop()
            if name in seen or name not in functions:
                continue
            seen.add(name)
            todo.extend(loaded_names(functions[name][1]))
        return seen

    if "write_report" not in functions:
        return set()
    others = reach({n for n in SPEC_NAMES if n in functions and n != "write_report"})
    return reach({"write_report"}) - others


def _replace_calls_sum(fn: ast.FunctionDef, read: ast.expr) -> int:
    class Swap(ast.NodeTransformer):
        count = 0

        def visit_Call(self, node: ast.Call) -> ast.AST:
            text = ast.unparse(node)
            if text in ("sum(CALLS.values())", "CALLS.total()"):
                Swap.count += 1
                return clone(read)
            return self.generic_visit(node)

    swap = Swap()
    fn.body = [swap.visit(s) for s in fn.body]
    return Swap.count


# ---------------------------------------------------------------------------------------------------------------
# 11. helpers inlined and extracted
# ---------------------------------------------------------------------------------------------------------------


def helpers(source: str, variant: str) -> str | None:
    """``inline:_h``: a one-expression private helper written out at its call sites (and its def removed when
    nothing else names it); ``extract:F``: ``F``'s final ``return <expression>`` moved into a new helper
    ``_F_answer(<the locals it reads>)``."""
    how, _, name = variant.partition(":")
    tree = parse(source)
    if how == "inline":
        return _inline(tree, name)
    if how == "extract":
        return _extract(tree, name)
    return None


def _inline(tree: ast.Module, name: str) -> str | None:
    found = plain_function(tree, name)
    if not name.startswith("_") or found is None:
        return None
    index, fn = found
    params = simple_params(fn)
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and const_str(s.value) is not None)]
    if params is None or len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return None
    template = body[0].value
    inner = stored_names(template)
    if inner & set(params) or any(isinstance(n, (ast.NamedExpr, ast.Yield, ast.Await)) for n in ast.walk(template)):
        return None
    free = loaded_names(template) - set(params)

    class Inline(ast.NodeTransformer):
        count = 0

        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            if not (
                isinstance(node.func, ast.Name)
                and node.func.id == name
                and not node.keywords
                and len(node.args) == len(params)
                and all(_simple(a) for a in node.args)
            ):
                return node
            if set().union(*(loaded_names(a) for a in node.args), set()) & inner:
                return node
            values = dict(zip(params, node.args))

            class Put(ast.NodeTransformer):
                def visit_Name(self, n: ast.Name) -> ast.AST:
                    return clone(values[n.id]) if n.id in values and isinstance(n.ctx, ast.Load) else n

            Inline.count += 1
            return Put().visit(clone(template))

    for caller in list(callers(tree)):
        if caller is fn or stored_names(caller) & (free | {name}):
            continue
        caller.body = [Inline().visit(s) for s in caller.body]
    if not Inline.count:
        return None
    if name not in loaded_names(tree):
        tree.body.remove(fn)
    return unparse(tree)


def _simple(node: ast.AST) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, (ast.Name, ast.Constant))


def _extract(tree: ast.Module, name: str) -> str | None:
    found = plain_function(tree, name)
    if found is None:
        return None
    index, fn = found
    last = fn.body[-1]
    if not isinstance(last, ast.Return) or last.value is None or isinstance(last.value, (ast.Name, ast.Constant)):
        return None
    value = last.value
    if any(isinstance(n, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await, ast.Nonlocal)) for n in ast.walk(fn)) or {
        "locals",
        "vars",
        "super",
    } & called_names(value):
        return None
    local = function_locals(fn)
    if any(isinstance(n, ast.Global) for n in own_statements(fn)):
        return None
    params = sorted(local & loaded_names(value))
    helper = fresh(tree, f"_{name.lstrip('_')}_answer")
    new = ast.FunctionDef(helper, _arguments(params), [ast.Return(value)], [], None)
    last.value = ast.Call(ast.Name(helper, ast.Load()), [ast.Name(p, ast.Load()) for p in params], [])
    tree.body.insert(index, new)
    return unparse(tree)


def _helper_variants(tree: ast.Module) -> list[str]:
    out = []
    called = set().union(*(called_names(fn) - {fn.name} for fn in callers(tree)))
    for name, (_, fn) in top_functions(tree).items():
        body = [s for s in fn.body if not (isinstance(s, ast.Expr) and const_str(s.value) is not None)]
        if (
            name.startswith("_")
            and name in called
            and len(body) == 1
            and isinstance(body[0], ast.Return)
            and simple_params(fn) is not None
            and plain_function(tree, name)
            and sum(v.startswith("inline:") for v in out) < INLINE_PER_BASE
        ):
            out.append(f"inline:{name}")
    for name in EXTRACT:
        found = plain_function(tree, name)
        if (
            found
            and isinstance(found[1].body[-1], ast.Return)
            and not isinstance(found[1].body[-1].value, (ast.Name, ast.Constant, type(None)))
        ):
            out.append(f"extract:{name}")
    return out


# ---------------------------------------------------------------------------------------------------------------
# 12. a private exception class
# ---------------------------------------------------------------------------------------------------------------


def exception(source: str, variant: str) -> str | None:
    """Every ``return value`` of a function becomes ``raise _Invalid(value)``, caught and returned again.

    ``try:F``: the ``try`` wraps ``F``'s own body; ``helper:F``: the raising body moves into ``_F_checks``,
    which ``F`` calls inside the ``try``. Functions with a ``try`` or ``with`` of their own are left alone.
    """
    how, _, name = variant.partition(":")
    tree = parse(source)
    found = plain_function(tree, name)
    if found is None:
        return None
    index, fn = found
    inside = list(own_statements(fn))
    if any(isinstance(n, (ast.Try, ast.With, ast.Yield, ast.YieldFrom, ast.Await)) for n in inside):
        return None
    cls = fresh(tree, "_Invalid")
    caught = fresh(tree, "_refusal")
    doc = [fn.body[0]] if isinstance(fn.body[0], ast.Expr) and const_str(fn.body[0].value) is not None else []
    body = fn.body[len(doc) :]

    class Raise(ast.NodeTransformer):
        def visit_Return(self, node: ast.Return) -> ast.AST:
            value = node.value if node.value is not None else ast.Constant(None)
            return ast.copy_location(ast.Raise(ast.Call(ast.Name(cls, ast.Load()), [value], []), None), node)

        def visit_FunctionDef(self, node):  # nested scopes keep their returns
            return node

        visit_Lambda = visit_ClassDef = visit_AsyncFunctionDef = visit_FunctionDef

    if not any(isinstance(n, ast.Return) for n in inside):
        return None
    body = [Raise().visit(s) for s in body]
    handler = ast.ExceptHandler(ast.Name(cls, ast.Load()), caught, [expr_stmt_return(f"{caught}.reason")])
    if how == "try":
        fn.body = doc + [ast.Try(body, [handler], [], [])]
        new_defs = []
    elif how == "helper":
        checks = fresh(tree, f"_{name.lstrip('_')}_checks")
        call = signature_call(fn, ast.Name(checks, ast.Load()))
        if call is None:
            return None
        new_defs = [ast.FunctionDef(checks, clone(fn.args), body, [], None)]
        fn.body = doc + [ast.Try([ast.Expr(call)], [handler], [], [])]
    else:
        return None
    klass = stmt(
        f'class {cls}(Exception):\n    """A refusal found deep inside; carries what the function '
        f'returns."""\n\n    def __init__(self, reason):\n        super().__init__(reason)\n'
        f"        self.reason = reason\n"
    )
    tree.body[index:index] = klass + new_defs
    return unparse(tree)


def expr_stmt_return(text: str) -> ast.Return:
    return ast.Return(expr(text))


def _exception_variants(tree: ast.Module) -> list[str]:
    out = []
    functions = top_functions(tree)
    for name in RAISING:
        if name not in functions:
            continue
        inside = list(own_statements(functions[name][1]))
        returns = [n for n in inside if isinstance(n, ast.Return)]
        if (
            len(returns) >= 2
            and not any(isinstance(n, (ast.Try, ast.With)) for n in inside)
            and plain_function(tree, name)
        ):
            out += [f"try:{name}"] + ([f"helper:{name}"] if name in RAISING_HELPER else [])
    return out


# ---------------------------------------------------------------------------------------------------------------
# 13. loops for comprehensions and comprehensions for loops
# ---------------------------------------------------------------------------------------------------------------

_FOLDS = ("sorted", "list", "tuple", "set", "sum")


def loops(source: str, variant: str) -> str | None:
    """``comp2loop:F``: each comprehension ``F`` assigns or returns becomes a ``for`` loop filling the value;
    ``loop2comp:F``: each loop of ``F`` that fills a fresh list or dict becomes a comprehension, and each loop
    that returns on the first hit becomes ``next((hit for ... if ...), <no hit>)``."""
    how, _, name = variant.partition(":")
    tree = parse(source)
    found = plain_function(tree, name)
    if found is None:
        return None
    fn = found[1]
    if any(isinstance(n, (ast.Try, ast.NamedExpr, ast.Global, ast.Nonlocal)) for n in own_statements(fn)):
        return None
    count = _comp_to_loop(tree, fn) if how == "comp2loop" else _loop_to_comp(tree, fn) if how == "loop2comp" else 0
    return unparse(tree) if count else None


def _names_outside(fn: ast.FunctionDef, inside: ast.AST) -> set[str]:
    """Names read or bound in ``fn`` outside the node ``inside`` (parameters included)."""
    skip = {id(n) for n in ast.walk(inside)}
    names = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
    for node in ast.walk(fn):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Name):
            names.add(node.id)
    return names


def _target_names(target: ast.AST) -> set[str] | None:
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
        return {e.id for e in target.elts}
    return None


def _comp_to_loop(tree: ast.Module, fn: ast.FunctionDef) -> int:
    count = 0
    taken: set[str] = set()
    for block in body_lists(fn):
        position = 0
        while position < len(block):
            node = block[position]
            new = _unrolled(tree, fn, node, taken)
            if new:
                block[position : position + 1] = new
                position += len(new)
                count += 1
            else:
                position += 1
    return count


def _unrolled(tree: ast.Module, fn: ast.FunctionDef, node: ast.stmt, taken: set[str]) -> list[ast.stmt] | None:
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        target, value = node.targets[0].id, node.value
    elif isinstance(node, ast.Return) and node.value is not None:
        target, value = None, node.value
    else:
        return None
    fold = None
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in _FOLDS
        and len(value.args) == 1
        and isinstance(value.args[0], ast.GeneratorExp)
        and all(is_pure(k.value) for k in value.keywords)
    ):
        fold, comp = value, value.args[0]
    elif isinstance(value, (ast.ListComp, ast.SetComp, ast.DictComp)):
        comp = value
    else:
        return None
    if any(g.is_async for g in comp.generators):
        return None
    bound = set()
    for g in comp.generators:
        names = _target_names(g.target)
        if names is None:
            return None
        bound |= names
    if bound & _names_outside(fn, comp) or (target and target in loaded_names(comp)):
        return None
    if isinstance(comp, ast.DictComp) and not is_pure(comp.key):
        return None
    acc = target if target and fold is None else fresh(tree, "_items", taken)
    taken.add(acc)
    if isinstance(comp, ast.DictComp):
        start, inner = "{}", ast.Assign([ast.Subscript(ast.Name(acc, ast.Load()), comp.key, ast.Store())], comp.value)
    else:
        method = "add" if isinstance(comp, ast.SetComp) else "append"
        start = "set()" if isinstance(comp, ast.SetComp) else "[]"
        inner = ast.Expr(ast.Call(ast.Attribute(ast.Name(acc, ast.Load()), method, ast.Load()), [comp.elt], []))
    body: list[ast.stmt] = [inner]
    for g in reversed(comp.generators):
        for test in reversed(g.ifs):
            body = [ast.If(test, body, [])]
        body = [ast.For(g.target, g.iter, body, [])]
    out = [ast.Assign([ast.Name(acc, ast.Store())], expr(start)), *body]
    if fold is not None:
        fold.args = [ast.Name(acc, ast.Load())]
        result = fold
    else:
        result = ast.Name(acc, ast.Load())
    if target is None:
        out.append(ast.Return(result))
    elif fold is not None:
        out.append(ast.Assign([ast.Name(target, ast.Store())], result))
    return out


def _loop_to_comp(tree: ast.Module, fn: ast.FunctionDef) -> int:
    count = 0
    sentinel = None
    for block in list(body_lists(fn)):
        position = 0
        while position < len(block):
            node = block[position]
            folded = _folded(fn, block, position)
            if folded:
                block[position : position + 2] = [folded]
                count += 1
            elif isinstance(node, ast.For):
                chain = _hit_chain(fn, node)
                if chain:
                    if sentinel is None:
                        sentinel = fresh(tree, "_NO_HIT")
                    hit = fresh(tree, "_hit")
                    generators, answer = chain
                    search = ast.Call(
                        ast.Name("next", ast.Load()),
                        [ast.GeneratorExp(answer, generators), ast.Name(sentinel, ast.Load())],
                        [],
                    )
                    block[position : position + 1] = [
                        ast.Assign([ast.Name(hit, ast.Store())], search),
                        ast.If(expr(f"{hit} is not {sentinel}"), [ast.Return(ast.Name(hit, ast.Load()))], []),
                    ]
                    position += 1
                    count += 1
            position += 1
    if sentinel is not None:
        at = first_code_index(tree)
        while at < len(tree.body) and isinstance(tree.body[at], (ast.Import, ast.ImportFrom)):
            at += 1
        tree.body.insert(at, stmt(f"{sentinel} = object()  # 'no hit' for next(...): None may be a hit")[0])
    return count


def _folded(fn: ast.FunctionDef, block: list[ast.stmt], position: int) -> ast.stmt | None:
    """``acc = []`` / ``acc = {}`` and the loop filling it that follows, as one comprehension."""
    if position + 1 >= len(block):
        return None
    first, loop = block[position], block[position + 1]
    if not (
        isinstance(first, ast.Assign)
        and len(first.targets) == 1
        and isinstance(first.targets[0], ast.Name)
        and isinstance(loop, ast.For)
        and not loop.orelse
    ):
        return None
    acc = first.targets[0].id
    empty_list = (isinstance(first.value, ast.List) and not first.value.elts) or ast.unparse(first.value) == "list()"
    empty_dict = isinstance(first.value, ast.Dict) and not first.value.keys
    if not (empty_list or empty_dict):
        return None
    generators, node, bound = [], loop, set()
    while True:
        names = _target_names(node.target)
        if names is None or node.orelse or getattr(node, "type_comment", None):
            return None
        bound |= names
        generator = ast.comprehension(node.target, node.iter, [], 0)
        generators.append(generator)
        inner = node.body
        while len(inner) == 1 and isinstance(inner[0], ast.If) and not inner[0].orelse:
            generator.ifs.append(inner[0].test)
            inner = inner[0].body
        if len(inner) != 1:
            return None
        node = inner[0]
        if not isinstance(node, ast.For):
            break
    if (
        empty_list
        and isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and ast.unparse(node.value.func) == f"{acc}.append"
        and len(node.value.args) == 1
        and not node.value.keywords
    ):
        comp: ast.expr = ast.ListComp(node.value.args[0], generators)
    elif (
        empty_dict
        and isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Subscript)
        and ast.unparse(node.targets[0].value) == acc
        and is_pure(node.targets[0].slice)
    ):
        comp = ast.DictComp(node.targets[0].slice, node.value, generators)
    else:
        return None
    if acc in loaded_names(comp) or bound & _names_outside(fn, loop):
        return None
    return ast.Assign([ast.Name(acc, ast.Store())], comp)


def _hit_chain(fn: ast.FunctionDef, loop: ast.For) -> tuple[list[ast.comprehension], ast.expr] | None:
    """``for x in xs: [for ...:] if c: return a`` as the generators of ``(a for x in xs ... if c)`` and ``a``."""
    generators, node, bound = [], loop, set()
    while isinstance(node, ast.For):
        names = _target_names(node.target)
        if names is None or node.orelse or len(node.body) != 1:
            return None
        bound |= names
        generators.append(ast.comprehension(node.target, node.iter, [], 0))
        node = node.body[0]
        while (
            isinstance(node, ast.If)
            and not node.orelse
            and len(node.body) == 1
            and not isinstance(node.body[0], ast.Return)
        ):
            generators[-1].ifs.append(node.test)
            node = node.body[0]
    if not (
        isinstance(node, ast.If)
        and not node.orelse
        and len(node.body) == 1
        and isinstance(node.body[0], ast.Return)
        and node.body[0].value is not None
    ):
        return None
    generators[-1].ifs.append(node.test)
    answer = node.body[0].value
    if bound & _names_outside(fn, loop) or any(isinstance(n, (ast.Yield, ast.Await)) for n in ast.walk(loop)):
        return None
    return generators, answer


def _loop_variants(tree: ast.Module) -> list[str]:
    """At most :data:`LOOPS_PER_BASE` functions each way, the spec's functions first."""
    out = {"comp2loop": [], "loop2comp": []}
    functions = top_functions(tree)
    for name in sorted(functions, key=lambda n: (n not in SPEC_NAMES, functions[n][0])):
        fn = functions[name][1]
        inside = list(own_statements(fn))
        if any(isinstance(n, (ast.Try, ast.NamedExpr, ast.Global, ast.Nonlocal)) for n in inside) or not plain_function(
            tree, name
        ):
            continue
        # Tried on a copy: proposed only where it applies.
        if len(out["comp2loop"]) < LOOPS_PER_BASE and _comp_to_loop(tree, clone(fn)):
            out["comp2loop"].append(f"comp2loop:{name}")
        if len(out["loop2comp"]) < LOOPS_PER_BASE and _loop_to_comp(ast.Module([], []), clone(fn)):
            out["loop2comp"].append(f"loop2comp:{name}")
    return out["comp2loop"] + out["loop2comp"]


# ---------------------------------------------------------------------------------------------------------------
# 14. orders the spec leaves free
# ---------------------------------------------------------------------------------------------------------------


def order(source: str, variant: str) -> str | None:
    """Orders LAB_SPEC leaves to the learner.

    - ``dict_keys:F``: the keys of each dict literal ``F`` returns (or builds and returns) in reverse order;
    - ``key_tuple:F``: a dict comprehension over a literal tuple of keys takes them in reverse order;
    - ``checks:F``: adjacent checks whose order cannot change an answer swapped: two guards returning the
      same reason (``min``/``max`` -> ``range``), the exclusive ``empty``/``too_big`` guards, and in
      ``validate_args`` the loop looking for extra arguments against its neighbour (LAB_SPEC step 2: which
      reason comes first when several defects exist is the learner's choice);
    - ``report_files``: ``tool_report.md`` written before ``tool_report.json``;
    - ``constants``: two adjacent module constants defined the other way round.
    """
    how, _, name = variant.partition(":")
    tree = parse(source)
    if how == "constants":
        return _swap_constants(tree)
    found = plain_function(tree, name) if name else None
    if how == "report_files":
        report = _report_functions(tree)
        count = sum(_swap_report_files(fn) for fn in callers(tree) if fn.name in report)
        return unparse(tree) if count else None
    if found is None:
        return None
    fn = found[1]
    count = {"dict_keys": _reverse_dicts, "key_tuple": _reverse_key_tuples, "checks": _swap_checks}.get(
        how, lambda _: 0
    )(fn)
    return unparse(tree) if count else None


def _free_dict(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Dict)
        and len(node.keys) >= 2
        and None not in node.keys
        and all(const_str(k) is not None for k in node.keys)
        and all(is_pure(v) for v in node.values)
        and len({const_str(k) for k in node.keys}) == len(node.keys)
    )


def _reverse_dicts(fn: ast.FunctionDef) -> int:
    count = 0
    returned = {r.value.id for r in _returns(fn) if isinstance(r.value, ast.Name)}
    for node in own_statements(fn):
        d = None
        if isinstance(node, ast.Return) and _free_dict(node.value):
            d = node.value
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in returned
            and _free_dict(node.value)
        ):
            d = node.value
        if d is not None:
            d.keys.reverse()
            d.values.reverse()
            count += 1
    return count


def _reverse_key_tuples(fn: ast.FunctionDef) -> int:
    count = 0
    for node in own_statements(fn):
        if isinstance(node, ast.DictComp) and len(node.generators) == 1:
            it = node.generators[0].iter
            if (
                isinstance(it, (ast.Tuple, ast.List))
                and len(it.elts) >= 2
                and all(const_str(e) is not None for e in it.elts)
            ):
                it.elts.reverse()
                count += 1
    return count


def _guard(node: ast.stmt) -> ast.expr | None:
    """The test of ``if <test>: return <value>`` (no ``else``)."""
    if (
        isinstance(node, ast.If)
        and not node.orelse
        and len(node.body) == 1
        and isinstance(node.body[0], ast.Return)
        and node.body[0].value is not None
        and is_pure(node.test)
    ):
        return node.test
    return None


def _shape(test: ast.expr) -> str:
    """The test with its strings blanked and its order comparisons made one: ``min`` and ``max`` guards alike."""

    class Blank(ast.NodeTransformer):
        def visit_Constant(self, node):
            return ast.Constant("") if isinstance(node.value, str) else node

        def visit_Compare(self, node):
            self.generic_visit(node)
            node.ops = [ast.Lt() if isinstance(op, (ast.Gt, ast.GtE, ast.LtE)) else op for op in node.ops]
            return node

    return ast.dump(Blank().visit(clone(test)))


def _emptiness(test: ast.expr) -> str | None:
    """``rows`` for ``not rows``, ``len(rows) == 0``, ``rows == []`` and (a count) ``n == 0``."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return ast.dump(test.operand)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
        left, right = test.left, test.comparators[0]
        if isinstance(right, ast.List) and not right.elts:
            return ast.dump(left)
        if isinstance(right, ast.Constant) and right.value == 0:
            if isinstance(left, ast.Call) and ast.unparse(left.func) == "len" and len(left.args) == 1:
                return ast.dump(left.args[0])
            return ast.dump(left)
    return None


def _too_long(test: ast.expr) -> str | None:
    """``rows`` for ``len(rows) > limit`` and (a count) ``n > limit``."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Gt):
        left = test.left
        if isinstance(left, ast.Call) and ast.unparse(left.func) == "len" and len(left.args) == 1:
            return ast.dump(left.args[0])
        return ast.dump(left)
    return None


def _swap_checks(fn: ast.FunctionDef) -> int:
    count = 0
    args_param = fn.args.args[1].arg if fn.name == "validate_args" and len(fn.args.args) > 1 else None
    for block in body_lists(fn):
        position = 0
        while position + 1 < len(block):
            a, b = block[position], block[position + 1]
            ta, tb = _guard(a), _guard(b)
            swap = False
            if ta is not None and tb is not None:
                same_reason = same(a.body[0].value, b.body[0].value) and _shape(ta) == _shape(tb)
                exclusive = (_emptiness(ta) is not None and _emptiness(ta) == _too_long(tb)) or (
                    _emptiness(tb) is not None and _emptiness(tb) == _too_long(ta)
                )
                swap = same_reason or exclusive
            elif args_param and isinstance(a, ast.For) and isinstance(b, ast.For):
                swap = (
                    (_extra_loop(a, args_param) and not _iterates(b, args_param))
                    or (_extra_loop(b, args_param) and not _iterates(a, args_param))
                ) and _loops_leak_nothing(fn, a, b)
            if swap:
                block[position], block[position + 1] = b, a
                count += 1
                position += 2
            else:
                position += 1
    return count


def _iterates(loop: ast.For, args_param: str) -> bool:
    return args_param in loaded_names(loop.iter)


def _extra_loop(loop: ast.For, args_param: str) -> bool:
    """``for a in args: if a not in <contract>: return ...``: the extra-argument check."""
    return (
        _iterates(loop, args_param)
        and len(loop.body) == 1
        and _guard(loop.body[0]) is not None
        and not loop.orelse
        and isinstance(loop.body[0].test, ast.Compare)
        and isinstance(loop.body[0].test.ops[0], ast.NotIn)
    )


def _loops_leak_nothing(fn: ast.FunctionDef, a: ast.For, b: ast.For) -> bool:
    """Neither loop binds a name (its target, an assignment) that code outside both loops reads."""
    outside = set()
    skip = {id(n) for n in [*ast.walk(a), *ast.walk(b)]}
    for node in ast.walk(fn):
        if id(node) not in skip and isinstance(node, ast.Name):
            outside.add(node.id)
    bound = {
        n.id for loop in (a, b) for n in ast.walk(loop) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    # Only local names may be bound inside (no item or attribute stores, no calls made for their effect).
    effects = any(
        isinstance(n, (ast.Expr, ast.AugAssign))
        or (isinstance(n, ast.Assign) and not all(isinstance(t, ast.Name) for t in n.targets))
        for loop in (a, b)
        for n in ast.walk(loop)
    )
    return not bound & outside and not effects


def _swap_report_files(fn: ast.FunctionDef) -> int:
    """Move the statement writing ``tool_report.json`` to just after the one writing ``tool_report.md``."""
    for block in body_lists(fn):
        writes = {}
        for position, node in enumerate(block):
            consts = {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
            for name in ("tool_report.json", "tool_report.md"):
                if name in consts:
                    writes.setdefault(name, position)
        if len(writes) < 2 or writes["tool_report.json"] >= writes["tool_report.md"]:
            continue
        j, m = writes["tool_report.json"], writes["tool_report.md"]
        moved = block[j]
        if not isinstance(moved, (ast.Expr, ast.With)):
            continue
        own = stored_names(moved)
        between, after = block[j + 1 : m + 1], block[m + 1 :]
        reads_between = set().union(*(loaded_names(s) for s in between), set())
        bound_between = set().union(*(stored_names(s) for s in between), set())
        # What the moved statement binds (its ``with ... as fh``) is read in between only where it is bound
        # again there; nothing after reads it; nothing in between rebinds what it reads.
        if (
            (own & (reads_between - bound_between))
            or (own & set().union(*(loaded_names(s) for s in after), set()))
            or ((loaded_names(moved) - own) & bound_between)
        ):
            continue
        block[j : m + 1] = [*between, moved]
        return 1
    return 0


def _swap_constants(tree: ast.Module) -> str | None:
    for position in range(len(tree.body) - 1):
        a, b = tree.body[position], tree.body[position + 1]
        if all(
            isinstance(s, ast.Assign)
            and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name)
            and isinstance(s.value, ast.Constant)
            for s in (a, b)
        ):
            tree.body[position], tree.body[position + 1] = b, a
            return unparse(tree)
    return None


def _order_variants(tree: ast.Module) -> list[str]:
    out = []
    functions = top_functions(tree)
    for name in SPEC_NAMES:
        if name in functions and plain_function(tree, name):
            fn = functions[name][1]
            out += [
                f"{how}:{name}"
                for how, probe in (
                    ("dict_keys", _reverse_dicts),
                    ("key_tuple", _reverse_key_tuples),
                    ("checks", _swap_checks),
                )
                if (how != "dict_keys" or name in ORDER_DICTS) and probe(clone(fn))
            ]
    return out + ["report_files", "constants"]


# ---------------------------------------------------------------------------------------------------------------
# The registry and the generator
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    """One kind of rewrite: the transform and the function proposing its variants for a parsed module."""

    name: str
    transform: Callable[[str, str], str | None]
    variants: Callable[[ast.Module], list[str]]


KINDS = {
    kind.name: kind
    for kind in [
        Kind("table", table, _routed_variants),
        Kind(
            "lambda_dispatch",
            lambda_dispatch,
            lambda tree: [v for v in _routed_variants(tree) if v in LAMBDA_TARGETS or v == "all"],
        ),
        Kind("closure", closure, _holder_variants),
        Kind("partial", partial, _partial_variants),
        Kind("bound_methods", bound_methods, _group_variants),
        Kind("bound_late", bound_late, _group_variants),
        Kind("rebind", rebind, _rebind_variants),
        Kind("state_key", state_key, lambda tree: ["picked_sku", "note", "served_by"]),
        Kind("result_echo", result_echo, lambda tree: ["region", "sku_region"]),
        Kind("counter", counter, lambda tree: list(_COUNTERS)),
        Kind("helpers", helpers, _helper_variants),
        Kind("exception", exception, _exception_variants),
        Kind("loops", loops, _loop_variants),
        Kind("order", order, _order_variants),
    ]
}


def rewrites_of(base: Base, kinds: list[str] | None = None) -> list[Rewrite]:
    """Every distinct rewrite of one base (a text equal to the base's, or to an earlier rewrite's, is dropped)."""
    tree = parse(base.text)
    seen = {unparse(tree)}
    found = []
    for kind in (KINDS[k] for k in (kinds or KINDS)):
        for variant in kind.variants(tree):
            text = kind.transform(base.text, variant)
            if text is None or text in seen:
                continue
            seen.add(text)
            found.append(Rewrite(f"{base.name}:{kind.name}:{variant}", base.name, kind.name, variant, base.steps, text))
    return found


@functools.lru_cache(maxsize=4)
def _generated(names: tuple[str, ...] | None, kinds: tuple[str, ...] | None, jobs: int) -> tuple[Rewrite, ...]:
    every = bases()
    chosen = names or tuple(every)
    wanted = list(kinds) if kinds else None
    if jobs > 1 and len(chosen) > 1 and "fork" in multiprocessing.get_all_start_methods():
        # Forked workers, one base at a time: the work is pure Python on text (no engine, no threads needed).
        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            found = list(pool.map(_rewrites_of_named, chosen, [wanted] * len(chosen)))
        return tuple(r for rewrites in found for r in rewrites)
    return tuple(r for name in chosen for r in rewrites_of(every[name], wanted))


def _rewrites_of_named(name: str, kinds: list[str] | None) -> list[Rewrite]:
    return rewrites_of(bases()[name], kinds)


def generate(names: list[str] | None = None, kinds: list[str] | None = None, *, jobs: int = 1) -> list[Rewrite]:
    """Every rewrite of every base (or of the named bases, or of some kinds), in a fixed order.

    ``jobs``: bases rewritten at once (forked worker processes); the list is the same whatever the number.

    >>> rewrites = generate(["solution"], ["table"])
    >>> rewrites[0].id, rewrites[0].steps
    ('solution:table:validate_args', None)
    """
    return list(_generated(tuple(names) if names else None, tuple(kinds) if kinds else None, max(1, jobs)))
