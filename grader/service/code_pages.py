"""The pages that show learners' code: one attempt with line numbers, and two codes side by side.

Learner bytes are never served as they are: each line is decoded (bad bytes
replaced), its control characters shown as visible escapes (a bidi override
could make code read otherwise), and the templates (``code.html``,
``compare.html``, macro ``code`` of ``macros.html``) escape it, inside the
service's base template. The similarity page lists the pairs
``grader.outputs.similarity`` flags, each linking to the two counting
attempts side by side; a reference solution is compared there but never
listed or shown.

Example::

    >>> print(code_html(b"x = '<b>'\\n\\ny = 1"))
    <ol class=code tabindex=0 aria-label="Code, 3 lines"><li><code>x = &#x27;&lt;b&gt;&#x27;</code></li><li><code> </code></li><li><code>y = 1</code></li></ol>
"""

from __future__ import annotations

from urllib.parse import quote, urlencode

from grader.escape import terminal_text
from grader.service.layout import Chrome, macro, render


def code_lines(source: bytes) -> list[str]:
    """The code's lines, decoded (bad bytes replaced), each control character a visible escape.

    >>> code_lines(b"a\\r\\nb\\x1b\\n")
    ['a', 'b\\\\x1b']
    """
    text = source.decode("utf-8", "replace").replace("\r\n", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "" and len(lines) > 1:
        lines.pop()  # the file's last newline ends a line, it does not start one
    return [terminal_text(line) for line in lines]


def code_html(source: bytes) -> str:
    """The code as a numbered list (macro ``code``: the browser numbers it, copying the code copies no numbers)."""
    return str(macro("macros.html", "code")(code_lines(source)))


def code_page(learner: str, number: int, source: bytes, *, chrome: Chrome, back: str) -> str:
    """One attempt's code, headed by the learner's own number of it (1, 2, 3: as on their page, not the
    service's attempt id); ``back``: the learner's page."""
    whose = "Your" if learner == chrome.user else f"{learner}'s"
    title = f"{whose} attempt {number}: code"
    return render(
        "code.html",
        title=f"agtool: {title}",
        chrome=chrome,
        heading=title,
        back=back,
        whose=whose.lower() if whose == "Your" else whose,
        lines=code_lines(source),
    )


def compare_url(prefix: str, a: str, b: str) -> str:
    """The side-by-side page of two learners.

    >>> compare_url("/p/", "a&b", "c")
    '/p/similarity/compare?a=a%26b&b=c'
    """
    return f"{prefix}similarity/compare?{urlencode({'a': a, 'b': b})}"


def similarity_page(pairs: list, *, prefix: str, chrome: Chrome) -> str:
    """The flagged pairs of learners (``Pair`` objects; reference pairs left out), each with a side-by-side link."""
    rows = [
        {
            "a": p.a,
            "b": p.b,
            "share_a": round(100 * p.similarity_a),
            "share_b": round(100 * p.similarity_b),
            "tokens": p.shared_tokens,
            "flagged": "yes" if p.flagged else "no",
            "compare": compare_url(prefix, p.a, p.b),
        }
        for p in pairs
        if p.kind == "pair"
    ]
    return render("similarity.html", title="agtool: similar code", chrome=chrome, prefix=prefix, pairs=rows)


def compare_page(left: tuple[str, int, bytes], right: tuple[str, int, bytes], *, prefix: str, chrome: Chrome) -> str:
    """Two learners' counting attempts side by side: ``(learner, the learner's number of it, source)`` each."""
    sides = [
        {
            "name": name,
            "attempt": attempt,
            "page": f"{prefix}learners/{quote(name, safe='')}",
            "lines": code_lines(source),
        }
        for name, attempt, source in (left, right)
    ]
    title = f"{left[0]} and {right[0]}, side by side"
    return render("compare.html", title=f"agtool: {title}", chrome=chrome, heading=title, prefix=prefix, sides=sides)
