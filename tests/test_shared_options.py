"""One declaration per option and limit.

* every option that ``check``, ``batch`` and ``serve`` share is declared once,
  in ``grader/shared_options.py``: both parsers take it from there (same type,
  default, choices and help), neither parser's module declares it again, and
  the settings page lists it;
* every limit above the engine is declared once, with its reason, in
  ``grader/limits.py``: the older names elsewhere are the same values, no
  other module assigns a number to a limit-like name (but the few listed
  below, each with why), and the settings page lists them.
"""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

import pytest

from grader import limits, shared_options
from grader.shared_options import OPTIONS

REPO = Path(__file__).resolve().parent.parent
PARSER_MODULES = ("grader/cli.py", "grader/service/command.py")


def command_parsers() -> dict[str, argparse.ArgumentParser]:
    from grader.cli import build_parser
    from grader.settings import Settings

    subparsers = build_parser(Settings())._subparsers._group_actions[0]
    return {name: subparsers.choices[name] for name in ("check", "batch", "serve")}


def action_of(parser: argparse.ArgumentParser, flag: str) -> argparse.Action | None:
    return next((a for a in parser._actions if flag in a.option_strings), None)


@pytest.mark.parametrize("flag", list(OPTIONS))
def test_each_shared_option_comes_from_the_table_in_every_command(flag):
    option = OPTIONS[flag]
    parsers = command_parsers()
    for command, parser in parsers.items():
        action = action_of(parser, flag)
        if command not in option.commands:
            assert action is None, (command, flag)
            continue
        assert action is not None, f"{command} lacks {flag}"
        assert (action.default, action.type, action.help, action.metavar) == (
            option.default_of(command),
            option.type,
            option.help,
            option.metavar,
        ), (command, flag)
        assert tuple(action.choices or ()) == tuple(option.choices or ()), (command, flag)


def test_every_option_two_commands_take_is_in_the_table():
    parsers = command_parsers()
    flags = {
        command: {s for a in parser._actions for s in a.option_strings if s.startswith("--")} - {"--help"}
        for command, parser in parsers.items()
    }
    shared = {flag for a in flags for b in flags if a < b for flag in flags[a] & flags[b]}
    # --timeout and --out are two options each: seconds per step or per submission, a file or a folder.
    assert shared - set(OPTIONS) <= {"--timeout", "--out"}, shared - set(OPTIONS)


def declared_flags(source: str) -> list[str]:
    """The flags that ``add_argument`` calls in ``source`` declare."""
    return [
        node.args[0].value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and getattr(node.func, "attr", "") == "add_argument"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    ]


def test_the_parser_modules_declare_no_shared_option_again():
    assert declared_flags('p.add_argument("--sandbox", choices=("none",))') == ["--sandbox"]  # the rule can fail
    for module in PARSER_MODULES:
        again = set(declared_flags((REPO / module).read_text(encoding="utf-8"))) & set(OPTIONS)
        assert not again, f"{module} declares {sorted(again)} again: they are in grader/shared_options.py"


def test_the_settings_page_lists_every_shared_option_and_limit():
    page = (REPO / "docs" / "settings.md").read_text(encoding="utf-8")
    assert shared_options.options_markdown() in page
    assert limits.limits_markdown() in page
    for flag in OPTIONS:
        assert f"| `{flag}` |" in page
    for name in limits.LIMITS:
        assert f"| `{name}` |" in page


def test_every_limit_is_its_constant_and_says_why():
    for name, limit in limits.LIMITS.items():
        assert getattr(limits, name) == limit.value, name
        assert limit.unit in ("s", "bytes", "count") and limit.reason and limit.applies, name


def test_the_older_names_of_a_limit_are_the_same_value():
    from grader import grading, locate
    from grader.batch import discovery, run, task
    from grader.service import options

    assert locate.MAX_SUBMISSION_BYTES == grading.MAX_SOURCE_BYTES == limits.SOURCE_BYTES
    assert options.MAX_BYTES == limits.UPLOAD_BYTES < limits.SOURCE_BYTES  # two meanings: see grader/limits.py
    assert task.MIN_STEP_TIMEOUT == limits.MIN_STEP_TIMEOUT
    assert run.GRACE == limits.WORKER_GRACE
    assert (options.RATE_LIMIT, options.RATE_WINDOW, options.APPEAL_LIMIT, options.APPEAL_WINDOW) == (
        limits.RATE_LIMIT,
        limits.RATE_WINDOW,
        limits.APPEAL_LIMIT,
        limits.APPEAL_WINDOW,
    )
    assert (discovery.ZIP_MAX_MEMBERS, discovery.ZIP_MAX_MEMBER_BYTES, discovery.ZIP_MAX_TOTAL_BYTES) == (
        limits.ZIP_MEMBERS,
        limits.ZIP_MEMBER_BYTES,
        limits.ZIP_TOTAL_BYTES,
    )


LIMIT_NAME = re.compile(r"(TIMEOUT|_BYTES|WINDOW|GRACE|WAIT|_LIMIT|RETRY_AFTER|_TTL|_KEEP)$|^(ZIP_)?MAX_")
# Names that look like limits and are declared elsewhere, each with why. Shrink this list; never grow it
# without a reason a reader would accept.
NOT_HERE = {
    ("grader/spec.py", "MAX_ROWS"): "a fact of LAB_SPEC (the learner's contract), not a bound of the grader",
    ("grader/spec.py", "MAX_ATTEMPTS"): "a fact of LAB_SPEC (the learner's contract), not a bound of the grader",
    ("grader/outputs/similarity.py", "WINDOW"): "the winnowing window: a parameter of the algorithm",
    ("grader/service/queue.py", "IDLE_WAIT"): "a polling period of the dispatcher, not a bound",
}


def _numeric(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.BinOp):
        return _numeric(node.left) and _numeric(node.right)
    if isinstance(node, ast.UnaryOp):
        return _numeric(node.operand)
    if isinstance(node, ast.Tuple):
        return any(_numeric(e) for e in node.elts)
    return False


def numbers_named_like_limits(source: str) -> list[str]:
    """Module-level names that look like limits and are given a number in ``source``."""
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _numeric(node.value):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names = (
                    [e.id for e in target.elts if isinstance(e, ast.Name)]
                    if isinstance(target, ast.Tuple)
                    else [getattr(target, "id", "")]
                )
                found += [name for name in names if LIMIT_NAME.search(name)]
    return found


def test_no_module_above_the_engine_declares_a_limit_of_its_own():
    assert numbers_named_like_limits("MAX_BYTES = 256 * 1024\nX = 3\n") == ["MAX_BYTES"]  # the rule can fail
    found = set()
    for path in sorted([*(REPO / "grader").rglob("*.py"), *(REPO / "agtool_lab").rglob("*.py")]):
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith("grader/engine/") or rel == "grader/limits.py":
            continue  # the engine's step limits are grader.engine.protocol.Limits
        found |= {(rel, name) for name in numbers_named_like_limits(path.read_text(encoding="utf-8"))}
    assert found - set(NOT_HERE) == set(), "declare these in grader/limits.py, with their reason"
