"""The hub side of LTI 1.3: ``LTI13Authenticator`` configured from the LTI file, with three checks of its own.

``jupyterhub-ltiauthenticator`` verifies the launch (the platform's signature
through its key set, issuer, audience, ``azp``, expiry, state and nonce
against its one-time cookies) and keeps the decoded launch as the user's
``auth_state``, where the grading service reads it (the service's role has
``admin:auth_state``). This subclass adds:

* the LMS's key set cached and fetched in a worker thread, again on an
  unknown ``kid`` at a bounded rate (:mod:`grader.service.lti.keyset`):
  ``ltiauthenticator`` fetches it on the event loop for every callback POST;
* a replay guard: a launch whose nonce was already used is refused, even
  with the cookies of the first one;
* the login's state and nonce cookies are ``SameSite=None; Secure`` over
  https, so that the LMS's cross-site form POST carries them back;
* the deployment check: a launch from a deployment the LTI file does not
  list is refused;
* the course check: a launch from a course (the ``context`` claim) the LTI
  file's ``context_ids`` do not list is refused, its line naming the
  course's id and title so that an administrator can add it;
* the user name: the ``username_key`` claim, never a fallback to another
  claim (a launch without it is refused);
* LMS roles to the hub: instructors, administrators and teaching assistants
  of the launch's own course (membership roles) join the instructors' group
  (``manage_groups``); institution and system roles never do.

Each refusal is one log line starting ``LTI launch refused:``.
:func:`configure_lti` is what ``deploy/jupyterhub/jupyterhub_config.py`` calls
(and tests/e2e/test_lti_launch.py, on a real hub): :func:`configure_hub`, the
key that encrypts ``auth_state``, and the grading service started with
``--lti`` and allowed to read the launches.

Example::

    >>> is_instructor(["http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"], INSTRUCTOR_ROLES)
    True
    >>> is_instructor(["http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"], INSTRUCTOR_ROLES)
    False
    >>> is_instructor(["http://purl.imsglobal.org/vocab/lis/v2/institution/person#Instructor"], INSTRUCTOR_ROLES)
    False
"""

from __future__ import annotations

import functools
import threading
import time

from grader.limits import NONCE_KEEP
from grader.service.lti.config import INSTRUCTOR_ROLES, MEMBERSHIP, load_config
from grader.service.lti.keyset import REFETCH_SECONDS, KeySet

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"


def is_instructor(roles, instructor_roles) -> bool:
    """Whether any of ``roles`` (LTI role URIs) is one of ``instructor_roles``, counting membership roles only.

    The roles of a launch are its course's: a membership role says what the
    user is in this course; an institution or system role (what they are
    elsewhere) never makes an instructor here, whatever the configuration says.
    """
    own = {r for r in roles or () if isinstance(r, str) and r.startswith(MEMBERSHIP)}
    return bool(own & set(instructor_roles))


class UsedNonces:
    """Nonces of accepted launches, each kept ``keep`` seconds: a second use is a replay.

    >>> used = UsedNonces(keep=60, clock=lambda: 0.0)
    >>> used.first_use("n1"), used.first_use("n1"), used.first_use("n2")
    (True, False, True)
    """

    def __init__(self, keep: float = NONCE_KEEP, clock=time.monotonic):
        self.keep, self.clock = keep, clock
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()

    def first_use(self, nonce: str) -> bool:
        now = self.clock()
        with self._lock:
            for old in [n for n, until in self._seen.items() if until < now]:
                del self._seen[old]
            if nonce in self._seen:
                return False
            self._seen[nonce] = now + self.keep
            return True


@functools.cache
def _classes():
    """The authenticator classes (built on first use: ``ltiauthenticator`` is imported in the hub only)."""
    from ltiauthenticator.lti13.auth import LTI13Authenticator
    from ltiauthenticator.lti13.error import LoginError, ValidationError
    from ltiauthenticator.lti13.handlers import LTI13CallbackHandler, LTI13LoginInitHandler
    from tornado.web import HTTPError
    from traitlets import Float, List, Unicode

    used = UsedNonces()

    class LoginHandler(LTI13LoginInitHandler):
        def _set_oauth_cookie(self, key, value):
            # The LMS posts the launch back from its own site. A cookie without SameSite is Lax to a browser and
            # is not sent with a cross-site POST (Chromium sends a fresh one for two minutes, as a stopgap):
            # the callback would refuse "OAuth state missing from cookies". Over https: SameSite=None; Secure.
            https = self.authenticator.get_uri_scheme(self.request) == "https"
            self._set_cookie(
                key,
                value,
                expires_days=1,
                httponly=True,
                encrypted=True,
                **({"samesite": "None", "secure": True} if https else {}),
            )

    class CallbackHandler(LTI13CallbackHandler):
        _launch_key = None

        async def post(self):
            # The key is looked up before the (synchronous) checks: from the cache, or fetched in a worker thread
            # while the event loop serves everyone else.
            try:
                self._launch_key = await self.authenticator.key_set().key_for(self.get_argument("id_token", ""))
            except Exception:  # not a JWT: decode_and_validate refuses it with its own line
                self._launch_key = None
            await super().post()

        def _verified_launch(self):
            """ltiauthenticator's checks in its order, the signature checked with the cached key."""
            import jwt
            from ltiauthenticator.lti13.error import InvalidAudienceError, TokenError
            from ltiauthenticator.lti13.validator import LTI13LaunchValidator
            from ltiauthenticator.utils import convert_request_to_dict

            validator = LTI13LaunchValidator(parent=self.app)
            args = convert_request_to_dict(self.request.arguments)
            validator.validate_auth_response(args)
            self.check_state()
            if self._launch_key is None:
                raise TokenError("no key of the LMS's key set matches the launch's kid")
            try:
                id_token = jwt.decode(
                    args.get("id_token"),
                    self._launch_key.key,
                    algorithms=self.authenticator.jwks_algorithms,
                    audience=self.authenticator.client_id,
                    issuer=self.authenticator.issuer,
                    leeway=validator.time_leeway,
                )
            except jwt.InvalidAudienceError as exc:
                raise InvalidAudienceError(str(exc)) from None
            except jwt.PyJWTError as exc:
                raise TokenError(str(exc)) from None
            validator.validate_id_token(id_token)
            validator.validate_azp_claim(id_token, self.authenticator.client_id)
            self.check_nonce(id_token)
            return id_token

        def decode_and_validate_launch_request(self):
            try:
                id_token = self._verified_launch()
            except (ValidationError, HTTPError) as exc:
                self.log.warning(
                    "LTI launch refused: %s (from %s)", getattr(exc, "log_message", None) or exc, self.request.remote_ip
                )
                raise
            if not used.first_use(str(id_token.get("nonce"))):
                self.log.warning(
                    "LTI launch refused: replayed launch (nonce already used) for sub %r (from %s)",
                    id_token.get("sub"),
                    self.request.remote_ip,
                )
                raise HTTPError(400, "this launch was used already: start again from the LMS")
            return id_token

    class AgtoolLTI13Authenticator(LTI13Authenticator):
        """``LTI13Authenticator`` with the replay guard, the deployment check and LMS roles as the hub's group."""

        login_handler = LoginHandler
        callback_handler = CallbackHandler
        deployment_ids = List(Unicode(), config=True, help="deployments of the tool the LMS may launch")
        context_ids = List(Unicode(), config=True, help="the LMS courses (context ids) this hub serves")
        instructor_roles = List(Unicode(), default_value=list(INSTRUCTOR_ROLES), config=True)
        instructor_group = Unicode("agtool-instructors", config=True)
        key_set_refetch_seconds = Float(
            REFETCH_SECONDS, config=True, help="an unknown kid refetches at most this often"
        )
        _key_set = None

        def key_set(self):
            """The LMS's key set, cached (one per authenticator: the hub has one)."""
            if self._key_set is None or self._key_set.url != self.jwks_endpoint:
                self._key_set = KeySet(self.jwks_endpoint, refetch_seconds=self.key_set_refetch_seconds)
            return self._key_set

        def get_username(self, token):
            # ltiauthenticator falls back to sub when the claim is missing: a sub could equal a classmate's login
            # name. The claim the LTI file names, or no login.
            key = self.username_key or "sub"
            source = (token.get(CLAIM + "custom") or {}) if key.startswith("custom_") else token
            name = source.get(key.removeprefix("custom_")) if isinstance(source, dict) else None
            if not isinstance(name, str) or not name.strip():
                raise LoginError(f"the launch has no {key!r} claim to name the hub user")
            return name

        async def authenticate(self, handler, data=None):
            data = data or {}
            deployment = data.get(CLAIM + "deployment_id")
            if self.deployment_ids and deployment not in self.deployment_ids:
                self.log.warning(
                    "LTI launch refused: deployment %r is not in the LTI file (sub %r, from %s)",
                    deployment,
                    data.get("sub"),
                    getattr(getattr(handler, "request", None), "remote_ip", "?"),
                )
                raise LoginError(f"deployment {deployment!r} is not registered with this hub")
            context = data.get(CLAIM + "context") or {}
            if not isinstance(context, dict) or context.get("id") not in self.context_ids:
                context = context if isinstance(context, dict) else {}
                self.log.warning(
                    "LTI launch refused: course %r (%r) is not in the LTI file's context_ids (sub %r, from %s)",
                    context.get("id"),
                    context.get("title"),
                    data.get("sub"),
                    getattr(getattr(handler, "request", None), "remote_ip", "?"),
                )
                raise LoginError(f"this hub does not serve the LMS course {context.get('id')!r}")
            try:
                result = await super().authenticate(handler, data)
            except LoginError as exc:
                self.log.warning(
                    "LTI launch refused: %s (sub %r, course %r, from %s)",
                    exc,
                    data.get("sub"),
                    context.get("id"),
                    getattr(getattr(handler, "request", None), "remote_ip", "?"),
                )
                raise
            instructor = is_instructor(data.get(CLAIM + "roles"), self.instructor_roles)
            result["groups"] = [self.instructor_group] if instructor else []
            self.log.info(
                "LTI launch of %s (sub %r, context %r)%s",
                result["name"],
                data.get("sub"),
                (data.get(CLAIM + "context") or {}).get("id"),
                " as an instructor" if instructor else "",
            )
            return result

    return AgtoolLTI13Authenticator


def authenticator_class():
    """``AgtoolLTI13Authenticator`` (the hub's ``authenticator_class``)."""
    return _classes()


def configure_hub(c, path, *, instructor_group: str = "agtool-instructors") -> None:
    """Set the hub's config ``c`` from the LTI file at ``path`` (checked first: a bad file stops the hub, saying why).

    The launch claims go to ``auth_state`` (encrypted: the hub needs
    ``$JUPYTERHUB_CRYPT_KEY``), which the grading service reads.
    """
    cfg = load_config(path)
    c.JupyterHub.authenticator_class = authenticator_class()
    c.LTI13Authenticator.issuer = cfg.issuer
    c.LTI13Authenticator.client_id = [cfg.client_id]
    c.LTI13Authenticator.authorize_url = cfg.login_url
    c.LTI13Authenticator.jwks_endpoint = cfg.key_set_url
    c.LTI13Authenticator.username_key = cfg.username_key
    c.AgtoolLTI13Authenticator.deployment_ids = list(cfg.deployment_ids)
    c.AgtoolLTI13Authenticator.instructor_roles = list(cfg.instructor_roles)
    c.AgtoolLTI13Authenticator.context_ids = list(cfg.context_ids)
    c.AgtoolLTI13Authenticator.instructor_group = instructor_group
    c.Authenticator.enable_auth_state = True
    c.Authenticator.manage_groups = True
    c.Authenticator.allow_all = True  # the LMS decides who launches: every verified launch of the deployment


def configure_lti(
    c,
    path,
    *,
    service: str = "agtool-grader",
    instructor_group: str = "agtool-instructors",
    crypt_key_file: str | None = "/srv/jupyterhub/jupyterhub_crypt_key",
) -> None:
    """The hub recipe's LTI block: :func:`configure_hub`, the ``auth_state`` key, and ``service`` given the launches.

    * The LMS's roles decide who is in ``instructor_group`` (``manage_groups``):
      JupyterHub then refuses to start with ``load_groups`` ("Group management
      has been offloaded to the authenticator"), so the recipe's predefined
      group is dropped; the group is made at the first instructor's launch.
    * ``auth_state`` is encrypted with ``$JUPYTERHUB_CRYPT_KEY`` or, without
      it, the key in ``crypt_key_file`` (made once, mode 0600).
    * The service named ``service`` (already in ``c.JupyterHub.services``) is
      started with ``--lti path``, and its role (in ``c.JupyterHub.load_roles``)
      gets ``admin:auth_state``, to read each learner's launch.
    """
    import os
    import secrets
    from pathlib import Path

    configure_hub(c, path, instructor_group=instructor_group)
    c.JupyterHub.load_groups = {}
    if not os.environ.get("JUPYTERHUB_CRYPT_KEY"):
        if not crypt_key_file:
            raise ValueError("LTI keeps each launch in auth_state: set $JUPYTERHUB_CRYPT_KEY or give crypt_key_file")
        key = Path(crypt_key_file)
        if not key.exists():
            try:
                fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                pass
            else:
                with os.fdopen(fd, "w") as f:
                    f.write(secrets.token_hex(32))
        c.CryptKeeper.keys = [key.read_text().strip()]
    services = [s for s in c.JupyterHub.services if s.get("name") == service]
    roles = [r for r in c.JupyterHub.load_roles if service in (r.get("services") or ())]
    if not services or not roles:
        raise ValueError(f"LTI: the hub config has no service {service!r} with a role of its own to give the launches")
    for spec in services:
        spec["command"] = [*spec["command"], "--lti", str(path)]
    for role in roles:
        role["scopes"] = [*role["scopes"], "admin:auth_state"]
