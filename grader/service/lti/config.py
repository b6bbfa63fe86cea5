"""The LTI configuration: one TOML file the instructor fills in from the LMS's registration page, checked at start.

Every field is checked before the hub or the service starts; each missing or
wrong field gets its own line naming the field, what is wrong and where the
LMS shows the value (Canvas: the developer key; Moodle: the tool's "View
configuration details").

Example::

    >>> cfg = parse_config({"issuer": "https://canvas.instructure.com", "client_id": "10000000000001",
    ...     "deployment_ids": ["1:abc"], "key_set_url": "https://sso.canvaslms.com/api/lti/security/jwks",
    ...     "login_url": "https://sso.canvaslms.com/api/lti/authorize_redirect",
    ...     "token_url": "https://sso.canvaslms.com/login/oauth2/token", "context_ids": ["4af3e2"]})
    >>> cfg.client_id, cfg.token_audience, cfg.context_ids
    ('10000000000001', 'https://sso.canvaslms.com/login/oauth2/token', ('4af3e2',))
    >>> parse_config({"issuer": "canvas"})
    Traceback (most recent call last):
    ...
    grader.service.lti.config.LtiConfigError: the LTI file has 7 problems:
      client_id: missing (Canvas: the developer key's Client ID; Moodle: "Client ID")
      context_ids: missing (the LMS courses this hub serves: a refused launch's log line names its course id and title)
      deployment_ids: missing (Canvas: the Deployment ID of the app in the course or account; Moodle: "Deployment ID")
      issuer: 'canvas' is not an https URL (Canvas: https://canvas.instructure.com; Moodle: "Platform ID", the site's URL)
      key_set_url: missing (Canvas: https://sso.canvaslms.com/api/lti/security/jwks; Moodle: "Public keyset URL")
      login_url: missing (Canvas: https://sso.canvaslms.com/api/lti/authorize_redirect; Moodle: "Authentication request URL")
      token_url: missing (Canvas: https://sso.canvaslms.com/login/oauth2/token; Moodle: "Access token URL")
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

# Where each value is on the LMS's page: the error for a field says it.
WHERE = {
    "issuer": 'Canvas: https://canvas.instructure.com; Moodle: "Platform ID", the site\'s URL',
    "client_id": 'Canvas: the developer key\'s Client ID; Moodle: "Client ID"',
    "deployment_ids": 'Canvas: the Deployment ID of the app in the course or account; Moodle: "Deployment ID"',
    "key_set_url": 'Canvas: https://sso.canvaslms.com/api/lti/security/jwks; Moodle: "Public keyset URL"',
    "login_url": 'Canvas: https://sso.canvaslms.com/api/lti/authorize_redirect; Moodle: "Authentication request URL"',
    "token_url": 'Canvas: https://sso.canvaslms.com/login/oauth2/token; Moodle: "Access token URL"',
    "token_audience": "leave it out unless the LMS names one (Canvas and Moodle: the token URL)",
    "tool_key_file": "a path on this machine; made at the first start, mode 0600",
    "username_key": "the launch claim that names the hub user: sub (default), email, or custom_NAME",
    "instructor_roles": "membership role URIs of the launch's own course whose holders join the instructors' group",
    "context_ids": "the LMS courses this hub serves: a refused launch's log line names its course id and title",
}
URL_FIELDS = ("issuer", "key_set_url", "login_url", "token_url", "token_audience")
MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership"
# A membership role of the launch's course, with or without a sub-role (MEMBERSHIP, its dots taken literally).
_MEMBERSHIP_ROLE = re.compile(r"http://purl\.imsglobal\.org/vocab/lis/v2/membership(/[A-Za-z]+)?#[A-Za-z]+")
# Roles in the launch's own course (its context). Institution roles (".../institution/person#...") and system
# roles (".../system/person#...") say nothing about this course: an Administrator of the institution, or an
# Instructor of another course of the same deployment, is not an instructor of this class.
INSTRUCTOR_ROLES = (
    MEMBERSHIP + "#Instructor",
    MEMBERSHIP + "#Administrator",
    MEMBERSHIP + "/Instructor#TeachingAssistant",
)
# Claims a learner edits in the LMS (their display name): a learner who renames themself to a classmate's
# name would become that classmate on the hub, with their code, attempts and grade.
DISPLAY_NAME_CLAIMS = ("name", "given_name", "family_name", "middle_name", "nickname", "preferred_username")
USERNAME_KEYS = ("sub", "email")
_TEXT = {"type": "string", "minLength": 1, "maxLength": 2048}
SCHEMA = {
    "type": "object",
    "required": ["issuer", "client_id", "deployment_ids", "context_ids", "key_set_url", "login_url", "token_url"],
    "additionalProperties": False,
    "properties": {
        "issuer": _TEXT,
        "client_id": _TEXT,
        "key_set_url": _TEXT,
        "login_url": _TEXT,
        "token_url": _TEXT,
        "token_audience": _TEXT,
        "tool_key_file": _TEXT,
        "deployment_ids": {"type": "array", "minItems": 1, "items": _TEXT},
        "username_key": _TEXT,
        "instructor_roles": {"type": "array", "items": _TEXT},
        "context_ids": {"type": "array", "minItems": 1, "items": _TEXT},
    },
}


class LtiConfigError(ValueError):
    """The file is wrong: the message has one line per field, with where the LMS shows the value."""


@dataclass(frozen=True)
class LtiConfig:
    """The LMS's registration, as the hub and the service use it."""

    issuer: str
    client_id: str
    deployment_ids: tuple[str, ...]
    key_set_url: str
    login_url: str
    token_url: str
    token_audience: str
    tool_key_file: str | None = None
    username_key: str = "sub"
    instructor_roles: tuple[str, ...] = field(default=INSTRUCTOR_ROLES)
    context_ids: tuple[str, ...] = ()


def _url_problem(value: str) -> str | None:
    """Why ``value`` is not a URL an LMS may use: https, or http only on this machine (a test's stand-in LMS).

    >>> _url_problem("https://lms.example.edu/x"), _url_problem("http://127.0.0.1:9/x")
    (None, None)
    >>> _url_problem("http://lms.example.edu/x")
    "'http://lms.example.edu/x' is not an https URL"
    """
    parsed = urlparse(value)
    loopback = parsed.scheme == "http" and parsed.hostname in ("127.0.0.1", "localhost", "::1")
    if (parsed.scheme != "https" and not loopback) or not parsed.hostname or parsed.fragment:
        return f"{value!r} is not an https URL"
    return None


def _username_key_problem(value: str) -> str | None:
    """Why ``value`` cannot name hub users: only claims the learner cannot change in the LMS name them.

    >>> _username_key_problem("sub"), _username_key_problem("custom_login")
    (None, None)
    >>> print(_username_key_problem("given_name"))
    'given_name' is a display name the learner can change in the LMS: one who renames themself to a classmate's name would become that classmate on the hub; use sub, or a custom parameter the LMS fills from the login (custom_login)
    """
    if value in USERNAME_KEYS or re.fullmatch(r"custom_[A-Za-z0-9_]+", value):
        return None
    if value in DISPLAY_NAME_CLAIMS:
        return (
            f"{value!r} is a display name the learner can change in the LMS: one who renames themself to a "
            "classmate's name would become that classmate on the hub; use sub, or a custom parameter the LMS fills "
            "from the login (custom_login)"
        )
    return f"{value!r} is not sub, email or custom_NAME"


def _role_problem(roles: list) -> str | None:
    """Why ``roles`` cannot make instructors: only membership roles of the launch's own course may.

    >>> _role_problem([MEMBERSHIP + "#Instructor"]) is None
    True
    >>> print(_role_problem(["http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator"]))
    'http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator' is not a membership role of the course (institution and system roles say nothing about this course; the roles start with http://purl.imsglobal.org/vocab/lis/v2/membership)
    """
    for role in roles:
        if not (isinstance(role, str) and _MEMBERSHIP_ROLE.fullmatch(role)):
            return (
                f"{role!r} is not a membership role of the course (institution and system roles say nothing about "
                f"this course; the roles start with {MEMBERSHIP})"
            )
    return None


def parse_config(data: dict) -> LtiConfig:
    """Check ``data`` (the file's table) and return the configuration; :class:`LtiConfigError` lists every problem."""
    from jsonschema import Draft202012Validator

    problems: dict[str, str] = {}
    for error in Draft202012Validator(SCHEMA).iter_errors(data):
        if error.validator == "required":
            for name in SCHEMA["required"]:
                if name not in data:
                    problems[name] = "missing"
        elif error.validator == "additionalProperties":
            for name in sorted(set(data) - set(SCHEMA["properties"])):
                problems[name] = f"unknown field (the fields are {', '.join(SCHEMA['properties'])})"
        else:
            name = str(error.path[0]) if error.path else "file"
            problems.setdefault(name, error.message)
    for name in URL_FIELDS:
        if isinstance(data.get(name), str) and name not in problems:
            why = _url_problem(data[name])
            if why:
                problems[name] = why
    if isinstance(data.get("username_key"), str) and "username_key" not in problems:
        why = _username_key_problem(data["username_key"])
        if why:
            problems["username_key"] = why
    if isinstance(data.get("instructor_roles"), list) and "instructor_roles" not in problems:
        why = _role_problem(data["instructor_roles"])
        if why:
            problems["instructor_roles"] = why
    if problems:
        lines = [
            f"  {name}: {why}" + (f" ({WHERE[name]})" if name in WHERE else "")
            for name, why in sorted(problems.items())
        ]
        noun = "problem" if len(lines) == 1 else "problems"
        raise LtiConfigError(f"the LTI file has {len(lines)} {noun}:\n" + "\n".join(lines))
    return LtiConfig(
        issuer=data["issuer"],
        client_id=data["client_id"],
        deployment_ids=tuple(data["deployment_ids"]),
        key_set_url=data["key_set_url"],
        login_url=data["login_url"],
        token_url=data["token_url"],
        token_audience=data.get("token_audience") or data["token_url"],
        tool_key_file=data.get("tool_key_file"),
        username_key=data.get("username_key", "sub"),
        instructor_roles=tuple(data.get("instructor_roles") or INSTRUCTOR_ROLES),
        context_ids=tuple(data["context_ids"]),
    )


def load_config(path: str | Path) -> LtiConfig:
    """Read and check the TOML file at ``path`` (:class:`LtiConfigError` naming the file and each problem)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - the batch extra installs tomli there
        import tomli as tomllib
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise LtiConfigError(f"{path}: cannot read the LTI file ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise LtiConfigError(f"{path}: not TOML ({exc})") from None
    try:
        return parse_config(data)
    except LtiConfigError as exc:
        raise LtiConfigError(f"{path}: {exc}") from None
