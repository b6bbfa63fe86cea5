"""The service's HTML pages for people, each rendered from its template (as JupyterHub's ``handlers``).

Every handler here builds on :class:`grader.service.handlers.base.PageHandler`:
an unknown visitor is sent to the hub's login (OAuth) and back, an error is
a page. A handler gathers what its page shows and hands it to a renderer
(:mod:`grader.service.pages`, :mod:`grader.service.code_pages`,
:mod:`grader.service.action_pages`), whose templates build the HTML; no HTML
is assembled here. ``learners`` has a learner's pages (their attempts, the
code of one, their feedback files), ``classes`` the instructor's (the class,
similar code), ``actions`` the instructor actions page and the forms. The
JSON API is :mod:`grader.service.api`'s.
"""
