"""Which submissions are the starter, unchanged: the code every learner was given, handed in as it was.

Compared as Python tokens with comments, blank lines and indentation left
out and the whitespace inside strings (docstrings re-indented) collapsed, so
a learner who only reformatted the starter or added comments to it is found
too; a file that does not tokenize is no starter. The starter's
text comes from :func:`starter_text` (the installed package, else the
checkout). Nothing here imports or runs
learner code.

Example::

    >>> starter = "def f():\\n    raise NotImplementedError('step 1')\\n"
    >>> starter_submissions({"ana": starter.replace("    ", "  ") + "# done?\\n", "bob": "def f():\\n    return 1\\n"},
    ...                     starter=starter)
    ['ana']
"""

from __future__ import annotations

import hashlib
import io
import re
import subprocess
import tokenize
from importlib import resources
from pathlib import Path

# Layout and comments: what a learner can change without changing the program.
_IGNORED = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENCODING,
    tokenize.ENDMARKER,
}
# What the starter raises in every function a step asks for (agtool/tools.py): an answer that is
# this exception is a step not started, not a wrong answer.
_SPACE = re.compile(r"\s+")
NOT_STARTED = re.compile(r"NotImplementedError: step (\d+): write ")
STARTER_PACKAGE = "grader.starter"  # pyproject maps the checkout's agtool/ onto it in a wheel
CHECKOUT = Path(__file__).resolve().parents[2]  # the checkout, when this runs from one
CHECKOUT_STARTER = CHECKOUT / "agtool" / "tools.py"
# The starter as given, by content: an editable install (make setup) maps grader.starter onto the very
# agtool/tools.py a learner edits in the lab, so the file found there is the starter only while its bytes
# are these (tests/test_starter.py keeps both in step with the committed file).
STARTER_SHA256 = "1a5e53317de60a0eb53c3bfcecf1196178a851a16b93d1f46db9b2040a2db6f4"
STARTER_GIT_BLOB = "5bda5c505f130a831e1e8ff8cb6bb23435cabd99"  # `git hash-object agtool/tools.py`


def starter_text() -> str:
    """The starter module every learner was given (``agtool/tools.py``), as text: read, never imported.

    From the installed package ``grader.starter`` (where a wheel puts the
    checkout's ``agtool/``), else from this checkout, as long as its bytes
    are the starter's (:data:`STARTER_SHA256`): in a checkout where the lab
    was done, ``agtool/tools.py`` is a learner's module, and the starter
    comes from the checkout's git objects instead. Raises
    ``FileNotFoundError`` saying how to fix an install that has neither.

    >>> text = starter_text()
    >>> "def validate_args" in text and "NotImplementedError" in text
    True
    """
    candidates = []
    try:
        candidates.append(resources.files(STARTER_PACKAGE).joinpath("tools.py").read_bytes())
    except (ModuleNotFoundError, FileNotFoundError):  # a checkout run without installing: the file itself
        pass
    try:
        candidates.append(CHECKOUT_STARTER.read_bytes())
    except FileNotFoundError:
        pass
    candidates.append(_from_git())
    for data in candidates:
        if data and hashlib.sha256(data).hexdigest() == STARTER_SHA256:
            return data.decode("utf-8")
    raise FileNotFoundError(
        f"the starter module as given is not found: {STARTER_PACKAGE} and {CHECKOUT_STARTER} hold edited code "
        "(the lab was done in this checkout) and git has no copy of the original; reinstall agtool-lab from a "
        "fresh clone (pip install .) or restore it with: git checkout -- agtool/tools.py"
    )


def _from_git() -> bytes:
    """The starter's bytes from the checkout's git objects (``b""`` without git or the object)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(CHECKOUT), "cat-file", "blob", STARTER_GIT_BLOB],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return b""
    return done.stdout if done.returncode == 0 else b""


def normalised(code: str) -> tuple[tuple[int, str], ...] | None:
    """``code`` as its tokens without comments and layout; ``None`` when it does not tokenize.

    >>> normalised("x = 1  # one\\n") == normalised("x=1\\n"), normalised("def f(:\\n  '''")
    (True, None)
    """
    try:
        tokens = tokenize.generate_tokens(io.StringIO(code).readline)
        return tuple((t.type, _SPACE.sub(" ", t.string)) for t in tokens if t.type not in _IGNORED)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None


def starter_submissions(sources: dict[str, str], *, starter: str | None = None) -> list[str]:
    """The learners (keys of ``sources``, learner -> text) whose file is the starter, sorted.

    ``starter`` defaults to the packaged starter.

    >>> starter_submissions({"ana": "x = 1\\n"}, starter="x = 2\\n")
    []
    """
    if not sources:
        return []
    if starter is None:
        starter = starter_text()  # the packaged file, read only when asked
    given = normalised(starter)
    return sorted(learner for learner, code in sources.items() if normalised(code) == given)


def not_started_step(answer: str) -> int | None:
    """The step whose function still raises the starter's ``NotImplementedError`` in ``answer``, if any.

    >>> not_started_step("raised NotImplementedError: step 6: write pick (labs/06_failure_path.ipynb)")
    6
    >>> not_started_step("'type:limit'") is None
    True
    """
    found = NOT_STARTED.search(str(answer))
    return int(found.group(1)) if found else None
