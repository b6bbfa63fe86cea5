"""The replay command of a failed check as the Check panel shows it: runnable here, unbroken, copyable.

The grader writes ``agtool-grade check PATH --only ID --seed N``;
:func:`replay_line` puts the kernel's interpreter in place of ``agtool-grade``
(a JupyterLab terminal may lack the lab's environment on its ``PATH``), and
:func:`replay_html` draws it so that a narrow notebook never wraps it inside a
word (``--only`` as ``-`` / ``-only``) and a button copies it exactly.

Example::

    >>> replay_line("agtool-grade check t.py --seed 3", "python3 -m grader")
    'python3 -m grader check t.py --seed 3'
"""

from __future__ import annotations

import re

from grader.escape import html_text, terminal_text
from grader.messages import replay_for


def _esc(value: object) -> str:
    # Controls shown as escapes first, as everywhere in the panel (agtool_lab.view).
    return html_text(terminal_text(value))


def replay_line(command: str, runner: str | None = None) -> str:
    """A replay command as it runs here: ``runner`` (shell words) in place of ``agtool-grade``, if given
    (:func:`grader.messages.replay_for`, reader ``lab``).

    The widget passes the kernel's own interpreter (``'/path/python' -m grader``):
    a JupyterLab terminal may not have the lab's environment on its ``PATH``.

    >>> replay_line("agtool-grade check t.py --only step1/names --seed 3", "'/opt/my env/bin/python' -m grader")
    "'/opt/my env/bin/python' -m grader check t.py --only step1/names --seed 3"
    >>> replay_line("agtool-grade check t.py --seed 3")
    'agtool-grade check t.py --seed 3'
    """
    return replay_for(command, "lab", runner=runner)


# The replay command wraps only between its words (never inside ``--only``) or after a path's "/", and
# its copy button copies it exactly. The button's script runs in the widget's view only: JupyterLab
# strips it from sanitized HTML, so the fallback HTML has no button (``copy=False``).
_WORD = '<span style="white-space:nowrap">{}</span>'
# The clipboard where the page may write it (https, loopback); else the line is selected for Ctrl+C.
_COPY_SCRIPT = (
    "const b=this,t=b.dataset.copy,show=w=>{b.textContent=w};"
    "const pick=()=>{const r=document.createRange();r.selectNodeContents(b.previousElementSibling);"
    "const s=getSelection();s.removeAllRanges();s.addRange(r);show('selected: press Ctrl+C')};"
    "if(navigator.clipboard&&window.isSecureContext)"
    "{navigator.clipboard.writeText(t).then(()=>show('copied'),pick)}else{pick()}"
)


def _replay_word(word: str) -> str:
    # Unbreakable pieces; a path's pieces end at each "/", where <wbr> lets a long path wrap
    # (<wbr> adds no character to what is copied or selected).
    pieces = re.findall(r"[^/]*/|[^/]+", word) or [""]
    return "<wbr>".join(_WORD.format(_esc(piece)) for piece in pieces)


def replay_html(command: str, *, copy: bool = False) -> str:
    """A replay command as HTML: never broken inside a word (``--only``) but after a path's ``/``; with
    ``copy`` a button that copies it exactly.

    >>> html = replay_html("agtool-grade check /opt/t.py --only x")
    >>> '<span style="white-space:nowrap">--only</span>' in html, html.count("<wbr>")
    (True, 2)
    >>> re.sub("<[^>]+>", "", html)
    'agtool-grade check /opt/t.py --only x'
    """
    words = " ".join(_replay_word(word) for word in command.split(" "))
    code = f'<code class="agtool-replay">{words}</code>'
    if not copy or terminal_text(command) != command:  # control characters are shown as escapes, never copied
        return code
    return (
        f'{code} <button type="button" class="agtool-copy" aria-label="Copy the replay command" '
        f'title="Copy the replay command" data-copy="{html_text(command)}" '
        f'onclick="{html_text(_COPY_SCRIPT)}">copy</button>'
    )
