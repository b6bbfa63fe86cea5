r"""One escaping helper per output target: shell, Markdown, HTML, terminal, CSV.

Learner text (paths, exception messages, returned values, captured output,
learner ids) is hostile: a backtick ends a code span, ``$(...)`` runs when a
replay line is pasted, ``<img onerror=...>`` runs in a notebook, ``\x1b[2J``
redraws a terminal, ``=1+1`` is evaluated by a spreadsheet. Every renderer
escapes what it writes with the helper of its own target, here, and nowhere
else, so a fix for one target reaches every output.

Example::

    >>> print(shell_join(["agtool-grade", "check", "x_$(id>PWNED.txt)_tools.py"]))
    agtool-grade check 'x_$(id>PWNED.txt)_tools.py'
    >>> print(md_code("a`b"))
    ``a`b``
    >>> print(terminal_text("\x1b[32mPASS"))
    \x1b[32mPASS
    >>> csv_cell("=1+1")
    "'=1+1"
"""

from __future__ import annotations

import functools
import html
import re
import shlex
from collections.abc import Callable, Iterable

__all__ = [
    "shell_quote",
    "shell_join",
    "md_text",
    "md_prose",
    "md_code",
    "md_fence",
    "md_cell",
    "md_code_cell",
    "html_text",
    "terminal_text",
    "plain_text",
    "csv_cell",
    "CSV_FORMULA_STARTS",
]

# ------------------------------------------------------------------------------ shell


def shell_quote(word: str) -> str:
    """One shell word that ``sh``/``bash`` read back as exactly ``word``, nothing run.

    >>> print(shell_quote("my work/tools.py"), shell_quote("it's.py"), shell_quote("plain.py"))
    'my work/tools.py' 'it'"'"'s.py' plain.py
    """
    return shlex.quote(str(word))


def shell_join(parts: Iterable[str], *, paths: Iterable[int] = ()) -> str:
    """A command line whose words ``shlex.split`` gives back exactly; ``paths`` are indices of path words.

    Build it from the final words (the learner's real path, not a scratch
    copy): quoting first and substituting later is how a path with
    ``$(...)`` became live. A path word starting with ``-`` would be read as
    an option, so it gets ``./`` in front (the same file).

    >>> line = shell_join(["agtool-grade", "check", "-x.py"], paths=[2])
    >>> print(line), shlex.split(line)
    agtool-grade check ./-x.py
    (None, ['agtool-grade', 'check', './-x.py'])
    """
    parts = [str(p) for p in parts]
    for index in paths:
        if parts[index].startswith("-"):
            parts[index] = "./" + parts[index]
    return " ".join(shell_quote(p) for p in parts)


# --------------------------------------------------------------------------- terminal

# C0 and C1 controls and DEL: an escape sequence redraws the screen or the
# line ("FAIL" overdrawn by a green "PASS"); bidi controls reorder what is
# shown (Trojan Source); line and paragraph separators break a line where
# the reader sees none.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
_CONTROLS_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _visible(match: re.Match[str]) -> str:
    char = match.group(0)
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_text(text: object, *, multiline: bool = True) -> str:
    r"""``text`` with every control character shown as a visible escape (``\x1b``, ``\r``, ``\u202e``).

    ``\n`` and ``\t`` stay where a block is multi-line (``multiline=True``);
    on one line they are shown as ``\n`` and ``\t`` too.

    >>> terminal_text("a\x1b[2J\rb\n\tc")
    'a\\x1b[2J\\rb\n\tc'
    >>> terminal_text("a\nb", multiline=False)
    'a\\nb'
    """
    pattern = _CONTROLS if multiline else _CONTROLS_ONE_LINE
    return pattern.sub(_visible, str(text))


def plain_text(text: object, *, multiline: bool = True) -> str:
    r"""``text`` with every control character removed, for plain text a person reads (an LMS comment box).

    What :func:`terminal_text` shows as ``\x1b`` is dropped here: the
    reader wants the words, and without its escape character a sequence
    is inert. ``\n`` and ``\t`` stay in a multi-line block; on one line
    they become spaces.

    >>> plain_text("a\x1b[2J\rb\u202e\n\tc"), plain_text("a\nb", multiline=False)
    ('a[2Jb\n\tc', 'a b')
    """
    text = str(text)
    if not multiline:
        text = text.replace("\n", " ").replace("\t", " ")
    return _CONTROLS.sub("", text)


# ------------------------------------------------------------------------------- HTML


def html_text(text: object) -> str:
    """Text for HTML element content or a quoted attribute: ``& < > " '`` escaped.

    >>> print(html_text('<img src=x onerror="alert(1)">'))
    &lt;img src=x onerror=&quot;alert(1)&quot;&gt;
    """
    return html.escape(str(text), quote=True)


# --------------------------------------------------------------------------- Markdown

# Backslash-escaped in Markdown prose: emphasis, code spans, link and image
# brackets (no '[', no link; '<' and '&' become entities), strike-through,
# table pipes, math ('$' is MathJax in JupyterLab), and the backslash itself.
_MD_PUNCTUATION = re.compile(r"([\\`*_\[\]~|$])")
# GitHub and JupyterLab turn bare URLs, www. names and e-mail addresses into
# links: a backslash before the ':' of '://' , the '.' of 'www.' and '@'
# stops that (the shown text does not change).
_MD_AUTOLINK = re.compile(r"(?<=[A-Za-z0-9])(:)(?=//)|(?<=\bwww)(\.)|(@)", re.IGNORECASE)


def md_text(text: object) -> str:
    r"""Markdown prose that shows ``text`` as is: it cannot become a link, an image, HTML, a code span or math.

    Lines are joined with spaces (prose stays in its list item or heading);
    a multi-line value belongs in :func:`md_fence`.

    >>> print(md_text("[x](javascript:alert(1)) ![b](http://beacon) <b>&"))
    \[x\](javascript:alert(1)) !\[b\](http\://beacon) &lt;b&gt;&amp;
    """
    return _md_text(str(text))


_KEPT, _KEPT_LENGTH = 1024, 200  # escaped texts kept, and the longest kept


def _kept(escape: Callable[[str], str]) -> Callable[[str], str]:
    """``escape`` with the results for short texts kept (at most ``_KEPT`` of them, ``_KEPT_LENGTH`` long).

    A class's feedback escapes the same check ids and titles for every
    learner (80 a report, up to four regular expressions each). Long text
    (learner values, messages) is escaped anew, so what is kept stays small.

    >>> shout = _kept(str.upper)
    >>> shout("ab"), shout("ab"), shout("x" * 500) == "X" * 500
    ('AB', 'AB', True)
    """
    kept = functools.lru_cache(maxsize=_KEPT)(escape)

    def escaped(text: str) -> str:
        return kept(text) if len(text) <= _KEPT_LENGTH else escape(text)

    return functools.wraps(escape)(escaped)


@_kept
def _md_text(text: str) -> str:
    text = terminal_text(text, multiline=True).replace("\n", " ")
    text = html.escape(text, quote=False)
    text = _MD_PUNCTUATION.sub(r"\\\1", text)
    return _MD_AUTOLINK.sub(lambda m: "\\" + m.group(0), text)


def md_code(text: object) -> str:
    """An inline code span that shows ``text`` verbatim, whatever backticks it holds (one line).

    >>> print(md_code("``x``"), md_code("<img src=x>"))
    ``` ``x`` ``` `<img src=x>`
    """
    return _md_code(str(text))


@_kept
def _md_code(text: str) -> str:
    text = terminal_text(text, multiline=False)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    # A space keeps a leading or trailing backtick out of the fence; one space
    # is stripped again on each side by the Markdown reader.
    pad = " " if text.startswith("`") or text.endswith("`") or (text.startswith(" ") and text.endswith(" ")) else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def md_fence(text: object, indent: str = "") -> str:
    """A fenced block longer than any backtick run in ``text`` (learner output can hold fences).

    >>> print(md_fence("a\\n```\\nb"))
    ````text
    a
    ```
    b
    ````
    """
    text = terminal_text(text, multiline=True).rstrip("\n")  # a fence ends its last line anyway
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * (longest + 1)
    body = "\n".join(indent + line for line in text.split("\n"))
    return f"{indent}{fence}text\n{body}\n{indent}{fence}"


def md_cell(text: object) -> str:
    r"""Prose safe inside one cell of a Markdown table: escaped as :func:`md_text`, one line, no column break.

    >>> print(md_cell("a | b <c>"))
    a \| b &lt;c&gt;
    """
    return md_text(text)


def md_code_cell(text: object) -> str:
    r"""An inline code span inside a table cell: a ``|`` in it would still end the cell, so it is escaped.

    >>> print(md_code_cell("a|b"))
    `a\|b`
    """
    return md_code(text).replace("|", "\\|")


# Escaped in minimal Markdown prose only where Markdown would act on them:
# a backslash before punctuation (or at the end), a backtick, '*', '~', '$' and
# '[' anywhere; '_' unless it is inside a word (``MAX_ROWS`` is never emphasis);
# '<' that opens a tag or an autolink; '&' that spells an entity.
_PROSE_BACKSLASH = re.compile(r"\\(?=[!-/:-@\[-`{-~]|$)")
_PROSE_ALWAYS = re.compile(r"([`*~$\[])")
_PROSE_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
_PROSE_TAG = re.compile(r"<(?=[A-Za-z/!?])")
_PROSE_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")


def md_prose(text: object) -> str:
    r"""Markdown prose that reads as written: :func:`md_text`'s safety with an escape only where one is needed.

    For a text a person also reads unrendered (feedback in an LMS): no HTML
    entity, no backslash before a character Markdown would show anyway.
    One line (lines joined with spaces), never at the start of a line (a
    list item or heading comes first), never in a table cell.

    >>> print(md_prose("MAX_ROWS gives missing:<arg>, 2 < 3 & [x](javascript:a) _em_ http://b"))
    MAX_ROWS gives missing:\<arg>, 2 < 3 & \[x](javascript:a) \_em\_ http\://b
    """
    text = terminal_text(text, multiline=True).replace("\n", " ")
    text = _PROSE_BACKSLASH.sub(r"\\\\", text)
    text = _PROSE_ALWAYS.sub(r"\\\1", text)
    text = _PROSE_UNDERSCORE.sub(r"\\_", text)
    text = _PROSE_TAG.sub(r"\\<", text)
    text = _PROSE_ENTITY.sub(r"\\&", text)
    return _MD_AUTOLINK.sub(lambda m: "\\" + m.group(0), text)


# -------------------------------------------------------------------------------- CSV

# OWASP "CSV injection": a cell starting with one of these is a formula to
# Excel, LibreOffice and Google Sheets.
CSV_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> object:
    """A CSV cell no spreadsheet evaluates: text starting with a formula character gets a ``'`` in front.

    Numbers are left as numbers (``-1`` as a score is a value, not a formula).

    >>> csv_cell("-1-1"), csv_cell("@SUM(A1)"), csv_cell("ana"), csv_cell(-1)
    ("'-1-1", "'@SUM(A1)", 'ana', -1)
    """
    if isinstance(value, str) and value.startswith(CSV_FORMULA_STARTS):
        return "'" + value
    return value
