"""Where a batch submission's CPU time goes, and the throughput ceiling that follows.

Three parts add up to what one submission costs the machine in ``agtool-grade
batch`` (its steps in one step child, one after another, as a batch worker
runs them):

* ``isolation_ms``: a submission's eight steps with no probe at all -- the
  fork from the fork server, isolation and limits, eight imports of the module
  with the fork server's work between two steps, exit and reaping.
* ``probe_work_ms``: the probes of all eight steps, run in this process on a
  fresh import per step (no fork): the learner code the checks exercise,
  mostly LangGraph builds and runs. ``graph_runs`` counts the compiles.
* ``parent_ms``: the grading process's own CPU per submission (drawing and
  sending probes, judging, the report).

``ceiling_per_s`` is ``cores * 1000 / (isolation_ms + probe_work_ms +
parent_ms)``: the submissions per second no scheduling can beat on this
machine with this check suite; ``work_only_per_s`` the same without the
isolation (probe work and the grading process only).

Example::

    >>> figures = measure_breakdown(repeat=3)   # doctest: +SKIP
    >>> sorted(figures)                          # doctest: +SKIP
    ['ceiling_per_s', 'graph_runs', 'isolation_ms', 'parent_ms', 'probe_work_ms', 'work_only_per_s']
"""

from __future__ import annotations

import os
import secrets
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from grader import grading
from grader.checks.registry import checks_for
from grader.engine import child, probes
from grader.engine.client import EngineClient
from grader.engine.protocol import StepJob, encode_source
from grader.report import STEPS

SOLUTION = Path(__file__).resolve().parent.parent / "solutions" / "tools.py"


def measure_isolation(source: bytes, n: int = 10) -> float:
    """Mean wall ms of ``n`` submissions' eight probe-less steps, one step child each (as a batch worker runs them)."""

    def jobs() -> list[StepJob]:
        return [
            StepJob(step=step, source_b64=encode_source(source), probes=(), nonce=secrets.token_hex(16))
            for step in STEPS
        ]

    with EngineClient() as engine:
        engine.run_many(jobs(), chain=True)  # start-up is not part of it
        start = time.perf_counter()
        for _ in range(n):
            results = engine.run_many(jobs(), chain=True)
            if any(r.infra_error for r in results):
                raise RuntimeError(results[0].infra_error)
        return (time.perf_counter() - start) / n * 1000


def measure_probe_work(source: bytes, seed: int = 1, repeat: int = 5) -> tuple[float, int]:
    """Median ms of every step's probes run in-process, and the graph compiles they cause."""
    from langgraph.graph import StateGraph

    compiles = [0]
    original = StateGraph.compile

    def counting_compile(self, *args, **kwargs):
        compiles[0] += 1
        return original(self, *args, **kwargs)

    jobs = {step: grading._plan([c for c in checks_for([step])], seed)[1] for step in STEPS}
    times = []
    StateGraph.compile = counting_compile
    here = os.getcwd()
    try:
        for rep in range(repeat):
            compiles[0] = 0
            elapsed = 0.0
            for step, job in jobs.items():
                scratch = tempfile.mkdtemp(prefix="agtool-breakdown-")
                try:
                    path = child._prepare_scratch(scratch, source)
                    ctx = child.StepContext(scratch, path, f"agtool_breakdown_{rep}_{step}")
                    start = time.perf_counter()
                    module = ctx.fresh_module()
                    for probe in job:
                        probes.run_probe(module, probe, ctx)
                    elapsed += time.perf_counter() - start
                finally:
                    os.chdir(here)
                    shutil.rmtree(scratch, ignore_errors=True)
            times.append(elapsed * 1000)
    finally:
        StateGraph.compile = original
    return statistics.median(times), compiles[0]


def measure_parent(path: Path, n: int = 20) -> float:
    """This process's CPU ms per ``grade()`` of ``path`` with one seed (the batch's case)."""
    with EngineClient() as engine:
        grading.grade(path, seed=1, engine=engine, parallel=1)
        start = time.process_time()
        for _ in range(n):
            grading.grade(path, seed=1, engine=engine, parallel=1)
        return (time.process_time() - start) / n * 1000


def measure_breakdown(repeat: int = 5) -> dict:
    """The three parts (ms per submission, of the reference solution) and the ceiling they imply."""
    source = SOLUTION.read_bytes()
    figures = {"isolation_ms": measure_isolation(source, n=2 * repeat)}
    figures["probe_work_ms"], figures["graph_runs"] = measure_probe_work(source, repeat=repeat)
    figures["parent_ms"] = measure_parent(SOLUTION, n=4 * repeat)
    total = figures["isolation_ms"] + figures["probe_work_ms"] + figures["parent_ms"]
    cores = os.cpu_count() or 1
    figures["ceiling_per_s"] = cores * 1000 / total
    # What would be left if the isolation cost nothing at all.
    figures["work_only_per_s"] = cores * 1000 / (figures["probe_work_ms"] + figures["parent_ms"])
    return figures


def render_breakdown(figures: dict) -> str:
    """The breakdown as a Markdown table."""
    steps = len(STEPS)
    return (
        "\n".join(
            [
                "| cost per submission (solution) | ms |",
                "|---|---|",
                f"| isolation: {steps} steps with no probe in a step child (fork, isolate, {steps} imports, exit) "
                f"| {figures['isolation_ms']:.0f} |",
                f"| probe work in-process ({figures['graph_runs']} LangGraph compiles) | {figures['probe_work_ms']:.0f} |",
                f"| grading process (draw, judge, report) | {figures['parent_ms']:.0f} |",
                f"| ceiling on {os.cpu_count()} cores | {figures['ceiling_per_s']:.1f} submissions/s |",
                f"| ceiling if the isolation cost nothing | {figures['work_only_per_s']:.1f} submissions/s |",
            ]
        )
        + "\n"
    )


def measure_in_new_process(repeat: int = 5) -> dict:
    """:func:`measure_breakdown` in a new interpreter that imports only what it needs.

    The probe work runs in the measuring process, and its cost grows with
    what that process has imported (``inspect`` copies ``sys.modules`` for
    every built-in signature LangGraph asks for): measured from inside the
    benchmark (nbclient, matplotlib and the test catalog loaded) it came out
    20-60% dearer than from a process of its own, like the batch's workers.
    """
    import json
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, __file__, "--json", "--repeat", str(repeat)],
        check=True,
        capture_output=True,
        text=True,
        cwd=str(SOLUTION.parent.parent),
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    import argparse
    import json

    parser = argparse.ArgumentParser()
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON line")
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    figures = measure_breakdown(repeat=options.repeat)
    print(json.dumps(figures) if options.json else render_breakdown(figures))
