"""An in-process stand-in for the engine, for fast probe/judge unit tests.

It runs a step's probes against a module imported in *this* process (so it
is for the grader's own tests only; the real engine isolates learner code in
a child). It follows the engine's protocol: one module object per step, probes
in registry order, ``judge`` only when every observation is usable.

Example::

    >>> verdicts = grade_in_process("solutions/tools.py", steps=[1], seed=3)
    >>> all(v.passed for v in verdicts.values())
    True
"""

from __future__ import annotations

import importlib.util
import itertools
import shutil
import sys
import tempfile
from pathlib import Path

from grader.checks.registry import Verdict, check_rng, checks_for
from grader.engine.instrument import compile_instrumented
from grader.engine.probes import run_probe
from grader.engine.report_files import resolve_report_files

_names = itertools.count()


class Context:
    """What ``run_probe`` needs besides the module: a scratch folder and fresh imports."""

    def __init__(self, scratch: Path, module_path: Path) -> None:
        self.scratch = str(scratch)
        self.module_path = str(module_path)

    def fresh_module(self):
        name = f"agtool_harness_{next(_names)}"
        spec = importlib.util.spec_from_file_location(name, self.module_path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        # Compiled as the step child compiles it: with a run counter at the top of every function, which the
        # probes watch (a tool whose code carries none fails closed, as in the engine).
        with open(self.module_path, "rb") as fh:
            code = compile_instrumented(fh.read(), self.module_path)
        exec(code, module.__dict__)
        return module


def grade_in_process(path, *, steps=None, only=None, seed=0) -> dict[str, Verdict]:
    """Verdict per check id for the module file at ``path``."""
    verdicts: dict[str, Verdict] = {}
    selected = checks_for(steps, only)
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        (scratch / "agtool").mkdir()
        module_path = scratch / "agtool" / "tools.py"
        shutil.copyfile(path, module_path)
        ctx = Context(scratch, module_path)
        for step_no in sorted({c.step for c in selected}):
            module = ctx.fresh_module()
            for check in [c for c in selected if c.step == step_no]:
                probes = check.probes(check_rng(seed, check.id))
                # The fork server reads report files after a step; here, after each probe.
                observations = [resolve_report_files(run_probe(module, p.to_json(), ctx), ctx.scratch) for p in probes]
                bad = [o for o in observations if not isinstance(o, dict) or "probe_error" in o]
                if bad:
                    verdicts[check.id] = Verdict.fail(f"probe error: {bad[0]}")
                else:
                    verdicts[check.id] = check.judge(probes, observations)
    return verdicts
