"""The instructor's pages of the class: the class itself (reloading), the similar pairs, two codes side by side.

Routes (relative to the prefix)::

    GET  class                  the class: downloads, plots, progress by step, pass rates, wrong answers,
                                the open regrade requests (a count, the oldest few) and the log of actions
    GET  similarity             the similar pairs of learners
    GET  similarity/compare?a=NAME&b=NAME   two learners' counting attempts side by side

A learner gets 403. The class's outputs are computed off the event loop and
kept while the class is unchanged (:class:`grader.service.exports.ClassCache`).
"""

from __future__ import annotations

from tornado import web

from grader.service import action_pages, code_pages, pages
from grader.service.actions_db import INSTRUCTOR_KINDS, ActionLog
from grader.service.exports import lms_files, similarity_of
from grader.service.handlers.base import PageHandler
from grader.service.options import APPEAL_PREVIEW


class ClassPage(PageHandler):
    @web.authenticated
    async def get(self) -> None:
        if not self.instructor:
            raise web.HTTPError(403, "the class page is for instructors")
        rows, _records, outputs = await self.in_thread(self.class_now)
        lms = await self.in_thread(self.derived, "lms", lambda records: lms_files(records, self.conf))
        # The open regrade requests as a count, the oldest few quoted and a link (class/actions has every text and
        # the answer forms), and the log of what instructors did: the page stays small however many requests come.
        log = ActionLog(self.store)
        actions = action_pages.class_summary_view(
            log.open_requests(APPEAL_PREVIEW),
            log.all(kinds=INSTRUCTOR_KINDS),
            log.past_results(),
            prefix=self.conf.prefix,
        )
        self.finish(
            pages.class_page(
                rows,
                outputs,
                prefix=self.conf.prefix,
                refresh=self.conf.class_refresh,
                chrome=self.chrome(),
                unmatched=None if lms is None else lms["list"],
                reference=bool(self.conf.references),
                insecure=self.conf.sandbox_words if self.conf.insecure else "",
                actions=actions,
            )
        )


class SimilarityPage(PageHandler):
    """``similarity``: the similar pairs; ``similarity/compare?a=&b=``: two counting attempts side by side."""

    @web.authenticated
    async def get(self, compare: str | None = None) -> None:
        if not self.instructor:
            raise web.HTTPError(403, "the similarity pages are for instructors")
        if not compare:
            out = await self.in_thread(
                self.derived, "similarity", lambda records: similarity_of(self.store, records, self.conf.references)
            )
            self.finish(code_pages.similarity_page(out["pairs"], prefix=self.conf.prefix, chrome=self.chrome()))
            return
        records = {r.learner: r for r in (await self.in_thread(self.class_now))[1]}
        names = [self.get_argument("a", ""), self.get_argument("b", "")]
        if any(name not in records for name in names):
            raise web.HTTPError(404, "both learners need a counting attempt")
        sources = self.store.sources([records[name].attempt for name in names])
        left, right = (
            (
                name,
                pages.learner_numbers(self.store.summaries_of(name))[records[name].attempt],
                sources.get(records[name].attempt, b""),
            )
            for name in names
        )
        self.finish(code_pages.compare_page(left, right, prefix=self.conf.prefix, chrome=self.chrome()))
