"""A stand-in LMS for the LTI tests: ``lti1p3platform`` on 127.0.0.1, a real HTTP server with its own keys.

It serves what a real LMS serves to a tool: OIDC login initiation
(``/start``), the authorization endpoint that signs the launch (``/authorize``,
an auto-submitting form to the tool), its key set (``/jwks``), the token
endpoint (``/token``), AGS line items per course (the container
``/contexts/C/lineitems``: GET with ``resource_id``/``tag``/``resource_link_id``
filters, POST to make one; ``/contexts/C/lineitems/I`` and its ``scores``) and NRPS
(``/contexts/C/memberships``). It holds several courses (``members`` by
context), several line items per course (``lineitems``) and resource links
(``links``: the plain ``lab-link`` of every course has no line item). It
stores the scores it accepts (``posts``: every accepted POST; ``scores``: the
newest per line item and user).

Deep Linking: ``deep_link_url(sub, context)`` is the instructor's "add
content" in a course: the tool gets an ``LtiDeepLinkingRequest`` (at
``deep_link_uri``) with a return URL (``/deep_link_return``) and ``data``. The
return checks the answer as a strict LMS does: signed by the tool's key (its
key set), ``iss`` the client id, ``aud`` this LMS, the deployment, the message
type, numeric ``iat``/``exp``, a ``nonce``, the request's ``data`` echoed, each
content item an ``ltiResourceLink`` with an http(s) ``url``; each item becomes a
link of the course, and its ``lineItem`` a line item (the LMS makes the column).

Stricter than ``lti1p3platform`` 0.1.8 is alone: the token request's
assertion must have the token URL as audience, numeric ``iat``/``exp``, a
``jti`` never seen before, the tool's ``iss``/``sub`` and known scopes; a
score must carry a live token with the score scope and be for a member of the
line item's context. Each refusal is a log line (``refusals``) and stores
nothing.

With ``redirect_uris`` (the tool's registered redirect URIs, as Canvas's
developer key lists them) an authorization request must name one of them,
ask for ``id_token`` by ``form_post`` with scope ``openid`` and
``prompt=none``; ``lti1p3platform`` checks none of that. The tool's key set is
given (``tool_jwks``) or fetched from ``tool_key_set_url``, as an LMS does
with the "Public JWK URL" of the registration. ``sign()`` signs any claims
with the platform's key (``key_pem``: another key under the same ``kid``), for
the hub tests' forged and altered launches. ``host="localhost"`` names the
LMS by another site than a tool on 127.0.0.1 (it still listens on
127.0.0.1), so a browser treats the launch as a cross-site one, as it is
between a real LMS and the hub.

``stop()`` and ``start()`` take the LMS down and up again on the same port.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import time
from html import escape
from urllib.parse import urlencode

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from tornado import httpserver, web

log = logging.getLogger("lti-platform")
SCORE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
LINEITEM = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
CLIENT_ID, DEPLOYMENT = "agtool-tool-1", "deployment-1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _request(handler):
    from lti1p3platform.request import Request

    class TornadoRequest(Request):
        def build_metadata(self, request):
            args = {k: v[-1].decode() for k, v in request.query_arguments.items()}
            form = {k: v[-1].decode() for k, v in request.body_arguments.items()}
            return {
                "method": request.method,
                "form_data": form,
                "get_data": args,
                "headers": request.headers,
                "content_type": request.headers.get("Content-Type"),
                "path": request.path,
                "json": None,
            }

    return TornadoRequest(handler.request)


class Platform:
    """The stand-in LMS: ``members`` is ``{context: {sub: {"name", "email", "roles"}}}``."""

    def __init__(
        self,
        tool_jwks: dict | None = None,
        *,
        tool_key_set_url: str = "",
        tool_login_url: str = "",
        target_link_uri: str = "",
        redirect_uris: tuple[str, ...] = (),
        host: str = "127.0.0.1",
        deep_link_uri: str = "",
    ):
        self.port = free_port()
        self.url = f"http://{host}:{self.port}"  # host "localhost": another site than a tool on 127.0.0.1
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.private_pem = private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()
        self.public_pem = (
            private.public_key()
            .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
            .decode()
        )
        self.tool_jwks, self.tool_key_set_url = tool_jwks, tool_key_set_url
        self.tool_login_url, self.target_link_uri = tool_login_url, target_link_uri
        self.redirect_uris = tuple(redirect_uris)
        self.deep_link_uri = deep_link_uri
        self.lineitems: dict[str, dict[str, dict]] = {}  # context -> item id -> the line item (its "id" a URL)
        self.links: dict[tuple[str, str], dict] = {}  # (context, link id) -> title, url, custom, lineitem (an id)
        self.deep_link_requests: dict[str, dict] = {}  # the data of each request -> {"context", "sub"}
        self.deep_links: list[dict] = []  # every accepted answer's content items
        self.members: dict[str, dict[str, dict]] = {}
        self.posts: list[dict] = []
        self.scores: dict[tuple[str, str, str], dict] = {}
        self.refusals: list[str] = []
        self.launches: list[dict] = []  # every id_token signed: {"id_token", "state", "redirect_uri", "claims"}
        self.seen_jti: set[str] = set()
        self.id_token_ttl = 300
        self.jwks_delay = 0.0  # seconds the key set takes to answer (a slow LMS)
        self.jwks_fetches = 0
        self._loop = self._server = self._thread = None
        self.start()

    # ---------------------------------------------------------------- registration (lti1p3platform)

    def registration(self):
        from lti1p3platform.registration import Registration

        registration = (
            Registration()
            .set_iss(self.url)
            .set_client_id(CLIENT_ID)
            .set_deployment_id(DEPLOYMENT)
            .set_oidc_login_url(self.tool_login_url)
            .set_launch_url(self.target_link_uri)
            .set_platform_public_key(self.public_pem)
            .set_platform_private_key(self.private_pem)
        )
        if self.tool_jwks is not None:
            return registration.set_tool_key_set(self.tool_jwks)
        return registration.set_tool_key_set_url(self.tool_key_set_url)  # fetched at each token request

    @property
    def kid(self) -> str:
        return self.registration().get_kid()

    def sign(self, claims: dict, *, key_pem: str | None = None) -> str:
        """``claims`` as an id_token signed by this LMS (``key_pem``: by another key, under this LMS's ``kid``)."""
        return jwt.encode(claims, key_pem or self.private_pem, algorithm="RS256", headers={"kid": self.kid})

    def start_url(self, sub: str, context: str, link: str = "lab-link") -> str:
        """The assignment link a learner clicks in the LMS: it starts the OIDC login at the tool."""
        return f"{self.url}/start?{urlencode({'sub': sub, 'context': context, 'link': link})}"

    def deep_link_url(self, sub: str, context: str) -> str:
        """The instructor's "add the tool" in a course: an OIDC login whose launch is a Deep Linking request."""
        return f"{self.url}/start?{urlencode({'sub': sub, 'context': context, 'link': '', 'deep_link': '1'})}"

    def add_lineitem(self, context: str, item: dict) -> dict:
        """Make a line item in ``context`` (its id: the resourceId, or the next free one): the LMS's copy."""
        items = self.lineitems.setdefault(context, {})
        base = str(item.get("resourceId") or "item")
        key, n = base, 1
        while key in items:
            n += 1
            key = f"{base}-{n}"
        made = {**item, "id": self.lineitem(context, key)}
        items[key] = made
        return made

    def columns(self, context: str) -> dict[str, dict]:
        """The line items of ``context`` by their resourceId (several under one id: the last; see ``lineitems``)."""
        return {i.get("resourceId"): i for i in self.lineitems.get(context, {}).values()}

    def conf(self):
        from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract

        platform = self

        class Conf(LTI1P3PlatformConfAbstract):
            def init_platform_config(self, **kwargs):
                pass

            def get_registration_by_params(self, **kwargs):
                return platform.registration()

        conf = Conf()
        conf.get_registration()
        return conf

    def lti_config(self, **extra) -> dict:
        """The LTI file's fields for this LMS (what an instructor copies from the registration page)."""
        return {
            "issuer": self.url,
            "client_id": CLIENT_ID,
            "deployment_ids": [DEPLOYMENT],
            "key_set_url": f"{self.url}/jwks",
            "login_url": f"{self.url}/authorize",
            "token_url": f"{self.url}/token",
            "context_ids": ["c1"],
            **extra,
        }

    def lineitem(self, context: str, item: str = "lab") -> str:
        return f"{self.url}/contexts/{context}/lineitems/{item}"

    def enrol(self, context: str, sub: str, name: str, roles=(LEARNER,)) -> None:
        self.members.setdefault(context, {})[sub] = {"name": name, "email": f"{sub}@lms.test", "roles": list(roles)}

    def refuse(self, why: str) -> None:
        log.warning("stand-in LMS refused: %s", why)
        self.refusals.append(why)

    # ---------------------------------------------------------------- launches

    def claims_for(
        self, sub: str, context: str, link: str = "lab-link", nonce: str = "n", deep_link: bool = False
    ) -> dict:
        """The payload of a launch of ``sub`` from ``link`` of ``context`` (what the tool receives, signed)."""
        launch = self._launch_object(
            {"nonce": nonce, "state": "s", "redirect_uri": "x", "client_id": CLIENT_ID}, sub, context, link, deep_link
        )
        if deep_link:
            return jwt.decode(launch.generate_launch_request()["id_token"], options={"verify_signature": False})
        message, _state = launch.get_launch_data()
        return message

    def _launch_object(self, preflight: dict, sub: str, context: str, link: str, deep_link: bool = False):
        from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract

        class Launch(LTIAdvantageMessageLaunchAbstract):
            def get_preflight_response(self):
                return preflight

            def render_launch_form(self, launch_data, **kwargs):
                return launch_data

        launch = Launch(None, self.conf())
        launch._registration = launch._platform_config.get_registration()
        person = self.members[context][sub]
        launch.set_user_data(sub, person["roles"], full_name=person["name"], email_address=person["email"])
        launch.set_launch_context_claim(context, context_title=f"Course {context}", context_label=context)
        # As Canvas and Moodle send them (ltiauthenticator requires both in a Deep Linking request).
        launch.set_extra_claims(
            {
                "https://purl.imsglobal.org/spec/lti/claim/tool_platform": {
                    "guid": "stand-in-lms",
                    "name": "Stand-in LMS",
                    "product_family_code": "stand-in",
                    "version": "1",
                },
                "https://purl.imsglobal.org/spec/lti/claim/launch_presentation": {
                    "document_target": "window",
                    "return_url": f"{self.url}/courses/{context}",
                },
            }
        )
        if deep_link:
            import secrets

            data = secrets.token_hex(8)
            self.deep_link_requests[data] = {"context": context, "sub": sub}
            launch._registration.set_deeplink_launch_url(self.deep_link_uri)
            launch.set_dl(
                f"{self.url}/deep_link_return", title="agtool", accept_types={"ltiResourceLink"}, extra_data=None
            )
            launch._deep_linking_launch_data["https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"][
                "data"
            ] = data
            launch.set_ags(f"{self.url}/contexts/{context}/lineitems", None, True, True, True)
        else:
            spec = self.links.get((context, link), {"title": "agtool lab", "custom": {}, "lineitem": None})
            launch.set_resource_link_claim(link, title=spec["title"])
            if spec.get("custom"):
                launch.set_custom_parameters_claim(dict(spec["custom"]))
            if spec.get("url"):
                launch.set_launch_url(spec["url"])
            item = self.lineitem(context, spec["lineitem"]) if spec.get("lineitem") else None
            launch.set_ags(f"{self.url}/contexts/{context}/lineitems", item, True, True, True)
        launch.set_nrps(f"{self.url}/contexts/{context}/memberships")
        launch.id_token_expiration = self.id_token_ttl
        return launch

    # ---------------------------------------------------------------- server

    def start(self) -> None:
        ready = threading.Event()

        def run():
            self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self._loop)
            self._server = httpserver.HTTPServer(self.app())
            self._server.listen(self.port, "127.0.0.1")
            ready.set()
            self._loop.run_forever()
            self._loop.close()

        self._thread = threading.Thread(target=run, daemon=True, name="lti-platform")
        self._thread.start()
        ready.wait(10)

    def stop(self) -> None:
        """Take the LMS down: the port refuses connections until ``start()``."""
        if self._thread is None or not self._thread.is_alive():
            return

        async def close():
            self._server.stop()
            await self._server.close_all_connections()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def app(self) -> web.Application:
        args = {"platform": self}
        return web.Application(
            [
                (r"/jwks", JwksHandler, args),
                (r"/start", StartHandler, args),
                (r"/authorize", AuthorizeHandler, args),
                (r"/token", TokenHandler, args),
                (r"/contexts/([^/]+)/lineitems/([^/]+)/scores", ScoresHandler, args),
                (r"/contexts/([^/]+)/lineitems/([^/]+)", LineItemHandler, args),
                (r"/contexts/([^/]+)/lineitems", LineItemsHandler, args),
                (r"/deep_link_return", DeepLinkReturnHandler, args),
                (r"/courses/([^/]+)", CoursePage, args),
                (r"/contexts/([^/]+)/memberships", MembershipsHandler, args),
            ]
        )

    def tool_keys(self) -> dict:
        """The tool's key set: given, or fetched from its URL (as an LMS does with the "Public JWK URL")."""
        if self.tool_jwks is not None:
            return self.tool_jwks
        import requests

        return requests.get(self.tool_key_set_url, timeout=10).json()

    def check_token(self, handler, scope: str | tuple[str, ...]) -> bool:
        """A bearer token the platform signed, alive, with ``scope`` (one of them); else 401 with a log line."""
        auth = handler.request.headers.get("Authorization", "")
        try:
            token = jwt.decode(
                auth.removeprefix("Bearer "), self.public_pem, algorithms=["RS256"], options={"require": ["exp", "iat"]}
            )
        except jwt.PyJWTError as exc:
            self.refuse(f"access token refused: {exc}")
            handler.set_status(401)
            handler.finish({"error": f"invalid token: {exc}"})
            return False
        wanted = (scope,) if isinstance(scope, str) else scope
        if not set(wanted) & set(token.get("scopes", "").split()):
            self.refuse(f"access token lacks the scope {scope}")
            handler.set_status(403)
            handler.finish({"error": "scope"})
            return False
        return True


class _Handler(web.RequestHandler):
    def initialize(self, platform: Platform) -> None:
        self.platform = platform


class JwksHandler(_Handler):
    async def get(self) -> None:
        self.platform.jwks_fetches += 1
        if self.platform.jwks_delay:  # slow without holding the stand-in's own loop
            await asyncio.sleep(self.platform.jwks_delay)
        self.finish(self.platform.conf().get_jwks())


class StartHandler(_Handler):
    """``/start?sub=&context=``: the learner clicks the assignment link: OIDC login initiation at the tool."""

    def get(self) -> None:
        p = self.platform
        deep_link = bool(self.get_argument("deep_link", ""))
        context, link = self.get_argument("context"), self.get_argument("link", "lab-link")
        hint = json.dumps({"sub": self.get_argument("sub"), "context": context, "link": link, "deep_link": deep_link})
        target = p.deep_link_uri if deep_link else (p.links.get((context, link)) or {}).get("url") or p.target_link_uri
        params = {
            "iss": p.url,
            "target_link_uri": target,
            "login_hint": self.get_argument("sub"),
            "lti_message_hint": hint,
            "client_id": CLIENT_ID,
            "lti_deployment_id": DEPLOYMENT,
        }
        self.redirect(f"{p.tool_login_url}?{urlencode(params)}")


class AuthorizeHandler(_Handler):
    """The OIDC authorization endpoint: checks the tool's request, signs the launch, posts it back as a form."""

    def get(self) -> None:
        p = self.platform
        preflight = {k: v[-1].decode() for k, v in self.request.query_arguments.items()}
        hint = json.loads(preflight.get("lti_message_hint") or "{}")
        if preflight.get("login_hint") != hint.get("sub") or hint.get("sub") not in p.members.get(
            hint.get("context"), {}
        ):
            p.refuse("authorization request for an unknown user")
            raise web.HTTPError(400, "unknown user")
        why = self.strict_problem(preflight)
        if why:
            p.refuse(f"authorization request: {why}")
            raise web.HTTPError(400, why)
        launch = p._launch_object(preflight, hint["sub"], hint["context"], hint["link"], bool(hint.get("deep_link")))
        try:
            launch.validate_preflight_response(preflight)
        except Exception as exc:
            p.refuse(f"authorization request refused: {exc!r}")
            raise web.HTTPError(400, "bad authorization request") from None
        data = launch.generate_launch_request()
        record = {
            **data,
            "redirect_uri": preflight["redirect_uri"],
            "claims": jwt.decode(data["id_token"], options={"verify_signature": False}),
        }
        p.launches.append(record)
        fields = "".join(
            f'<input type="hidden" name="{escape(k)}" value="{escape(v)}">'
            for k, v in (("id_token", data["id_token"]), ("state", data["state"]))
        )
        self.finish(
            f'<!doctype html><title>LMS</title><form id=f method=post action="{escape(record["redirect_uri"])}">'
            f'{fields}<button type=submit>Continue</button></form><script>document.getElementById("f").submit()'
            "</script>"
        )

    def strict_problem(self, preflight: dict) -> str | None:
        """What a strict LMS refuses in the tool's authentication request (OIDC, LTI security framework 5.1.1.2)."""
        p = self.platform
        if p.redirect_uris and preflight.get("redirect_uri") not in p.redirect_uris:
            return f"redirect_uri {preflight.get('redirect_uri')!r} is not registered"
        expected = {"response_type": "id_token", "response_mode": "form_post", "scope": "openid", "prompt": "none"}
        wrong = [f"{k}={preflight.get(k)!r}" for k, v in expected.items() if preflight.get(k) != v]
        return f"expected {expected}, got {', '.join(wrong)}" if wrong else None


class TokenHandler(_Handler):
    """Client credentials with the tool's signed assertion, checked strictly before lti1p3platform's own checks."""

    def post(self) -> None:
        p = self.platform
        data = {k: v[-1].decode() for k, v in self.request.body_arguments.items()}
        why = self.strict_problem(data)
        if why:
            p.refuse(f"token request: {why}")
            self.set_status(400)
            self.finish({"error": "invalid_request", "error_description": why})
            return
        try:
            answer = p.conf().get_access_token(data)
        except Exception as exc:
            p.refuse(f"token request: {exc!r}")
            self.set_status(400)
            self.finish({"error": "invalid_client"})
            return
        self.finish(answer)

    def strict_problem(self, data: dict) -> str | None:
        p = self.platform
        if data.get("grant_type") != "client_credentials":
            return "grant_type is not client_credentials"
        try:
            claims = jwt.decode(data.get("client_assertion", ""), options={"verify_signature": False})
        except jwt.PyJWTError as exc:
            return f"the assertion is not a JWT: {exc}"
        if claims.get("aud") not in (f"{p.url}/token", [f"{p.url}/token"]):
            return f"the assertion's audience is {claims.get('aud')!r}, not this token URL"
        if not all(isinstance(claims.get(k), int) for k in ("iat", "exp")):
            return "iat and exp must be numbers"
        if claims["exp"] < time.time() or claims["iat"] > time.time() + 60:
            return "the assertion is expired or from the future"
        if claims.get("iss") != CLIENT_ID or claims.get("sub") != CLIENT_ID:
            return "the assertion's iss/sub is not the client id"
        if not claims.get("jti") or claims["jti"] in p.seen_jti:
            return f"jti {claims.get('jti')!r} missing or used before"
        scopes = data.get("scope", "").split()
        if not scopes or any(s not in (SCORE, LINEITEM, NRPS) and "lti-ags" not in s for s in scopes):
            return f"unknown scope in {scopes}"
        p.seen_jti.add(claims["jti"])
        return None


class ScoresHandler(_Handler):
    def post(self, context: str, item: str) -> None:
        p = self.platform
        if not p.check_token(self, SCORE):
            return
        if self.request.headers.get("Content-Type", "").split(";")[0] != "application/vnd.ims.lis.v1.score+json":
            p.refuse("score with the wrong content type")
            raise web.HTTPError(415)
        if item not in p.lineitems.get(context, {}):
            p.refuse(f"score for line item {item!r}, which context {context!r} does not have")
            self.set_status(404)
            self.finish({"error": "no such line item"})
            return
        score = json.loads(self.request.body)
        user = score.get("userId")
        if user not in p.members.get(context, {}):
            p.refuse(f"score for {user!r}, who is not a member of context {context!r}")
            self.set_status(422)
            self.finish({"error": f"user {user} is not in this context"})
            return
        if not isinstance(score.get("scoreGiven"), (int, float)) or score["scoreGiven"] > score.get("scoreMaximum", 0):
            p.refuse(f"score {score.get('scoreGiven')!r} out of range")
            self.set_status(400)
            self.finish({"error": "scoreGiven"})
            return
        p.posts.append({"context": context, "item": item, **score})
        p.scores[(context, item, user)] = score
        self.set_status(200)
        self.finish({})


class MembershipsHandler(_Handler):
    def get(self, context: str) -> None:
        p = self.platform
        if not p.check_token(self, NRPS):
            return
        members = [
            {"user_id": sub, "name": m["name"], "email": m["email"], "roles": m["roles"], "status": "Active"}
            for sub, m in p.members.get(context, {}).items()
        ]
        self.set_header("Content-Type", "application/vnd.ims.lti-nrps.v2.membershipcontainer+json")
        self.finish(json.dumps({"id": self.request.full_url(), "context": {"id": context}, "members": members}))


class LineItemsHandler(_Handler):
    """The course's line item container: GET (filters ``resource_id``, ``tag``, ``resource_link_id``), POST."""

    def get(self, context: str) -> None:
        p = self.platform
        if not p.check_token(self, (LINEITEM, LINEITEM + ".readonly")):
            return
        if context not in p.members:
            raise web.HTTPError(404)
        items = list(p.lineitems.get(context, {}).values())
        for arg, key in (("resource_id", "resourceId"), ("tag", "tag"), ("resource_link_id", "resourceLinkId")):
            wanted = self.get_argument(arg, None)
            if wanted is not None:
                items = [i for i in items if i.get(key) == wanted]
        self.set_header("Content-Type", "application/vnd.ims.lis.v2.lineitemcontainer+json")
        self.finish(json.dumps(items))

    def post(self, context: str) -> None:
        p = self.platform
        if not p.check_token(self, LINEITEM):
            return
        if self.request.headers.get("Content-Type", "").split(";")[0] != "application/vnd.ims.lis.v2.lineitem+json":
            p.refuse("line item with the wrong content type")
            raise web.HTTPError(415)
        item = json.loads(self.request.body)
        maximum = item.get("scoreMaximum")
        if context not in p.members or not isinstance(maximum, (int, float)) or maximum <= 0 or not item.get("label"):
            p.refuse(f"line item refused: {item!r}")
            self.set_status(400)
            self.finish({"error": "label and a positive scoreMaximum are required"})
            return
        made = p.add_lineitem(
            context, {k: item[k] for k in ("label", "scoreMaximum", "resourceId", "tag") if k in item}
        )
        self.set_status(201)
        self.set_header("Content-Type", "application/vnd.ims.lis.v2.lineitem+json")
        self.finish(json.dumps(made))


class LineItemHandler(_Handler):
    def get(self, context: str, item: str) -> None:
        p = self.platform
        if not p.check_token(self, (LINEITEM, LINEITEM + ".readonly")):
            return
        found = p.lineitems.get(context, {}).get(item)
        if found is None:
            raise web.HTTPError(404)
        self.set_header("Content-Type", "application/vnd.ims.lis.v2.lineitem+json")
        self.finish(json.dumps(found))


class DeepLinkReturnHandler(_Handler):
    """The tool's Deep Linking answer (a form POST of ``JWT``), checked strictly; its links and columns made."""

    def post(self) -> None:
        p = self.platform
        why, claims = self.problem(self.get_body_argument("JWT", ""))
        if why:
            p.refuse(f"deep linking answer: {why}")
            raise web.HTTPError(400, why)
        request = p.deep_link_requests.pop(claims[DL + "data"])
        context, made = request["context"], []
        for item in claims[DL + "content_items"]:
            link = f"link-{len(p.links) + 1}"
            lineitem = None
            if item.get("lineItem"):
                lineitem = p.add_lineitem(context, {**item["lineItem"], "resourceLinkId": link})["id"].rsplit("/", 1)[
                    -1
                ]
            p.links[(context, link)] = {
                "title": item.get("title") or "",
                "url": item["url"],
                "custom": dict(item.get("custom") or {}),
                "lineitem": lineitem,
            }
            made.append({"context": context, "link": link, "lineitem": lineitem, **item})
        p.deep_links.extend(made)
        self.finish(f"<!doctype html><title>LMS</title><p>{len(made)} item(s) added to course {escape(context)}")

    def problem(self, token: str) -> tuple[str | None, dict]:
        p = self.platform
        try:
            header = jwt.get_unverified_header(token)
            keys = {k.get("kid"): k for k in p.tool_keys().get("keys", [])}
            if header.get("kid") not in keys:
                return f"kid {header.get('kid')!r} is not in the tool's key set", {}
            key = jwt.PyJWK.from_dict(keys[header["kid"]]).key
            claims = jwt.decode(
                token,
                key,
                algorithms=["RS256"],
                audience=p.url,
                issuer=CLIENT_ID,
                options={"require": ["iat", "exp", "nonce", "aud", "iss"]},
            )
        except jwt.PyJWTError as exc:
            return f"the JWT is refused: {exc}", {}
        claim = "https://purl.imsglobal.org/spec/lti/claim/"
        if claims.get(claim + "message_type") != "LtiDeepLinkingResponse" or claims.get(claim + "version") != "1.3.0":
            return "not an LtiDeepLinkingResponse of LTI 1.3.0", {}
        if claims.get(claim + "deployment_id") != DEPLOYMENT:
            return f"deployment {claims.get(claim + 'deployment_id')!r}", {}
        if not all(isinstance(claims.get(k), int) for k in ("iat", "exp")):
            return "iat and exp must be numbers", {}
        if claims.get(DL + "data") not in p.deep_link_requests:
            return "the request's data is not echoed (or was used already)", {}
        items = claims.get(DL + "content_items")
        if not isinstance(items, list) or not items:
            return "no content items", {}
        for item in items:
            if item.get("type") != "ltiResourceLink" or not str(item.get("url", "")).startswith(
                ("http://", "https://")
            ):
                return f"content item {item!r} is not an ltiResourceLink with a URL", {}
            li = item.get("lineItem")
            if li is not None and (not isinstance(li.get("scoreMaximum"), (int, float)) or li["scoreMaximum"] <= 0):
                return f"line item {li!r} has no positive scoreMaximum", {}
        return None, claims


DL = "https://purl.imsglobal.org/spec/lti-dl/claim/"


class CoursePage(_Handler):
    """``/courses/C``: the course as its LMS shows it (for ``make lti-demo``): each member's links to the tool,
    the instructors' "add the tool" (Deep Linking), and the gradebook (each column and its scores)."""

    def get(self, context: str) -> None:
        p = self.platform
        members = p.members.get(context, {})
        links = {link: spec for (c, link), spec in p.links.items() if c == context}
        rows = []
        for sub, person in members.items():
            teacher = any(r.endswith("#Instructor") for r in person["roles"])
            launches = [
                f'<a href="{escape(p.start_url(sub, context, link))}">{escape(spec["title"])}</a>'
                for link, spec in links.items()
            ]
            if teacher:
                launches.append(f'<a href="{escape(p.deep_link_url(sub, context))}">Add the tool (Deep Linking)</a>')
            role = "Instructor" if teacher else "Learner"
            rows.append(
                f"<tr><td>{escape(person['name'])} ({escape(sub)}, {role})</td><td>{' · '.join(launches)}</td></tr>"
            )
        items = p.lineitems.get(context, {})
        head = "".join(f"<th>{escape(str(i.get('label')))} (/{i.get('scoreMaximum')})</th>" for i in items.values())
        book = []
        for sub, person in members.items():
            cells = "".join(
                f"<td>{escape(str(p.scores[(context, key, sub)]['scoreGiven'])) if (context, key, sub) in p.scores else '-'}</td>"
                for key in items
            )
            book.append(f"<tr><td>{escape(person['name'])}</td>{cells}</tr>")
        self.finish(
            f"<!doctype html><title>Course {escape(context)}</title><h1>Course {escape(context)} (stand-in LMS)</h1>"
            f"<table><tr><th>Member</th><th>Links</th></tr>{''.join(rows)}</table>"
            f"<h2>Gradebook</h2><table><tr><th>Member</th>{head}</tr>{''.join(book)}</table>"
            "<p>Reload after a Deep Linking answer or a submission.</p>"
        )
