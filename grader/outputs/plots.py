"""Plots of a class: where the scores fall, which checks fail, which steps cost points.

Figures are drawn on ``matplotlib.figure.Figure`` with the Agg canvas, never
through ``pyplot``, so writing PNGs neither changes nor needs the backend of
the notebook that calls it.

Example::

    >>> paths = write_plots(book, stats, steps, Path("out/plots"))   # doctest: +SKIP
    >>> [p.name for p in paths]                                        # doctest: +SKIP
    ['score_histogram.png', 'check_pass_rate.png', 'step_scores.png']
"""

from __future__ import annotations

import io
import multiprocessing
import sys
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from grader.limits import PLOT_WAIT
from grader.outputs.gradebook import (
    COUNTED_RULE,
    COUNTED_RULE_NO_TEXTS,
    Records,
    check_stats,
    counted_records,
    counted_words,
    gradebook_frame,
    step_frame,
)

# No date or version in the PNG: the same class gives the same bytes.
_PNG_METADATA = {"Software": None}
PLOTS = ("score_histogram", "check_pass_rate", "step_scores")
PLOT_TYPES = {"png": "image/png", "svg": "image/svg+xml"}
_METADATA = {"png": _PNG_METADATA, "svg": {"Date": None, "Creator": None}}
PLOT_FILES = ("score_histogram.png", "check_pass_rate.png", "step_scores.png")  # in write_plots' order


HISTOGRAM_BARS = 40  # at most: one bar per possible score up to 40 points, then bars of several points


def score_bin_width(top: int) -> int:
    """Points per bar of the score histogram: 1, or as few whole points as keep it to ``HISTOGRAM_BARS`` bars.

    >>> score_bin_width(20), score_bin_width(133), score_bin_width(202)
    (1, 4, 6)
    """
    return max(1, -(-(top + 1) // HISTOGRAM_BARS))


def score_histogram(book: pd.DataFrame, rule: str = COUNTED_RULE) -> Figure:
    """Histogram of total scores: how many learners (whole numbers) in each bar of whole points."""
    fig = Figure(figsize=(6, 3.5), layout="constrained")
    ax = fig.add_subplot()
    top = int(book["max_score"].max()) if len(book) else 1
    width = score_bin_width(top)
    scores = book["score"].dropna().to_numpy(dtype=float)  # an empty score is no grade: not a bar at 0
    # Edges halfway between whole scores: a bar holds the scores k*width .. (k+1)*width - 1.
    ax.hist(scores, bins=[k * width - 0.5 for k in range(top // width + 2)], rwidth=0.85, color="#4477aa")
    per_bar = "" if width == 1 else f", {width} points a bar"
    _say_counted(fig, len(scores), rule)
    ax.set(
        title=f"Scores ({len(scores)} learners counted)",
        xlabel=f"score (of {top}{per_bar})",
        ylabel="learners",
        xlim=(-1, top + 1),
    )
    # Learners and points are counted in whole numbers: no tick at 0.5 learner.
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return fig


PANEL_COLUMNS = 3  # steps side by side in the pass-rate plot: 1200 px wide at 100 dpi
PANEL_INCHES_PER_CHECK = 0.15
# A panel's place, in inches: check names on its left, the bars, room for a "100%" label on the right;
# the panel's title above and its tick labels below. Placed by hand: constrained layout measured
# every label of twelve panels twice and took five seconds a drawing.
PANEL_WIDTH, LABELS_WIDTH, RIGHT_ROOM = 4.0, 1.65, 0.3
ABOVE, BELOW, TOP = 0.3, 0.35, 0.45
NOTE = 0.2  # inches under the last row: who the rates count


def check_pass_rate(stats: pd.DataFrame, rule: str = COUNTED_RULE) -> Figure:
    """The share of learners passing each check, one panel a step (checks in registry order, step 1 first).

    One panel a step keeps every label readable at the PNG's own size
    (at most about 1200 px on each side for the eleven steps), where one
    long bar chart of every check was 1860 px tall.
    """
    steps = sorted(int(step) for step in stats["step"].unique()) if len(stats) else []
    if not steps:
        fig = Figure(figsize=(6, 2.5), layout="constrained")
        ax = fig.add_subplot()
        ax.set(title="Pass rate per check", xlim=(0, 100))
        ax.text(50, 0.5, "no graded checks", ha="center", va="center")
        return fig
    rows = [steps[i : i + PANEL_COLUMNS] for i in range(0, len(steps), PANEL_COLUMNS)]
    slots = [max(int((stats["step"] == step).sum()) for step in row) for row in rows]
    width = PANEL_WIDTH * min(PANEL_COLUMNS, len(steps))
    height = TOP + sum(n * PANEL_INCHES_PER_CHECK + ABOVE + BELOW for n in slots) + NOTE
    fig = Figure(figsize=(width, height))
    counted = int(stats["graded"].max())
    fig.suptitle(f"Pass rate per check (% of the {counted} learners counted passing)", y=1 - 0.12 / height)
    fig.text(0.5, 0.05 / height, f"Counted: {rule}.", ha="center", va="bottom", fontsize=7)
    top = height - TOP  # inches from the bottom to the top of the current row
    for row, n in zip(rows, slots):
        bars = n * PANEL_INCHES_PER_CHECK
        bottom = top - ABOVE - bars
        for c, step in enumerate(row):
            rect = [
                (c * PANEL_WIDTH + LABELS_WIDTH) / width,
                bottom / height,
                (PANEL_WIDTH - LABELS_WIDTH - RIGHT_ROOM) / width,
                bars / height,
            ]
            _step_panel(fig.add_axes(rect), stats[stats["step"] == step], step, n)
        top = bottom - BELOW
    return fig


def _step_panel(ax, stats: pd.DataFrame, step: int, slots: int) -> None:
    """One step's checks as horizontal bars, named without their ``stepN/`` prefix (the panel's title has it).

    ``slots`` is the most checks of a step in the row: every bar of a row is as thick.
    """
    names = [check.split("/", 1)[-1] for check in stats["check"]]
    bars = ax.barh(
        names, stats["pass_rate"] * 100, color=["#228833" if rate >= 0.5 else "#ee6677" for rate in stats["pass_rate"]]
    )
    ax.bar_label(bars, fmt="%.0f%%", fontsize=6, padding=2)  # a 0% bar has no length: its number shows it
    ax.set_ylim(slots - 0.5, -0.5)  # first check on top
    ax.set(title=f"Step {step}", xlim=(0, 100))
    ax.set_xticks([0, 50, 100])
    ax.tick_params(axis="y", labelsize=7)
    ax.tick_params(axis="x", labelsize=7)


def step_scores(steps: pd.DataFrame, rule: str = COUNTED_RULE) -> Figure:
    """Mean share of points per step, with each step's maximum marked."""
    fig = Figure(figsize=(6, 3.5), layout="constrained")
    ax = fig.add_subplot()
    if not steps.empty:
        per_step = steps.groupby("step")[["score", "max_score"]].mean()
        ax.bar(per_step.index, per_step["score"], color="#4477aa", label="mean score")
        ax.scatter(per_step.index, per_step["max_score"], marker="_", s=400, color="black", label="max")
        ax.set_xticks(list(per_step.index))
        ax.set_ylim(0, per_step["max_score"].max() * 1.3)  # room for the legend above the bars
        ax.legend(loc="upper right", fontsize=8, ncols=2)
    counted = steps["learner"].nunique() if not steps.empty else 0
    _say_counted(fig, counted, rule)
    ax.set(title=f"Score per step (mean of {counted} learners counted)", xlabel="step", ylabel="points")
    return fig


def _say_counted(fig: Figure, counted: int, rule: str) -> None:
    """The rule of who a plot counts, under it (:func:`grader.outputs.gradebook.counted_words`)."""
    fig.supxlabel(counted_words(counted, rule).replace("counted: ", "counted:\n", 1), fontsize=7)


def save_png(fig: Figure, path: Path) -> Path:
    """Render ``fig`` to ``path`` as PNG with the Agg canvas."""
    FigureCanvasAgg(fig)
    fig.savefig(path, format="png", dpi=100, metadata=_PNG_METADATA)
    return path


def write_plots(
    book: pd.DataFrame, stats: pd.DataFrame, steps: pd.DataFrame, folder: Path, rule: str = COUNTED_RULE
) -> list[Path]:
    """Write the three class plots into ``folder`` and return their paths (``rule``: who they count, in words)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    figures = [score_histogram(book, rule), check_pass_rate(stats, rule), step_scores(steps, rule)]
    return [save_png(figure, folder / name) for figure, name in zip(figures, PLOT_FILES)]


def start_plots(
    book: pd.DataFrame, stats: pd.DataFrame, steps: pd.DataFrame, folder: Path, rule: str = COUNTED_RULE
) -> Callable[[], list[Path]]:
    """Start :func:`write_plots` in a forked process; the function returned waits for it and gives the paths.

    Drawing is half the CPU of a class's outputs and needs none of the
    others, so a second core draws while the caller writes the rest (a
    batch's workers have stopped by then). The forked process has the
    caller's data and modules, so its PNGs are the same bytes. Where no
    process can be forked, or the forked one fails or has not finished
    after ``PLOT_WAIT`` seconds, the plots are drawn in the caller when it
    waits: the same files, or the same error, only later.

    >>> wait = start_plots(book, stats, steps, Path("out/plots"))   # doctest: +SKIP
    >>> [p.name for p in wait()]                                     # doctest: +SKIP
    ['score_histogram.png', 'check_pass_rate.png', 'step_scores.png']
    """
    draw = partial(write_plots, book, stats, steps, folder, rule)
    try:
        process = multiprocessing.get_context("fork").Process(
            target=_quietly, args=(draw,), name="agtool-plots", daemon=True
        )
        process.start()
    except (ValueError, OSError):  # no fork on this platform, or no process to be had now
        return draw

    def wait() -> list[Path]:
        process.join(PLOT_WAIT)
        if process.exitcode is None:
            process.kill()
            process.join()
        return _plot_paths(folder) if process.exitcode == 0 else draw()

    return wait


def _plot_paths(folder: Path) -> list[Path]:
    """The paths :func:`write_plots` wrote into ``folder``, in its order."""
    return [Path(folder) / name for name in PLOT_FILES]


def _quietly(draw: Callable[[], object]) -> None:
    """``draw()`` in the forked process: a failure only sets the exit code (the caller draws again and raises it)."""
    try:
        draw()
    except BaseException:
        sys.exit(1)


def plot_bytes(records: Records, name: str, fmt: str, starter: Iterable[str] | None = None) -> bytes:
    """One of the class plots (``score_histogram``, ``check_pass_rate``, ``step_scores``) as PNG or SVG bytes.

    Each counts :func:`~grader.outputs.gradebook.counted_records` of ``records`` (``starter``: the learners
    who handed in the starter unchanged; ``None``: not known, the files' texts not at hand) and says so under it.

    >>> plot_bytes([], "step_scores", "svg")[:5]
    b'<?xml'
    """
    if name not in PLOTS or fmt not in PLOT_TYPES:
        raise KeyError(f"no plot {name}.{fmt}: plots are {', '.join(PLOTS)} as png or svg")
    counted = counted_records(records, starter or ())  # every plot counts these, as summary.md does
    rule = COUNTED_RULE if starter is not None else COUNTED_RULE_NO_TEXTS
    if name == "score_histogram":
        fig = score_histogram(gradebook_frame(counted), rule)
    elif name == "check_pass_rate":
        fig = check_pass_rate(check_stats(counted), rule)
    else:
        fig = step_scores(step_frame(counted), rule)
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=100, metadata=_METADATA[fmt])
    return buf.getvalue()
