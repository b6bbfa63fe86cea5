"""The service's class page and a 3-attempt learner's page in Chromium, in the hub's look.

The class page, read by an instructor in a 1,300 px wide window, must not
scroll sideways (no overflowing table, no raw ISO dates in its "why"
column); a learner with three attempts reads them as attempts 1, 2, 3 (not
the service's ids), the older two folded, the latest's first failure open,
and the page stays a page (not 23,000 px tall). The service runs behind
the real ``HubOAuth`` client and a stand-in hub (tests/service_stand_ins.py);
the hub's own stylesheet (JupyterHub's ``style.min.css``, from the installed
package) is served where the page links it. Screenshots in ``artifacts/e2e/``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from service_stand_ins import failing_report

from e2e.conftest import missing

pytestmark = pytest.mark.e2e

WIDTH = 1300
LONG = "x" * 12 + " a wrong answer that is a long line of text " * 6
LEARNERS = ("alice", "bob", "a.very.long.learner.name@students.example.edu", "dana", "eve")


def _hub_css() -> Path:
    candidates = [Path(sys.prefix) / "share" / "jupyterhub" / "static" / "css" / "style.min.css"]
    try:
        import jupyterhub

        candidates.append(
            Path(jupyterhub.__file__).parent.parent / "share" / "jupyterhub" / "static" / "css" / "style.min.css"
        )
    except ImportError:
        missing("jupyterhub is not installed: pip install -e '.[e2e]' (make test does it)")
    for path in candidates:
        if path.is_file():
            return path
    missing(f"JupyterHub's style.min.css not found in {candidates}")


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    pytest.importorskip("jupyterhub")
    from service_stand_ins import FakeHub, Service

    from grader.course.policy import parse_policy
    from grader.service.db import GRADED, Store

    store = Store(f"sqlite:///{tmp_path_factory.mktemp('layout') / 'db.sqlite'}")
    ids: dict[str, list[int]] = {}

    def attempt(who: str, score_of_3: int) -> None:
        report = failing_report(LONG)
        if score_of_3 == 3:
            report = {
                **report,
                "score": 3,
                "checks": [{**c, "passed": True, "points": c["max_points"]} for c in report["checks"]],
            }
        attempt_id = store.add_attempt(who, b"def f():\n    return 1\n", seed=7)
        store.claim(attempt_id)
        store.finish(attempt_id, GRADED, {**report, "path": "tools.py"})
        ids.setdefault(who, []).append(attempt_id)

    for who in LEARNERS:  # bob's three attempts come between the others': his ids are not 1, 2, 3
        attempt(who, 1)
        if who == "bob":
            attempt("alice", 1)
    attempt("bob", 1)
    attempt("dana", 1)
    attempt("bob", 3)
    policy = parse_policy(
        '[assignment]\nname = "agtool lab"\ndue = 2099-03-01T12:00:00Z\n'
        'late_due = 2099-03-08T12:00:00Z\nlate_credit = 0.8\ncounts = "best"\n'
        "[attempts]\nlimit = 3\nwindow_minutes = 60\n"
    )
    hub = FakeHub()
    svc = Service(store, hub, course=policy)
    svc.ids = ids
    with pytest.MonkeyPatch.context() as mp:
        # As under JupyterHub: the pages take the hub's look (its stylesheet, navbar and logo).
        mp.setenv("JUPYTERHUB_API_URL", hub.api)
        yield svc
    svc.stop()
    hub.stop()
    store.close()


@pytest.fixture
def reader(browser):
    css = _hub_css().read_bytes()
    contexts = []

    def open_as(token: str):
        context = browser.new_context(
            viewport={"width": WIDTH, "height": 900},
            timezone_id="Europe/Berlin",
            extra_http_headers={"Authorization": f"token {token}"},
        )
        context.set_default_timeout(30_000)
        context.route(
            re.compile(r".*/hub/static/css/style\.min\.css.*"),
            lambda route: route.fulfill(status=200, content_type="text/css", body=css),
        )
        contexts.append(context)
        return context.new_page()

    yield open_as
    for context in contexts:
        context.close()


def _hub_look_applied(page) -> bool:
    # The hub's stylesheet (Bootstrap: hundreds of rules) is loaded and in force on the page.
    return page.evaluate(
        "() => [...document.styleSheets].some(s => (s.href || '').includes('style.min.css') && s.cssRules.length > 100)"
    )


def test_the_class_page_at_1300_px_has_no_horizontal_scroll_and_human_dates(service, reader, artifacts_dir):
    page = reader("tok-teacher")
    page.goto(service.base + "class")
    page.locator("main table").first.wait_for()
    assert _hub_look_applied(page), "the hub's stylesheet did not apply: the test would not measure the hub's look"
    widths = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    page.screenshot(path=str(artifacts_dir / "class-page-1300px.png"), full_page=True)
    assert widths[0] <= widths[1], f"the class page scrolls sideways at {WIDTH} px: {widths}"
    whys = page.locator("td.why").all_inner_texts()
    assert whys and not any(re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d", why) for why in whys), whys
    assert page.get_by_text(LEARNERS[2]).count() >= 1


def test_a_three_attempt_learner_page_numbers_folds_and_stays_short(service, reader, artifacts_dir):
    page = reader("tok-bob")
    page.goto(service.base)
    page.get_by_role("heading", name="Your attempts", exact=True).wait_for()
    headings = page.locator("section.attempt h2").all_inner_texts()
    assert [h.split(" ")[1] for h in headings] == ["3", "2", "1"], headings  # newest first, the learner's numbers
    assert service.ids["bob"] != [1, 2, 3]
    folded = page.locator("section.attempt > details")
    assert folded.count() == 2 and not any(folded.nth(i).evaluate("d => d.open") for i in range(2))
    assert page.get_by_text("Feedback of attempt 1", exact=True).is_visible()
    latest = page.locator("section.attempt").first
    assert re.search(r"3 ?/ ?3", headings[0]), headings[0]  # the latest passed: nothing of it is a failure to open
    height = page.evaluate("() => document.documentElement.scrollHeight")
    page.screenshot(path=str(artifacts_dir / "learner-page-three-attempts.png"), full_page=True)
    assert height < 3000, f"the page is {height} px tall"
    widths = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], widths
    # An older attempt opens when asked: its first failure, with the call and the replay line.
    page.get_by_text("Feedback of attempt 2", exact=True).click()
    second = page.locator("section.attempt").nth(1)
    assert second.locator("details").first.evaluate("d => d.open")
    assert "step2/limit" in second.inner_text() and latest.is_visible()
    code = page.get_by_role("link", name="code of attempt 2", exact=True)
    assert code.get_attribute("href").endswith(f"/attempts/{service.ids['bob'][1]}/code")
    code.click()
    page.get_by_role("heading", name="Your attempt 2: code", exact=True).wait_for()
