"""A griffe extension for the API reference: docstrings written for reST and doctest read well as Markdown.

The project's docstrings follow Python's own habit: ``Example::`` followed
by an indented block, or ``>>>`` examples right in the text. Markdown would
read a bare ``>>> x["a"]`` as text (with ``[...]`` as a link), so bare
examples become fenced ``pycon`` blocks, and a paragraph's closing ``::``
becomes ``:`` (the indented block after it is already code in Markdown).
"""

from __future__ import annotations

import griffe


def markdown_docstring(text: str) -> str:
    """``text`` with bare doctest runs fenced and reST's ``::`` made ``:`` (``tests/test_docs.py`` has examples)."""
    out: list[str] = []
    fenced = False
    for line in text.splitlines():
        if not fenced and line.startswith(">>>"):
            if out and out[-1].strip():
                out.append("")
            out.append("```pycon")
            fenced = True
        elif fenced and not line.strip():
            out.append("```")
            fenced = False
        out.append(line[:-1] if not fenced and line.endswith("::") and not line.startswith(" ") else line)
    if fenced:
        out.append("```")
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


class DoctestsAsCode(griffe.Extension):
    """Rewrites every docstring with :func:`markdown_docstring` once griffe has read it."""

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown_docstring(obj.docstring.value)
