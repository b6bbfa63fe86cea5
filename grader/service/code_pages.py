"""The pages that show learners' code: one attempt with line numbers, and two codes side by side.

Learner bytes are never served as they are: each line is decoded (bad bytes
replaced), its control characters shown as visible escapes (a bidi override
could make code read otherwise) and HTML-escaped, inside the service's base
template. The similarity page lists the pairs ``grader.outputs.similarity``
flags, each linking to the two counting attempts side by side; a reference
solution is compared there but never listed or shown.

Example::

    >>> print(code_html(b"x = '<b>'\\n\\ny = 1"))
    <ol class=code tabindex=0 aria-label="Code, 3 lines"><li><code>x = &#x27;&lt;b&gt;&#x27;</code></li><li><code> </code></li><li><code>y = 1</code></li></ol>
"""
from __future__ import annotations

from urllib.parse import quote, urlencode

from grader.escape import terminal_text
from grader.service.layout import Chrome, esc, page


def code_html(source: bytes) -> str:
    """The code as a numbered list (the browser numbers it: copying the code copies no numbers)."""
    text = source.decode("utf-8", "replace").replace("\r\n", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "" and len(lines) > 1:
        lines.pop()  # the file's last newline ends a line, it does not start one
    # tabindex: a long line scrolls the list sideways, and a keyboard must reach it (WCAG 2.1.1).
    # A blank line keeps a space: an empty <code> would collapse and shift the numbers' alignment.
    items = "".join(f"<li><code>{esc(terminal_text(line)) or ' '}"
                    "</code></li>" for line in lines)
    return f'<ol class=code tabindex=0 aria-label="Code, {len(lines)} line{"s" if len(lines) != 1 else ""}">{items}</ol>'


def code_page(learner: str, number: int, source: bytes, *, chrome: Chrome, back: str) -> str:
    """One attempt's code, headed by the learner's own number of it (1, 2, 3: as on their page, not the
    service's attempt id); ``back``: the learner's page (escaped here)."""
    whose = "Your" if learner == chrome.user else f"{learner}'s"
    title = f"{whose} attempt {number}: code"
    body = (f"<h1>{esc(title)}</h1><p><a href=\"{esc(back)}\">Back to {esc(whose.lower() if whose == 'Your' else whose)}"
            f" attempts</a></p>{code_html(source)}")
    return page(f"agtool: {title}", body, chrome=chrome)


def compare_href(prefix: str, a: str, b: str) -> str:
    """The side-by-side page of two learners (escaped for an attribute).

    >>> compare_href("/p/", "a&b", "c")
    '/p/similarity/compare?a=a%26b&amp;b=c'
    """
    return esc(f"{prefix}similarity/compare?{urlencode({'a': a, 'b': b})}")


def similarity_page(pairs: list, *, prefix: str, chrome: Chrome) -> str:
    """The flagged pairs of learners (``Pair`` objects; reference pairs left out), each with a side-by-side link."""
    rows = "".join(
        f"<tr><td>{esc(p.a)}</td><td>{esc(p.b)}</td><td>{round(100 * p.similarity_a)}%</td>"
        f"<td>{round(100 * p.similarity_b)}%</td><td>{esc(p.shared_tokens)}</td>"
        f"<td>{'yes' if p.flagged else 'no'}</td>"
        f"<td><a href=\"{compare_href(prefix, p.a, p.b)}\">{esc(p.a)} and {esc(p.b)} side by side</a></td></tr>"
        for p in pairs if p.kind == "pair")
    table = ("<table><thead><tr><th>learner A</th><th>learner B</th><th>share of A</th><th>share of B</th>"
             f"<th>shared tokens</th><th>flagged</th><th>code</th></tr></thead><tbody>{rows}</tbody></table>"
             if rows else "<p>No pair of learners shares enough code to list.</p>")
    body = (f"<h1>Similar code</h1><p><a href=\"{esc(prefix)}class\">Back to the class page</a> &middot; "
            f"<a href=\"{esc(prefix)}similarity.html\">similarity.html</a> (download, with the shared parts marked)"
            f"</p><p>Each learner's counting attempt, compared with every other.</p>{table}")
    return page("agtool: similar code", body, chrome=chrome)


def compare_page(left: "tuple[str, int, bytes]", right: "tuple[str, int, bytes]", *, prefix: str,
                 chrome: Chrome) -> str:
    """Two learners' counting attempts side by side: ``(learner, the learner's number of it, source)`` each."""
    sides = "".join(
        f"<section aria-labelledby=side-{i}><h2 id=side-{i}>{esc(name)}, attempt {esc(attempt)} "
        f"(<a href=\"{esc(prefix)}learners/{esc(quote(name, safe=''))}\">{esc(name)}'s attempts</a>)</h2>"
        f"{code_html(source)}</section>"
        for i, (name, attempt, source) in enumerate((left, right)))
    title = f"{left[0]} and {right[0]}, side by side"
    body = (f"<h1>{esc(title)}</h1><p><a href=\"{esc(prefix)}similarity\">Back to the similar pairs</a></p>"
            f"<div class=side-by-side>{sides}</div>")
    return page(f"agtool: {title}", body, chrome=chrome)
