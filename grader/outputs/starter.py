"""Which submissions are the starter, unchanged: the code every learner was given, handed in as it was.

Compared as Python tokens with comments, blank lines and indentation left
out and the whitespace inside strings (docstrings re-indented) collapsed, so
a learner who only reformatted the starter or added comments to it is found
too; a file that does not tokenize is no starter. The starter's
text comes from :func:`starter_text` (the installed package, else the
checkout's committed ``starter/tools.py``, checked by hash; never the lab's
``agtool/tools.py``, which is the learner's). Nothing here imports or runs
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
# What the starter raises in every function a step asks for (starter/tools.py): an answer that is
# this exception is a step not started, not a wrong answer.
_SPACE = re.compile(r"\s+")
NOT_STARTED = re.compile(r"NotImplementedError: step (\d+): write ")
STARTER_PACKAGE = "grader.starter"  # pyproject maps the checkout's starter/ onto it
CHECKOUT = Path(__file__).resolve().parents[2]  # the checkout, when this runs from one
CHECKOUT_STARTER = CHECKOUT / "starter" / "tools.py"  # the committed copy; never the learner's agtool/tools.py
# The starter as given, by content: whichever copy is found (the installed package, the checkout's starter/),
# it is the starter only while its bytes are these (tests/test_starter.py holds them to the committed file,
# and to git's copy of the lab's agtool/tools.py as committed).
STARTER_SHA256 = "1a5e53317de60a0eb53c3bfcecf1196178a851a16b93d1f46db9b2040a2db6f4"


def starter_text() -> str:
    """The starter module every learner was given, as text: read, never imported.

    From the installed package ``grader.starter`` (a wheel, or an editable
    install, maps the checkout's committed ``starter/`` onto it), else from
    the checkout's ``starter/tools.py``, as long as its bytes are the
    starter's (:data:`STARTER_SHA256`). Never the lab's ``agtool/tools.py``:
    that file is the learner's work, whatever a fresh clone held. Raises
    ``FileNotFoundError`` saying how to fix an install that has neither.

    >>> text = starter_text()
    >>> "def validate_args" in text and "NotImplementedError" in text
    True
    """
    return starter_bytes().decode("utf-8")


def starter_bytes() -> bytes:
    """The starter's bytes, checked against :data:`STARTER_SHA256` (see :func:`starter_text`).

    >>> import hashlib; hashlib.sha256(starter_bytes()).hexdigest() == STARTER_SHA256
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
    for data in candidates:
        if hashlib.sha256(data).hexdigest() == STARTER_SHA256:
            return data
    raise FileNotFoundError(
        f"the starter module as given is not found: {STARTER_PACKAGE} and {CHECKOUT_STARTER} are missing or "
        "edited; reinstall agtool-lab from a fresh clone (pip install .) or restore the committed copy with: "
        "git checkout -- starter/tools.py"
    )


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
