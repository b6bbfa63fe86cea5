"""The service's REST API: JSON for notebooks and scripts, and the class's downloads (as JupyterHub's ``apihandlers``).

Every handler here builds on :class:`grader.service.api.base.ApiHandler`: a
hub token in the ``Authorization`` header (or the pages' login cookie), an
unknown caller answered 401 JSON, never a redirect to a login page, errors as
``{"error": ...}``. ``submissions`` takes and shows attempts, ``classes``
the class's data and downloads for instructors, ``actions`` instructor actions
and regrade requests. The HTML pages are :mod:`grader.service.handlers`'.
"""
