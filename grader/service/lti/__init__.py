"""LTI 1.3 for the grading service: launches from the course's LMS, grades back to its gradebook, its roster.

One module per job, none of them a web handler (``grader.service.api.lti`` and
``grader.service.handlers.lti`` serve them):

* ``config``: the one file an instructor fills in from the LMS's registration
  page, checked at start with an error per missing or wrong field;
* ``keys``: the tool's own RSA key pair, made once (mode 0600) and its public
  key set;
* ``store``: the launch claims of each learner (``sub``, deployment, context,
  AGS line item, roles) and the outbox of scores to send (Alembic revision 0005);
* ``ags``: the AGS and NRPS client (``pylti1p3``, the maintained fork
  ``pylti1p3next``) that posts one score or reads the roster;
* ``sender``: the background thread that sends what the outbox wants, with
  backoff while the LMS is down, never in a grading path;
* ``roster``: the LMS's roster against the hub's learners (pure);
* ``hub_auth``: the hub side, ``LTI13Authenticator`` with a replay guard, the
  deployment check and LMS roles mapped to the instructors' group.

Imports nothing of the service: the service hands it the grades that count
(:mod:`grader.service.handlers.lti`, :mod:`grader.service.api.lti`), so the grade is computed in one place.
"""
