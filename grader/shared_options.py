"""The command-line options that ``check``, ``batch`` and ``serve`` share, declared once.

Each :class:`Option` says which commands take it, its type, default, the
setting whose environment variable gives its default (``grader.settings``)
and its help. Both parsers add them from here (``grader.cli`` for ``check``
and ``batch``, ``grader.service.command`` for ``serve``), and the
documentation's settings page lists them (:func:`options_markdown`); a
command's own options (``check --step``, ``serve --data-dir``...) stay with
that command.

Example::

    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_shared_options(parser, "batch")
    >>> args = parser.parse_args(["--sandbox", "bwrap", "--jobs", "2"])
    >>> args.sandbox, args.jobs, args.executor, args.reference
    ('bwrap', 2, 'local', None)
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.engine.sandbox import SANDBOXES
from grader.settings import env_name

CHECK, BATCH, SERVE, GRADESCOPE = "check", "batch", "serve", "gradescope"
DEFAULT_SANDBOX = "auto"  # of the commands; the Python API's default stays $AGTOOL_SANDBOX or none
EXECUTORS = ("local", "dask")
SERVE_JOBS = max(1, (os.cpu_count() or 2) - 1)  # the service's own process needs a core too
KEY_FILE = "seed.key"  # in serve's --data-dir: the class's seed key when neither --seed-key-file nor $AGTOOL_SEED_KEY


def positive_int(text: str) -> int:
    """An argparse type: a count of processes, a whole number of at least 1.

    >>> positive_int("3")
    3
    >>> positive_int("0")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: '0' is not a number of processes: give a whole number of at least 1, e.g. 2
    """
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of processes: give a whole number of at least 1, e.g. 2"
        )
    return value


@dataclass(frozen=True)
class Option:
    """One option shared by several commands: one flag, type, default, setting and help for all of them.

    ``default_for`` names the commands whose default differs (the help says
    why); ``setting`` is the :class:`grader.settings.Settings` field whose
    variable applies when the option is not given.
    """

    flag: str
    commands: tuple[str, ...]
    help: str
    type: Callable[[str], Any] | None = None
    choices: tuple[str, ...] | None = None
    default: Any = None
    default_for: dict[str, Any] = field(default_factory=dict)
    setting: str = ""
    metavar: str | None = None
    repeatable: bool = False
    default_words: str = ""  # the default as the settings page says it, when it is computed (e.g. from the CPUs)

    @property
    def dest(self) -> str:
        """The attribute of the parsed arguments: ``--seed-key-file`` -> ``seed_key_file``."""
        return self.flag.lstrip("-").replace("-", "_")

    def default_of(self, command: str) -> Any:
        """This option's default in ``command``.

        >>> OPTIONS["--jobs"].default_of("batch") is None, OPTIONS["--jobs"].default_of("serve") >= 1
        (True, True)
        """
        return self.default_for.get(command, self.default)

    def add_to(self, parser: argparse.ArgumentParser, command: str) -> None:
        """Add this option to ``command``'s ``parser``."""
        keywords: dict[str, Any] = {"default": self.default_of(command), "help": self.help}
        if self.repeatable:
            keywords["action"] = "append"
        for name in ("type", "choices", "metavar"):
            if getattr(self, name) is not None:
                keywords[name] = getattr(self, name)
        parser.add_argument(self.flag, **keywords)


def _declare(*options: Option) -> dict[str, Option]:
    return {option.flag: option for option in options}


OPTIONS: dict[str, Option] = _declare(
    Option(
        "--seed",
        (CHECK, BATCH, GRADESCOPE),
        type=int,
        help="seed of the random cases: the same seed gives the same cases (default: a new one, printed; "
        "batch: one for the class, kept by --resume; gradescope: recorded in results.json)",
    ),
    Option(
        "--only",
        (CHECK, BATCH),
        metavar="ID",
        repeatable=True,
        help="grade only this check id; repeatable (the ids: agtool-grade checks)",
    ),
    Option(
        "--jobs",
        (BATCH, SERVE),
        type=positive_int,
        metavar="N",
        default_for={SERVE: SERVE_JOBS},
        default_words="batch: one per core; serve: CPUs - 1",
        help="grading worker processes (default: batch one per core; serve one per core but one, for the "
        "service itself)",
    ),
    Option(
        "--executor",
        (BATCH, SERVE),
        choices=EXECUTORS,
        default="local",
        help="local worker processes, or a Dask cluster (--scheduler) (default: %(default)s)",
    ),
    Option("--scheduler", (BATCH, SERVE), metavar="ADDRESS", help="Dask scheduler address, e.g. tcp://host:8786"),
    Option(
        "--sandbox",
        (CHECK, BATCH, SERVE),
        choices=SANDBOXES,
        setting="sandbox",
        help=f"how learner code is confined: bwrap runs it inside bubblewrap (own PID namespace, no network, "
        f"read-only files, so no submission can touch another's files; refused where unusable), auto "
        f"where bubblewrap works, else without, none without (default ${env_name('sandbox')}, else "
        f"{DEFAULT_SANDBOX}); serve refuses to start without a usable sandbox unless "
        f"--insecure-no-sandbox",
    ),
    Option(
        "--seed-key-file",
        (BATCH, SERVE),
        type=Path,
        metavar="FILE",
        setting="seed_key",
        help="a secret class key (one line; make one with: python -c 'import grader.seeds as s; "
        "print(s.new_key())'): the grade that counts uses per-learner seeds derived from it, which nobody "
        f"sees, and feedback other cases; never served, never logged (default ${env_name('seed_key')}; "
        f"serve: else --data-dir/{KEY_FILE}, made at the first start; batch: ignored with --seed)",
    ),
    Option(
        "--course",
        (BATCH, SERVE),
        type=Path,
        metavar="FILE",
        help="a course file (TOML: due dates, late credit, attempt limit, weights; docs/classroom.md, "
        '"Course policy"): grades gain the credited score, which attempt counted and why; serve: over '
        "the attempt limit a submission gets 429 saying when the next is allowed",
    ),
    Option(
        "--roster",
        (BATCH, SERVE),
        type=Path,
        metavar="FILE",
        help="a CSV learner,lms_id[,name,sis_user_id,sis_login_id,section,email]: the LMS import files "
        "lms/canvas.csv and lms/moodle.csv, and lms/unmatched.csv listing the learners it did not match "
        '(docs/instructor.md, "LMS import files")',
    ),
    Option(
        "--reference",
        (BATCH, SERVE),
        metavar="FILE",
        default_for={SERVE: "auto"},
        help="a reference solution (e.g. solutions/tools.py) similarity compares each learner with; read by "
        "the grader only, never by learner code, never served (batch: default none, implies "
        "--similarity; serve: default auto, the solutions/tools.py of this install or checkout if there "
        "is one, 'none' compares learners only)",
    ),
)


def add_shared_options(parser: argparse.ArgumentParser, command: str) -> None:
    """Add every shared option that ``command`` takes to its ``parser``, in the table's order."""
    for option in OPTIONS.values():
        if command in option.commands:
            option.add_to(parser, command)


def options_markdown() -> str:
    """The shared options as a Markdown table, for the documentation's settings page.

    >>> options_markdown().splitlines()[0]
    '| option | commands | type | default | variable | what it does |'
    """
    rows = ["| option | commands | type | default | variable | what it does |", "|---|---|---|---|---|---|"]
    for option in OPTIONS.values():
        kind = (
            "one of " + ", ".join(f"`{c}`" for c in option.choices)
            if option.choices
            else getattr(option.type, "__name__", "text")
            if option.type
            else "text"
        )
        kind = {"int": "whole number", "positive_int": "whole number, at least 1", "Path": "file"}.get(kind, kind)
        defaults = [f"`{option.default}`" if option.default is not None else "(none)"]
        defaults += [f"{command}: `{value}`" for command, value in option.default_for.items()]
        default = option.default_words or "; ".join(defaults)
        variable = f"`{env_name(option.setting)}`" if option.setting else "-"
        help_text = option.help.replace("%(default)s", str(option.default)).replace("|", "\\|")
        repeatable = " (repeatable)" if option.repeatable else ""
        rows.append(
            f"| `{option.flag}` | {', '.join(option.commands)} | {kind}{repeatable} | {default} | {variable} "
            f"| {help_text} |"
        )
    return "\n".join(rows) + "\n"
