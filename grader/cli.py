"""``agtool-grade``: the command line, a thin layer over :func:`grader.runner.grade`.

Subcommands::

    agtool-grade check PATH [--step N]... [--only ID]... [--seed S]
                            [--format text|json|markdown] [--out FILE] [--timeout S]
                            [--parallel N] [--sandbox none|bwrap|auto]
    agtool-grade checks [--markdown]          list the registered checks

Exit status of ``check``: 0 = every check passed, 1 = graded with failures,
2 = could not grade (bad path, unknown check id, bad step number, usage).

Adding a subcommand: write ``add_<name>_parser(subparsers)`` that adds a
parser and calls ``set_defaults(func=<function(args) -> int>)``, and list it in
:data:`SUBCOMMANDS` (modules that are missing are skipped).

Example::

    $ agtool-grade check solutions/tools.py --step 2 --seed 7
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from grader.locate import SubmissionNotFound
from grader.render import render_json, render_markdown, render_text
from grader.report import STEPS
from grader.runner import DEFAULT_TIMEOUT, grade
from grader.warm import SANDBOX_ENV, SANDBOXES, WarmRunner

EXIT_PASSED, EXIT_FAILED, EXIT_UNGRADABLE = 0, 1, 2
RENDERERS = {"text": render_text, "json": render_json, "markdown": render_markdown}

# (module, function) pairs, in the order ``--help`` lists them.
SUBCOMMANDS: tuple[tuple[str, str], ...] = (
    ("grader.cli", "add_check_parser"),
    ("grader.cli", "add_checks_parser"),
    ("grader.batch", "add_batch_parser"),
    ("grader.gradescope", "add_gradescope_parser"),
    ("grader.bench", "add_bench_parser"),
)


def main(argv: "list[str] | None" = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``), run the subcommand, return its exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_UNGRADABLE
    try:
        return args.func(args)
    except KeyboardInterrupt:  # the warm process and its steps are stopped at exit
        print("agtool-grade: interrupted", file=sys.stderr)
        return 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agtool-grade", description="Grade agtool-lab's tools.py, step by step.")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for module_name, function_name in SUBCOMMANDS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:  # a broken module must say so, not vanish from --help
                raise
            continue  # a subcommand not written yet
        getattr(module, function_name)(subparsers)
    return parser


# ------------------------------------------------------------------------------- check

def add_check_parser(subparsers) -> argparse.ArgumentParser:
    """``agtool-grade check``: grade one submission."""
    p = subparsers.add_parser("check", help="grade one tools.py and print the feedback",
                              description="Grade one tools.py (or a folder holding tools.py or agtool/tools.py).")
    p.add_argument("path", help="tools.py, or a folder holding tools.py or agtool/tools.py")
    p.add_argument("--step", type=int, action="append", metavar="N",
                   help=f"grade only step N ({STEPS[0]}-{STEPS[-1]}); repeatable")
    p.add_argument("--only", action="append", metavar="ID", help="grade only this check id; repeatable")
    p.add_argument("--seed", type=int, help="seed of the random cases (default: a new one, printed)")
    p.add_argument("--format", choices=sorted(RENDERERS), default="text", help="output format (default: text)")
    p.add_argument("--out", type=Path, metavar="FILE", help="write the report to FILE instead of stdout")
    p.add_argument("--timeout", type=float, metavar="S", default=DEFAULT_TIMEOUT,
                   help=f"wall-clock seconds per step (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--parallel", type=int, metavar="N", default=None,
                   help="step processes at once after the first step (default: 2 on 2+ cores)")
    p.add_argument("--sandbox", choices=SANDBOXES, default=None,
                   help=f"run learner code inside bubblewrap (bwrap: warn if unusable; auto: silently fall back); "
                        f"default ${SANDBOX_ENV} or none")
    p.set_defaults(func=check_command)
    return p


def check_command(args: argparse.Namespace) -> int:
    options = {"runner": WarmRunner(sandbox=args.sandbox)} if args.sandbox else {}
    if args.parallel is not None:
        options["parallel"] = args.parallel
    try:
        report = grade(args.path, steps=args.step, only=args.only, seed=args.seed, timeout=args.timeout, **options)
    except SubmissionNotFound as exc:
        return _cannot_grade(str(exc))
    except KeyError as exc:
        return _cannot_grade(f"{exc.args[0]}. See the ids with: agtool-grade checks")
    except ValueError as exc:
        return _cannot_grade(f"{exc}.")
    finally:
        if "runner" in options:
            options["runner"].close()
    rendered = RENDERERS[args.format](report)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(rendered, encoding="utf-8")
        print(f"{report.summary()} (seed {report.seed}); report written to {args.out}")
    else:
        sys.stdout.write(rendered)
    return EXIT_PASSED if report.passed else EXIT_FAILED


def _cannot_grade(message: str) -> int:
    print(f"agtool-grade: cannot grade: {message}", file=sys.stderr)
    return EXIT_UNGRADABLE


# ------------------------------------------------------------------------------ checks

def add_checks_parser(subparsers) -> argparse.ArgumentParser:
    """``agtool-grade checks``: list the registry."""
    p = subparsers.add_parser("checks", help="list every check: id, step, points, title")
    p.add_argument("--markdown", action="store_true",
                   help="print the README table of which check covers which LAB_SPEC rule")
    p.set_defaults(func=checks_command)
    return p


def checks_command(args: argparse.Namespace) -> int:
    from grader.registry import checks_for

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
    """The README tables: every check with its rules, then every rule with the checks covering it."""
    lines = ["| check | step | points | title | LAB_SPEC rules |", "|---|---|---|---|---|"]
    rules: dict[str, list[str]] = {}
    for c in checks:
        lines.append(f"| `{c.id}` | {c.step} | {c.points} | {_cell(c.title)} | "
                     f"{', '.join(_cell(r) for r in c.rules) or '-'} |")
        for rule in c.rules:
            rules.setdefault(rule, []).append(c.id)
    lines += ["", "| LAB_SPEC rule | covered by |", "|---|---|"]
    lines += [f"| {_cell(rule)} | {', '.join(f'`{i}`' for i in ids)} |" for rule, ids in rules.items()]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


if __name__ == "__main__":
    sys.exit(main())
