"""Side-by-side benchmark of the grader: prints five figures in one run.

(a) one full check of the solution from a cold process (``agtool-grade check``),
    and (a') one in a process whose fork server stopped after being idle,
(b) a warm check of one step, as the notebook's Check cell sees it,
(c) batch throughput on generated submissions with ``--jobs 2`` (the median of
    ``--batch-repeat`` runs), each run beside the work-only ceiling of the cost
    breakdown measured just before it, and the median of their ratios,
(d) the same submissions graded the way notebook graders do it: a grading
    notebook executed per submission with nbclient (on a sample), and (c)/(d),
(e) peak memory per batch worker (PSS of the worker, its fork server and
    its step children, sampled every 50 ms in a batch of its own: the
    sampler slows what it samples, so the throughput runs go without it).

Below the table it prints where one submission's CPU time goes (step
processes, probe work, grading process) and the throughput ceiling those
costs allow on this machine (``benchmarks/cost_breakdown.py``).

It writes the table to ``benchmarks/results/bench.md`` and a bar chart to
``benchmarks/results/bench.png``. Run it with ``make bench`` or::

    python benchmarks/bench.py --submissions 1000 --jobs 2

CI runs it small (``--submissions 40 --nb-sample 2 --repeat 3 --batch-repeat 1``) as a smoke test
that prints the numbers; no test asserts a wall time.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parent.parent
SOLUTION = REPO / "solutions" / "tools.py"
sys.path.insert(0, str(REPO))  # tests.defects is part of the repo, not of the package

from grader.grading import grade  # noqa: E402
from tests.defects.catalog import DEFECTS, materialise_text  # noqa: E402

sys.path.insert(0, str(REPO / "benchmarks"))
from cost_breakdown import measure_in_new_process, render_breakdown  # noqa: E402

TARGETS = {
    "cold": ("(a) cold full check", "s", "<= 1.0 s", lambda v: v <= 1.0),
    "cold_after_idle": ("(a') full check after the warm parent's idle stop", "s", "<= 1.5 s", lambda v: v <= 1.5),
    "warm": ("(b) warm step check (notebook)", "s", "<= 0.3 s", lambda v: v <= 0.3),
    "batch": ("(c) batch, --jobs 2 (median of the batch runs)", "submissions/s", ">= 12/s", lambda v: v >= 12),
    "work_only": ("(c0) work-only ceiling (cost breakdown before each batch run, median)", "submissions/s", "", None),
    "of_ceiling": ("(c)/(c0) (median of the runs' ratios)", "", ">= 0.75", lambda v: v >= 0.75),
    "notebook": ("(d) notebook per submission (nbclient)", "submissions/s", "", None),
    "ratio": ("(c)/(d)", "x", ">= 50x", lambda v: v >= 50),
    "memory": ("(e) peak memory per worker (PSS)", "MB", "<= 200 MB", lambda v: v <= 200),
}


def measure_cold(repeat: int) -> float:
    """Median wall time of ``python -m grader check solutions/tools.py`` in a new process."""
    times = []
    for i in range(repeat):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "grader", "check", str(SOLUTION), "--seed", str(i), "--format", "json"],
            check=True,
            stdout=subprocess.DEVNULL,
            cwd=REPO,
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure_cold_after_idle(repeat: int) -> float:
    """Median wall time of a full check in a process whose fork server stopped after being idle.

    What a learner's Check costs after ten idle minutes: the kernel still has
    the grader imported, its fork server is gone and starts again.
    """
    from grader.engine.client import EngineClient

    times = []
    with EngineClient(idle_timeout=0.5) as engine:
        grade(SOLUTION, seed=0, engine=engine)
        for i in range(repeat):
            deadline = time.monotonic() + 30
            while engine.pid is not None and time.monotonic() < deadline:
                time.sleep(0.1)
            start = time.perf_counter()
            report = grade(SOLUTION, seed=i, engine=engine)
            times.append(time.perf_counter() - start)
            assert report.passed, report.summary()
    return statistics.median(times)


def measure_warm(repeat: int) -> float:
    """Median wall time of one step's check once the fork server is warm (what check(N) costs)."""
    grade(SOLUTION, steps=[1], seed=0)  # start the fork server, as the first Check cell does
    times = []
    for i in range(repeat):
        for step in range(1, 9):
            start = time.perf_counter()
            report = grade(SOLUTION, steps=[step], seed=i)
            times.append(time.perf_counter() - start)
            assert report.passed, f"the solution failed step {step}: {report.summary()}"
    return statistics.median(times)


def make_class(folder: Path, n: int) -> list[Path]:
    """``n`` learner folders: the solution and every planted defect, round-robin."""
    sources = [SOLUTION.read_text(encoding="utf-8")]
    sources += [materialise_text(check_id) for check_id in DEFECTS]
    paths = []
    for i in range(n):
        learner = folder / f"learner{i:04d}"
        learner.mkdir(parents=True)
        (learner / "tools.py").write_text(sources[i % len(sources)], encoding="utf-8")
        paths.append(learner / "tools.py")
    return paths


def _pss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def _tree(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(_children(p))
    return found


class WorkerMemory(threading.Thread):
    """Samples, every 50 ms, the PSS of each worker subtree under the batch process."""

    def __init__(self, batch_pid: int) -> None:
        super().__init__(daemon=True)
        self.batch_pid = batch_pid
        self.peak = 0.0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            # Workers are the batch process's children; each carries its fork server and step children.
            for worker in _children(self.batch_pid):
                self.peak = max(self.peak, sum(_pss_mb(p) for p in _tree(worker)))
            time.sleep(0.05)


def measure_batch(folder: Path, jobs: int, n: int, *, sample_memory: bool = False) -> tuple[float, float]:
    """Submissions per second of ``agtool-grade batch`` and, with ``sample_memory``, the peak PSS of one worker (MB).

    Throughput is measured without the sampler: reading ``smaps_rollup`` of
    every process of the tree 20 times a second walks their page tables,
    takes CPU from the batch and slows the page faults it measures.
    """
    out = folder.parent / "batch-out"
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "grader", "batch", str(folder), "--out", str(out), "--jobs", str(jobs), "--seed", "1"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    sampler = WorkerMemory(proc.pid) if sample_memory else None
    if sampler is not None:
        sampler.start()
    code = proc.wait()
    elapsed = time.perf_counter() - start
    if sampler is not None:
        sampler.stop.set()
        sampler.join()
    if code not in (0, 1):
        raise RuntimeError(f"agtool-grade batch exited with {code}")
    rows = (out / "grades.csv").read_text(encoding="utf-8").count("\n") - 1
    if rows != n:
        raise RuntimeError(f"the gradebook has {rows} rows for {n} submissions")
    return n / elapsed, sampler.peak if sampler is not None else 0.0


GRADING_NOTEBOOK_CELLS = [
    # What a notebook grader runs per submission: load the module, then test cells.
    "import importlib.util, sys\n"
    "spec = importlib.util.spec_from_file_location('submission', SUBMISSION)\n"
    "tools = importlib.util.module_from_spec(spec); sys.modules['submission'] = tools\n"
    "spec.loader.exec_module(tools)",
    "assert tools.validate_args('stock_lookup', {'sku': 'SKU-1001', 'region': 'north', 'limit': True}) == 'type:limit'\n"
    "assert tools.call_tool('stock_lookup', {'sku': 'SKU-1001', 'region': 'mars', 'limit': 2})['error'] == 'args:allowed:region'",
    "r = tools.handle({'sku': 'SKU-1001', 'region': 'mars', 'limit': 2})\nassert r['ok'] and r['attempts'] == 2",
    "r = tools.handle({'sku': 'SKU-9999', 'region': 'north', 'limit': 2})\n"
    "assert not r['ok'] and 'result:empty' in r['answer']",
]


def measure_notebook(paths: list[Path]) -> float:
    """Submissions per second when a four-cell grading notebook runs per submission."""
    start = time.perf_counter()
    for path in paths:
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(f"SUBMISSION = {str(path)!r}")]
        nb.cells += [nbformat.v4.new_code_cell(src) for src in GRADING_NOTEBOOK_CELLS]
        # allow_errors: a defective submission fails its asserts, as it would in a notebook grader.
        NotebookClient(nb, timeout=60, kernel_name="python3", allow_errors=True).execute()
    return len(paths) / (time.perf_counter() - start)


def render_table(figures: dict, args: argparse.Namespace) -> str:
    lines = [
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}",
        f"Run: {args.submissions} submissions, --jobs {args.jobs}, notebook sample {args.nb_sample}, "
        f"repeat {args.repeat}, batch runs {args.batch_repeat}",
        "",
        "| figure | measured | target | met |",
        "|---|---|---|---|",
    ]
    for key, (title, unit, target, ok) in TARGETS.items():
        value = figures[key]
        met = "" if ok is None else ("yes" if ok(value) else "NO")
        lines.append(f"| {title} | {value:.3g} {unit} | {target} | {met} |")
    lines += [
        "",
        "Each batch run beside the work-only ceiling measured just before it "
        "(submissions/s; (c)/(c0) above is the median of these ratios):",
        "",
        "| batch run | (c) | (c0) | (c)/(c0) |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {n} | {rate:.3g} | {ceiling:.3g} | {rate / ceiling:.3g} |"
        for n, (rate, ceiling) in enumerate(figures["pairs"], 1)
    ]
    return "\n".join(lines) + "\n"


def plot(figures: dict, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    bars = left.bar(["(a) cold check", "(b) warm step"], [figures["cold"], figures["warm"]], color=["#888", "#2a7"])
    left.bar_label(bars, fmt="%.2f s")
    left.set_ylabel("seconds (median)")
    left.set_title("Time to feedback")
    bars = right.bar(
        ["(c) agtool-grade batch", "(d) notebook per submission"],
        [figures["batch"], figures["notebook"]],
        color=["#2a7", "#888"],
    )
    right.bar_label(bars, fmt="%.2f/s")
    right.set_ylabel("submissions per second")
    right.set_title(f"Throughput: {figures['ratio']:.0f}x")
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=1000)
    parser.add_argument("--nb-sample", type=int, default=10, help="submissions graded the notebook way")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--batch-repeat", type=int, default=3, help="batch runs; the table shows their median")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = parser.parse_args(argv)

    figures = {
        "cold": measure_cold(args.repeat),
        "cold_after_idle": measure_cold_after_idle(args.repeat),
        "warm": measure_warm(args.repeat),
    }
    with tempfile.TemporaryDirectory() as tmp:
        paths = make_class(Path(tmp) / "class", args.submissions)
        # Each batch run right after a ceiling of its own, in a process as lean as the
        # batch's workers (cost_breakdown.measure_in_new_process), before any notebook
        # kernel has started: this machine's speed drifts by a fifth within minutes, so
        # (c)/(c0) is the median of the pairs' ratios, not a ratio of medians taken apart.
        pairs = []
        for _ in range(args.batch_repeat):
            breakdown = measure_in_new_process(repeat=args.repeat)
            rate = measure_batch(Path(tmp) / "class", args.jobs, args.submissions)[0]
            pairs.append((rate, breakdown))
        figures["batch"] = statistics.median(rate for rate, _ in pairs)
        figures["work_only"] = statistics.median(b["work_only_per_s"] for _, b in pairs)
        figures["of_ceiling"] = statistics.median(rate / b["work_only_per_s"] for rate, b in pairs)
        figures["pairs"] = [(rate, b["work_only_per_s"]) for rate, b in pairs]
        breakdown = sorted(pairs, key=lambda pair: pair[1]["work_only_per_s"])[len(pairs) // 2][1]
        # Memory in a run of its own (100 submissions), with the sampler on.
        sample = min(args.submissions, 100)
        make_class(Path(tmp) / "memory" / "class", sample)
        figures["memory"] = measure_batch(Path(tmp) / "memory" / "class", args.jobs, sample, sample_memory=True)[1]
        figures["notebook"] = measure_notebook(paths[: args.nb_sample])
    figures["ratio"] = figures["batch"] / figures["notebook"]

    table = render_table(figures, args) + "\nWhere a batch submission's time goes:\n\n" + render_breakdown(breakdown)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench.md").write_text(table, encoding="utf-8")
    plot(figures, args.out / "bench.png")
    print(table)
    print(f"written: {args.out / 'bench.md'}, {args.out / 'bench.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
