"""Pairs of submissions that share unusually much code, after removing what every learner was given.

Fingerprints come from ``copydetect`` (winnowed k-grams of pygments tokens
with every name replaced by ``V``/``F``/``O`` and every string by ``S``, so
renaming variables, reordering functions and adding comments change
nothing). The starter (the committed ``starter/tools.py``, :func:`grader.outputs.starter.starter_text`:
a wheel ships it as the package ``grader.starter``) and the spec's given data
(``grader/spec.py``: the stock table, the contract) are passed as
boilerplate, so the code everyone starts from does not count. A pair is
*flagged* when both files share at least ``threshold`` of their remaining
code; a submission that matches a ``reference`` file (the instructor's
solution, never shipped to learners) that closely is flagged as such.

Nothing here imports or runs learner code: it only tokenizes text.

Example::

    >>> a = "def add(first, second):\\n    total = first + second\\n    return total * 2 + first - second\\n"
    >>> b = "def plus(x, y):  # mine\\n    s = x + y\\n    return s * 2 + x - y\\n"
    >>> [(p.a, p.b, p.flagged) for p in compare({"ana": a, "bob": b}, boilerplate=[], k=5)]
    [('ana', 'bob', True)]
"""

from __future__ import annotations

import csv
import io
import itertools
from dataclasses import dataclass
from pathlib import Path

from grader.escape import csv_cell, html_text
from grader.limits import SIMILARITY_CHARS
from grader.outputs.starter import starter_text

K = 25  # noise threshold: shared runs shorter than 25 normalised characters are ignored
WINDOW = 1  # winnowing window: every k-gram kept (a tools.py is small; this is exact and fast enough)
THRESHOLD = 0.6  # the independent modules of tests/alt_styles/ share at most ~0.4 (docs/instructor.md, "Similarity")
MAX_CHARS = SIMILARITY_CHARS  # compared per file (grader.limits says why)
# The starter as a wheel installs it (pyproject.toml maps agtool/ onto this package), and in a checkout.
SPEC_FILE = Path(__file__).resolve().parents[1] / "spec.py"


@dataclass
class Pair:
    """Two submissions (or one and a reference), the share of each that is shared code, and where."""

    a: str
    b: str
    similarity_a: float
    similarity_b: float
    shared_tokens: int
    flagged: bool
    kind: str  # "pair", or "reference" when ``b`` is the instructor's reference file
    slices_a: list  # [(start, end)] character ranges in a's text
    slices_b: list


def _fingerprint(name: str, code: str, boilerplate, k: int):
    from copydetect import CodeFingerprint  # the similarity extra; only a run with --similarity needs it

    return CodeFingerprint(name, k, WINDOW, boilerplate=boilerplate, fp=io.StringIO(code), language="python")


def given_texts() -> dict[str, str]:
    """What every learner was given, by name: the starter and the spec's data (``grader/spec.py``).

    >>> sorted(given_texts())
    ['grader/spec.py', 'starter/tools.py']
    """
    return {"starter/tools.py": starter_text(), "grader/spec.py": SPEC_FILE.read_text(encoding="utf-8")}


def given_boilerplate(texts: dict[str, str] | None = None, k: int = K) -> list:
    """The fingerprints of ``texts`` (default: :func:`given_texts`), discounted as code everyone was given.

    >>> len(given_boilerplate()) > 100
    True
    """
    hashes = set()
    for name, text in (given_texts() if texts is None else texts).items():
        hashes |= _fingerprint(name, text, None, k).hashes
    return sorted(hashes)


def compare(
    sources: dict[str, str],
    *,
    references: dict[str, str] | None = None,
    boilerplate=None,
    k: int = K,
    threshold: float = THRESHOLD,
) -> list[Pair]:
    """Every pair of ``sources`` (name -> text), and each source against each reference, most similar first."""
    from copydetect import compare_files

    boilerplate = given_boilerplate(k=k) if boilerplate is None else boilerplate
    prints = {name: _fingerprint(f"{name}.py", code, boilerplate, k) for name, code in sources.items()}
    refs = {name: _fingerprint(f"{name}.py", code, boilerplate, k) for name, code in (references or {}).items()}
    jobs = [(a, b, prints[a], prints[b], "pair") for a, b in itertools.combinations(sorted(prints), 2)]
    jobs += [(a, r, prints[a], refs[r], "reference") for a in sorted(prints) for r in sorted(refs)]
    pairs = []
    for a, b, fa, fb, kind in jobs:
        shared, (sa, sb), (slices_a, slices_b) = compare_files(fa, fb)
        spans_a = [(int(s), int(e)) for s, e in zip(*slices_a)] if len(slices_a) else []
        spans_b = [(int(s), int(e)) for s, e in zip(*slices_b)] if len(slices_b) else []
        sa, sb = round(float(sa), 4), round(float(sb), 4)
        pairs.append(Pair(a, b, sa, sb, int(shared), min(sa, sb) >= threshold, kind, spans_a, spans_b))
    pairs.sort(key=lambda p: (-min(p.similarity_a, p.similarity_b), -max(p.similarity_a, p.similarity_b), p.a, p.b))
    return pairs


def similarity_csv(pairs: list[Pair]) -> str:
    """``similarity.csv``: one row per pair, ranked, every cell escaped for spreadsheets.

    >>> print(similarity_csv([Pair("=a", "b", 0.9, 0.8, 120, True, "pair", [], [])]), end="")
    rank,a,b,similarity_a,similarity_b,shared_tokens,flagged,kind
    1,'=a,b,0.9,0.8,120,yes,pair
    """
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["rank", "a", "b", "similarity_a", "similarity_b", "shared_tokens", "flagged", "kind"])
    for rank, p in enumerate(pairs, start=1):
        writer.writerow(
            [
                csv_cell(v)
                for v in (
                    rank,
                    p.a,
                    p.b,
                    p.similarity_a,
                    p.similarity_b,
                    p.shared_tokens,
                    "yes" if p.flagged else "no",
                    p.kind,
                )
            ]
        )
    return out.getvalue()


def _marked(code: str, spans: list) -> str:
    """``code`` as escaped HTML with the shared spans in ``<mark>``."""
    parts, at = [], 0
    for start, end in sorted(spans):
        start = max(start, at)
        parts.append(html_text(code[at:start]))
        parts.append(f"<mark>{html_text(code[start:end])}</mark>")
        at = max(at, end)
    parts.append(html_text(code[at:]))
    return "".join(parts)


HIDDEN_REFERENCE = "(the reference solution is compared, never shown here)"


def similarity_html(
    pairs: list[Pair],
    sources: dict[str, str],
    references: dict[str, str] | None = None,
    *,
    shown: int = 20,
    show_references: bool = True,
) -> str:
    """``similarity.html``: the pairs ranked, and for the first ``shown`` the two files side by side, shared code marked.

    ``show_references=False`` (the grading service, whose page travels over
    the network) puts a placeholder where a reference file's text would be.

    >>> "&lt;script&gt;" in similarity_html([Pair("<script>", "b", 1, 1, 9, True, "pair", [(0, 1)], [])],
    ...                                     {"<script>": "x", "b": "y"})
    True
    >>> page = similarity_html([Pair("a", "reference:r", 1, 1, 9, True, "reference", [], [(0, 3)])],
    ...                        {"a": "x"}, {"reference:r": "SECRET"}, show_references=False)
    >>> "SECRET" in page, HIDDEN_REFERENCE in page
    (False, True)
    """
    texts = {**sources, **(references or {})}
    hidden = set() if show_references else set(references or {})
    rows = "".join(
        f"<tr class={'flag' if p.flagged else 'ok'}><td>{i}</td><td>{html_text(p.a)}</td><td>{html_text(p.b)}"
        f"{' (reference)' if p.kind == 'reference' else ''}</td><td>{p.similarity_a:.0%}</td>"
        f"<td>{p.similarity_b:.0%}</td><td>{p.shared_tokens}</td><td>{'yes' if p.flagged else 'no'}</td></tr>"
        for i, p in enumerate(pairs, start=1)
    )
    details = "".join(
        f"<h2>{i}. {html_text(p.a)} &harr; {html_text(p.b)} ({p.similarity_a:.0%} / {p.similarity_b:.0%})</h2>"
        f"<div class=side><pre>{_marked(texts.get(p.a, ''), p.slices_a)}</pre>"
        f"<pre>{html_text(HIDDEN_REFERENCE) if p.b in hidden else _marked(texts.get(p.b, ''), p.slices_b)}</pre></div>"
        for i, p in enumerate(pairs[:shown], start=1)
    )
    style = (
        "body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:.2em .5em}.flag{background:#ffebe9}"
        ".side{display:flex;gap:1em}.side pre{flex:1;overflow:auto;background:#f6f8fa;padding:.5em;"
        "font-size:12px}mark{background:#fff3b0}"
    )
    return (
        "<!doctype html><html><head><meta charset=utf-8>"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>Similarity</title><style>{style}</style></head><body><h1>Similarity</h1>"
        f"<p>Shared code after removing the starter and the spec's given data, on normalised tokens "
        f"(copydetect, k={K}). Flagged: both files share at least {THRESHOLD:.0%}.</p>"
        "<table><tr><th>rank</th><th>a</th><th>b</th><th>share of a</th><th>share of b</th>"
        f"<th>shared tokens</th><th>flagged</th></tr>{rows}</table>{details}</body></html>"
    )


def capped(texts: dict[str, str] | None, most: int = MAX_CHARS) -> dict[str, str] | None:
    """Each text cut to its first ``most`` characters: what is compared and shown (the rest is padding or worse).

    >>> {k: len(v) for k, v in capped({"ana": "x" * 10, "bob": "y" * 3}, most=4).items()}
    {'ana': 4, 'bob': 3}
    """
    if texts is None:
        return None
    return {name: text[:most] for name, text in texts.items()}


def similarity_outputs(
    sources: dict[str, str], references: dict[str, str] | None = None, *, show_references: bool = True
) -> dict:
    """``{"html", "csv", "pairs"}`` for ``sources`` (learner -> text); ``show_references=False``: references
    are compared, never shown (the service's page, which more people reach than the batch's folder).

    >>> code = "def f(a, b):\\n    return a + b * 2 - a + b * 3 - a * b + a - b * 4\\n"
    >>> out = similarity_outputs({"ana": code, "bob": code}, {"reference:tools.py": "SECRET = 1\\n" + code},
    ...                          show_references=False)
    >>> "SECRET" in out["html"], out["csv"].splitlines()[0].split(",")[:3]
    (False, ['rank', 'a', 'b'])
    """
    sources, references = capped(sources), capped(references)  # the cost grows faster than the text
    pairs = compare(sources, references=references)
    return {
        "html": similarity_html(pairs, sources, references, show_references=show_references),
        "csv": similarity_csv(pairs),
        "pairs": pairs,
    }


def write_similarity(
    sources: dict[str, str], out: str | Path, *, references: dict[str, str] | None = None
) -> tuple[dict[str, Path], list[Pair]]:
    """Write ``similarity.html`` and ``similarity.csv`` under ``out``; their paths and the ranked pairs.

    >>> write_similarity({}, "out/")   # doctest: +SKIP
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    got = similarity_outputs(sources, references)
    paths = {"similarity:html": out / "similarity.html", "similarity:csv": out / "similarity.csv"}
    paths["similarity:html"].write_text(got["html"], encoding="utf-8")
    paths["similarity:csv"].write_text(got["csv"], encoding="utf-8")
    return paths, got["pairs"]
