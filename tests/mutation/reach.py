"""Which steps a mutant can change: the lines of the solution each step's probes run, on the gate's seeds.

Grading is deterministic on a seed: a mutant runs exactly as the solution
does until the first time its changed code runs. So where a step's probes
never reach the changed statement, on that seed, the mutant gets the step
exactly as the solution gets it (full marks), and grading that step again
proves nothing. The gate grades each mutant on the steps that reach it and
counts the others as the solution's.

What "reach" is, conservatively:

- the **span** of a mutant (``Mutant.span``) is the whole statement that
  holds the change (a dropped or replaced statement itself), in the
  solution file's own lines;
- a line **runs in a step** when the step child's probes on the solution,
  traced line by line in the step child itself (``traced_probe``, the
  engine's ``probe_function``), produce a line event there, on either seed;
- a line that runs **at import** (module-level statements, ``def`` and
  ``class`` lines, class bodies) runs in every step: such a mutant is
  graded on every step;
- but a change of a **value read only by functions** (a top-level name bound
  once, at import, to a literal, before and after the change) can change
  nothing but what those functions read: it is graded on the steps that ran
  a line of one of them. A name read anywhere else (at import, in an
  annotation, a default or a decorator, as a string, by any grader module)
  is not such a value.

A mutant whose span holds a line that ran in step S is graded on S. The
rest is assumed, and proved by construction: ``python -m tests.mutation
--prove-reach`` grades every mutant both ways and fails on any difference of
class or failed checks (docs/development.md has the measured run).

>>> spans = [(1, 1)]
>>> reached_steps((5, 7), {1: {6}, 2: {9}}, import_lines=set())
[1]
>>> reached_steps((1, 2), {1: {6}}, import_lines={2})
[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
"""

from __future__ import annotations

import ast
import dataclasses
import re
import subprocess
import sys
import threading
from functools import lru_cache
from pathlib import Path

from grader.engine.probes import run_probe

from .mutator import SOLUTION

ALL_STEPS = tuple(range(1, 12))
TESTS_DIR = Path(__file__).resolve().parents[1]
# The probe function the traced runs use, importable in the fork server with tests/ on its path.
TRACED_PROBE = "mutation.reach:traced_probe"
LINES_KEY = "$lines"  # where traced_probe puts the lines it saw in the observation


def reached_steps(span: tuple[int, int], step_lines: dict[int, set[int]], *, import_lines: set[int]) -> list[int]:
    """The steps whose probes ran a line of ``span`` (every step when a line of it runs at import)."""
    lines = set(range(span[0], span[1] + 1))
    if not span[0] or lines & import_lines:
        return list(ALL_STEPS)
    return [step for step in ALL_STEPS if lines & step_lines.get(step, set())]


def line_tracer(path: str, seen: set[int]):
    """A trace function for ``sys.settrace`` that adds to ``seen`` every line run in code of the file ``path``.

    Frames of other files get no local trace, so library code runs at near full speed.

    >>> seen = set(); tracer = line_tracer(__file__, seen)
    >>> sys.settrace(tracer); _ = reached_steps((1, 1), {}, import_lines={1}); sys.settrace(None)
    >>> bool(seen)
    True
    """

    def local(frame, event, arg):
        if event == "line":
            seen.add(frame.f_lineno)
        return local

    def calls(frame, event, arg):
        if frame.f_code.co_filename != path:
            return None
        seen.add(frame.f_lineno)
        return local

    return calls


def traced_probe(module, probe, ctx):
    """``grader.engine.probes.run_probe`` with every line it runs in the module's file noted in the observation.

    Runs in the step child (including the forks fresh probes run in). The
    trace function is the tracing run's own: the graded runs never use it.
    ``run_probe`` is the one imported with this module, before the step child
    let go of the grader's modules (a new copy would not know the run counters).
    """
    seen: set[int] = set()
    tracer = line_tracer(ctx.module_path, seen)
    sys.settrace(tracer)
    threading.settrace(tracer)
    try:
        obs = run_probe(module, probe, ctx)
    finally:
        sys.settrace(None)
        threading.settrace(None)
    return {**obs, LINES_KEY: sorted(seen)} if isinstance(obs, dict) else obs


def print_import_lines(path: str) -> None:
    """(In a new interpreter.) Run the file ``path`` as an import does, traced; print the lines that ran."""
    import runpy

    seen: set[int] = set()
    sys.settrace(line_tracer(path, seen))
    try:
        runpy.run_path(path, run_name="agtool_reach_import")
    finally:
        sys.settrace(None)
    print(" ".join(map(str, sorted(seen))))


_IMPORT_TRACE = (
    "import sys; sys.path.insert(0, sys.argv[1]); import mutation.reach as r; r.print_import_lines(sys.argv[2])"
)


@lru_cache(maxsize=4)
def import_lines(path: str = str(SOLUTION)) -> frozenset[int]:
    """The lines of ``path`` that run when it is imported (in a new interpreter)."""
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_TRACE, str(TESTS_DIR), path],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return frozenset(int(n) for n in done.stdout.split())


def step_lines(seeds: tuple[int, ...], path: str = str(SOLUTION)) -> dict[int, set[int]]:
    """``{step: lines}``: every line of ``path`` the step's probes ran on any of ``seeds`` (traced runs).

    Refuses (``RuntimeError``) when the module does not get full marks on a
    seed, or a step's run did not end normally: reach is measured on a
    correct module only.
    """
    from grader import grading
    from grader.checks.registry import checks_for
    from grader.engine.client import EngineClient
    from grader.engine.protocol import OBS, Limits, encode_source
    from grader.locate import Submission
    from grader.settings import current

    source = Path(path).read_bytes()
    by_step: dict[int, list] = {}
    for check in checks_for(None, None):
        by_step.setdefault(check.step, []).append(check)
    lines: dict[int, set[int]] = {step: set() for step in by_step}
    # The tracing run's own trace function is a tracer like any other to the step child's code walls, which
    # refuse one in learner code: they are off for this run alone (the correct module, measured, not judged).
    settings = dataclasses.replace(current(), code_walls=False)
    with EngineClient(extra_sys_path=[str(TESTS_DIR)], settings=settings) as engine:
        for seed in seeds:
            report = grading.grade(Submission(source=source, name="solutions/tools.py"), seed=seed, engine=engine)
            if report.score != report.max_score:
                raise RuntimeError(f"{path} lost points on seed {seed}: reach is measured on a correct module")
            for step, checks in sorted(by_step.items()):
                _, probes = grading._plan(checks, seed)
                job = grading._step_job(
                    step, probes, encode_source(source), Limits(), grading._EngineHooks(TRACED_PROBE)
                )
                result = engine.run(job)
                observations = [m["obs"] for m in result.messages if m.get("type") == OBS]
                if result.infra_error or len(observations) != len(probes):
                    raise RuntimeError(f"the traced run of step {step} on seed {seed} did not end: {result}")
                for obs in observations:
                    if not isinstance(obs, dict) or LINES_KEY not in obs:
                        raise RuntimeError(f"step {step} on seed {seed}: an observation without its lines: {obs}")
                    lines[step].update(obs[LINES_KEY])
    return lines


GRADER = Path(__file__).resolve().parents[2] / "grader"


def value_readers(source: str, grader_text: str = "") -> dict[str, set[int]]:
    """``{name: lines}`` for each top-level name bound once to a literal and read only in function bodies.

    ``lines`` are the bodies of the top-level functions that read it. Left
    out: a name bound twice or declared ``global``, read at import (another
    module-level statement, a class body, a default, a decorator, an
    annotation), named in a string of the module, or named in ``grader_text``
    (the grader's own modules, which may read it from the module by name).

    >>> text = "A = [1, 2]\\nB = (3,)\\nC = A\\ndef f():\\n    return A\\ndef g():\\n    return B\\n"
    >>> value_readers(text)
    {'B': {7}}
    >>> value_readers(text, grader_text="reads B")
    {}
    """
    tree = ast.parse(source)
    bound: dict[str, int] = {}
    for statement in tree.body:
        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        bound[name.id] = bound.get(name.id, 0) + 1
    literal = {
        target.id
        for statement in tree.body
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and _is_literal(statement.value)
        for target in statement.targets
        if isinstance(target, ast.Name)
    }
    excluded = {name for name, times in bound.items() if times != 1}
    excluded |= {name for node in ast.walk(tree) if isinstance(node, (ast.Global, ast.Nonlocal)) for name in node.names}
    excluded |= {
        node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }
    readers: dict[str, set[int]] = {}
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            at_import = [*statement.decorator_list, statement.args]
            if statement.returns is not None:
                at_import.append(statement.returns)
            excluded |= {n.id for part in at_import for n in ast.walk(part) if isinstance(n, ast.Name)}
            body = set(range(statement.body[0].lineno, (statement.end_lineno or statement.lineno) + 1))
            for part in statement.body:
                for node in ast.walk(part):
                    if isinstance(node, ast.Name):
                        readers.setdefault(node.id, set()).update(body)
                    elif isinstance(node, ast.arg) and node.annotation is not None:
                        excluded |= {n.id for n in ast.walk(node.annotation) if isinstance(n, ast.Name)}
        else:
            reads = statement.value if isinstance(statement, (ast.Assign, ast.AnnAssign)) else statement
            excluded |= {n.id for n in ast.walk(reads) if isinstance(n, ast.Name)} if reads is not None else set()
            if isinstance(statement, ast.ClassDef):
                excluded |= {n.id for n in ast.walk(statement) if isinstance(n, ast.Name)}
    return {
        name: lines
        for name, lines in sorted(readers.items())
        if name in literal and name not in excluded and not re.search(rf"\b{re.escape(name)}\b", grader_text)
    }


def _is_literal(node: ast.AST | None) -> bool:
    """Whether ``node`` is a literal display (``ast.literal_eval`` takes it): it binds a value and runs nothing."""
    try:
        ast.literal_eval(node)  # type: ignore[arg-type]
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def changed_value(mutant_source: str, name: str) -> bool:
    """Whether the mutant still binds ``name`` once, at the top level, to a literal (only its value changed).

    >>> changed_value("X = [1, 3]\\n", "X"), changed_value("X = [1, int('3')]\\n", "X")
    (True, False)
    """
    tree = ast.parse(mutant_source)
    found = [
        s
        for s in tree.body
        if isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in s.targets)
    ]
    return len(found) == 1 and len(found[0].targets) == 1 and _is_literal(found[0].value)


class Reach:
    """The steps each mutant is graded on, for one pair of seeds (measured once, on first use)."""

    def __init__(self, seeds: tuple[int, ...]) -> None:
        self.seeds = tuple(seeds)
        self._lines: dict[int, set[int]] | None = None
        self._import: frozenset[int] | None = None
        self._values: dict[str, set[int]] = {}

    def _measure(self) -> dict[int, set[int]]:
        if self._lines is None:
            self._import = import_lines()
            self._lines = step_lines(self.seeds)
            grader_text = "\n".join(p.read_text(encoding="utf-8") for p in sorted(GRADER.rglob("*.py")))
            self._values = value_readers(SOLUTION.read_text(encoding="utf-8"), grader_text)
        return self._lines

    def steps(self, mutant) -> list[int]:
        """The steps to grade ``mutant`` (a :class:`tests.mutation.mutator.Mutant`) on."""
        lines = self._measure()
        assert self._import is not None
        readers = self._values.get(mutant.function)
        if readers is not None and not readers & self._import and changed_value(mutant.source, mutant.function):
            return [step for step in ALL_STEPS if readers & lines.get(step, set())]
        return reached_steps(mutant.span, lines, import_lines=set(self._import))

    def planted_steps(self, text: str) -> list[int]:
        """The steps to grade a module made by editing the solution (a planted defect or mistake) on.

        Those whose probes ran a line of a top-level function whose body the
        edits changed; every step for any other difference (see :func:`changed_bodies`).
        """
        lines = self._measure()
        bodies = changed_bodies(SOLUTION.read_text(encoding="utf-8"), text)
        assert self._import is not None
        if bodies is None or bodies & self._import:  # a body that also runs at import runs in every step
            return list(ALL_STEPS)
        return [step for step in ALL_STEPS if bodies & lines.get(step, set())]


def changed_bodies(original: str, changed: str) -> set[int] | None:
    """The lines (of ``original``) of the bodies of the top-level functions ``changed`` differs in, when those
    bodies are all it differs in; ``None`` when anything else differs (then every step can see the change).

    "Anything else": a statement at module level or in a class, a function's
    name, arguments, defaults, decorators or return annotation, a function
    left out, or the order of the statements. A function that ``changed``
    adds, with no decorator and no default, runs nothing at import: it
    matters only where changed code calls it, and that code is in a changed
    body.

    >>> base = "X = 1\\ndef f():\\n    return 1\\ndef g():\\n    return 2\\n"
    >>> changed_bodies(base, base.replace("return 2", "return 3"))
    {5}
    >>> changed_bodies(base, base.replace("X = 1", "X = 2")) is None
    True
    >>> sorted(changed_bodies(base, base + "def h(a):\\n    return a\\n"))
    []
    """
    try:
        old_tree, new_tree = ast.parse(original), ast.parse(changed)
    except SyntaxError:
        return None

    def key(statement: ast.stmt) -> str:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return f"def {statement.name}"
        return ast.dump(statement)

    def header(statement: ast.stmt) -> str:
        assert isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
        parts = (statement.name, statement.args, statement.decorator_list, statement.returns, type(statement))
        return repr([ast.dump(p) if isinstance(p, ast.AST) else repr(p) for p in parts])

    old = {key(s): s for s in old_tree.body}
    new_keys = [key(s) for s in new_tree.body]
    if len(old) != len(old_tree.body) or len(set(new_keys)) != len(new_keys):
        return None  # a name bound twice: compare nothing by name
    added = [s for s in new_tree.body if key(s) not in old]
    for statement in added:
        plain = isinstance(statement, ast.FunctionDef) and not statement.decorator_list
        if not plain or statement.args.defaults or any(d is not None for d in statement.args.kw_defaults):
            return None
    kept = [k for k in new_keys if k in old]
    if set(old) - set(kept) or kept != [k for k in (key(s) for s in old_tree.body) if k in set(kept)]:
        return None  # something left out, or the order changed
    lines: set[int] = set()
    for statement in new_tree.body:
        before = old.get(key(statement))
        if before is None or not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if header(before) != header(statement):
            return None
        if [ast.dump(s) for s in before.body] != [ast.dump(s) for s in statement.body]:
            assert isinstance(before, (ast.FunctionDef, ast.AsyncFunctionDef))
            lines.update(range(before.body[0].lineno, (before.end_lineno or before.lineno) + 1))
    return lines


def differences(every: dict[str, dict], by_reach: dict[str, dict]) -> dict[str, str]:
    """The mutants whose failed checks or failure differ between grading every step and grading by reach.

    >>> one = {"seeds": [{"seed": 1, "failed_checks": ["step2/extra"], "failure": ""}], "error": ""}
    >>> differences({"m": one}, {"m": one})
    {}
    >>> differences({"m": one}, {"m": {**one, "seeds": [{"seed": 1, "failed_checks": [], "failure": ""}]}})
    {'m': "seed 1: every step ['step2/extra'], by reach []"}
    """
    found: dict[str, str] = {}
    for mutant, whole in every.items():
        part = by_reach[mutant]
        if whole["error"] or part["error"]:
            if whole["error"] != part["error"]:
                found[mutant] = f"error: every step {whole['error']!r}, by reach {part['error']!r}"
            continue
        for a, b in zip(whole["seeds"], part["seeds"]):
            if (a["failed_checks"], a["failure"]) != (b["failed_checks"], b["failure"]):
                seen_a = a["failed_checks"] + ([f"failure:{a['failure']}"] if a["failure"] else [])
                seen_b = b["failed_checks"] + ([f"failure:{b['failure']}"] if b["failure"] else [])
                found[mutant] = f"seed {a['seed']}: every step {seen_a}, by reach {seen_b}"
                break
    return found


def prove(
    *,
    sample: int | None = None,
    ids: list[str] | None = None,
    functions: list[str] | None = None,
    seeds: tuple[int, ...],
    jobs: int = 2,
    out: str | Path | None = None,
) -> int:
    """Grade the selected mutants on every step and by reach; print and write what differs; 1 if anything does.

    Writes ``reach-proof.json`` into ``out``: the seeds, the step gradings of
    each way, the wall time of each and every difference.
    """
    import time

    from .run import reach_steps, select
    from .runner import grade_all

    mutants = select(sample=sample, ids=ids, functions=functions)
    started = time.monotonic()
    steps = reach_steps(mutants, seeds)
    by_reach = grade_all(mutants, seeds, jobs=jobs, steps=steps)
    reach_seconds = time.monotonic() - started
    started = time.monotonic()
    every = grade_all(mutants, seeds, jobs=jobs)
    every_seconds = time.monotonic() - started
    found = differences(every, by_reach)
    seconds = {"every step": every_seconds, "by reach": reach_seconds}
    return _proved("reach proof", "mutants", seeds, steps, seconds, found, out, "reach-proof.json")


def prove_planted(*, seeds: tuple[int, ...] = (1, 2, 3, 4, 5), jobs: int = 2, out: str | Path | None = None) -> int:
    """The same proof for the planted defects and mistakes, graded as ``tests/test_stability.py`` grades them.

    Writes ``reach-proof-planted.json`` into ``out``; returns 1 if any module's outcome differs on a seed.
    """
    import time

    from .stability import corpus, grade_corpus

    modules = {name: text for name, text in corpus().items() if name.startswith(("defect/", "mistake/"))}
    started = time.monotonic()
    reach = Reach(seeds)
    steps = {name: reach.planted_steps(text.decode("utf-8")) for name, text in modules.items()}
    by_reach = grade_corpus(modules, seeds, jobs=jobs, steps=steps)
    reach_seconds = time.monotonic() - started
    started = time.monotonic()
    every = grade_corpus(modules, seeds, jobs=jobs)
    every_seconds = time.monotonic() - started
    found = {
        name: f"seed {seed}: every step {list(every[name][seed])}, by reach {list(by_reach[name][seed])}"
        for name in modules
        for seed in seeds
        if every[name][seed] != by_reach[name][seed]
    }
    seconds = {"every step": every_seconds, "by reach": reach_seconds}
    return _proved("reach proof, planted", "modules", seeds, steps, seconds, found, out, "reach-proof-planted.json")


def _proved(
    title: str,
    noun: str,
    seeds: tuple[int, ...],
    steps: dict[str, list[int]],
    seconds: dict[str, float],
    found: dict[str, str],
    out: str | Path | None,
    file_name: str,
) -> int:
    """Write a proof's summary to ``out/file_name``, print it and each difference; 1 if any was found."""
    import json

    graded = {"every step": len(steps) * len(ALL_STEPS), "by reach": sum(map(len, steps.values()))}
    summary = {
        "seeds": list(seeds),
        noun: len(steps),
        "step_gradings": graded,
        "seconds": {way: round(value, 1) for way, value in seconds.items()},
        "differences": found,
    }
    if out is not None:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / file_name).write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(
        f"{title}: {len(steps)} {noun} on seeds {list(seeds)}; step gradings every step {graded['every step']}, "
        f"by reach {graded['by reach']}; {seconds['every step']:.0f} s against {seconds['by reach']:.0f} s; "
        f"{len(found)} difference(s)"
    )
    for name, what in sorted(found.items()):
        print(f"  {name}: {what}")
    return 1 if found else 0
