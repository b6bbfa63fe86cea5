"""axe-core (WCAG 2.1 AA) on every page of the grading service, in Chromium: no serious or critical violation.

The service runs behind the real ``HubOAuth`` client and a stand-in hub
(tests/service_stand_ins.py); the browser sends a hub token, as a learner's
server does. The class has two learners with graded attempts (a failed
check with its call and replay line, learner text that is hostile HTML),
so every page shows what it shows in class: the learner page (read by the
learner and by an instructor), the class page, a code view, the similarity
page and two codes side by side. Screenshots and axe's findings go to
``artifacts/e2e/`` (``a11y-*.png``, ``axe-*.json``).
"""

from __future__ import annotations

import pytest
from service_stand_ins import failing_report

from e2e.axe import check_page
from e2e.conftest import VIEWPORT

pytestmark = pytest.mark.e2e

HOSTILE = "</code><script>alert(1)</script><img src=x onerror=alert(2)>"
REPORT = failing_report(HOSTILE)
CODE = (
    b"def validate_args(tool, args):\n    # shared by both\n    if args.get('limit', 1) <= 0:\n"
    b"        return 'type:limit'\n    return None  # " + HOSTILE.encode() + b"\n"
)


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    pytest.importorskip("jupyterhub")
    from service_stand_ins import FakeHub, Service

    from grader.course.policy import parse_policy
    from grader.service.db import GRADED, Store

    store = Store(f"sqlite:///{tmp_path_factory.mktemp('a11y') / 'db.sqlite'}")
    ids = {}
    for who in ("alice", "bob"):
        ids[who] = store.add_attempt(who, CODE, seed=7)
        store.claim(ids[who])
        store.finish(ids[who], GRADED, {**REPORT, "path": f"{who}.py"})
    policy = parse_policy(
        '[assignment]\nname = "agtool lab"\ndue = 2099-03-01T12:00:00Z\ncounts = "best"\n'
        "[attempts]\nlimit = 3\nwindow_minutes = 60\n"
    )
    hub = FakeHub()
    svc = Service(store, hub, course=policy)
    svc.ids = ids
    yield svc
    svc.stop()
    hub.stop()
    store.close()


def _open(browser, token: str):
    # The pages' own policy stays on (e2e.axe evaluates axe where a script tag is refused).
    # A zone far from UTC: the page's times must be shown in the reader's.
    context = browser.new_context(
        viewport=VIEWPORT, timezone_id="Pacific/Auckland", extra_http_headers={"Authorization": f"token {token}"}
    )
    context.set_default_timeout(30_000)
    return context


@pytest.mark.parametrize(
    "name, token, path",
    [
        ("learner-page", "tok-alice", ""),
        ("learner-page-instructor", "tok-teacher", "learners/alice"),
        ("class-page", "tok-teacher", "class"),
        ("code-view", "tok-teacher", "learners/bob/attempts/{bob}/code"),
        ("similarity-page", "tok-teacher", "similarity"),
        ("side-by-side", "tok-teacher", "similarity/compare?a=alice&b=bob"),
        ("not-found-page", "tok-alice", "learners/bob"),
        ("instructor-actions-page", "tok-teacher", "class/actions"),  # brief A's page: extensions, overrides, regrades
    ],
)
def test_a_service_page_has_no_serious_or_critical_axe_violation(browser, service, artifacts_dir, name, token, path):
    context = _open(browser, token)
    try:
        page = context.new_page()
        page.goto(service.base + path.format(**service.ids))
        assert page.locator("main h1").count() == 1
        check_page(page, artifacts_dir, name)
        if name == "learner-page":  # the time script ran: the UTC text is on hover, the reader's zone in the text
            due = page.locator("time").first
            assert due.get_attribute("title") == "2099-03-01 12:00 UTC", due.get_attribute("title")
            assert due.inner_text() != due.get_attribute("title") and "2099" in due.inner_text(), due.inner_text()
            page.keyboard.press("Tab")  # the first stop is the skip link, and it is visible when focused
            skip = page.get_by_role("link", name="Skip to the main content")
            assert skip.evaluate("e => e === document.activeElement") and skip.is_visible()
    finally:
        context.close()


def test_the_pages_own_script_runs_under_their_policy_local_times_and_a_pausable_reload(
    browser, service, artifacts_dir
):
    # No bypass_csp here: the script must be the one the Content-Security-Policy allows by its hash.
    context = browser.new_context(
        viewport=VIEWPORT, timezone_id="Pacific/Auckland", extra_http_headers={"Authorization": "token tok-teacher"}
    )
    try:
        page = context.new_page()
        errors = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(service.base + "learners/alice")
        due = page.locator("time").first
        assert due.get_attribute("title") == "2099-03-01 12:00 UTC"
        assert "Mar 2, 2099" in due.inner_text() or "2 Mar 2099" in due.inner_text(), due.inner_text()  # NZ: next day
        page.goto(service.base + "class")
        pause = page.get_by_role("button", name="Pause reloading")
        pause.click()
        assert page.get_by_role("button", name="Resume reloading").get_attribute("aria-pressed") == "true"
        page.screenshot(path=str(artifacts_dir / "a11y-class-page-paused.png"), full_page=True)
        assert not [e for e in errors if "Content Security Policy" in e], errors
    finally:
        context.close()
