"""The service's pages' one Jinja environment: autoescaping templates, JupyterHub's look, times in the reader's zone.

Every page is a template of ``grader/service/templates`` (package data)
extending ``base.html``: behind a hub, a page links the hub's own stylesheet
(``{hub}static/css/style.min.css``, JupyterHub 5's Bootstrap) and uses its
layout, a navbar with the hub's logo linking home, then a container; without
a hub, a small bundled stylesheet gives the same layout. Python hands the
templates plain data (dicts, lists, strings), never markup; the repeated
pieces (a score, a failed check, a time, a form) are macros of
``macros.html`` and ``actions.html``.

Escaping: the environment autoescapes, and every ``{{ value }}`` is first
escaped by :func:`esc`, the one template filter (``finalize``), with the
project's HTML helper (:func:`grader.escape.html_text`: quotes as
``&#x27;``, as the pages always wrote them). The only script is
``local-time.js``, inline, allowed by its hash in the Content-Security-Policy
(:func:`csp`): it shows each ``<time>`` in the reader's zone; without scripts
the UTC text stays.

Example::

    >>> html = render("error.html", title="404", status=404, message="<no>")
    >>> '<html lang="en">' in html, "<p>&lt;no&gt;</p>" in html
    (True, True)
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import hashlib
import re
from dataclasses import dataclass
from urllib.parse import quote

from grader.escape import html_text, terminal_text

TEMPLATES = "templates"
SCRIPT_FILE = "local-time.js"


@dataclass(frozen=True)
class Chrome:
    """Who reads the page and where the hub is: the navbar's links (``hub_prefix`` ``""``: no hub).

    >>> Chrome(prefix="/services/g/", hub_prefix="/hub/", user="ana").links()[:2]
    [('Hub home', '/hub/home'), ('Your lab', '/user/ana/lab')]
    >>> [text for text, _ in Chrome(prefix="/", user="t", instructor=True).links()]
    ['Your attempts', 'Class']
    """

    prefix: str = "/"
    hub_prefix: str = ""
    user: str = ""
    instructor: bool = False

    @property
    def lab_url(self) -> str:
        """The reader's own JupyterLab on the hub (``""`` without a hub or a reader)."""
        if not (self.hub_prefix and self.user):
            return ""
        base = self.hub_prefix[: -len("hub/")] if self.hub_prefix.endswith("hub/") else "/"
        return f"{base}user/{quote(self.user, safe='')}/lab"

    def links(self) -> list[tuple[str, str]]:
        links = [("Hub home", f"{self.hub_prefix}home")] if self.hub_prefix else []
        if self.lab_url:
            links.append(("Your lab", self.lab_url))
        links.append(("Your attempts", self.prefix))
        if self.instructor:
            links.append(("Class", f"{self.prefix}class"))
        return links


def _text(name: str) -> str:
    from importlib import resources

    return (resources.files("grader.service") / TEMPLATES / name).read_text(encoding="utf-8")


def esc(value: object):
    """The template filter every ``{{ value }}`` goes through: escaped by :func:`html_text` (``None``: nothing).

    A value already markup (a macro's output) passes as it is.

    >>> str(esc('<a href="x">')), str(esc(None))
    ('&lt;a href=&quot;x&quot;&gt;', '')
    """
    from markupsafe import Markup

    if hasattr(value, "__html__"):
        return value
    return Markup(html_text("" if value is None else value))


def url_part(value: object) -> str:
    """One path segment of a URL (a learner's name): every reserved character quoted.

    >>> url_part("a b/c")
    'a%20b%2Fc'
    """
    return quote(str(value), safe="")


def _moment(value: object) -> dt.datetime | None:
    if not isinstance(value, str) or not value.endswith("Z"):
        return None
    try:
        return dt.datetime.fromisoformat(value[:-1]).replace(tzinfo=dt.timezone.utc)
    except ValueError:
        return None


def utc_text(value: object) -> str:
    """A stored UTC time (ISO with ``Z``) as people read it, or ``""`` for anything else.

    >>> utc_text("2026-03-01T12:00:00Z"), utc_text("<soon>")
    ('2026-03-01 12:00 UTC', '')
    """
    moment = _moment(value)
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment else ""


_ISO_Z = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\b")


def time_split(text: object) -> list[tuple[str, bool]]:
    """``text`` cut into ``(piece, is_a_time)``: each ISO UTC time in it (``...Z``) a piece of its own.

    >>> time_split("due 2026-03-01T12:00:00Z.")
    [('due ', False), ('2026-03-01T12:00:00Z', True), ('.', False)]
    """
    text = "" if text is None else str(text)
    pieces, last = [], 0
    for match in _ISO_Z.finditer(text):
        pieces += [(text[last : match.start()], False), (match.group(0), True)]
        last = match.end()
    return pieces + [(text[last:], False)]


@functools.lru_cache(maxsize=1)
def environment():
    """The one Jinja environment of the service's pages: autoescape on, :func:`esc` on every value."""
    import jinja2  # JupyterHub's own dependency: the service extra has it

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("grader.service", TEMPLATES),
        autoescape=True,
        finalize=esc,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(url_part=url_part, utc_text=utc_text, time_split=time_split, terminal=terminal_text)
    return env


def render(template: str, *, title: str, chrome: Chrome | None = None, refresh: int | None = None, **data) -> str:
    """A whole page: ``template`` (extending ``base.html``) with ``data``, in the hub's look."""
    from markupsafe import Markup

    # The stylesheets and the script are files of ours, put in as they are (the script's hash is in the CSP).
    return (
        environment()
        .get_template(template)
        .render(
            title=title,
            chrome=chrome or Chrome(),
            refresh=int(refresh) if refresh else None,
            standalone_css=Markup(_text("standalone.css")),
            agtool_css=Markup(_text("agtool.css")),
            script=Markup(_text(SCRIPT_FILE)),
            **data,
        )
    )


def macro(template: str, name: str):
    """A macro of ``template`` as a function (its output is markup: a fragment of a page)."""
    return getattr(environment().get_template(template).module, name)


def csp() -> str:
    """The pages' Content-Security-Policy: no script but the time script (by hash), styles and images from here.

    >>> csp().startswith("default-src 'none'; script-src 'sha256-")
    True
    """
    digest = base64.b64encode(hashlib.sha256(_text(SCRIPT_FILE).encode("utf-8")).digest()).decode("ascii")
    return (
        f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
    )


def time_html(value: object) -> str:
    """A stored UTC time as ``<time>`` (macro ``time``): UTC text (the no-script fallback and the hover).

    Anything that is not an ISO time with ``Z`` is shown escaped, as it came.

    >>> time_html("2026-03-01T12:00:00Z")
    '<time datetime="2026-03-01T12:00:00Z" title="2026-03-01 12:00 UTC">2026-03-01 12:00 UTC</time>'
    >>> time_html("<soon>"), time_html(None)
    ('&lt;soon&gt;', '')
    """
    return str(macro("macros.html", "time")(value))


def text_with_times(text: object) -> str:
    """``text`` escaped, each ISO UTC time in it as :func:`time_html` (macro ``with_times``).

    >>> text_with_times("on time (due 2026-03-01T12:00:00Z) <b>")  # doctest: +ELLIPSIS
    'on time (due <time datetime="2026-03-01T12:00:00Z" ...>2026-03-01 12:00 UTC</time>) &lt;b&gt;'
    """
    return str(macro("macros.html", "with_times")(text))
