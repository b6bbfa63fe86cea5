"""``agtool-grade``: the command line, a thin layer over the API functions.

Subcommands (every one is declared here; an option's default is the default
of the API function it feeds, read from that function's signature)::

    agtool-grade check PATH [--step N]... [--only ID]... [--seed S]
                            [--format text|json|markdown] [--out FILE] [--timeout S]
                            [--parallel N] [--sandbox none|bwrap|auto]
    agtool-grade checks [--markdown]          list the registered checks
    agtool-grade batch SUBMISSIONS --out OUT  grade a class (the ``batch`` extra)
    agtool-grade gradescope                   Gradescope's autograder entry
    agtool-grade serve                        the classroom grading service (the ``service`` extra)

Exit status: 0 = every check passed (or the command did its work),
1 = graded with failures, 2 = could not grade (bad path, unknown check id,
bad step number, usage, a missing extra).

Example::

    >>> build_parser().parse_args(["check", "tools.py"]).timeout == STEP_TIMEOUT
    True
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import math
import sys
from collections.abc import Iterator
from pathlib import Path

from grader import settings
from grader.batch.gradescope import RESULTS_FILE, SUBMISSION_DIR, grade_for_gradescope
from grader.checks.registry import UnknownCheck, checks_for
from grader.engine.client import EngineClient
from grader.engine.sandbox import IsolationUnavailable, require
from grader.escape import md_cell, terminal_text
from grader.grading import STEP_TIMEOUT, grade
from grader.limits import SUBMISSION_TIMEOUT
from grader.locate import SubmissionNotFound
from grader.render import render_json, render_markdown, render_text
from grader.report import STEPS
from grader.service.command import add_serve_parser
from grader.shared_options import BATCH, CHECK, DEFAULT_SANDBOX, GRADESCOPE, add_shared_options, positive_int

EXIT_PASSED, EXIT_FAILED, EXIT_UNGRADABLE = 0, 1, 2
RENDERERS = {"text": render_text, "json": render_json, "markdown": render_markdown}
BATCH_EXTRA = "agtool-grade batch needs the batch extra: pip install 'agtool-lab[batch]'"


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``), run the subcommand, return its exit status.

    The environment's settings are read once, here, and travel with the arguments (``args.settings``).
    """
    environment = settings.Settings.from_environ()
    parser = build_parser(environment)
    args = parser.parse_args(argv)
    args.settings = environment
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_UNGRADABLE
    try:
        return args.func(args)
    except KeyboardInterrupt:  # the engine's fork server and its steps are stopped at exit
        print("agtool-grade: interrupted", file=sys.stderr)
        return 130


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line naming the problem (exit 2)."""

    def error(self, message: str):
        self.exit(
            EXIT_UNGRADABLE,
            f"{self.prog}: error: {terminal_text(message, multiline=False)} (see: {self.prog} --help)\n",
        )


def build_parser(environment: settings.Settings | None = None) -> argparse.ArgumentParser:
    """The ``agtool-grade`` parser; ``environment`` gives the defaults that come from the environment.

    >>> build_parser().prog
    'agtool-grade'
    """
    parser = _Parser(prog="agtool-grade", description="Grade agtool-lab's tools.py, step by step.")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for add in (add_check_parser, add_checks_parser, add_batch_parser, add_gradescope_parser):
        add(subparsers)
    add_serve_parser(subparsers, environment)
    return parser


def _default(function, parameter: str):
    """The default value of ``function``'s keyword ``parameter``: the CLI never states its own."""
    return inspect.signature(function).parameters[parameter].default


def _cannot_grade(message: str, command: str = "cannot grade") -> int:
    # The message can quote a learner's path or file name: no live escape sequence reaches the terminal.
    print(f"agtool-grade: {command}: {terminal_text(message, multiline=False)}", file=sys.stderr)
    return EXIT_UNGRADABLE


# ----------------------------------------------------------------- instructor input


def seconds(text: str) -> float:
    """An argparse type: a time limit, a finite number of seconds above 0.

    ``inf`` raised deep inside the pool, ``nan`` made the batch spin, ``-10``
    gave everyone 0 points: each is refused here, before anyone is graded.

    >>> seconds("2.5")
    2.5
    >>> seconds("nan")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: 'nan' is not a time limit: give a finite number of seconds above 0, e.g. 60
    """
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a time limit: give a finite number of seconds above 0, e.g. 60"
        )
    return value


def step_list(text: str) -> list[int]:
    """An argparse type: comma-separated step numbers (checked against the steps by the batch).

    >>> step_list("1,2, 3")
    [1, 2, 3]
    """
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a list of steps: give numbers separated by commas, "
            f"e.g. 1,2,3 (steps are {STEPS[0]}..{STEPS[-1]})"
        ) from None


def out_folder(text: str) -> Path:
    """An argparse type: a folder for the batch outputs, new or existing, but not a file.

    >>> out_folder("/etc/hostname")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: '/etc/hostname' is a file, not a folder: name a new or existing folder for the outputs
    """
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(
            f"{text!r} is a file, not a folder: name a new or existing folder for the outputs"
        )
    return path


def out_file(text: str) -> Path:
    """An argparse type: a file to write a report to, not a folder.

    >>> out_file("/")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: '/' is a folder: name a file to write the report to, e.g. report.md
    """
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder: name a file to write the report to, e.g. report.md")
    return path


# ------------------------------------------------------------------------------- check


def add_check_parser(subparsers) -> argparse.ArgumentParser:
    """``agtool-grade check``: grade one submission."""
    p = subparsers.add_parser(
        "check",
        help="grade one tools.py and print the feedback",
        description="Grade one tools.py (or a folder holding tools.py or agtool/tools.py).",
    )
    p.add_argument("path", help="tools.py, or a folder holding tools.py or agtool/tools.py")
    p.add_argument(
        "--step", type=int, action="append", metavar="N", help=f"grade only step N ({STEPS[0]}-{STEPS[-1]}); repeatable"
    )
    p.add_argument("--format", choices=sorted(RENDERERS), default="text", help="output format (default: text)")
    p.add_argument("--out", type=out_file, metavar="FILE", help="write the report to FILE instead of stdout")
    p.add_argument(
        "--timeout",
        type=seconds,
        metavar="S",
        default=STEP_TIMEOUT,
        help=f"seconds of calls per step, the import not counted: it has its own bound, "
        f"$AGTOOL_IMPORT_TIMEOUT (default {settings.Settings().import_timeout:g})",
    )
    p.add_argument(
        "--parallel",
        type=positive_int,
        metavar="N",
        default=_default(grade, "parallel"),
        help="step processes at once after the first step (default: 2 on 2+ cores)",
    )
    p.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="also print the grader's own lines: the isolation learner code ran with and the limits of each step",
    )
    add_shared_options(p, CHECK)  # --seed, --only, --sandbox: grader.shared_options
    p.set_defaults(func=check_command)
    return p


def sandbox_choice(given: str | None, environment: settings.Settings | None = None) -> str:
    """The sandbox a command runs learner code in: the option, else ``$AGTOOL_SANDBOX``, else ``auto``.

    ``auto`` is the default of the commands (not of the Python API): where
    bubblewrap works a submission cannot read the solution or write another
    learner's files (SECURITY.md); where it does not, grading goes on without.

    >>> from grader.engine.sandbox import SANDBOXES
    >>> sandbox_choice("none"), sandbox_choice(None) in SANDBOXES
    ('none', True)
    """
    return given or (environment or settings.current()).sandbox or DEFAULT_SANDBOX


@contextlib.contextmanager
def engine_for(sandbox: str) -> Iterator[EngineClient]:
    """The engine client one command grades with: its own fork server, let go when the command ends.

    Done, the fork server is detached (it ends by itself; a one-shot command
    need not wait for its teardown, some 40-60 ms); after an error or an
    interrupt it is closed, steps and all.
    """
    engine = EngineClient(sandbox=sandbox)
    try:
        yield engine
    except BaseException:
        engine.close()
        raise
    engine.detach()


def check_command(args: argparse.Namespace) -> int:
    sandbox = sandbox_choice(args.sandbox, getattr(args, "settings", None))
    try:
        require(sandbox)  # a sandbox asked for that is not there stops grading (fail closed)
    except IsolationUnavailable as exc:
        return _cannot_grade(str(exc))
    with engine_for(sandbox) as engine:
        try:
            report = grade(
                args.path,
                steps=args.step,
                only=args.only,
                seed=args.seed,
                timeout=args.timeout,
                parallel=args.parallel,
                engine=engine,
            )
        except SubmissionNotFound as exc:
            return _cannot_grade(str(exc))
        except UnknownCheck as exc:
            return _cannot_grade(f"{exc}. See the ids with: agtool-grade checks")
        except ValueError as exc:
            return _cannot_grade(f"{exc}.")
        if args.verbose:  # the grader's business, not the learner's: asked for, said once
            print(f"agtool-grade: learner code ran {_sandbox_words(engine)}", file=sys.stderr)
    rendered = render_text(report, verbose=args.verbose) if args.format == "text" else RENDERERS[args.format](report)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(rendered, encoding="utf-8")
        print(f"{report.summary()} (seed {report.seed}); report written to {args.out}")
    else:
        sys.stdout.write(rendered)
    return EXIT_PASSED if report.passed else EXIT_FAILED


def _sandbox_words(engine: EngineClient) -> str:
    if engine.isolation is not None:
        return f"with isolation {engine.isolation.words()}"
    if engine.sandbox_in_use == "none":
        why = "" if engine.sandbox == "none" else " (bubblewrap is not usable on this machine)"
        return f"without a sandbox{why}"
    return "inside bubblewrap (own PID namespace, no network, read-only files)"


# ------------------------------------------------------------------------------ checks


def add_checks_parser(subparsers) -> argparse.ArgumentParser:
    """``agtool-grade checks``: list the registry."""
    p = subparsers.add_parser("checks", help="list every check: id, step, points, title")
    p.add_argument(
        "--markdown",
        action="store_true",
        help="print the table of docs/checks.md: which check covers which LAB_SPEC rule",
    )
    p.set_defaults(func=checks_command)
    return p


def checks_command(args: argparse.Namespace) -> int:
    checks = checks_for()
    sys.stdout.write(checks_markdown(checks) if args.markdown else checks_text(checks))
    return EXIT_PASSED


def checks_text(checks) -> str:
    """One line per check: id, step, points, title."""
    width = max((len(c.id) for c in checks), default=2)
    lines = [f"{'id':<{width}}  step  points  title"]
    lines += [f"{c.id:<{width}}  {c.step:>4}  {c.points:>6}  {c.title}" for c in checks]
    lines.append(f"{len(checks)} checks, {sum(c.points for c in checks)} points")
    return "\n".join(lines) + "\n"


def checks_markdown(checks) -> str:
    """The tables of docs/checks.md: every check with its rules, then every rule with the checks covering it."""
    lines = ["| check | step | points | title | LAB_SPEC rules |", "|---|---|---|---|---|"]
    rules: dict[str, list[str]] = {}
    for c in checks:
        lines.append(
            f"| `{c.id}` | {c.step} | {c.points} | {md_cell(c.title)} | "
            f"{', '.join(md_cell(r) for r in c.rules) or '-'} |"
        )
        for rule in c.rules:
            rules.setdefault(rule, []).append(c.id)
    lines += ["", "| LAB_SPEC rule | covered by |", "|---|---|"]
    lines += [f"| {md_cell(rule)} | {', '.join(f'`{i}`' for i in ids)} |" for rule, ids in rules.items()]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------- batch


def add_batch_parser(subparsers) -> argparse.ArgumentParser:
    """``agtool-grade batch``: grade a whole class (:func:`grader.batch.run.run_batch`)."""
    p = subparsers.add_parser(
        "batch",
        help="grade a whole class and write the gradebook",
        description="Grade a whole class: find the submissions, grade them in parallel, keep every result.",
    )
    p.add_argument("submissions", help="folder of learner folders, a quoted glob, or a zip")
    p.add_argument("--out", required=True, type=out_folder, help="output folder")
    p.add_argument("--resume", action="store_true", help="skip learners whose file is unchanged")
    p.add_argument(
        "--timeout",
        type=seconds,
        default=SUBMISSION_TIMEOUT,
        help="seconds of calls per submission, shared between its steps; imports not counted "
        f"(default {SUBMISSION_TIMEOUT:g})",
    )
    p.add_argument("--steps", type=step_list, default=None, help="only these steps, e.g. 1,2,3")
    add_shared_options(p, BATCH)  # --seed, --only, --jobs, --executor, --sandbox...: grader.shared_options
    p.add_argument(
        "--similarity",
        action="store_true",
        help="write OUT/similarity.html and similarity.csv: pairs sharing unusually much code "
        "beyond the starter and the spec's data",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=batch_command)
    return p


def batch_command(args: argparse.Namespace) -> int:
    """Run ``run_batch`` from parsed arguments and print where the outputs are."""
    if args.executor == "dask" and not args.scheduler:
        return _cannot_grade("--executor dask needs --scheduler ADDRESS", "batch")
    try:  # the batch's class outputs need pandas and matplotlib, which a core install lacks
        from grader.batch.discovery import UnsafeArchive
        from grader.batch.records import RESULTS_DIR
        from grader.batch.run import run_batch
    except ImportError as exc:
        return _cannot_grade(f"{BATCH_EXTRA} ({exc})", "batch")
    try:
        require(sandbox_choice(args.sandbox, getattr(args, "settings", None)))  # fail closed, before any worker
        result = run_batch(
            args.submissions,
            args.out,
            jobs=args.jobs,
            seed=args.seed,
            resume=args.resume,
            timeout=args.timeout,
            steps=args.steps,
            only=args.only,
            executor=args.executor,
            scheduler=args.scheduler,
            sandbox=sandbox_choice(args.sandbox, getattr(args, "settings", None)),
            progress=not args.no_progress,
            seed_key=_read_key(args.seed_key_file),
            course=args.course,
            roster=args.roster,
            similarity=args.similarity,
            reference=args.reference,
        )
    except UnknownCheck as exc:
        return _cannot_grade(f"{exc}. See the ids with: agtool-grade checks", "batch")
    except (SubmissionNotFound, UnsafeArchive, ValueError) as exc:
        return _cannot_grade(str(exc), "batch")
    except RuntimeError as exc:  # e.g. --executor dask without Dask installed
        return _cannot_grade(str(exc), "batch")
    except KeyboardInterrupt:
        print(
            f"\ninterrupted: the results graded so far are in {args.out / RESULTS_DIR}; "
            "run the same command with --resume to continue.",
            file=sys.stderr,
        )
        return 130
    if not result.learners:
        print(
            f"agtool-grade batch: no learner found in {terminal_text(args.submissions, multiline=False)} "
            "(a folder needs one folder per learner)",
            file=sys.stderr,
        )
    print(
        f"{result.seeds}: {len(result.learners)} learners, {result.graded} graded, {result.skipped} unchanged (skipped)"
    )
    for isolation in getattr(result, "isolation", ()):  # which sandbox the batch used (--sandbox, default auto)
        print(f"  learner code ran with isolation {terminal_text(isolation, multiline=False)}")
    _print_assignments(getattr(result, "assignments", ()))
    for member, reason in getattr(result, "archive_skipped", ()):  # zip members that could not be extracted
        print(
            f"  skipped from the zip: {terminal_text(member, multiline=False)}: "
            f"{terminal_text(reason, multiline=False)}",
            file=sys.stderr,
        )
    for name, path in result.outputs.items():
        print(f"  {name:<22} {terminal_text(path, multiline=False)}")
    flagged = [p for p in getattr(result, "similar", ()) if p.flagged]
    if flagged:
        print(f"  similarity: {len(flagged)} flagged pair(s), see similarity.html", file=sys.stderr)
    for learner, why in getattr(result, "unmatched", ()):  # --roster: never guessed, always listed
        print(f"  roster: {terminal_text(learner, multiline=False)}: {why}", file=sys.stderr)
    return EXIT_PASSED


def _print_assignments(assignments) -> None:
    """A course of several assignments: a line per assignment with its mean credited score (the instructor's names)."""
    for key, name, mean, points, credited in assignments:
        shown = "no credit yet" if mean is None else f"mean credited {mean:g}/{points:g} over {credited} learner(s)"
        print(f"  assignment {terminal_text(key, multiline=False)} ({terminal_text(name, multiline=False)}): {shown}")


def _read_key(file: Path | None) -> str | None:
    """The class key in ``file`` (``None``: none given, ``$AGTOOL_SEED_KEY`` applies); refused if empty or unreadable."""
    if file is None:
        return None
    try:
        key = file.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"--seed-key-file {file} cannot be read ({exc}); give a text file holding the key") from None
    if not key:
        raise ValueError(f"--seed-key-file {file} is empty; write a key into it (grader.seeds.new_key())")
    return key


# -------------------------------------------------------------------------- gradescope


def add_gradescope_parser(subparsers) -> argparse.ArgumentParser:
    """``agtool-grade gradescope``: Gradescope's autograder entry, writes ``results.json``."""
    p = subparsers.add_parser("gradescope", help="Gradescope autograder entry: write results.json")
    p.add_argument(
        "--submission", type=Path, default=SUBMISSION_DIR, help=f"the learner's upload (default {SUBMISSION_DIR})"
    )
    p.add_argument("--results", type=Path, default=RESULTS_FILE, help=f"where to write (default {RESULTS_FILE})")
    add_shared_options(p, GRADESCOPE)  # --seed: grader.shared_options
    p.add_argument(
        "--timeout",
        type=seconds,
        default=_default(grade_for_gradescope, "timeout"),
        help="seconds per step (default: the grader's)",
    )
    p.set_defaults(func=gradescope_command)
    return p


def gradescope_command(args: argparse.Namespace) -> int:
    """Run :func:`grade_for_gradescope` and print the summary (Gradescope keeps stdout for staff)."""
    report = grade_for_gradescope(args.submission, args.results, seed=args.seed, timeout=args.timeout)
    print(f"{report.summary()} (seed {report.seed}); wrote {args.results}")
    return EXIT_PASSED


if __name__ == "__main__":
    sys.exit(main())
