"""The service's pages: one base template, times in the reader's zone, the reader's words, learners' code.

Pages are checked as documents (BeautifulSoup) and against golden files in
``tests/golden/pages/`` (refresh them with ``UPDATE_GOLDEN=1 pytest tests/test_service_pages.py``);
the routes run behind the real ``HubOAuth`` client and a stand-in hub (tests/service_stand_ins.py).
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from pathlib import Path

import pytest

pytest.importorskip("jupyterhub")

from bs4 import BeautifulSoup
from service_stand_ins import FakeHub, Service, failing_report

from grader.messages import replay_for
from grader.service import code_pages, layout, pages
from grader.service.db import GRADED, Store

GOLDEN = Path(__file__).resolve().parent / "golden" / "pages"
HOSTILE = "</code><script>alert(1)</script>\u202e<img src=x onerror=alert(2)>"
REPORT = failing_report(HOSTILE)
ATTEMPT = {
    "id": 4,
    "status": "graded",
    "submitted_at": "2026-03-01T09:30:00Z",
    "sha256": "ab" * 32,
    "seed": 7,
    "score": 1,
    "max_score": 3,
    "report": REPORT,
}
COURSE = {
    "due": "2026-03-01T12:00:00Z",
    "late_due": None,
    "counts": "best",
    "attempts_left": 0,
    "limit": 3,
    "window_minutes": 60,
    "next_allowed": "2026-03-01T10:15:00Z",
}


def _golden(name: str, text: str) -> None:
    """``text`` against its golden file; the stylesheets and the script are files of their own, not repeated there."""
    text = re.sub(r"<(style|script)>.*?</\1>", r"<\1>...</\1>", text, flags=re.S)
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing {path}; create it with UPDATE_GOLDEN=1 pytest {__file__}"
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from its golden file"


# ---------------------------------------------------------------------------- the base template


def test_every_page_has_the_hub_look_landmarks_a_skip_link_and_english():
    hub = layout.Chrome(prefix="/services/agtool-grader/", hub_prefix="/hub/", user="ben")
    soup = BeautifulSoup(layout.render("error.html", title="t", status=400, message="x", chrome=hub), "html.parser")
    assert soup.html["lang"] == "en"
    assert soup.find("link", rel="stylesheet")["href"] == "/hub/static/css/style.min.css"
    assert soup.find("img", class_="jpy-logo")["src"] == "/hub/logo"
    assert soup.find("header").find("nav") is not None and soup.find("main", id="main") is not None
    skip = soup.find("a")
    assert skip["href"] == "#main" and "Skip" in skip.get_text()
    assert {a.get_text(): a["href"] for a in soup.find_all("a", class_="nav-link")}["Your lab"] == "/user/ben/lab"
    standalone = BeautifulSoup(
        layout.render("error.html", title="t", status=400, message="x", chrome=None), "html.parser"
    )
    assert standalone.find("link", rel="stylesheet") is None and ".container{" in standalone.find("style").string


def test_the_one_script_is_allowed_by_its_hash_and_nothing_else_runs():
    soup = BeautifulSoup(layout.render("error.html", title="t", status=400, message="", chrome=None), "html.parser")
    (script,) = soup.find_all("script")
    digest = base64.b64encode(hashlib.sha256(script.string.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}';" in layout.csp() and "unsafe-eval" not in layout.csp()


def test_times_carry_utc_in_the_markup_and_on_hover():
    html = pages.course_html(COURSE)
    soup = BeautifulSoup(html, "html.parser")
    times = {t["datetime"]: (t["title"], t.get_text()) for t in soup.find_all("time")}
    assert times["2026-03-01T12:00:00Z"] == ("2026-03-01 12:00 UTC", "2026-03-01 12:00 UTC")
    assert "2026-03-01T10:15:00Z" in times  # the next allowed attempt, too
    assert layout.time_html('"><script>') == "&quot;&gt;&lt;script&gt;"
    counted = {
        **COURSE,
        "counted": {"attempt": 4, "credited": 1, "max_score": 3, "why": "on time (due 2026-03-01T12:00:00Z) <b>"},
    }
    why = BeautifulSoup(pages.course_html(counted), "html.parser")
    assert len(why.find_all("time")) == 3 and "(due 2026-03-01 12:00 UTC) <b>" in why.get_text()


# ---------------------------------------------------------------------------- the learner page


def test_the_learner_page_shows_the_failing_call_and_the_replay_line_as_the_widget_does():
    from grader.render import failure_details
    from grader.report import CheckResult

    html = pages.learner_page(
        "ben",
        [ATTEMPT],
        prefix="/p/",
        is_instructor=False,
        course=COURSE,
        chrome=layout.Chrome(prefix="/p/", hub_prefix="/hub/", user="ben"),
    )
    _golden("learner.html", html)
    soup = BeautifulSoup(html, "html.parser")
    shown = [dt.get_text() for dt in soup.find("dl", class_="failure").find_all("dt")]
    assert shown == [label for label, _ in failure_details(CheckResult(**REPORT["checks"][1]))]
    # The learner's lab path, never the path the service graded its stored copy under.
    assert soup.find("dd", class_="replay").get_text() == replay_for(REPORT["checks"][1]["reproduce"], "service")
    assert "agtool/tools.py" in soup.find("dd", class_="replay").get_text()
    assert soup.find_all("script") == soup.find_all("script", string=layout._text(layout.SCRIPT_FILE))
    assert HOSTILE not in html and not soup.find_all("img", onerror=True) and "\u202e" not in html
    assert soup.find("a", string="Back to your lab")["href"] == "/user/ben/lab"
    assert soup.find("a", href="/p/learners/ben/attempts/4/code") is not None


def test_an_instructor_reads_the_learner_s_name_not_your():
    html = pages.learner_page(
        "ben",
        [ATTEMPT],
        prefix="/p/",
        is_instructor=True,
        course=COURSE,
        chrome=layout.Chrome(prefix="/p/", user="teacher", instructor=True),
    )
    main = BeautifulSoup(html, "html.parser").main
    assert main.h1.get_text() == "ben's attempts" and "Your" not in main.get_text()  # the navbar's are the reader's
    assert "ben's best attempt counts" in main.get_text() or "ben's last attempt on time counts" in main.get_text()
    own = pages.learner_page("ben", [], prefix="/p/", is_instructor=False)
    assert BeautifulSoup(own, "html.parser").h1.get_text() == "Your attempts"


def test_the_class_page_golden():
    rows = [
        {
            "learner": "ana",
            "attempts": 2,
            "pending": 0,
            "best_score": 3,
            "last_score": 1,
            "max_score": 3,
            "steps": {"1": 1},
            "last_submitted_at": "2026-03-01T09:30:00Z",
            "best_attempt": 4,
        }
    ]
    html = pages.class_page(
        rows,
        {"checks": [], "wrong_answers": []},
        prefix="/p/",
        refresh=10,
        chrome=layout.Chrome(prefix="/p/", hub_prefix="/hub/", user="teacher", instructor=True),
    )
    _golden("class.html", html)
    assert '<time datetime="2026-03-01T09:30:00Z"' in html and 'href="/p/similarity"' in html


# ---------------------------------------------------------------------------- code and similarity


def test_code_is_numbered_and_escaped_and_bidi_shows():
    html = code_pages.code_html(HOSTILE.encode() + b"\n\tx = 1\r\n")
    soup = BeautifulSoup(html, "html.parser")
    assert [li.get_text() for li in soup.find_all("li")] == [HOSTILE.replace("\u202e", "\\u202e"), "\tx = 1"]
    assert soup.find("script") is None and not soup.find_all("img")


@pytest.fixture
def served(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    ids = {}
    for who, source in (
        ("alice", b"def f(a, b):\n    return a + b * 2  # <alice>\n"),
        ("bob", b"def f(a, b):\n    return a + b * 2  # </code><script>x</script>\n"),
    ):
        ids[who] = store.add_attempt(who, source, seed=1)
        store.claim(ids[who])
        store.finish(ids[who], GRADED, {**REPORT, "path": f"{who}.py"})
    hub = FakeHub()
    service = Service(store, hub)
    yield service, ids
    service.stop()
    hub.stop()
    store.close()


def test_a_learner_s_code_is_theirs_and_the_instructors_and_never_raw_html(served):
    service, ids = served
    route = f"learners/bob/attempts/{ids['bob']}/code"
    status, headers, body = service.request("GET", route, "tok-teacher")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    soup = BeautifulSoup(body, "html.parser")
    # bob's first attempt is the service's attempt 2 (alice's came first): his page and this one say 1.
    assert ids["bob"] == 2
    assert soup.h1.get_text() == "bob's attempt 1: code" and soup.find("script", string="x") is None
    assert "# </code><script>x</script>" in soup.find("ol", class_="code").get_text()
    assert service.request("GET", route, "tok-bob")[0] == 200
    assert service.request("GET", route, "tok-alice")[0] == 404  # another learner's
    assert service.request("GET", f"learners/alice/attempts/{ids['bob']}/code", "tok-teacher")[0] == 404
    assert service.request("GET", "learners/bob/attempts/-1/code", "tok-teacher")[0] == 404


def test_the_code_page_is_headed_by_the_learner_s_own_attempt_number_as_their_page_links_it(served):
    # Attempt ids count every learner's attempts; a learner's code page says 1, 2, 3 as their page.
    service, ids = served
    store = service.store
    more = []
    for source in (b"x = 2\n", b"x = 3\n"):
        store.add_attempt("alice", b"y = 0\n", seed=1)  # another learner's attempt between bob's
        more.append(store.add_attempt("bob", source, seed=1))
    status, _h, body = service.request("GET", "learners/bob", "tok-bob")
    links = {
        a.get_text(): a["href"]
        for a in BeautifulSoup(body, "html.parser").find_all("a")
        if a.get_text().startswith("code of attempt")
    }
    assert status == 200 and sorted(links) == ["code of attempt 1", "code of attempt 2", "code of attempt 3"]
    for number, attempt_id in zip((1, 2, 3), (ids["bob"], *more)):
        assert links[f"code of attempt {number}"].endswith(f"/attempts/{attempt_id}/code")
        status, _h, body = service.request("GET", f"learners/bob/attempts/{attempt_id}/code", "tok-bob")
        assert status == 200 and BeautifulSoup(body, "html.parser").h1.get_text() == f"Your attempt {number}: code"
    assert more == [4, 6]  # the ids a heading used to show


def test_the_similarity_page_leads_to_two_codes_side_by_side(served):
    service, _ids = served
    assert service.request("GET", "similarity", "tok-alice")[0] == 403
    assert service.request("GET", "similarity/compare?a=alice&b=bob", "tok-alice")[0] == 403
    status, _h, body = service.request("GET", "similarity", "tok-teacher")
    link = BeautifulSoup(body, "html.parser").find("a", string="alice and bob side by side")
    assert status == 200 and link["href"].endswith("similarity/compare?a=alice&b=bob")
    status, _h, body = service.request("GET", "similarity/compare?a=alice&b=bob", "tok-teacher")
    sides = BeautifulSoup(body, "html.parser").select(".side-by-side section")
    assert status == 200 and len(sides) == 2
    assert "# <alice>" in sides[0].get_text() and "<script>x</script>" in sides[1].get_text()
    assert service.request("GET", "similarity/compare?a=alice&b=nobody", "tok-teacher")[0] == 404


# ---------------------------------------------------------------------------- a learner's history


def _three_attempts() -> list[dict]:
    """ben's three attempts, newest first, with the service's ids (other learners' attempts come between)."""
    full = {
        **ATTEMPT,
        "id": 31,
        "submitted_at": "2026-03-01T11:00:00Z",
        "score": 202,
        "max_score": 202,
        "report": {"checks": []},
    }
    partial = {**ATTEMPT, "id": 17, "submitted_at": "2026-03-01T10:00:00Z", "score": 199, "max_score": 202}
    zero = {**ATTEMPT, "id": 2, "submitted_at": "2026-03-01T09:00:00Z", "score": 0, "max_score": 202}
    return [full, partial, zero]


def test_a_three_attempt_learner_page_numbers_colours_and_folds_by_meaning():
    html = pages.learner_page("ben", _three_attempts(), prefix="/p/", is_instructor=False)
    soup = BeautifulSoup(html, "html.parser")
    heads = [h.get_text(" ", strip=True) for h in soup.find_all("h2")]
    assert [h.split(" ")[1] for h in heads] == ["3", "2", "1"], heads  # the learner's numbers, not 31, 17, 2
    spans = [h.find("span", class_=["ok", "partial", "bad"]) for h in soup.find_all("h2")]
    assert [s["class"][0] for s in spans] == ["ok", "partial", "bad"]  # 199/202 is not red
    assert "(partly)" in spans[1].get_text() and "(full marks)" in spans[0].get_text()
    # Older attempts' feedback is folded; the latest's first failure alone is open.
    sections = soup.find_all("section", class_="attempt")
    assert all(s.find("details", open=True) is None for s in sections[1:])
    _golden("learner_three_attempts.html", html)


def test_the_class_page_shows_human_dates_in_why():
    row = {
        "learner": "ben",
        "attempts": 3,
        "pending": 0,
        "best_score": 202,
        "last_score": 202,
        "max_score": 202,
        "steps": {},
        "last_submitted_at": "2026-03-01T11:00:00Z",
        "credited_score": 202.0,
        "why": "the best attempt of 3; on time (due 2026-03-01T12:00:00Z)",
        "best_attempt": 31,
    }
    html = pages.class_page([row], {"checks": [], "wrong_answers": []}, prefix="/p/", refresh=10)
    why = BeautifulSoup(html, "html.parser").find("td", class_="why")
    assert why.find("time")["datetime"] == "2026-03-01T12:00:00Z" and "2026-03-01 12:00 UTC" in why.get_text()
    _golden("class_why_dates.html", html)


def test_an_instructor_lands_on_the_class_page_and_their_own_page_has_no_forms_aimed_at_themselves(served):
    """Before: the service's home showed an instructor "Your attempts", with extension forms for themselves."""
    service, _ids = served
    status, _headers, body = service.request("GET", "", "tok-teacher")
    soup = BeautifulSoup(body.decode(), "html.parser")
    assert status == 200 and soup.h1.get_text() != "Your attempts"
    assert soup.find("table") is not None and "alice" in soup.main.get_text()  # the class, its learners
    own = BeautifulSoup(service.request("GET", "learners/teacher", "tok-teacher")[2].decode(), "html.parser")
    assert not own.find_all("form"), [f.get("action") for f in own.find_all("form")]
    # A learner still lands on their own attempts; an instructor on a learner's page still gets the forms.
    learner = BeautifulSoup(service.request("GET", "", "tok-alice")[2].decode(), "html.parser")
    assert learner.h1.get_text() == "Your attempts"
    alice = BeautifulSoup(service.request("GET", "learners/alice", "tok-teacher")[2].decode(), "html.parser")
    assert alice.find_all("form")
