"""The one base template of the service's pages: JupyterHub's look, landmarks, a skip link, times in the reader's zone.

Behind a hub, a page links the hub's own stylesheet (``{hub}static/css/style.min.css``,
JupyterHub 5's Bootstrap) and uses its layout: a navbar with the hub's logo
linking home, then a container. Without a hub, a small bundled stylesheet
gives the same layout. The templates and stylesheets are package data
(``grader/service/templates``). The only script is :data:`SCRIPT`, inline,
allowed by its hash in the Content-Security-Policy (:func:`csp`): it shows
each ``<time>`` in the reader's zone; without scripts the UTC text stays.

Example::

    >>> html = page("t", time_html("2026-03-01T12:00:00Z"))
    >>> '<html lang="en">' in html, '<time datetime="2026-03-01T12:00:00Z" title="2026-03-01 12:00 UTC">' in html
    (True, True)
"""
from __future__ import annotations

import base64
import datetime as dt
import functools
import hashlib
import html
import re
from dataclasses import dataclass
from urllib.parse import quote

TEMPLATES = "templates"


def esc(value: object) -> str:
    """HTML-escape anything (quotes too: values also go into attributes).

    >>> esc('<a href="x">')
    '&lt;a href=&quot;x&quot;&gt;'
    """
    return html.escape("" if value is None else str(value), quote=True)


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
        base = self.hub_prefix[:-len("hub/")] if self.hub_prefix.endswith("hub/") else "/"
        return f"{base}user/{quote(self.user, safe='')}/lab"

    def links(self) -> "list[tuple[str, str]]":
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


SCRIPT_FILE = "local-time.js"


@functools.lru_cache(maxsize=1)
def _environment():
    import jinja2  # JupyterHub's own dependency: the service extra has it

    return jinja2.Environment(loader=jinja2.PackageLoader("grader.service", TEMPLATES),
                              autoescape=True, keep_trailing_newline=True)


def csp() -> str:
    """The pages' Content-Security-Policy: no script but the time script (by hash), styles and images from here.

    >>> csp().startswith("default-src 'none'; script-src 'sha256-")
    True
    """
    digest = base64.b64encode(hashlib.sha256(_text(SCRIPT_FILE).encode("utf-8")).digest()).decode("ascii")
    return (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'self' 'unsafe-inline'; "
            "img-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")


def page(title: str, body: str, *, refresh: "int | None" = None, chrome: "Chrome | None" = None) -> str:
    """A whole HTML document around ``body`` (which must already be escaped), in the base template.

    >>> "&lt;script&gt;" in page("t", "<p>" + esc("<script>") + "</p>")
    True
    """
    from markupsafe import Markup

    return _environment().get_template("base.html").render(
        title=title, body=Markup(body), refresh=int(refresh) if refresh else None, chrome=chrome or Chrome(),
        standalone_css=Markup(_text("standalone.css")), agtool_css=Markup(_text("agtool.css")),
        script=Markup(_text(SCRIPT_FILE)))


def _moment(value: object) -> "dt.datetime | None":
    if not isinstance(value, str) or not value.endswith("Z"):
        return None
    try:
        return dt.datetime.fromisoformat(value[:-1]).replace(tzinfo=dt.timezone.utc)
    except ValueError:
        return None


def time_html(value: object) -> str:
    """A stored UTC time as ``<time>``: UTC text (the no-script fallback and the hover), local once the script ran.

    Anything that is not an ISO time with ``Z`` is shown escaped, as it came.

    >>> time_html("2026-03-01T12:00:00Z")
    '<time datetime="2026-03-01T12:00:00Z" title="2026-03-01 12:00 UTC">2026-03-01 12:00 UTC</time>'
    >>> time_html("<soon>"), time_html(None)
    ('&lt;soon&gt;', '')
    """
    moment = _moment(value)
    if moment is None:
        return esc(value)
    utc = moment.strftime("%Y-%m-%d %H:%M UTC")
    return f'<time datetime="{esc(value)}" title="{utc}">{utc}</time>'


_ISO_Z = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\b")


def text_with_times(text: object) -> str:
    """``text`` escaped, each ISO UTC time in it (``...Z``) as :func:`time_html` (a policy's "why" names dates).

    >>> text_with_times("on time (due 2026-03-01T12:00:00Z) <b>")  # doctest: +ELLIPSIS
    'on time (due <time datetime="2026-03-01T12:00:00Z" ...>2026-03-01 12:00 UTC</time>) &lt;b&gt;'
    """
    text = "" if text is None else str(text)
    parts, last = [], 0
    for match in _ISO_Z.finditer(text):
        parts += [esc(text[last:match.start()]), time_html(match.group(0))]
        last = match.end()
    return "".join(parts) + esc(text[last:])
